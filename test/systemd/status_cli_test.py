"""nvdractl and busctl against the status service on a private dbus-daemon that uses the D-Bus
policy shipped in packaging/debian: introspection, property reads, tables and JSON, updates,
a read-only interface, and the refusals (not running, no bus, a user outside the group)."""
import json
import os
import pwd
import signal
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from private_dbus import PrivateDbus, read_line  # noqa: E402
from prerequisites import require  # noqa: E402

SRC = os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.environ.get("NVDRA_BINARY_DIR", os.path.join(SRC, "build"))
NVDRACTL = os.path.join(BIN, "agent", "ctl", "nvdractl")
FIXTURE = os.path.join(BIN, "test", "systemd", "status_fixture")
POLICY = os.path.join(SRC, "packaging", "debian", "io.nvdra.Agent1.conf")
OBJ = ["io.nvdra.Agent1", "/io/nvdra/Agent1"]
IS_ROOT = os.geteuid() == 0
TAG = f"nt{os.getpid()}"
GROUP, MEMBER, OUTSIDER = f"{TAG}g", f"{TAG}in", f"{TAG}out"


def shipped_policy():
    """The packaged policy with the test's throwaway group (or, unprivileged, our own user)."""
    with open(POLICY) as f:
        text = f.read()
    assert 'group="nvdra"' in text and 'user="root"' in text, "policy file lost its group/root rules"
    text = text.replace('group="nvdra"', f'group="{GROUP if IS_ROOT else "root"}"')
    if not IS_ROOT:
        text = text.replace('user="root"', f'user="{pwd.getpwuid(os.geteuid()).pw_name}"')
    return text


def run(cmd, address, user=None):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "DBUS_SYSTEM_BUS_ADDRESS": address}
    for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"):
        if k in os.environ:
            env[k] = os.environ[k]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", *cmd]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


def remove_test_users():
    for user in (MEMBER, OUTSIDER):
        subprocess.run(["userdel", user], check=False, capture_output=True)
    subprocess.run(["groupdel", GROUP], check=False, capture_output=True)


def stop_process(proc):
    proc.terminate()
    proc.wait(timeout=20)
    proc.stdout.close()


