"""The agent publishes every simulated machine's devices to an API server that validates them.

The API-server double checks each write against the real OpenAPI documents and LIMITS.md; the GPU
is the mock libnvidia-ml.so.1 loaded through the agent's real dlopen path.
"""
import os
import tempfile
import unittest

from apiserver_double import start_in
from gpu_node import SimulatedNode
from kubelet_double import KubeletDouble
from nvdra_testlib import BINARY_DIR, AgentDirs, NotifySocket, clean_env, start_agent, stop_agent

MOCK = os.path.join(BINARY_DIR, "nvml-mock", "libnvidia-ml.so.1")
NODE = "gpu-node-1"


class PublishesEveryProfile(unittest.TestCase):
    def setUp(self):
        self.dirs = AgentDirs()
        self.addCleanup(self.dirs.cleanup)
        self.api = start_in(os.path.join(self.dirs.root, "api"), version=(1, 35))
        self.addCleanup(self.api.stop)
        self.api.put_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})

    def run_agent_until_ready(self, profile, state_dir):
        notify = NotifySocket(tempfile.mkdtemp(dir=self.dirs.root))
        self.addCleanup(notify.close)
        env = clean_env(NOTIFY_SOCKET=notify.path, NVDRA_MOCK_PROFILE=profile, NVDRA_MOCK_STATE_DIR=state_dir)
        proc = start_agent(self.dirs.args(NODE, profile=profile) + ["--kubeconfig", self.api.kubeconfig],
                           env=env)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        kubelet = KubeletDouble(self.dirs.registrar)
        self.addCleanup(kubelet.close)
        kubelet.wait_for_plugins(["gpu.nvidia.com", "compute-domain.nvidia.com"])
        notify.wait_for("READY=1", timeout=60)
        return proc

    def published_devices(self):
        slices = self.api.objects("resource.k8s.io/v1", "resourceslices", f"spec.nodeName={NODE}")
        gpu = [s for s in slices if s["spec"]["driver"] == "gpu.nvidia.com"]
        return {d["name"]: d for s in gpu for d in s["spec"].get("devices", [])}, gpu

    def test_each_profile_is_accepted_and_an_unchanged_restart_writes_nothing(self):
        expected_counts = {"dgx-a100": None, "hgx-h100": 8, "gb200-nvl": 4, "l4": 1}
        for profile, count in expected_counts.items():
            with self.subTest(profile=profile):
                state = tempfile.mkdtemp(dir=self.dirs.root)
                proc = self.run_agent_until_ready(profile, state)
                code, _, err = stop_agent(proc)
                self.assertEqual(code, 0, err)
                self.assertEqual(self.api.rejections, [], "the API server refused a write")
                devices, slices = self.published_devices()
                self.assertTrue(devices, f"no devices published for {profile}")
                if count is not None:
                    self.assertEqual(len([n for n in devices if "-mig-" not in n]), count)
                for s in slices:
                    self.assertEqual(s["spec"]["pool"]["name"], NODE)
                    owners = s["metadata"].get("ownerReferences", [])
                    self.assertEqual([o["kind"] for o in owners], ["Node"])
                for name, dev in devices.items():
                    attrs = dev.get("attributes", {})
                    self.assertIn("type", attrs, name)
                    self.assertIn("uuid", attrs, name)
                    self.assertIn("productName", attrs, name)

                # The same machine again: the stored slices are already right.
                writes_before = len(self.api.writes())
                proc = self.run_agent_until_ready(profile, state)
                code, _, err = stop_agent(proc)
                self.assertEqual(code, 0, err)
                self.assertEqual(len(self.api.writes()), writes_before, "an unchanged restart wrote to the API")

    def test_a_start_asks_on_two_connections_and_watches_once_published(self):
        # Each TLS connection is a handshake on the API server (a fleet's agents start together): the
        # server's facts go one after another on one, the slices' LIST on another, the slices are
        # created on those, and the slices' watch opens only once the agent is ready.
        proc = self.run_agent_until_ready("hgx-h100", tempfile.mkdtemp(dir=self.dirs.root))
        self.addCleanup(stop_agent, proc)
        log = self.api.wait_for_requests(lambda log: any(r["query"].get("watch") and r["path"].endswith(
            "/resourceslices") for r in log), timeout=30)
        agent = [r for r in log if r["user_agent"].startswith("nvdra-agent/")]
        watch = next(i for i, r in enumerate(agent) if r["query"].get("watch") and r["path"].endswith("/resourceslices"))
        creates = [i for i, r in enumerate(agent) if r["method"] == "POST" and r["path"].endswith("/resourceslices")]
        self.assertEqual(len(creates), 2, agent)
        self.assertLess(max(creates), watch, "the slices' watch opened before the slices were created")
        before = agent[:watch]
        facts = ["/version", "/api/v1/nodes/" + NODE, "/openapi/v3"]
        self.assertEqual([r["path"] for r in before if r["path"] in facts], facts)
        self.assertLessEqual(len({r["connection"] for r in before}), 2, before)

    def test_dgx_a100_publishes_its_static_mig_devices(self):
        proc = self.run_agent_until_ready("dgx-a100", tempfile.mkdtemp(dir=self.dirs.root))
        code, _, err = stop_agent(proc)
        self.assertEqual(code, 0, err)
        devices, _ = self.published_devices()
        mig = [n for n in devices if "-mig-" in n]
        self.assertTrue(mig)
        for name in mig:
            self.assertEqual(devices[name]["attributes"]["type"], {"string": "mig"})


class HeapTrimmedOncePublished(unittest.TestCase):
    def test_the_heap_is_trimmed_once_the_slices_are_stored(self):
        """Encoding, sending and comparing the slices frees megabytes on a big node that glibc keeps resident
        until malloc_trim: once the slices are stored (no claim call has come), the agent trims its heap."""
        node = SimulatedNode(profile="hgx-h100", args=["--log-level=debug"])
        self.addCleanup(node.cleanup)
        node.start()
        self.assertNotIn("NodePrepareResources", node.agent_log())
        trimmed = node.wait_log(r"heap trimmed: resident (\d+) -> (\d+) kB")
        self.assertGreater(int(trimmed.group(2)), 0)


if __name__ == "__main__":
    unittest.main()
