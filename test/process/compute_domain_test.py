"""compute-domain.nvidia.com under HostManagedIMEX, driven from outside: the agent on the mock NVML
(gb200-nvl has NVLink cliques, dgx-a100 has none), the kubelet double over the real sockets, the
validating API-server double holding ComputeDomains and claims, and a real private dbus-daemon as
the system bus with a stand-in org.freedesktop.systemd1 (test/imex/fake_systemd1) whose
nvidia-imex.service states the test flips. The seed's §14 scenarios."""
import os
import re
import subprocess
import sys
import time
import unittest
import urllib.request

from gpu_node import CD, SimulatedNode
from nvdra_testlib import BINARY_DIR, SOURCE_DIR

sys.path.insert(0, os.path.join(SOURCE_DIR, "test", "systemd"))
from private_dbus import SYSTEMD_AND_AGENT as POLICY, PrivateDbus, read_line  # noqa: E402

FAKE_SYSTEMD = os.path.join(BINARY_DIR, "test", "imex", "fake_systemd1")
UNIT = "nvidia-imex.service"


class FakeSystemd:
    def __init__(self, address):
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)
        self.proc = subprocess.Popen([FAKE_SYSTEMD], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        if read_line(self.proc.stdout, 20.0) != "ready":
            raise RuntimeError("fake_systemd1 did not come up")

    def command(self, text):
        self.proc.stdin.write((text + "\n").encode())
        self.proc.stdin.flush()
        return read_line(self.proc.stdout, 20.0)

    def set(self, active, sub, load="loaded"):
        assert self.command(f"set {UNIT} {load} {active} {sub}") == "ok"

    def lifecycle_calls(self):
        return int(self.command("calls"))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=20)
        self.proc.stdout.close()


class ImexNode(SimulatedNode):
    """A SimulatedNode whose agent uses the private bus as its system bus."""

    def __init__(self, bus, **kw):
        self.bus = bus
        super().__init__(**kw)

    def env(self, **extra):
        return super().env(DBUS_SYSTEM_BUS_ADDRESS=self.bus.address, **extra)


def channel_config(domain_uid, mode="Single"):
    p = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainChannelConfig", "domainID": domain_uid}
    if mode is not None:
        p["allocationMode"] = mode
    return p


