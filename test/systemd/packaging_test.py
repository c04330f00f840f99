"""Checks on what the Debian package ships, from the source tree: every agent option is documented in
the conffile and the man page, the documented values are accepted, and the unit passes
`systemd-analyze verify`. The package itself is built and checked by deb_test.py."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

SRC = os.path.abspath(os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BIN = os.path.abspath(os.environ.get("NVDRA_BINARY_DIR", os.path.join(SRC, "build")))
DEBIAN = os.path.join(SRC, "packaging", "debian")
AGENT = os.path.join(BIN, "agent", "nvdra-agent")


def read(*parts):
    with open(os.path.join(*parts)) as f:
        return f.read()


def agent_options():
    """Long option names from `nvdra-agent --help` (the option table), less --config/--help/--version."""
    out = subprocess.run([AGENT, "--help"], capture_output=True, text=True, check=True).stdout
    names = set(re.findall(r"^\s+(?:-\w,)?--([a-z0-9][a-z0-9_-]*)", out, re.M))
    return sorted(names - {"config", "help", "version"})


def uncommented_conffile():
    """agent.yaml with every documented `# key: value` example switched on."""
    lines = []
    for line in read(DEBIAN, "agent.yaml").splitlines(keepends=True):
        m = re.match(r"^# ([a-z][a-z0-9-]*:.*)$", line) or re.match(r"^#(   [A-Za-z]+: .*)$", line)
        lines.append(m.group(1) + "\n" if m else line)
    return "".join(lines)


def verify_unit(root):
    """systemd-analyze verify inside `root`; returns (returncode, stderr). Warnings count as failure."""
    units = os.path.join(root, "lib", "systemd", "system")
    os.makedirs(units, exist_ok=True)
    for target in ("sysinit.target", "basic.target", "multi-user.target", "network-online.target",
                   "shutdown.target", "sockets.target", "paths.target", "timers.target", "slices.target",
                   "local-fs.target", "swap.target", "network.target", "dbus.socket", "dbus.service",
                   "system.slice", "-.slice", "systemd-modules-load.service"):
        src = os.path.join("/lib/systemd/system", target)
        if os.path.exists(src) and not os.path.exists(os.path.join(units, target)):
            shutil.copy(src, units)
    res = subprocess.run(["systemd-analyze", "verify", "--man=no", f"--root={root}", "nvdra-agent.service"],
                         capture_output=True, text=True, timeout=120)
    return res.returncode, res.stderr


class ConffileAndManPage(unittest.TestCase):
    def test_every_option_is_documented_in_the_conffile(self):
        text = read(DEBIAN, "agent.yaml")
        missing = [o for o in agent_options() if not re.search(rf"^#? ?{re.escape(o)}:", text, re.M)]
        self.assertEqual(missing, [], "options without an entry in packaging/debian/agent.yaml")

    def test_every_option_is_in_the_man_page(self):
        text = read(DEBIAN, "nvdra-agent.8").replace("\\-", "-")
        missing = [o for o in agent_options() if f"--{o}=" not in text]
        self.assertEqual(missing, [], "options missing from packaging/debian/nvdra-agent.8")

    def test_documented_values_are_accepted_by_the_agent(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "agent.yaml")
            with open(path, "w") as f:
                f.write(uncommented_conffile())
            # `devices` loads and validates the whole configuration, then exits without serving.
            res = subprocess.run([AGENT, f"--config={path}", "devices"], capture_output=True, text=True,
                                 timeout=60, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        self.assertNotEqual(res.returncode, 2, res.stderr)
        # Config errors name the file and line ("…/agent.yaml:12: …"); none may appear.
        self.assertNotIn("agent.yaml:", res.stderr)

    def test_unit_verifies_and_orders_without_requiring_imex(self):
        unit = read(DEBIAN, "nvdra-agent.service")
        self.assertIn("Type=notify", unit)
        self.assertRegex(unit, r"(?m)^WatchdogSec=\d+")
        self.assertRegex(unit, r"(?m)^After=.*nvidia-imex\.service")
        self.assertNotRegex(unit, r"(?m)^(Requires|BindsTo|Requisite)=.*nvidia-imex")
        with tempfile.TemporaryDirectory() as root:
            os.makedirs(os.path.join(root, "usr", "sbin"))
            shutil.copy(AGENT, os.path.join(root, "usr", "sbin", "nvdra-agent"))
            os.makedirs(os.path.join(root, "lib", "systemd", "system"))
            shutil.copy(os.path.join(DEBIAN, "nvdra-agent.service"), os.path.join(root, "lib", "systemd", "system"))
            code, err = verify_unit(root)
        self.assertEqual((code, err), (0, ""))


if __name__ == "__main__":
    unittest.main()
