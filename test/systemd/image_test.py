"""Builds the OCI image with contrib/image/build-oci.sh (no container engine: a minbase root from the
machine's Debian mirror, cached, + umoci) and inspects it as the DaemonSet uses it: an OCI layout with
the tag, nvdra-agent as entrypoint and on the image's PATH (the DaemonSet's `command`), run as root,
the OCI labels, its size, and a rootfs in which the agent and nvdractl actually run (all their
libraries are there). Needs root, debootstrap, umoci and the mirror (contrib/dev/test provides them);
a missing one skips here and fails in CI."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import kustomize
from prerequisites import requires

SRC = os.path.abspath(os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
BIN = os.path.abspath(os.environ.get("NVDRA_BINARY_DIR", os.path.join(SRC, "build")))
TAG = "test"


def missing_tools():
    missing = [] if os.geteuid() == 0 else ["root (debootstrap, umoci unpack)"]
    return missing + [t for t in ("debootstrap", "umoci") if not shutil.which(t)]


@requires(lambda: not missing_tools(), lambda: ", ".join(missing_tools()), "see contrib/dev/packages.txt")
class OciImage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="nvdra-image-")
        cls.addClassCleanup(cls.tmp.cleanup)
        cls.out = os.path.join(cls.tmp.name, "out")
        res = subprocess.run([os.path.join(SRC, "contrib", "image", "build-oci.sh"), cls.out],
                             env=dict(os.environ, NVDRA_BUILD_DIR=BIN, NVDRA_IMAGE_TAG=TAG),
                             capture_output=True, text=True, timeout=3000)
        if res.returncode != 0:
            raise AssertionError("build-oci.sh failed:\n" + res.stdout[-3000:] + res.stderr[-3000:])
        with open(os.path.join(cls.out, "oci", "index.json")) as f:
            index = json.load(f)
        cls.tagged = [m for m in index["manifests"]
                      if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == TAG]
        cls.manifest = cls.blob(cls.tagged[0]["digest"]) if len(cls.tagged) == 1 else None
        cls.config = cls.blob(cls.manifest["config"]["digest"])["config"] if cls.manifest else {}

    @classmethod
    def blob(cls, digest):
        with open(os.path.join(cls.out, "oci", "blobs", *digest.split(":"))) as f:
            return json.load(f)

    def chroot(self, *argv):
        env = dict(e.split("=", 1) for e in self.config.get("Env", []))
        return subprocess.run(["chroot", os.path.join(self.out, "rootfs"), "/usr/bin/env", "-i",
                               f"PATH={env.get('PATH', '')}", *argv], capture_output=True, text=True, timeout=60)

    def test_layout_has_the_tag_and_the_agent_as_entrypoint_running_as_root(self):
        self.assertEqual(len(self.tagged), 1)
        self.assertEqual(self.config["Entrypoint"], ["/usr/sbin/nvdra-agent"])
        self.assertIn(self.config.get("User", ""), ("", "0", "0:0", "root"))
        self.assertTrue(os.path.getsize(os.path.join(self.out, f"nvdra-agent-{TAG}.oci.tar")) > 0)

    def test_labels_name_the_image_its_version_and_licence(self):
        self.assertEqual(self.config.get("Labels"), {"org.opencontainers.image.title": "nvdra-agent",
                                                     "org.opencontainers.image.licenses": "Apache-2.0",
                                                     "org.opencontainers.image.version": TAG})

    def test_size_is_reported_and_the_layers_hold_no_build_tree(self):
        layers = sum(layer["size"] for layer in self.manifest["layers"])
        print(f"image: {len(self.manifest['layers'])} layer(s), {layers / 1e6:.1f} MB compressed")
        # A minbase Debian with the runtime libraries is ~40 MB compressed; a build tree or the
        # package caches copied in by mistake would be hundreds.
        self.assertLess(layers, 120e6)
        self.assertFalse(os.path.exists(os.path.join(self.out, "rootfs", "var", "cache", "apt", "archives",
                                                     "partial")))

    def test_daemonset_command_resolves_on_the_image_path(self):
        container = kustomize.agent_container(kustomize.render("gpu-only"))
        command = container["command"][0]
        which = self.chroot("sh", "-c", f"command -v {command}")
        self.assertEqual(which.stdout.strip(), "/usr/sbin/nvdra-agent", which.stderr)

    def test_binaries_run_inside_the_image_rootfs(self):
        agent = self.chroot("nvdra-agent", "--version")
        self.assertEqual(agent.returncode, 0, agent.stderr)
        self.assertTrue(agent.stdout.startswith("nvdra-agent "))
        ctl = self.chroot("nvdractl", "--version")
        self.assertEqual(ctl.returncode, 0, ctl.stderr)
        # The admission webhook runs from the same image (contrib/kubernetes/components/webhook).
        webhook = self.chroot("nvdra-webhook", "--version")
        self.assertEqual(webhook.returncode, 0, webhook.stderr)
        self.assertTrue(webhook.stdout.startswith("nvdra-webhook "))


if __name__ == "__main__":
    unittest.main()
