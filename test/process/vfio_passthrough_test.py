"""PassthroughSupport end to end on the simulated passthrough host: 8 H100s in the fake sysfs PCI tree
(test/lib/fake_pci.py: its kernel stand-in moves drivers when the agent writes unbind, driver_override
and drivers_probe), the mock NVML hiding a GPU while it is off nvidia, the kubelet double calling in."""
import json
import os
import subprocess
import unittest

import grpc

from gpu_node import GPU, SimulatedNode
from nvdra_testlib import agent_binary

GATES = "PassthroughSupport=true"
VFIO_CONFIG = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "VfioDeviceConfig"}


def claim_file(claim):
    return f"k8s.gpu.nvidia.com-claim_{claim.uid}.yaml"


class PassthroughCase(unittest.TestCase):
    """The passthrough host and helpers; the tests are in Passthrough here and in vfio_holders_test.py."""

    def setUp(self):
        # Both drivers: READY=1 waits for both to be registered with the kubelet double.
        with_metadata = ("device_metadata_goes", "every_vfio_crash_point")
        metadata = ",DeviceMetadata=true" if any(t in self._testMethodName for t in with_metadata) else ""
        self.node = SimulatedNode(profile="passthrough", gates=GATES + metadata)
        self.addCleanup(self.node.cleanup)
        self.pci = self.node.pci
        self.bdf = {m: self.pci.gpu_address(m) for m in range(8)}

    def start(self):
        self.node.start()
        return self.node.published()

    def wait_published(self, predicate, timeout=20):
        def names(slices):
            return {d["name"] for s in slices if s["spec"]["driver"] == GPU for d in s["spec"].get("devices", [])}
        items = self.node.api.wait_for_objects("resource.k8s.io/v1", "resourceslices",
                                               lambda slices: predicate(names(slices)), timeout)
        return names(items)

    def prepare_ok(self, claim):
        answer = self.node.gpu().prepare([claim])[claim.uid]
        self.assertEqual(answer["error"], "")
        return answer["devices"]


