"""The NVIDIA driver upgraded under a running agent (issue #30): the kernel module goes away (NVML answers
DRIVER_NOT_LOADED), then a new version is loaded (an old session would get LIB_RM_VERSION_MISMATCH). The agent
does not crash-loop: the gpu.nvidia.com driver notices, waits for the new driver as at a start without one, opens
NVML again, rediscovers, and republishes with the new driverVersion; the claim prepared before stays in the
checkpoint and unprepares cleanly, and a new claim's CDI spec names the new version's libraries. One process."""
import os
import shutil
import tempfile
import unittest

from gpu_node import GPU, SimulatedNode
from nvdra_testlib import make_fake_node

OLD, NEW = "570.148.08", "580.65.06"


class DriverUpgradedUnderTheAgent(unittest.TestCase):
    def setUp(self):
        self.node = SimulatedNode(profile="dgx-a100", drivers=[GPU])
        self.addCleanup(self.node.cleanup)
        self.ctl = os.path.join(self.node.host_root, "dev", "nvidiactl")
        self.version_file = os.path.join(self.node.root, "loaded-driver-version")
        self.node.extra_env.update(NVDRA_MOCK_DRIVER_NODE=self.ctl, NVDRA_MOCK_DRIVER_VERSION_FILE=self.version_file)

    def install(self, version):
        """The driver container's work before it loads the new module: the new version's files (libraries, their
        symlinks, ld.so.cache) laid out by nvdra-fake-node at that version, merged into the node's driver root."""
        wanted = os.path.join(self.node.root, "installing-version")
        with open(wanted, "w") as f:
            f.write(version + "\n")
        env = self.node.env(NVDRA_MOCK_DRIVER_NODE="", NVDRA_MOCK_DRIVER_VERSION_FILE=wanted)
        new_root, _ = make_fake_node(tempfile.mkdtemp(dir=self.node.root), env)
        for root, _, files in os.walk(new_root):
            rel = os.path.relpath(root, new_root)
            if rel.split(os.sep)[0] in ("dev", "run"):
                continue
            for name in files:
                src, dst = os.path.join(root, name), os.path.join(self.node.driver_root, rel, name)
                if os.path.lexists(dst) and not (os.path.islink(src) or name == "ld.so.cache"):
                    continue  # the programs of the node (recording stand-ins) stay
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                if os.path.lexists(dst):
                    os.unlink(dst)
                shutil.copy2(src, dst, follow_symlinks=False)

    def driver_version(self, devices):
        return devices.get("gpu-0", {}).get("attributes", {}).get("driverVersion", {}).get("version")

    def test_an_upgrade_is_served_again_with_the_new_version_and_claims_kept(self):
        node = self.node
        node.start()
        pid = node.proc.pid
        self.assertEqual(self.driver_version(node.published()), "570.148.8")
        before = node.allocate("before", [("gpu", "gpu-0")])
        self.assertEqual(node.gpu().prepare([before])[before.uid]["error"], "")

        os.rename(self.ctl, self.ctl + ".unloaded")  # the old module unloaded
        node.wait_log(r"NVML stopped answering \(.*Driver Not Loaded\)")
        node.wait_log("waiting for the NVIDIA driver: ")
        node.kubelet.plugins.clear()  # the plugin's sockets come again: kubelet registers them anew
        self.install(NEW)
        with open(self.version_file, "w") as f:
            f.write(NEW + "\n")
        os.rename(self.ctl + ".unloaded", self.ctl)  # the new module loaded

        devices = node.wait_published(lambda d: self.driver_version(d) == "580.65.6", timeout=30.0)
        self.assertIn("gpu-0", devices)
        node.plugins = node.kubelet.wait_for_plugins([GPU], timeout=20.0)
        self.assertEqual(node.proc.pid, pid)
        self.assertIsNone(node.proc.poll())
        self.assertRegex(node.agent_log(), rf"NVIDIA driver {NEW} found after waiting")

        self.assertIn(before.uid, node.checkpoint(), "the claim prepared before the upgrade was lost")
        after = node.allocate("after", [("gpu", "gpu-1")])
        self.assertEqual(node.gpu().prepare([after])[after.uid]["error"], "")
        spec = str(node.cdi_spec(f"k8s.gpu.nvidia.com-claim_{after.uid}.yaml"))
        self.assertIn("libcuda.so." + NEW, spec)
        self.assertNotIn("libcuda.so." + OLD, spec)
        self.assertEqual(node.gpu().unprepare([before, after]), {before.uid: "", after.uid: ""})
        self.assertEqual(node.checkpoint(), {})
        # One in-process restart of the gpu.nvidia.com driver (then a wait on the watch), never a crash loop.
        self.assertEqual(node.agent_log().count("restarting in"), 1, node.agent_log())

    def test_a_new_version_loaded_at_once_is_seen_as_a_mismatch(self):
        node = self.node
        node.start()
        self.install(NEW)
        with open(self.version_file, "w") as f:
            f.write(NEW + "\n")  # no window without a module: the running session's library is now the old one
        node.wait_log(r"NVML stopped answering \(.*version mismatch")
        node.kubelet.plugins.clear()
        node.wait_published(lambda d: self.driver_version(d) == "580.65.6", timeout=30.0)
        node.plugins = node.kubelet.wait_for_plugins([GPU], timeout=20.0)
        claim = node.allocate("new", [("gpu", "gpu-2")])
        self.assertEqual(node.gpu().prepare([claim])[claim.uid]["error"], "")
        self.assertEqual(node.gpu().unprepare([claim]), {claim.uid: ""})


if __name__ == "__main__":
    unittest.main()
