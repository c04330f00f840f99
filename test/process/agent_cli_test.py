"""nvdra-agent's command line from outside: every bad input is status 2 and one precise line."""
import os
import unittest

from nvdra_testlib import AgentDirs, clean_env, run_agent


class BadInputExitsTwo(unittest.TestCase):
    def setUp(self):
        self.dirs = AgentDirs()
        self.addCleanup(self.dirs.cleanup)

    def assertUsageError(self, result, *needles):
        self.assertEqual(result.returncode, 2, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, f"expected one line, got: {result.stderr!r}")
        for needle in needles:
            self.assertIn(needle, lines[0])

    def write_config(self, text):
        path = os.path.join(self.dirs.root, "agent.yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_bad_flag_value_names_the_flag(self):
        r = run_agent(self.dirs.args() + ["--kube-api-burst", "many"])
        self.assertUsageError(r, "--kube-api-burst", '"many"')

    def test_unknown_flag_is_named(self):
        r = run_agent(self.dirs.args() + ["--gpus-please"])
        self.assertUsageError(r, "--gpus-please")

    def test_bad_env_value_names_the_variable(self):
        r = run_agent(self.dirs.args(), env=clean_env(KUBE_API_QPS="-3"))
        self.assertUsageError(r, "KUBE_API_QPS", '"-3"')

    def test_env_node_name_must_be_a_dns_name(self):
        r = run_agent(["--cdi-root", self.dirs.cdi], env=clean_env(NODE_NAME="Node_1"))
        self.assertUsageError(r, "NODE_NAME", "DNS-1123")

    def test_broken_yaml_names_file_and_line(self):
        path = self.write_config("node-name: n1\nfeature-gates: {MPSSupport: true\n")
        r = run_agent(["--config", path])
        self.assertUsageError(r, path + ":", "invalid YAML")

    def test_unknown_key_in_file_names_file_and_line(self):
        path = self.write_config("node-name: n1\ncdi_root: /x\n")
        r = run_agent(["--config", path])
        self.assertUsageError(r, path + ":2:", "unknown key 'cdi_root'")

    def test_bad_value_in_file_names_file_line_and_key(self):
        path = self.write_config("node-name: n1\nhealthcheck-port: 99999\n")
        r = run_agent(["--config", path])
        self.assertUsageError(r, path + ":2:", "healthcheck-port", "99999")

    def test_config_file_from_env(self):
        path = self.write_config("imex-check: sometimes\n")
        r = run_agent(self.dirs.args(), env=clean_env(NVDRA_CONFIG=path))
        self.assertUsageError(r, path + ":1:", "imex-check", "warn, enforce, off")

    def test_unknown_gate_is_named(self):
        r = run_agent(self.dirs.args() + ["--feature-gates", "MPSSupport=true,GpuTurbo=true"])
        self.assertUsageError(r, "unrecognized feature gate: GpuTurbo")

    def test_malformed_gate_pair_is_named(self):
        r = run_agent(self.dirs.args(), env=clean_env(FEATURE_GATES="DynamicMIG"))
        self.assertUsageError(r, "missing bool value for DynamicMIG")

    def test_broken_gate_rule_is_named(self):
        r = run_agent(self.dirs.args() + ["--feature-gates", "DynamicMIG=true,MPSSupport=true"])
        self.assertUsageError(r, "DynamicMIG is currently mutually exclusive with MPSSupport")

    def test_missing_node_name(self):
        r = run_agent(["--cdi-root", self.dirs.cdi])
        self.assertUsageError(r, "--node-name", "NODE_NAME", "required")


class HelpAndVersion(unittest.TestCase):
    def test_help_lists_upstream_flags_and_env(self):
        r = run_agent(["--help"])
        self.assertEqual(r.returncode, 0)
        for flag in ("--node-name", "--cdi-root", "--nvidia-driver-root", "--kubelet-plugins-directory-path",
                     "--feature-gates", "--drivers", "--nvml-library", "--host-root", "--log-format"):
            self.assertIn(flag, r.stdout)
        self.assertIn("FEATURE_GATES", r.stdout)

    def test_version(self):
        r = run_agent(["--version"])
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^nvdra-agent \d+\.\d+\.\d+")


if __name__ == "__main__":
    unittest.main()
