"""Corrupted or foreign state on the node, driven from outside: the gpu.nvidia.com checkpoint with a
bad checksum, cut short, of an unknown (newer) version, of another boot, or unreadable; CDI specs
that are not the agent's or are malformed. Each has the outcome the README documents: the agent
starts and serves (never a crash loop), a bad file is moved aside with a timestamp, the claims still
prepared are rebuilt from their CDI specs and the API, and a log line and a Warning Event
(CheckpointReplaced, OrphanCDISpecRemoved or CDISpecRewritten, regarding the Node) say what happened;
a prepared claim's spec damaged on disk is written again (at start-up and at its next prepare)."""
import json
import os
import re
import unittest

from gpu_node import GPU, SimulatedNode, gpu_config

GATES = "TimeSlicingSettings=true,MPSSupport=true"
DEADLINE = 20.0


def go_checksum(data):
    """Upstream's checksum.New: FNV-1a 32 over go-spew's "([]uint8)[b0 b1 …]" of the bytes."""
    h = 2166136261
    for c in b"([]uint8)[" + b" ".join(str(b).encode() for b in data) + b"]":
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h


def go_json(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


class CorruptState(unittest.TestCase):
    def setUp(self):
        self.node = SimulatedNode(profile="dgx-a100", gates=GATES)
        self.addCleanup(self.node.cleanup)
        self.node.start()
        devices = self.node.published()
        gpus = sorted(n for n in devices if devices[n]["attributes"]["type"] == {"string": "gpu"}
                      and not any(m.startswith(n + "-mig-") for m in devices))
        self.claims = [
            self.node.allocate("plain", [("gpu", gpus[0])]),
            self.node.allocate("sliced", [("gpu", gpus[1])], [([], gpu_config(
                sharing={"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}}))]),
            self.node.allocate("mps", [("gpu", gpus[2])], [([], gpu_config(
                sharing={"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 25}}))]),
        ]
        self.answer = self.node.gpu().prepare(self.claims)
        self.assertEqual({a["error"] for a in self.answer.values()}, {""})
        self.checkpoint_before = self.node.checkpoint()
        self.assertEqual(self.node.stop(), 0)
        self.dir = os.path.join(self.node.dirs.plugins, GPU)
        self.path = os.path.join(self.dir, "checkpoint.json")
        with open(self.path, "rb") as f:
            self.good = f.read()

    # --- helpers ---------------------------------------------------------------------------------
    def write(self, data):
        with open(self.path, "wb") as f:
            f.write(data)

    def aside(self, why):
        """The one file moved (or copied) aside for `why`; asserts its name carries a UTC timestamp."""
        found = [f for f in os.listdir(self.dir) if f.startswith(f"checkpoint.json.{why}-")]
        self.assertEqual(len(found), 1, os.listdir(self.dir))
        self.assertRegex(found[0], rf"^checkpoint\.json\.{why}-\d{{8}}T\d{{6}}Z$")
        return os.path.join(self.dir, found[0])

    def replaced_event(self, needle):
        """The CheckpointReplaced Warning regarding the Node, once its note contains `needle`."""
        return self.node_event("CheckpointReplaced", "LoadCheckpoint", needle)

    def node_event(self, reason, action, needle):
        """The one Warning of `reason` regarding the Node whose note contains `needle`, once it is there."""
        def wanted(items):
            return [e for e in items if e.get("reason") == reason and needle in e.get("note", "")]
        items = self.node.api.wait_for_objects("events.k8s.io/v1", "events", lambda items: wanted(items), DEADLINE)
        [event] = wanted(items)
        self.assertEqual((event["type"], event["action"], event["regarding"]["kind"], event["regarding"]["name"]),
                         ("Warning", action, "Node", self.node.node))
        return event

    def wait_occurrences(self, reason, action, n):
        """Waits until Warnings of `reason` regarding the Node count `n` occurrences: isomorphic Events (the
        note is not part of client-go's key) become one Event with a series."""
        def occurrences(items):
            return sum((e.get("series") or {}).get("count", 1) for e in items if e.get("reason") == reason)
        items = self.node.api.wait_for_objects("events.k8s.io/v1", "events", lambda items: occurrences(items) >= n,
                                               DEADLINE)
        self.assertEqual(occurrences(items), n)
        events = [e for e in items if e.get("reason") == reason]
        for e in events:
            self.assertEqual((e["type"], e["action"], e["regarding"]["kind"], e["regarding"]["name"]),
                             ("Warning", action, "Node", self.node.node))
        return events

    def spec_path(self, claim):
        return os.path.join(self.node.dirs.cdi, f"k8s.gpu.nvidia.com-claim_{claim.uid}.yaml")

    def read_spec(self, claim):
        with open(self.spec_path(claim), "rb") as f:
            return f.read()

    def assert_rebuilt_and_unprepares_cleanly(self):
        """Every claim is back as prepared: the same answer, then an unprepare that undoes it all."""
        rebuilt = self.node.checkpoint()
        self.assertEqual(sorted(rebuilt), sorted(c.uid for c in self.claims))
        for uid, entry in rebuilt.items():
            self.assertEqual(entry["checkpointState"], "PrepareCompleted")
            self.assertEqual(entry["preparedDevices"], self.checkpoint_before[uid]["preparedDevices"], uid)
        self.assertEqual(self.node.gpu().prepare(self.claims), self.answer)
        self.assertEqual(set(self.node.gpu().unprepare(self.claims).values()), {""})
        self.assertEqual(self.node.cdi_files(), [])
        self.assertEqual(self.node.checkpoint(), {})
        sliced = self.checkpoint_before[self.claims[1].uid]["preparedDevices"][0]["devices"][0]["gpu"]["info"]["uuid"]
        slices = re.findall(rf"compute-policy -i {sliced} --set-timeslice (\d+)", self.node.helper_log("nvidia-smi"))
        self.assertEqual(slices[-1], "0", "the rebuilt time-sliced claim's unprepare reset the time slice")
        mps = self.node.helper_log("nvidia-cuda-mps-control").splitlines()
        self.assertEqual(mps.count("-d"), 1)
        self.assertEqual(mps.count("quit"), 1, "the rebuilt MPS claim's unprepare stopped its daemon")

    def bad_file_case(self, data, why, problem):
        if data is not None:
            self.write(data)
        self.node.start()  # serves: READY=1
        moved = self.aside(why)
        if os.path.isfile(moved):
            with open(moved, "rb") as f:
                self.assertEqual(f.read(), data, "the bad bytes are kept as they were")
        log = self.node.agent_log()
        self.assertRegex(log, re.escape(problem) + r".*; moved aside to " + re.escape(moved))
        for c in self.claims:
            self.assertIn(f"claim {c.namespace}/{c.name} ({c.uid}) rebuilt from its CDI spec and the API", log)
        event = self.replaced_event(moved)
        self.assertIn(problem, event["note"])
        self.assert_rebuilt_and_unprepares_cleanly()
        # The next start finds the rebuilt (now empty) checkpoint and moves nothing more aside.
        self.assertEqual(self.node.stop(), 0)
        self.node.start()
        self.aside(why)

    # --- the checkpoint --------------------------------------------------------------------------
    def test_bad_checksum(self):
        doc = json.loads(self.good)
        doc["checksum"] = (doc["checksum"] + 1) & 0xFFFFFFFF
        self.bad_file_case(go_json(doc), "corrupt", "checksum mismatch")

    def test_truncated(self):
        # The compute-domain driver's checkpoint too: moved aside, that driver starts empty.
        cd_path = os.path.join(self.node.dirs.plugins, "compute-domain.nvidia.com", "checkpoint.json")
        with open(cd_path, "r+b") as f:
            f.truncate(7)
        self.bad_file_case(self.good[: len(self.good) // 2], "corrupt", "not valid JSON")
        cd_aside = [f for f in os.listdir(os.path.dirname(cd_path)) if f.startswith("checkpoint.json.corrupt-")]
        self.assertEqual(len(cd_aside), 1)
        self.replaced_event(os.path.join(os.path.dirname(cd_path), cd_aside[0]))

    def test_empty_file(self):
        self.bad_file_case(b"", "corrupt", "not valid JSON")

    def test_unknown_version(self):
        doc = json.loads(self.good)
        doc["v3"] = {"preparedClaims": {}}  # the top checksum covers v1 only: still verifies
        self.bad_file_case(go_json(doc), "unknown-version", 'is of an unknown version: top-level key "v3"')

    def test_unreadable(self):
        os.remove(self.path)
        os.mkdir(self.path)  # read(2) fails with EISDIR, whoever runs the test
        self.bad_file_case(None, "unreadable", "cannot read checkpoint")
        self.assertTrue(os.path.isdir(self.aside("unreadable")))

    def test_no_checkpoint_at_all_with_claim_specs_left(self):
        # What a kill between moving a bad file aside and saving the new one leaves.
        os.remove(self.path)
        self.node.start()
        for c in self.claims:
            self.assertIn(f"claim {c.namespace}/{c.name} ({c.uid}) rebuilt from its CDI spec and the API",
                          self.node.agent_log())
        self.assert_rebuilt_and_unprepares_cleanly()

    def test_another_boot_forgets_claims_as_upstream_and_keeps_a_copy(self):
        doc = json.loads(self.good)
        doc["v2"]["nodeBootID"] = "00000000-0000-4000-8000-000000000000"
        doc["v2"]["checksum"] = 0
        doc["v2"]["checksum"] = go_checksum(go_json(doc["v2"]))
        data = go_json(doc)
        self.write(data)
        self.node.start()
        copy = self.aside("other-boot")
        with open(copy, "rb") as f:
            self.assertEqual(f.read(), data)
        self.assertEqual(self.node.checkpoint(), {}, "a reboot forgets every claim (upstream)")
        self.assertEqual(self.node.cdi_files(), [], "their specs are of the old boot: removed")
        event = self.replaced_event("of another boot")
        self.assertIn("its 3 prepared claim(s) are forgotten", event["note"])
        self.assertIn(copy, event["note"])
        # An ordinary reboot with no claim prepared is no news: no copy, no Event.
        self.assertEqual(self.node.stop(), 0)
        with open(self.path, "rb") as f:
            doc = json.loads(f.read())
        doc["v2"]["nodeBootID"] = "11111111-0000-4000-8000-000000000000"
        doc["v2"]["checksum"] = 0
        doc["v2"]["checksum"] = go_checksum(go_json(doc["v2"]))
        self.write(go_json(doc))
        self.node.start()
        self.assertEqual(len([f for f in os.listdir(self.dir) if ".other-boot-" in f]), 1)

    # --- CDI specs -------------------------------------------------------------------------------
    def test_specs_not_ours_are_left_alone_and_malformed_orphans_removed(self):
        cdi = self.node.dirs.cdi
        foreign = {"nvidia.yaml": "not: [a, spec",  # another tool's, malformed too
                   "k8s.compute-domain.nvidia.com-claim_abc.yaml": "{}",  # the other driver's
                   "k8s.gpu.nvidia.com-claimless.yaml": "garbage"}        # our vendor, not a claim spec
        for name, text in foreign.items():
            with open(os.path.join(cdi, name), "w") as f:
                f.write(text)
        orphan = "k8s.gpu.nvidia.com-claim_99999999-0000-4000-8000-000000000000.yaml"
        with open(os.path.join(cdi, orphan), "w") as f:
            f.write("{ this is not JSON")
        ours = sorted(f"k8s.gpu.nvidia.com-claim_{c.uid}.yaml" for c in self.claims)
        self.node.start()
        self.assertEqual(self.node.cdi_files(), sorted(list(foreign) + ours))
        self.assertIn(f"cdi spec={orphan} owned by no claim: removed", self.node.agent_log())
        event = self.node_event("OrphanCDISpecRemoved", "RecoverCDISpecs", orphan)
        self.assertIn("owned by no prepared claim", event["note"])
        notes = [e.get("note", "") for e in self.node.api.objects("events.k8s.io/v1", "events")]
        self.assertEqual([n for n in notes if any(name in n for name in foreign)], [], "files not ours are no news")
        self.assertEqual(self.node.gpu().prepare(self.claims), self.answer)
        self.assertEqual(set(self.node.gpu().unprepare(self.claims).values()), {""})
        self.assertEqual(self.node.cdi_files(), sorted(foreign))

    def test_a_prepared_claims_damaged_spec_is_rewritten_at_start_and_at_its_next_prepare(self):
        plain, sliced, mps = self.claims
        good = {c.uid: self.read_spec(c) for c in self.claims}
        # Damaged while the agent was down: one cut short, one gone; the start-up writes both again.
        with open(self.spec_path(plain), "r+b") as f:
            f.truncate(len(good[plain.uid]) // 2)
        os.remove(self.spec_path(sliced))
        self.node.start()
        notes = []
        for claim, what in ((plain, "not valid JSON"), (sliced, "missing")):
            notes.append(f"CDI spec k8s.gpu.nvidia.com-claim_{claim.uid}.yaml of prepared claim {claim.namespace}/"
                         f"{claim.name} ({claim.uid}) was {what}: rewritten from the checkpoint")
            self.assertEqual(self.read_spec(claim), good[claim.uid], "the same spec as prepare wrote")
            self.assertIn(notes[-1], self.node.agent_log())
        [event] = self.wait_occurrences("CDISpecRewritten", "RecoverCDISpecs", 2)
        self.assertTrue(any(n in event["note"] for n in notes), event["note"])
        self.assertEqual(self.node.checkpoint(), self.checkpoint_before, "nothing else changed")
        # Damaged while it runs (the MPS claim: its daemon's mounts are in the spec): the next prepare,
        # kubelet's after a restart, answers as before and writes the spec again.
        with open(self.spec_path(mps), "wb") as f:
            f.write(b"\x00garbage")
        self.assertEqual(self.node.gpu().prepare(self.claims), self.answer)
        self.assertEqual(self.read_spec(mps), good[mps.uid])
        self.assertIn(f"CDI spec k8s.gpu.nvidia.com-claim_{mps.uid}.yaml of prepared claim {mps.namespace}/{mps.name} "
                      f"({mps.uid}) was not valid JSON: rewritten from the checkpoint", self.node.agent_log())
        self.wait_occurrences("CDISpecRewritten", "RecoverCDISpecs", 3)
        self.assertEqual(self.read_spec(plain), good[plain.uid], "an intact spec is left as it is")
        self.assertEqual(set(self.node.gpu().unprepare(self.claims).values()), {""})
        self.assertEqual(self.node.cdi_files(), [])

    def test_bad_checkpoint_and_a_spec_of_a_claim_the_api_no_longer_has(self):
        self.node.delete_claim(self.claims[0])
        self.write(self.good[:10])
        self.node.start()
        log = self.node.agent_log()
        self.assertIn(f"checkpoint rebuild: claim {self.claims[0].uid} of a CDI spec is not in the API: not rebuilt",
                      log)
        self.assertEqual(sorted(self.node.checkpoint()), sorted(c.uid for c in self.claims[1:]))
        self.assertNotIn(f"k8s.gpu.nvidia.com-claim_{self.claims[0].uid}.yaml", self.node.cdi_files())
        self.assertEqual(set(self.node.gpu().unprepare(self.claims).values()), {""})
        self.assertEqual(self.node.cdi_files(), [])



class CorruptStateDynamicMig(unittest.TestCase):
    def test_a_dynamic_mig_claim_is_rebuilt_with_its_mig_device_not_destroyed(self):
        node = SimulatedNode(profile="hgx-h100", gates="DynamicMIG=true")
        self.addCleanup(node.cleanup)
        node.start()
        name = sorted(n for n in node.published() if n.startswith("gpu-0-mig-") and n.endswith("-0"))[-1]
        claim = node.allocate("mig", [("mig", name)])
        answer = node.gpu().prepare([claim])
        self.assertEqual(answer[claim.uid]["error"], "")
        before = node.checkpoint()
        self.assertEqual(node.stop(), 0)
        path = os.path.join(node.dirs.plugins, GPU, "checkpoint.json")
        with open(path, "r+b") as f:
            f.truncate(20)
        node.start()
        self.assertNotIn("owned by no claim: destroyed", node.agent_log(), "the running claim's MIG device survives")
        self.assertEqual(node.checkpoint()[claim.uid]["preparedDevices"], before[claim.uid]["preparedDevices"],
                         "the same MIG UUID, GI and CI ids as prepare recorded")
        self.assertEqual(node.gpu().prepare([claim]), answer)
        self.assertEqual(node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assertEqual(node.checkpoint(), {})
        # hgx-h100 runs the compute-domain driver in driver-managed mode: its node-wide base spec stays.
        self.assertEqual(node.cdi_files(), ["k8s.compute-domain.nvidia.com-device_base.yaml"])


if __name__ == "__main__":
    unittest.main()
