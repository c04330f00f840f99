"""Recovery proves before it destroys (issue #30): at start-up a DynamicMIG device is destroyed only when no
checkpoint entry, readable or not, can own it. A prepared claim whose entry's preparedDevices cannot be read
(another writer's format) is kept aside with its MIG device, and so is every MIG device no readable entry
owns; the entry is reported in the log, a Warning Event on the claim, the status's errors and a metric.
Moving the checkpoint aside (the README's operator action) settles it: the claims are rebuilt from their CDI
specs and the API, and only then is an orphan destroyed."""
import json
import os
import subprocess
import sys
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "systemd"))
from agent_status_test import NVDRACTL, policy_for_this_user  # noqa: E402
from corrupt_state_test import go_checksum, go_json  # noqa: E402
from gpu_node import GPU, MOCK, SimulatedNode  # noqa: E402
from metrics_test import LISTENING, samples  # noqa: E402
from nvdra_testlib import agent_binary  # noqa: E402
from private_dbus import PrivateDbus  # noqa: E402

DEADLINE = 20.0


class RecoveryProvesBeforeItDestroys(unittest.TestCase):
    def setUp(self):
        self.bus = PrivateDbus(policy_for_this_user())  # nvdractl status reads the agent through it
        self.addCleanup(self.bus.close)
        self.node = SimulatedNode(profile="hgx-h100", gates="DynamicMIG=true", drivers=[GPU],
                                  args=["--http-endpoint=127.0.0.1:0"],
                                  env={"DBUS_SYSTEM_BUS_ADDRESS": self.bus.address})
        self.addCleanup(self.node.cleanup)
        self.node.start()
        devices = self.node.published()

        def first(prefix, skip=()):
            names = sorted((n for n in devices if n.startswith(prefix) and n not in skip),
                           key=lambda n: int(n.rsplit("-", 1)[1]))
            self.assertTrue(names, f"no device {prefix}*")
            return names[0]

        self.unreadable_dev = first("gpu-0-mig-1g10gb-19-")
        self.readable_dev = first("gpu-1-mig-1g10gb-19-")
        self.orphan_dev = first("gpu-1-mig-1g10gb-19-", skip=(self.readable_dev,))
        self.unreadable = self.node.allocate("unreadable", [("mig", self.unreadable_dev)])
        self.readable = self.node.allocate("readable", [("mig", self.readable_dev)])
        self.orphan = self.node.allocate("orphan", [("mig", self.orphan_dev)])
        answer = self.node.gpu().prepare([self.unreadable, self.readable, self.orphan])
        self.assertEqual({a["error"] for a in answer.values()}, {""}, answer)
        self.all_devices = sorted([self.unreadable_dev, self.readable_dev, self.orphan_dev])
        self.assertEqual(self.mig_devices_on_node(), self.all_devices)
        self.assertEqual(self.node.stop(), 0)
        self.path = os.path.join(self.node.dirs.plugins, GPU, "checkpoint.json")

    def mig_devices_on_node(self):
        out = subprocess.run([agent_binary(), "devices", "--nvml-library", MOCK], env=self.node.env(),
                             capture_output=True, text=True, check=True).stdout
        return sorted(line.split()[0] for line in out.splitlines() if line.startswith("  gpu-"))

    def rewrite_checkpoint(self, change):
        """Applies change(v2 preparedClaims) and writes the file back with a valid v2 checksum."""
        with open(self.path, "rb") as f:
            doc = json.loads(f.read())
        change(doc["v2"]["preparedClaims"])
        doc["v2"]["checksum"] = 0
        doc["v2"]["checksum"] = go_checksum(go_json(doc["v2"]))
        with open(self.path, "wb") as f:
            f.write(go_json(doc))

    def metrics(self):
        m = LISTENING.search(self.node.agent_log())
        self.assertIsNotNone(m, self.node.agent_log())
        with urllib.request.urlopen(f"http://127.0.0.1:{m.group(2)}/metrics", timeout=10) as r:
            return samples(r.read().decode())

    def test_an_unreadable_entry_keeps_every_mig_device_and_is_reported(self):
        def damage(claims):
            claims[self.unreadable.uid]["preparedDevices"] = [{"devices": "written by another plugin"}]
            del claims[self.orphan.uid]  # its MIG device is now owned by no entry at all

        self.rewrite_checkpoint(damage)
        self.node.start()
        self.assertEqual(self.mig_devices_on_node(), self.all_devices,
                         "a MIG device was destroyed while an unreadable entry could own it")
        log = self.node.agent_log()
        self.assertIn(f"checkpoint entry of claim default/unreadable ({self.unreadable.uid}) cannot be read", log)
        self.assertIn(f"mig device={self.orphan_dev} owned by no readable claim: kept", log)
        self.assertIn(self.unreadable.uid, self.node.checkpoint(), "the unreadable entry was dropped")

        def wanted(items):
            return [e for e in items if e.get("reason") == "CheckpointEntryUnreadable"]
        events = self.node.api.wait_for_objects("events.k8s.io/v1", "events", wanted, DEADLINE)
        [event] = wanted(events)
        self.assertEqual((event["type"], event["regarding"]["kind"], event["regarding"]["uid"]),
                         ("Warning", "ResourceClaim", self.unreadable.uid))
        self.assertIn("move checkpoint.json aside", event["note"])
        self.assertEqual(self.metrics()['nvdra_checkpoint_unreadable_claims{driver="gpu.nvidia.com"}'], 1.0)
        self.assertIn(f"default/unreadable ({self.unreadable.uid}) cannot be read", self.status_errors())

        # The readable claim still unprepares (its own MIG device goes: nothing else can own it).
        self.assertEqual(set(self.node.gpu().unprepare([self.readable]).values()), {""})
        self.assertNotIn(self.readable_dev, self.mig_devices_on_node())

        # The operator's action: the checkpoint moved aside, the agent restarted. The unreadable claim is
        # rebuilt from its CDI spec and the API (its MIG device kept); the orphan goes only now.
        self.assertEqual(self.node.stop(), 0)
        os.rename(self.path, self.path + ".operator")
        self.node.start()
        self.assertEqual(self.mig_devices_on_node(), [self.unreadable_dev])
        self.assertIn(self.unreadable.uid, self.node.checkpoint())
        self.assertEqual(self.metrics()['nvdra_checkpoint_unreadable_claims{driver="gpu.nvidia.com"}'], 0.0)
        self.assertEqual(set(self.node.gpu().unprepare([self.unreadable]).values()), {""})
        self.assertEqual(self.mig_devices_on_node(), [])

    def test_without_unreadable_entries_the_orphan_is_destroyed(self):
        self.rewrite_checkpoint(lambda claims: claims.pop(self.orphan.uid))
        self.node.start()
        self.assertEqual(self.mig_devices_on_node(), sorted([self.unreadable_dev, self.readable_dev]))
        self.assertIn(f"mig device={self.orphan_dev} owned by no claim: destroyed", self.node.agent_log())

    def status_errors(self):
        """The agent's last errors as `nvdractl -o json status` shows them, joined."""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DBUS_SYSTEM_BUS_ADDRESS": self.bus.address}
        out = subprocess.run([NVDRACTL, "-o", "json", "status"], env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        return "\n".join(e["message"] for e in json.loads(out.stdout)["lastErrors"])


if __name__ == "__main__":
    unittest.main()
