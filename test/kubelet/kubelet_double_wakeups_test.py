"""The kubelet double's plugin watcher reacts to events, as kubelet's fsnotify watcher does, instead of at
its next poll: a socket appearing in the registration directory (inotify), a registration finishing on its
thread, input on a descriptor the caller names. Each wait here has a poll fallback of 2 ms, so a test
cannot tell a wake-up from a poll by time; it uses waits far longer than the poll and checks which source
ended them."""
import os
import socket
import tempfile
import threading
import time
import unittest

from kubelet_double.wakeups import Wakeups
from prerequisites import require

LONG = 30.0  # a wait that only an event ends within the test's deadline


class WakeupsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="registry-")
        self.wakeups = Wakeups(self.dir)
        self.addCleanup(self.wakeups.close)

    def timed_wait(self, extra=()):
        start = time.monotonic()
        self.wakeups.wait(LONG, extra)
        return time.monotonic() - start

    def test_a_socket_made_in_the_directory_ends_a_wait(self):
        require(self.wakeups.watching, "inotify on the registration directory (Linux, libc's inotify_init1)")
        path = os.path.join(self.dir, "plugin-reg.sock")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(listener.close)
        threading.Timer(0.05, listener.bind, args=(path,)).start()
        self.assertLess(self.timed_wait(), LONG / 2, "the new socket did not wake the wait")
        self.assertTrue(os.path.exists(path))
        self.assertFalse(self.wakeups.pending())

    def test_a_notify_from_another_thread_ends_a_wait(self):
        threading.Timer(0.05, self.wakeups.notify).start()
        self.assertLess(self.timed_wait(), LONG / 2, "notify() did not wake the wait")

    def test_a_wait_uses_up_the_wake_up_that_ended_it(self):
        self.assertFalse(self.wakeups.pending())
        self.wakeups.notify()
        self.wakeups.notify()
        self.assertTrue(self.wakeups.pending())
        self.assertLess(self.timed_wait(), LONG / 2)
        self.assertFalse(self.wakeups.pending(), "a later wait would end at once on an old wake-up")

    def test_input_on_the_callers_descriptor_ends_a_wait_and_is_left_to_the_caller(self):
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        threading.Timer(0.05, b.send, args=(b"READY=1",)).start()
        self.assertLess(self.timed_wait([a]), LONG / 2, "the caller's descriptor did not wake the wait")
        self.assertEqual(a.recv(64), b"READY=1")

    def test_a_closed_wakeups_ignores_a_late_notify(self):
        self.wakeups.close()
        self.wakeups.notify()  # a registration thread finishing after close(): no error
        self.wakeups.close()  # twice is fine


if __name__ == "__main__":
    unittest.main()
