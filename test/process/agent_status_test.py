"""nvdractl and busctl read a running agent's state through D-Bus: the real agent on a simulated GPU
node owns io.nvdra.Agent1 on a private system bus that uses the policy packaging/debian ships, and
what it reports follows what kubelet does (registration, READY, devices, prepared claims, errors)."""
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "systemd"))
from gpu_node import CD, GPU, SimulatedNode, gpu_config  # noqa: E402
from nvdra_testlib import BINARY_DIR, SOURCE_DIR  # noqa: E402
from private_dbus import PrivateDbus  # noqa: E402

NVDRACTL = os.path.join(BINARY_DIR, "agent", "ctl", "nvdractl")
POLICY = os.path.join(SOURCE_DIR, "packaging", "debian", "io.nvdra.Agent1.conf")


def policy_for_this_user():
    """The shipped policy; the test runs as root in CI, else the owning/reading user is us."""
    import pwd
    with open(POLICY) as f:
        text = f.read()
    if os.geteuid() != 0:
        me = pwd.getpwuid(os.geteuid()).pw_name
        text = text.replace('user="root"', f'user="{me}"').replace('group="nvdra"', 'group="root"')
    return text


class AgentStatusOverDbus(unittest.TestCase):
    def setUp(self):
        self.bus = PrivateDbus(policy_for_this_user())
        self.addCleanup(self.bus.close)
        self.node = SimulatedNode(env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address})
        self.addCleanup(self.node.cleanup)

    def ctl(self, *args):
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DBUS_SYSTEM_BUS_ADDRESS": self.bus.address}
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"):
            if k in os.environ:
                env[k] = os.environ[k]
        return subprocess.run([NVDRACTL, *args], env=env, capture_output=True, text=True, timeout=30)

    def ctl_json(self, *args):
        out = self.ctl("-o", "json", *args)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def test_no_nvidia_cdi_hook_is_said_at_start_and_in_status(self):
        node = SimulatedNode(env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address}, node_options=("--no-cdi-hook",))
        self.addCleanup(node.cleanup)
        node.start()
        warning = "no nvidia-cdi-hook found"
        self.assertEqual(node.agent_log().count(warning), 1, node.agent_log())
        drivers = {d["name"]: d for d in self.ctl_json("status")["drivers"]}
        self.assertIn(warning, drivers[GPU]["detail"])
        self.assertIn("--nvidia-cdi-hook-path", drivers[GPU]["detail"])
        claim = node.allocate("pod-a", [("gpu", "gpu-0")])
        self.assertEqual(node.gpu().prepare([claim])[claim.uid]["error"], "")
        spec = node.cdi_spec(f"k8s.gpu.nvidia.com-claim_{claim.uid}.yaml")
        self.assertNotIn("hooks", spec["containerEdits"])

    def test_nvdractl_follows_a_running_agent(self):
        self.node.start()
        status = self.ctl_json("status")
        self.assertTrue(status["ready"])
        self.assertEqual(status["nodeName"] if "nodeName" in status else status.get("node"), self.node.node)
        drivers = {d["name"]: d for d in status["drivers"]}
        self.assertEqual(drivers[GPU]["registration"], "registered")
        self.assertTrue(drivers[GPU]["published"])

        devices = {d["name"]: d for d in self.ctl_json("devices") if d["driver"] == GPU}
        self.assertEqual(set(devices), set(self.node.published()))
        self.assertEqual(devices["gpu-0"]["type"], "gpu")
        # Nothing measures device health yet: "unknown", never a made-up "healthy".
        self.assertEqual({d["health"] for d in devices.values()}, {"unknown"})

        good = self.node.allocate("pod-a", [("gpu", "gpu-0")])
        bad = self.node.allocate("pod-b", [("gpu", "gpu-1")], [([], gpu_config(sharing={"strategy": "Nope"}))])
        self.node.gpu().prepare([good, bad])
        claims = self.ctl_json("claims")
        self.assertEqual([(c["uid"], c["name"], c["state"], c["devices"]) for c in claims],
                         [(good.uid, "pod-a", "PrepareCompleted", ["gpu-0"])])
        errors = self.ctl_json("status")["lastErrors"]
        self.assertTrue(any("default/pod-b" in e["message"] for e in errors), errors)

        table = self.ctl("claims")
        self.assertEqual(table.returncode, 0, table.stderr)
        self.assertIn("pod-a", table.stdout)
        self.node.gpu().unprepare([good, bad])
        self.assertEqual(self.ctl_json("claims"), [])

        self.assertEqual(self.node.stop(), 0)
        gone = self.ctl("status")
        self.assertEqual(gone.returncode, 3, gone.stdout + gone.stderr)
        self.assertIn("not running", gone.stderr)


