"""compute-domain.nvidia.com in upstream's default driver-managed IMEX mode (issue #29), driven from
outside: the agent on the mock NVML (gb200-nvl: NVLink clique, driver 580; dgx-a100: driver 570.148.08,
below IMEXDaemonsWithDNSNames' floor), the kubelet double over the real sockets and the validating
API-server double serving ComputeDomains and ComputeDomainCliques (upstream's CRDs) with watches and
Node patches. Readiness arrives as the daemon's ComputeDomainClique write, as on a cluster."""
import os
import re
import threading
import unittest

from compute_domain_objects import clique_object
from gpu_node import CD, SimulatedNode

GV = "resource.nvidia.com/v1beta1"


def daemon_config(uid):
    return {"apiVersion": GV, "kind": "ComputeDomainDaemonConfig", "domainID": uid}


def channel_config(uid, mode="Single"):
    return {"apiVersion": GV, "kind": "ComputeDomainChannelConfig", "domainID": uid, "allocationMode": mode}


class DriverManaged(unittest.TestCase):
    profile = "gb200-nvl"
    gates = ""
    args = ()

    def setUp(self):
        self.node = SimulatedNode(profile=self.profile, gates=self.gates,
                                  args=["--controller=false", *self.args])
        self.addCleanup(self.node.cleanup)
        self.node.start()
        self.domain = self.make_domain("train-a", "default")

    def make_domain(self, name, ns):
        cd = self.node.api.put_object({
            "apiVersion": GV, "kind": "ComputeDomain", "metadata": {"name": name, "namespace": ns},
            "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": name + "-channel"}}}})
        return cd["metadata"]["uid"]

    def clique(self):
        return self.node.wait_log(r"mode=driverManaged clique=(\S+)").group(1)

    def daemon_ready(self, uid, status="Ready"):
        self.node.api.put_object(clique_object(uid, self.clique(), self.node.node, status))

    def node_labels(self):
        return self.node.api.objects("v1", "nodes")[0]["metadata"].get("labels", {})

    def wait_label(self, key, predicate):
        self.node.api.wait_for_objects(
            "v1", "nodes", lambda nodes: predicate(nodes[0]["metadata"].get("labels", {}).get(key)), 20)

    def answer(self, claim):
        return self.node.plugins[CD].prepare([claim])[claim.uid]

    def unprepare(self, claim):
        return self.node.plugins[CD].unprepare([claim])[claim.uid]

    def daemon_claim(self, name, uid=None):
        return self.node.allocate(name, [("daemon", "daemon-0")], [([], daemon_config(uid or self.domain))], driver=CD)

    def channel_claim(self, name, uid=None, mode="Single", namespace="default"):
        return self.node.allocate(name, [("channel", "channel-0")], [([], channel_config(uid or self.domain, mode))],
                                  namespace=namespace, driver=CD)


class Publishing(DriverManaged):
    def test_publishes_channel_and_daemon_with_upstreams_attributes(self):
        devices = self.node.wait_published(lambda d: len(d) == 2, driver=CD)
        self.assertEqual(sorted(devices), ["channel-0", "daemon-0"])
        self.assertEqual(devices["channel-0"]["attributes"], {"type": {"string": "channel"}, "id": {"int": 0}})
        self.assertEqual(devices["daemon-0"]["attributes"], {"type": {"string": "daemon"}, "id": {"int": 0}})


class Watches(DriverManaged):
    """The ComputeDomain and clique watches start once the agent is ready (READY=1): at start their LISTs
    and TLS handshakes competed with the start itself. A prepare before they listed waits for them
    (every DaemonClaims test prepares right after READY=1)."""

    def test_the_watches_start_once_the_agent_is_ready(self):
        line = self.node.wait_log(r"watching ComputeDomains and ComputeDomainCliques \((.*)\)")
        self.assertEqual(line.group(1), "the agent is ready")
        self.assertLess(self.node.agent_log().index("agent: ready ms="), line.start())


class WatchesWithoutReady(unittest.TestCase):
    """A start that never gets ready (the API server refusing slices, say) starts the watches after 5 s."""

    def test_a_start_that_does_not_get_ready_starts_them_after_5_s(self):
        node = SimulatedNode(profile=DriverManaged.profile, args=["--controller=false"])
        self.addCleanup(node.cleanup)
        node.start(register=False)  # the kubelet double never confirms the registration: never ready
        line = node.wait_log(r"watching ComputeDomains and ComputeDomainCliques \((.*)\)", timeout=30)
        self.assertEqual(line.group(1), "not ready after 5 s")
        self.assertNotIn("agent: ready", node.agent_log())
        node.api.wait_for_requests(lambda log: any(r["path"].endswith("/computedomains") for r in log), 20)


