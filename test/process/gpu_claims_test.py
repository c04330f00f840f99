"""gpu.nvidia.com claims end to end, driven from outside: the kubelet double over the agent's real
sockets, claims allocated in the API-server double, the mock NVML on a fake driver and host root.
Each scenario checks the answer kubelet gets, the CDI files and the checkpoint on disk."""
import os
import re
import signal
import stat
import time
import unittest

from gpu_node import SimulatedNode, gpu_config
from kubelet_double import Claim

GATES = "TimeSlicingSettings=true,MPSSupport=true"


def claim_file(claim):
    return f"k8s.gpu.nvidia.com-claim_{claim.uid}.yaml"


class GpuClaims(unittest.TestCase):
    def setUp(self):
        self.node = SimulatedNode(profile="dgx-a100", gates=GATES)
        self.addCleanup(self.node.cleanup)
        self.node.start()
        self.devices = self.node.published()
        self.full_gpus = sorted(n for n in self.devices if self.devices[n]["attributes"]["type"] == {"string": "gpu"}
                                and not any(m.startswith(n + "-mig-") for m in self.devices))
        self.migs = sorted(n for n in self.devices if "-mig-" in n)

    def prepare_ok(self, claims):
        answer = self.node.gpu().prepare(claims)
        for c in claims:
            self.assertEqual(answer[c.uid]["error"], "", c.name)
        return answer

    def assert_clean(self):
        """No spec file is left (there is no node-wide one), the checkpoint is empty."""
        self.assertEqual(self.node.cdi_files(), [])
        self.assertEqual(self.node.checkpoint(), {})

    def test_one_claim_one_gpu(self):
        claim = self.node.allocate("pod-a", [("gpu", self.full_gpus[0])])
        devices = self.prepare_ok([claim])[claim.uid]["devices"]
        self.assertEqual(len(devices), 1)
        d = devices[0]
        self.assertEqual((d["request_names"], d["pool_name"], d["device_name"]),
                         (["gpu"], self.node.node, self.full_gpus[0]))
        self.assertEqual(d["cdi_device_ids"], [f"k8s.gpu.nvidia.com/claim={claim.uid}-{self.full_gpus[0]}"])
        spec = self.node.cdi_spec(claim_file(claim))
        self.assertEqual(spec["kind"], "k8s.gpu.nvidia.com/claim")
        self.assertEqual([x["name"] for x in spec["devices"]], [f"{claim.uid}-{self.full_gpus[0]}"])
        # Upstream's spec-level edits: the driver's, NVIDIA_VISIBLE_DEVICES=void, the hooks with the
        # nvidia-cdi-hook found in the driver root (the simulated node has one there).
        common = spec["containerEdits"]
        self.assertIn("NVIDIA_VISIBLE_DEVICES=void", common["env"])
        hook = os.path.join(self.node.driver_root, "usr/bin/nvidia-cdi-hook")
        self.assertEqual([(h["path"], h["args"][1], h["env"]) for h in common["hooks"]],
                         [(hook, a, ["NVIDIA_CTK_DEBUG=false"]) for a in
                          ("create-symlinks", "enable-cuda-compat", "update-ldcache", "disable-device-node-modification")])
        node = spec["devices"][0]["containerEdits"]["deviceNodes"][0]
        minor = int(self.full_gpus[0].split("-")[1])
        st = os.stat(os.path.join(self.node.host_root, f"dev/nvidia{minor}"))
        if stat.S_ISCHR(st.st_mode):  # mknod is permitted here
            want = {"path": f"/dev/nvidia{minor}", "major": 195, "minor": minor,
                    "fileMode": stat.S_IMODE(st.st_mode), "permissions": "rwm"}
            self.assertEqual(node, {k: v for k, v in want.items() if v != 0}, "stat'ed as nvcdi does, 0 left out")
        self.assertEqual(self.node.checkpoint()[claim.uid]["checkpointState"], "PrepareCompleted")
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assert_clean()

    def test_node_wide_spec_of_an_older_nvdra_is_removed_at_start(self):
        self.node.stop()
        legacy = os.path.join(self.node.dirs.cdi, "k8s.gpu.nvidia.com-device_base.json")
        with open(legacy, "w") as f:
            f.write('{"cdiVersion":"0.3.0","kind":"k8s.gpu.nvidia.com/device","devices":[{"name":"driver"}]}\n')
        self.node.start()
        self.assertFalse(os.path.exists(legacy))
        self.assertIn("k8s.gpu.nvidia.com-device_base.json of an older nvdra", self.node.agent_log())

    def test_one_claim_shared_by_two_containers_is_prepared_once(self):
        claim = self.node.allocate("shared", [("gpu", self.full_gpus[0])])
        first = self.prepare_ok([claim])
        path = os.path.join(self.node.dirs.cdi, claim_file(claim))
        before = os.stat(path).st_mtime_ns
        lookups = len([r for r in self.node.api.request_log() if "/resourceclaims/" in r["path"]])
        # The second container's start (or kubelet's retry) asks again: same answer, no work redone.
        self.assertEqual(self.node.gpu().prepare([claim]), first)
        self.assertEqual(os.stat(path).st_mtime_ns, before)
        self.assertEqual(len([r for r in self.node.api.request_log() if "/resourceclaims/" in r["path"]]), lookups)
        self.node.gpu().unprepare([claim])
        self.assert_clean()

    def test_two_claims_in_one_call_and_two_pods_with_two_gpus_each(self):
        a = self.node.allocate("pod-a", [("gpus", self.full_gpus[0]), ("gpus", self.full_gpus[1])])
        b = self.node.allocate("pod-b", [("gpus", self.full_gpus[2]), ("gpus", self.full_gpus[3])])
        answer = self.prepare_ok([a, b])
        self.assertEqual(sorted(d["device_name"] for d in answer[a.uid]["devices"]), self.full_gpus[0:2])
        self.assertEqual(sorted(d["device_name"] for d in answer[b.uid]["devices"]), self.full_gpus[2:4])
        self.assertEqual(sorted(self.node.checkpoint()), sorted([a.uid, b.uid]))
        # Pod b goes away first, in its own call; pod a's state is untouched.
        self.assertEqual(self.node.gpu().unprepare([b]), {b.uid: ""})
        self.assertIn(claim_file(a), self.node.cdi_files())
        self.assertNotIn(claim_file(b), self.node.cdi_files())
        self.assertEqual(self.node.gpu().unprepare([a]), {a.uid: ""})
        self.assert_clean()

    def test_static_mig_device(self):
        mig = self.migs[0]
        claim = self.node.allocate("mig", [("mig", mig)])
        d = self.prepare_ok([claim])[claim.uid]["devices"][0]
        self.assertEqual(d["device_name"], mig)
        spec = self.node.cdi_spec(claim_file(claim))
        nodes = [n["path"] for n in spec["devices"][0]["containerEdits"]["deviceNodes"]]
        self.assertTrue(any("/dev/nvidia-caps/nvidia-cap" in p for p in nodes), nodes)
        self.node.gpu().unprepare([claim])
        self.assert_clean()

    def test_time_slicing_and_mps(self):
        ts = self.node.allocate("ts", [("gpu", self.full_gpus[0])], [([], gpu_config(
            sharing={"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Short"}}))])
        mps = self.node.allocate("mps", [("gpu", self.full_gpus[1])], [([], gpu_config(
            sharing={"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 25}}))])
        answer = self.prepare_ok([ts, mps])
        uuid_ts = self.devices[self.full_gpus[0]]["attributes"]["uuid"]["string"]
        self.assertIn(f"compute-policy -i {uuid_ts} --set-timeslice 1", self.node.helper_log("nvidia-smi"))
        self.assertIn("set_default_active_thread_percentage 25", self.node.helper_log("nvidia-cuda-mps-control"))
        mps_spec = self.node.cdi_spec(claim_file(mps))
        env = mps_spec["devices"][0]["containerEdits"].get("env", []) + mps_spec.get("containerEdits", {}).get("env", [])
        self.assertTrue(any(e.startswith("CUDA_MPS_PIPE_DIRECTORY=") for e in env), env)
        self.assertEqual(len(answer), 2)
        self.assertEqual(self.node.gpu().unprepare([ts, mps]), {ts.uid: "", mps.uid: ""})
        self.assertIn(f"compute-policy -i {uuid_ts} --set-timeslice 0", self.node.helper_log("nvidia-smi"))
        self.assert_clean()

    def test_unknown_config_field_fails_that_claim_only(self):
        good = self.node.allocate("good", [("gpu", self.full_gpus[0])])
        bad = self.node.allocate("bad", [("gpu", self.full_gpus[1])],
                                 [([], gpu_config(sharing={"strategy": "TimeSlicing", "timeSlicingConfg": {}}))])
        answer = self.node.gpu().prepare([good, bad])
        self.assertEqual(answer[good.uid]["error"], "")
        self.assertIn("default/bad", answer[bad.uid]["error"])
        self.assertIn('unknown field "sharing.timeSlicingConfg"; allowed fields of sharing: strategy, '
                      "timeSlicingConfig, mpsConfig", answer[bad.uid]["error"])
        self.assertEqual(answer[bad.uid]["devices"], [])
        self.assertNotIn(claim_file(bad), self.node.cdi_files())
        self.assertEqual(list(self.node.checkpoint()), [good.uid])
        self.node.gpu().unprepare([good, bad])
        self.assert_clean()

    def test_missing_claim_and_uid_mismatch(self):
        missing = Claim("default", "never-allocated", "00000000-0000-4000-8000-000000000000")
        real = self.node.allocate("real", [("gpu", self.full_gpus[0])])
        wrong_uid = Claim("default", "real", "11111111-0000-4000-8000-000000000000")
        answer = self.node.gpu().prepare([missing, wrong_uid])
        self.assertIn("never-allocated", answer[missing.uid]["error"])
        self.assertIn("not found", answer[missing.uid]["error"].lower())
        self.assertIn("uid", answer[wrong_uid.uid]["error"])
        self.assertIn(real.uid, answer[wrong_uid.uid]["error"])
        # Unprepare of claims this node never prepared succeeds.
        self.assertEqual(self.node.gpu().unprepare([missing, wrong_uid]), {missing.uid: "", wrong_uid.uid: ""})
        self.assert_clean()

    def test_restart_keeps_prepared_claims_and_publishes_nothing_new(self):
        claim = self.node.allocate("survivor", [("gpu", self.full_gpus[0])])
        first = self.prepare_ok([claim])
        self.assertEqual(self.node.stop(), 0)
        writes = len(self.node.api.writes())
        self.node.start()
        self.assertEqual(self.node.gpu().prepare([claim]), first)
        self.assertEqual(len(self.node.api.writes()), writes, "a restart with the same devices wrote to the API")
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assert_clean()

    def test_claims_deleted_while_the_agent_was_down_are_unprepared_once_it_serves(self):
        gone = self.node.allocate("gone", [("gpu", self.full_gpus[0])])
        kept = self.node.allocate("kept", [("gpu", self.full_gpus[1])])
        self.prepare_ok([gone, kept])
        self.assertEqual(self.node.stop(), 0)
        self.node.delete_claim(gone)
        self.node.start()
        # The start reads no claim (with 1,000 claims that was 1,000 reads before kubelet was served, issue #33):
        # the agent is ready first, then its sweep asks about each claim and unprepares the one that is gone.
        swept = self.node.wait_log(rf"claim uid={gone.uid} gone from the API: unprepared")
        ready = re.search(r" agent: ready ", self.node.agent_log())
        self.assertIsNotNone(ready)
        self.assertLess(ready.start(), swept.start())
        self.node.wait_log(r"driver=gpu\.nvidia\.com asked the API about 2 prepared claim\(s\) in \d+ ms: 1 gone")
        self.assertEqual(list(self.node.checkpoint()), [kept.uid])
        self.assertEqual(self.node.cdi_files(), [claim_file(kept)])
        self.assertEqual(self.node.gpu().unprepare([kept]), {kept.uid: ""})
        self.assert_clean()

    def test_kill_9_during_a_burst_then_restart_is_consistent(self):
        claims = [self.node.allocate(f"burst-{i}", [("gpu", self.full_gpus[i % len(self.full_gpus)])])
                  for i in range(6)] + [self.node.allocate(f"burst-mig-{i}", [("mig", m)])
                                        for i, m in enumerate(self.migs)]
        futures = [self.node.gpu().prepare_future([c]) for c in claims]
        deadline = time.monotonic() + 20
        completed = []
        while not completed:  # kill once the first claim is durable, with others still in flight
            self.assertLess(time.monotonic(), deadline, "no claim completed")
            try:
                completed = [u for u, e in self.node.checkpoint().items() if e["checkpointState"] == "PrepareCompleted"]
            except ValueError:  # never a torn file: the store replaces it atomically
                self.fail("the checkpoint file was torn")
        self.assertEqual(self.node.kill(), -signal.SIGKILL)
        for f in futures:
            f.cancel()
        at_kill = self.node.checkpoint()

        self.node.start()
        checkpoint = self.node.checkpoint()
        print(f"kill -9 with {len(at_kill)} of {len(claims)} claims checkpointed "
              f"({sum(e['checkpointState'] == 'PrepareCompleted' for e in at_kill.values())} completed); "
              f"{len(checkpoint)} kept after restart")
        specs = {f for f in self.node.cdi_files() if f.startswith("k8s.gpu.nvidia.com-claim_")}
        for uid, entry in at_kill.items():
            if entry["checkpointState"] == "PrepareCompleted":
                self.assertIn(uid, checkpoint, "a completed claim was lost")
        for uid, entry in checkpoint.items():
            self.assertEqual(entry["checkpointState"], "PrepareCompleted", uid)
            self.assertIn(f"k8s.gpu.nvidia.com-claim_{uid}.yaml", specs, "a checkpointed claim lost its CDI spec")
        self.assertEqual(specs, {f"k8s.gpu.nvidia.com-claim_{uid}.yaml" for uid in checkpoint}, "orphan CDI spec")
        # kubelet retries the whole burst: every claim ends prepared, each exactly once.
        answer = self.prepare_ok(claims)
        self.assertEqual(sorted(self.node.checkpoint()), sorted(c.uid for c in claims))
        self.assertEqual(len(answer), len(claims))
        errors = self.node.gpu().unprepare(claims)
        self.assertEqual(set(errors.values()), {""})
        self.assert_clean()


if __name__ == "__main__":
    unittest.main()
