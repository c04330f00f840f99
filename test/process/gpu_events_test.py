"""What operators see without node logs, and node-local device safety, on the simulated node: a failed
prepare leaves a Kubernetes Event (events.k8s.io/v1) regarding its ResourceClaim in the API double, a
burst of identical failures is one Event with a series count, and a device prepared for one claim is
refused to another (upstream's message) unless adminAccess allows sharing it."""
import os
import unittest

from gpu_node import CD, GPU, SimulatedNode

DEADLINE = 20.0


class GpuEvents(unittest.TestCase):
    def setUp(self):
        self.node = SimulatedNode(profile="dgx-a100")
        self.addCleanup(self.node.cleanup)
        self.node.start()
        devices = self.node.published()
        self.gpus = sorted(n for n in devices if devices[n]["attributes"]["type"] == {"string": "gpu"})

    def wait_for_events(self, uid, done):
        return self.node.wait_for_events(uid, done, DEADLINE)

    def test_failed_prepare_leaves_an_event_regarding_the_claim(self):
        claim = self.node.allocate("lost", [("gpu", "gpu-99")])
        error = self.node.gpu().prepare([claim])[claim.uid]["error"]
        self.assertIn("gpu-99", error)
        [event] = self.wait_for_events(claim.uid, lambda evs: len(evs) == 1)
        self.assertEqual(event["type"], "Warning")
        self.assertEqual(event["reason"], "FailedPrepare")
        self.assertEqual(event["action"], "PrepareResourceClaim")
        self.assertEqual(event["note"], error)  # the message kubelet got
        self.assertEqual(event["reportingController"], "gpu.nvidia.com")
        self.assertEqual(event["reportingInstance"], "gpu.nvidia.com-" + self.node.node)
        self.assertEqual(event["metadata"]["namespace"], "default")
        regarding = event["regarding"]
        self.assertEqual((regarding["apiVersion"], regarding["kind"], regarding["namespace"], regarding["name"]),
                         ("resource.k8s.io/v1", "ResourceClaim", "default", "lost"))
        self.assertTrue(regarding["resourceVersion"])
        self.assertNotIn("series", event)
        self.assertEqual(self.node.api.rejections, [])

    def test_a_burst_of_identical_failures_is_one_event_with_a_series_count(self):
        claim = self.node.allocate("again", [("gpu", "gpu-99")])
        burst = 6
        for _ in range(burst):
            self.assertTrue(self.node.gpu().prepare([claim])[claim.uid]["error"])
        events = self.wait_for_events(claim.uid, lambda evs: evs and evs[0].get("series", {}).get("count") == burst)
        self.assertEqual(len(events), 1)
        self.assertTrue(events[0]["series"]["lastObservedTime"])
        writes = [w for w in self.node.api.writes() if "/events" in w["path"]]
        self.assertEqual(len([w for w in writes if w["method"] == "POST"]), 1)
        # One POST, then at most one PATCH per repeat: repeats in flight together share a patch, but
        # whether they overlap is timing (under ThreadSanitizer each finished before the next began).
        self.assertLessEqual(len(writes), burst)
        self.assertEqual(self.node.api.rejections, [])

    def test_a_device_prepared_for_one_claim_is_refused_to_another(self):
        first = self.node.allocate("first", [("gpu", self.gpus[0])])
        self.assertEqual(self.node.gpu().prepare([first])[first.uid]["error"], "")
        second = self.node.allocate("second", [("gpu", self.gpus[0])])
        error = self.node.gpu().prepare([second])[second.uid]["error"]
        self.assertIn(f"requested device {self.gpus[0]} is already allocated to different claim {first.uid}", error)
        self.assertNotIn(second.uid, self.node.checkpoint())
        self.assertNotIn(f"k8s.gpu.nvidia.com-claim_{second.uid}.json", self.node.cdi_files())
        # Once the first claim is unprepared the device is free again.
        self.assertEqual(self.node.gpu().unprepare([first]), {first.uid: ""})
        self.assertEqual(self.node.gpu().prepare([second])[second.uid]["error"], "")
        self.assertEqual(self.node.gpu().unprepare([second]), {second.uid: ""})

    def test_admin_access_claims_share_a_device(self):
        a = self.node.allocate("admin-a", [("gpu", self.gpus[1])], admin_access=True)
        b = self.node.allocate("admin-b", [("gpu", self.gpus[1])], admin_access=True)
        answer = self.node.gpu().prepare([a, b])
        self.assertEqual((answer[a.uid]["error"], answer[b.uid]["error"]), ("", ""))
        self.assertTrue(self.node.checkpoint()[a.uid]["status"]["allocation"]["devices"]["results"][0]["adminAccess"])
        self.assertEqual(self.node.gpu().unprepare([a, b]), {a.uid: "", b.uid: ""})


class UnreadableCheckpoint(unittest.TestCase):
    def test_an_unreadable_checkpoint_is_an_event_regarding_the_node(self):
        node = SimulatedNode(profile="dgx-a100", drivers=[CD])
        self.addCleanup(node.cleanup)
        gpu_dir = os.path.join(node.dirs.plugins, GPU)
        # A bad checkpoint file is moved aside (corrupt_state_test.py); a lock that cannot be opened
        # (a directory where cp.lock goes) leaves nothing to do but report it.
        os.makedirs(os.path.join(gpu_dir, "cp.lock"))
        node.start(wait_ready=False)  # the GPU driver cannot start; compute-domain.nvidia.com registers
        [node_obj] = node.api.objects("v1", "nodes")
        [event] = node.wait_for_events(node_obj["metadata"]["uid"], lambda evs: len(evs) == 1, DEADLINE)
        self.assertEqual((event["reason"], event["action"], event["type"]),
                         ("CheckpointUnreadable", "LoadCheckpoint", "Warning"))
        self.assertEqual(event["metadata"]["namespace"], "default")
        self.assertEqual(event["regarding"]["kind"], "Node")
        self.assertEqual(event["reportingController"], GPU)
        self.assertIn("checkpoint", event["note"])
        self.assertEqual(node.api.rejections, [])


if __name__ == "__main__":
    unittest.main()
