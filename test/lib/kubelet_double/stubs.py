"""Python modules generated from the project's kubelet .proto files (agent/kubelet/proto).

The build generates them into $NVDRA_BINARY_DIR/kubelet_double_stubs; outside a build tree they are
generated on first use with protoc and grpc_python_plugin (Debian: protobuf-compiler-grpc)."""
import importlib
import os
import shutil
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCE_DIR = os.environ.get("NVDRA_SOURCE_DIR", os.path.join(_HERE, "..", "..", ".."))
PROTO_DIR = os.path.join(_SOURCE_DIR, "agent", "kubelet", "proto")
PROTOS = ["registration", "dra_v1beta1", "dra_v1", "health_v1alpha1", "health_v1", "grpc_health_v1"]


def _generated_dir():
    built = os.path.join(os.environ.get("NVDRA_BINARY_DIR", ""), "kubelet_double_stubs")
    if os.environ.get("NVDRA_BINARY_DIR") and os.path.exists(os.path.join(built, PROTOS[-1] + "_pb2_grpc.py")):
        return built
    out = tempfile.mkdtemp(prefix="kubelet-double-stubs-")
    plugin = shutil.which("grpc_python_plugin")
    if not plugin or not shutil.which("protoc"):
        raise RuntimeError("kubelet_double needs protoc and grpc_python_plugin (apt-get install protobuf-compiler-grpc) "
                           "or NVDRA_BINARY_DIR pointing at a build tree")
    subprocess.run(["protoc", "-I", PROTO_DIR, f"--python_out={out}", f"--grpc_python_out={out}",
                    f"--plugin=protoc-gen-grpc_python={plugin}"] + [os.path.join(PROTO_DIR, p + ".proto") for p in PROTOS],
                   check=True)
    return out


def load():
    """Returns {name: (pb2 module, pb2_grpc module)} for every kubelet proto."""
    directory = _generated_dir()
    if directory not in sys.path:
        sys.path.insert(0, directory)
    return {p: (importlib.import_module(p + "_pb2"), importlib.import_module(p + "_pb2_grpc")) for p in PROTOS}
