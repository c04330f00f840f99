"""Consumable shares end to end (gate ConsumableShares, --consumable-shares): several claims hold one GPU at
once, each prepared on its own (checkpoint entry with its ShareID, CDI device, shareID in kubelet's answer),
unprepared one by one; the GPU's time slice goes back to the default only with the last share."""
import subprocess
import unittest
import uuid

from gpu_node import MOCK, SimulatedNode, gpu_config
from nvdra_testlib import agent_binary

GATES = "ConsumableShares=true,TimeSlicingSettings=true,MPSSupport=true"
TS_LONG = gpu_config(sharing={"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}})
TS_SHORT = gpu_config(sharing={"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}})
MPS = gpu_config(sharing={"strategy": "MPS"})


def claim_file(claim):
    return f"k8s.gpu.nvidia.com-claim_{claim.uid}.yaml"


class ConsumableShares(unittest.TestCase):
    def start(self, shares, api_version=(1, 36)):
        self.node = SimulatedNode(profile="hgx-h100", gates=GATES, args=("--consumable-shares", shares),
                                  api_version=api_version)
        self.addCleanup(self.node.cleanup)
        self.node.start()
        self.gpu0 = self.node.published()["gpu-0"]
        self.uuid0 = self.gpu0["attributes"]["uuid"]["string"]

    def share(self, name, config=TS_LONG, capacity=None):
        return self.node.allocate(name, [("gpu", "gpu-0")], [([], config)] if config else [],
                                  share_id=str(uuid.uuid4()), capacity=capacity)

    def timeslice_resets(self):
        return self.node.helper_log("nvidia-smi").count(f"compute-policy -i {self.uuid0} --set-timeslice 0")

    def test_three_claims_share_one_gpu_under_a_share_count(self):
        self.start("3")
        self.assertTrue(self.gpu0["allowMultipleAllocations"])
        self.assertEqual(self.gpu0["capacity"]["shares"]["value"], "3")
        claims = [self.share(f"share-{i}", capacity={"shares": "1"}) for i in range(3)]
        answer = self.node.gpu().prepare(claims)
        for c in claims:
            self.assertEqual(answer[c.uid]["error"], "", c.name)
            [device] = answer[c.uid]["devices"]
            self.assertEqual(device["device_name"], "gpu-0")
            self.assertEqual(device["cdi_device_ids"], [f"k8s.gpu.nvidia.com/claim={c.uid}-gpu-0"])
            self.assertEqual(device["share_id"], self.node.api.objects(
                "resource.k8s.io/v1", "resourceclaims", f"metadata.name={c.name}")[0]["status"]["allocation"]
                ["devices"]["results"][0]["shareID"])
            self.assertIn(claim_file(c), self.node.cdi_files())
        checkpoint = self.node.checkpoint()
        self.assertEqual(sorted(checkpoint), sorted(c.uid for c in claims))
        share_ids = {checkpoint[c.uid]["preparedDevices"][0]["devices"][0]["gpu"]["device"]["ShareID"] for c in claims}
        self.assertEqual(len(share_ids), 3)
        self.assertIn(f"compute-policy -i {self.uuid0} --set-timeslice 3", self.node.helper_log("nvidia-smi"))

        # A share with another time slice would override the others' setting: refused.
        other = self.share("other", TS_SHORT)
        refused = self.node.gpu().prepare([other])
        self.assertEqual(refused[other.uid]["devices"], [])
        self.assertIn("requested device gpu-0 has conflicting configuration with already prepared claim",
                      refused[other.uid]["error"])
        self.assertNotIn(claim_file(other), self.node.cdi_files())

        # The checkpoint keeps the shares apart across a restart.
        self.node.stop()
        self.node.start()
        again = self.node.gpu().prepare(claims)
        self.assertEqual({c.uid: again[c.uid]["devices"] for c in claims},
                         {c.uid: answer[c.uid]["devices"] for c in claims})

        # One by one: each unprepare removes only its own claim; the time slice stays until the last.
        for i, c in enumerate(claims):
            self.assertEqual(self.node.gpu().unprepare([c]), {c.uid: ""})
            self.assertNotIn(claim_file(c), self.node.cdi_files())
            left = claims[i + 1:]
            self.assertEqual(sorted(self.node.checkpoint()), sorted(x.uid for x in left))
            for x in left:
                self.assertIn(claim_file(x), self.node.cdi_files())
            self.assertEqual(self.timeslice_resets(), 0 if left else 1, f"after unprepare of {c.name}")
        self.assertEqual(self.node.specs_but_cd_base(), [])

    def test_three_claims_share_one_gpu_by_memory(self):
        self.start("memory")
        policy = self.gpu0["capacity"]["memory"]["requestPolicy"]
        self.assertEqual(policy["default"], self.gpu0["capacity"]["memory"]["value"])
        self.assertEqual(policy["validRange"]["min"], "1Mi")
        claims = [self.share(f"mem-{i}", config=None, capacity={"memory": "10Gi"}) for i in range(3)]
        answer = self.node.gpu().prepare(claims)
        ids = set()
        for c in claims:
            self.assertEqual(answer[c.uid]["error"], "", c.name)
            ids.update(answer[c.uid]["devices"][0]["cdi_device_ids"])
        self.assertEqual(len(ids), 3)
        for i, c in enumerate(claims):
            self.assertEqual(self.node.gpu().unprepare([c]), {c.uid: ""})
            self.assertEqual(sorted(self.node.checkpoint()), sorted(x.uid for x in claims[i + 1:]))
        self.assertEqual(self.node.specs_but_cd_base(), [])
        self.assertEqual(self.node.api.rejections, [])

    def test_dynamic_mig_device_is_made_once_and_goes_with_its_last_share(self):
        node = SimulatedNode(profile="hgx-h100", gates="DynamicMIG=true,ConsumableShares=true",
                             args=("--consumable-shares", "2"), api_version=(1, 36))
        self.addCleanup(node.cleanup)
        node.start()
        mig = sorted(n for n, d in node.published().items() if n.startswith("gpu-0-mig-"))[0]

        def live():
            out = subprocess.run([agent_binary(), "devices", "--nvml-library", MOCK], env=node.env(),
                                 capture_output=True, text=True, check=True).stdout
            return sorted(line.split()[0] for line in out.splitlines() if line.startswith("  gpu-"))

        claims = [node.allocate(f"mig-share-{i}", [("mig", mig)], share_id=str(uuid.uuid4())) for i in range(2)]
        for c in claims:  # one at a time: the second share finds the device made for the first
            self.assertEqual(node.gpu().prepare([c])[c.uid]["error"], "")
        self.assertEqual(live(), [mig])
        self.assertEqual(node.gpu().unprepare([claims[0]]), {claims[0].uid: ""})
        self.assertEqual(live(), [mig], "the other share still uses it")
        self.assertEqual(node.gpu().unprepare([claims[1]]), {claims[1].uid: ""})
        self.assertEqual(live(), [])
        self.assertEqual(node.specs_but_cd_base(), [])

    def test_mps_is_refused_while_shares_are_on(self):
        self.start("unlimited")
        claim = self.share("mps", MPS)
        answer = self.node.gpu().prepare([claim])
        self.assertIn("MPS sharing is not supported when consumable shares is enabled", answer[claim.uid]["error"])
        self.assertEqual(self.node.checkpoint(), {})


if __name__ == "__main__":
    unittest.main()