class ComputeDomainScenarios(unittest.TestCase):
    profile = "gb200-nvl"
    check = "warn"
    gates = "HostManagedIMEX=true"  # nvdra's spelling of host-managed IMEX
    mode_args = ()
    registering = None  # a GPU whose NVLink fabric is still IN_PROGRESS at start

    def setUp(self):
        self.bus = PrivateDbus(POLICY)
        self.addCleanup(self.bus.close)
        self.systemd = FakeSystemd(self.bus.address)
        self.addCleanup(self.systemd.close)
        self.systemd.set("active", "running")
        self.node = ImexNode(self.bus, profile=self.profile, gates=self.gates,
                             args=["--controller=false", "--imex-check", self.check, "--imex-isolation=domain",
                                   *self.mode_args, "--http-endpoint=127.0.0.1:0"])
        self.addCleanup(self.node.cleanup)
        if self.registering:
            self.node.set_fabric_state(self.registering, 2)  # NVML_GPU_FABRIC_STATE_IN_PROGRESS at start
        self.node.start()
        cd = self.node.api.put_object({
            "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
            "metadata": {"name": "train-a", "namespace": "default"},
            "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "train-a-channel"},
                                                "allocationMode": "Single"}}})
        self.domain = cd["metadata"]["uid"]

    def cd(self):
        return self.node.plugins[CD]

    def channel_claim(self, name, mode="Single", device="channel-0", config=None):
        params = config if config is not None else channel_config(self.domain, mode)
        return self.node.allocate(name, [("channel", device)], [([], params)], driver=CD)

    def prepare_error(self, claim):
        answer = self.cd().prepare([claim])[claim.uid]
        self.assertEqual(answer["devices"], [])
        self.assertNotEqual(answer["error"], "")
        return answer["error"]

    def wait_log(self, pattern, timeout=20.0):
        """Waits (event: the line appears) for a log line matching `pattern`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if re.search(pattern, self.node.agent_log()):
                return
            time.sleep(0.05)  # polling a log file for an event with a deadline, not a timing assertion
        self.fail(f"no log line matching {pattern!r}; log:\n{self.node.agent_log()}")

    def metrics(self):
        """The agent's metrics page as {'name{labels}': value}."""
        port = re.search(r"metrics listening address=\S+ port=(\d+)", self.node.agent_log()).group(1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            lines = r.read().decode().splitlines()
        return {k: float(v) for k, v in (l.rsplit(" ", 1) for l in lines if l and not l.startswith("#"))}

    def assert_clean(self):
        self.assertEqual([f for f in self.node.cdi_files() if "compute-domain" in f and "claim_" in f], [])
        self.assertEqual(self.node.checkpoint(CD), {})


class HostManagedWarn(ComputeDomainScenarios):
    def test_publishes_only_channel_zero(self):
        devices = self.node.published(CD)
        self.assertEqual(sorted(devices), ["channel-0"])
        attrs = devices["channel-0"]["attributes"]
        self.assertEqual(attrs["type"], {"string": "channel"})
        self.assertEqual(attrs["id"], {"int": 0})

    def test_single_channel_claim_round_trip(self):
        claim = self.channel_claim("pod-a")
        answer = self.cd().prepare([claim])[claim.uid]
        self.assertEqual(answer["error"], "")
        d = answer["devices"][0]
        self.assertEqual(d["device_name"], "channel-0")
        self.assertEqual(d["cdi_device_ids"], [f"k8s.compute-domain.nvidia.com/claim={claim.uid}-channel-0"])
        spec = self.node.cdi_spec(f"k8s.compute-domain.nvidia.com-claim_{claim.uid}.yaml")
        node = spec["devices"][0]["containerEdits"]["deviceNodes"][0]
        self.assertEqual((node["path"], node["major"], node.get("minor", 0)),
                         ("/dev/nvidia-caps-imex-channels/channel0", 235, 0))
        self.assertNotIn("minor", node, "0 is left out, as upstream (CDI's omitempty) writes it")
        self.assertEqual(self.node.checkpoint(CD)[claim.uid]["checkpointState"], "PrepareCompleted")
        self.assertEqual(self.cd().unprepare([claim]), {claim.uid: ""})
        self.assert_clean()
        self.assertEqual(self.systemd.lifecycle_calls(), 0)

    def test_all_and_foo_are_permanent_errors_naming_the_value(self):
        for mode in ("All", "foo"):
            error = self.prepare_error(self.channel_claim(f"pod-{mode.lower()}", mode))
            self.assertIn(f'allocationMode "{mode}" is not supported under HostManagedIMEX', error)
            self.assertIn("permanent", error)
        self.assert_clean()

    def test_second_channel_claim_on_the_node_fails(self):
        first, second = self.channel_claim("pod-1"), self.channel_claim("pod-2")
        self.assertEqual(self.cd().prepare([first])[first.uid]["error"], "")
        self.assertIn(f"channel 0 already allocated by claim default/pod-1 ({first.uid})", self.prepare_error(second))
        self.cd().unprepare([first])

    def test_daemon_claim_is_refused(self):
        daemon = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainDaemonConfig",
                  "domainID": self.domain}
        error = self.prepare_error(self.channel_claim("daemon", device="daemon-0", config=daemon))
        self.assertIn("daemon claims are disabled under HostManagedIMEX", error)

    def test_missing_compute_domain(self):
        error = self.prepare_error(self.channel_claim("orphan", config=channel_config("0000-no-such-domain")))
        self.assertIn("ComputeDomain not found: 0000-no-such-domain", error)

    def test_unit_stopped_under_warn_is_reported_and_prepare_goes_on(self):
        self.wait_log(r"imex unit=nvidia-imex.service load=loaded active=active sub=running")
        self.systemd.set("inactive", "dead")
        self.wait_log(r"imex unit=nvidia-imex.service load=loaded active=inactive sub=dead")
        claim = self.channel_claim("pod-warn")
        self.assertEqual(self.cd().prepare([claim])[claim.uid]["error"], "")
        m = self.metrics()
        self.assertEqual(m['nvdra_imex_unit_state{state="inactive",unit="nvidia-imex.service"}'], 1)
        self.assertEqual(m['nvdra_imex_unit_state{state="active",unit="nvidia-imex.service"}'], 0)
        self.assertEqual(m['nvidia_dra_prepared_devices{device_type="channel",driver="compute-domain.nvidia.com",'
                           'node="gpu-node-1"}'], 1)
        self.cd().unprepare([claim])
        self.assertEqual(self.systemd.lifecycle_calls(), 0, "the agent must never start, stop or restart the unit")

    def test_agent_restart_keeps_the_prepared_channel_claim(self):
        claim = self.channel_claim("survivor")
        first = self.cd().prepare([claim])[claim.uid]
        self.assertEqual(first["error"], "")
        self.node.stop()
        self.node.start()
        again = self.cd().prepare([claim])[claim.uid]
        self.assertEqual(again, first)
        self.assertEqual(self.cd().unprepare([claim]), {claim.uid: ""})
        self.assert_clean()


