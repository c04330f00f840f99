"""NVDRA_RELR (cmake/NvdraRelr.cmake) has its effect: in a tree linked with it (release, lld, a glibc that
reads DT_RELR) the agent, nvdractl and nvdra-webhook carry their relative relocations packed (DT_RELR), no
longer one RELA entry each, and depend on glibc's GLIBC_ABI_DT_RELR version, without which glibc refuses to
load them; each still runs. In a tree without it (sanitizers) they carry RELA entries as before."""
import os
import re
import subprocess
import unittest

SRC = os.path.abspath(os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BIN = os.path.abspath(os.environ.get("NVDRA_BINARY_DIR", os.path.join(SRC, "build")))
PACKED = os.environ.get("NVDRA_RELR") == "ON"
BINARIES = ("agent/nvdra-agent", "agent/ctl/nvdractl", "agent/admission/nvdra-webhook")


def readelf(flag, binary):
    return subprocess.run(["readelf", flag, "-W", binary], check=True, capture_output=True, text=True).stdout


def relative_rela_entries(binary):
    return sum(1 for line in readelf("-r", binary).splitlines() if "R_X86_64_RELATIVE" in line)


class PackedRelocations(unittest.TestCase):
    def test_the_option_decides_how_relative_relocations_are_kept(self):
        for b in BINARIES:
            path = os.path.join(BIN, b)
            with self.subTest(binary=b):
                dynamic = readelf("-d", path)
                has_relr = re.search(r"\(RELR\)", dynamic) is not None
                if not PACKED:
                    self.assertFalse(has_relr, dynamic)
                    self.assertGreater(relative_rela_entries(path), 0)
                    continue
                self.assertTrue(has_relr, dynamic)
                self.assertEqual(relative_rela_entries(path), 0)
                self.assertIn("GLIBC_ABI_DT_RELR", readelf("-V", path))
                run = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
                self.assertEqual(run.returncode, 0, run.stderr)
                self.assertRegex(run.stdout, r"\d+\.\d+\.\d+")


if __name__ == "__main__":
    unittest.main()
