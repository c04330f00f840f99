"""Upstream's own kubelet plugins (gpu-kubelet-plugin, compute-domain-kubelet-plugin, built from
kubernetes-sigs/dra-driver-nvidia-gpu; ../shared/upstream) on nvdra's simulated node, for the parity
tests and bench/scenario/versus_upstream.py. NVDRA_UPSTREAM_DIR names the unpacked binaries
(`shared/upstream/unpack DIR`); without it upstream_dir() is None and callers skip with SKIP_REASON.

    node = upstream_node("dgx-a100")         # a SimulatedNode both sides accept
    up = UpstreamPlugins(node).start()       # the same API double, registrar, plugins and CDI dirs
    up.gpu().prepare([claim]); up.stop()

What upstream needs of the node (shared/upstream/README.md) and how it is met here:
- the simulated node (nvdra-fake-node, driver-container layout) has the driver at NVML's version, its
  ld.so.cache, nvidia-cdi-hook and the device nodes as character devices in `<driver-root>/dev`;
- its NVML is `libnvidia-ml.so.1` dlopened from the driver root: the mock is installed there, and the
  other driver libraries become ELF objects with their sonames; MIG capability and IMEX channel nodes
  are mknod'ed beside the others;
- /proc/driver/nvidia/capabilities, /proc/devices and /sys/bus/pci/devices are read from the machine:
  each plugin runs in a private mount namespace (`unshare -m`) with the simulated host's copies bound
  over them (needs root, as mknod does);
- its client-go speaks protobuf and WatchList: `pb2json-proxy` in front of the JSON-only API double and
  KUBE_FEATURE_WatchListClient=false."""
import os
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import yaml

from gpu_node import CD, GPU, SimulatedNode  # noqa: F401  (re-exported for the tests)
from kubelet_double import KubeletDouble
from nvdra_testlib import MOCK_NVML
from prerequisites import exit_if_missing, requires

BINARIES = ("gpu-kubelet-plugin", "compute-domain-kubelet-plugin", "pb2json-proxy")
SKIP_REASON = ("upstream parity not run: NVDRA_UPSTREAM_DIR is not set to the unpacked upstream plugins "
               "(shared/upstream/unpack DIR)")
PROGRAM = {GPU: "gpu-kubelet-plugin", CD: "compute-domain-kubelet-plugin"}
# The gates each upstream plugin runs with here: the claim kinds the parity tests compare.
DEFAULT_GATES = {GPU: "TimeSlicingSettings=true,MPSSupport=true",
                 CD: "HostManagedIMEXDaemon=true"}
LIB_DIR = "/usr/lib/x86_64-linux-gnu"
# The driver's libraries in the simulated driver root (nvdra-fake-node writes them as text stand-ins).
DRIVER_LIBRARY_PREFIXES = ("libcuda.so.", "libnvidia-", "libcudadebugger.so.")


def upstream_dir():
    """The directory of the unpacked upstream binaries, or None where the parity runs cannot happen
    (variable unset, a binary missing, or not root: mknod and mount namespaces need it)."""
    d = os.environ.get("NVDRA_UPSTREAM_DIR", "")
    if not d or not all(os.access(os.path.join(d, b), os.X_OK) for b in BINARIES) or os.geteuid() != 0:
        return None
    return d


def skip_reason():
    d = os.environ.get("NVDRA_UPSTREAM_DIR", "")
    if not d:
        return SKIP_REASON
    if os.geteuid() != 0:
        return "upstream parity not run: needs root (mknod, mount namespaces)"
    return f"upstream parity not run: NVDRA_UPSTREAM_DIR={d} lacks one of {', '.join(BINARIES)}"


# Class decorator for the parity tests: without upstream's binaries (or root) a skip outside CI and
# a failure naming what is missing in CI (test/lib/prerequisites.py).
needs_upstream = requires(lambda: upstream_dir() is not None, skip_reason,
                          "contrib/dev/test unpacks ../shared/upstream when it exists")


def exit_without_upstream():
    """For a parity script's __main__: nothing in it can run without upstream (77 outside CI, 1 in CI)."""
    exit_if_missing(upstream_dir() is not None, skip_reason())


