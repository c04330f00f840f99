"""The real nvdra-agent with the kubelet double over real unix sockets: registration of both drivers,
readiness after kubelet's answer, per-claim answers in v1 and v1beta1, socket rules, clean exit."""
import os
import select
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from kubelet_double import Claim, KubeletDouble, find_sockets
from nvdra_testlib import simulated_gpu_node

BINARY_DIR = os.environ.get("NVDRA_BINARY_DIR", "build")
DRIVERS = ["gpu.nvidia.com", "compute-domain.nvidia.com"]


class Notify:
    """An AF_UNIX datagram socket standing in for systemd's NOTIFY_SOCKET."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.messages = []

    def drain(self):
        while select.select([self.sock], [], [], 0)[0]:
            self.messages.append(self.sock.recv(4096).decode())
        return self.messages

    def wait_for(self, needle, timeout=20.0):
        deadline = time.monotonic() + timeout
        while not any(needle in m for m in self.messages):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no notify message with {needle!r}; got {self.messages!r}")
            if select.select([self.sock], [], [], left)[0]:
                self.messages.append(self.sock.recv(4096).decode())

    def close(self):
        self.sock.close()


class AgentWithKubelet(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory(prefix="nvdra-kd-")  # short: socket paths are limited
        self.addCleanup(tmp.cleanup)
        self.root = tmp.name
        self.registrar = os.path.join(self.root, "registry")
        self.plugins = os.path.join(self.root, "plugins")
        self.notify = Notify(os.path.join(self.root, "notify.sock"))
        self.addCleanup(self.notify.close)
        self.kubelet = KubeletDouble(self.registrar)
        self.addCleanup(self.kubelet.close)
        self.gpu_node = simulated_gpu_node(self.root)

    def start(self, *extra, plugins=None, stderr=subprocess.PIPE):
        args = [os.path.join(BINARY_DIR, "agent", "nvdra-agent"), "--node-name", "n1",
                "--kubelet-registrar-directory-path", self.registrar,
                "--kubelet-plugins-directory-path", plugins or self.plugins,
                "--cdi-root", os.path.join(self.root, "cdi")] + self.gpu_node + list(extra)
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS")}
        env["NVDRA_MOCK_PROFILE"] = "dgx-a100"
        env["NOTIFY_SOCKET"] = self.notify.path
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        return proc

    def stop(self, proc):
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        return proc.returncode, err

    def test_ready_is_sent_only_after_kubelet_registered_both_drivers(self):
        proc = self.start()
        found = {}
        deadline = time.monotonic() + 20
        while set(found) != set(DRIVERS):  # GetInfo only: kubelet has not answered yet
            self.assertLess(time.monotonic(), deadline, f"sockets: {find_sockets(self.registrar)}")
            for path in find_sockets(self.registrar):
                if path not in found.values():
                    plugin = self.kubelet.register(path, notify=False)
                    found[plugin.name] = plugin
        for plugin in found.values():
            self.assertEqual(plugin.supported_versions, ["v1.DRAPlugin", "v1beta1.DRAPlugin"])
            self.assertEqual(plugin.endpoint, os.path.join(self.plugins, plugin.name, "dra.sock"))
        self.notify.wait_for("STATUS=")
        self.kubelet.notify(found["gpu.nvidia.com"], True)
        self.kubelet.get_info(found["gpu.nvidia.com"].registration_socket)  # a round trip after the notify
        self.assertFalse(any("READY=1" in m for m in self.notify.drain()), self.notify.messages)
        self.kubelet.notify(found["compute-domain.nvidia.com"], True)
        self.notify.wait_for("READY=1")
        code, err = self.stop(proc)
        self.assertEqual(code, 0, err)

    def test_each_claim_gets_its_own_answer_in_v1_and_v1beta1(self):
        proc = self.start()
        gpu = self.kubelet.wait_for_plugins(DRIVERS)["gpu.nvidia.com"]
        claims = [Claim("default", "a", "uid-a"), Claim("team", "b", "uid-b")]
        for version in ("v1", "v1beta1"):
            with self.subTest(version=version):
                result = gpu.prepare(claims, version=version)
                self.assertEqual(set(result), {"uid-a", "uid-b"})
                # No API server in this test: each claim fails on its own, naming itself.
                self.assertIn("team/b (uid-b)", result["uid-b"]["error"])
                self.assertIn("no Kubernetes API server configured", result["uid-b"]["error"])
                self.assertIn("default/a (uid-a)", result["uid-a"]["error"])
                self.assertEqual(gpu.unprepare(claims, version=version), {"uid-a": "", "uid-b": ""})
        self.assertEqual(gpu.prepare([], version="v1beta1"), {})  # upstream's liveness probe
        code, err = self.stop(proc)
        self.assertEqual(code, 0, err)

    def test_sigterm_exits_zero_and_removes_every_socket(self):
        proc = self.start()
        self.kubelet.wait_for_plugins(DRIVERS)
        self.notify.wait_for("READY=1")
        t0 = time.monotonic()
        code, err = self.stop(proc)
        print(f"\nSIGTERM to exit with both plugins serving: {(time.monotonic() - t0) * 1000:.1f} ms")
        self.assertEqual(code, 0, err)
        self.assertEqual(find_sockets(self.registrar), [])
        self.assertEqual(find_sockets(self.plugins), [])

    def test_stale_sockets_from_a_crash_are_replaced(self):
        for path in [os.path.join(self.registrar, "gpu.nvidia.com-reg.sock"),
                     os.path.join(self.plugins, "gpu.nvidia.com", "dra.sock")]:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            stale.bind(path)
            stale.close()  # the file stays, nobody listens: what kill -9 leaves
        proc = self.start()
        gpu = self.kubelet.wait_for_plugins(DRIVERS)["gpu.nvidia.com"]
        self.assertIn("uid-a", gpu.prepare([Claim("default", "a", "uid-a")]))
        code, err = self.stop(proc)
        self.assertEqual(code, 0, err)

    def test_registration_rejected_by_kubelet_is_logged_with_its_reason_and_blocks_ready(self):
        proc = self.start()
        self.kubelet.wait_for_plugins(DRIVERS, notify=False)
        for plugin in list(self.kubelet.plugins.values()):
            self.kubelet.notify(plugin, False, "RegisterPlugin error -- plugin validation failed: test says no")
        self.notify.wait_for("STATUS=")
        self.assertFalse(any("READY=1" in m for m in self.notify.drain()))
        code, err = self.stop(proc)
        self.assertEqual(code, 0, err)
        self.assertIn("driver=gpu.nvidia.com registration rejected by kubelet (attempt 1): "
                      "RegisterPlugin error -- plugin validation failed: test says no", err)

    def test_during_a_rolling_update_the_new_instance_serves_once_the_old_one_exits(self):
        # Both instances would write the same checkpoint: the new one waits for the old one's lock
        # (upstream's DaemonSet updates with maxUnavailable, so the old pod is already stopping).
        old = self.start("--rolling-update-uid", "old-pod")
        deadline = time.monotonic() + 20
        while len(find_sockets(self.registrar)) < 2:
            self.assertLess(time.monotonic(), deadline, find_sockets(self.registrar))
        log_path = os.path.join(self.root, "new.log")
        with open(log_path, "w") as log:
            new = self.start("--rolling-update-uid", "new-pod", stderr=log)
        deadline = time.monotonic() + 20
        while "is held by another process" not in open(log_path).read():
            self.assertLess(time.monotonic(), deadline, "the new instance did not wait for the old one's lock")
        self.assertEqual(len(find_sockets(self.registrar)), 2, "the new instance served while the old one ran")
        code, err = self.stop(old)
        self.assertEqual(code, 0, err)
        deadline = time.monotonic() + 20
        while len(find_sockets(self.registrar)) < 2:
            self.assertLess(time.monotonic(), deadline, find_sockets(self.registrar))
        names = sorted(os.path.basename(p) for p in find_sockets(self.registrar))
        self.assertEqual(names, ["compute-domain.nvidia.com-new-pod-reg.sock", "gpu.nvidia.com-new-pod-reg.sock"])
        endpoints = {self.kubelet.register(p).endpoint for p in find_sockets(self.registrar)}
        self.assertIn(os.path.join(self.plugins, "gpu.nvidia.com", "dra-new-pod.sock"), endpoints)
        code, _ = self.stop(new)
        self.assertEqual(code, 0, open(log_path).read())

    def test_a_socket_path_too_long_is_a_clear_start_up_error(self):
        deep = os.path.join(self.root, "p" * 90)
        proc = self.start(plugins=deep)
        _, err = proc.communicate(timeout=20)
        self.assertEqual(proc.returncode, 1, err)
        self.assertIn("a unix socket path may have at most 107 bytes: choose a shorter "
                      "--kubelet-plugins-directory-path", err)


if __name__ == "__main__":
    unittest.main()
