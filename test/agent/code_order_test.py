"""agent/text-order.txt (contrib/dev/code-order) has its effect: in a tree that links with it (release,
lld), the functions the list names come first in the agent's .text, together, and the rest after them;
in a tree that does not (sanitizers), they lie where the compiler put them. The list must also still
name the release agent's functions, and name what an agent runs now: contrib/dev/code-order is run again
(under callgrind) and at most 3 % of the functions it finds may be missing from the list. A list gone stale
lays out less (three sessions of changes had left 5.5 % of a start's functions out of it, which cost 0.9 MiB
of resident code), and this test says to regenerate it."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from prerequisites import require

SRC = os.path.abspath(os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BIN = os.path.abspath(os.environ.get("NVDRA_BINARY_DIR", os.path.join(SRC, "build")))
ORDERED = os.environ.get("NVDRA_TEXT_ORDER") == "ON"
AGENT = os.path.join(BIN, "agent", "nvdra-agent")
REGENERATE = "regenerate it with contrib/dev/code-order (needs valgrind and a release tree)"
STALE_AT_MOST = 0.03


def listed():
    with open(os.path.join(SRC, "agent", "text-order.txt")) as f:
        return {line.strip() for line in f if line.strip() and not line.startswith("#")}


def text_section(binary):
    out = subprocess.run(["readelf", "-SW", binary], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+\.text\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
        if m:
            return int(m.group(1), 16), int(m.group(2), 16)
    raise AssertionError(f"{binary} has no .text")


def functions(binary):
    """{symbol: address} of the functions in the binary's symbol table."""
    out = subprocess.run(["nm", "--defined-only", binary], check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            found[parts[2]] = int(parts[0], 16)
    return found


class CodeOrder(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.names = listed()
        cls.functions = functions(AGENT)
        cls.start, cls.size = text_section(AGENT)

    def test_the_list_still_names_the_agents_functions(self):
        self.assertGreater(len(self.names), 1000, "agent/text-order.txt is nearly empty; " + REGENERATE)
        present = len(self.names & self.functions.keys())
        if not ORDERED:
            # A sanitizer tree inlines differently and keeps gRPC shared: the list is the release link's.
            self.assertGreater(present, 0, "no listed function in the agent")
            return
        self.assertGreaterEqual(present / len(self.names), 0.8,
                                f"only {present} of the {len(self.names)} functions agent/text-order.txt names "
                                f"are still in the agent; " + REGENERATE)

    def test_the_listed_functions_come_first_where_the_link_uses_the_list(self):
        at = [self.functions[n] - self.start for n in self.names if n in self.functions]
        at = [a for a in at if 0 <= a < self.size]
        # Where the list orders the link, everything it names ends well before the end of .text (about
        # 55 %: gRPC's archives have a section per file, not per function, so whole files come along);
        # where not, what an agent calls is spread through all of it.
        end = max(at)
        reach = end / self.size
        if ORDERED:
            self.assertLess(reach, 0.8, f"the listed functions reach {reach:.0%} into .text: the link did "
                                        "not lay them out first")
            after = [n for n, a in self.functions.items() if n not in self.names and end < a - self.start < self.size]
            self.assertTrue(after, "no unlisted function after the listed")
        else:
            self.assertGreater(reach, 0.9, f"the listed functions end {reach:.0%} into .text in a tree "
                                           "that does not link with the list")

    def test_the_list_names_what_an_agent_runs_now(self):
        if not ORDERED:
            return  # the list is the release link's; a sanitizer tree runs other functions
        require(shutil.which("valgrind"), "valgrind", "contrib/dev/code-order runs the agent under callgrind")
        with tempfile.TemporaryDirectory() as work:
            fresh_list = os.path.join(work, "text-order.txt")
            run = subprocess.run([sys.executable, os.path.join(SRC, "contrib", "dev", "code-order"), "--build-dir", BIN,
                                  "--out", fresh_list], capture_output=True, text=True, timeout=240)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            with open(fresh_list) as f:
                fresh = {line.strip() for line in f if line.strip() and not line.startswith("#")}
        unlisted = sorted(fresh - self.names)
        self.assertLessEqual(len(unlisted) / len(fresh), STALE_AT_MOST,
                             f"{len(unlisted)} of the {len(fresh)} functions an agent runs now are not in "
                             f"agent/text-order.txt (e.g. {unlisted[:5]}); " + REGENERATE)


if __name__ == "__main__":
    unittest.main()
