"""--healthcheck-port against a running agent on the simulated node, with kubelet's gRPC probe and a
grpc.health.v1 Watch: NOT_SERVING before kubelet registers the plugins, SERVING once both drivers
are registered and answer, NOT_SERVING while kubelet's registration is withdrawn (a failed
NotifyRegistrationStatus, or the registration socket gone), -1 opens no port, a busy port stops
the agent."""
import os
import socket
import subprocess
import unittest

import grpc

from gpu_node import CD, GPU, SimulatedNode
from kubelet_double.probe import HealthWatch, check, grpc_probe
from nvdra_testlib import agent_binary

SERVICES = ["", "liveness", GPU, CD]


def listening_tcp_ports(pid):
    """TCP ports in LISTEN state on sockets that process `pid` holds."""
    inodes = set()
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except FileNotFoundError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as f:
            for line in list(f)[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


class HealthCheck(unittest.TestCase):
    def node(self, args=(), **kw):
        node = SimulatedNode(args=list(args), **kw)
        self.addCleanup(node.cleanup)
        return node

    def test_serving_follows_kubelets_registration_of_every_driver(self):
        node = self.node(["--healthcheck-port", "0"])
        node.start(register=False)  # kubelet has called GetInfo but not yet NotifyRegistrationStatus
        port = node.healthcheck_port()
        self.assertIn(port, listening_tcp_ports(node.proc.pid))
        liveness = HealthWatch(port, "liveness")
        self.addCleanup(liveness.cancel)
        self.assertEqual(liveness.next_until("NOT_SERVING", "before registration"), ["NOT_SERVING"])
        self.assertEqual({s: check(port, s) for s in SERVICES}, {s: "NOT_SERVING" for s in SERVICES})
        self.assertEqual(grpc_probe(port, "liveness"), ("failure", 'service unhealthy (responded with "NOT_SERVING")'))
        with self.assertRaises(grpc.RpcError) as unknown:
            check(port, "readiness")
        self.assertEqual(unknown.exception.code(), grpc.StatusCode.NOT_FOUND)

        # kubelet registers one driver: that driver serves, the agent as a whole does not yet.
        gpu_watch = HealthWatch(port, GPU)
        self.addCleanup(gpu_watch.cancel)
        node.kubelet.notify(node.plugins[GPU], True)
        gpu_watch.next_until("SERVING", GPU)
        self.assertEqual((check(port, "liveness"), check(port, CD)), ("NOT_SERVING", "NOT_SERVING"))
        node.kubelet.notify(node.plugins[CD], True)
        liveness.next_until("SERVING", "after both registrations")
        self.assertEqual({s: check(port, s) for s in SERVICES}, {s: "SERVING" for s in SERVICES})
        self.assertEqual(grpc_probe(port, "liveness"), ("success", ""))

        # kubelet withdraws the GPU registration (a failed NotifyRegistrationStatus) ...
        node.kubelet.notify(node.plugins[GPU], False, "RegisterPlugin error -- plugin validation failed")
        liveness.next_until("NOT_SERVING", "after the withdrawal")
        self.assertEqual((check(port, GPU), check(port, CD)), ("NOT_SERVING", "SERVING"))
        self.assertEqual(grpc_probe(port, "liveness")[0], "failure")
        # ... and registers it again.
        node.kubelet.notify(node.plugins[GPU], True)
        liveness.next_until("SERVING", "after re-registration")

        # The registration socket removed from kubelet's directory: kubelet deregisters the plugin
        # without telling it; the periodic probe (GetInfo over that socket) notices.
        os.unlink(node.plugins[CD].registration_socket)
        liveness.next_until("NOT_SERVING", "after the registration socket went away")
        self.assertEqual((check(port, GPU), check(port, CD)), ("SERVING", "NOT_SERVING"))
        node.wait_log(r"driver=compute-domain\.nvidia\.com NOT_SERVING: GetInfo on .*compute-domain\.nvidia\.com-reg\.sock")
        self.assertEqual(node.stop(), 0)

    def test_default_port_is_off_and_opens_no_tcp_port(self):
        node = self.node()
        node.start()
        self.assertEqual(listening_tcp_ports(node.proc.pid), set())
        self.assertNotIn("grpc.health.v1", node.agent_log())

    def test_environment_variable_sets_the_port(self):
        with socket.socket(socket.AF_INET6) as s:  # a port free right now
            s.bind(("::", 0))
            port = s.getsockname()[1]
        node = self.node(env={"HEALTHCHECK_PORT": str(port)})
        node.start()
        self.assertEqual(node.healthcheck_port(), port)
        self.assertIn(port, listening_tcp_ports(node.proc.pid))

    def test_a_port_in_use_stops_the_agent_naming_the_port(self):
        busy = socket.socket(socket.AF_INET6)
        self.addCleanup(busy.close)
        busy.bind(("::", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        node = self.node(["--healthcheck-port", str(port)])
        run = subprocess.run([agent_binary()] + node.agent_args(), env=node.env(), capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(run.returncode, 1, run.stderr)
        self.assertIn(f"cannot listen for gRPC health checks on TCP port {port}", run.stderr)


if __name__ == "__main__":
    unittest.main()
