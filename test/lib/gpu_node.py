"""A simulated GPU node for process tests, the demo and the bench: the mock NVML on a fake driver
and host root (nvdra-fake-node), the API-server double holding the Node and the allocated
ResourceClaims, the agent, and the kubelet double talking to it over the real sockets.

    node = SimulatedNode(profile="dgx-a100")
    node.start()
    claim = node.allocate("pod-a", [("gpu", "gpu-0")])
    node.gpu().prepare([claim])
"""
import json
import os
import re
import select
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from apiserver_double import start_in
from fake_pci import TOPOLOGY, FakePciHost
from kubelet_double import Claim, KubeletDouble
from nvdra_testlib import MOCK_NVML, AgentDirs, NotifySocket, agent_binary, clean_env, make_fake_node

MOCK = MOCK_NVML
MOCK_CTL = os.path.join(os.path.dirname(MOCK_NVML), "nvml-mock-ctl")
GPU = "gpu.nvidia.com"
CD = "compute-domain.nvidia.com"
GPU_CONFIG = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"}


class RemoteApiDouble:
    """The API-server double in a process of its own (python3 -m apiserver_double), driven through its
    /admin endpoints: for the bench, so the double's work does not share a GIL with the kubelet double."""

    def __init__(self, directory, version):
        os.makedirs(directory, exist_ok=True)
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(__file__)))
        self.proc = subprocess.Popen([sys.executable, "-m", "apiserver_double", "--dir", directory,
                                      "--version", f"{version[0]}.{version[1]}"], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        # It prints one line once it serves (ready.json is written by then); end of file: it died.
        if not select.select([self.proc.stdout], [], [], 30)[0] or not self.proc.stdout.readline():
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError("the API-server double did not start")
        ready = os.path.join(directory, "ready.json")
        with open(ready) as f:
            info = json.load(f)
        self.url, self.kubeconfig = info["url"], info["kubeconfig"]
        self.ca_file, self.token_file = os.path.join(directory, "ca.crt"), os.path.join(directory, "token")
        self.ctx = ssl.create_default_context(cafile=self.ca_file)
        with open(self.token_file) as f:
            self.token = f.read().strip()

    def _call(self, method, path, body=None):
        req = urllib.request.Request(self.url + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, context=self.ctx, timeout=30) as r:
            return json.load(r)

    def put_object(self, obj):
        return self._call("POST", "/admin/objects", obj)

    def objects(self, gv, plural, selector=""):
        base = "/api/v1" if gv == "v1" else f"/apis/{gv}"
        query = "?" + urllib.parse.urlencode({"fieldSelector": selector}) if selector else ""
        return self._call("GET", f"{base}/{plural}{query}")["items"]

    def wait_for_objects(self, gv, plural, predicate, timeout):
        """As the in-process double's: until predicate(objects) holds, re-checked after each write
        (a long poll on /admin/wait-write, not a poll loop: a bench's observer costs no CPU while it
        waits); raises TimeoutError with the last objects seen."""
        end = time.monotonic() + timeout
        base = "/api/v1" if gv == "v1" else f"/apis/{gv}"
        while True:
            listed = self._call("GET", f"{base}/{plural}")
            if predicate(listed["items"]):
                return listed["items"]
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{gv} {plural}: condition not met within {timeout} s; have {listed['items']}")
            self._call("GET", "/admin/wait-write?" + urllib.parse.urlencode(
                {"after": listed["metadata"]["resourceVersion"], "timeout": f"{min(left, 20):.3f}"}))

    def delete_matching(self, gv, plural, selector=""):
        self._call("POST", "/admin/delete", {"apiVersion": gv, "resource": plural, "fieldSelector": selector})

    def request_log(self):
        return self._call("GET", "/admin/requests")

    def cpu_seconds(self):
        """The double's CPU time so far (all its threads, microsecond resolution): what a bench's
        request or start cost the API server."""
        return self._call("GET", "/admin/cpu")["seconds"]

    def writes(self):
        return [r for r in self.request_log() if r["method"] in ("POST", "PUT", "PATCH", "DELETE")
                and not r["path"].startswith("/admin")]

    @property
    def rejections(self):
        return self._call("GET", "/admin/rejections")

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        self.proc.stdout.close()


def read_live_checkpoint(path, timeout=10):
    """checkpoint.json parsed while the agent may be saving. A save writes over the file that was checkpoint.json
    two saves ago (its spare) before exchanging the names, so a reader that opened the file before two saves
    ended can read the later one's bytes over the earlier one's (README: the checkpoint). Such a read differs
    from the file read again; a file that reads the same twice and does not parse is corrupt and raises."""
    end = time.monotonic() + timeout
    while True:
        with open(path, "rb") as f:
            data = f.read()
        try:
            return json.loads(data)
        except ValueError:
            with open(path, "rb") as f:
                if f.read() == data or time.monotonic() > end:
                    raise


def gpu_config(**fields):
    """A GpuConfig opaque object: gpu_config(sharing={...})."""
    return dict(GPU_CONFIG, **fields)


class SimulatedNode:
    def __init__(self, profile="dgx-a100", node="gpu-node-1", api_version=(1, 35), gates="", args=(), drivers=None,
                 api_process=False, env=None, node_options=(), api_gates=None, api_options=None, pci=None,
                 iommufd=False):
        self.profile, self.node, self.gates, self.extra_args = profile, node, gates, list(args)
        self.drivers = drivers or [GPU, CD]
        self.extra_env = dict(env or {})
        self.dirs = AgentDirs()
        self.root = self.dirs.root
        self.mock_state = tempfile.mkdtemp(prefix="mock-", dir=self.root)
        # node_options: nvdra-fake-node's flags, e.g. ("--driver-container",) for nodes in the driver root's dev/.
        self.driver_root, self.host_root = make_fake_node(self.root, self.env(), node_options)
        # The PCI tree and its kernel stand-in (fake_pci): for passthrough profiles, or when asked.
        self.pci = None
        if pci if pci is not None else profile in TOPOLOGY:
            self.pci = FakePciHost(self.host_root, profile, iommufd=iommufd).start()
        api_dir = os.path.join(self.root, "api")
        # api_options: start_in's keywords (serve=False: down at start; path_prefix: behind a proxy).
        self.api = RemoteApiDouble(api_dir, api_version) if api_process else start_in(
            api_dir, version=api_version, gates=api_gates, **(api_options or {}))
        self.api.put_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
        self.proc = self.kubelet = self.notify = self.log = None
        self.plugins = {}
        self.runs = 0

    # --- the agent ---------------------------------------------------------------------------
    def env(self, **extra):
        # NVDRA_MOCK_HOST_ROOT: the mock keeps MIG capability files there in step with its instances.
        return clean_env(NVDRA_MOCK_PROFILE=self.profile, NVDRA_MOCK_STATE_DIR=getattr(self, "mock_state", ""),
                         NVDRA_MOCK_HOST_ROOT=getattr(self, "host_root", ""),
                         **dict(getattr(self, "extra_env", {}), **extra))

    def agent_args(self):
        args = self.dirs.args(self.node, gpu_node=False) + [
            "--kubeconfig", self.api.kubeconfig, "--nvml-library", MOCK,
            "--nvidia-driver-root", self.driver_root, "--container-driver-root", self.driver_root,
            "--host-root", self.host_root]
        if self.gates:
            args += ["--feature-gates", self.gates]
        # MPS daemons as the agent's children unless a test asks for systemd (and brings its own
        # bus): --mps-manager=auto would reach the host's systemd on a developer's machine.
        if not any(a.startswith("--mps-manager") for a in self.extra_args):
            args += ["--mps-manager=process"]
        # A dropped watch resumes within 0.5 s, not the shipped 20 s (a fleet's spread, issue #33):
        # the tests that cut the API server wait on the agent's return.
        if not any(a.startswith("--api-reconnect-spread") for a in self.extra_args) and \
                "NVDRA_API_RECONNECT_SPREAD" not in getattr(self, "extra_env", {}):
            args += ["--api-reconnect-spread=0.5"]
        return args + self.extra_args

    def start(self, timeout=60, wait_ready=True, register=True):
        """Starts the agent, registers its plugins with the kubelet double, waits for READY=1 (or only
        for the plugins of self.drivers, without wait_ready). register=False: the double only calls
        GetInfo (no NotifyRegistrationStatus), so the agent never hears it is registered."""
        self.runs += 1
        self.notify = NotifySocket(tempfile.mkdtemp(dir=self.root))
        self.log_path = os.path.join(self.root, f"agent-{self.runs}.log")
        self.log = open(self.log_path, "w")
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen([agent_binary()] + self.agent_args(),
                                     env=self.env(NOTIFY_SOCKET=self.notify.path), stdout=self.log, stderr=self.log)
        self.kubelet = KubeletDouble(self.dirs.registrar)
        try:
            self.plugins = self.kubelet.wait_for_plugins(self.drivers, timeout=timeout, notify=register)
            if wait_ready and register:
                # The agent runs every driver, not only self.drivers: like kubelet, keep registering the
                # sockets that appear after those (READY=1 waits for all of them).
                self.kubelet.watch_until(lambda: self.notify.seen("READY=1"), timeout, what="READY=1",
                                         wake=[self.notify.sock])
        except Exception:
            raise AssertionError(f"agent did not get ready; log:\n{self.agent_log()}")
        self.ready_ms = (time.monotonic() - self.started_at) * 1000
        return self

    def gpu(self):
        return self.plugins[GPU]

    def stop(self, sig=signal.SIGTERM, timeout=15):
        """Stops the agent with `sig`; returns its exit status (-9 for SIGKILL)."""
        if self.proc is None:
            return None
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"agent did not exit within {timeout}s of {sig}; log:\n{self.agent_log()}")
        if code != 0 and (code != -sig or sig == signal.SIGTERM):
            # A sanitizer's report (abort_on_error: -6), an error exit, or a SIGTERM the agent did not handle:
            # the callers assert the code; why is only in the log, which goes with the node's directory.
            sys.stderr.write(f"agent exited {code} after {sig!r}; the end of its log:\n{self.agent_log()[-20000:]}\n")
        self._close_run()
        return code

    def kill(self):
        return self.stop(signal.SIGKILL)

    def _close_run(self):
        for p in self.plugins.values():
            p.close()
        self.plugins = {}
        if self.kubelet:
            self.kubelet.close()
        if self.notify:
            self.notify.close()
        if self.log:
            self.log.close()
        self.proc = self.kubelet = self.notify = self.log = None

    def agent_log(self):
        self.log and self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def wait_log(self, pattern, timeout=20.0):
        """The first match of the regular expression `pattern` in the agent's log, once it appears."""
        return self.wait_log_until(lambda log: re.search(pattern, log), f"{pattern!r} not in the agent's log",
                                   timeout)

    def wait_log_until(self, check, failure, timeout=20.0):
        """check(the agent's log so far), re-read until it is truthy (returned); AssertionError(failure) at the
        deadline or when the agent exits."""
        deadline = time.monotonic() + timeout
        while True:
            result = check(self.agent_log())
            if result:
                return result
            if time.monotonic() > deadline or (self.proc is not None and self.proc.poll() is not None):
                raise AssertionError(f"{failure}; log:\n{self.agent_log()}")
            select.select([], [], [], 0.01)

    def healthcheck_port(self):
        """The TCP port the agent's gRPC health service listens on (it logs it)."""
        return int(self.wait_log(r"healthcheck serving grpc\.health\.v1 port=(\d+)").group(1))

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def cleanup(self):
        # SIGTERM, not SIGKILL: a crash on the way out (a sanitizer's report) fails the test that left the
        # agent running; killed, it would go unseen.
        failure = None
        if self.proc is not None and self.proc.poll() is None:
            try:
                code = self.stop(timeout=20)  # prints the end of the log on an exit other than 0 or -SIGTERM
                if code != 0:
                    failure = f"agent at the end of the test, SIGTERM: exit {code} (its log is printed above)"
            except AssertionError as e:  # no exit within the timeout: killed, the log in the message
                failure = str(e)
        self._close_run()
        self.api.stop()
        if self.pci:
            self.pci.stop()
        self.dirs.cleanup()
        if failure:
            raise AssertionError(failure)

    # --- the cluster -------------------------------------------------------------------------
    def allocate(self, name, results, configs=(), namespace="default", driver=GPU, admin_access=False,
                 share_id=None, capacity=None, annotations=None):
        """Seeds an allocated ResourceClaim. results: [(request, device)]; configs: [(requests, params)]
        or [(requests, params, source)]; admin_access: every request and result has adminAccess;
        share_id: every result is a share of a multi-allocatable device (shareID), consuming
        `capacity` ({name: quantity}, also the requests' capacity.requests); annotations: the claim's
        (e.g. resource.kubernetes.io/pod-claim-name, as on a claim made from a template).
        Returns the kubelet Claim (with the API's UID)."""
        requests = sorted({r.split("/")[0] for r, _ in results})
        config = []
        for c in configs:
            reqs, params = c[0], c[1]
            source = c[2] if len(c) > 2 else "FromClaim"
            entry = {"source": source, "opaque": {"driver": driver, "parameters": params}}
            if reqs:
                entry["requests"] = list(reqs)
            config.append(entry)
        share = dict({"shareID": share_id} if share_id else {},
                     **({"consumedCapacity": dict(capacity)} if capacity else {}))
        allocation = {"devices": {"results": [dict({"request": r, "driver": driver, "pool": self.node, "device": d},
                                                   **({"adminAccess": True} if admin_access else {}), **share)
                                              for r, d in results]}}
        if config:
            allocation["devices"]["config"] = config
        obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
               "metadata": dict({"name": name, "namespace": namespace},
                                **({"annotations": dict(annotations)} if annotations else {})),
               "spec": {"devices": {"requests": [{"name": r, "exactly": dict(
                   {"deviceClassName": "gpu.nvidia.com"}, **({"adminAccess": True} if admin_access else {}),
                   **({"capacity": {"requests": dict(capacity)}} if capacity else {}))}
                                                 for r in requests]}},
               "status": {"allocation": allocation}}
        stored = self.api.put_object(obj)
        return Claim(namespace, name, stored["metadata"]["uid"])

    def events(self, regarding_uid=None):
        """The Events (events.k8s.io/v1) in the API double, optionally only those regarding one object."""
        items = self.api.objects("events.k8s.io/v1", "events")
        return [e for e in items if regarding_uid is None or e.get("regarding", {}).get("uid") == regarding_uid]

    def wait_for_events(self, regarding_uid, predicate, timeout=20.0):
        """The Events regarding one object once predicate(those events) holds (woken by the double's
        writes); TimeoutError after `timeout` seconds."""
        def regarding(items):
            return [e for e in items if e.get("regarding", {}).get("uid") == regarding_uid]
        return regarding(self.api.wait_for_objects("events.k8s.io/v1", "events",
                                                   lambda items: predicate(regarding(items)), timeout))

    def delete_claim(self, claim):
        self.api.delete_matching("resource.k8s.io/v1", "resourceclaims", f"metadata.name={claim.name}")

    def published(self, driver=GPU):
        """{device name: device} from this node's ResourceSlices of `driver`."""
        slices = self.api.objects("resource.k8s.io/v1", "resourceslices", f"spec.nodeName={self.node}")
        return {d["name"]: d for s in slices if s["spec"]["driver"] == driver for d in s["spec"].get("devices", [])}

    def wait_published(self, predicate, timeout=20.0, driver=GPU):
        """Waits until predicate({device name: device}) holds for this node's slices of `driver`."""
        def devices(items):
            return {d["name"]: d for s in items if s["spec"]["nodeName"] == self.node and s["spec"]["driver"] == driver
                    for d in s["spec"].get("devices", [])}
        return devices(self.api.wait_for_objects("resource.k8s.io/v1", "resourceslices",
                                                 lambda items: predicate(devices(items)), timeout))

    # --- the mock GPUs (test hooks of the mock NVML, nvml/mock/test_hooks.h) -----------------
    def mock_hook(self, name, *args):
        """Calls a test hook of the mock NVML (nvml-mock-ctl, built like the tree) on this node's mock state."""
        rc = subprocess.run([MOCK_CTL, MOCK, name] + [str(a) for a in args], env=self.env(), timeout=30).returncode
        if rc != 0:
            raise AssertionError(f"{name}{args}: nvmlReturn_t {rc}")

    def inject_xid(self, uuid, xid, gi=0xFFFFFFFF, ci=0xFFFFFFFF):
        self.mock_hook("nvdraMockInjectEvent", uuid, 0x8, xid, gi, ci)

    def set_gpu_lost(self, uuid, lost=True):
        self.mock_hook("nvdraMockSetGpuLost", uuid, 1 if lost else 0)

    def set_recovery_action(self, uuid, action):
        """What NVML_FI_DEV_GET_GPU_RECOVERY_ACTION reads: 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P."""
        self.mock_hook("nvdraMockSetRecoveryAction", uuid, action)

    def set_fabric_state(self, uuid, state):
        """The GPU's NVLink fabric state as NVML reports it (1 NOT_STARTED, 2 IN_PROGRESS, 3 COMPLETED); -1: the
        profile's."""
        self.mock_hook("nvdraMockSetFabricState", uuid, state)

    def set_events_supported(self, uuid, supported):
        """False: the GPU refuses event registration (NOT_SUPPORTED) from the next registration on."""
        self.mock_hook("nvdraMockSetEventsSupported", uuid, 1 if supported else 0)

    # --- the node's files --------------------------------------------------------------------
    def cdi_files(self):
        return sorted(f for f in os.listdir(self.dirs.cdi) if not f.startswith(".")) if os.path.isdir(
            self.dirs.cdi) else []

    def specs_but_cd_base(self):
        """cdi_files() without the compute-domain driver's node-wide base spec, which it writes at start in
        driver-managed IMEX mode (on profiles whose driver passes IMEXDaemonsWithDNSNames' floor)."""
        return [f for f in self.cdi_files() if f != "k8s.compute-domain.nvidia.com-device_base.yaml"]

    def cdi_spec(self, name):
        with open(os.path.join(self.dirs.cdi, name)) as f:
            return json.load(f)

    def checkpoint(self, driver=GPU):
        """{uid: claim entry} of the driver's checkpoint (v2 form)."""
        path = os.path.join(self.dirs.plugins, driver, "checkpoint.json")
        if not os.path.exists(path):
            return {}
        data = read_live_checkpoint(path)
        return (data.get("v2") or {}).get("preparedClaims") or {}

    def helper_log(self, program):
        path = os.path.join(self.root, "node", program + ".log")
        if not os.path.exists(path):
            return ""
        with open(path) as f:
            return f.read()
