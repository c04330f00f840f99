"""contrib/dev/suite-summary, the closing screen of every suite run: counts, skips against the
allow-list, and each failed test named again with the end of its output (a CI log keeps only its
last screen, so a failure must be readable there)."""
import os
import subprocess
import tempfile
import unittest

SOURCE = os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE, "contrib", "dev", "suite-summary")


def junit(cases):
    """A CTest-shaped JUnit file: cases are (name, status, output)."""
    body = "".join(
        f'<testcase name="{name}" status="{status}">'
        + ('<failure message="Failed"/>' if status == "fail" else "")
        + ('<skipped message="skipped"/>' if status == "notrun" else "")
        + f"<system-out>{output}</system-out></testcase>"
        for name, status, output in cases)
    f = tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False)
    f.write(f"<testsuite>{body}</testsuite>")
    f.close()
    return f.name


def summary(*suites, ci=False):
    env = dict(os.environ, CI="true" if ci else "false")
    return subprocess.run([SCRIPT, *suites], capture_output=True, text=True, env=env, timeout=60)


class SuiteSummary(unittest.TestCase):
    def test_a_failed_test_is_named_with_the_end_of_its_output_after_everything_else(self):
        noise = "\n".join(f"line {i}" for i in range(200))
        path = junit([("fine", "run", "ok"), ("broken", "fail", noise + "\nAssertionError: the reason")])
        self.addCleanup(os.unlink, path)
        out = summary(f"release={path}").stdout
        self.assertIn("== failed [release] broken", out)
        self.assertIn("AssertionError: the reason", out)
        self.assertNotIn("line 100\n", out, "only the end of the output")
        self.assertLess(out.index("AssertionError"), out.index("suite summary:"))
        self.assertTrue(out.rstrip().endswith("total: 1 passed, 1 failed, 0 skipped"))

    def test_a_skip_off_the_allow_list_fails_in_ci_and_names_its_reason(self):
        path = junit([("sometimes", "notrun", "missing prerequisite: a tool")])
        self.addCleanup(os.unlink, path)
        local, ci = summary(f"release={path}"), summary(f"release={path}", ci=True)
        self.assertEqual(local.returncode, 0)
        self.assertIn("skipped [release] sometimes: missing prerequisite: a tool", local.stdout)
        self.assertEqual(ci.returncode, 1)
        self.assertIn("release/sometimes", ci.stderr)

    def test_a_suite_without_results_fails(self):
        out = summary("asan=/nonexistent/asan.xml")
        self.assertEqual(out.returncode, 1)
        self.assertIn("asan       did not run", out.stdout)


if __name__ == "__main__":
    unittest.main()
