"""FabricManager partitions end to end (issue 21) on the hgx-h100-nvswitch profile: the agent finds
the NVSwitches under the host root and the mock libnvfm.so.1 under the driver root, connects to
"FM" over the driver root's unix socket, publishes upstream's partition attributes and activates /
deactivates partitions as claims come and go. What FM did is read from the mock's state file.

Module ids of the profile's GPUs: gpu-0:7 gpu-1:5 gpu-2:6 gpu-3:8 gpu-4:1 gpu-5:3 gpu-6:4 gpu-7:2.
HGX table as FM lists it (`fmpm -l`): 0 [1..8], 1 [1 2 3 4], 2 [5 6 7 8], 3 [1 3], 4 [2 4], 5 [5 7],
6 [6 8], 7..14 [1]..[8]."""
import json
import os
import re
import subprocess
import sys
import unittest
import urllib.request

import grpc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "systemd"))
from gpu_node import SimulatedNode, gpu_config  # noqa: E402
from nvdra_testlib import BINARY_DIR, SOURCE_DIR  # noqa: E402
from private_dbus import PrivateDbus  # noqa: E402

NVDRACTL = os.path.join(BINARY_DIR, "agent", "ctl", "nvdractl")

MOCK_FM = os.path.join(BINARY_DIR, "fm-mock", "libnvfm.so.1")
PROFILE = "hgx-h100-nvswitch"
BOARD_5678 = [("gpu", "gpu-1"), ("gpu", "gpu-2"), ("gpu", "gpu-0"), ("gpu", "gpu-3")]  # partition 2
PAIR_13 = [("gpu", "gpu-4"), ("gpu", "gpu-5")]  # modules 1, 3: partition 3
PAIR_24 = [("gpu", "gpu-7"), ("gpu", "gpu-6")]  # modules 2, 4: partition 4
VFIO_CONFIG = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "VfioDeviceConfig"}
LISTENING = re.compile(r"metrics listening address=(\S+) port=(\d+) path=(\S+)")


def fabric_node(gates="", env=None, socket=True, args=(), pci=None):
    """A simulated HGX H100 node with FM's library and socket in the driver root; its 4 NVSwitches
    come from the profile's `nvswitches: 4` (nvdra-fake-node)."""
    return equip_fabric_manager(SimulatedNode(profile=PROFILE, gates=gates, env=env, args=args, pci=pci), socket)


def equip_fabric_manager(node, socket=True):
    """Gives a (not yet started) hgx-h100-nvswitch SimulatedNode FM's library and socket in the driver
    root (its 4 NVSwitches come from the profile, laid out by nvdra-fake-node); returns the node."""
    switches = os.path.join(node.host_root, "proc/driver/nvidia-nvswitch/devices")
    assert sorted(os.listdir(switches)) == ["0000:05:00.0", "0000:06:00.0", "0000:07:00.0", "0000:08:00.0"], switches
    lib_dir = os.path.join(node.driver_root, "usr/lib/x86_64-linux-gnu")
    os.makedirs(lib_dir, exist_ok=True)
    os.symlink(MOCK_FM, os.path.join(lib_dir, "libnvfm.so.1"))
    if socket:
        os.makedirs(os.path.join(node.driver_root, "run/nvidia-fabricmanager"), exist_ok=True)
        open(os.path.join(node.driver_root, "run/nvidia-fabricmanager/socket"), "w").close()
    return node


def fm_state(node):
    """The mock FM's state ({} when the agent never connected)."""
    path = os.path.join(node.mock_state, PROFILE + ".fm.state")
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return json.load(f)


def set_fm_state(node, **fields):
    """Changes the mock FM's state file (the mock reads it on every call)."""
    state = fm_state(node) or {"active": []}
    state.update(fields)
    path = os.path.join(node.mock_state, PROFILE + ".fm.state")
    with open(path + ".tmp", "w") as f:
        json.dump(state, f)
    os.rename(path + ".tmp", path)


def fabric(**fields):
    return gpu_config(fabricTopologyConfig=fields)