class HostManagedEnforce(ComputeDomainScenarios):
    check = "enforce"

    def test_unit_stopped_under_enforce_fails_new_claims_only(self):
        self.wait_log(r"imex unit=nvidia-imex.service load=loaded active=active sub=running")
        prepared = self.channel_claim("before")
        self.assertEqual(self.cd().prepare([prepared])[prepared.uid]["error"], "")
        self.systemd.set("failed", "failed")
        self.wait_log(r"active=failed sub=failed")
        self.assertEqual(self.cd().prepare([prepared])[prepared.uid]["error"], "")  # left alone
        self.cd().unprepare([prepared])
        claim = self.channel_claim("after")
        error = self.prepare_error(claim)
        self.assertIn("nvidia-imex.service must be active", error)
        self.assertIn("--imex-check=enforce", error)
        self.systemd.set("active", "running")
        self.wait_log(r"sub=running \(was load=loaded active=failed")
        self.assertEqual(self.cd().prepare([claim])[claim.uid]["error"], "")
        self.cd().unprepare([claim])
        self.assertEqual(self.systemd.lifecycle_calls(), 0)

    def test_unit_down_under_enforce_is_an_event_regarding_the_node(self):
        self.wait_log(r"imex unit=nvidia-imex.service load=loaded active=active sub=running")
        self.systemd.set("failed", "failed")
        [node] = self.node.api.objects("v1", "nodes")
        events = self.node.wait_for_events(node["metadata"]["uid"],
                                           lambda evs: any(e["reason"] == "IMEXUnitDown" for e in evs))
        [event] = [e for e in events if e["reason"] == "IMEXUnitDown"]
        self.assertEqual((event["action"], event["type"], event["reportingController"]),
                         ("CheckIMEXUnit", "Warning", CD))
        self.assertIn("nvidia-imex.service", event["note"])
        self.assertEqual(self.node.api.rejections, [])


class UpstreamHostManagedSpelling(ComputeDomainScenarios):
    """Upstream's --imex-mode=hostManaged with its HostManagedIMEXDaemon gate runs the same mode."""
    gates = "HostManagedIMEXDaemon=true"
    mode_args = ("--imex-mode=hostManaged",)

    def test_publishes_channel_zero_and_prepares_a_channel_claim(self):
        self.wait_log(r"running nvdra's host-managed IMEX mode \(HostManagedIMEX=true\)")
        self.assertEqual(sorted(self.node.published(CD)), ["channel-0"])
        claim = self.channel_claim("pod-a")
        answer = self.cd().prepare([claim])[claim.uid]
        self.assertEqual(answer["error"], "")
        self.assertEqual([d["device_name"] for d in answer["devices"]], ["channel-0"])
        self.cd().unprepare([claim])
        self.assert_clean()


class OtherImexUnit(ComputeDomainScenarios):
    """--imex-unit names the unit followed; another unit's transitions are not this agent's business."""
    mode_args = ("--imex-unit=imex-b.service",)

    def test_follows_the_named_unit_only(self):
        self.wait_log(r"imex unit=imex-b\.service load=")
        self.systemd.set("failed", "failed")  # nvidia-imex.service, which this agent does not follow
        claim = self.channel_claim("pod-a")
        self.assertEqual(self.cd().prepare([claim])[claim.uid]["error"], "")
        self.assertNotIn("nvidia-imex.service", self.node.agent_log())
        self.cd().unprepare([claim])


class NoClique(ComputeDomainScenarios):
    profile = "dgx-a100"

    def test_no_clique_is_a_permanent_error_naming_it(self):
        error = self.prepare_error(self.channel_claim("pod-a"))
        self.assertIn("host-managed IMEX requires an NVLink clique on this node; NVML reports none", error)
        self.assertIn("permanent", error)
        self.assert_clean()


class FabricRegistering(ComputeDomainScenarios):
    """Issue #30 point 6 in HostManagedIMEX mode: channel claims fail naming the fabric state while a GPU
    registers, and succeed once it is COMPLETED, without a restart (the clique is re-read every 5 s)."""
    registering = "GPU-2c7d9e41-5b6a-4f3e-a1d2-3e4f5a6b7c02"  # gb200-nvl's second GPU

    def test_channel_claims_served_once_the_fabric_completes(self):
        error = self.prepare_error(self.channel_claim("pod-a"))
        self.assertIn(f"GPU {self.registering}: NVLink fabric state 2 is not COMPLETED (3)", error)
        self.node.set_fabric_state(self.registering, 3)
        self.wait_log(r"NVLink clique now \S+ \(was none\)")
        claim = self.channel_claim("pod-b")
        self.assertEqual(self.cd().prepare([claim])[claim.uid]["error"], "")
        self.assertIsNone(self.node.proc.poll(), "the agent kept running (no restart)")
        self.cd().unprepare([claim])


if __name__ == "__main__":
    unittest.main()
