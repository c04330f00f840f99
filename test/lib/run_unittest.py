"""Runs one unittest script as CTest sees it: `run_unittest.py SCRIPT [unittest args]`.

A script whose tests pass but some of which were skipped would count in CTest as one plain pass, and
the skip would vanish from every count. Here such a run exits with CTest's skip code (77; the CMake
helpers set SKIP_RETURN_CODE 77), after one line per skipped test naming it and the reason, so the
suite summary (contrib/dev/suite-summary) counts and lists it. A script that runs no test fails."""
import os
import runpy
import sys
import unittest

SKIP_CODE = 77


class _Program(unittest.TestProgram):
    def runTests(self):
        self.exit = False
        super().runTests()
        result = self.result
        if not result.wasSuccessful():
            sys.exit(1)
        if result.testsRun == 0:
            print("run_unittest: no test ran", file=sys.stderr)
            sys.exit(1)
        if result.skipped:
            for test, reason in result.skipped:
                print(f"SKIPPED: {test.id()}: {reason}")
            sys.exit(SKIP_CODE)
        sys.exit(0)


def main():
    if len(sys.argv) < 2:
        print("usage: run_unittest.py SCRIPT [unittest args]", file=sys.stderr)
        sys.exit(2)
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    # As `python3 SCRIPT` would: the script's own folder first on the import path.
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    # The scripts call unittest.main(); they get the program above instead.
    unittest.main = _Program
    runpy.run_path(script, run_name="__main__")
    print(f"run_unittest: {script} did not call unittest.main()", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    main()