class FabricManagerPartitions(unittest.TestCase):
    def start(self, gates="FabricManagerPartitioning=true", **kw):
        node = fabric_node(gates, **kw)
        self.addCleanup(node.cleanup)
        node.start()
        return node

    def prepare(self, node, claims):
        return node.gpu().prepare(claims)

    def test_slices_carry_the_partition_attributes(self):
        node = self.start()
        devices = node.published()
        attrs = devices["gpu-0"]["attributes"]  # module 7
        self.assertEqual(attrs["gpuModuleID"], {"int": 7})
        self.assertEqual([attrs[f"partition{n}"] for n in (8, 4, 2, 1)],
                         [{"int": 0}, {"int": 2}, {"int": 5}, {"int": 13}])
        self.assertEqual(devices["gpu-4"]["attributes"]["partition4"], {"int": 1})  # module 1
        self.assertEqual(devices["gpu-4"]["attributes"]["partition2"], {"int": 3})  # modules 1, 3
        self.assertRegex(node.agent_log(), r"fabric manager endpoint=unix:\S+/run/nvidia-fabricmanager/socket "
                                           r"partitions=15 active=0")

    def test_a_four_gpu_claim_activates_its_partition_and_unprepare_deactivates_it(self):
        node = self.start()
        claim = node.allocate("pod-a", BOARD_5678)
        self.assertEqual(self.prepare(node, [claim])[claim.uid]["error"], "")
        self.assertEqual(fm_state(node)["active"], [2])
        node.wait_log(r"fabric partition 2 \[5 6 7 8\] activated for claim default/pod-a")
        self.assertEqual(node.gpu().unprepare([claim])[claim.uid], "")
        self.assertEqual(fm_state(node)["active"], [])
        node.wait_log(r"fabric partition 2 deactivated")
        # Upstream's rule: GPUs that are no partition fail with upstream's message, FM untouched.
        odd = node.allocate("pod-b", [("gpu", "gpu-4"), ("gpu", "gpu-1")])
        error = self.prepare(node, [odd])[odd.uid]["error"]
        self.assertIn("fabric manager: GPU module set [1 5] does not match any FM partition; refusing partition "
                      "activation", error)
        self.assertEqual(fm_state(node)["calls"]["fmActivateFabricPartition"], 1)

    def test_manual_with_a_wrong_id_fails_naming_it(self):
        node = self.start("FabricTopologySupport=true")
        claim = node.allocate("pod-a", PAIR_13, configs=[((), fabric(strategy="Manual", partitionIDs=["partition-42"]))])
        error = self.prepare(node, [claim])[claim.uid]["error"]
        self.assertIn("fabricTopologyConfig.partitionIDs[0]", error)
        self.assertIn('partition "partition-42" is not a Fabric Manager partition of this node', error)
        self.assertEqual(fm_state(node).get("calls", {}).get("fmActivateFabricPartition", 0), 0)
        self.assertEqual(node.checkpoint(), {})
        good = node.allocate("pod-b", PAIR_13, configs=[((), fabric(strategy="Manual", partitionIDs=["3"]))])
        self.assertEqual(self.prepare(node, [good])[good.uid]["error"], "")
        self.assertEqual(fm_state(node)["active"], [3])

    def test_an_overlapping_claim_fails_only_itself(self):
        node = self.start("FabricManagerPartitioning=true,FabricTopologySupport=true")
        a = node.allocate("pod-a", BOARD_5678)
        self.assertEqual(self.prepare(node, [a])[a.uid]["error"], "")
        whole = node.allocate("pod-b", PAIR_13, configs=[((), fabric(strategy="Manual", partitionIDs=["0"]))])
        pair = node.allocate("pod-c", PAIR_24)  # modules 2, 4: partition 4
        answer = self.prepare(node, [whole, pair])
        # `pair`, prepared in the same call, may hold partition 4 before `whole` plans: then both are named.
        self.assertIn("partition 2 [5 6 7 8], which prepared claim " + a.uid + " holds active", answer[whole.uid]["error"])
        self.assertEqual(answer[pair.uid]["error"], "")
        self.assertEqual(fm_state(node)["active"], [2, 4])
        self.assertEqual(sorted(node.checkpoint()), sorted([a.uid, pair.uid]))

    def test_seed_environment_switch_and_auto_strategy(self):
        node = self.start(gates="", env={"FABRIC_TOPOLOGY_SUPPORT": "true"})
        claim = node.allocate("pod-a", BOARD_5678, configs=[((), fabric(strategy="Auto", partitionSize=4,
                                                                         minBandwidth=600.0))])
        self.assertEqual(self.prepare(node, [claim])[claim.uid]["error"], "")
        self.assertEqual(fm_state(node)["active"], [2])
        # The seed README's own example sets maxLatency: refused, saying why and what to use instead.
        latency = node.allocate("pod-b", PAIR_13, configs=[((), fabric(strategy="Auto", maxLatency=0.1))])
        error = self.prepare(node, [latency])[latency.uid]["error"]
        self.assertIn("fabricTopologyConfig.maxLatency", error)
        self.assertIn("maxLatency is not supported", error)
        self.assertIn("ask for minBandwidth", error)

    def test_kill_after_activation_then_restart_converges(self):
        node = fabric_node("FabricManagerPartitioning=true", env={"NVDRA_CRASH_POINT": "fm.prepare.after-activate"})
        self.addCleanup(node.cleanup)
        node.start()
        claim = node.allocate("pod-a", BOARD_5678)
        with self.assertRaises(grpc.RpcError):
            self.prepare(node, [claim])
        self.assertEqual(node.proc.wait(timeout=30), -9)
        node._close_run()
        self.assertEqual(fm_state(node)["active"], [2])  # activated, the claim not completed
        self.assertEqual(node.checkpoint()[claim.uid]["checkpointState"], "PrepareStarted")
        del node.extra_env["NVDRA_CRASH_POINT"]
        node.start()
        # Start-up rolled the unfinished prepare back: partition released, entry gone.
        self.assertEqual(fm_state(node)["active"], [])
        self.assertEqual(node.checkpoint(), {})
        self.assertEqual(self.prepare(node, [claim])[claim.uid]["error"], "")
        self.assertEqual(fm_state(node)["active"], [2])

    def test_kill_before_activation_and_after_deactivation_also_converge(self):
        node = fabric_node("FabricManagerPartitioning=true", env={"NVDRA_CRASH_POINT": "fm.prepare.after-intent-recorded"})
        self.addCleanup(node.cleanup)
        node.start()
        claim = node.allocate("pod-a", BOARD_5678)
        with self.assertRaises(grpc.RpcError):
            self.prepare(node, [claim])
        self.assertEqual(node.proc.wait(timeout=30), -9)
        node._close_run()
        self.assertEqual(fm_state(node).get("active", []), [])  # intent recorded, FM untouched
        self.assertEqual(node.checkpoint()[claim.uid]["checkpointState"], "PrepareStarted")
        del node.extra_env["NVDRA_CRASH_POINT"]
        node.start()  # rolls the unfinished prepare back: deactivating an inactive partition is done
        self.assertEqual(node.checkpoint(), {})
        self.assertEqual(self.prepare(node, [claim])[claim.uid]["error"], "")
        self.assertEqual(fm_state(node)["active"], [2])
        self.assertEqual(node.stop(), 0)
        node.extra_env["NVDRA_CRASH_POINT"] = "fm.unprepare.after-deactivate"
        node.start()  # the completed claim keeps its active partition across a restart
        self.assertEqual(fm_state(node)["active"], [2])
        with self.assertRaises(grpc.RpcError):
            node.gpu().unprepare([claim])
        self.assertEqual(node.proc.wait(timeout=30), -9)
        node._close_run()
        self.assertEqual(fm_state(node)["active"], [])  # deactivated, the entry still there
        self.assertEqual(node.checkpoint()[claim.uid]["checkpointState"], "PrepareCompleted")
        del node.extra_env["NVDRA_CRASH_POINT"]
        node.start()  # the completed claim still exists: its partition comes back until kubelet unprepares
        self.assertEqual(fm_state(node)["active"], [2])
        node.wait_log(r"fabric partition 2 re-activated")
        self.assertEqual(node.gpu().unprepare([claim])[claim.uid], "")
        self.assertEqual(fm_state(node)["active"], [])
        self.assertEqual(node.checkpoint(), {})

    def test_fm_unreachable_at_start_fails_claims_naming_it_until_the_background_retry_connects(self):
        node = fabric_node("FabricManagerPartitioning=true")
        self.addCleanup(node.cleanup)
        set_fm_state(node, running=False)
        node.start()
        node.wait_log(r"fabric manager unavailable: fabric manager: fmConnect\(unix:\S+\): "
                      r"FM_ST_CONNECTION_NOT_VALID \(-9\); retrying in the background")
        claim = node.allocate("pod-a", BOARD_5678)
        error = self.prepare(node, [claim])[claim.uid]["error"]
        self.assertIn("fabric manager is not connected (fabric manager: fmConnect(unix:", error)
        self.assertIn("the claim cannot be prepared until the agent connects", error)
        self.assertEqual(fm_state(node).get("calls", {}).get("fmActivateFabricPartition", 0), 0)
        self.assertEqual(node.checkpoint(), {})
        self.assertNotIn("partition4", node.published()["gpu-0"]["attributes"])
        set_fm_state(node, running=True)
        node.wait_log(r"fabric manager connected after retrying")
        node.wait_published(lambda d: d["gpu-0"]["attributes"].get("partition4") == {"int": 2}, 60)
        self.assertEqual(self.prepare(node, [claim])[claim.uid]["error"], "")
        self.assertEqual(fm_state(node)["active"], [2])

    def test_vfio_twins_carry_their_gpus_partition_attributes_and_count_for_the_module_set(self):
        node = self.start("FabricManagerPartitioning=true,PassthroughSupport=true", pci=True)
        devices = node.published()
        # gpu-vfio-0 is the GPU at 0000:1b:00.0, gpu-0 (module 7): upstream copies its attributes.
        for key in ("gpuModuleID", "partition1", "partition2", "partition4", "partition8"):
            self.assertEqual(devices["gpu-vfio-0"]["attributes"][key], devices["gpu-0"]["attributes"][key], key)
        # Two full GPUs and two VFIO twins of modules 5 6 7 8: partition 2 as one module set.
        claim = node.allocate("vm-a", [("gpu", "gpu-1"), ("gpu", "gpu-2"), ("vm", "gpu-vfio-0"), ("vm", "gpu-vfio-3")],
                              configs=[(["vm"], VFIO_CONFIG)])
        self.assertEqual(self.prepare(node, [claim])[claim.uid]["error"], "")
        self.assertEqual(fm_state(node)["active"], [2])
        self.assertEqual(node.gpu().unprepare([claim])[claim.uid], "")
        self.assertEqual(fm_state(node)["active"], [])

    def test_metrics_count_the_activation(self):
        node = self.start(args=("--http-endpoint=127.0.0.1:0",))

        def scrape():
            port = LISTENING.search(node.agent_log()).group(2)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                return r.read().decode()

        claim = node.allocate("pod-a", BOARD_5678)
        self.assertEqual(self.prepare(node, [claim])[claim.uid]["error"], "")
        page = scrape()
        self.assertRegex(page, r'nvdra_fabric_partition_calls_total\{[^}]*operation="activate"[^}]*result="ok"[^}]*\} 1\b')
        self.assertRegex(page, r'nvdra_fabric_partition_call_duration_seconds_count\{[^}]*operation="activate"[^}]*\} 1\b')
        self.assertRegex(page, r"nvdra_fabric_partitions_active(\{\})? 1\b")

    def test_with_the_gates_off_nothing_of_fm_is_touched(self):
        node = self.start(gates="")
        devices = node.published()
        self.assertNotIn("gpuModuleID", devices["gpu-0"]["attributes"])
        self.assertNotIn("partition4", devices["gpu-0"]["attributes"])
        claim = node.allocate("pod-a", BOARD_5678)
        self.assertEqual(self.prepare(node, [claim])[claim.uid]["error"], "")
        self.assertEqual(fm_state(node), {}, "the agent connected to FM")
        self.assertNotIn("fabric manager", node.agent_log())

    def test_fabricmanager_endpoint_environment(self):
        # NVIDIA_FABRICMANAGER_ADDRESS set but empty: TCP to 127.0.0.1, as upstream.
        tcp = self.start(env={"NVIDIA_FABRICMANAGER_ADDRESS": ""}, socket=False)
        self.assertEqual(fm_state(tcp)["lastConnect"], "tcp:127.0.0.1")
        self.assertIn("partition4", tcp.published()["gpu-0"]["attributes"])
        # NVIDIA_FABRICMANAGER_UNIX_SOCKET elsewhere, where no FM listens: no FM, no attributes.
        lost = self.start(env={"NVIDIA_FABRICMANAGER_UNIX_SOCKET": "/nonexistent/fm.socket"})
        self.assertEqual(fm_state(lost)["lastConnect"], "unix:/nonexistent/fm.socket")
        self.assertNotIn("partition4", lost.published()["gpu-0"]["attributes"])
        self.assertIn("fabric manager unavailable: fabric manager: fmConnect(unix:/nonexistent/fm.socket): "
                      "FM_ST_CONNECTION_NOT_VALID (-9)", lost.agent_log())

    def test_nvdractl_shows_the_partitions_held_for_claims(self):
        import pwd
        with open(os.path.join(SOURCE_DIR, "packaging", "debian", "io.nvdra.Agent1.conf")) as f:
            policy = f.read()
        if os.geteuid() != 0:
            me = pwd.getpwuid(os.geteuid()).pw_name
            policy = policy.replace('user="root"', f'user="{me}"').replace('group="nvdra"', 'group="root"')
        bus = PrivateDbus(policy)
        self.addCleanup(bus.close)
        node = self.start(env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address})
        claim = node.allocate("pod-a", BOARD_5678)
        self.assertEqual(self.prepare(node, [claim])[claim.uid]["error"], "")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DBUS_SYSTEM_BUS_ADDRESS": bus.address}
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
            if k in os.environ:
                env[k] = os.environ[k]
        out = subprocess.run([NVDRACTL, "-o", "json", "fabric"], env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        fabric_status = json.loads(out.stdout)
        self.assertTrue(fabric_status["manager"].startswith("unix:"), fabric_status)
        self.assertEqual(fabric_status["partitions"], [{"id": 2, "modules": ["5", "6", "7", "8"], "claims": [claim.uid]}])
        self.assertEqual(node.gpu().unprepare([claim])[claim.uid], "")
        out = subprocess.run([NVDRACTL, "-o", "json", "fabric"], env=env, capture_output=True, text=True, timeout=30)
        self.assertEqual(json.loads(out.stdout)["partitions"], [])


if __name__ == "__main__":
    unittest.main()
