"""kubelet_double: a kubelet stand-in for nvdra's tests and demo (see README.md)."""
from kubelet_double.double import Claim, HealthStream, KubeletDouble, Plugin, RegistrationError, find_sockets

__all__ = ["Claim", "HealthStream", "KubeletDouble", "Plugin", "RegistrationError", "find_sockets"]
