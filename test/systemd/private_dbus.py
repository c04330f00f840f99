"""A dbus-daemon of the test's own, configured like Debian's system bus (deny by default) plus
the policy file nvdra ships, so tests exercise the real policy without touching the host's bus."""
import os
import select
import subprocess
import tempfile
import time

SYSTEM_LIKE = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Introspectable"/>
  </policy>
  <include>{policy}</include>
</busconfig>
"""

# For tests whose stand-in org.freedesktop.systemd1 (test/imex/fake_systemd1) serves beside the agent.
SYSTEMD_AND_AGENT = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <policy context="default">
    <allow own="org.freedesktop.systemd1"/>
    <allow own="io.nvdra.Agent1"/>
    <allow send_destination="org.freedesktop.systemd1"/>
    <allow send_destination="io.nvdra.Agent1"/>
  </policy>
</busconfig>
"""


class PrivateDbus:
    def __init__(self, policy_text):
        self._tmp = tempfile.TemporaryDirectory(prefix="nvdra-dbus-")
        # Other users (the refused and the allowed test users) must reach the socket.
        os.chmod(self._tmp.name, 0o755)
        self.socket = os.path.join(self._tmp.name, "system_bus_socket")
        policy = os.path.join(self._tmp.name, "io.nvdra.Agent1.conf")
        with open(policy, "w") as f:
            f.write(policy_text)
        config = os.path.join(self._tmp.name, "bus.conf")
        with open(config, "w") as f:
            f.write(SYSTEM_LIKE.format(socket=self.socket, policy=policy))
        self.proc = subprocess.Popen(["dbus-daemon", f"--config-file={config}", "--nofork", "--nopidfile",
                                      "--print-address=1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = read_line(self.proc.stdout, 20.0)
        if not line:
            raise RuntimeError("dbus-daemon did not start")
        self.address = "unix:path=" + self.socket

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)
        self.proc.stdout.close()
        self._tmp.cleanup()


def read_line(stream, timeout):
    """Reads one line from a pipe, waiting at most `timeout` seconds for it; '' on timeout/EOF."""
    deadline = time.monotonic() + timeout
    data = b""
    fd = stream.fileno()
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            return ""
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1)
        if not chunk:
            return ""
        data += chunk
    return data.decode().strip()
