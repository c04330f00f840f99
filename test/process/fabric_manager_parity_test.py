"""Upstream's gpu-kubelet-plugin (built with NVIDIA's FM headers through cgo) against nvdra's mock
libnvfm.so.1 on the hgx-h100-nvswitch node, with FabricManagerPartitioning: the ABI check of the mock
(and so of nvdra's fm_types.hpp, which both the mock and nvdra's binding are built from) — upstream must
connect (fmConnectParams_v2), read the table (fmFabricPartitionList_v2) and activate/deactivate — and
the parity check of what others read: the same partition attributes and the same error for GPUs that
form no partition. Runs where NVDRA_UPSTREAM_DIR names upstream's binaries and as root (skips elsewhere,
fails in CI)."""
import os
import shlex
import unittest

from upstream_node import UpstreamPlugins, exit_without_upstream, needs_upstream, upstream_node
from fabric_manager_test import BOARD_5678, MOCK_FM, PROFILE, fabric_node, fm_state

GATES = "FabricManagerPartitioning=true"
FM_KEYS = ("gpuModuleID", "partition1", "partition2", "partition4", "partition8")


class UpstreamWithNvswitches(UpstreamPlugins):
    """Upstream reads /proc/driver/nvidia-nvswitch/devices from the machine: bind the simulated host's."""

    def command(self, driver):
        cmd = super().command(driver)
        switches = shlex.quote(os.path.join(self.node.host_root, "proc/driver/nvidia-nvswitch/devices"))
        tmpfs = "mount -t tmpfs nvdra-parity /proc/driver && "
        assert tmpfs in cmd[-1]
        cmd[-1] = cmd[-1].replace(tmpfs, tmpfs + "mkdir -p /proc/driver/nvidia-nvswitch/devices && "
                                  f"mount --bind {switches} /proc/driver/nvidia-nvswitch/devices && ", 1)
        return cmd


def fm_attributes(devices):
    return {name: {k: v for k, v in d["attributes"].items() if k in FM_KEYS} for name, d in devices.items()}


@needs_upstream
class FabricManagerParity(unittest.TestCase):
    def test_upstream_and_nvdra_agree_on_attributes_activation_and_the_mismatch_error(self):
        ours = fabric_node(GATES)
        self.addCleanup(ours.cleanup)
        ours.start()
        nvdra_attrs = fm_attributes(ours.published())
        odd_claim = ours.allocate("pod-b", [("gpu", "gpu-4"), ("gpu", "gpu-1")])
        nvdra_error = ours.gpu().prepare([odd_claim])[odd_claim.uid]["error"]
        ours.stop()

        node = upstream_node(PROFILE)
        self.addCleanup(node.cleanup)
        # Upstream opens libnvfm.so under the driver root; its default socket is a container path.
        os.makedirs(os.path.join(node.driver_root, "usr/lib64"), exist_ok=True)
        os.symlink(MOCK_FM, os.path.join(node.driver_root, "usr/lib64/libnvfm.so"))
        switches = os.path.join(node.host_root, "proc/driver/nvidia-nvswitch/devices")
        os.makedirs(switches, exist_ok=True)
        open(os.path.join(switches, "0000:05:00.0"), "w").close()
        socket = os.path.join(node.driver_root, "run/nvidia-fabricmanager/socket")
        os.makedirs(os.path.dirname(socket), exist_ok=True)
        open(socket, "w").close()
        node.extra_env["NVIDIA_FABRICMANAGER_UNIX_SOCKET"] = socket
        up = UpstreamWithNvswitches(node, drivers=("gpu.nvidia.com",), gates={"gpu.nvidia.com": GATES})
        self.addCleanup(up.cleanup)
        up.start()
        self.assertEqual(fm_attributes(node.published()), nvdra_attrs)
        self.assertEqual(nvdra_attrs["gpu-0"], {"gpuModuleID": {"int": 7}, "partition1": {"int": 13},
                                                "partition2": {"int": 5}, "partition4": {"int": 2},
                                                "partition8": {"int": 0}})
        claim = node.allocate("pod-a", BOARD_5678)
        self.assertEqual(up.gpu().prepare([claim])[claim.uid]["error"], "", up.log_text()[-2000:])
        self.assertEqual(fm_state(node)["active"], [2])  # modules 5-8: partition 2 of the HGX table
        self.assertEqual(up.gpu().unprepare([claim])[claim.uid], "")
        self.assertEqual(fm_state(node)["active"], [])
        odd = node.allocate("pod-b", [("gpu", "gpu-4"), ("gpu", "gpu-1")])
        upstream_error = up.gpu().prepare([odd])[odd.uid]["error"]
        message = ("fabric manager: GPU module set [1 5] does not match any FM partition; refusing partition "
                   "activation")
        self.assertTrue(upstream_error.endswith(message), upstream_error)
        self.assertIn(message, nvdra_error)
        up.stop()


if __name__ == "__main__":
    exit_without_upstream()
    unittest.main()
