"""Every spec nvdra writes, seen by the two parties that read them:

* the CDI JSON schema (python3-jsonschema), plus CDI's minimum-version rule for cdiVersion;
* a container runtime: it loads the whole spec directory (all .json/.yaml files; a device name
  defined by two files is an error), resolves the CDI ids kubelet passes, and applies the edits.

cdi_spec_gen writes the specs for a fake node (GPU, MIG, MPS, IMEX channel and daemon claims, the
compute-domain base spec) and prints the ids the agent would return. Files are named .yaml as
upstream names them and hold JSON, which is YAML. This is the fast check; podman_cdi_test.py gives
the ids of claims prepared by the agent to a real container runtime.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
BINARY_DIR = os.environ.get("NVDRA_BINARY_DIR", os.path.join(HERE, "..", "..", "build"))
GEN = os.path.join(BINARY_DIR, "test", "cdi", "cdi_spec_gen")

KIND_RE = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?/[a-zA-Z0-9]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$")
NAME_RE = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9_.:-]*[a-zA-Z0-9])?$")


def schema_validator():
    with open(os.path.join(HERE, "schema", "schema.json")) as f:
        schema = json.load(f)
    with open(os.path.join(HERE, "schema", "defs.json")) as f:
        defs = json.load(f)
    try:  # jsonschema >= 4.18
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT7
        registry = Registry().with_resource("defs.json", Resource.from_contents(defs, default_specification=DRAFT7))
        return jsonschema.Draft7Validator(schema, registry=registry)
    except ImportError:  # Debian 12's 4.10
        resolver = jsonschema.RefResolver(base_uri="", referrer=schema, store={"defs.json": defs})
        return jsonschema.Draft7Validator(schema, resolver=resolver)


def minimum_version(spec):
    """container-device-interface MinimumRequiredVersion for the fields nvdra can write."""
    version = (0, 3, 0)
    edits = [spec.get("containerEdits", {})] + [d.get("containerEdits", {}) for d in spec["devices"]]
    if any(e.get("additionalGids") for e in edits):
        version = max(version, (0, 7, 0))
    if spec.get("annotations") or any(d.get("annotations") for d in spec["devices"]) \
            or "." in spec["kind"].split("/", 1)[1]:
        version = max(version, (0, 6, 0))
    if any(n.get("hostPath") for e in edits for n in e.get("deviceNodes", [])) \
            or any(d["name"][0].isdigit() for d in spec["devices"]):
        version = max(version, (0, 5, 0))
    if any(m.get("type") for e in edits for m in e.get("mounts", [])):
        version = max(version, (0, 4, 0))
    return "%d.%d.%d" % version


class CdiConflict(Exception):
    pass


class Runtime:
    """The container runtime's CDI registry: one directory, every spec file in it."""

    def __init__(self, cdi_dir):
        self.devices = {}
        self.specs = {}
        self.conflicts = []
        for name in sorted(os.listdir(cdi_dir)):
            if not (name.endswith(".json") or name.endswith(".yaml")):
                continue
            with open(os.path.join(cdi_dir, name)) as f:
                spec = yaml.safe_load(f)  # JSON is YAML: one parser for both, as runtimes do
            if not KIND_RE.match(spec["kind"]):
                raise ValueError("%s: bad kind %r" % (name, spec["kind"]))
            self.specs[name] = spec
            for dev in spec["devices"]:
                if not NAME_RE.match(dev["name"]):
                    raise ValueError("%s: bad device name %r" % (name, dev["name"]))
                qualified = spec["kind"] + "=" + dev["name"]
                if qualified in self.devices:
                    self.conflicts.append(qualified)
                self.devices.setdefault(qualified, []).append((name, spec, dev))

    def resolve(self, ids):
        """Merged edits for the requested ids, as the runtime applies them to the OCI spec."""
        merged = {"env": [], "deviceNodes": [], "mounts": [], "hooks": []}
        applied_specs = set()
        for cdi_id in ids:
            found = self.devices.get(cdi_id)
            if not found:
                raise KeyError("unresolvable CDI device %s" % cdi_id)
            if len(found) > 1:
                raise CdiConflict("%s defined in %s" % (cdi_id, [f[0] for f in found]))
            name, spec, dev = found[0]
            parts = [dev.get("containerEdits", {})]
            if name not in applied_specs:
                applied_specs.add(name)
                parts.append(spec.get("containerEdits", {}))
            for edits in parts:
                for key in merged:
                    merged[key].extend(edits.get(key, []))
        return merged


class CdiSpecsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="nvdra-cdi-consumer-")
        out = subprocess.run([GEN, cls.tmp], check=True, capture_output=True, text=True, timeout=60)
        cls.gen = json.loads(out.stdout)
        cls.cdi_dir = cls.gen["cdi_dir"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_every_generated_spec_is_schema_valid_at_its_minimum_version(self):
        validator = schema_validator()
        files = [n for n in os.listdir(self.cdi_dir) if not n.startswith(".")]
        self.assertEqual(len(files), 6, files)
        for name in files:
            self.assertTrue(name.endswith(".yaml"), name)
            with open(os.path.join(self.cdi_dir, name)) as f:
                spec = json.load(f)  # the content is JSON
            errors = [e.message for e in validator.iter_errors(spec)]
            self.assertEqual(errors, [], name)
            self.assertEqual(spec["cdiVersion"], minimum_version(spec), name)

    def test_schema_check_rejects_a_broken_spec(self):
        validator = schema_validator()
        self.assertFalse(validator.is_valid({"cdiVersion": "0.3.0", "kind": "a.b/c", "devices": [{"name": "x"}]}))
        self.assertFalse(validator.is_valid({"kind": "a.b/c", "devices": []}))

    def test_runtime_resolves_every_returned_id_into_what_cuda_needs(self):
        runtime = Runtime(self.cdi_dir)
        self.assertEqual(runtime.conflicts, [])
        version, lib_dir = self.gen["version"], self.gen["lib_dir"]
        for device, ids in self.gen["devices"].items():
            edits = runtime.resolve(ids)
            nodes = {n["path"]: n for n in edits["deviceNodes"]}
            mounts = {m["containerPath"]: m for m in edits["mounts"]}
            for m in edits["mounts"]:
                if m["hostPath"].startswith(self.tmp + "/node/driver"):
                    self.assertTrue(os.path.exists(m["hostPath"]), "%s: %s" % (device, m["hostPath"]))
            if "channel" in device:
                self.assertEqual(nodes["/dev/nvidia-caps-imex-channels/channel0"]["major"], 235, device)
                self.assertNotIn("hostPath", nodes["/dev/nvidia-caps-imex-channels/channel0"], device)
                continue
            for ctl in ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"):
                self.assertIn(ctl, nodes, device)
            for lib in ("libcuda.so.", "libnvidia-ml.so.", "libnvidia-ptxjitcompiler.so.", "libnvidia-nvvm.so."):
                self.assertIn(lib_dir + "/" + lib + version, mounts, device)
            self.assertIn("/usr/bin/nvidia-smi", mounts, device)
            self.assertIn("NVIDIA_CTK_LIBCUDA_DIR=" + lib_dir, edits["env"], device)
            hooks = [h["args"][1] for h in edits["hooks"]]
            # The daemon's device=all is nvcdi's management spec, as upstream's: two hooks only.
            self.assertEqual(hooks, ["create-symlinks", "update-ldcache"] if "daemon" in device else
                             ["create-symlinks", "enable-cuda-compat", "update-ldcache",
                              "disable-device-node-modification"], device)
            for h in edits["hooks"]:
                self.assertEqual((h["hookName"], h["args"][0], h["env"]),
                                 ("createContainer", "nvidia-cdi-hook", ["NVIDIA_CTK_DEBUG=false"]), device)
            if "daemon" in device:
                self.assertIn("/imexd", mounts)
                self.assertIn("/dev/nvidia-caps/nvidia-cap4096", nodes)
                self.assertIn("NVIDIA_VISIBLE_DEVICES=void", edits["env"])
                continue
            # A GPU claim's one id brings the driver's edits and hides the node's other GPUs from the
            # legacy NVIDIA runtime hook, as upstream's specs do.
            self.assertEqual(len(ids), 1, device)
            self.assertTrue(ids[0].startswith("k8s.gpu.nvidia.com/claim="), device)
            self.assertIn("NVIDIA_VISIBLE_DEVICES=void", edits["env"], device)
            gpu = "/dev/nvidia1" if "gpu-1" in device else "/dev/nvidia0"
            self.assertIn(gpu, nodes, device)
            if "mig-1g10gb-19-0" in device:
                self.assertEqual(nodes["/dev/nvidia-caps/nvidia-cap30"]["minor"], 30)
                self.assertEqual(nodes["/dev/nvidia-caps/nvidia-cap31"]["major"], 234)
                # Created by the runtime from type/major/minor: no host path that does not exist.
                self.assertNotIn("hostPath", nodes["/dev/nvidia-caps/nvidia-cap30"])
            if device.startswith("b0000000"):
                self.assertIn("/tmp/nvidia-mps", mounts)
                self.assertIn("CUDA_MPS_PIPE_DIRECTORY=/tmp/nvidia-mps", edits["env"])

    def test_removed_claim_no_longer_resolves(self):
        runtime = Runtime(self.cdi_dir)
        for cdi_id in self.gen["removed"]:
            with self.assertRaises(KeyError):
                runtime.resolve([cdi_id])

    def test_same_device_name_in_two_files_is_an_error(self):
        copy = os.path.join(self.tmp, "dup")
        shutil.copytree(self.cdi_dir, copy)
        claim = next(n for n in os.listdir(copy) if n.startswith("k8s.gpu.nvidia.com-claim_3b1f"))
        with open(os.path.join(copy, claim)) as f:
            spec = json.load(f)
        with open(os.path.join(copy, "k8s.gpu.nvidia.com-claim_other.yaml"), "w") as f:
            yaml.safe_dump(spec, f)
        runtime = Runtime(copy)
        self.assertEqual(len(runtime.conflicts), 2)
        ids = next(v for k, v in self.gen["devices"].items() if k.startswith("3b1f"))
        with self.assertRaises(CdiConflict):
            runtime.resolve(ids)


if __name__ == "__main__":
    unittest.main()