class DaemonClaims(DriverManaged):
    def test_prepare_makes_the_domain_directory_and_upstreams_edits(self):
        claim = self.daemon_claim("daemon-a")
        answer = self.answer(claim)
        self.assertEqual(answer["error"], "")
        self.assertEqual(answer["devices"][0]["cdi_device_ids"],
                         ["k8s.compute-domain.nvidia.com/device=all",
                          f"k8s.compute-domain.nvidia.com/claim={claim.uid}-daemon-0"])
        domain_dir = os.path.join(self.node.dirs.plugins, CD, "domains", self.domain)
        with open(os.path.join(domain_dir, "imexd.cfg.tmpl")) as f:
            template = f.read()
        self.assertIn("IMEX_NODE_CONFIG_FILE={{ .IMEXDaemonNodesConfigPath }}\n", template)
        self.assertIn("IMEX_CMD_PORT=50005\n", template)
        spec = self.node.cdi_spec(f"k8s.compute-domain.nvidia.com-claim_{claim.uid}.yaml")
        edits = spec["devices"][0]["containerEdits"]
        self.assertEqual(edits["env"], [f"CLIQUE_ID={self.clique()}", f"COMPUTE_DOMAIN_UUID={self.domain}",
                                        "COMPUTE_DOMAIN_NAME=train-a", "COMPUTE_DOMAIN_NAMESPACE=default"])
        self.assertEqual(edits["mounts"], [{"hostPath": domain_dir, "containerPath": "/imexd",
                                            "options": ["rw", "nosuid", "nodev", "bind"]}])
        self.assertEqual([n["path"] for n in edits["deviceNodes"]], ["/dev/nvidia-caps/nvidia-cap4096"])
        self.assertIn("k8s.compute-domain.nvidia.com-device_base.yaml", self.node.cdi_files())
        self.assertEqual(self.unprepare(claim), "")
        self.assertTrue(os.path.isdir(domain_dir))  # upstream's unprepare deletes nothing

    def test_domain_directory_goes_when_the_compute_domain_is_deleted(self):
        claim = self.daemon_claim("daemon-b")
        self.assertEqual(self.answer(claim)["error"], "")
        domain_dir = os.path.join(self.node.dirs.plugins, CD, "domains", self.domain)
        self.assertEqual(self.unprepare(claim), "")
        self.node.api.delete_matching(GV, "computedomains")
        self.node.wait_log(rf"domain={self.domain} deleted: removed its domain directory")
        self.assertFalse(os.path.exists(domain_dir))

    def test_directory_kept_while_a_daemon_claim_uses_it_then_removed(self):
        claim = self.daemon_claim("daemon-e")
        self.assertEqual(self.answer(claim)["error"], "")
        domain_dir = os.path.join(self.node.dirs.plugins, CD, "domains", self.domain)
        self.node.api.delete_matching(GV, "computedomains")
        self.node.wait_log(rf"domain={self.domain} deleted: its domain directory stays while daemon claim")
        self.assertTrue(os.path.isdir(domain_dir))
        self.assertEqual(self.unprepare(claim), "")
        self.assertFalse(os.path.exists(domain_dir))

    def test_domain_deleted_while_the_agent_shuts_down(self):
        """The removal runs inside the driver's serving scope (DomainCleanup), not detached: SIGTERM right
        after the deletion ends it before the claim handler goes (under ASan a use after free would fail
        the exit status), and the next start's sweep removes what shutdown left."""
        claim = self.daemon_claim("daemon-s")
        self.assertEqual(self.answer(claim)["error"], "")
        self.assertEqual(self.unprepare(claim), "")
        domain_dir = os.path.join(self.node.dirs.plugins, CD, "domains", self.domain)
        self.node.api.delete_matching(GV, "computedomains")
        self.assertEqual(self.node.stop(), 0)
        left = os.path.exists(domain_dir)
        self.node.start()
        if left:
            self.node.wait_log(rf"domain={self.domain} deleted: removed its domain directory")
        self.assertFalse(os.path.exists(domain_dir))

    def test_stale_directories_go_at_start(self):
        # Made while the agent is down: a running agent's own first sweep (once its watches have
        # listed, late under a sanitizer) would take the stale one before the restart under test.
        self.node.stop()
        stale = os.path.join(self.node.dirs.plugins, CD, "domains", "5a1e0000-0000-4000-8000-000000000001")
        os.makedirs(stale)
        kept = os.path.join(self.node.dirs.plugins, CD, "domains", self.domain)
        os.makedirs(kept, exist_ok=True)
        self.node.start()
        self.node.wait_log(r"domain=5a1e0000-0000-4000-8000-000000000001 deleted: removed its domain directory")
        self.assertFalse(os.path.exists(stale))
        self.assertTrue(os.path.isdir(kept))

    def test_unknown_domain_is_refused_with_upstreams_words(self):
        answer = self.answer(self.daemon_claim("daemon-c", uid="0b0e4c0a-0000-4000-8000-000000000000"))
        self.assertIn("ComputeDomain not found: 0b0e4c0a-0000-4000-8000-000000000000", answer["error"])


