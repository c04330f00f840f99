"""Every failed rollback is visible (issue #30): when a prepare fails and undoing what it did fails too, the
operator learns what was left behind — a log line naming it, a RollbackFailed Warning Event on the claim and
nvdra_rollback_failures_total — and the claim's PrepareStarted entry keeps it to be rolled back again.
Here the claim's CDI spec cannot be written, nor removed again, because a directory stands in its place: for a
GPU claim and for a compute-domain channel claim (host-managed IMEX)."""
import os
import re
import unittest
import urllib.request

from compute_domain_test import ComputeDomainScenarios
from gpu_node import CD, GPU, SimulatedNode
from metrics_test import LISTENING, samples

DEADLINE = 20.0


class FailedRollbackIsVisible(unittest.TestCase):
    def setUp(self):
        self.node = SimulatedNode(profile="dgx-a100", drivers=[GPU], args=["--http-endpoint=127.0.0.1:0"])
        self.addCleanup(self.node.cleanup)
        self.node.start()

    def metrics(self):
        m = LISTENING.search(self.node.agent_log())
        self.assertIsNotNone(m, self.node.agent_log())
        with urllib.request.urlopen(f"http://127.0.0.1:{m.group(2)}/metrics", timeout=10) as r:
            return samples(r.read().decode())

    def test_a_spec_that_cannot_be_written_nor_removed_is_reported(self):
        claim = self.node.allocate("stuck", [("gpu", "gpu-0")])
        spec = os.path.join(self.node.dirs.cdi, f"k8s.gpu.nvidia.com-claim_{claim.uid}.yaml")
        os.makedirs(os.path.join(spec, "in-the-way"))
        error = self.node.gpu().prepare([claim])[claim.uid]["error"]
        self.assertIn(spec, error)

        line = self.node.wait_log(r"rolling back the failed prepare of claim (\S+ \(\S+\)) left something "
                                  r"behind: ([^\n]*)")
        self.assertEqual(line.group(1), f"default/stuck ({claim.uid})")
        self.assertIn(f"cannot remove {spec}", line.group(2))
        self.assertIn("stays PrepareStarted", line.group(2))

        def wanted(items):
            return [e for e in items if e.get("reason") == "RollbackFailed"]
        events = self.node.api.wait_for_objects("events.k8s.io/v1", "events", wanted, DEADLINE)
        [event] = wanted(events)
        self.assertEqual((event["type"], event["action"], event["regarding"]["kind"], event["regarding"]["uid"]),
                         ("Warning", "PrepareResourceClaim", "ResourceClaim", claim.uid))
        self.assertIn(f"cannot remove {spec}", event["note"])
        self.assertEqual(self.metrics()['nvdra_rollback_failures_total{driver="gpu.nvidia.com"}'], 1.0)
        self.assertEqual(self.node.checkpoint()[claim.uid]["checkpointState"], "PrepareStarted")

        # Once the way is clear, the claim prepares and unprepares as any other.
        os.rmdir(os.path.join(spec, "in-the-way"))
        os.rmdir(spec)
        self.assertEqual(self.node.gpu().prepare([claim])[claim.uid]["error"], "")
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assertEqual(self.node.checkpoint(), {})


class FailedChannelRollbackIsVisible(ComputeDomainScenarios):
    def test_a_channel_spec_that_cannot_be_written_nor_removed_is_reported(self):
        claim = self.channel_claim("stuck-channel")
        spec = os.path.join(self.node.dirs.cdi, f"k8s.compute-domain.nvidia.com-claim_{claim.uid}.yaml")
        os.makedirs(os.path.join(spec, "in-the-way"))
        self.assertIn(spec, self.prepare_error(claim))
        self.wait_log(r"rolling back the failed prepare of claim default/stuck-channel \(" + claim.uid +
                      r"\) left something behind: .*cannot remove " + re.escape(spec))

        def wanted(items):
            return [e for e in items if e.get("reason") == "RollbackFailed"]
        [event] = wanted(self.node.api.wait_for_objects("events.k8s.io/v1", "events", wanted, DEADLINE))
        self.assertEqual((event["regarding"]["uid"], event["reportingController"]), (claim.uid, CD))
        self.assertEqual(self.metrics()['nvdra_rollback_failures_total{driver="compute-domain.nvidia.com"}'], 1.0)
        self.assertEqual(self.node.checkpoint(CD)[claim.uid]["checkpointState"], "PrepareStarted")
        os.rmdir(os.path.join(spec, "in-the-way"))
        os.rmdir(spec)
        self.assertEqual(self.cd().prepare([claim])[claim.uid]["error"], "")
        self.assertEqual(self.cd().unprepare([claim]), {claim.uid: ""})
        self.assert_clean()


if __name__ == "__main__":
    unittest.main()
