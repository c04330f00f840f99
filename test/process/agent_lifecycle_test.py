"""nvdra-agent's lifecycle from outside: systemd notifications, logs, signals, exit status."""
import json
import os
import select
import time
import signal
import tempfile
import unittest

from nvdra_testlib import AgentDirs, NotifySocket, clean_env, start_agent, stop_agent


class Lifecycle(unittest.TestCase):
    def setUp(self):
        self.dirs = AgentDirs()
        self.addCleanup(self.dirs.cleanup)
        self.notify = NotifySocket(self.dirs.root)
        self.addCleanup(self.notify.close)

    def start(self, extra_args=(), **env):
        proc = start_agent(self.dirs.args() + list(extra_args),
                           env=clean_env(NOTIFY_SOCKET=self.notify.path, **env))
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        self.wait_serving()
        return proc

    def wait_serving(self):
        self.notify.wait_for("STATUS=")
        # These tests are about steady state; test_signal_during_start_up covers the start-up window.
        deadline = time.monotonic() + 20
        while len([n for n in os.listdir(self.dirs.registrar) if n.endswith("-reg.sock")]) < 2 \
                if os.path.isdir(self.dirs.registrar) else True:
            self.assertLess(time.monotonic(), deadline, "plugins did not start")
            select.select([], [], [], 0.01)

    def test_sigterm_sends_stopping_and_exits_zero(self):
        proc = self.start()
        self.notify.wait_for("STATUS=")
        code, seconds, err = stop_agent(proc, signal.SIGTERM)
        self.assertEqual(code, 0, err)
        self.notify.wait_for("STOPPING=1")
        print(f"\nSIGTERM to exit: {seconds * 1000:.1f} ms")

    def test_signal_during_start_up_exits_zero(self):
        # A signal that lands while the plugins are starting (work on the worker pool being awaited)
        # must stop the agent as cleanly as one in steady state. Repeated: the window is narrow.
        for attempt in range(20):
            notify = NotifySocket(tempfile.mkdtemp(dir=self.dirs.root))  # fresh: no earlier run's messages
            proc = start_agent(self.dirs.args(), env=clean_env(NOTIFY_SOCKET=notify.path))
            notify.wait_for("STATUS=")
            code, _, err = stop_agent(proc, signal.SIGINT if attempt % 2 else signal.SIGTERM)
            notify.close()
            self.assertEqual(code, 0, f"attempt {attempt}: {err}")

    def test_every_thread_leaves_the_stop_signals_to_the_loop(self):
        # A handler may run on any thread that does not block the signal; one parked in a library's
        # futex (gRPC's pools) under ThreadSanitizer never runs it. Every thread blocks them and the
        # loop reads them from a signalfd.
        proc = self.start()
        stop_bits = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGHUP - 1))
        tasks = os.listdir(f"/proc/{proc.pid}/task")
        self.assertGreater(len(tasks), 4, "expected the worker pool and gRPC's threads")
        for tid in tasks:
            with open(f"/proc/{proc.pid}/task/{tid}/status") as f:
                fields = dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
            self.assertEqual(int(fields["SigBlk"], 16) & stop_bits, stop_bits,
                             f"thread {tid} ({fields['Name']}) lets a stop signal in")
        code, _, err = stop_agent(proc, signal.SIGHUP)
        self.assertEqual(code, 0, err)

    def test_sigint_also_exits_zero(self):
        proc = self.start()
        self.notify.wait_for("STATUS=")
        code, _, err = stop_agent(proc, signal.SIGINT)
        self.assertEqual(code, 0, err)

    def test_watchdog_is_pinged_from_the_loop(self):
        proc = self.start(WATCHDOG_USEC="200000")
        self.notify.wait_for("WATCHDOG=1")
        self.notify.messages.clear()
        self.notify.wait_for("WATCHDOG=1")  # and again: it is a timer, not a one-off
        code, _, err = stop_agent(proc)
        self.assertEqual(code, 0, err)

    def test_json_logs_are_one_object_per_line(self):
        proc = self.start(["--log-format", "json"])
        self.notify.wait_for("STATUS=")
        code, _, err = stop_agent(proc)
        self.assertEqual(code, 0, err)
        lines = [line for line in err.splitlines() if line.strip()]
        self.assertTrue(lines)
        for line in lines:
            record = json.loads(line)
            self.assertEqual(set(record), {"ts", "level", "logger", "msg"})

    def levels(self, args):
        """The log levels one fresh agent writes from start to SIGTERM."""
        self.dirs = AgentDirs()
        self.addCleanup(self.dirs.cleanup)
        self.notify = NotifySocket(self.dirs.root)
        self.addCleanup(self.notify.close)
        proc = self.start(["--log-format", "json", *args])
        code, _, err = stop_agent(proc)
        self.assertEqual(code, 0, err)
        return {json.loads(line)["level"] for line in err.splitlines() if line.strip()}

    def test_log_level_and_klog_verbosity_choose_what_is_logged(self):
        default = self.levels([])
        self.assertIn("info", default)
        self.assertNotIn("debug", default)
        self.assertFalse(self.levels(["--log-level", "warn"]) & {"trace", "debug", "info"})
        # -v is klog's: 0-3 are info, 4-5 debug, 6+ trace; --log-level, when given, wins over it.
        self.assertNotIn("debug", self.levels(["-v", "2"]))
        self.assertIn("debug", self.levels(["-v", "4"]))
        self.assertFalse(self.levels(["-v", "6", "--log-level", "error"]) & {"trace", "debug", "info", "warning"})

    def test_journal_stream_gets_priority_prefixes(self):
        # JOURNAL_STREAM names the stream the agent's stderr is connected to: here, a file we read back.
        log_path = os.path.join(self.dirs.root, "stderr.log")
        with open(log_path, "w") as log:
            st = os.fstat(log.fileno())
            import subprocess
            from nvdra_testlib import agent_binary
            proc = subprocess.Popen([agent_binary()] + self.dirs.args(), stderr=log, stdout=subprocess.DEVNULL,
                                    env=clean_env(NOTIFY_SOCKET=self.notify.path,
                                                  JOURNAL_STREAM=f"{st.st_dev}:{st.st_ino}"))
            self.wait_serving()
            proc.send_signal(signal.SIGTERM)
            self.assertEqual(proc.wait(timeout=10), 0)
        with open(log_path) as f:
            lines = [line for line in f.read().splitlines() if line]
        self.assertTrue(lines)
        for line in lines:
            self.assertRegex(line, r"^<[0-7]>[a-z.-]+: ")

    def test_host_managed_imex_overrides_are_logged(self):
        proc = self.start(["--feature-gates", "HostManagedIMEX=true"])
        self.notify.wait_for("STATUS=")
        code, _, err = stop_agent(proc)
        self.assertEqual(code, 0, err)
        self.assertIn("HostManagedIMEX is enabled; forcing IMEXDaemonsWithDNSNames=false", err)
        self.assertIn("HostManagedIMEX is enabled; forcing ComputeDomainCliques=false", err)


if __name__ == "__main__":
    unittest.main()
