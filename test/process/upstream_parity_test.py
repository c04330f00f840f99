"""nvdra against upstream's own plugins on the same simulated node (test/lib/upstream_node.py): for every
mock profile the ResourceSlices are equal, the same claims get equal kubelet answers and equivalent CDI
edits, and either side takes over the other's checkpoint and leaves no file behind. Runs where
NVDRA_UPSTREAM_DIR names the unpacked upstream binaries (shared/upstream/unpack DIR) and the test runs as
root; elsewhere it skips with one line, and in CI (CI=true) it fails naming what is missing.

Deliberate differences (README "Side by side with upstream") are asserted as exactly that difference."""
import os
import unittest

from cdi_edits import claim_edits
from gpu_node import CD, GPU, gpu_config
from upstream_node import UpstreamPlugins, exit_without_upstream, needs_upstream, upstream_node

PROFILES = ("dgx-a100", "hgx-h100", "gb200-nvl", "l4")
NVDRA_GATES = "TimeSlicingSettings=true,MPSSupport=true,HostManagedIMEXDaemon=true"
NVDRA_ARGS = ["--imex-mode=hostManaged", "--controller=false"]


def slices_of(node, driver):
    return [s for s in node.api.objects("resource.k8s.io/v1", "resourceslices", f"spec.nodeName={node.node}")
            if s["spec"]["driver"] == driver]


def comparable(slices):
    """A driver's slices without what the API server or the name generator chose and with devices in
    name order (upstream's order follows a Go map: deliberately not compared, see the README)."""
    out = []
    for s in sorted(slices, key=lambda s: (s["spec"]["pool"]["name"], s["metadata"]["generateName"])):
        spec = dict(s["spec"])
        spec["devices"] = sorted(spec.get("devices", []), key=lambda d: d["name"])
        out.append({"spec": spec, "owners": s["metadata"].get("ownerReferences", [])})
    return out


def new_node(profile):
    return upstream_node(profile, gates=NVDRA_GATES, args=list(NVDRA_ARGS))


@needs_upstream
class SlicesPerProfile(unittest.TestCase):
    """Each profile: nvdra publishes, stops and its slices go; upstream publishes on the same node."""

    @classmethod
    def setUpClass(cls):
        cls.seen = {}
        for profile in PROFILES:
            node = new_node(profile)
            try:
                node.start()
                nvdra = {d: slices_of(node, d) for d in (GPU, CD)}
                node.stop()
                node.api.delete_matching("resource.k8s.io/v1", "resourceslices", "")
                up = UpstreamPlugins(node)
                try:
                    up.start()
                    upstream = {d: slices_of(node, d) for d in (GPU, CD)}
                finally:
                    up.cleanup()
                cls.seen[profile] = (nvdra, upstream)
            finally:
                node.cleanup()

    def test_gpu_slices_equal_apart_from_name_and_device_order(self):
        for profile, (nvdra, upstream) in self.seen.items():
            with self.subTest(profile=profile):
                self.assertTrue(upstream[GPU])
                self.assertEqual(comparable(nvdra[GPU]), comparable(upstream[GPU]))

    def test_nvdra_device_order_is_stable_by_name(self):
        # Deliberate: upstream lists devices in Go map order, a new order (and a slice update) per restart.
        for profile, (nvdra, _) in self.seen.items():
            with self.subTest(profile=profile):
                for s in nvdra[GPU]:
                    names = [d["name"] for d in s["spec"]["devices"]]
                    self.assertEqual(names, sorted(names))

    def test_compute_domain_slices_equal(self):
        for profile, (nvdra, upstream) in self.seen.items():
            with self.subTest(profile=profile):
                self.assertTrue(upstream[CD])
                self.assertEqual(comparable(nvdra[CD]), comparable(upstream[CD]))

    def test_slice_names_as_upstream(self):
        for profile, (nvdra, upstream) in self.seen.items():
            for d in (GPU, CD):
                with self.subTest(profile=profile, driver=d):
                    self.assertEqual(sorted(s["metadata"]["generateName"] for s in nvdra[d]),
                                     sorted(s["metadata"]["generateName"] for s in upstream[d]))