class ChannelClaims(DriverManaged):
    def test_channel_waits_for_the_daemons_ready_then_prepares(self):
        claim = self.channel_claim("pod-a")
        result = {}
        worker = threading.Thread(target=lambda: result.update(answer=self.answer(claim)))
        worker.start()
        # The node label comes first (the daemon DaemonSet's nodeSelector), the daemon's Ready after it.
        self.wait_label("resource.nvidia.com/computeDomain", lambda v: v == self.domain)
        self.node.wait_log(r"waiting for IMEX daemon readiness")
        self.assertTrue(worker.is_alive())
        self.daemon_ready(self.domain)
        worker.join(60)
        self.assertEqual(result["answer"]["error"], "")
        self.assertEqual(result["answer"]["devices"][0]["cdi_device_ids"],
                         [f"k8s.compute-domain.nvidia.com/claim={claim.uid}-channel-0"])
        self.assertEqual(self.unprepare(claim), "")
        self.assertNotIn("resource.nvidia.com/computeDomain", self.node_labels())

    def test_daemon_claim_prepares_while_a_channel_waits(self):
        channel = self.channel_claim("pod-b")
        result = {}
        worker = threading.Thread(target=lambda: result.update(answer=self.answer(channel)))
        worker.start()
        self.node.wait_log(r"waiting for IMEX daemon readiness")
        self.assertEqual(self.answer(self.daemon_claim("daemon-d"))["error"], "")
        self.daemon_ready(self.domain)
        worker.join(60)
        self.assertEqual(result["answer"]["error"], "")

    def test_two_domains_on_one_node(self):
        # Domain A's channel waits for its daemon; domain B's channel is refused at once (the node label is
        # A's, as upstream), without waiting behind A; A's channel is prepared when its daemon is Ready.
        other = self.make_domain("train-c", "default")
        a = self.channel_claim("pod-o")
        result = {}
        worker = threading.Thread(target=lambda: result.update(answer=self.answer(a)))
        worker.start()
        self.wait_label("resource.nvidia.com/computeDomain", lambda v: v == self.domain)
        b = self.answer(self.channel_claim("pod-p", uid=other))
        self.assertIn("label already exists for a different ComputeDomain", b["error"])
        self.assertTrue(worker.is_alive())
        self.daemon_ready(self.domain)
        worker.join(60)
        self.assertEqual(result["answer"]["error"], "")
        self.assertEqual(self.unprepare(a), "")

    def test_ready_before_prepare_answers_at_once(self):
        self.daemon_ready(self.domain)
        claim = self.channel_claim("pod-c", mode="All")
        answer = self.answer(claim)
        self.assertEqual(answer["error"], "")
        spec = self.node.cdi_spec(f"k8s.compute-domain.nvidia.com-claim_{claim.uid}.yaml")
        self.assertEqual(len(spec["devices"][0]["containerEdits"]["deviceNodes"]), 2048)

    def test_prepare_reads_no_domain_or_clique_and_patches_the_node(self):
        self.daemon_ready(self.domain)
        first = self.channel_claim("pod-n0")  # the Node's labels are read once per start, at the first need
        self.assertEqual(self.answer(first)["error"], "")
        self.assertEqual(self.unprepare(first), "")
        claim = self.channel_claim("pod-n")
        self.node.api.reset_requests()
        self.assertEqual(self.answer(claim)["error"], "")
        calls = [(r["method"], r["path"]) for r in self.node.api.request_log()
                 if "watch" not in r.get("query", {}) and not r["path"].startswith("/admin")]
        # The watches answer for the ComputeDomain and its clique: no GET of them, no Node GET + PUT.
        self.assertEqual([c for c in calls if "computedomain" in c[1] or "/nodes" in c[1]],
                         [("PATCH", f"/api/v1/nodes/{self.node.node}")], calls)

    def test_wrong_namespace_is_refused_with_upstreams_words(self):
        answer = self.answer(self.channel_claim("pod-d", namespace="other"))
        self.assertIn("the ResourceClaim's namespace is different than the ComputeDomain's namespace",
                      answer["error"])

    def test_another_domains_label_refuses_the_channel(self):
        other = self.make_domain("train-b", "default")
        self.daemon_ready(other)
        first = self.channel_claim("pod-e", uid=other)
        self.assertEqual(self.answer(first)["error"], "")
        self.assertEqual(self.unprepare(first), "")
        self.node.api.put_object(dict(self.node.api.objects("v1", "nodes")[0],
                                      metadata=dict(self.node.api.objects("v1", "nodes")[0]["metadata"],
                                                    labels={"resource.nvidia.com/computeDomain": other})))
        self.node.stop()
        self.node.start()
        answer = self.answer(self.channel_claim("pod-f"))
        self.assertIn("label already exists for a different ComputeDomain", answer["error"])


