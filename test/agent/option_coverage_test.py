"""No silent no-ops: walks nvdra-agent's option table and gate list (`--dump-options-json`) against
the reviewed table test/agent/option_coverage.txt. Every option, gate and gate variable must name a
CTest test that shows its effect (that test must exist and name what it is cited for: the option, one of
its variables, or the gate), or a value the agent refuses at start:
exit 2, one line naming it, through the flag, every environment variable and the config file; the
flag form of that line must be shown in README.md. Upstream deployment settings nvdra ignores must
be listed as ignored in --help."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

SRC = os.path.abspath(os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BIN = os.path.abspath(os.environ.get("NVDRA_BINARY_DIR", os.path.join(SRC, "build")))
AGENT = os.path.join(BIN, "agent", "nvdra-agent")
TABLE = os.path.join(SRC, "test", "agent", "option_coverage.txt")
IGNORED_GROUP = "Ignored (upstream deployment settings with no meaning for nvdra):"


def read_table():
    entries, awaiting = {}, set()
    with open(TABLE) as f:
        for number, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if words[0] == "awaiting":
                awaiting.update(words[1:])
                continue
            if words[0] not in ("option", "gate", "env") or len(words) < 3:
                raise AssertionError(f"{TABLE}:{number}: expected 'option|gate|env NAME EVIDENCE...'")
            key = (words[0], words[1])
            if key in entries:
                raise AssertionError(f"{TABLE}:{number}: {words[0]} {words[1]} is listed twice")
            entries[key] = words[2:]
    return entries, awaiting


def ctest_tests():
    """{CTest name: its command line} of the build tree (`ctest --show-only=json-v1`)."""
    out = subprocess.run([shutil.which("ctest") or "ctest", "--test-dir", BIN, "--show-only=json-v1"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return {t["name"]: t.get("command", []) for t in json.loads(out)["tests"]}


def gtest_body(name):
    """The source text of the GoogleTest `Suite.Name` (from its TEST line to the next), or None."""
    suite, _, test = name.partition(".")
    head = re.compile(rf"^TEST(_F|_P)?\(\s*{re.escape(suite)}\s*,\s*{re.escape(test)}\s*\)", re.M)
    for folder, _, files in os.walk(os.path.join(SRC, "test")):
        for file in (f for f in files if f.endswith(".cpp")):
            with open(os.path.join(folder, file)) as f:
                text = f.read()
            m = head.search(text)
            if m:
                rest = re.search(r"^TEST(_F|_P)?\(", text[m.end():], re.M)
                return text[m.start():m.end() + rest.start()] if rest else text[m.start():]
    return None


def test_text(name, command):
    """What a cited test does, as text: the Python script it runs, or the GoogleTest's body."""
    scripts = [a for a in command if a.endswith(".py") and not a.endswith("run_unittest.py")]
    if scripts:
        with open(scripts[0]) as f:
            return f.read()
    return gtest_body(name)


def run_agent(args, env=None):
    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(env or {})}
    return subprocess.run([AGENT, "--node-name=n", *args, "devices"], capture_output=True, text=True,
                          env=full_env, timeout=60)


