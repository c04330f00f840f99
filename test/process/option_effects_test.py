"""Options whose effect shows only under load or on a faulty node, set through the agent's own option
paths (flag, environment variable) and observed on the simulated node:

- --kube-api-qps / --kube-api-burst: the API client's token bucket; a request held back by it is
  logged as client-go logs it ("waited … due to client-side throttling"), naming the limit it obeyed.
- --claim-read-qps / --claim-read-burst (NVDRA_CLAIM_READ_QPS / NVDRA_CLAIM_READ_BURST): the same for
  the claim-read client that prepare uses.
- --api-reconnect-spread (NVDRA_API_RECONNECT_SPREAD): a watch the API server cut resumes after a pause
  drawn from [0, spread), logged as "resuming in N ms".
- CrashOnNVLinkFabricErrors (FEATURE_GATES): a GPU whose fabric registration is still in progress makes
  the clique unknowable under the strict check (gate on, the default), and is left out of the clique
  under the legacy check (gate off)."""
import os
import re
import tempfile
import unittest

from compute_domain_test import POLICY, FakeSystemd, ImexNode, PrivateDbus
from gpu_node import SimulatedNode
from nvdra_testlib import SOURCE_DIR

THROTTLED = r"waited \d+ ms due to client-side throttling \({}: qps {}, burst {}\), request: {} "
GB200 = os.path.join(SOURCE_DIR, "nvml", "mock", "profiles", "gb200-nvl.yaml")
CLIQUE = "9c6f5af3-53bf-49b5-a436-b66766c413c3.4026"


class ApiRateLimits(unittest.TestCase):
    def node(self, **kw):
        node = SimulatedNode(profile="dgx-a100", **kw)
        self.addCleanup(node.cleanup)
        return node

    def test_kube_api_qps_and_burst_flags_hold_back_the_start_requests(self):
        # The start sends ~11 requests at once: with a burst of 1, every one after the first waits.
        node = self.node(args=["--kube-api-qps=20", "--kube-api-burst=1", "--log-level=debug"]).start()
        node.wait_log(THROTTLED.format("--kube-api-qps/--kube-api-burst", 20, 1, "(GET|POST|PUT|PATCH)"))

    def test_claim_read_qps_and_burst_variables_space_the_claim_reads_of_one_prepare(self):
        node = self.node(args=["--log-level=debug"],
                         env={"NVDRA_CLAIM_READ_QPS": "0.5", "NVDRA_CLAIM_READ_BURST": "1"}).start()
        claims = [node.allocate(f"pod-{i}", [("gpu", f"gpu-{i}")]) for i in range(2)]
        results = node.gpu().prepare(claims)
        self.assertEqual([results[c.uid]["error"] for c in claims], ["", ""])
        line = node.wait_log(THROTTLED.format("--claim-read-qps/--claim-read-burst", 0.5, 1, "GET") + r"(\S+)")
        self.assertIn("/resourceclaims/pod-", line.group(1))


class ApiReconnectSpread(unittest.TestCase):
    def pauses_after_a_drop(self, **kw):
        node = SimulatedNode(profile="l4", **kw)
        self.addCleanup(node.cleanup)
        node.start()
        # The node's one ResourceSlice watch (both drivers share it, k8s/slice_watch.hpp) opens once the
        # agent is ready: cut it once it has.
        node.api.wait_for_requests(lambda log: any(
            r["path"].endswith("/resourceslices") and r["query"].get("watch") for r in log), timeout=30)
        node.api.store.drop_watches()
        node.wait_log(r"watch resourceslices dropped: .*; resuming in \d+ ms")
        return [int(m) for m in re.findall(r"watch resourceslices dropped: .*; resuming in (\d+) ms", node.agent_log())]

    def test_variable_sets_the_window_of_the_resume(self):
        # A 4 ms window: every pause under 10 ms (a retry that fails adds half a ceiling, 2 ms, and
        # rounding up); the shipped 30 s would draw that once in 3,000 runs (the agent's watches cut
        # together share one moment).
        pauses = self.pauses_after_a_drop(env={"NVDRA_API_RECONNECT_SPREAD": "0.004"})
        self.assertEqual(len(pauses), 1, pauses)
        self.assertTrue(all(0 <= p < 10 for p in pauses), pauses)

    def test_flag_sets_the_window_of_the_resume(self):
        pauses = self.pauses_after_a_drop(args=["--api-reconnect-spread=0.004"])
        self.assertEqual(len(pauses), 1, pauses)
        self.assertTrue(all(0 <= p < 10 for p in pauses), pauses)


class CrashOnNVLinkFabricErrorsGate(unittest.TestCase):
    """Host-managed IMEX computes the node's clique at start (upstream-driver.md §9.2)."""

    def start(self, gate_value):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        profile = os.path.join(tmp.name, "gb200-registering.yaml")
        with open(GB200) as f:
            text = f.read()
        # The second GPU's fabric registration has not finished.
        first, rest = text.split("state: completed", 1)
        with open(profile, "w") as f:
            f.write(first + "state: completed" + rest.replace("state: completed", "state: inProgress", 1))
        bus = PrivateDbus(POLICY)
        self.addCleanup(bus.close)
        systemd = FakeSystemd(bus.address)
        self.addCleanup(systemd.close)
        systemd.set("active", "running")
        env = {} if gate_value is None else {"FEATURE_GATES": f"HostManagedIMEX=true,CrashOnNVLinkFabricErrors={gate_value}"}
        node = ImexNode(bus, profile=profile, gates="" if env else "HostManagedIMEX=true", env=env,
                        args=["--controller=false", "--imex-check", "warn"])
        self.addCleanup(node.cleanup)
        return node.start()

    def test_strict_by_default_the_clique_is_unknown_while_a_gpu_registers(self):
        node = self.start(None)
        node.wait_log(r"NVML cannot tell this node's NVLink clique: .*")
        node.wait_log(r"mode=hostManaged .*clique=none")

    def test_gate_off_leaves_the_registering_gpu_out_of_the_clique(self):
        node = self.start("false")
        node.wait_log(rf"mode=hostManaged .*clique={CLIQUE.replace('.', '[.]')}")
        self.assertNotIn("NVML cannot tell this node's NVLink clique", node.agent_log())


if __name__ == "__main__":
    unittest.main()
