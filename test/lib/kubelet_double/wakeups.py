"""What ends a wait of the kubelet double's plugin watcher early, so that it reacts to an event as kubelet
does instead of at its next poll: a change in the registration directory (inotify, as kubelet's fsnotify
watcher; through libc with ctypes, the standard library has no binding), a registration that finished on
its thread (a pipe), or the caller's own descriptors (the agent's notify socket). The poll stays as the
fallback: for conditions no descriptor announces, sockets in subdirectories made later, and a kernel or
libc without inotify."""
import ctypes
import ctypes.util
import functools
import os
import select

IN_ATTRIB = 0x00000004
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC


@functools.cache
def _libc():
    """Once per process: find_library runs `ldconfig -p` in a child process at every call, which in a
    start bench is a fork and an exec on the cores the measured start runs on."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        return libc
    except (OSError, AttributeError):
        return None


class Wakeups:
    def __init__(self, directory):
        self._inotify = -1
        libc = _libc()
        if libc is not None:
            fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
            if fd >= 0 and libc.inotify_add_watch(fd, os.fsencode(directory),
                                                  IN_CREATE | IN_MOVED_TO | IN_ATTRIB) >= 0:
                self._inotify = fd
            elif fd >= 0:
                os.close(fd)
        self._read_end, self._write_end = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    @property
    def watching(self):
        """Whether changes in the directory wake a wait (else only the poll finds new sockets)."""
        return self._inotify >= 0

    def notify(self):
        """Wakes the current or the next wait (any thread)."""
        if self._write_end < 0:
            return  # closed: nobody waits any more
        try:
            os.write(self._write_end, b"x")
        except BlockingIOError:
            pass  # the pipe is full: a wake-up is pending anyway

    def pending(self):
        """Whether a wake-up is waiting to be used by the next wait."""
        ours = [fd for fd in (self._inotify, self._read_end) if fd >= 0]
        return bool(ours) and bool(select.select(ours, [], [], 0)[0])

    def wait(self, seconds, extra=()):
        """Returns after `seconds` or as soon as one of the sources has something; drains what woke it
        (the caller's own descriptors are left for the caller to read)."""
        ours = [fd for fd in (self._inotify, self._read_end) if fd >= 0]
        ready, _, _ = select.select(ours + list(extra), [], [], seconds)
        for fd in ready:
            if fd in ours:
                try:
                    while os.read(fd, 4096):
                        pass
                except BlockingIOError:
                    pass

    def close(self):
        for fd in (self._inotify, self._read_end, self._write_end):
            if fd >= 0:
                os.close(fd)
        self._inotify = self._read_end = self._write_end = -1
