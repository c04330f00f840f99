"""The DaemonSet works as shipped: the agent starts on the simulated node with the DaemonSet's own
environment (rendered from contrib/kubernetes with `kubectl kustomize`; the pod's paths mapped onto
the simulated node through the DaemonSet's own volumes) and kubelet's startup and liveness probes,
run as kubelet runs them (grpc.health.v1 Check on the probe's port, with the probe's service and
timeout), fail before kubelet registers the plugins and succeed once it has."""
import os
import socket
import unittest
import uuid

from gpu_node import CD, GPU, SimulatedNode
from kubelet_double.probe import HealthWatch, grpc_probe
from kustomize import OVERLAYS, WEBHOOK_OVERLAYS, agent_container, daemonset, render
from nvdra_testlib import MOCK_NVML

DRIVERS = {"gpu": GPU, "compute-domain": CD}
FIELD_REFS = ("spec.nodeName", "metadata.namespace", "metadata.uid")


def free_or(port):
    """`port` if nothing listens there now, else a free one (the shipped port must not make the
    test depend on what else runs on this machine)."""
    with socket.socket(socket.AF_INET6) as s:
        try:
            s.bind(("::", port))
            return port
        except OSError:
            s.bind(("::", 0))
            return s.getsockname()[1]


def under(path, prefix):
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


class PodNode(SimulatedNode):
    """A simulated node whose agent gets the pod's environment instead of the test flags. Only what a
    pod receives other than through env is passed as flags: the API server (in-cluster config there),
    the NVML library (the driver root's there) and the host root (the container's / there)."""

    resolved_env = {}  # set once the node's directories exist

    def env(self, **extra):
        return super().env(**dict(self.resolved_env, **extra))

    def agent_args(self):
        return ["--kubeconfig", self.api.kubeconfig, "--nvml-library", MOCK_NVML, "--host-root", self.host_root]


class DaemonSetAsShipped(unittest.TestCase):
    def pod_environment(self, objs, node):
        """The agent container's env with the pod's fieldRefs filled in and every path mapped onto
        the simulated node through the volume that provides it. Ports stay as shipped unless taken
        on this machine (then self.port() maps them, for the probes too)."""
        ds = daemonset(objs)
        spec = ds["spec"]["template"]["spec"]
        container = agent_container(objs)
        self.assertEqual(container["command"], ["nvdra-agent"])
        self.assertNotIn("args", container)
        sim = {"plugins-registry": node.dirs.registrar, "plugins": node.dirs.plugins, "cdi": node.dirs.cdi,
               "driver-root": node.driver_root, "host-root": node.host_root}
        for v in spec["volumes"]:
            sim.setdefault(v["name"], os.path.join(node.root, "volume-" + v["name"]))
            os.makedirs(sim[v["name"]], exist_ok=True)
        mounts = {m["mountPath"]: sim[m["name"]] for m in container["volumeMounts"]}
        host_paths = {v["hostPath"]["path"]: sim[v["name"]] for v in spec["volumes"] if "hostPath" in v}
        fields = {"spec.nodeName": node.node, "metadata.namespace": ds["metadata"]["namespace"],
                  "metadata.uid": str(uuid.uuid4())}
        env = {}
        for e in container["env"]:
            name, value = e["name"], e.get("value")
            if "valueFrom" in e:
                ref = e["valueFrom"]["fieldRef"]["fieldPath"]
                self.assertIn(ref, FIELD_REFS, name)
                value = fields[ref]
            elif name == "NVIDIA_DRIVER_ROOT":
                value = host_paths[value]  # a host path: where the driver-root volume comes from
            elif value.startswith("/") and name != "METRICS_PATH":
                prefix = max((m for m in mounts if under(value, m)), key=len, default=None)
                self.assertIsNotNone(prefix, f"{name}={value} is not under any of the pod's volume mounts")
                value = mounts[prefix] + value[len(prefix):]
            elif name == "HEALTHCHECK_PORT":
                value = str(self.port(int(value)))
            elif name == "HTTP_ENDPOINT" and value:
                host, _, port = value.rpartition(":")
                value = f"{host}:{self.port(int(port))}"
            env[name] = value
        # Not in the env: the agent's default container driver root must be where the pod mounts it.
        self.assertEqual(next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "driver-root"),
                         "/driver-root")
        env["DRIVER_ROOT_CTR_PATH"] = node.driver_root
        return env

    def setUp(self):
        self.ports = {}  # shipped port -> the one used here

    def port(self, shipped):
        if shipped not in self.ports:
            self.ports[shipped] = free_or(shipped)
        return self.ports[shipped]

    def run_probe(self, probe):
        """One probe as kubelet runs it: the probe's port and service, timeoutSeconds (default 1)."""
        grpc_spec = probe["grpc"]
        return grpc_probe(self.port(grpc_spec["port"]), grpc_spec.get("service", ""),
                          timeout=float(probe.get("timeoutSeconds", 1)))

    def check_overlay(self, overlay, profile="dgx-a100"):
        objs = render(overlay)
        container = agent_container(objs)
        drivers = [DRIVERS[d] for d in next(e["value"] for e in container["env"]
                                            if e["name"] == "NVDRA_DRIVERS").split(",")]
        node = PodNode(drivers=drivers, profile=profile)
        self.addCleanup(node.cleanup)
        node.resolved_env = self.pod_environment(objs, node)
        node.start(register=False)  # kubelet has found the sockets, not yet told the plugins
        startup, liveness = container["startupProbe"], container["livenessProbe"]
        self.assertEqual(node.healthcheck_port(), self.port(startup["grpc"]["port"]))

        self.assertEqual(self.run_probe(startup), ("failure", 'service unhealthy (responded with "NOT_SERVING")'),
                         overlay)
        watch = HealthWatch(self.port(startup["grpc"]["port"]), startup["grpc"].get("service", ""))
        self.addCleanup(watch.cancel)
        for plugin in node.plugins.values():
            node.kubelet.notify(plugin, True)
        watch.next_until("SERVING", overlay)
        self.assertEqual(self.run_probe(startup), ("success", ""), overlay)
        self.assertEqual(self.run_probe(liveness), ("success", ""), overlay)
        node.notify.wait_for("READY=1")
        self.assertEqual(node.stop(), 0)

    def test_gpu_only_overlay(self):
        self.check_overlay("gpu-only")

    def test_host_managed_imex_overlay(self):
        self.check_overlay("gpu-host-managed-imex")

    def test_gpu_passthrough_overlay(self):
        self.check_overlay("gpu-passthrough", profile="passthrough")

    def test_every_shipped_overlay_is_covered(self):
        self.assertEqual(sorted(OVERLAYS + WEBHOOK_OVERLAYS), sorted(os.listdir(os.path.join(os.path.dirname(__file__), "..", "..",
                                                                          "contrib", "kubernetes", "overlays"))))


if __name__ == "__main__":
    unittest.main()
