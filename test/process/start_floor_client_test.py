"""The start's native floor (bench/kubelet/start_floor.cpp, exec'd by bench/scenario/start_floor.py): it must do
all of what it stands for, or the ratio against it means nothing. Against the API double and kubelet's
registration double: both drivers are registered on kubelet's protocol and every slice is stored before it
says "done"; a server it cannot trust or a token the server refuses ends it with exit 1 and the reason."""
import json
import os
import select
import subprocess
import tempfile
import unittest

import apiserver_double
from kubelet_double import KubeletDouble
from nvdra_testlib import BINARY_DIR

CLIENT = os.path.join(BINARY_DIR, "bench", "kubelet", "kubelet_start_floor")
READING = CLIENT + "_reads"  # the same with --reads-node
DRIVERS = ("gpu.nvidia.com", "compute-domain.nvidia.com")
NODE = "floor-node"
RS = ("resource.k8s.io/v1", "resourceslices")


def slice_body(driver, device):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"generateName": f"{NODE}-{driver}-",
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": NODE,
                                              "uid": "the-harness-uid", "controller": True}]},
            "spec": {"driver": driver, "nodeName": NODE,
                     "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": device}]}}


class StartFloorClient(unittest.TestCase):
    def setUp(self):
        # Built with bench/ (not in sanitizer trees, whose suites leave this test out by its label).
        for binary in (CLIENT, READING):
            self.assertTrue(os.access(binary, os.X_OK), f"{binary} is not built")
        self.dir = tempfile.mkdtemp(prefix="nvdra-start-floor-")
        self.api = apiserver_double.start_in(os.path.join(self.dir, "api"))
        self.addCleanup(self.api.stop)
        self.registrar = tempfile.mkdtemp(prefix="registry-", dir=self.dir)
        self.plugins = tempfile.mkdtemp(prefix="plugins-", dir=self.dir)
        self.files = []
        for driver in DRIVERS:
            path = os.path.join(self.dir, f"{driver}.jsonl")
            with open(path, "w") as f:
                for device in ("dev-0", "dev-1"):
                    f.write(json.dumps(slice_body(driver, device)) + "\n")
            self.files.append(f"{driver}={path}")

    def spawn(self, ca=None, token=None, server=None, reads=False):
        args = [READING if reads else CLIENT, "--registrar", self.registrar, "--plugins", self.plugins, "--server", server or self.api.url,
                "--ca", ca or self.api.ca_file, "--token", token or self.api.token_file]
        if reads:
            args += ["--reads-node", NODE]
        for spec in self.files:
            args += ["--driver", spec]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        return proc

    def test_says_done_only_with_both_drivers_registered_and_every_slice_stored(self):
        self.run_to_done(self.spawn())

    def test_a_server_named_by_host_name_is_looked_up_and_verified_by_that_name(self):
        # The double's certificate names 127.0.0.1 and localhost.
        self.assertIn("127.0.0.1", self.api.url)
        self.run_to_done(self.spawn(server=self.api.url.replace("127.0.0.1", "localhost")))

    def test_with_reads_every_slice_is_owned_by_the_node_it_read(self):
        node = self.api.put_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}})
        self.run_to_done(self.spawn(reads=True))
        owners = {ref["uid"] for s in self.api.objects(*RS, f"spec.nodeName={NODE}")
                  for ref in s["metadata"]["ownerReferences"]}
        self.assertEqual(owners, {node["metadata"]["uid"]})
        self.assertNotIn("the-harness-uid", owners)

    def test_the_plain_floor_refuses_reads(self):
        args = [CLIENT, "--registrar", self.registrar, "--plugins", self.plugins, "--server", self.api.url,
                "--ca", self.api.ca_file, "--token", self.api.token_file, "--reads-node", NODE]
        done = subprocess.run(args, capture_output=True, timeout=30)
        self.assertEqual(done.returncode, 1)
        self.assertIn(b"--reads-node: this build makes no reads", done.stderr)

    def test_with_reads_a_missing_node_ends_it_with_the_answer(self):
        code, out, err = self.finished(self.spawn(reads=True))
        self.assertEqual(code, 1)
        self.assertNotIn("done", out)
        self.assertIn(f"GET /api/v1/nodes/{NODE} answered 404", err)
        self.assertEqual(self.api.objects(*RS, f"spec.nodeName={NODE}"), [])

    def run_to_done(self, proc):
        kubelet = KubeletDouble(self.registrar)
        self.addCleanup(kubelet.close)
        plugins = kubelet.wait_for_plugins(DRIVERS, timeout=30)
        self.assertTrue(select.select([proc.stdout], [], [], 30)[0], "no line from the client")
        line = proc.stdout.readline().split()
        self.assertEqual(line[0], b"done")
        self.assertGreater(int(line[1]), 0)  # its CPU in µs, for the bench's split
        self.assertEqual(proc.wait(timeout=30), 0, proc.stderr.read())
        for driver in DRIVERS:
            self.assertEqual(plugins[driver].endpoint, os.path.join(self.plugins, driver + ".sock"))
            self.assertEqual(plugins[driver].supported_versions, ["v1.DRAPlugin"])
        stored = self.api.objects(*RS, f"spec.nodeName={NODE}")
        self.assertEqual(sorted((s["spec"]["driver"], s["spec"]["devices"][0]["name"]) for s in stored),
                         sorted((d, dev) for d in DRIVERS for dev in ("dev-0", "dev-1")))

    def finished(self, proc):
        out, err = proc.communicate(timeout=30)
        return proc.returncode, out.decode(), err.decode()

    def test_a_refused_token_ends_it_with_the_answer(self):
        bad = os.path.join(self.dir, "bad-token")
        with open(bad, "w") as f:
            f.write("not-the-token\n")
        code, out, err = self.finished(self.spawn(token=bad))
        self.assertEqual(code, 1)
        self.assertNotIn("done", out)
        self.assertIn("POST /apis/resource.k8s.io/v1/resourceslices answered 401", err)
        self.assertEqual(self.api.objects(*RS, f"spec.nodeName={NODE}"), [])

    def test_a_server_signed_by_another_ca_is_not_trusted(self):
        other, _, _ = apiserver_double.make_certs(os.path.join(self.dir, "other"))
        code, out, err = self.finished(self.spawn(ca=other))
        self.assertEqual(code, 1)
        self.assertNotIn("done", out)
        self.assertIn("certificate verify failed", err)
        self.assertEqual(self.api.objects(*RS, f"spec.nodeName={NODE}"), [])


if __name__ == "__main__":
    unittest.main()
