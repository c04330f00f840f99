"""One simdjson ABI in every binary. <simdjson.h> lays out ondemand::parser with a leading `bool
threaded` only where SIMDJSON_THREADS_ENABLED is defined, which the simdjson::simdjson target (and
-pthread, through _REENTRANT) provides. A translation unit that includes the header without linking
that target gets the other layout: an ODR violation that stays hidden while the parser's inline
destructor is inlined (-O2, -Os) and aborts the agent (free(): invalid pointer) where it is not
(-Oz: the linker keeps one out-of-line ~parser, of the other layout). This was
agent/drivers/checkpoint_rebuild.cpp, rebuilding claims from a corrupt checkpoint.

Checked from the build tree itself: every object whose recorded header dependencies (ninja's deps
log) include simdjson.h must have been compiled with the threaded layout (compile_commands.json)."""
import json
import os
import shutil
import subprocess
import unittest

from prerequisites import exit_if_missing

SRC = os.path.abspath(os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BIN = os.path.abspath(os.environ.get("NVDRA_BINARY_DIR", os.path.join(SRC, "build")))
NINJA = os.environ.get("NVDRA_NINJA") or shutil.which("ninja") or "ninja"


def objects_including_simdjson():
    """Objects (paths relative to the build tree) whose deps log lists a simdjson.h."""
    out = subprocess.run([NINJA, "-C", BIN, "-t", "deps"], check=True, capture_output=True, text=True).stdout
    found, current = set(), None
    for line in out.splitlines():
        if line and not line[0].isspace():
            current = line.split(":", 1)[0]
        elif current and line.strip().endswith("/simdjson.h"):
            found.add(current)
    return found


def output_of(entry):
    """The object a compile database entry writes (CMake before 3.20 has no "output" field)."""
    if "output" in entry:
        return entry["output"]
    args = entry["command"].split()
    return args[args.index("-o") + 1]


def threaded(command):
    args = command.split()
    return any(a.startswith("-DSIMDJSON_THREADS_ENABLED") for a in args) or "-pthread" in args


class SimdjsonAbi(unittest.TestCase):
    def test_every_object_including_simdjson_has_the_threaded_layout(self):
        with open(os.path.join(BIN, "compile_commands.json")) as f:
            commands = {os.path.normpath(os.path.join(e["directory"], output_of(e))): e for e in json.load(f)}
        checked, wrong = 0, []
        for obj in sorted(objects_including_simdjson()):
            entry = commands.get(os.path.normpath(os.path.join(BIN, obj)))
            if entry is None:
                continue  # a deps-log entry of no C++ compile in this tree's database
            checked += 1
            if not threaded(entry["command"]):
                wrong.append(os.path.relpath(entry["file"], SRC))
        # Never vacuous: a built tree has a dozen simdjson users (the k8s client, claims, the agent).
        self.assertGreaterEqual(checked, 5, "too few compiles of simdjson users found: tree not built?")
        self.assertEqual(wrong, [], "these include <simdjson.h> without SIMDJSON_THREADS_ENABLED (a second "
                                    "ondemand::parser layout): link their target to simdjson::simdjson")


if __name__ == "__main__":
    exit_if_missing(os.path.exists(os.path.join(BIN, ".ninja_deps")), f"a Ninja build tree at {BIN} (its deps log)")
    unittest.main()
