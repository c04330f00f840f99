"""The shipped memory limits hold a big node (issue #33): the agent on a 520-device node (20 H100 under DynamicMIG,
test/lib/machine_profiles.py) prepares 1,000 claims (adminAccess on one GPU, in batches of 100 as kubelet may
send them) inside a memory cgroup limited to the unit's MemoryMax (packaging/debian/nvdra-agent.service), which
the DaemonSet's container limit must equal. The cgroup is one this test creates: cgroup v2 (memory.max) or the v1
memory controller (memory.limit_in_bytes); without either the test fails in CI (prerequisites)."""
import os
import re
import stat
import tempfile
import unittest
import uuid

import yaml

import gpu_node
from gpu_node import SimulatedNode
from machine_profiles import write_profile
from nvdra_testlib import SOURCE_DIR, agent_binary
from prerequisites import require

SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
CLAIMS, BATCH = 1000, 100


def systemd_bytes(text):
    m = re.fullmatch(r"(\d+)([KMG])?", text)
    return int(m.group(1)) * SUFFIX.get(m.group(2) or "", 1)


def unit_memory_max():
    with open(os.path.join(SOURCE_DIR, "packaging", "debian", "nvdra-agent.service")) as f:
        found = re.findall(r"^MemoryMax=(\S+)$", f.read(), re.M)
    return found


def daemonset_memory_limit():
    with open(os.path.join(SOURCE_DIR, "contrib", "kubernetes", "base", "daemonset.yaml")) as f:
        ds = yaml.safe_load(f)
    agent = next(c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "agent")
    return agent.get("resources", {}).get("limits", {}).get("memory")


class MemoryCgroup:
    """A cgroup of our own with a memory limit: v2 where the unified hierarchy has the memory controller,
    else the v1 memory hierarchy. None when neither can be created here."""

    def __init__(self, limit):
        self.path = self.v2 = None
        for base, v2 in (("/sys/fs/cgroup", True), ("/sys/fs/cgroup/memory", False)):
            controllers = os.path.join(base, "cgroup.controllers")
            if v2 and not (os.path.exists(controllers) and "memory" in open(controllers).read().split()):
                continue
            try:
                path = tempfile.mkdtemp(prefix="nvdra-memory-bound-", dir=base)
            except OSError:
                continue
            limit_file = os.path.join(path, "memory.max" if v2 else "memory.limit_in_bytes")
            try:
                with open(limit_file, "w") as f:
                    f.write(str(limit))
            except OSError:
                os.rmdir(path)
                continue
            self.path, self.v2 = path, v2
            return

    def peak(self):
        name = "memory.peak" if self.v2 else "memory.max_usage_in_bytes"
        with open(os.path.join(self.path, name)) as f:
            return int(f.read())

    def limit_hits(self):
        """v2: memory.events' oom_kill; v1: failcnt counts reclaim at the limit too, so oom_control's oom_kill."""
        name = "memory.events" if self.v2 else "memory.oom_control"
        with open(os.path.join(self.path, name)) as f:
            return {k: int(v) for k, v in (line.split() for line in f)}.get("oom_kill", 0)

    def remove(self):
        os.rmdir(self.path)


class MemoryBound(unittest.TestCase):
    def test_shipped_limits_agree(self):
        found = unit_memory_max()
        self.assertEqual(len(found), 1, "nvdra-agent.service sets MemoryMax= once")
        limit = daemonset_memory_limit()
        self.assertIsNotNone(limit, "the DaemonSet's agent container has a memory limit")
        m = re.fullmatch(r"(\d+)([KMG])i", limit)
        self.assertTrue(m, limit)
        self.assertEqual(int(m.group(1)) * SUFFIX[m.group(2)], systemd_bytes(found[0]))

    def test_big_node_with_1000_claims_inside_the_unit_limit(self):
        limit = systemd_bytes(unit_memory_max()[0])
        cgroup = MemoryCgroup(limit)
        require(cgroup.path, "a memory cgroup this test may create (cgroup v2 with the memory controller, or the "
                "v1 memory hierarchy, writable: run as root)")
        wrapper = self.agent_in(cgroup)
        profile = write_profile(os.path.join(tempfile.mkdtemp(), "h100-20-mig.yaml"), 20, True)
        node = SimulatedNode(profile=profile, gates="DynamicMIG=true", api_process=True)
        self.addCleanup(node.cleanup)
        real = gpu_node.agent_binary
        gpu_node.agent_binary = lambda: wrapper
        try:
            node.start(timeout=300)
        finally:
            gpu_node.agent_binary = real
        self.assertGreaterEqual(len(node.published()), 512)
        claims = [node.allocate(f"admin-{i}-{uuid.uuid4().hex[:6]}", [("gpu", "gpu-0")], admin_access=True)
                  for i in range(CLAIMS)]
        for start in range(0, CLAIMS, BATCH):
            batch = claims[start:start + BATCH]
            answers = node.gpu().prepare(batch, timeout=120)
            self.assertEqual({c.uid for c in batch}, {u for u, a in answers.items() if not a["error"]}, answers)
        self.assertEqual(len(node.checkpoint()), CLAIMS)
        self.assertIsNone(node.proc.poll(), "the agent is still running")
        self.assertEqual(cgroup.limit_hits(), 0)
        peak = cgroup.peak()
        with open(f"/proc/{node.proc.pid}/status") as f:
            hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
        print(f"memory_bound: cgroup peak {peak / (1 << 20):.1f} MiB (page cache included), agent peak RSS "
              f"{hwm / 1024:.1f} MiB, of the {limit / (1 << 20):.0f} MiB limit ({len(node.published())} devices, "
              f"{CLAIMS} claims)")
        self.assertLess(peak, limit)
        node.stop()

    def agent_in(self, cgroup):
        """A script that joins the cgroup and execs the agent (same pid: node.proc is the agent)."""
        self.addCleanup(cgroup.remove)
        path = os.path.join(tempfile.mkdtemp(), "agent-in-cgroup")
        with open(path, "w") as f:
            f.write(f'#!/bin/sh\necho $$ > "{cgroup.path}/cgroup.procs" || exit 70\nexec "{agent_binary()}" "$@"\n')
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return path


if __name__ == "__main__":
    unittest.main()