class ReadinessNeverArrives(DriverManaged):
    def test_deadline_names_the_domain_the_clique_and_the_daemons_last_status(self):
        """The wait is bounded by the call's own gRPC deadline (here 4 s, not the fixed 40 s): the answer
        arrives before it (a late one would raise DEADLINE_EXCEEDED here) and says why."""
        self.daemon_ready(self.domain, status="NotReady")
        claim = self.channel_claim("pod-h")
        answer = self.node.plugins[CD].prepare([claim], timeout=4.0)[claim.uid]
        self.assertIn("until just before kubelet's deadline", answer["error"])
        self.assertIn("current node not ready in ComputeDomain", answer["error"])
        self.assertIn(f"ComputeDomainClique default/{self.domain}.{self.clique()} lists node {self.node.node} as "
                      "NotReady", answer["error"])
        self.assertIn(f"ComputeDomain default/train-a ({self.domain})", answer["error"])

    def test_domain_deleted_while_waiting_ends_the_wait(self):
        claim = self.channel_claim("pod-i")
        result = {}
        worker = threading.Thread(target=lambda: result.update(answer=self.answer(claim)))
        worker.start()
        self.node.wait_log(r"waiting for IMEX daemon readiness")
        self.node.api.delete_matching(GV, "computedomains")
        worker.join(60)
        self.assertIn(f"ComputeDomain not found: {self.domain}", result["answer"]["error"])
        self.assertEqual(self.unprepare(claim), "")
        self.assertNotIn("resource.nvidia.com/computeDomain", self.node_labels())


class WithoutCliquesGate(DriverManaged):
    gates = "ComputeDomainCliques=false"

    def test_readiness_from_the_compute_domains_status_nodes(self):
        claim = self.channel_claim("pod-g")
        result = {}
        worker = threading.Thread(target=lambda: result.update(answer=self.answer(claim)))
        worker.start()
        self.node.wait_log(r"waiting for IMEX daemon readiness")
        self.daemon_ready(self.domain)  # a clique object does not count without the gate
        cd = self.node.api.objects(GV, "computedomains")[0]
        cd["status"] = {"status": "Ready", "nodes": [{"name": self.node.node, "ipAddress": "10.0.0.7",
                                                      "cliqueID": self.clique(), "index": 0, "status": "Ready"}]}
        self.node.api.put_object(cd)
        worker.join(60)
        self.assertEqual(result["answer"]["error"], "")


class CliqueLabel(DriverManaged):
    args = ("--gpu-clique-label-enabled=true",)

    def test_clique_label_set_at_start_and_removed_at_shutdown(self):
        self.wait_label("nvidia.com/gpu.clique", lambda v: v == self.clique())
        self.assertEqual(self.node.stop(), 0)
        self.assertNotIn("nvidia.com/gpu.clique", self.node_labels())


