"""MPS control daemons as transient systemd units (--mps-manager=systemd), driven from outside: the
agent on a simulated dgx-a100 node with a real private dbus-daemon as its system bus and the
stand-in org.freedesktop.systemd1 (test/imex/fake_systemd1), which runs each transient unit's
ExecStart — the fake node's recording nvidia-cuda-mps-control — and lists the units it holds."""
import json
import os
import subprocess
import sys
import unittest

from gpu_node import SimulatedNode, gpu_config
from nvdra_testlib import BINARY_DIR, SOURCE_DIR, clean_env, run_agent

sys.path.insert(0, os.path.join(SOURCE_DIR, "test", "systemd"))
from private_dbus import SYSTEMD_AND_AGENT as POLICY, PrivateDbus, read_line  # noqa: E402

FAKE_SYSTEMD = os.path.join(BINARY_DIR, "test", "imex", "fake_systemd1")
MPS = {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 25}}


class FakeSystemd:
    def __init__(self, address):
        self.proc = subprocess.Popen([FAKE_SYSTEMD], env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if read_line(self.proc.stdout, 20.0) != "ready":
            raise RuntimeError("fake_systemd1 did not come up")

    def transient(self):
        """{"starts": n, "stopped": [unit], "units": {unit: {active, sub, path, argv, env, properties}}}"""
        self.proc.stdin.write(b"transient\n")
        self.proc.stdin.flush()
        return json.loads(read_line(self.proc.stdout, 20.0))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=20)
        self.proc.stdout.close()


