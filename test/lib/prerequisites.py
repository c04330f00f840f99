"""What a test needs from the machine (root, a tool, upstream's binaries, a file of the OS).

Outside CI a missing prerequisite skips the test and says in one line what was left out. In CI
(CI=true, CI's environment) it fails the test, naming what is missing: a green CI run means every
check ran. contrib/dev/test prepares what it can and lists the rest before the suites start."""
import functools
import os
import sys
import unittest


def in_ci():
    return os.environ.get("CI") == "true"


def message(what, hint=""):
    return f"missing prerequisite: {what}" + (f" ({hint})" if hint else "")


def missing(what, hint=""):
    """Ends the current test (or class set-up): a failure in CI, a skip elsewhere."""
    text = message(what, hint)
    if in_ci():
        raise AssertionError(text + " [CI=true: a missing prerequisite fails the test]")
    raise unittest.SkipTest(text)


def require(ok, what, hint=""):
    if not ok:
        missing(what, hint)


def requires(check, what, hint=""):
    """Class decorator: `check()` is asked in setUpClass (not at import), and `what` may be a callable
    that says precisely what is missing."""
    def wrap(cls):
        original = cls.__dict__.get("setUpClass")

        @classmethod
        @functools.wraps(getattr(cls, "setUpClass"))
        def set_up_class(klass):
            if not check():
                missing(what() if callable(what) else what, hint)
            if original is not None:
                original.__func__(klass)
            else:
                super(cls, klass).setUpClass()
        cls.setUpClass = set_up_class
        return cls
    return wrap


def exit_if_missing(ok, what, hint=""):
    """For a script's __main__ when nothing in it can run: CTest's skip code 77 outside CI, failure in CI."""
    if ok:
        return
    print(message(what, hint), file=sys.stderr)
    sys.exit(1 if in_ci() else 77)