def upstream_node(profile="dgx-a100", **kwargs):
    """A SimulatedNode both implementations accept: nvdra-fake-node's driver-container layout (upstream
    reads device nodes from <driver-root>/dev only when that directory exists), completed by
    _make_upstream_ready. kwargs go to SimulatedNode."""
    node = SimulatedNode(profile=profile, node_options=("--driver-container",), **kwargs)
    _make_upstream_ready(node)
    return node


def _elf_stub(path, soname, work):
    """A real (empty) shared object carrying `soname`: upstream reads sonames from the files."""
    src = os.path.join(work, "empty.c")
    if not os.path.exists(src):
        with open(src, "w") as f:
            f.write("int nvdra_upstream_stub;\n")
    subprocess.run([os.environ.get("CC", "cc"), "-shared", "-fPIC", "-o", path, f"-Wl,-soname,{soname}", src],
                   check=True, capture_output=True)


def _mknod(path, major, minor):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.unlink(path)
    os.mknod(path, 0o666 | 0o020000, os.makedev(major, minor))


def _make_upstream_ready(node):
    """What upstream needs beyond the simulated node (upstream_node builds the node; its driver root
    already has the libraries at NVML's version with their links and ld.so.cache, executable binaries,
    nvidia-cdi-hook and the character devices in <driver-root>/dev): the mock as libnvidia-ml, the other
    driver libraries as ELF objects with their sonames, the MIG capability nodes and IMEX channel 0.
    Once per node, before either side starts."""
    if getattr(node, "upstream_ready", False):
        return
    root, work = node.driver_root, tempfile.mkdtemp(dir=node.root)
    lib = root + LIB_DIR
    sonames = {os.readlink(os.path.join(lib, n)): n for n in os.listdir(lib) if os.path.islink(os.path.join(lib, n))}
    for real in os.listdir(lib):
        path = os.path.join(lib, real)
        if os.path.islink(path) or not real.startswith(DRIVER_LIBRARY_PREFIXES):
            continue
        if real.startswith("libnvidia-ml.so."):
            shutil.copy(MOCK_NVML, path)
        else:
            _elf_stub(path, sonames.get(real, real), work)
    shutil.rmtree(work, ignore_errors=True)
    _make_capability_nodes(node)
    node.cdi_hook = os.path.join(root, "usr", "bin", "nvidia-cdi-hook")
    node.upstream_ready = True


def _majors(host_root):
    majors = {}
    with open(os.path.join(host_root, "proc", "devices")) as f:
        for line in f:
            if line.startswith("Block"):
                break
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit():
                majors[parts[1]] = int(parts[0])
    return majors


def _make_capability_nodes(node):
    """The MIG capability nodes the host root's access files name, and IMEX channel 0, as character
    devices in <driver-root>/dev (nvdra-fake-node writes the access files only)."""
    dev = os.path.join(node.driver_root, "dev")
    majors = _majors(node.host_root)
    caps = os.path.join(node.host_root, "proc", "driver", "nvidia", "capabilities")
    for base, _, files in os.walk(caps):
        for name in files:
            if name not in ("access", "fabric-imex-mgmt"):
                continue
            with open(os.path.join(base, name)) as f:
                minor = next(int(line.split(":")[1]) for line in f if line.startswith("DeviceFileMinor"))
            _mknod(os.path.join(dev, "nvidia-caps", f"nvidia-cap{minor}"), majors["nvidia-caps"], minor)
    _mknod(os.path.join(dev, "nvidia-caps-imex-channels", "channel0"), majors["nvidia-caps-imex-channels"], 0)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port, proc, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"pb2json-proxy exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.02)  # the proxy's listen is the event; polled with a deadline
    raise TimeoutError(f"pb2json-proxy not listening on {port} within {timeout}s")


def complete_pool(slices):
    """Whether `slices` (one driver's on one node) hold its pool whole: the newest generation's slice count is
    what they say the pool has."""
    if not slices:
        return False
    newest = max(s["spec"]["pool"]["generation"] for s in slices)
    current = [s for s in slices if s["spec"]["pool"]["generation"] == newest]
    return len(current) == current[0]["spec"]["pool"]["resourceSliceCount"]


