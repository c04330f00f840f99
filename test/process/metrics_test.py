"""The Prometheus page (--http-endpoint, --metrics-path) against a running agent on the simulated
node, fetched with a real HTTP client: upstream's nvidia_dra_* names, the process and nvdra series,
the prepare counters moving after a prepare, 404 elsewhere, and no listener unless both flags ask
for one."""
import os
import re
import subprocess
import unittest
import urllib.error
import urllib.request

from gpu_node import GPU, SimulatedNode
from nvdra_testlib import agent_binary

LISTENING = re.compile(r"metrics listening address=(\S+) port=(\d+) path=(\S+)")


def samples(page):
    """{'name{labels}': value} of every sample line."""
    out = {}
    for line in page.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def listening_tcp_ports(pid):
    """TCP ports the process listens on (its socket inodes found in /proc/net/tcp{,6} in LISTEN)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


class MetricsPage(unittest.TestCase):
    def start(self, *args, env=None):
        node = SimulatedNode(profile="dgx-a100", args=args, drivers=[GPU], env=env)
        self.addCleanup(node.cleanup)
        node.start()
        return node

    def endpoint(self, node):
        # The listener is bound, and the line logged, before the agent says READY=1.
        m = LISTENING.search(node.agent_log())
        self.assertIsNotNone(m, "no 'metrics listening' line in the log:\n" + node.agent_log())
        return m.group(1), int(m.group(2)), m.group(3)

    def fetch(self, port, path="/metrics"):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()

    def test_page_has_upstream_names_and_prepare_moves_the_counters(self):
        node = self.start("--http-endpoint=127.0.0.1:0")
        address, port, path = self.endpoint(node)
        self.assertEqual((address, path), ("127.0.0.1", "/metrics"))
        status, ctype, page = self.fetch(port)
        self.assertEqual(status, 200)
        self.assertEqual(ctype, "text/plain; version=0.0.4; charset=utf-8")
        for name, kind, help_text in [
                ("nvidia_dra_requests_total", "counter", "[ALPHA] Total number of DRA prepare and unprepare requests."),
                ("nvidia_dra_request_duration_seconds", "histogram",
                 "[ALPHA] Duration of DRA prepare and unprepare requests."),
                ("nvidia_dra_requests_inflight", "gauge", "[ALPHA] Number of in-flight DRA prepare and unprepare requests.")]:
            self.assertIn(f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n", page)
        s = samples(page)
        for op in ("prepare", "unprepare"):
            labels = f'driver="gpu.nvidia.com",operation="{op}"'
            self.assertEqual(s[f"nvidia_dra_requests_total{{{labels}}}"], 0)
            self.assertEqual(s[f"nvidia_dra_requests_inflight{{{labels}}}"], 0)
            self.assertEqual(s[f'nvidia_dra_request_duration_seconds_bucket{{{labels},le="12.8"}}'], 0)
        for name in ("process_resident_memory_bytes", "process_virtual_memory_bytes", "process_start_time_seconds",
                     "process_open_fds", "process_max_fds", "process_cpu_seconds_total"):
            self.assertGreater(s[name], 0, name)
        self.assertEqual(s[f'nvdra_build_info{{version="{self.version()}"}}'], 1)
        # The agent's own start-up wrote its slices and read its node through the API client.
        self.assertGreater(sum(v for k, v in s.items() if k.startswith("nvdra_api_requests_total{")), 0)
        self.assertGreater(s['nvdra_resource_slice_writes_total{operation="create",result="success"}'], 0)

        gpus = sorted(n for n, d in node.published().items()
                      if d["attributes"]["type"] == {"string": "gpu"} and "-mig-" not in n)
        claim = node.allocate("metered", [("gpu", gpus[0])])
        self.assertEqual(node.gpu().prepare([claim])[claim.uid]["error"], "")
        s = samples(self.fetch(port)[2])
        prep = 'driver="gpu.nvidia.com",operation="prepare"'
        self.assertEqual(s[f"nvidia_dra_requests_total{{{prep}}}"], 1)
        self.assertEqual(s[f"nvidia_dra_request_duration_seconds_count{{{prep}}}"], 1)
        self.assertEqual(s[f"nvidia_dra_requests_inflight{{{prep}}}"], 0)
        self.assertEqual(s['nvidia_dra_prepared_devices{device_type="gpu",driver="gpu.nvidia.com",node="gpu-node-1"}'], 1)
        self.assertGreater(s['nvdra_checkpoint_saves_total{driver="gpu.nvidia.com"}'], 0)
        self.assertGreaterEqual(s['nvdra_checkpoint_fsyncs_total{driver="gpu.nvidia.com"}'],
                                s['nvdra_checkpoint_saves_total{driver="gpu.nvidia.com"}'])
        self.assertGreater(s['nvdra_api_requests_total{code="200",verb="get"}'], 0)  # the claim read

        self.assertEqual(node.gpu().unprepare([claim]), {claim.uid: ""})
        s = samples(self.fetch(port)[2])
        self.assertEqual(s['nvidia_dra_requests_total{driver="gpu.nvidia.com",operation="unprepare"}'], 1)
        self.assertEqual(s['nvidia_dra_prepared_devices{device_type="gpu",driver="gpu.nvidia.com",node="gpu-node-1"}'], 0)
        # The two scrapes before this one, counted as promhttp counts them (after the answer).
        self.assertEqual(s['promhttp_metric_handler_requests_total{code="200"}'], 2)

    def test_other_paths_are_404_and_a_custom_path_is_served(self):
        node = self.start("--http-endpoint=127.0.0.1:0", "--metrics-path=/custom")
        _, port, path = self.endpoint(node)
        self.assertEqual(path, "/custom")
        self.assertIn("nvidia_dra_requests_total", self.fetch(port, "/custom")[2])
        with self.assertRaises(urllib.error.HTTPError) as e:
            self.fetch(port, "/metrics")
        self.assertEqual((e.exception.code, e.exception.read()), (404, b"404 page not found\n"))

    def test_no_listener_without_an_endpoint_or_a_path(self):
        for args, env in (((), None), (("--http-endpoint=127.0.0.1:0", "--metrics-path="), None),
                          (("--http-endpoint=127.0.0.1:0",), {"METRICS_PATH": ""})):
            with self.subTest(args=args, env=env):
                node = self.start(*args, env=env)
                self.assertEqual(listening_tcp_ports(node.proc.pid), set())
                self.assertNotIn("metrics listening", node.agent_log())
                node.stop()
        # The positive control: the same check sees the listener when there is one.
        node = self.start("--http-endpoint=127.0.0.1:0")
        self.assertEqual(listening_tcp_ports(node.proc.pid), {self.endpoint(node)[1]})

    def test_a_taken_address_fails_start_up(self):
        node = self.start("--http-endpoint=127.0.0.1:0")
        _, port, _ = self.endpoint(node)
        other = SimulatedNode(profile="dgx-a100", args=[f"--http-endpoint=127.0.0.1:{port}"], drivers=[GPU])
        self.addCleanup(other.cleanup)
        run = subprocess.run([agent_binary()] + other.agent_args(), env=other.env(), capture_output=True, text=True,
                             timeout=30)
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        self.assertIn(f"--http-endpoint=127.0.0.1:{port}: cannot listen", run.stdout + run.stderr)

    def version(self):
        out = subprocess.run([agent_binary(), "--version"], capture_output=True, text=True, check=True).stdout
        return out.split()[-1]

if __name__ == "__main__":
    unittest.main()
