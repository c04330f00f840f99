"""Every crash point in test/process/crash_points.txt, run from outside: the agent starts with
NVDRA_CRASH_POINT naming the point, the kubelet call that reaches it kills the agent with SIGKILL,
the agent starts again without it, the same kubelet call and an unprepare succeed, and the node
holds nothing the claim left behind: no CDI spec (nor temp file), no checkpoint entry (nor temp
file), no MIG instance or MIG mode the node did not start with (mock NVML state), no MPS daemon
or unit, no time slice or compute mode other than the default.

A point whose scenario this file does not know, or that its kubelet call never reaches, fails.
One node per scenario runs its points in turn (each point with a claim of its own). To add a
scenario, add a row to SCENARIOS: how to make its node and its claim, and
what else its clean node looks like (`extra_clean`)."""
import json
import os
import re
import signal
import sys
import time
import unittest
from dataclasses import dataclass, field

import grpc
import yaml

from gpu_node import CD, GPU, SimulatedNode, gpu_config
from nvdra_testlib import SOURCE_DIR
import compute_domain_objects
import compute_domain_test  # fake_systemd1's client and the node on a private bus
import fabric_manager_test  # the FabricManager node and its mock FM state

sys.path.insert(0, os.path.join(SOURCE_DIR, "test", "systemd"))
from private_dbus import SYSTEMD_AND_AGENT as POLICY, PrivateDbus  # noqa: E402

CATALOGUE = os.path.join(SOURCE_DIR, "test", "process", "crash_points.txt")
CALL_TIMEOUT = 60
MPS = {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 25}}
TIME_SLICING = {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}}


def read_catalogue():
    """[(point, scenario)] in file order; raises ValueError naming a malformed line."""
    rows = []
    with open(CATALOGUE) as f:
        for number, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            fields = text.split()
            if len(fields) != 2 or "#" not in line:
                raise ValueError(f"crash_points.txt:{number}: want '<point>  <scenario>  # what is durable', "
                                 f"got {line.rstrip()!r}")
            rows.append((fields[0], fields[1]))
    return rows



def claim_areas():
    """The areas ClaimKind::area (agent/claims/gpu_claim_support.hpp) returns: string literals
    returned there, not the ones compared with (== "systemd")."""
    with open(os.path.join(SOURCE_DIR, "agent", "claims", "gpu_claim_support.hpp")) as f:
        text = f.read()
    body = text[text.index("std::string_view area("):]
    body = body[: body.index("\n  }\n")]
    areas = set(re.findall(r'(?<!== )"([a-z-]+)"', body))
    if not areas:
        raise AssertionError("no area found in ClaimKind::area")
    return sorted(areas)


# The steps of the GPU claim handler's crash_point(area, "<step>") (gpu_claim_handler.cpp,
# gpu_claim_undo.cpp) and the areas (kinds of claim) that reach each; None: every area.
MPS_AREAS = ("mps-process", "mps-systemd")
AREA_STEPS = {
    "prepare.after-started": None,
    "prepare.after-timeslice-set": ("timeslice",),
    "prepare.after-compute-mode": MPS_AREAS,
    "prepare.after-daemon-limits": MPS_AREAS,
    "prepare.after-cdi-write": None,
    "prepare.after-completed": None,
    "unprepare.after-mig-destroy": ("mig-dynamic",),
    "unprepare.after-daemon-stop": MPS_AREAS,
    "unprepare.after-compute-mode": MPS_AREAS,
    "unprepare.after-timeslice-reset": ("timeslice",),
    "unprepare.after-cdi-remove": None,
    "unprepare.after-erase": None,
}


class FakeSystemd(compute_domain_test.FakeSystemd):
    """test/imex/fake_systemd1 on a private bus: nvidia-imex.service and the MPS transient units."""

    def units(self):
        return json.loads(self.command("transient"))["units"]


BusNode = compute_domain_test.ImexNode  # the agent's system bus is the private one


# --- the scenarios ----------------------------------------------------------------------------
def full_gpus(run):
    d = run.devices
    return sorted(n for n in d if d[n]["attributes"]["type"] == {"string": "gpu"}
                  and not any(m.startswith(n + "-mig-") for m in d))


def gpu_claim(run, name):
    return run.node.allocate(name, [("gpu", full_gpus(run)[0])])


def static_mig_claim(run, name):
    return run.node.allocate(name, [("mig", sorted(n for n in run.devices if "-mig-" in n)[0])])


def dynamic_mig_claim(run, name):
    # The largest profile of gpu-0 starting at slice 0: every placement fits on a GPU with no MIG device.
    names = sorted(n for n in run.devices if n.startswith("gpu-0-mig-") and n.endswith("-0"))
    return run.node.allocate(name, [("mig", names[-1])])


