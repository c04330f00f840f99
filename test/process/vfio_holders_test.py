"""PassthroughSupport on the simulated passthrough host: what holds a GPU before it goes to vfio-pci —
host processes (one wait per claim, inside kubelet's deadline, naming the holder), the agent itself
(its NVML session, kept off the GPUs until the GPU has left nvidia), and nvidia-persistenced (persistence mode off while handed over, as upstream)."""
import os
import threading
import unittest

import yaml

from vfio_passthrough_test import VFIO_CONFIG, PassthroughCase


class Holders(PassthroughCase):
    def test_a_busy_gpu_fails_only_its_claim_within_the_deadline_naming_the_holder(self):
        self.start()
        self.pci.hold(minor=1, pid=4242, comm="cuda-app")
        busy = self.node.allocate("vm-busy", [("vm", "gpu-vfio-1")])
        free = self.node.allocate("vm-free", [("vm", "gpu-vfio-2")])
        answer = self.node.gpu().prepare([busy, free], timeout=45)
        self.assertEqual(answer[free.uid]["error"], "")
        self.assertIn("GPU 0000:2a:00.0 (gpu-vfio-1, /dev/nvidia1) is still in use by pid 4242 (cuda-app) at the end "
                      "of the claim's 20s wait for its GPUs to be free", answer[busy.uid]["error"])
        self.assertEqual((self.pci.driver(self.bdf[1]), self.pci.driver(self.bdf[2])), ("nvidia", "vfio-pci"))
        self.assertNotIn(busy.uid, self.node.checkpoint())
        self.pci.release(4242)
        self.prepare_ok(busy)
        self.assertEqual(self.pci.driver(self.bdf[1]), "vfio-pci")

    def test_the_agent_is_never_a_holder_it_waits_for(self):
        # The host's /proc lists the agent too (its NVML session); it lets go of the GPU itself.
        self.start()
        self.pci.hold(minor=0, pid=self.node.proc.pid, comm="nvdra")
        claim = self.node.allocate("vm-a", [("vm", "gpu-vfio-0")])
        answer = self.node.gpu().prepare([claim], timeout=45)[claim.uid]
        self.assertEqual(answer["error"], "")
        self.assertEqual(self.pci.driver(self.bdf[0]), "vfio-pci")

    def test_no_nvml_lookup_of_the_agent_opens_a_gpu_again_while_it_leaves_nvidia(self):
        # Claim b's unprepare asks NVML for the GPUs again (its GPU is back on nvidia) while claim a's GPU 0
        # waits for the kernel's unbind: had it looked GPU 0 up, NVML would hold /dev/nvidia0 open again and
        # a real kernel's unbind would wait for the agent forever (here: pci.blocked).
        self.start()
        b = self.node.allocate("vm-b", [("vm", "gpu-vfio-1")])
        self.prepare_ok(b)
        self.pci.hold_unbinds(self.bdf[0])
        a = self.node.allocate("vm-a", [("vm", "gpu-vfio-0")])
        prepare = self.node.gpu().prepare_future([a], timeout=45)
        self.addCleanup(self.pci.finish_unbinds, self.bdf[0])
        self.pci.wait_held_unbind(self.bdf[0])  # a's hand-over is between the NVML release and the unbind
        answers = {}
        unprepare = threading.Thread(target=lambda: answers.update(b=self.node.gpu().unprepare([b], timeout=45)))
        unprepare.start()
        self.addCleanup(unprepare.join)
        self.node.wait_log(rf"gpu={self.bdf[1]} device=gpu-vfio-1 NVML cannot be asked about the GPUs yet \(NVML is "
                           rf"not asked about GPU index \d now: GPU {self.bdf[0]} \(gpu-vfio-0\) is being handed to "
                           rf"vfio-pci")
        self.pci.finish_unbinds(self.bdf[0])
        self.assertEqual(prepare.result().claims[a.uid].error, "")
        unprepare.join()
        self.assertEqual(answers["b"], {b.uid: ""})
        self.assertEqual(self.pci.blocked, [])
        self.assertEqual((self.pci.driver(self.bdf[0]), self.pci.driver(self.bdf[1])), ("vfio-pci", "nvidia"))

    def mock_persistence(self, minor):
        # The mock NVML's state file (written at its first change): one entry per GPU of the profile, in
        # order (minor = index here); the profile's GPUs start with persistence mode off.
        path = os.path.join(self.node.mock_state, "passthrough.state")
        if not os.path.exists(path):
            return False
        with open(path) as f:
            return yaml.safe_load(f)["gpus"][minor]["persistence"]

    def test_persistence_mode_is_off_while_handed_over_and_on_when_back_as_upstream(self):
        self.start()
        self.pci.persistenced(self.node.driver_root)  # holds every GPU until nvidia-smi -pm 0 asks it to stop
        claim = self.node.allocate("vm-a", [("vm", "gpu-vfio-0")])
        answer = self.node.gpu().prepare([claim], timeout=45)[claim.uid]
        self.assertEqual(answer["error"], "")
        self.assertEqual(self.pci.driver(self.bdf[0]), "vfio-pci")
        self.assertIn(f"-i {self.bdf[0]} -pm 0", self.node.helper_log("nvidia-smi").splitlines())
        self.assertFalse(self.mock_persistence(0))
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        # Back on nvidia: persistence mode on through NVML (nvidia-persistenced does not take it back).
        self.assertTrue(self.mock_persistence(0))
        self.assertFalse(self.mock_persistence(1))

    def test_a_claims_gpus_share_one_wait_inside_kubelets_deadline(self):
        # Three GPUs, two held by host processes that let go after 15 s and 30 s: one wait per GPU would
        # take 15 + 20 s and more (kubelet gives up at 45 s); one 20 s wait for the claim fails it in
        # time, naming what still holds a GPU, and every GPU bound so far goes back to nvidia.
        self.start()
        self.pci.hold(minor=1, pid=5001, comm="cuda-a")
        self.pci.hold(minor=2, pid=5002, comm="cuda-b")
        claim = self.node.allocate("vm-three", [("a", "gpu-vfio-0"), ("b", "gpu-vfio-1"), ("c", "gpu-vfio-2")],
                                   configs=[([], VFIO_CONFIG)])
        releases = [threading.Timer(15, self.pci.release, (5001,)), threading.Timer(30, self.pci.release, (5002,))]
        for t in releases:
            self.addCleanup(t.cancel)
            t.start()
        error = self.node.gpu().prepare([claim], timeout=45)[claim.uid]["error"]
        self.assertIn("GPU 0000:3a:00.0 (gpu-vfio-2, /dev/nvidia2) is still in use by pid 5002 (cuda-b) at the end of "
                      "the claim's 20s wait for its GPUs to be free", error)
        self.assertEqual([self.pci.driver(self.bdf[m]) for m in range(3)], ["nvidia"] * 3)
        # GPU 1 was bound once its holder let go, then rolled back with GPU 0.
        self.assertIn(("unbind", "vfio-pci", self.bdf[1]), self.pci.writes)
        self.assertNotIn(claim.uid, self.node.checkpoint())


if __name__ == "__main__":
    unittest.main()
