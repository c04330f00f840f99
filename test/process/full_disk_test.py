"""A full or read-only plugins directory or CDI directory (issue #30), on small tmpfs mounts: a prepare fails
naming the file it could not write and the errno (ENOSPC, EROFS), nothing half-written is left (no temp file,
the checkpoint on disk still the last good one), claims already prepared stay, and once space returns (or the
mount is writable again) the same agent prepares and unprepares as before — no restart. Mounting needs root:
without it the test is skipped, and fails under CI=true."""
import json
import os
import subprocess
import unittest

from gpu_node import GPU, SimulatedNode
from prerequisites import require


def require_root():
    require(os.geteuid() == 0, "root", "full_disk_test mounts tmpfs file systems")


def mount_tmpfs(path, size):
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", path], check=True)


def fill(directory):
    """Writes a filler file until the file system is full; returns its path."""
    path = os.path.join(directory, "filler")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass  # ENOSPC: full
    finally:
        os.close(fd)
    return path


class FullOrReadOnlyDisk(unittest.TestCase):
    def setUp(self):
        require_root()
        self.node = SimulatedNode(profile="dgx-a100", drivers=[GPU])
        self.addCleanup(self.node.cleanup)
        for d in (self.node.dirs.plugins, self.node.dirs.cdi):
            os.makedirs(d, exist_ok=True)
            mount_tmpfs(d, "1m")
            self.addCleanup(subprocess.run, ["umount", "-l", d], check=False, stderr=subprocess.DEVNULL)
        self.node.start()
        self.first = self.node.allocate("first", [("gpu", "gpu-0")])
        self.assertEqual(self.node.gpu().prepare([self.first])[self.first.uid]["error"], "")
        self.checkpoint = os.path.join(self.node.dirs.plugins, GPU, "checkpoint.json")

    def leftovers(self):
        names = os.listdir(os.path.join(self.node.dirs.plugins, GPU)) + os.listdir(self.node.dirs.cdi)
        return [n for n in names if ".tmp." in n]

    def on_disk(self):
        with open(self.checkpoint) as f:
            return set((json.load(f)["v2"]["preparedClaims"] or {}))

    def assert_recovers(self, claim, prepared=()):
        """The same agent, kubelet retrying: the claim prepares, every claim unprepares."""
        self.assertEqual(self.node.gpu().prepare([claim])[claim.uid]["error"], "")
        everyone = [claim, self.first, *prepared]
        self.assertEqual(self.node.gpu().unprepare(everyone), {c.uid: "" for c in everyone})
        self.assertEqual(self.node.checkpoint(), {})
        self.assertEqual([f for f in self.node.cdi_files() if "claim_" in f], [])
        self.assertIsNone(self.node.proc.poll())
        self.assertNotIn("restarting in", self.node.agent_log())

    def test_a_full_plugins_directory(self):
        filler = fill(self.node.dirs.plugins)
        # A save overwrites the checkpoint's spare (the previous content's file) in place, so claims whose
        # checkpoint still fits the spare's pages prepare on the full disk; the first that needs a page more fails.
        prepared, error = [], ""
        for gpu in range(1, 8):
            claim = self.node.allocate(f"no-space-{gpu}", [("gpu", f"gpu-{gpu}")])
            error = self.node.gpu().prepare([claim])[claim.uid]["error"]
            if error:
                break
            prepared.append(claim)
        self.assertIn(f"saving checkpoint {self.checkpoint}: ", error)
        self.assertIn("No space left on device (ENOSPC)", error)
        self.assertLess(len(prepared), 4, "a 4 KiB page holds at most three of these claims")
        self.assertEqual(self.leftovers(), [])
        self.assertEqual(self.on_disk(), {self.first.uid} | {c.uid for c in prepared},
                         "the checkpoint on disk is the last good one")
        os.remove(filler)
        self.assert_recovers(claim, prepared)

    def test_a_full_cdi_directory(self):
        filler = fill(self.node.dirs.cdi)
        claim = self.node.allocate("no-spec-space", [("gpu", "gpu-1")])
        error = self.node.gpu().prepare([claim])[claim.uid]["error"]
        spec = os.path.join(self.node.dirs.cdi, f"k8s.gpu.nvidia.com-claim_{claim.uid}.yaml")
        self.assertIn(f"writing CDI spec {spec}: ", error)
        self.assertIn("(ENOSPC)", error)
        self.assertEqual(self.leftovers(), [])
        self.assertFalse(os.path.exists(spec))
        self.assertNotIn(claim.uid, self.node.checkpoint(), "the failed prepare was rolled back")
        os.remove(filler)
        self.assert_recovers(claim)

    def test_a_read_only_plugins_directory(self):
        # The driver's data directory read-only from now on: a read-only file system over it (the agent's open
        # lock file keeps a remount of the same mount from going read-only).
        data = os.path.join(self.node.dirs.plugins, GPU)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", data], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", data], check=False, stderr=subprocess.DEVNULL)
        claim = self.node.allocate("read-only", [("gpu", "gpu-1")])
        error = self.node.gpu().prepare([claim])[claim.uid]["error"]
        self.assertIn(f"saving checkpoint {self.checkpoint}: ", error)
        self.assertIn("Read-only file system (EROFS)", error)
        # Unprepare keeps working as far as it can: it cannot forget the claim on a read-only disk and says so.
        self.assertIn("(EROFS)", self.node.gpu().unprepare([self.first])[self.first.uid])
        subprocess.run(["umount", data], check=True)
        self.assertEqual(self.on_disk(), {self.first.uid})
        self.assert_recovers(claim)


if __name__ == "__main__":
    unittest.main()
