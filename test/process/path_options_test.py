"""The node-facing options given as the DaemonSet gives them, through their environment variables
instead of the test library's flags, each observed by what it changes on the simulated node:

- NODE_NAME (--node-name): the node the ResourceSlices are published for;
- NVDRA_NVML_LIBRARY (--nvml-library): the NVML the agent opens (the mock's 8 GPUs are published);
- CDI_ROOT (--cdi-root): where the claim's CDI spec is written;
- NVIDIA_DRIVER_ROOT (--nvidia-driver-root), the host's view of the driver, and DRIVER_ROOT_CTR_PATH
  (--container-driver-root), where the agent reads it: spec hostPaths are under the first for files
  the agent found under the second;
- HOST_ROOT (--host-root): where the agent reads /proc (a MIG device's capability node comes from its
  capabilities tree, which "/" here lacks);
- NVIDIA_CDI_HOOK_PATH (--nvidia-cdi-hook-path): the hook the specs name."""
import os
import unittest

from gpu_node import SimulatedNode

HOST_DRIVER_ROOT = "/run/nvidia/driver"  # the host's path; nothing is read there
HOOK = "/usr/local/nvidia/toolkit/nvidia-cdi-hook"


class EnvNode(SimulatedNode):
    """A SimulatedNode whose agent gets these options from the environment: the library's flag for each
    is taken out, and its value (or the one given) goes into the variable."""

    def __init__(self, moved, **kw):
        self.moved = moved  # {flag: (VARIABLE, value or None for the library's value)}
        super().__init__(**kw)

    def agent_args(self):
        args = super().agent_args()
        for flag, (variable, value) in self.moved.items():
            i = args.index(f"--{flag}")
            self.extra_env[variable] = value if value is not None else args[i + 1]
            del args[i:i + 2]
        return args


class PathOptionsFromTheEnvironment(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = EnvNode({"node-name": ("NODE_NAME", None), "nvml-library": ("NVDRA_NVML_LIBRARY", None),
                            "cdi-root": ("CDI_ROOT", None), "host-root": ("HOST_ROOT", None),
                            "nvidia-driver-root": ("NVIDIA_DRIVER_ROOT", HOST_DRIVER_ROOT),
                            "container-driver-root": ("DRIVER_ROOT_CTR_PATH", None)},
                           profile="dgx-a100", node="env-node-7", env={"NVIDIA_CDI_HOOK_PATH": HOOK})
        try:
            cls.node.start()
        except BaseException:
            cls.node.cleanup()
            raise
        cls.container_root = cls.node.extra_env["DRIVER_ROOT_CTR_PATH"]

    @classmethod
    def tearDownClass(cls):
        cls.node.cleanup()

    def test_node_name_and_nvml_library_variables_publish_the_mock_gpus_for_that_node(self):
        self.assertNotIn("--node-name", self.node.agent_args())
        devices = self.node.wait_published(lambda d: len([n for n in d if n.startswith("gpu-")]) >= 8)
        self.assertEqual(sorted(n for n in devices if "-mig-" not in n)[:2], ["gpu-0", "gpu-1"])

    def test_cdi_root_driver_roots_and_host_root_variables_shape_a_mig_claims_spec(self):
        devices = self.node.wait_published(lambda d: any("-mig-" in n for n in d))
        mig = sorted(n for n in devices if "-mig-" in n)[0]
        claim = self.node.allocate("pod-mig", [("mig", mig)])
        result = self.node.gpu().prepare([claim])[claim.uid]
        self.assertEqual(result["error"], "")
        specs = [f for f in os.listdir(self.node.extra_env["CDI_ROOT"]) if claim.uid in f]
        self.assertEqual(len(specs), 1, os.listdir(self.node.extra_env["CDI_ROOT"]))
        spec = self.node.cdi_spec(specs[0])
        nodes = [n["path"] for d in spec["devices"] for n in d["containerEdits"].get("deviceNodes", [])]
        self.assertTrue(any(p.startswith("/dev/nvidia-caps/nvidia-cap") for p in nodes), nodes)
        mounts = [m for f in self.node.cdi_files() for m in self.mounts(self.node.cdi_spec(f))]
        driver_files = [m for m in mounts if m["hostPath"].startswith(HOST_DRIVER_ROOT + "/")]
        self.assertTrue(driver_files, mounts)
        for m in driver_files:
            found = self.container_root + m["hostPath"][len(HOST_DRIVER_ROOT):]
            self.assertTrue(os.path.lexists(found), f"{m['hostPath']}: not read from {found}")

    def test_cdi_hook_path_variable_is_the_hook_every_spec_names(self):
        devices = self.node.wait_published(lambda d: "gpu-3" in d)
        self.assertIn("gpu-3", devices)
        claim = self.node.allocate("pod-hook", [("gpu", "gpu-3")])
        self.assertEqual(self.node.gpu().prepare([claim])[claim.uid]["error"], "")
        hooks = [h for f in self.node.cdi_files() for h in self.hooks(self.node.cdi_spec(f))]
        self.assertTrue(hooks)
        self.assertEqual({h["path"] for h in hooks}, {HOOK})

    @staticmethod
    def hooks(spec):
        edits = [spec.get("containerEdits", {})] + [d.get("containerEdits", {}) for d in spec.get("devices", [])]
        return [h for e in edits for h in e.get("hooks", [])]

    @staticmethod
    def mounts(spec):
        edits = [spec.get("containerEdits", {})] + [d.get("containerEdits", {}) for d in spec.get("devices", [])]
        return [m for e in edits for m in e.get("mounts", [])]


if __name__ == "__main__":
    unittest.main()