def shared_claim(sharing):
    return lambda run, name: run.node.allocate(name, [("gpu", full_gpus(run)[0])], [([], gpu_config(sharing=sharing))])


def channel_claim(run, name):
    params = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainChannelConfig",
              "domainID": run.domain, "allocationMode": "Single"}
    return run.node.allocate(name, [("channel", "channel-0")], [([], params)], driver=CD)


def add_compute_domain(run):
    assert run.systemd.command("set nvidia-imex.service loaded active running") == "ok"
    cd = run.node.api.put_object({
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
        "metadata": {"name": "crash", "namespace": "default"},
        "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "crash-channel"},
                                            "allocationMode": "Single"}}})
    run.domain = cd["metadata"]["uid"]


def add_ready_domain(run):
    """Driver-managed IMEX: a ComputeDomain whose daemon on this node is Ready in its ComputeDomainClique."""
    gv = "resource.nvidia.com/v1beta1"
    cd = run.node.api.put_object({"apiVersion": gv, "kind": "ComputeDomain",
                                  "metadata": {"name": "crash-dm", "namespace": "default"},
                                  "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "crash-dm"}}}})
    run.domain = cd["metadata"]["uid"]
    clique = run.node.wait_log(r"mode=driverManaged clique=(\S+)").group(1)
    run.node.api.put_object(compute_domain_objects.clique_object(run.domain, clique, run.node.node))


def no_domain_label(test, run):
    labels = run.node.api.objects("v1", "nodes")[0]["metadata"].get("labels", {})
    test.assertNotIn("resource.nvidia.com/computeDomain", labels, "the node label of the domain was left")


def fabric_claim(run, name):
    return run.node.allocate(name, fabric_manager_test.BOARD_5678)  # partition 2's GPUs


def no_active_partition(test, run):
    test.assertEqual(fabric_manager_test.fm_state(run.node).get("active", []), [], "a FabricManager partition left active")


def no_mps_units(test, run):
    test.assertEqual(run.systemd.units(), {}, "an MPS unit was left")


def mps_daemons_quit(test, run):
    log = run.node.helper_log("nvidia-cuda-mps-control").splitlines()
    test.assertEqual(log.count("-d"), log.count("quit"), "an MPS control daemon was started and never quit")


def vfio_claim(run, name):
    return run.node.allocate(name, [("vm", "gpu-vfio-0")])


def gpu_back_on_nvidia(test, run):
    bdf = run.node.pci.gpu_address(0)
    test.assertEqual(run.node.pci.driver(bdf), "nvidia", f"{bdf} was left off nvidia")


@dataclass
class Scenario:
    profile: str
    claim: object                  # (run, name) -> kubelet Claim
    gates: str = ""
    driver: str = GPU
    bus: bool = False              # a private system bus with fake_systemd1 (MPS units, nvidia-imex.service)
    args: tuple = ()
    setup: object = None           # (run) -> None, once the node is up
    extra_clean: tuple = ()        # (test, run) -> None: checks beyond the common ones
    make_node: object = None       # (gates) -> SimulatedNode, for nodes a plain SimulatedNode cannot be


SCENARIOS = {
    "gpu": Scenario("dgx-a100", gpu_claim),
    "mig-static": Scenario("dgx-a100", static_mig_claim),
    "mig-dynamic": Scenario("hgx-h100", dynamic_mig_claim, gates="DynamicMIG=true"),
    "timeslice": Scenario("dgx-a100", shared_claim(TIME_SLICING), gates="TimeSlicingSettings=true"),
    "mps-process": Scenario("dgx-a100", shared_claim(MPS), gates="MPSSupport=true", args=("--mps-manager=process",),
                            extra_clean=(mps_daemons_quit,)),
    "mps-systemd": Scenario("dgx-a100", shared_claim(MPS), gates="MPSSupport=true", bus=True,
                            args=("--mps-manager=systemd",), extra_clean=(no_mps_units,)),
    "vfio": Scenario("passthrough", vfio_claim, gates="PassthroughSupport=true,DeviceMetadata=true", extra_clean=(gpu_back_on_nvidia,)),
    "imex": Scenario("gb200-nvl", channel_claim, gates="HostManagedIMEX=true", driver=CD, bus=True,
                     args=("--controller=false", "--imex-check", "warn"), setup=add_compute_domain),
    "imex-dm": Scenario("gb200-nvl", channel_claim, driver=CD, args=("--controller=false",), setup=add_ready_domain,
                        extra_clean=(no_domain_label,)),
    "fm": Scenario(fabric_manager_test.PROFILE, fabric_claim, gates="FabricManagerPartitioning=true",
                   make_node=lambda gates: fabric_manager_test.fabric_node(gates),
                   extra_clean=(no_active_partition,)),
}


# --- one scenario's node ----------------------------------------------------------------------
@dataclass
class Run:
    node: SimulatedNode
    systemd: object = None
    devices: dict = field(default_factory=dict)
    domain: str = ""
    baseline: dict = field(default_factory=dict)
    residue: int = 0  # points whose crash left files, instances or entries behind


def listing(path):
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


def mock_gpus(node):
    """Per GPU of the mock's state file: MIG mode (current, pending) and its GPU and compute instances.
    None: no file yet, or one saying what a missing file means (MIG off everywhere, no instance)."""
    path = os.path.join(node.mock_state, node.profile + ".state")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        state = yaml.safe_load(f)
    gpus = [(g["mig"], g["pending"], g["gis"], g["cis"]) for g in state["gpus"]]
    return None if all(g == (0, 0, [], []) for g in gpus) else gpus


def last_settings(node):
    """{uuid: (compute mode, time slice)} as nvidia-smi was last told."""
    modes, slices = {}, {}
    for line in node.helper_log("nvidia-smi").splitlines():
        if m := re.fullmatch(r"-i (\S+) -c (\S+)", line):
            modes[m.group(1)] = m.group(2)
        elif m := re.fullmatch(r"compute-policy -i (\S+) --set-timeslice (\d+)", line):
            slices[m.group(1)] = int(m.group(2))
    return modes, slices


def node_state(node):
    """What a claim could leave behind on the node, in a form to compare with the baseline."""
    return {
        "cdi": listing(node.dirs.cdi),  # temp files included
        # Hidden files are temp files left behind, but for the checkpoint's spare: the previous content's file,
        # kept for the next save to overwrite (FileCheckpointStore), whatever claims come and go.
        "plugin files": {d: [f for f in listing(os.path.join(node.dirs.plugins, d))
                             if f.startswith(".") and f != ".checkpoint.json.spare"] for d in (GPU, CD)},
        "mps dirs": listing(os.path.join(node.dirs.plugins, GPU, "mps")),
        "metadata dirs": listing(os.path.join(node.dirs.plugins, GPU, "dra-device-metadata")),
        "mig": mock_gpus(node),
    }


class CrashPoints(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.catalogue = read_catalogue()
        cls.started = time.monotonic()
        cls.figures = []

    @classmethod
    def tearDownClass(cls):
        for line in cls.figures:
            print(line)
        print(f"crash points: {len(cls.catalogue)} in {time.monotonic() - cls.started:.1f}s")

    def test_catalogue_is_sorted_and_every_scenario_known(self):
        points = [p for p, _ in self.catalogue]
        self.assertEqual(points, sorted(points), "crash_points.txt must be sorted")
        self.assertEqual(len(points), len(set(points)), "a point is listed twice")
        unknown = [f"{p} ({s})" for p, s in self.catalogue if s not in SCENARIOS]
        self.assertEqual(unknown, [], "points whose scenario this test cannot run: add a row to SCENARIOS")

    def test_every_literal_point_in_the_sources_is_listed(self):
        listed = {p for p, _ in self.catalogue}
        found, steps = set(), set()
        for top in ("agent", "cdi", "nvml", "k8s", "imex", "fm"):
            for root, _, files in os.walk(os.path.join(SOURCE_DIR, top)):
                for name in files:
                    if name.endswith((".cpp", ".hpp")):
                        with open(os.path.join(root, name)) as f:
                            text = f.read()
                        found |= set(re.findall(r'\bcrash_point\("([^"]+)"\)', text))
                        # crash_point(area, "<step>"): the area is the claim's kind, known at run time.
                        steps |= set(re.findall(r'\bcrash_point\(\s*area\s*,\s*"([^"]+)"\s*\)', text))
        self.assertEqual(sorted(found - listed), [], "points placed in the code but missing from crash_points.txt")
        self.assertTrue(steps, "no crash_point(area, \"…\") found: has the GPU claim handler moved?")
        self.assertEqual(sorted(steps - set(AREA_STEPS)), [], "a step placed in the code whose areas AREA_STEPS "
                         "(this file) does not give: add it with the kinds of claim that reach it")
        self.assertEqual(sorted(set(AREA_STEPS) - steps), [], "AREA_STEPS names a step no longer in the code")
        areas = claim_areas()
        missing = sorted(f"{a}.{step}" for step in steps for a in (AREA_STEPS[step] or areas)
                         if f"{a}.{step}" not in listed)
        self.assertEqual(missing, [], "crash_point(area, step) points missing from crash_points.txt")

    def run_scenario(self, name):
        points = [p for p, s in self.catalogue if s == name]
        self.assertTrue(points, f"no crash point of scenario {name} is listed")
        sc = SCENARIOS[name]
        kw = dict(profile=sc.profile, gates=sc.gates, args=list(sc.args))
        systemd = None
        if sc.bus:
            bus = PrivateDbus(POLICY)
            self.addCleanup(bus.close)
            systemd = FakeSystemd(bus.address)
            self.addCleanup(systemd.close)
            node = BusNode(bus, **kw)
        elif sc.make_node:
            node = sc.make_node(sc.gates)
        else:
            node = SimulatedNode(**kw)
        self.addCleanup(node.cleanup)
        run = Run(node, systemd)
        t0 = time.monotonic()
        node.start()  # once unarmed: the checkpoints exist, so no later start saves before the kubelet call
        run.devices = node.published(sc.driver)
        if sc.setup:
            sc.setup(run)
        run.baseline = node_state(node)
        self.assertEqual(node.stop(), 0)
        converged = 0
        for i, point in enumerate(points):
            with self.subTest(point=point):
                self.crash_and_converge(run, sc, point, f"{name}-{i}")
                converged += 1
            if node.proc is not None:  # a failed point may leave it running
                node.stop()
        self.figures.append(f"scenario {name}: {converged}/{len(points)} points converge, {run.residue} of them "
                            f"after a crash that left state behind ({time.monotonic() - t0:.1f}s)")

    def call(self, run, sc, verb, claim):
        plugin = run.node.plugins[sc.driver]
        if verb == "prepare":
            answer = plugin.prepare([claim], timeout=CALL_TIMEOUT)[claim.uid]
            return answer["error"]
        return plugin.unprepare([claim], timeout=CALL_TIMEOUT)[claim.uid]

    def crash_and_converge(self, run, sc, point, claim_name):
        node = run.node
        verb = "unprepare" if ".unprepare." in point else "prepare"
        claim = sc.claim(run, claim_name)
        node.extra_env["NVDRA_CRASH_POINT"] = point
        try:
            try:
                node.start(timeout=20)
            except AssertionError as e:
                self.fail(f"{point}: the agent did not start with the point armed (reached at start-up?): {e}")
            if verb == "unprepare":
                self.assertEqual(self.call(run, sc, "prepare", claim), "", node.agent_log())
            try:
                error = self.call(run, sc, verb, claim)
            except grpc.RpcError:
                pass  # the agent died under the call
            else:
                if verb == "prepare":  # leave the node clean for the next points
                    self.call(run, sc, "unprepare", claim)
                self.fail(f"{point} was never reached: {verb} answered {error!r}")
            try:
                code = node.proc.wait(timeout=30)
            except Exception:
                self.fail(f"{point}: the agent did not die after its {verb} call failed")
            self.assertEqual(code, -signal.SIGKILL, f"{point}: exit status {code}; log:\n{node.agent_log()}")
            node._close_run()
            # What the crash left for the restart to finish or undo (a figure: some points leave nothing new).
            if node_state(node) != run.baseline or node.checkpoint(sc.driver):
                run.residue += 1
        finally:
            del node.extra_env["NVDRA_CRASH_POINT"]

        node.start(timeout=20)
        self.assertEqual(self.call(run, sc, verb, claim), "", f"{point}: repeated {verb}; log:\n{node.agent_log()}")
        self.assertEqual(self.call(run, sc, "unprepare", claim), "", f"{point}: unprepare; log:\n{node.agent_log()}")
        self.assert_clean(run, sc, point)

    def assert_clean(self, run, sc, point):
        node = run.node
        for driver in (GPU, CD):
            self.assertEqual(node.checkpoint(driver), {}, f"{point}: {driver} checkpoint entry left")
        self.assertEqual(node_state(node), run.baseline, f"{point}: the node differs from before the claim")
        modes, slices = last_settings(node)
        self.assertEqual({u: m for u, m in modes.items() if m != "DEFAULT"}, {}, f"{point}: compute mode left set")
        self.assertEqual({u: s for u, s in slices.items() if s != 0}, {}, f"{point}: time slice left set")
        for check in sc.extra_clean:
            check(self, run)


def scenario_test(name):
    return lambda self: self.run_scenario(name)


for _name in SCENARIOS:
    setattr(CrashPoints, "test_scenario_" + _name.replace("-", "_"), scenario_test(_name))

if __name__ == "__main__":
    unittest.main()