class OptionCoverage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        dump = subprocess.run([AGENT, "--dump-options-json"], capture_output=True, text=True, check=True, timeout=60)
        cls.dump = json.loads(dump.stdout)
        cls.entries, cls.awaiting = read_table()
        cls.tmp = tempfile.TemporaryDirectory()
        cls.empty_config = os.path.join(cls.tmp.name, "empty.yaml")
        open(cls.empty_config, "w").close()
        with open(os.path.join(SRC, "README.md")) as f:
            cls.readme = f.read()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def surface(self):
        keys = {("option", o["name"]) for o in self.dump["options"]}
        keys |= {("gate", g["name"]) for g in self.dump["gates"]}
        keys |= {("env", e["env"]) for e in self.dump["gateEnvs"]}
        return keys

    def test_every_option_gate_and_gate_variable_has_an_entry_and_no_entry_is_stale(self):
        self.assertGreater(len(self.dump["options"]), 30)
        self.assertGreater(len(self.dump["gates"]), 15)
        surface = self.surface()
        self.assertEqual(sorted(surface - set(self.entries)), [], "entries missing from option_coverage.txt")
        self.assertEqual(sorted(set(self.entries) - surface), [], "option_coverage.txt names things the agent lacks")

    def test_every_named_test_exists(self):
        names = set(ctest_tests())
        self.assertGreater(len(names), 100)
        missing = sorted({w for ev in self.entries.values() for w in ev
                          if w != "ignored" and not w.startswith("refuse=") and w not in names} - self.awaiting)
        self.assertEqual(missing, [], "option_coverage.txt names tests that `ctest -N` does not list")
        arrived = sorted(self.awaiting & names)
        self.assertEqual(arrived, [], "these tests exist now: drop them from the 'awaiting' line")

    def spellings(self, kind, name):
        """The words a test that sets this uses: the option (flag and file key) and its variables, the
        gate, or the variable."""
        if kind == "option":
            option = next(o for o in self.dump["options"] if o["name"] == name)
            return [name, *option["envs"]]
        return [name]

    def test_every_named_test_sets_what_it_is_cited_for(self):
        tests = ctest_tests()
        silent = []
        for (kind, name), evidence in sorted(self.entries.items()):
            for cited in (w for w in evidence if w in tests):
                text = test_text(cited, tests[cited])
                if text is None or not any(word in text for word in self.spellings(kind, name)):
                    silent.append(f"{kind} {name}: {cited}")
        self.assertEqual(silent, [], "these cited tests never name what they are cited for (set it through the "
                                     "agent's flag, environment or config file, or cite another test)")

    def test_ignored_options_are_exactly_those_help_lists_as_ignored(self):
        flagged = {o["name"] for o in self.dump["options"] if o["ignored"]}
        listed = {name for (kind, name), ev in self.entries.items() if kind == "option" and "ignored" in ev}
        self.assertEqual(flagged, listed)
        help_text = subprocess.run([AGENT, "--help"], capture_output=True, text=True, check=True).stdout
        self.assertIn(IGNORED_GROUP, help_text)
        ignored_part = help_text.split(IGNORED_GROUP, 1)[1]
        for name in flagged:
            self.assertRegex(ignored_part, rf"--{re.escape(name)}\b.*Ignored")
            self.assertNotRegex(help_text.split(IGNORED_GROUP, 1)[0], rf"--{re.escape(name)}\b")

    def assertRefused(self, result, names, what):
        self.assertEqual(result.returncode, 2, f"{what}: not refused: {result.stderr}")
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        self.assertEqual(len(lines), 1, f"{what}: the refusal must be one line: {result.stderr}")
        self.assertTrue(lines[0].startswith("nvdra-agent: "), lines[0])
        self.assertTrue(any(n in lines[0] for n in names), f"{what}: the line does not name it: {lines[0]}")
        return lines[0]

    def write_config(self, text):
        path = os.path.join(self.tmp.name, "probe.yaml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def probes(self):
        for (kind, name), evidence in sorted(self.entries.items()):
            for value in (w.split("=", 1)[1] for w in evidence if w.startswith("refuse=")):
                yield kind, name, value

    def test_every_refusal_stops_the_agent_with_one_line_naming_it_from_every_source(self):
        options = {o["name"]: o for o in self.dump["options"]}
        probed = 0
        for kind, name, value in self.probes():
            probed += 1
            with self.subTest(kind=kind, name=name, value=value):
                if kind == "option":
                    line = self.assertRefused(run_agent([f"--config={self.empty_config}", f"--{name}={value}"]),
                                              [f"--{name}"], f"--{name}={value}")
                    for env in options[name]["envs"]:
                        self.assertRefused(run_agent([f"--config={self.empty_config}"], {env: value}), [env],
                                           f"{env}={value}")
                    path = self.write_config(json.dumps({name: value}) + "\n")
                    self.assertRefused(run_agent([f"--config={path}"]), [name], f"file {name}: {value}")
                elif kind == "gate":
                    names = [name]
                    line = self.assertRefused(
                        run_agent([f"--config={self.empty_config}", f"--feature-gates={name}={value}"]), names,
                        f"--feature-gates={name}={value}")
                    self.assertRefused(run_agent([f"--config={self.empty_config}"], {"FEATURE_GATES": f"{name}={value}"}),
                                       names, f"FEATURE_GATES={name}={value}")
                    path = self.write_config(f"feature-gates:\n  {name}: {value}\n")
                    self.assertRefused(run_agent([f"--config={path}"]), names, f"file feature-gates {name}")
                else:
                    line = self.assertRefused(run_agent([f"--config={self.empty_config}"], {name: value}), [name],
                                              f"{name}={value}")
                self.assertTrue(line in self.readme, f"README.md must show this refusal line verbatim:\n{line}")
        # Every refuse= word of the table's text was probed (guards the parser, not a fixed count: the
        # count falls as refused gates get implemented).
        with open(TABLE) as f:
            words = [w for line in f if not line.lstrip().startswith("#") for w in line.split() if w.startswith("refuse=")]
        self.assertEqual(probed, len(words))
        self.assertGreater(probed, 0)


if __name__ == "__main__":
    unittest.main()
