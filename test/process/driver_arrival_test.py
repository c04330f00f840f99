"""The NVIDIA driver arrives after the agent (issue #30; upstream #1008, #1380): with no driver loaded at start
(the mock NVML answers DRIVER_NOT_LOADED while the node's /dev/nvidiactl is missing), the agent stays up, says
"waiting for the NVIDIA driver" in its log, its status and its health check, publishes no gpu.nvidia.com slice
and keeps kubelet's liveness probe SERVING; once the device node appears (the GPU Operator's driver container
loads the module) the GPUs are published and the plugin registered, by the same process: a watch, no restart."""
import json
import os
import select
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "systemd"))
from agent_status_test import NVDRACTL, policy_for_this_user  # noqa: E402
from gpu_node import CD, GPU, SimulatedNode  # noqa: E402
from kubelet_double.probe import check  # noqa: E402
from private_dbus import PrivateDbus  # noqa: E402

WAITING = "waiting for the NVIDIA driver"


class DriverArrivesAfterTheAgent(unittest.TestCase):
    def setUp(self):
        self.bus = PrivateDbus(policy_for_this_user())
        self.addCleanup(self.bus.close)
        # The compute-domain driver needs no NVML to serve: the agent's start is seen through its plugin.
        self.node = SimulatedNode(profile="dgx-a100", drivers=[CD], args=["--healthcheck-port=0"],
                                  env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address})
        self.addCleanup(self.node.cleanup)
        self.ctl = os.path.join(self.node.host_root, "dev", "nvidiactl")
        self.assertTrue(os.path.lexists(self.ctl), "the simulated node has no /dev/nvidiactl")
        os.rename(self.ctl, self.ctl + ".not-yet")  # no kernel module yet
        self.node.extra_env["NVDRA_MOCK_DRIVER_NODE"] = self.ctl

    def driver_status(self):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DBUS_SYSTEM_BUS_ADDRESS": self.bus.address}
        out = subprocess.run([NVDRACTL, "-o", "json", "status"], env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        return {d["name"]: d for d in json.loads(out.stdout)["drivers"]}

    def wait_for(self, what, condition, timeout=20.0):
        deadline = time.monotonic() + timeout
        while not condition():
            self.assertLess(time.monotonic(), deadline, f"{what}; log:\n{self.node.agent_log()}")
            select.select([], [], [], 0.01)  # as SimulatedNode.wait_log polls: a condition with a deadline

    def test_the_gpus_are_published_once_the_driver_appears_without_a_restart(self):
        self.node.start(wait_ready=False)
        pid = self.node.proc.pid
        self.node.wait_log(WAITING + r": .*Driver Not Loaded")
        self.node.wait_log(r"healthcheck driver=gpu\.nvidia\.com NOT_SERVING: " + WAITING)
        port = self.node.healthcheck_port()
        self.assertEqual(check(port, "gpu.nvidia.com"), "NOT_SERVING")
        self.wait_for("liveness SERVING while the driver is awaited", lambda: check(port, "liveness") == "SERVING")
        self.wait_for("the status saying so", lambda: WAITING in self.driver_status()[GPU]["detail"])
        self.assertFalse(self.driver_status()[GPU]["published"])
        # Start-up is over while it waits (READY=1): systemd's start timeout must not restart it in a loop.
        self.node.notify.wait_for("READY=1")
        self.assertEqual(self.node.published(GPU), {}, "a gpu.nvidia.com slice was published without GPUs")
        self.assertEqual([s for s in self.node.api.objects("resource.k8s.io/v1", "resourceslices", "")
                          if s["spec"]["driver"] == GPU], [])

        os.rename(self.ctl + ".not-yet", self.ctl)  # the driver container loaded the module
        appeared = time.monotonic()
        devices = self.node.wait_published(lambda d: "gpu-0" in d, timeout=20.0)
        print(f"driver appeared -> gpu.nvidia.com published: {time.monotonic() - appeared:.3f} s", file=sys.stderr)
        self.assertEqual(sorted(n for n in devices if "-mig-" not in n)[:1], ["gpu-0"])
        gpu = self.node.kubelet.wait_for_plugins([GPU], timeout=20.0)[GPU]
        self.wait_for("health SERVING", lambda: check(port, "gpu.nvidia.com") == "SERVING")
        self.wait_for("the status cleared", lambda: WAITING not in self.driver_status()[GPU]["detail"])

        self.assertEqual(self.node.proc.pid, pid)
        self.assertIsNone(self.node.proc.poll())
        log = self.node.agent_log()
        self.assertNotIn("restarting in", log, "the driver was found by a supervisor restart, not the watch")
        self.assertRegex(log, r"NVIDIA driver \S+ found after waiting")
        self.assertEqual(log.count("no restart needed once it is installed"), 1, "the wait is logged once")

        claim = self.node.allocate("after-install", [("gpu", "gpu-0")])
        self.assertEqual(gpu.prepare([claim])[claim.uid]["error"], "")
        self.assertEqual(gpu.unprepare([claim]), {claim.uid: ""})

    def test_sigterm_while_waiting_for_the_driver_is_a_clean_stop(self):
        self.node.start(wait_ready=False)
        self.node.wait_log(WAITING)
        self.assertEqual(self.node.stop(), 0)  # the wait is cancelled: status 0 within stop()'s deadline


if __name__ == "__main__":
    unittest.main()
