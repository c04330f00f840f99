"""Whole-server faults for the reliability tests: an API server that is down (nothing listens on its
port, every open connection cut) and comes back on the same port with the same store, and a serving
certificate replaced while it runs (signed by the same CA: clients must still verify and accept it;
by a CA they do not trust: clients must refuse it)."""
import os
import socket
import subprocess

from .certs import _openssl


def reserve_port(host="127.0.0.1"):
    """A free port to write into a kubeconfig before the double listens there (down at start)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, 0))
        return s.getsockname()[1]


def go_down(double):
    """Stops listening and cuts every connection (keep-alive and watches), as a crashed API server."""
    double.hang_release.set()
    if double.httpd is None:
        return
    # Down from here on: a request that still arrives on a connection not yet cut is not served
    # (ApiHandler.dispatch), as nothing is served by a crashed server. Then the connections go, the
    # watches with them: a client reacting to its watch's end finds nothing to send on.
    httpd, double.httpd = double.httpd, None
    httpd.shutdown()
    httpd.server_close()
    with double.lock:
        conns = list(double.connections)
    for c in conns:
        try:
            c.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    double.store.drop_watches()


def come_up(double, port=None):
    """Serves again on the same port (or `port`), with the store as it was."""
    return double.start(port=port or double.fixed_port)


def new_serving_certificate(directory, name, trusted=True):
    """Writes <name>.crt/.key for 127.0.0.1: signed by directory's ca.crt when `trusted`, else by a CA
    of its own (written as <name>-ca.crt). Returns (cert, key)."""
    ca, ca_key = os.path.join(directory, "ca.crt"), os.path.join(directory, "ca.key")
    if not trusted:
        ca, ca_key = os.path.join(directory, f"{name}-ca.crt"), os.path.join(directory, f"{name}-ca.key")
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
                 "-subj", "/CN=nvdra-untrusted-ca", cwd=directory)
    ext = os.path.join(directory, "server.ext")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN=nvdra-test-apiserver-{name}", cwd=directory)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
             "-out", f"{name}.crt", "-days", "2", "-extfile", ext, cwd=directory)
    return os.path.join(directory, f"{name}.crt"), os.path.join(directory, f"{name}.key")


def serve_certificate(double, cert, key):
    """New handshakes present this certificate; open connections are cut so that clients reconnect."""
    double.cert_file, double.key_file = cert, key
    double.ssl_ctx.load_cert_chain(cert, key)
    double.store.drop_watches()
    with double.lock:
        conns = list(double.connections)
    for c in conns:
        try:
            c.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def fingerprint(cert):
    out = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", cert],
                         check=True, capture_output=True, text=True).stdout
    return out.strip().split("=", 1)[1]
