"""Throwaway TLS material for the double, made with the openssl CLI, and a kubeconfig for clients."""
import os
import subprocess

import yaml


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certs(directory, hosts=("127.0.0.1", "localhost")):
    """Writes ca.crt/ca.key and server.crt/server.key (SANs for `hosts`); returns their paths."""
    os.makedirs(directory, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
             "-subj", "/CN=nvdra-test-ca", cwd=directory)
    san = ",".join(("IP:" if h[0].isdigit() or ":" in h else "DNS:") + h for h in hosts)
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write(f"subjectAltName={san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=nvdra-test-apiserver", cwd=directory)
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.crt", "-days", "2", "-extfile", "server.ext", cwd=directory)
    return tuple(os.path.join(directory, n) for n in ("ca.crt", "server.crt", "server.key"))


def write_kubeconfig(path, server_url, ca_file, token=None, token_file=None, insecure=False):
    user = {}
    if token:
        user["token"] = token
    if token_file:
        user["tokenFile"] = token_file
    cluster = {"server": server_url}
    if insecure:
        cluster["insecure-skip-tls-verify"] = True
    else:
        cluster["certificate-authority"] = ca_file
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "double",
        "clusters": [{"name": "double", "cluster": cluster}],
        "users": [{"name": "agent", "user": user}],
        "contexts": [{"name": "double", "context": {"cluster": "double", "user": "agent"}}],
    }
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    return path
