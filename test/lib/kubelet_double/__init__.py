"""kubelet_double: a kubelet stand-in for nvdra's tests and demo (see README.md)."""
from kubelet_double.double import Claim, HealthStream, KubeletDouble, Plugin, RegistrationError, find_sockets
from kubelet_double.probe import HealthWatch, grpc_probe

__all__ = ["Claim", "HealthStream", "HealthWatch", "KubeletDouble", "Plugin", "RegistrationError", "find_sockets",
           "grpc_probe"]
