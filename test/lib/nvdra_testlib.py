"""Shared helpers for process-level tests: locate built binaries, run the agent, read sd_notify."""
import json
import os
import select
import signal
import socket
import subprocess
import tempfile
import time

BINARY_DIR = os.environ.get("NVDRA_BINARY_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SOURCE_DIR = os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
# The binaries carry ASan or TSan (CMake's NVDRA_ANY_SANITIZER): memory figures mean little there.
SANITIZED = os.environ.get("NVDRA_SANITIZED", "OFF") == "ON"


def agent_binary():
    return os.path.join(BINARY_DIR, "agent", "nvdra-agent")


def clean_env(**extra):
    """The test's environment without anything that could configure the agent by accident. The mock
    NVML's profile defaults to dgx-a100 (it only matters where the mock is loaded)."""
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "HOME", "LANG", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "TMPDIR")}
    env["NVDRA_MOCK_PROFILE"] = "dgx-a100"
    env.update(extra)
    return env


MOCK_NVML = os.path.join(BINARY_DIR, "nvml-mock", "libnvidia-ml.so.1")


def make_fake_node(directory, env, options=()):
    """Lays out a simulated GPU node's files under `directory` (nvdra-fake-node: fake driver and host
    root, MIG caps of the mock profile in env's NVDRA_MOCK_PROFILE); returns (driver_root, host_root).
    options: nvdra-fake-node's flags ("--driver-container", "--no-cdi-hook")."""
    fake = os.path.join(BINARY_DIR, "test", "process", "nvdra-fake-node")
    out = subprocess.run([fake, directory, MOCK_NVML] + list(options), env=env, check=True, capture_output=True,
                         text=True)
    roots = json.loads(out.stdout)
    return roots["driver_root"], roots["host_root"]


def simulated_gpu_node(directory, profile="dgx-a100"):
    """Lays out a simulated GPU node under `directory` and returns the agent flags that point at it
    and at the mock NVML."""
    driver_root, host_root = make_fake_node(directory, clean_env(NVDRA_MOCK_PROFILE=profile))
    return ["--nvml-library", MOCK_NVML, "--nvidia-driver-root", driver_root,
            "--container-driver-root", driver_root, "--host-root", host_root]


class NotifySocket:
    """A datagram socket standing in for systemd's NOTIFY_SOCKET; collects what the agent sends."""

    def __init__(self, directory):
        self.path = os.path.join(directory, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.messages = []

    def seen(self, needle):
        """Whether a datagram received so far (pending ones read now, without waiting) contains `needle`."""
        while select.select([self.sock], [], [], 0)[0]:
            self.messages.append(self.sock.recv(4096).decode())
        return any(needle in m for m in self.messages)

    def wait_for(self, needle, timeout=20.0):
        """Reads datagrams until one contains `needle`; returns it or raises TimeoutError."""
        deadline = time.monotonic() + timeout
        for m in self.messages:
            if needle in m:
                return m
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no notify message with {needle!r}; got {self.messages!r}")
            ready, _, _ = select.select([self.sock], [], [], left)
            if ready:
                msg = self.sock.recv(4096).decode()
                self.messages.append(msg)
                if needle in msg:
                    return msg

    def close(self):
        self.sock.close()


class AgentDirs:
    """Private kubelet/CDI directories for one agent run."""

    def __init__(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="nvdra-")
        self.root = self._tmp.name
        self.registrar = os.path.join(self.root, "plugins_registry")
        self.plugins = os.path.join(self.root, "plugins")
        self.cdi = os.path.join(self.root, "cdi")

    def args(self, node="node-1", gpu_node=True, profile="dgx-a100"):
        """The agent's directory flags; with gpu_node, also those of a simulated GPU node of the mock
        profile (made once per profile: the driver files are at the profile's driver version)."""
        args = ["--node-name", node, "--kubelet-registrar-directory-path", self.registrar,
                "--kubelet-plugins-directory-path", self.plugins, "--cdi-root", self.cdi]
        if gpu_node:
            made = self.__dict__.setdefault("_gpu_args", {})
            if profile not in made:
                directory = self.root if not made else os.path.join(self.root, "node-" + profile)
                made[profile] = simulated_gpu_node(directory, profile)
            args += made[profile]
        return args

    def cleanup(self):
        self._tmp.cleanup()


def run_agent(args, env=None, timeout=30):
    """Runs nvdra-agent to completion; returns CompletedProcess with text output."""
    return subprocess.run([agent_binary()] + args, env=env if env is not None else clean_env(),
                          capture_output=True, text=True, timeout=timeout)


def start_agent(args, env=None):
    return subprocess.Popen([agent_binary()] + args, env=env if env is not None else clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stop_agent(proc, sig=signal.SIGTERM, timeout=10.0):
    """Sends `sig`, waits for exit; returns (returncode, seconds from signal to exit, stderr)."""
    t0 = time.monotonic()
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"agent did not exit within {timeout}s of {sig.name}; stderr:\n{err}")
    return proc.returncode, time.monotonic() - t0, err
