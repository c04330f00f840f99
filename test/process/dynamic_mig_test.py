"""DynamicMIG end to end: the agent publishes every MIG device a GPU could hold with shared counters,
and prepare creates exactly what a scheduler allocated from them — driven from outside over the
real sockets, with the API-server double (1.34 and 1.35 layouts) and the mock NVML's placement rules."""
import re
import signal
import subprocess
import time
import unittest

from gpu_node import MOCK, SimulatedNode
from nvdra_testlib import agent_binary

SUFFIX = {"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 10**3, "M": 10**6, "G": 10**9}


def quantity(text):
    m = re.fullmatch(r"(\d+)([KMGT]i|[kMG])?", text)
    assert m, f"unexpected quantity {text!r}"
    return int(m.group(1)) * SUFFIX[m.group(2) or ""]


class Scheduler:
    """What the DRA scheduler does with counters: a device fits while every counter it consumes is left."""

    def __init__(self, slices):
        self.left = {}
        for s in slices:
            for cs in s["spec"].get("sharedCounters", []):
                self.left[cs["name"]] = {k: quantity(v["value"]) for k, v in cs["counters"].items()}

    def take(self, device):
        need = [(c["counterSet"], k, quantity(v["value"])) for c in device.get("consumesCounters", [])
                for k, v in c["counters"].items()]
        if any(self.left[cs][k] < q for cs, k, q in need):
            return False
        for cs, k, q in need:
            self.left[cs][k] -= q
        return True


class DynamicMig(unittest.TestCase):
    def node(self, profile="hgx-h100", api_version=(1, 35)):
        node = SimulatedNode(profile=profile, gates="DynamicMIG=true", api_version=api_version)
        self.addCleanup(node.cleanup)
        return node.start()

    def mig_devices_on_node(self, node):
        out = subprocess.run([agent_binary(), "devices", "--nvml-library", MOCK], env=node.env(),
                             capture_output=True, text=True, check=True).stdout
        return sorted(line.split()[0] for line in out.splitlines() if line.startswith("  gpu-"))

    def slices(self, node):
        return self.node_slices(node, node.api.objects("resource.k8s.io/v1", "resourceslices", ""))

    @staticmethod
    def node_slices(node, slices):
        return [s for s in slices if s["spec"]["driver"] == "gpu.nvidia.com"]

    def test_slices_accepted_by_1_34_and_1_35_with_their_layouts(self):
        for profile in ("hgx-h100", "dgx-a100"):
            for version in ((1, 34), (1, 35)):
                with self.subTest(profile=profile, version=version):
                    node = self.node(profile, version)
                    self.assertEqual(node.api.rejections, [])
                    slices = self.slices(node)
                    with_counters = [s for s in slices if s["spec"].get("sharedCounters")]
                    self.assertTrue(with_counters)
                    if version >= (1, 35):  # counters in slices of their own
                        self.assertTrue(all(not s["spec"].get("devices") for s in with_counters))
                    else:  # one slice per GPU holding its counters and devices
                        self.assertTrue(all(s["spec"].get("devices") for s in with_counters))
                    devices = node.published()
                    dynamic = [n for n, d in devices.items() if d["attributes"]["type"] == {"string": "mig"}]
                    self.assertTrue(dynamic)
                    for name in dynamic:
                        self.assertTrue(devices[name].get("consumesCounters"), name)
                    node.stop()

    def prepare_everything_a_scheduler_allocates(self, node, gpu):
        """Per profile: allocate placements of `gpu` while counters last, prepare them in one call, unprepare."""
        devices = node.published()
        slices = self.slices(node)
        profiles = sorted({d["attributes"]["profile"]["string"] for n, d in devices.items()
                           if n.startswith(gpu + "-mig-")})
        self.assertTrue(profiles)
        for profile in profiles:
            with self.subTest(gpu=gpu, profile=profile):
                scheduler = Scheduler(slices)
                names = sorted((n for n, d in devices.items() if n.startswith(gpu + "-mig-")
                                and d["attributes"]["profile"]["string"] == profile),
                               key=lambda n: int(n.rsplit("-", 1)[1]))
                chosen = [n for n in names if scheduler.take(devices[n])]
                self.assertTrue(chosen)
                claims = [node.allocate(f"{gpu}-{profile.replace('.', '-').replace('+', '-')}-{i}", [("mig", n)])
                          for i, n in enumerate(chosen)]
                answer = node.gpu().prepare(claims)
                self.assertEqual({c.name: answer[c.uid]["error"] for c in claims}, {c.name: "" for c in claims})
                self.assertEqual(self.mig_devices_on_node(node), sorted(chosen))
                self.assertEqual(set(node.gpu().unprepare(claims).values()), {""})
                self.assertEqual(self.mig_devices_on_node(node), [])
                for c in claims:
                    node.delete_claim(c)
        self.assertEqual(node.specs_but_cd_base(), [])

    def test_every_profile_fills_an_h100_as_far_as_its_counters_allow(self):
        self.prepare_everything_a_scheduler_allocates(self.node("hgx-h100"), "gpu-0")

    def test_every_profile_fills_an_a100_in_mig_mode_as_far_as_its_counters_allow(self):
        node = self.node("dgx-a100")
        dynamic_gpus = sorted({n.split("-mig-")[0] for n in node.published() if "-mig-" in n})
        self.assertTrue(dynamic_gpus, "no A100 in MIG mode offers dynamic MIG devices")
        self.prepare_everything_a_scheduler_allocates(node, dynamic_gpus[0])

    def test_kill_9_between_create_and_checkpoint_leaves_no_orphans(self):
        node = self.node("hgx-h100")
        devices = node.published()
        names = sorted((n for n in devices if n.startswith("gpu-1-mig-1g10gb-19-")),
                       key=lambda n: int(n.rsplit("-", 1)[1]))
        claims = [node.allocate(f"burst-{i}", [("mig", n)]) for i, n in enumerate(names)]
        futures = [node.gpu().prepare_future([c]) for c in claims]
        deadline = time.monotonic() + 30
        while not any(e["checkpointState"] == "PrepareCompleted" for e in node.checkpoint().values()):
            self.assertLess(time.monotonic(), deadline, "no claim completed")
        self.assertEqual(node.kill(), -signal.SIGKILL)
        for f in futures:
            f.cancel()
        completed_at_kill = {u for u, e in node.checkpoint().items() if e["checkpointState"] == "PrepareCompleted"}

        node.start()
        checkpoint = node.checkpoint()
        self.assertTrue(completed_at_kill <= set(checkpoint), "a completed claim was lost")
        owned = sorted(n for c in claims if c.uid in checkpoint for n in [names[claims.index(c)]])
        self.assertEqual(self.mig_devices_on_node(node), owned, "MIG devices differ from what claims own")
        specs = {f for f in node.cdi_files() if f.startswith("k8s.gpu.nvidia.com-claim_")}
        self.assertEqual(specs, {f"k8s.gpu.nvidia.com-claim_{u}.yaml" for u in checkpoint})
        answer = node.gpu().prepare(claims)
        self.assertEqual({answer[c.uid]["error"] for c in claims}, {""})
        self.assertEqual(self.mig_devices_on_node(node), sorted(names))
        self.assertEqual(set(node.gpu().unprepare(claims).values()), {""})
        self.assertEqual(self.mig_devices_on_node(node), [])
        self.assertEqual(node.checkpoint(), {})


if __name__ == "__main__":
    unittest.main()
