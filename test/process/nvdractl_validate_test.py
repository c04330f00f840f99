"""`nvdractl validate -f FILE` as a CI pipeline runs it: multi-document YAML and JSON, stdin, manifests
that embed claim specs; each bad config printed with file, document and field; the exit status of
each outcome (0 valid, 1 refused, 2 usage, 5 unreadable) and the feature gates' effect."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from nvdra_testlib import BINARY_DIR, clean_env  # noqa: E402

NVDRACTL = os.path.join(BINARY_DIR, "agent", "ctl", "nvdractl")


def gpu_config(**body):
    return {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig", **body}


def claim_template(name, parameters, driver="gpu.nvidia.com"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"spec": {"devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}],
                "config": [{"requests": ["gpu"], "opaque": {"driver": driver, "parameters": parameters}}]}}}}


MPS = gpu_config(sharing={"strategy": "MPS"})
TYPO = gpu_config(sharingPolicy="MPS")
# A manifest of another kind that embeds claim specs (here a List, as `kubectl get -o yaml` writes).
EMBEDDED = {"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim", "metadata": {"name": "cd"},
     "spec": {"devices": {"config": [{"opaque": {"driver": "compute-domain.nvidia.com", "parameters": {
         "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainChannelConfig", "domainID": ""}}}]}}}]}


class Validate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(NVDRACTL):
            raise AssertionError(f"{NVDRACTL} is not built (cmake --build build --target nvdractl)")
        cls.dir = tempfile.TemporaryDirectory(prefix="nvdractl-validate-")

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def validate(self, *args, stdin=None):
        return subprocess.run([NVDRACTL, "validate", *args], input=stdin, capture_output=True, text=True,
                              env=clean_env(), timeout=30)

    def test_each_bad_config_with_file_document_and_field(self):
        path = self.write("claims.yaml", yaml.safe_dump_all([
            claim_template("mps", MPS), claim_template("typo", TYPO), {"apiVersion": "v1", "kind": "ConfigMap"},
            EMBEDDED]))
        out = self.validate("-f", path, "--feature-gates", "MPSSupport=true")
        self.assertEqual(out.returncode, 1, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(lines, [
            f"{path}: document 2 (ResourceClaimTemplate ml/typo): spec.spec.devices.config[0].opaque.parameters"
            ".sharingPolicy: error decoding object at spec.spec.devices.config[0].opaque.parameters: strict decoding "
            'error: unknown field "sharingPolicy"; allowed fields: apiVersion, kind, sharing, fabricTopologyConfig',
            f"{path}: document 4 (List): items[0].spec.devices.config[0].opaque.parameters.domainID: object at "
            "items[0].spec.devices.config[0].opaque.parameters is invalid: domainID: domainID cannot be empty",
        ])
        self.assertIn("4 documents, 3 configs checked, 2 refused", out.stderr)

    def test_the_feature_gates_decide_as_on_the_node(self):
        path = self.write("mps.yaml", yaml.safe_dump(claim_template("mps", MPS)))
        off = self.validate("-f", path)
        self.assertEqual(off.returncode, 1)
        self.assertIn('the "MPSSupport" feature gate is not enabled', off.stdout)
        self.assertEqual(self.validate("-f", path, "--feature-gates", "MPSSupport=true").returncode, 0)

    def test_json_from_stdin(self):
        good = json.dumps(claim_template("ok", gpu_config(), driver="gpu.nvidia.com"))
        out = self.validate("-f", "-", stdin=good)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual(out.stdout, "")
        self.assertIn("<stdin>: 1 documents, 1 configs checked, 0 refused", out.stderr)
        other = json.dumps(claim_template("other", {"anything": 1}, driver="example.com/x"))
        self.assertIn("0 configs checked", self.validate("-f", "-", stdin=other).stderr)

    def test_unreadable_input_and_usage(self):
        missing = self.validate("-f", os.path.join(self.dir.name, "absent.yaml"))
        self.assertEqual(missing.returncode, 5)
        self.assertIn("cannot read the file", missing.stderr)
        broken = self.validate("-f", self.write("broken.yaml", "kind: [unclosed\n"))
        self.assertEqual(broken.returncode, 5)
        self.assertIn("not YAML or JSON", broken.stderr)
        gates = self.validate("-f", "-", "--feature-gates", "NoSuchGate=true", stdin="")
        self.assertEqual(gates.returncode, 2)
        self.assertIn("NoSuchGate", gates.stderr)
        self.assertEqual(self.validate().returncode, 2)  # -f is required


if __name__ == "__main__":
    unittest.main()