@needs_upstream
class DynamicMigSlices(unittest.TestCase):
    """Under DynamicMIG both sides publish the same pool of several slices (upstream-driver.md §1.1): on 1.35+
    every GPU's counter set in slice #0, then one slice per GPU in PCI bus id order; on 1.34 one slice per GPU
    with its counter set. dgx-a100 mixes GPUs that partition (MIG on) with GPUs that do not."""
    CASES = (("hgx-h100", (1, 35)), ("dgx-a100", (1, 35)), ("hgx-h100", (1, 34)))

    @classmethod
    def setUpClass(cls):
        cls.seen = {}
        for profile, version in cls.CASES:
            node = upstream_node(profile, api_version=version, gates=NVDRA_GATES.replace("MPSSupport", "DynamicMIG"),
                                 args=list(NVDRA_ARGS))
            try:
                node.start()
                nvdra = slices_of(node, GPU)
                node.stop()
                node.api.delete_matching("resource.k8s.io/v1", "resourceslices", "")
                # Upstream refuses DynamicMIG with MPSSupport.
                up = UpstreamPlugins(node, gates={GPU: "TimeSlicingSettings=true,DynamicMIG=true"})
                try:
                    up.start()
                    upstream = slices_of(node, GPU)
                finally:
                    up.cleanup()
                cls.seen[(profile, version)] = (nvdra, upstream)
            finally:
                node.cleanup()

    def test_the_same_slices_in_the_same_places(self):
        for (profile, version), (nvdra, upstream) in self.seen.items():
            with self.subTest(profile=profile, version=version):
                self.assertGreater(len(upstream), 1)
                self.assertEqual(comparable(nvdra), comparable(upstream))


def ids_of(answer):
    return [i for d in answer["devices"] for i in d["cdi_device_ids"]]


@needs_upstream
class ClaimParity(unittest.TestCase):
    """The same claims on dgx-a100 (whole GPUs and MIG devices) prepared by each side in turn; every
    answer and the edits its ids resolve to are kept for the assertions."""

    @classmethod
    def setUpClass(cls):
        cls.node = node = new_node("dgx-a100")
        ts = gpu_config(sharing={"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}})
        cls.claims = {"full-gpu": (GPU, node.allocate("full", [("gpu", "gpu-0")])),
                      "time-slicing": (GPU, node.allocate("ts", [("gpu", "gpu-1")], [([], ts)])),
                      "static-mig": (GPU, node.allocate("mig", [("mig", "gpu-6-mig-1g5gb-19-6")]))}
        cls.answers, cls.edits, cls.files, cls.unprepared = {}, {}, {}, {}
        try:
            for which in ("nvdra", "upstream"):
                side = Side(node, which).start()
                try:
                    for kind, (driver, claim) in cls.claims.items():
                        answer = side.plugin(driver).prepare([claim])[claim.uid]
                        cls.answers[which, kind] = answer
                        if not answer["error"]:
                            cls.edits[which, kind] = claim_edits(node.dirs.cdi, ids_of(answer))
                    cls.files[which] = node.cdi_files()
                    for kind, (driver, claim) in cls.claims.items():
                        cls.unprepared[which, kind] = side.plugin(driver).unprepare([claim])[claim.uid]
                finally:
                    side.stop()
                    side.cleanup()
        except Exception:
            node.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.node.cleanup()

    def test_both_prepare_and_unprepare_every_claim(self):
        for kind in self.claims:
            for which in ("nvdra", "upstream"):
                with self.subTest(kind=kind, side=which):
                    self.assertEqual(self.answers[which, kind]["error"], "")
                    self.assertEqual(self.unprepared[which, kind], "")

    def test_kubelet_answers_equal(self):
        for kind in self.claims:
            with self.subTest(kind=kind):
                self.assertEqual(self.answers["nvdra", kind], self.answers["upstream", kind])

    def test_cdi_edits_equal(self):
        for kind in self.claims:
            with self.subTest(kind=kind):
                self.assertEqual({k: v for k, v in self.edits["nvdra", kind].items() if k != "files"},
                                 {k: v for k, v in self.edits["upstream", kind].items() if k != "files"})

    def test_claim_spec_files_named_as_upstream(self):
        def claim_files(which):
            return sorted(f for f in self.files[which] if "claim_" in f)
        self.assertEqual(claim_files("nvdra"), claim_files("upstream"))


@needs_upstream
class ImexChannelParity(unittest.TestCase):
    """A host-managed IMEX channel claim (both sides: --imex-mode=hostManaged, gate HostManagedIMEXDaemon) on
    dgx-a100, a node without an NVLink clique (on gb200-nvl upstream waits for the host's IMEX daemon at
    --imex-host-socket-path, which the simulated node does not run). Deliberate difference: upstream
    answers the channel with no CDI ids, so the container starts without IMEX; nvdra refuses the claim
    permanently, naming the missing clique (no silent no-op)."""

    @classmethod
    def setUpClass(cls):
        cls.node = node = new_node("dgx-a100")
        cls.answers, cls.files = {}, {}
        try:
            domain = node.api.put_object({
                "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                "metadata": {"name": "train-a", "namespace": "default"},
                "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "train-a-channel"},
                                                    "allocationMode": "Single"}}})["metadata"]["uid"]
            params = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainChannelConfig",
                      "domainID": domain, "allocationMode": "Single"}
            claim = node.allocate("chan", [("channel", "channel-0")], [([], params)], driver=CD)
            for which in ("nvdra", "upstream"):
                side = Side(node, which).start()
                try:
                    cls.answers[which] = side.plugin(CD).prepare([claim])[claim.uid]
                    cls.answers[which, "unprepare"] = side.plugin(CD).unprepare([claim])[claim.uid]
                    cls.files[which] = [f for f in node.cdi_files() if f.startswith("k8s." + CD)]
                finally:
                    side.stop()
                    side.cleanup()
        except Exception:
            node.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.node.cleanup()

    def test_upstream_prepares_the_channel(self):
        self.assertEqual(self.answers["upstream"]["error"], "")
        self.assertEqual([d["device_name"] for d in self.answers["upstream"]["devices"]], ["channel-0"])

    def test_upstream_answers_the_channel_without_cdi_ids(self):
        self.assertEqual(self.answers["upstream"]["devices"][0]["cdi_device_ids"], [])

    def test_nvdra_refuses_the_channel_naming_the_missing_clique(self):
        answer = self.answers["nvdra"]
        self.assertEqual(answer["devices"], [])
        self.assertIn("host-managed IMEX requires an NVLink clique on this node; NVML reports none",
                      answer["error"])
        self.assertIn("permanent", answer["error"])

    def test_both_unprepare_the_channel(self):
        self.assertEqual((self.answers["nvdra", "unprepare"], self.answers["upstream", "unprepare"]), ("", ""))

    def test_only_upstream_writes_a_compute_domain_base_spec(self):
        # Deliberate: upstream writes it for its IMEX daemon claims, which hostManaged refuses; no answer
        # of either side names it, and nvdra writes no spec that no claim uses.
        self.assertEqual(self.files["nvdra"], [])
        self.assertEqual(self.files["upstream"], ["k8s." + CD + "-device_base.yaml"])


