"""NVDRA_STATIC_CXX_DEPS (cmake/NvdraStaticDeps.cmake) has its effect: in a tree built with it (the
release tree) the agent, nvdractl and nvdra-webhook load no gRPC, abseil, protobuf, c-ares, re2 or
Boost.JSON library of their own, nor spdlog or fmt (compiled in, cmake/NvdraLogging.cmake), while
OpenSSL, libsystemd and libstdc++ stay shared (their security updates come through apt); in a tree
without it (sanitizers) gRPC, spdlog and fmt are shared libraries again. The release tree's agent also
names the libraries most of an exec's symbol lookups end in first (cmake/NvdraLoadOrder.cmake)."""
import os
import re
import subprocess
import unittest

SRC = os.path.abspath(os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BIN = os.path.abspath(os.environ.get("NVDRA_BINARY_DIR", os.path.join(SRC, "build")))
STATIC = os.environ.get("NVDRA_STATIC_CXX_DEPS") == "ON"
LINKED_IN = re.compile(r"lib(grpc|gpr|upb|address_sorting|absl_|protobuf|cares|re2|boost_json|spdlog|fmt)")
BINARIES = ("agent/nvdra-agent", "agent/ctl/nvdractl", "agent/admission/nvdra-webhook")


def needed(binary):
    out = subprocess.run(["readelf", "-d", binary], check=True, capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


class StaticDeps(unittest.TestCase):
    def test_the_option_decides_what_is_linked_in(self):
        agent = needed(os.path.join(BIN, BINARIES[0]))
        self.assertIn("libstdc++.so.6", agent)
        self.assertIn("libssl.so.3", agent)
        self.assertIn("libsystemd.so.0", agent)
        if not STATIC:
            for shared in ("libgrpc", "libspdlog", "libfmt"):
                self.assertTrue([n for n in agent if n.startswith(shared)], (shared, agent))
            return
        for b in BINARIES:
            with self.subTest(binary=b):
                self.assertEqual([n for n in needed(os.path.join(BIN, b)) if LINKED_IN.match(n)], [])
        # libcrypto, libstdc++, libc and libssl lead the loader's search order, in that order (ld.so may
        # follow libc: libc names it).
        lead = [n for n in agent if n != "ld-linux-x86-64.so.2"][:4]
        self.assertEqual(lead, ["libcrypto.so.3", "libstdc++.so.6", "libc.so.6", "libssl.so.3"], agent)
        # Nor through a library it loads (ldd: the whole tree the loader maps).
        out = subprocess.run(["ldd", os.path.join(BIN, BINARIES[0])], check=True, capture_output=True,
                             text=True).stdout
        self.assertEqual([line.strip() for line in out.splitlines() if LINKED_IN.search(line)], [])


if __name__ == "__main__":
    unittest.main()
