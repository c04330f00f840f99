"""Driver-managed IMEX (issue #29): the ComputeDomainClique watch is label-selected to this node's clique
(resource.nvidia.com/computeDomain.cliqueID, the label upstream's daemon puts on every clique it creates), and
a clique id that changes while the agent runs (the fabric registered again in another clique, seen by the
re-read every --clique-reread-seconds) moves both that selection and the nvidia.com/gpu.clique node label.
Agent on the mock NVML (gb200-nvl), kubelet double, validating API-server double (labelSelector served)."""
import unittest

from compute_domain_objects import CLIQUE_LABEL, GV, clique_object
from gpu_node import CD, SimulatedNode

CLUSTER = "9c6f5af3-53bf-49b5-a436-b66766c413c3"  # gb200-nvl's fabric
GPUS = [f"GPU-2c7d9e41-5b6a-4f3e-a1d2-3e4f5a6b7c0{i}" for i in range(1, 5)]


class CliqueWatch(unittest.TestCase):
    args = ()

    def setUp(self):
        self.node = SimulatedNode(profile="gb200-nvl", args=["--controller=false", *self.args])
        self.addCleanup(self.node.cleanup)
        self.node.start()
        self.clique = self.node.wait_log(r"mode=driverManaged clique=(\S+)").group(1)
        cd = self.node.api.put_object({
            "apiVersion": GV, "kind": "ComputeDomain", "metadata": {"name": "train-w", "namespace": "default"},
            "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "train-w-channel"}}}})
        self.domain = cd["metadata"]["uid"]

    def channel(self, name, deadline=45.0):
        claim = self.node.allocate(name, [("channel", "channel-0")],
                                   [([], {"apiVersion": GV, "kind": "ComputeDomainChannelConfig",
                                          "domainID": self.domain, "allocationMode": "Single"})], driver=CD)
        return self.node.plugins[CD].prepare([claim], timeout=deadline)[claim.uid]

    def clique_watches(self):
        return [r["query"] for r in self.node.api.request_log()
                if r["path"].endswith("/computedomaincliques") and "watch" in r["query"]]

    def wait_label(self, value):
        self.node.api.wait_for_objects(
            "v1", "nodes", lambda n: n[0]["metadata"].get("labels", {}).get("nvidia.com/gpu.clique") == value, 30)


class Selection(CliqueWatch):
    def test_the_watch_asks_for_this_nodes_clique_only(self):
        self.node.api.put_object(clique_object(self.domain, self.clique, self.node.node))
        self.assertEqual(self.channel("pod-w1")["error"], "")
        self.assertEqual({q.get("labelSelector") for q in self.clique_watches()}, {f"{CLIQUE_LABEL}={self.clique}"})

    def test_a_clique_of_another_clique_id_is_not_read(self):
        """An object named like this node's clique but labelled for another one is outside the selection: the
        prepare runs to its deadline and says the clique does not exist."""
        other = clique_object(self.domain, self.clique, self.node.node)
        other["metadata"]["labels"][CLIQUE_LABEL] = f"{CLUSTER}.1"
        self.node.api.put_object(other)
        answer = self.channel("pod-w2", deadline=4.0)
        self.assertIn(f"ComputeDomainClique default/{self.domain}.{self.clique} does not exist", answer["error"])


class CliqueChange(CliqueWatch):
    args = ("--gpu-clique-label-enabled=true", "--clique-reread-seconds=1")

    def test_a_changed_clique_moves_the_label_and_the_watch(self):
        self.wait_label(self.clique)
        for gpu in GPUS:
            self.node.mock_hook("nvdraMockSetFabricClique", gpu, 4027)
        new = f"{CLUSTER}.4027"
        self.node.wait_log(rf"NVLink clique now {new} \(was {self.clique}\)", 30)
        self.wait_label(new)
        self.node.api.put_object(clique_object(self.domain, new, self.node.node))
        self.assertEqual(self.channel("pod-w3")["error"], "")  # read through the watch selected anew
        self.assertEqual(self.node.stop(), 0)
        self.assertNotIn("nvidia.com/gpu.clique", self.node.api.objects("v1", "nodes")[0]["metadata"].get("labels", {}))


if __name__ == "__main__":
    unittest.main()