class MpsAsSystemdUnits(unittest.TestCase):
    def setUp(self):
        self.bus = PrivateDbus(POLICY)
        self.addCleanup(self.bus.close)
        self.systemd = FakeSystemd(self.bus.address)
        self.addCleanup(self.systemd.close)
        self.node = SimulatedNode(profile="dgx-a100", gates="MPSSupport=true", args=["--mps-manager=systemd"],
                                  env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address})
        self.addCleanup(self.node.cleanup)
        self.node.start()
        devices = self.node.published()
        self.gpus = sorted(n for n in devices if devices[n]["attributes"]["type"] == {"string": "gpu"}
                           and not any(m.startswith(n + "-mig-") for m in devices))
        self.gpu = self.gpus[0]
        self.uuid = devices[self.gpu]["attributes"]["uuid"]["string"]

    def prepare_mps(self, name="mps"):
        claim = self.node.allocate(name, [("gpu", self.gpu)], [([], gpu_config(sharing=MPS))])
        answer = self.node.gpu().prepare([claim])
        self.assertEqual(answer[claim.uid]["error"], "", self.node.agent_log())
        return claim, answer

    def only_unit(self, claim):
        units = self.systemd.transient()["units"]
        self.assertEqual(len(units), 1, units)
        name, unit = next(iter(units.items()))
        self.assertTrue(name.startswith(f"nvdra-mps-{claim.uid}-") and name.endswith(".service"), name)
        return name, unit

    def mps_dir(self, unit_name):
        daemon_id = unit_name[len("nvdra-mps-"):-len(".service")]
        return os.path.join(self.node.dirs.plugins, "gpu.nvidia.com", "mps", daemon_id)

    def test_mps_claim_runs_as_a_transient_unit_and_unprepare_stops_it(self):
        self.assertIn("mps manager=systemd (--mps-manager=systemd)", self.node.agent_log())
        claim, _ = self.prepare_mps()
        name, unit = self.only_unit(claim)
        root = self.mps_dir(name)
        self.assertEqual(unit["active"], "active")
        self.assertEqual(unit["path"], os.path.join(self.node.driver_root, "usr", "bin", "nvidia-cuda-mps-control"))
        self.assertEqual(unit["argv"], ["nvidia-cuda-mps-control", "-d"])
        self.assertEqual(unit["env"], [f"CUDA_MPS_PIPE_DIRECTORY={root}/pipe", f"CUDA_MPS_LOG_DIRECTORY={root}/log",
                                       f"CUDA_VISIBLE_DEVICES={self.uuid}"])
        self.assertEqual(unit["properties"]["Type"], "forking")
        self.assertEqual(unit["properties"]["CollectMode"], "inactive-or-failed")
        # The unit ran the daemon; the limits went over its control pipe from the agent.
        log = self.node.helper_log("nvidia-cuda-mps-control")
        self.assertIn("-d\n", log)
        self.assertIn("set_default_active_thread_percentage 25", log)
        # The workload's CDI edits point at the unit's pipe and shm directories.
        spec = self.node.cdi_spec(f"k8s.gpu.nvidia.com-claim_{claim.uid}.yaml")
        edits = spec["devices"][0]["containerEdits"]
        self.assertIn({"hostPath": f"{root}/pipe", "containerPath": "/tmp/nvidia-mps",
                       "options": ["rw", "nosuid", "nodev", "bind"]}, edits["mounts"])
        self.assertIn({"hostPath": f"{root}/shm", "containerPath": "/dev/shm",
                       "options": ["rw", "nosuid", "nodev", "bind"]}, edits["mounts"])
        self.assertIn("CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps", edits["env"])

        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        state = self.systemd.transient()
        self.assertEqual(state["units"], {})
        self.assertEqual(state["stopped"], [name])
        self.assertFalse(os.path.exists(root))
        self.assertEqual(self.node.checkpoint(), {})

    def test_agent_restart_finds_the_unit_again_and_starts_no_second_one(self):
        claim, first = self.prepare_mps()
        name, _ = self.only_unit(claim)
        self.assertEqual(self.node.stop(), 0)
        self.assertEqual(self.systemd.transient()["units"][name]["active"], "active", "the daemon outlives the agent")
        self.node.start()
        self.assertEqual(self.node.gpu().prepare([claim]), first)
        state = self.systemd.transient()
        self.assertEqual(state["starts"], 1)
        self.assertEqual(list(state["units"]), [name])
        # The restarted agent stops the unit it did not start.
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assertEqual(self.systemd.transient()["stopped"], [name])
        self.assertFalse(os.path.exists(self.mps_dir(name)))

    def test_a_daemon_that_fails_to_start_fails_that_claim_naming_the_unit(self):
        control = os.path.join(self.node.driver_root, "usr", "bin", "nvidia-cuda-mps-control")
        with open(control, "w") as f:
            f.write("#!/bin/sh\necho 'no CUDA-capable device' >&2\nexit 1\n")
        good = self.node.allocate("plain", [("gpu", self.gpus[1])])
        bad = self.node.allocate("mps", [("gpu", self.gpu)], [([], gpu_config(sharing=MPS))])
        answer = self.node.gpu().prepare([good, bad])
        self.assertEqual(answer[good.uid]["error"], "")
        error = answer[bad.uid]["error"]
        self.assertIn("default/mps", error)
        self.assertRegex(error, rf"MPS unit nvdra-mps-{bad.uid}-[0-9a-f]{{5}}\.service did not start: "
                                r'job result "failed" \(see journalctl -u ')
        self.assertEqual(self.systemd.transient()["units"], {})
        self.assertEqual(list(self.node.checkpoint()), [good.uid])


class MpsManagerFlag(unittest.TestCase):
    def test_auto_in_a_container_chooses_process_and_says_why(self):
        node = SimulatedNode(profile="dgx-a100", args=["--mps-manager=auto"], env={"container": "podman"})
        self.addCleanup(node.cleanup)
        node.start()
        self.assertIn("mps manager=process (auto: in a container (container=podman))", node.agent_log())

    def test_auto_in_a_kubernetes_pod_chooses_process_although_containerd_leaves_no_mark(self):
        node = SimulatedNode(profile="dgx-a100", args=["--mps-manager=auto"],
                             env={"KUBERNETES_SERVICE_HOST": "10.96.0.1"})
        self.addCleanup(node.cleanup)
        node.start()
        self.assertIn("mps manager=process (auto: in a container (a Kubernetes pod (KUBERNETES_SERVICE_HOST is set)))",
                      node.agent_log())

    def test_unknown_value_exits_2_naming_the_flag_and_the_allowed_values(self):
        res = run_agent(["--mps-manager=launchd", "devices"], env=clean_env())
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assertIn('--mps-manager: invalid value "launchd": allowed: auto, systemd, process', res.stderr)
        res = run_agent(["devices"], env=clean_env(NVDRA_MPS_MANAGER="upstart"))
        self.assertEqual(res.returncode, 2, res.stderr)
        self.assertIn("NVDRA_MPS_MANAGER", res.stderr)


if __name__ == "__main__":
    unittest.main()