class Side:
    """One implementation's GPU and compute-domain plugins on the node, started and stopped alike."""

    def __init__(self, node, which):
        self.node, self.which = node, which
        self.up = UpstreamPlugins(node) if which == "upstream" else None

    def start(self):
        (self.up or self.node).start()
        return self

    def plugin(self, driver):
        return (self.up.plugins if self.up else self.node.plugins)[driver]

    def stop(self):
        if self.up:
            self.up.stop()
        else:
            self.node.stop()

    def cleanup(self):
        if self.up:
            self.up.cleanup()




@needs_upstream
class CheckpointTakeOver(unittest.TestCase):
    """One side prepares a whole GPU and a MIG device and stops; the other starts on the same plugins
    directory and unprepares them: its unprepare succeeds and nothing of the claims is left."""

    def setUp(self):
        self.node = new_node("dgx-a100")
        self.addCleanup(self.node.cleanup)
        self.claims = [self.node.allocate("full", [("gpu", "gpu-0")]),
                       self.node.allocate("mig", [("mig", "gpu-6-mig-1g5gb-19-6")])]

    def data_files(self):
        """The names in the gpu driver's plugin data directory (each side's sockets live elsewhere)."""
        return set(os.listdir(os.path.join(self.node.dirs.plugins, GPU)))

    def hand_over(self, first, second):
        a = Side(self.node, first).start()
        try:
            answers = a.plugin(GPU).prepare(self.claims)
            self.assertEqual([answers[c.uid]["error"] for c in self.claims], ["", ""])
        finally:
            a.stop()
            a.cleanup()
        self.assertTrue(any("claim_" in f for f in self.node.cdi_files()))
        self.assertEqual(sorted(self.node.checkpoint(GPU)), sorted(c.uid for c in self.claims))
        self.left_by = {first: self.data_files()}
        b = Side(self.node, second).start()
        try:
            self.assertEqual(b.plugin(GPU).unprepare(self.claims), {c.uid: "" for c in self.claims})
        finally:
            b.stop()
            b.cleanup()
        self.assertEqual(self.node.checkpoint(GPU), {})
        self.left_by[second] = self.data_files() - self.left_by[first]
        return [f for f in self.node.cdi_files() if "claim_" in f]

    def test_upstream_takes_over_from_nvdra_and_no_claim_file_is_left(self):
        self.assertEqual(self.hand_over("nvdra", "upstream"), [])

    def test_nvdra_takes_over_from_upstream(self):
        self.assertEqual(self.hand_over("upstream", "nvdra"), [])

    def test_the_data_directory_differs_by_nvdras_spare_and_served_fields(self):
        # What nvdra adds to upstream's files there: the checkpoint's spare (the previous content's file, which
        # the next save overwrites) and the served-fields cache. Both deliberate, both ignored by upstream.
        self.hand_over("upstream", "nvdra")
        self.assertIn("checkpoint.json", self.left_by["upstream"])
        self.assertEqual(self.left_by["nvdra"], {".checkpoint.json.spare", "nvdra-served-fields.json"})

    def test_no_nvdra_node_wide_spec_left_after_rollback(self):
        self.hand_over("nvdra", "upstream")
        self.assertEqual([f for f in self.node.cdi_files() if f.startswith("k8s." + GPU + "-device")], [])


if __name__ == "__main__":
    exit_without_upstream()
    unittest.main()
