"""Builds the OCI image with contrib/image/build-oci.sh (no container engine: debootstrap from
Debian's mirror + umoci) and checks it: an OCI layout with the tag, nvdra-agent as entrypoint, and
a rootfs in which the agent and nvdractl actually run (all their libraries are there). Slow and
needs the mirror: run with `NVDRA_TEST_IMAGE=1 ctest -L image` (as root)."""
import json
import os
import subprocess
import tempfile
import unittest

SRC = os.path.abspath(os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BIN = os.path.abspath(os.environ.get("NVDRA_BINARY_DIR", os.path.join(SRC, "build")))


@unittest.skipUnless(os.environ.get("NVDRA_TEST_IMAGE") == "1", "set NVDRA_TEST_IMAGE=1 to build the image")
@unittest.skipUnless(os.geteuid() == 0, "debootstrap and umoci unpack need root")
class OciImage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="nvdra-image-")
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.out = os.path.join(cls.tmp.name, "out")
        res = subprocess.run([os.path.join(SRC, "contrib", "image", "build-oci.sh"), cls.out],
                             env=dict(os.environ, NVDRA_BUILD_DIR=BIN, NVDRA_IMAGE_TAG="test"),
                             capture_output=True, text=True, timeout=3000)
        if res.returncode != 0:
            raise AssertionError("build-oci.sh failed:\n" + res.stdout[-3000:] + res.stderr[-3000:])

    def blob(self, digest):
        with open(os.path.join(self.out, "oci", "blobs", *digest.split(":"))) as f:
            return json.load(f)

    def test_layout_has_the_tag_and_the_agent_as_entrypoint(self):
        with open(os.path.join(self.out, "oci", "index.json")) as f:
            index = json.load(f)
        tagged = [m for m in index["manifests"]
                  if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == "test"]
        self.assertEqual(len(tagged), 1)
        config = self.blob(self.blob(tagged[0]["digest"])["config"]["digest"])
        self.assertEqual(config["config"]["Entrypoint"], ["/usr/sbin/nvdra-agent"])
        self.assertTrue(os.path.getsize(os.path.join(self.out, "nvdra-agent-test.oci.tar")) > 0)

    def test_binaries_run_inside_the_image_rootfs(self):
        rootfs = os.path.join(self.out, "rootfs")
        agent = subprocess.run(["chroot", rootfs, "/usr/sbin/nvdra-agent", "--version"], capture_output=True,
                               text=True, timeout=60)
        self.assertEqual(agent.returncode, 0, agent.stderr)
        self.assertTrue(agent.stdout.startswith("nvdra-agent "))
        ctl = subprocess.run(["chroot", rootfs, "/usr/bin/nvdractl", "--version"], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(ctl.returncode, 0, ctl.stderr)
        # The admission webhook runs from the same image (contrib/kubernetes/components/webhook).
        webhook = subprocess.run(["chroot", rootfs, "/usr/sbin/nvdra-webhook", "--version"], capture_output=True,
                                 text=True, timeout=60)
        self.assertEqual(webhook.returncode, 0, webhook.stderr)
        self.assertTrue(webhook.stdout.startswith("nvdra-webhook "))


if __name__ == "__main__":
    unittest.main()
