"""nvdra against upstream's compute-domain-kubelet-plugin in driver-managed IMEX mode (upstream's default,
--imex-mode=driverManaged, gates IMEXDaemonsWithDNSNames and ComputeDomainCliques on) on the same simulated
gb200-nvl node and API double: the slices are equal, and the same channel claims get the same answers —
prepared once the daemon's ComputeDomainClique entry is Ready, refused in upstream's words for a wrong
namespace, and the node label set and removed. Runs where NVDRA_UPSTREAM_DIR names the unpacked upstream
binaries and the test runs as root; skips with one line elsewhere (exit 77)."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdi_edits import claim_edits
from compute_domain_objects import clique_object
from gpu_node import CD
from upstream_node import UpstreamPlugins, exit_without_upstream, needs_upstream, upstream_node
from upstream_parity_test import comparable, ids_of, slices_of

GV = "resource.nvidia.com/v1beta1"
LABEL = "resource.nvidia.com/computeDomain"


def channel_config(uid):
    return {"apiVersion": GV, "kind": "ComputeDomainChannelConfig", "domainID": uid, "allocationMode": "Single"}


@needs_upstream
class DriverManagedParity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = node = upstream_node("gb200-nvl", args=["--controller=false"], drivers=[CD])
        cls.seen = {}
        try:
            for which in ("nvdra", "upstream"):
                cls.seen[which] = cls.run_side(which)
        except Exception:
            node.cleanup()
            raise

    @classmethod
    def run_side(cls, which):
        node, out = cls.node, {}
        cd = node.api.put_object({"apiVersion": GV, "kind": "ComputeDomain",
                                  "metadata": {"name": f"cd-{which}", "namespace": "default"},
                                  "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "t"}}}})
        uid = cd["metadata"]["uid"]
        up = None
        if which == "nvdra":
            node.start()
            plugin = node.plugins[CD]
        else:
            up = UpstreamPlugins(node, drivers=[CD], imex_mode="driverManaged",
                                 gates={CD: "IMEXDaemonsWithDNSNames=true,ComputeDomainCliques=true"})
            up.start(wait_slices=False)
            plugin = up.cd()
        try:
            out["slices"] = node.api.wait_for_objects(
                "resource.k8s.io/v1", "resourceslices",
                lambda items: any(s["spec"]["driver"] == CD and s["spec"].get("devices") for s in items), 60)
            out["slices"] = slices_of(node, CD)
            wrong = node.allocate(f"wrong-{which}", [("channel", "channel-0")], [([], channel_config(uid))],
                                  namespace="other", driver=CD)
            out["wrong"] = plugin.prepare([wrong])[wrong.uid]["error"]
            clique = node.wait_log(r"mode=driverManaged clique=(\S+)").group(1)
            node.api.put_object(clique_object(uid, clique, node.node))
            claim = node.allocate(f"ch-{which}", [("channel", "channel-0")], [([], channel_config(uid))], driver=CD)
            answer = plugin.prepare([claim])[claim.uid]
            out["answer"] = (answer["error"], [i.replace(claim.uid, "<uid>") for i in ids_of(answer)])
            edits = claim_edits(node.dirs.cdi, ids_of(answer)) if not answer["error"] else {}
            out["edits"] = dict(edits, files={f.replace(claim.uid, "<uid>") for f in edits.get("files", ())})
            out["label"] = node.api.objects("v1", "nodes")[0]["metadata"].get("labels", {}).get(LABEL) == uid
            out["unprepare"] = plugin.unprepare([claim])[claim.uid]
            out["label_after"] = node.api.objects("v1", "nodes")[0]["metadata"].get("labels", {}).get(LABEL)
        finally:
            if up:
                up.cleanup()
            else:
                node.stop()
            node.api.delete_matching("resource.k8s.io/v1", "resourceslices", "")
        return out

    @classmethod
    def tearDownClass(cls):
        cls.node.cleanup()

    def test_slices_equal(self):
        self.assertTrue(self.seen["upstream"]["slices"])
        self.assertEqual(comparable(self.seen["nvdra"]["slices"]), comparable(self.seen["upstream"]["slices"]))

    def test_channel_answers_and_edits_equal(self):
        self.assertEqual(self.seen["nvdra"]["answer"], self.seen["upstream"]["answer"])
        self.assertEqual(self.seen["nvdra"]["edits"], self.seen["upstream"]["edits"])

    def test_both_label_the_node_and_remove_the_label(self):
        for which in ("nvdra", "upstream"):
            self.assertTrue(self.seen[which]["label"], which)
            self.assertEqual(self.seen[which]["unprepare"], "", which)
            self.assertIsNone(self.seen[which]["label_after"], which)

    def test_wrong_namespace_in_upstreams_words(self):
        for which in ("nvdra", "upstream"):
            self.assertIn("the ResourceClaim's namespace is different than the ComputeDomain's namespace",
                          self.seen[which]["wrong"], which)


@needs_upstream
class DriverManagedTakeOver(unittest.TestCase):
    """One side prepares a channel claim (its daemon Ready) and stops; the other starts on the same plugins
    directory and unprepares it: the node label, the claim's CDI spec and the checkpoint entry are gone."""

    def setUp(self):
        self.node = upstream_node("gb200-nvl", args=["--controller=false"], drivers=[CD])
        self.addCleanup(self.node.cleanup)
        self.node.start()  # the clique id, from nvdra's log
        self.clique = self.node.wait_log(r"mode=driverManaged clique=(\S+)").group(1)
        self.node.stop()
        cd = self.node.api.put_object({"apiVersion": GV, "kind": "ComputeDomain",
                                       "metadata": {"name": "cd", "namespace": "default"},
                                       "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "t"}}}})
        self.uid = cd["metadata"]["uid"]
        self.node.api.put_object(clique_object(self.uid, self.clique, self.node.node))
        self.claim = self.node.allocate("ch", [("channel", "channel-0")], [([], channel_config(self.uid))], driver=CD)

    def side(self, which):
        if which == "nvdra":
            self.node.start()
            return None, self.node.plugins[CD]
        up = UpstreamPlugins(self.node, drivers=[CD], imex_mode="driverManaged",
                             gates={CD: "IMEXDaemonsWithDNSNames=true,ComputeDomainCliques=true"})
        up.start(wait_slices=False)
        return up, up.cd()

    def stop(self, up):
        if up:
            up.cleanup()
        else:
            self.node.stop()

    def label(self):
        return self.node.api.objects("v1", "nodes")[0]["metadata"].get("labels", {}).get(LABEL)

    def hand_over(self, first, second):
        up, plugin = self.side(first)
        try:
            self.assertEqual(plugin.prepare([self.claim])[self.claim.uid]["error"], "")
        finally:
            self.stop(up)
        self.assertEqual(self.label(), self.uid)
        self.assertEqual(sorted(self.node.checkpoint(CD)), [self.claim.uid])
        up, plugin = self.side(second)
        try:
            self.assertEqual(plugin.unprepare([self.claim])[self.claim.uid], "")
        finally:
            self.stop(up)
        self.assertIsNone(self.label())
        self.assertEqual(self.node.checkpoint(CD), {})
        self.assertEqual([f for f in self.node.cdi_files() if "claim_" in f], [])

    def test_upstream_takes_over_from_nvdra(self):
        self.hand_over("nvdra", "upstream")

    def test_nvdra_takes_over_from_upstream(self):
        self.hand_over("upstream", "nvdra")


if __name__ == "__main__":
    exit_without_upstream()
    unittest.main()
