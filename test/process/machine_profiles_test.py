"""The machine-profile generator (test/lib/machine_profiles.py) behind bench/scenario/scale_devices.py: a generated
node with vfio publishes every GPU and its VFIO twin through the real agent, as the hand-written passthrough
profile does; vfio with MIG is refused (PassthroughSupport excludes DynamicMIG)."""
import os
import tempfile
import unittest

import yaml

from gpu_node import SimulatedNode
from machine_profiles import gpu_uuid, node_kwargs, write_profile

GPUS = 3
# Past bus 0x3b, where the fake driver root keeps a DRM fixture in the host's sysfs (the generator skips it).
MANY = 48


class GeneratedProfiles(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="nvdra-profiles-")

    def start(self, profile, **kwargs):
        node = SimulatedNode(profile=profile, **kwargs)
        self.addCleanup(node.cleanup)
        node.start()
        return node.published()

    def test_vfio_gives_every_generated_gpu_its_twin(self):
        profile = write_profile(os.path.join(self.dir, "vfio.yaml"), MANY, False, vfio=True)
        devices = self.start(profile, **node_kwargs(True))
        self.assertEqual(sorted(devices), sorted([f"gpu-{i}" for i in range(MANY)] +
                                                 [f"gpu-vfio-{i}" for i in range(MANY)]))
        self.assertEqual(devices["gpu-vfio-2"]["attributes"]["resource.kubernetes.io/pciBusID"],
                         {"string": "0000:12:00.0"})
        self.assertEqual(devices["gpu-vfio-47"]["attributes"]["resource.kubernetes.io/pciBusID"],
                         {"string": "0000:40:00.0"})
        self.assertEqual(devices["gpu-0"]["attributes"]["uuid"], {"string": gpu_uuid(0)})

    def test_without_vfio_no_twin_is_published(self):
        profile = write_profile(os.path.join(self.dir, "plain.yaml"), GPUS, False)
        devices = self.start(profile, **node_kwargs(False))
        self.assertEqual(sorted(devices), [f"gpu-{i}" for i in range(GPUS)])

    def test_vfio_places_the_gpus_on_two_numa_nodes(self):
        with open(write_profile(os.path.join(self.dir, "numa.yaml"), GPUS, False, vfio=True)) as f:
            gpus = yaml.safe_load(f)["gpus"]
        self.assertEqual([g["numaNode"] for g in gpus], [0, 0, 1])

    def test_vfio_with_mig_is_refused(self):
        with self.assertRaisesRegex(ValueError, "vfio=True needs mig=False"):
            write_profile(os.path.join(self.dir, "mig.yaml"), GPUS, True, vfio=True)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "mig.yaml")))


if __name__ == "__main__":
    unittest.main()