class StatusServiceOverDbus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # Class cleanups run even when setUpClass fails half-way: no user is left behind.
        if IS_ROOT:
            cls.addClassCleanup(remove_test_users)
            subprocess.run(["groupadd", "--system", GROUP], check=True)
            for user, extra in ((MEMBER, ["-G", GROUP]), (OUTSIDER, [])):
                subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                                "--user-group", *extra, user], check=True)
        cls.bus = PrivateDbus(shipped_policy())
        cls.addClassCleanup(cls.bus.close)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=cls.bus.address)
        cls.agent = subprocess.Popen([FIXTURE], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        cls.addClassCleanup(stop_process, cls.agent)
        if read_line(cls.agent.stdout, 20.0) != "serving":
            raise RuntimeError("status fixture did not acquire io.nvdra.Agent1")

    def ctl(self, *args, user=None):
        return run([NVDRACTL, *args], self.bus.address, user)

    def test_introspection_lists_every_property_and_method(self):
        out = run(["busctl", "introspect", *OBJ, "io.nvdra.Agent1"], self.bus.address)
        self.assertEqual(out.returncode, 0, out.stderr)
        members = {line.split()[0]: line.split() for line in out.stdout.splitlines() if line.startswith(".")}
        for prop, sig in (("Version", "s"), ("NodeName", "s"), ("Ready", "b"), ("Drivers", "a(ssbs)"),
                          ("Devices", "a(sssssss)"), ("PreparedClaims", "a(sssssas)"), ("ImexMode", "s"),
                          ("ImexUnit", "s"), ("ImexActiveState", "s"), ("ImexSubState", "s"),
                          ("FabricManager", "s"), ("FabricPartitions", "a(tasas)"), ("LastErrors", "a(tss)")):
            self.assertIn("." + prop, members, out.stdout)
            self.assertEqual(members["." + prop][1:3], ["property", sig])
            self.assertNotIn("writable", members["." + prop])
        self.assertIn("emits-change", members[".Devices"])
        self.assertIn("emits-invalidation", members[".PreparedClaims"])  # its value grows with the claims
        self.assertEqual(members[".GetClaim"][1:4], ["method", "s", "(sssssas)"])
        self.assertEqual(members[".GetStatusJson"][1:4], ["method", "-", "s"])

    def test_get_property_returns_the_agents_values(self):
        out = run(["busctl", "get-property", *OBJ, "io.nvdra.Agent1", "NodeName", "Ready"], self.bus.address)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.split("\n")[:2], ['s "gpu-node-a"', "b true"])

    def test_properties_cannot_be_set(self):
        out = run(["busctl", "set-property", *OBJ, "io.nvdra.Agent1", "NodeName", "s", "evil"], self.bus.address)
        self.assertNotEqual(out.returncode, 0)
        again = run(["busctl", "get-property", *OBJ, "io.nvdra.Agent1", "NodeName"], self.bus.address)
        self.assertEqual(again.stdout.strip(), 's "gpu-node-a"')

    def test_status_table_shows_node_readiness_and_drivers(self):
        out = self.ctl("status")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("gpu-node-a", out.stdout)
        self.assertRegex(out.stdout, r"ready\s+yes")
        self.assertRegex(out.stdout, r"gpu\.nvidia\.com\s+registered\s+yes")

    def test_devices_claims_and_imex_tables_are_aligned(self):
        for command, header in (("devices", "HEALTH"), ("claims", "DEVICES"), ("imex", "SUB")):
            out = self.ctl(command)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.splitlines()
            col = lines[0].index(header)
            for line in lines[1:]:
                self.assertNotEqual(line[col], " ", f"{command}: column {header} misaligned:\n{out.stdout}")

    def test_json_output_parses_and_names_fields(self):
        out = self.ctl("-o", "json", "claims")
        self.assertEqual(out.returncode, 0, out.stderr)
        claims = json.loads(out.stdout)
        self.assertEqual([c["name"] for c in claims], ["train-gpu", "imex-channel"])
        imex = json.loads(self.ctl("imex", "-o", "json").stdout)
        self.assertEqual(imex, {"mode": "hostManaged", "unit": "nvidia-imex.service", "activeState": "active",
                                "subState": "running"})

    def test_an_update_is_visible_to_the_next_call(self):
        self.agent.send_signal(signal.SIGUSR1)
        self.assertEqual(read_line(self.agent.stdout, 20.0), "updated")
        devices = json.loads(self.ctl("devices", "-o", "json").stdout)
        self.assertEqual(devices[0]["health"], "unhealthy")

    def test_a_group_member_may_read(self):
        require(IS_ROOT, "root", "to create throwaway users for the group check")
        out = self.ctl("status", user=MEMBER)
        self.assertEqual(out.returncode, 0, out.stderr)

    def test_a_user_outside_the_group_is_refused(self):
        require(IS_ROOT, "root", "to create throwaway users for the group check")
        out = self.ctl("status", user=OUTSIDER)
        self.assertEqual(out.returncode, 4, out.stdout + out.stderr)
        self.assertIn("access denied", out.stderr)
        self.assertIn('"nvdra"', out.stderr)
        busctl = run(["busctl", "get-property", *OBJ, "io.nvdra.Agent1", "NodeName"], self.bus.address, OUTSIDER)
        self.assertNotEqual(busctl.returncode, 0)


class NoAgent(unittest.TestCase):
    def test_no_agent_on_the_bus_says_not_running(self):
        bus = PrivateDbus(shipped_policy())
        try:
            out = run([NVDRACTL, "status"], bus.address)
        finally:
            bus.close()
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertIn("the nvdra agent is not running", out.stderr)
        self.assertIn("systemctl start nvdra-agent", out.stderr)

    def test_no_bus_at_all_says_so(self):
        out = run([NVDRACTL, "devices"], "unix:path=/nonexistent/nvdra-no-bus")
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertIn("cannot connect to the system bus (unix:path=/nonexistent/nvdra-no-bus)", out.stderr)


if __name__ == "__main__":
    unittest.main()
