"""API-server double for nvdra's tests and demo. See README.md."""
from .certs import make_certs, write_kubeconfig
from .server import ApiServerDouble

__all__ = ["ApiServerDouble", "make_certs", "write_kubeconfig", "start_in"]


def start_in(directory, token="test-token", version=(1, 35), port=0, serve=True, path_prefix="", **kwargs):
    """Makes certs, starts a double, writes <dir>/token and <dir>/kubeconfig (using the token file).
    serve=False: nothing listens yet on `port` (an API server down at start; outage.come_up serves);
    path_prefix: the kubeconfig's server URL has that path, as behind a proxy, and only it is served."""
    import os
    ca, cert, key = make_certs(directory)
    double = ApiServerDouble(cert, key, tokens=[token], version=version, **kwargs)
    double.path_prefix = path_prefix
    if serve:
        double.start(port=port)
    else:
        double.fixed_port = port
    token_file = os.path.join(directory, "token")
    with open(token_file, "w") as f:
        f.write(token + "\n")
    double.ca_file = ca
    double.token_file = token_file
    double.kubeconfig = write_kubeconfig(os.path.join(directory, "kubeconfig"), double.url + path_prefix, ca,
                                         token_file=token_file)
    return double