class Passthrough(PassthroughCase):
    def test_publishes_vfio_twins_with_upstream_names_and_attributes(self):
        devices = self.start()
        self.assertEqual(sorted(n for n in devices if n.startswith("gpu-vfio-")),
                         [f"gpu-vfio-{i}" for i in (0, 1, 2, 3, 4, 5, 7)])
        self.assertEqual(devices["gpu-vfio-0"]["attributes"], {
            "type": {"string": "vfio"}, "uuid": {"string": "8bb2ceb2-c757-577e-8ee3-7b2dfc594cc6"},
            "deviceID": {"string": "0x2330"}, "vendorID": {"string": "0x10de"},
            "productName": {"string": "GH100 [H100 SXM5 80GB]"}, "iommuFDEnabled": {"bool": False},
            "resource.kubernetes.io/pciBusID": {"string": "0000:18:00.0"},
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:18"},
            "resource.kubernetes.io/numaNode": {"int": 0}})
        self.assertEqual(devices["gpu-vfio-0"]["capacity"], {"addressableMemory": {"value": "128Gi"}})
        # GPU 6 shares its IOMMU group with a NIC the host keeps: not offered, and the log says why.
        self.node.wait_log(r"gpu=0000:ba:00\.0 gpu-vfio-6 not published: its IOMMU group 16 also holds "
                           r"0000:e1:00\.0 \(driver ixgbe\)")

    def test_vfio_claim_binds_vfio_pci_and_withdraws_the_full_gpu_until_unprepare(self):
        self.start()
        claim = self.node.allocate("vm-a", [("vm", "gpu-vfio-0")], configs=[(["vm"], VFIO_CONFIG)])
        devices = self.prepare_ok(claim)
        self.assertEqual(devices[0]["cdi_device_ids"], [f"k8s.gpu.nvidia.com/claim={claim.uid}-gpu-vfio-0"])
        self.assertEqual(self.pci.driver(self.bdf[0]), "vfio-pci")
        self.assertTrue(os.path.exists(os.path.join(self.node.host_root, "dev/vfio/10")))
        spec = self.node.cdi_spec(claim_file(claim))
        # Upstream's GetCommonEdits: no IOMMU API device unless enableAPIDevice asks for it.
        self.assertEqual(spec["containerEdits"], {"env": ["NVIDIA_VISIBLE_DEVICES=void"]})
        self.assertEqual(spec["devices"], [{"name": f"{claim.uid}-gpu-vfio-0",
                                            "containerEdits": {"deviceNodes": [{"path": "/dev/vfio/10"}]}}])
        # The agent's NVML session had the GPU attached (the mock keeps /dev/nvidia0 open): it let go of it
        # before the unbind, which a real kernel would otherwise leave hanging.
        self.assertEqual(self.pci.blocked, [])
        entry = self.node.checkpoint()[claim.uid]
        self.assertEqual(entry["checkpointState"], "PrepareCompleted")
        self.assertEqual(entry["preparedDevices"][0]["devices"][0]["vfio"]["info"],
                         {"uuid": "8bb2ceb2-c757-577e-8ee3-7b2dfc594cc6", "pciBusID": "0000:18:00.0"})
        names = self.wait_published(lambda n: "gpu-0" not in n)
        self.assertIn("gpu-vfio-0", names)
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assertEqual(self.pci.driver(self.bdf[0]), "nvidia")
        self.assertFalse(os.path.exists(os.path.join(self.node.host_root, "dev/vfio/10")))
        self.wait_published(lambda n: "gpu-0" in n)
        self.assertEqual(self.node.specs_but_cd_base(), [])
        self.assertEqual(self.node.checkpoint(), {})
        # enableAPIDevice with LegacyOnly: the legacy container device, /dev/vfio/vfio.
        api = dict(VFIO_CONFIG, iommu={"backendPolicy": "LegacyOnly", "enableAPIDevice": True})
        legacy = self.node.allocate("vm-b", [("vm", "gpu-vfio-0")], configs=[(["vm"], api)])
        self.prepare_ok(legacy)
        self.assertEqual(self.node.cdi_spec(claim_file(legacy))["containerEdits"],
                         {"env": ["NVIDIA_VISIBLE_DEVICES=void"], "deviceNodes": [{"path": "/dev/vfio/vfio"}]})
        self.assertEqual(self.node.gpu().unprepare([legacy]), {legacy.uid: ""})

    def metadata_dir(self):
        return os.path.join(self.node.dirs.plugins, GPU, "dra-device-metadata")

    def test_device_metadata_goes_to_the_checkpoint_and_a_mounted_file_until_unprepare(self):
        published = self.start()["gpu-vfio-0"]["attributes"]
        claim = self.node.allocate("vm-a", [("vm", "gpu-vfio-0")], configs=[(["vm"], VFIO_CONFIG)])
        self.prepare_ok(claim)
        device = self.node.checkpoint()[claim.uid]["preparedDevices"][0]["devices"][0]["vfio"]["device"]
        # Upstream's encoding: capitalised keys, a copy of the published attributes, NetworkData null.
        self.assertEqual(device["Metadata"], {"Attributes": published, "NetworkData": None})
        host = os.path.join(self.metadata_dir(), "default_vm-a", "vm", "metadata.json")
        with open(host) as f:
            doc = json.load(f)
        self.assertEqual(doc, {"kind": "DeviceMetadata", "apiVersion": "metadata.resource.k8s.io/v1alpha1",
                               "metadata": {"name": "vm-a", "namespace": "default", "uid": claim.uid,
                                            "generation": 1},
                               "requests": [{"name": "vm", "devices": [{
                                   "name": "gpu-vfio-0", "driver": GPU, "pool": "gpu-node-1",
                                   "attributes": published}]}]})
        spec = self.node.cdi_spec(claim_file(claim))
        self.assertEqual(spec["containerEdits"]["mounts"], [{
            "hostPath": host,
            "containerPath": "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/vm-a/vm/"
                             "gpu.nvidia.com-metadata.json",
            "options": ["ro", "bind"]}])
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assertFalse(os.path.exists(os.path.dirname(os.path.dirname(host))))
        self.assertEqual(self.node.specs_but_cd_base(), [])

    def test_device_metadata_goes_under_the_pod_claim_name_and_top_level_request_of_a_template_claim(self):
        # A claim the resource claim controller made from a ResourceClaimTemplate (its pod-claim-name
        # annotation), allocated for a subrequest of a prioritized list: the kubelet helper's paths use
        # the pod's claim name and the top-level request, the document the request as allocated.
        published = self.start()["gpu-vfio-0"]["attributes"]
        claim = self.node.allocate("pod-1-vm-x7k2p", [("vm/passthrough", "gpu-vfio-0")], configs=[([], VFIO_CONFIG)],
                                   annotations={"resource.kubernetes.io/pod-claim-name": "vm-gpu"})
        self.prepare_ok(claim)
        host = os.path.join(self.metadata_dir(), "default_pod-1-vm-x7k2p", "vm", "metadata.json")
        with open(host) as f:
            doc = json.load(f)
        self.assertEqual(doc["podClaimName"], "vm-gpu")
        self.assertEqual(doc["requests"], [{"name": "vm/passthrough", "devices": [{
            "name": "gpu-vfio-0", "driver": GPU, "pool": "gpu-node-1", "attributes": published}]}])
        spec = self.node.cdi_spec(claim_file(claim))
        self.assertEqual(spec["containerEdits"]["mounts"], [{
            "hostPath": host,
            "containerPath": "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/vm-gpu/vm/"
                             "gpu.nvidia.com-metadata.json",
            "options": ["ro", "bind"]}])
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assertFalse(os.path.exists(os.path.dirname(os.path.dirname(host))))

    def test_without_device_metadata_nothing_is_written(self):
        self.start()
        claim = self.node.allocate("vm-a", [("vm", "gpu-vfio-0")], configs=[(["vm"], VFIO_CONFIG)])
        self.prepare_ok(claim)
        device = self.node.checkpoint()[claim.uid]["preparedDevices"][0]["devices"][0]["vfio"]["device"]
        self.assertNotIn("Metadata", device)
        self.assertNotIn("mounts", self.node.cdi_spec(claim_file(claim))["containerEdits"])
        self.assertFalse(os.path.exists(self.metadata_dir()))
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})

    def test_a_prepared_full_gpu_withdraws_its_vfio_twin_and_refuses_it(self):
        self.start()
        gpu = self.node.allocate("pod-a", [("gpu", "gpu-1")])
        self.prepare_ok(gpu)
        self.wait_published(lambda n: "gpu-vfio-1" not in n and "gpu-1" in n)
        vm = self.node.allocate("vm-a", [("vm", "gpu-vfio-1")])
        error = self.node.gpu().prepare([vm])[vm.uid]["error"]
        self.assertIn(f"requested device gpu-vfio-1 is the same GPU as gpu-1, which is already allocated to "
                      f"different claim {gpu.uid}", error)
        self.assertEqual(self.pci.driver(self.bdf[1]), "nvidia")
        self.assertEqual(self.node.gpu().unprepare([gpu]), {gpu.uid: ""})
        self.wait_published(lambda n: "gpu-vfio-1" in n)

    def test_the_audio_function_in_the_group_moves_with_the_gpu(self):
        self.start()
        audio = self.bdf[7][:-1] + "1"
        claim = self.node.allocate("vm-a", [("vm", "gpu-vfio-7")])
        self.prepare_ok(claim)
        self.assertEqual((self.pci.driver(self.bdf[7]), self.pci.driver(audio)), ("vfio-pci", "vfio-pci"))
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assertEqual(self.pci.driver(self.bdf[7]), "nvidia")
        # The card's other functions are handed back best effort (the host may have no driver for them):
        # the agent asks for the probe and does not wait for it.
        self.pci.wait_for_driver(audio, "snd_hda_intel")

    def test_a_refused_bind_fails_the_claim_naming_the_write_the_kernel_refused(self):
        self.start()
        self.pci.refuse(self.bdf[3])
        claim = self.node.allocate("vm-a", [("vm", "gpu-vfio-3")])
        error = self.node.gpu().prepare([claim], timeout=45)[claim.uid]["error"]
        self.assertIn(f"open {self.node.host_root}/sys/bus/pci/devices/{self.bdf[3]}/driver_override: "
                      f"No such device or address", error)
        # Its rollback is refused as well: the GPU stays without a driver and the claim's PrepareStarted
        # entry keeps it findable; kubelet's next call, once the kernel takes writes again, converges.
        self.assertEqual(self.pci.driver(self.bdf[3]), "")
        self.assertEqual(self.node.checkpoint()[claim.uid]["checkpointState"], "PrepareStarted")
        self.pci.refuse(self.bdf[3], on=False)
        self.prepare_ok(claim)
        self.assertEqual(self.pci.driver(self.bdf[3]), "vfio-pci")
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assertEqual(self.pci.driver(self.bdf[3]), "nvidia")

    def test_a_slow_kernel_is_waited_for(self):
        self.start()
        self.pci.slow(self.bdf[4], 0.3)
        claim = self.node.allocate("vm-a", [("vm", "gpu-vfio-4")])
        self.prepare_ok(claim)
        self.assertEqual(self.pci.driver(self.bdf[4]), "vfio-pci")

    def test_two_vfio_groups_in_one_claim_are_refused_with_upstreams_message(self):
        self.start()
        claim = self.node.allocate("vm-two", [("a", "gpu-vfio-0"), ("b", "gpu-vfio-1")],
                                   configs=[(["a"], VFIO_CONFIG), (["b"], VFIO_CONFIG)])
        error = self.node.gpu().prepare([claim])[claim.uid]["error"]
        self.assertIn(f"claim default/vm-two:{claim.uid} contains 2 VFIO device groups, but at most one is supported "
                      f"per claim", error)
        self.assertEqual((self.pci.driver(self.bdf[0]), self.pci.driver(self.bdf[1])), ("nvidia", "nvidia"))

    def test_a_gpu_already_on_vfio_pci_at_start_is_recognised_not_rebound(self):
        self.pci.set_driver(self.bdf[2], "vfio-pci")
        devices = self.start()
        self.assertNotIn("gpu-2", devices)  # NVML does not see it
        self.assertIn("gpu-vfio-2", devices)
        claim = self.node.allocate("vm-a", [("vm", "gpu-vfio-2")])
        self.prepare_ok(claim)
        self.assertEqual([w for w in self.pci.writes if self.bdf[2] in w], [])
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        # Back on nvidia, NVML sees it again and its full GPU is published.
        self.assertEqual(self.pci.driver(self.bdf[2]), "nvidia")
        self.wait_published(lambda n: "gpu-2" in n)

    def test_kill_between_unbind_and_bind_then_restart_converges(self):
        self.node.extra_env["NVDRA_CRASH_POINT"] = "vfio.prepare.after-unbind"
        self.start()
        claim = self.node.allocate("vm-a", [("vm", "gpu-vfio-5")])
        with self.assertRaises(grpc.RpcError):
            self.node.gpu().prepare([claim])
        self.assertEqual(self.node.proc.wait(timeout=20), -9)
        self.node._close_run()
        self.assertEqual(self.pci.driver(self.bdf[5]), "")  # unbound, not yet on vfio-pci
        self.assertEqual(self.node.checkpoint()[claim.uid]["checkpointState"], "PrepareStarted")
        del self.node.extra_env["NVDRA_CRASH_POINT"]
        self.node.start()
        # The next start rolls the half-done prepare back: the GPU is on nvidia, NVML sees it again.
        self.node.wait_log(f"claim uid={claim.uid} unfinished prepare rolled back")
        self.assertEqual(self.pci.driver(self.bdf[5]), "nvidia")
        self.assertEqual(self.node.checkpoint(), {})
        self.wait_published(lambda n: {"gpu-5", "gpu-vfio-5"} <= n)
        self.prepare_ok(claim)
        self.assertEqual(self.pci.driver(self.bdf[5]), "vfio-pci")

    def test_every_vfio_crash_point_converges_after_restart(self):
        with open(os.path.join(os.path.dirname(__file__), "crash_points.txt")) as f:
            points = [line.split()[0] for line in f if line.startswith("vfio.")]
        self.assertGreaterEqual(len(points), 6)
        for i, point in enumerate(points):
            with self.subTest(point=point):
                claim = self.node.allocate(f"vm-{i}", [("vm", "gpu-vfio-0")])
                self.node.extra_env["NVDRA_CRASH_POINT"] = point
                self.node.start()
                unprepare = ".unprepare." in point
                if unprepare:
                    self.prepare_ok(claim)
                with self.assertRaises(grpc.RpcError):
                    (self.node.gpu().unprepare if unprepare else self.node.gpu().prepare)([claim])
                self.assertEqual(self.node.proc.wait(timeout=20), -9)
                self.node._close_run()
                del self.node.extra_env["NVDRA_CRASH_POINT"]
                self.node.start()
                # kubelet calls again: the claim ends prepared (then unprepared) or unprepared, whole.
                if not unprepare:
                    self.prepare_ok(claim)
                    self.assertEqual(self.pci.driver(self.bdf[0]), "vfio-pci")
                self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
                self.assertEqual(self.pci.driver(self.bdf[0]), "nvidia")
                self.assertEqual(self.node.checkpoint(), {})
                self.assertEqual(os.listdir(self.metadata_dir()) if os.path.isdir(self.metadata_dir()) else [], [])
                self.wait_published(lambda n: {"gpu-0", "gpu-vfio-0"} <= n)
                self.node.stop()

    def test_a_host_without_the_nvidia_driver_still_offers_and_prepares_vfio_devices(self):
        self.node.profile = os.path.join(self.node.root, "no-driver.yaml")  # no such profile: NVML fails to start
        self.pci.set_driver(self.bdf[0], "vfio-pci")
        self.pci.set_driver(self.bdf[1], "")
        self.node.drivers = [GPU]  # compute-domain.nvidia.com needs NVML: it does not come up here
        self.node.start(wait_ready=False)
        self.node.wait_log(r"NVML unavailable .*publishing VFIO devices only")
        names = self.wait_published(lambda n: "gpu-vfio-1" in n)
        self.assertEqual(sorted(n for n in names if not n.startswith("gpu-vfio-")), [])
        claim = self.node.allocate("vm-a", [("vm", "gpu-vfio-1")])
        self.prepare_ok(claim)
        self.assertEqual(self.pci.driver(self.bdf[1]), "vfio-pci")
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assertEqual(self.pci.driver(self.bdf[1]), "vfio-pci")  # no nvidia to go back to, as upstream

    def test_prefer_iommufd_on_an_iommufd_host_uses_the_device_cdev_and_dev_iommu(self):
        node = SimulatedNode(profile="passthrough", gates=GATES, iommufd=True)
        self.addCleanup(node.cleanup)
        node.start()
        self.assertEqual(node.published()["gpu-vfio-3"]["attributes"]["iommuFDEnabled"], {"bool": True})
        config = dict(VFIO_CONFIG, iommu={"backendPolicy": "PreferIommuFD", "enableAPIDevice": True})
        claim = node.allocate("vm-a", [("vm", "gpu-vfio-3")], configs=[([], config)])
        self.assertEqual(node.gpu().prepare([claim])[claim.uid]["error"], "")
        spec = node.cdi_spec(claim_file(claim))
        self.assertEqual(spec["containerEdits"]["deviceNodes"], [{"path": "/dev/iommu"}])
        self.assertEqual(spec["devices"][0]["containerEdits"], {"deviceNodes": [{"path": "/dev/vfio/devices/vfio3"}]})
        self.assertEqual(node.gpu().unprepare([claim]), {claim.uid: ""})

    def first_line_with(self, args, env, needle):
        proc = subprocess.Popen([agent_binary()] + args, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            for line in proc.stdout:
                if needle in line:
                    return line
            self.fail(f"the agent never said {needle!r}")
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()

    def test_the_gate_needs_an_iommu(self):
        node = SimulatedNode(profile="l4", gates=GATES, drivers=[GPU], pci=False)
        self.addCleanup(node.cleanup)
        line = self.first_line_with(node.agent_args(), node.env(), "IOMMU is not enabled")
        self.assertIn("PassthroughSupport: IOMMU is not enabled in the kernel", line)

    def test_the_gate_needs_the_host_root_mounted(self):
        # Upstream's start check, not reported as an IOMMU that is off.
        node = SimulatedNode(profile="l4", gates=GATES, drivers=[GPU], pci=False)
        self.addCleanup(node.cleanup)
        missing = os.path.join(node.root, "no-host-root")
        args = node.agent_args()
        args[args.index("--host-root") + 1] = missing
        line = self.first_line_with(args, node.env(), "host root")
        self.assertIn(f'PassthroughSupport: host root is not mounted at "{missing}"', line)
        self.assertNotIn("IOMMU", line)


if __name__ == "__main__":
    unittest.main()