class HostWithoutImexChannels(AgentStatusOverDbus):
    """HostManagedIMEX on a host whose kernel has no IMEX channel device: the compute-domain driver
    fails to start and says what is missing; the gpu driver serves on; the status says both."""

    def setUp(self):
        self.bus = PrivateDbus(policy_for_this_user())
        self.addCleanup(self.bus.close)
        self.node = SimulatedNode(env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address}, drivers=[GPU],
                                  gates="HostManagedIMEX=true", args=["--controller=false"])
        self.addCleanup(self.node.cleanup)
        devices = os.path.join(self.node.host_root, "proc", "devices")
        with open(devices) as f:
            lines = [line for line in f if "nvidia-caps-imex-channels" not in line]
        with open(devices, "w") as f:
            f.writelines(lines)

    def test_nvdractl_follows_a_running_agent(self):
        self.node.start(wait_ready=False)
        deadline = time.monotonic() + 20
        while True:  # the event: the failure reaches the status service
            status = self.ctl_json("status")
            drivers = {d["name"]: d for d in status["drivers"]}
            if "nvidia-caps-imex-channels" in drivers.get(CD, {}).get("detail", ""):
                break
            self.assertLess(time.monotonic(), deadline, status)
            time.sleep(0.05)
        self.assertEqual(drivers[GPU]["registration"], "registered")
        self.assertNotEqual(drivers[CD]["registration"], "registered")
        self.assertFalse(status["ready"])
        self.assertIn("/proc/devices", drivers[CD]["detail"])
        # The gpu driver still prepares claims.
        claim = self.node.allocate("pod-a", [("gpu", "gpu-0")])
        self.assertEqual(self.node.gpu().prepare([claim])[claim.uid]["error"], "")
        self.assertEqual(self.node.stop(), 0)


class DeviceHealthOverDbus(unittest.TestCase):
    """NVMLDeviceHealthCheck on: an XID injected into the mock NVML shows in `nvdractl devices` (health,
    last XID and when), in table and JSON form."""
    ctl, ctl_json = AgentStatusOverDbus.ctl, AgentStatusOverDbus.ctl_json

    def setUp(self):
        self.bus = PrivateDbus(policy_for_this_user())
        self.addCleanup(self.bus.close)
        self.node = SimulatedNode(env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address},
                                  gates="NVMLDeviceHealthCheck=true")
        self.addCleanup(self.node.cleanup)

    def gpu_rows(self):
        return {d["name"]: d for d in self.ctl_json("devices") if d["driver"] == GPU}

    def test_nvdractl_devices_shows_an_xid_with_health_and_time(self):
        self.node.start()
        before = self.gpu_rows()
        self.assertEqual({d["health"] for d in before.values()}, {"healthy"})
        uuid = before["gpu-3"]["uuid"]
        self.node.inject_xid(uuid, 79)
        self.node.wait_published(lambda d: d["gpu-3"].get("taints"))
        deadline = time.monotonic() + 20
        while True:  # the event: the health change reaches the status service
            rows = self.gpu_rows()
            if rows["gpu-3"]["health"] == "unhealthy":
                break
            self.assertLess(time.monotonic(), deadline, rows["gpu-3"])
            time.sleep(0.05)
        self.assertEqual(rows["gpu-3"]["lastXid"], "79")
        self.assertRegex(rows["gpu-3"]["lastXidTime"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
        self.assertEqual([n for n, d in rows.items() if d["health"] != "healthy"], ["gpu-3"])
        table = self.ctl("devices")
        self.assertEqual(table.returncode, 0, table.stderr)
        line = next(ln for ln in table.stdout.splitlines() if " gpu-3 " in f" {ln} ")
        self.assertEqual(line.split()[4:7], ["unhealthy", "79", rows["gpu-3"]["lastXidTime"]])


if __name__ == "__main__":
    unittest.main()
