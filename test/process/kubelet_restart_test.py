"""kubelet restarts under a running agent (issue #30): the kubelet double goes away (its connections closed) and
a new one comes back, dialling the registration sockets again and opening new connections to both plugin
sockets. Both plugins are registered again by the same agent process, prepared claims stay intact, and the
device health stream opens again. An idle connection on which the client sends keepalive pings (kubelet keeps
one connection per plugin for hours, kubernetes #133920) is never dropped by the plugin's server."""
import threading
import unittest

import grpc

from device_health_test import HealthWatch
from gpu_node import CD, GPU, SimulatedNode
from kubelet_double.double import KubeletDouble

PING_MS = 1000  # the client's keepalive period (C-core's client pings at most once a second)
IDLE_S = 5  # idle past several keepalive periods


class KubeletRestart(unittest.TestCase):
    def setUp(self):
        self.node = SimulatedNode(profile="dgx-a100", gates="NVMLDeviceHealthCheck=true")
        self.addCleanup(self.node.cleanup)
        self.node.start()

    def test_both_plugins_register_again_with_claims_and_health_intact(self):
        node = self.node
        pid = node.proc.pid
        claim = node.allocate("survivor", [("gpu", "gpu-0")])
        self.assertEqual(node.gpu().prepare([claim])[claim.uid]["error"], "")
        before = HealthWatch(node.gpu(), "v1.DRAResourceHealth")
        self.addCleanup(before.close)
        before.wait(lambda devices: "gpu-0" in devices)

        node.kubelet.close()  # kubelet goes: every connection it had closes
        before.close()
        node.kubelet = KubeletDouble(node.dirs.registrar)  # and comes back
        node.plugins = node.kubelet.wait_for_plugins([GPU, CD], timeout=20.0)

        self.assertEqual(node.proc.pid, pid)
        self.assertIsNone(node.proc.poll())
        self.assertNotIn("restarting in", node.agent_log())
        after = HealthWatch(node.gpu(), "v1.DRAResourceHealth")
        self.addCleanup(after.close)
        self.assertEqual(after.wait(lambda devices: "gpu-0" in devices)["gpu-0"]["health"], "HEALTHY")
        # The claim prepared before kubelet went is still prepared: the same answer, then a clean unprepare.
        self.assertEqual(node.gpu().prepare([claim])[claim.uid]["error"], "")
        self.assertIn(claim.uid, node.checkpoint())
        self.assertEqual(node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assertEqual(node.checkpoint(), {})

    def test_an_idle_connection_with_keepalive_pings_is_kept(self):
        # kubelet keeps one connection per plugin for hours (kubernetes #133920). A client pinging an idle
        # connection every second (no call in flight) keeps it: READY throughout, then a call on it works.
        # (Debian's gRPC 1.51 server was seen tolerating these pings even without the plugin server's explicit
        # keepalive arguments; the arguments keep that policy from depending on gRPC's defaults.)
        endpoint = self.node.gpu().endpoint
        options = [("grpc.keepalive_time_ms", PING_MS), ("grpc.keepalive_timeout_ms", 5000),
                   ("grpc.http2.min_time_between_pings_ms", PING_MS),
                   ("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.max_pings_without_data", 0)]
        channel = grpc.insecure_channel("unix:" + endpoint, options=options)
        self.addCleanup(channel.close)
        states = []
        left_ready = threading.Event()

        def follow(state):
            states.append(state)
            if state != grpc.ChannelConnectivity.READY and grpc.ChannelConnectivity.READY in states:
                left_ready.set()

        grpc.channel_ready_future(channel).result(timeout=10)
        channel.subscribe(follow, try_to_connect=True)
        self.addCleanup(channel.unsubscribe, follow)
        # The event that must not come: the server dropping the connection (GOAWAY too_many_pings).
        self.assertFalse(left_ready.wait(timeout=IDLE_S),
                         f"the plugin's server dropped an idle connection with keepalive pings: {states}")
        claim = self.node.allocate("idle", [("gpu", "gpu-1")])
        self.node.gpu()._channel = channel  # the same connection, still usable
        self.assertEqual(self.node.gpu().prepare([claim])[claim.uid]["error"], "")
        self.assertEqual(self.node.gpu().unprepare([claim]), {claim.uid: ""})
        self.assertEqual(states[-1], grpc.ChannelConnectivity.READY)


if __name__ == "__main__":
    unittest.main()
