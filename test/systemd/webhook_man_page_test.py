"""nvdra-webhook's man page (packaging/debian/nvdra-webhook.8) against the binary: every flag of its --help,
every metric family a running webhook serves, its two endpoints and each exit status it gives are
documented, and groff reads the page without a warning."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from nvdra_testlib import clean_env  # noqa: E402
from prerequisites import require  # noqa: E402
from webhook_process import PATH, WEBHOOK, WebhookProcess  # noqa: E402

SRC = os.path.abspath(os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
PAGE = os.path.join(SRC, "packaging", "debian", "nvdra-webhook.8")


def page():
    with open(PAGE) as f:
        return f.read().replace("\\-", "-")


def section(name):
    """The text of one .SH section."""
    m = re.search(rf"^\.SH {name}\n(.*?)(?=^\.SH |\Z)", page(), re.M | re.S)
    return m.group(1) if m else ""


def run(*argv):
    return subprocess.run([WEBHOOK, *argv], capture_output=True, text=True, timeout=60, env=clean_env())


class WebhookManPage(unittest.TestCase):
    def test_every_flag_of_the_help_is_documented(self):
        help_text = run("--help").stdout
        flags = set(re.findall(r"^\s+(?:-\w,)?(--[a-z][a-z0-9-]*)", help_text, re.M))
        self.assertGreaterEqual(flags, {"--tls-cert-file", "--port", "--feature-gates", "--http-endpoint"})
        options = section("OPTIONS")
        self.assertEqual(sorted(f for f in flags if f not in options), [], "flags missing from nvdra-webhook.8")
        self.assertIn("FEATURE_GATES", options)

    def test_every_metric_family_served_is_documented(self):
        with tempfile.TemporaryDirectory() as tmp:
            webhook = WebhookProcess(tmp)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{webhook.metrics_port}/metrics", timeout=30) as r:
                    text = r.read().decode()
            finally:
                webhook.kill()
        families = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
        self.assertIn("nvdra_webhook_requests_total", families)
        metrics = section("METRICS")
        undocumented = sorted(f for f in families
                              if f not in metrics and not (f.startswith("process_") and "process_*" in metrics))
        self.assertEqual(undocumented, [], "metric families missing from nvdra-webhook.8")

    def test_the_endpoints_are_documented(self):
        endpoints = section("ENDPOINTS")
        for path in (f"POST {PATH}", "GET /readyz"):
            self.assertIn(path, endpoints)

    def test_each_exit_status_is_documented(self):
        documented = set(re.findall(r"^\.B (\d+)$", section("EXIT STATUS"), re.M))
        self.assertEqual(documented, {"0", "1", "2"})
        with tempfile.TemporaryDirectory() as tmp:
            missing = os.path.join(tmp, "none.pem")
            seen = {
                "help": run("--help").returncode,
                "usage": run("--port", "1").returncode,  # the certificate flags are required
                "start": run("--tls-cert-file", missing, "--tls-private-key-file", missing, "--port", "0").returncode,
            }
        self.assertEqual(seen, {"help": 0, "usage": 2, "start": 1})

    def test_groff_reads_the_page_without_a_warning(self):
        require(shutil.which("groff"), "groff (Debian groff-base)")
        res = subprocess.run(["groff", "-man", "-ww", "-z", PAGE], capture_output=True, text=True, timeout=60)
        self.assertEqual((res.returncode, res.stderr), (0, ""))


if __name__ == "__main__":
    unittest.main()
