"""Checkpoint saves per prepare, counted by the agent's own metric (nvdra_checkpoint_saves_total):
a claim whose steps leave nothing that start-up needs its PrepareStarted entry for (a full GPU or a
static MIG device: its CDI spec alone, which start-up removes when no entry names it) costs one
save, PrepareCompleted; a claim whose steps change the GPU (a time slice) costs two, PrepareStarted
on disk before the change. The on-disk checkpoint of either is upstream's PrepareCompleted entry."""
import unittest
import urllib.request

from gpu_node import GPU, SimulatedNode, gpu_config
from metrics_test import LISTENING, samples

SAVES = 'nvdra_checkpoint_saves_total{driver="gpu.nvidia.com"}'


class SavesPerPrepare(unittest.TestCase):
    def setUp(self):
        self.node = SimulatedNode(profile="dgx-a100", gates="TimeSlicingSettings=true", drivers=[GPU],
                                  args=["--http-endpoint=127.0.0.1:0"])
        self.addCleanup(self.node.cleanup)
        self.node.start()
        self.port = int(LISTENING.search(self.node.agent_log()).group(2))
        devices = self.node.published()
        self.gpus = sorted(n for n in devices if devices[n]["attributes"]["type"] == {"string": "gpu"}
                           and not any(m.startswith(n + "-mig-") for m in devices))
        self.migs = sorted(n for n in devices if "-mig-" in n)

    def saves(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10) as r:
            return samples(r.read().decode())[SAVES]

    def saves_of_prepare(self, claim):
        before = self.saves()
        self.assertEqual(self.node.gpu().prepare([claim])[claim.uid]["error"], "")
        entry = self.node.checkpoint()[claim.uid]
        self.assertEqual(entry["checkpointState"], "PrepareCompleted")
        return self.saves() - before

    def test_a_full_gpu_costs_one_save(self):
        self.assertEqual(self.saves_of_prepare(self.node.allocate("plain", [("gpu", self.gpus[0])])), 1)

    def test_a_static_mig_device_costs_one_save(self):
        self.assertTrue(self.migs, "the dgx-a100 profile has static MIG devices")
        self.assertEqual(self.saves_of_prepare(self.node.allocate("mig", [("mig", self.migs[0])])), 1)

    def test_a_time_sliced_gpu_costs_two(self):
        claim = self.node.allocate("ts", [("gpu", self.gpus[1])], [([], gpu_config(
            sharing={"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}}))])
        self.assertEqual(self.saves_of_prepare(claim), 2)

    def test_unprepare_costs_one_save(self):
        claim = self.node.allocate("gone", [("gpu", self.gpus[2])])
        self.saves_of_prepare(claim)
        before = self.saves()
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assertEqual(self.saves() - before, 1)
        self.assertNotIn(claim.uid, self.node.checkpoint())


if __name__ == "__main__":
    unittest.main()