class UpstreamPlugins:
    """Upstream's plugins of `drivers` on `node` (a SimulatedNode built by upstream_node()):
    the node's API double (through pb2json-proxy), registrar, plugins and CDI directories, driver and host
    root. qps/burst: client-go's limits (None: upstream's defaults, 5 and 10)."""

    def __init__(self, node, drivers=(GPU, CD), qps=None, burst=None, gates=None, extra_args=None, directory=None,
                 imex_mode="hostManaged", templates=None):
        self.dir = directory or upstream_dir()
        if self.dir is None:
            raise RuntimeError(skip_reason())
        if not getattr(node, "upstream_ready", False):
            raise ValueError("UpstreamPlugins needs a node built by upstream_node() (device nodes in the driver root)")
        self.node, self.drivers, self.qps, self.burst = node, list(drivers), qps, burst
        self.imex_mode = imex_mode  # the compute-domain plugin's --imex-mode
        # A directory bound over the image's /templates in the compute-domain plugin's mount namespace: its
        # daemon prepare copies /templates/compute-domain-daemon-config.tmpl.cfg. The mount point is created
        # when the machine has none (an empty directory, left in place: another run may have it mounted).
        self.templates = templates
        self.gates = dict(DEFAULT_GATES, **(gates or {}))
        self.extra_args = dict(extra_args or {})
        self.procs, self.logs, self.plugins = {}, {}, {}
        self.kubelet = self.proxy = None
        self.runs = 0
        api_dir = os.path.join(node.root, "api")
        self.ca, self.token = os.path.join(api_dir, "ca.crt"), os.path.join(api_dir, "token")
        self.kubeconfig = os.path.join(node.root, "upstream-kubeconfig")

    # --- the proxy: one per UpstreamPlugins, kept across plugin restarts -------------------------
    def _start_proxy(self):
        port = _free_port()
        self.proxy_log = open(os.path.join(self.node.root, "pb2json-proxy.log"), "a")
        self.proxy = subprocess.Popen([os.path.join(self.dir, "pb2json-proxy"), f"127.0.0.1:{port}", self.node.api.url,
                                       self.ca, self.token], stdout=self.proxy_log, stderr=self.proxy_log)
        _wait_port(port, self.proxy, 20)
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "proxy",
                  "clusters": [{"name": "proxy", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                  "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "proxy"}}],
                  "users": [{"name": "proxy", "user": {}}]}
        with open(self.kubeconfig, "w") as f:
            yaml.safe_dump(config, f)

    # --- the plugins ----------------------------------------------------------------------------
    def args(self, driver):
        n = self.node
        args = ["--node-name", n.node, "--kubeconfig", self.kubeconfig,
                "--kubelet-registrar-directory-path", n.dirs.registrar,
                "--kubelet-plugins-directory-path", n.dirs.plugins, "--cdi-root", n.dirs.cdi,
                "--nvidia-driver-root", n.driver_root, "--container-driver-root", n.driver_root,
                "--nvidia-cdi-hook-path", n.cdi_hook, "--feature-gates", self.gates[driver]]
        if driver == GPU:  # flags only the GPU plugin has
            args += ["--host-root", n.host_root, "--image-name", "nvdra-parity/upstream:test"]
        else:
            args += [f"--imex-mode={self.imex_mode}"]
        if self.qps is not None:
            args += ["--kube-api-qps", str(self.qps), "--kube-api-burst", str(self.burst or self.qps)]
        return args + list(self.extra_args.get(driver, []))

    def command(self, driver):
        """`unshare -m` and a shell that binds the simulated host's proc/sys files over the machine's,
        then execs the plugin (same pid: RSS and signals reach the plugin itself)."""
        h = self.node.host_root
        # The compute-domain plugin unmounts every mount point under /proc/driver/nvidia at start (§9.1): it
        # gets a copy of the capability files in the tmpfs, which it reads once (fabric-imex-mgmt).
        caps = "copy" if driver == CD else "mkdir"
        binds = [("tmpfs", "/proc/driver", None),
                 (f"{h}/proc/driver/nvidia/capabilities", "/proc/driver/nvidia/capabilities", caps),
                 (f"{h}/proc/devices", "/proc/devices", None)]
        os.makedirs(f"{h}/sys/bus/pci/devices", exist_ok=True)
        binds.append((f"{h}/sys/bus/pci/devices", "/sys/bus/pci/devices", None))
        if driver == CD and self.templates:
            binds.append((self.templates, "/templates", "mkdir"))
        steps = []
        for src, dst, how in binds:
            if src == "tmpfs":
                steps.append(f"mount -t tmpfs nvdra-parity {dst}")
                continue
            if how == "copy":
                steps.append(f"mkdir -p {shlex.quote(os.path.dirname(dst))} && cp -a {shlex.quote(src)} "
                             f"{shlex.quote(dst)}")
                continue
            if how == "mkdir":
                steps.append(f"mkdir -p {shlex.quote(dst)}")
            steps.append(f"mount --bind {shlex.quote(src)} {shlex.quote(dst)}")
        program = [os.path.join(self.dir, PROGRAM[driver])] + self.args(driver)
        script = " && ".join(steps) + " && exec " + " ".join(shlex.quote(a) for a in program)
        return ["unshare", "-m", "--propagation", "private", "sh", "-c", script]

    def env(self):
        return self.node.env(KUBE_FEATURE_WatchListClient="false")

    def start(self, timeout=60, wait_slices=True):
        """Starts the plugins, registers them with a kubelet double, and (wait_slices) waits until the
        GPU plugin's ResourceSlices are published. Sets ready_ms (start to registered + published)."""
        if self.proxy is None:
            self._start_proxy()
        os.makedirs(self.node.dirs.registrar, exist_ok=True)  # kubelet's job on a real node
        self.runs += 1
        self.started_at = time.monotonic()
        for d in self.drivers:
            log = open(os.path.join(self.node.root, f"upstream-{PROGRAM[d]}-{self.runs}.log"), "w")
            self.logs[d] = log
            self.procs[d] = subprocess.Popen(self.command(d), env=self.env(), stdout=log, stderr=log)
        self.kubelet = KubeletDouble(self.node.dirs.registrar)
        try:
            self.plugins = self.kubelet.wait_for_plugins(self.drivers, timeout=timeout)
            if wait_slices:
                self.wait_published(timeout)
        except Exception as e:
            logs = self.log_text()
            # Nothing of a failed start outlives it: a caller that records the failure and goes on (the
            # scale bench on DynamicMIG profiles) left the plugin that did start running.
            self.stop(signal.SIGKILL)
            raise AssertionError(f"upstream did not get ready: {e}; logs:\n{logs}")
        self.ready_ms = (time.monotonic() - self.started_at) * 1000
        return self

    def wait_published(self, timeout=60):
        """Until every driver's pool is whole: as many slices of its newest generation as each says the pool
        has (spec.pool.resourceSliceCount; a DynamicMIG node's pool spans several slices)."""
        deadline = time.monotonic() + timeout
        want = [d for d in self.drivers]
        while True:
            slices = self.node.api.objects("resource.k8s.io/v1", "resourceslices", f"spec.nodeName={self.node.node}")
            have = {d for d in want if complete_pool([s for s in slices if s["spec"]["driver"] == d])}
            if all(d in have for d in want):
                return
            for d, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{PROGRAM[d]} exited with {p.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the ResourceSlice pools of {want} not whole within {timeout}s "
                                   f"(whole: {sorted(have)})")
            time.sleep(0.01)  # the double's store is the event source; polled with a deadline

    def gpu(self):
        return self.plugins[GPU]

    def cd(self):
        return self.plugins[CD]

    def pids(self):
        return {d: p.pid for d, p in self.procs.items()}

    def stop(self, sig=signal.SIGTERM, timeout=30):
        codes = {}
        for d, p in self.procs.items():
            if p.poll() is None:
                p.send_signal(sig)
        for d, p in self.procs.items():
            try:
                codes[d] = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                codes[d] = p.wait()
        for p in self.plugins.values():
            p.close()
        if self.kubelet:
            self.kubelet.close()
        for log in self.logs.values():
            log.close()
        self.procs, self.plugins, self.logs, self.kubelet = {}, {}, {}, None
        return codes

    def log_text(self):
        out = []
        for d in self.drivers:
            path = os.path.join(self.node.root, f"upstream-{PROGRAM[d]}-{self.runs}.log")
            if os.path.exists(path):
                with open(path) as f:
                    out.append(f"--- {PROGRAM[d]}\n" + f.read()[-6000:])
        return "\n".join(out)

    def cleanup(self):
        self.stop(signal.SIGKILL)
        if self.proxy is not None:
            self.proxy.terminate()
            self.proxy.wait()
            self.proxy_log.close()
            self.proxy = None