class ModeChange(DriverManaged):
    """The agent restarted in the other IMEX mode while a channel claim of the first is prepared."""

    def restart(self, host_managed):
        self.node.stop()
        self.node.gates = "HostManagedIMEX=true" if host_managed else ""
        self.node.extra_args = ["--controller=false"] + (["--imex-check=off"] if host_managed else [])
        self.node.start()

    def test_driver_managed_claim_unprepared_in_host_managed_mode(self):
        self.daemon_ready(self.domain)
        claim = self.channel_claim("pod-j")
        self.assertEqual(self.answer(claim)["error"], "")
        self.assertEqual(self.node_labels().get("resource.nvidia.com/computeDomain"), self.domain)
        self.restart(host_managed=True)
        self.assertEqual(self.unprepare(claim), "")
        self.assertNotIn("resource.nvidia.com/computeDomain", self.node_labels())
        self.assertEqual(self.node.checkpoint(CD), {})
        fresh = self.channel_claim("pod-k")  # new claims follow the new mode: no label, no readiness wait
        self.assertEqual(self.answer(fresh)["error"], "")
        self.assertNotIn("resource.nvidia.com/computeDomain", self.node_labels())

    def test_host_managed_claim_unprepared_in_driver_managed_mode(self):
        self.restart(host_managed=True)
        claim = self.channel_claim("pod-l")
        self.assertEqual(self.answer(claim)["error"], "")
        self.restart(host_managed=False)
        self.assertEqual(self.unprepare(claim), "")
        self.assertEqual(self.node.checkpoint(CD), {})
        self.assertEqual([f for f in self.node.cdi_files() if "claim_" in f], [])


class NoClique(DriverManaged):
    profile = "l4"  # driver 570.158.01, exactly IMEXDaemonsWithDNSNames' floor; no NVLink fabric

    def test_channel_prepared_without_a_device_and_a_warning_event(self):
        cd = self.node.api.objects(GV, "computedomains")[0]
        cd["status"] = {"status": "Ready", "nodes": [{"name": self.node.node, "ipAddress": "10.0.0.7",
                                                      "cliqueID": "", "index": 0, "status": "Ready"}]}
        self.node.api.put_object(cd)
        claim = self.channel_claim("pod-m")
        answer = self.answer(claim)
        self.assertEqual(answer["error"], "")
        self.assertEqual(answer["devices"][0]["cdi_device_ids"], [])  # upstream's answer
        self.assertFalse([f for f in self.node.cdi_files() if claim.uid in f])
        events = self.node.wait_for_events(claim.uid, lambda items: any(e["reason"] == "NoNVLinkClique"
                                                                         for e in items))
        note = next(e for e in events if e["reason"] == "NoNVLinkClique")["note"]
        self.assertIn("has no NVLink clique", note)
        self.assertEqual(self.unprepare(claim), "")


class OldDriver(DriverManaged):
    profile = "dgx-a100"

    def test_dns_names_gate_refuses_a_driver_below_570_158_01(self):
        self.node.wait_log(re.escape("IMEXDaemonsWithDNSNames feature requires GPU driver version >= 570.158.01, "
                                     "but found 570.148.08"))
        self.assertEqual(self.node.published(CD), {})


class FabricRegistering(DriverManaged):
    """Issue #30 point 6 (upstream #1264): one GPU's NVLink fabric still IN_PROGRESS at start. The driver
    serves (no crash loop), offers nothing and says why, re-reads the fabric every few seconds and
    publishes and serves channels once it is COMPLETED, without a restart."""
    gpu = "GPU-2c7d9e41-5b6a-4f3e-a1d2-3e4f5a6b7c02"  # gb200-nvl's second GPU

    def setUp(self):
        self.node = SimulatedNode(profile=self.profile, args=["--controller=false"])
        self.addCleanup(self.node.cleanup)
        self.node.set_fabric_state(self.gpu, 2)  # NVML_GPU_FABRIC_STATE_IN_PROGRESS
        self.node.start()
        self.domain = self.make_domain("train-f", "default")

    def clique(self):
        return self.node.wait_log(r"NVLink clique now (\S+) \(was none\)").group(1)

    def test_channels_served_once_the_fabric_completes(self):
        why = rf"GPU {self.gpu}: NVLink fabric state IN_PROGRESS, still registering"
        self.node.wait_log(rf"channels and daemons are not offered yet: {why}")
        self.node.wait_published(lambda d: d == {}, driver=CD)
        answer = self.answer(self.channel_claim("pod-f1"))
        self.assertRegex(answer["error"], rf"NVLink clique is not known yet \({why}")
        self.node.set_fabric_state(self.gpu, 3)  # registration finishes
        self.node.wait_log(r"NVLink clique now (\S+) \(was none\): claims prepared from now on use it")
        self.node.wait_published(lambda d: sorted(d) == ["channel-0", "daemon-0"], driver=CD)
        self.daemon_ready(self.domain)
        self.assertEqual(self.answer(self.channel_claim("pod-f2"))["error"], "")
        self.assertIsNotNone(self.node.proc)
        self.assertIsNone(self.node.proc.poll(), "the agent kept running (no restart)")


if __name__ == "__main__":
    unittest.main()
