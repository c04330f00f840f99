"""PassthroughSupport's busy check knows when it is blind (issue #30): when the agent cannot see the host's
processes — its /proc is a container's pid namespace (a DaemonSet without hostPID) or a process's open files
cannot be read — a VFIO prepare fails at once, saying what it cannot see and what to give the agent, and the
GPU stays on nvidia (a real kernel's unbind under a process that has the GPU open hangs). The shipped
gpu-passthrough overlay gives the agent what the check needs."""
import unittest

from kustomize import agent_container, daemonset, render
from vfio_passthrough_test import PassthroughCase


class BlindBusyCheck(PassthroughCase):
    def assert_fails_on_nvidia(self, claim, *needles):
        error = self.node.gpu().prepare([claim], timeout=45)[claim.uid]["error"]
        self.assertIn("GPU 0000:18:00.0 (gpu-vfio-0, /dev/nvidia0) stays on nvidia: cannot tell which host "
                      "processes have the GPU open", error)
        for needle in needles:
            self.assertIn(needle, error)
        self.assertIn("hostPID: true", error)
        self.assertEqual(self.pci.driver(self.bdf[0]), "nvidia")
        self.assertFalse([w for w in self.pci.writes if w[0] == "unbind"], "the GPU was unbound while blind")
        self.assertNotIn(claim.uid, self.node.checkpoint())

    def test_a_container_pid_namespace_fails_the_prepare_and_keeps_the_gpu_on_nvidia(self):
        self.start()
        self.pci.hide_host_processes()
        claim = self.node.allocate("vm-blind", [("vm", "gpu-vfio-0")])
        self.assert_fails_on_nvidia(claim, "is not the host's process list", "pid 2 is not kthreadd")
        # Given the host's processes again, the same claim prepares.
        self.pci.restore_host_processes()
        self.prepare_ok(claim)
        self.assertEqual(self.pci.driver(self.bdf[0]), "vfio-pci")

    def test_a_process_whose_files_cannot_be_read_fails_the_prepare(self):
        self.start()
        self.pci.hold_unreadably(pid=6161, comm="secret-app")
        claim = self.node.allocate("vm-unreadable", [("vm", "gpu-vfio-0")])
        self.assert_fails_on_nvidia(claim, "/proc/6161/fd cannot be read")

    def test_the_passthrough_overlay_gives_the_agent_the_hosts_processes(self):
        objects = render("gpu-passthrough")
        spec = daemonset(objects)["spec"]["template"]["spec"]
        self.assertTrue(spec.get("hostPID"), "the gpu-passthrough overlay must set hostPID: true")
        container = agent_container(objects)
        self.assertTrue(container["securityContext"]["privileged"])
        env = {e["name"]: e.get("value") for e in container["env"]}
        self.assertIn("PassthroughSupport=true", env["FEATURE_GATES"])
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        self.assertIn(env["HOST_ROOT"], mounts, "HOST_ROOT must be a mount of the host's /")
        volumes = {v["name"]: v for v in spec["volumes"]}
        self.assertEqual(volumes[mounts[env["HOST_ROOT"]]]["hostPath"]["path"], "/")


if __name__ == "__main__":
    unittest.main()
