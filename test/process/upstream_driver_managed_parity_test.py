"""nvdra against upstream's compute-domain-kubelet-plugin in driver-managed IMEX mode (upstream's default,
--imex-mode=driverManaged, gates IMEXDaemonsWithDNSNames and ComputeDomainCliques on) on the same simulated
gb200-nvl node and API double: the slices are equal, and the same channel claims get the same answers —
prepared once the daemon's ComputeDomainClique entry is Ready, refused in upstream's words for a wrong
namespace, and the node label set and removed; a daemon claim gets the same answer, CDI edits (the node-wide
device=all spec included) and domain directory (upstream copies its image's /templates/compute-domain-daemon-config.tmpl.cfg: here a file of the keys
upstream-driver.md §9.4 lists, bound over /templates in upstream's mount namespace); a channel whose daemon never
turns Ready gets upstream's `current node not ready in ComputeDomain` from both (upstream after its own 45 s
retries, nvdra before the call's shorter deadline). Runs where NVDRA_UPSTREAM_DIR names the unpacked upstream
binaries and the test runs as root; skips with one line elsewhere (exit 77)."""
import json
import os
import stat
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdi_edits import claim_edits
from compute_domain_objects import clique_object
from gpu_node import CD
from upstream_node import UpstreamPlugins, exit_without_upstream, needs_upstream, upstream_node
from upstream_parity_test import comparable, ids_of, slices_of

GV = "resource.nvidia.com/v1beta1"
LABEL = "resource.nvidia.com/computeDomain"
BASE_SPEC = "k8s.compute-domain.nvidia.com-device_base.yaml"


def channel_config(uid):
    return {"apiVersion": GV, "kind": "ComputeDomainChannelConfig", "domainID": uid, "allocationMode": "Single"}


# The IMEX daemon config template as upstream's image ships it: the keys upstream-driver.md §9.4 lists, in its
# order, with comments (the real file's are longer). Upstream copies the file; nvdra writes the keys alone.
TEMPLATE_KEYS = {
    "logging": ["LOG_LEVEL=4", "LOG_FILE_NAME=", "STATS_FILE_NAME=/var/log/nvidia-imex-stats.log",
                "LOG_APPEND_TO_LOG=0", "LOG_FILE_MAX_SIZE=1024", "LOG_MAX_ROTATE_COUNT=10", "LOG_USE_SYSLOG=0"],
    "process": ["DAEMONIZE=0"],
    "network": ["BIND_INTERFACE_IP=", "SERVER_PORT=50000", "IMEX_NODE_CONFIG_FILE={{ .IMEXDaemonNodesConfigPath }}",
                "NETWORK_INTERFACE=", "IMEX_WAIT_FOR_QUORUM=RECOVERY"],
    "security": ["IMEX_ENABLE_AUTH_ENCRYPTION=0", "IMEX_AUTH_ENCRYPTION_MODE=SSL_TLS", "IMEX_AUTH_SOURCE=",
                 "IMEX_SERVER_KEY=", "IMEX_SERVER_CERT=", "IMEX_SERVER_CERT_AUTH=", "IMEX_CLIENT_KEY=",
                 "IMEX_CLIENT_CERT=", "IMEX_CLIENT_CERT_AUTH=", "IMEX_SECURITY_TARGET_OVERRIDE=",
                 "IMEX_GSS_SERVICE_NAME=host", "IMEX_GSS_TIMEOUT_SEC=30", "IMEX_GSS_RETRY_INTERVAL_SEC=5",
                 "IMEX_GSS_SEC_CONTEXT_LIFETIME_SEC=-1", "IMEX_GSS_SHUTDOWN_ON_FAILURE=0"],
    "command service": ["IMEX_CMD_ENABLED=1", "IMEX_CMD_BIND_INTERFACE_IP={{ .IMEXCmdBindInterfaceIP }}",
                        "IMEX_CMD_PORT=50005", "IMEX_CMD_UNIX_DOMAIN_PATH="],
    "failures": ["IMEX_NODE_DISCONNECTED_GRACE_TIME=-1"],
}
TEMPLATE = "".join(f"# {section}\n" + "".join(k + "\n" for k in keys) + "\n" for section, keys in TEMPLATE_KEYS.items())


def keys_of(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def templates_dir(node):
    path = os.path.join(node.root, "upstream-templates")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "compute-domain-daemon-config.tmpl.cfg"), "w") as f:
        f.write(TEMPLATE)
    return path


def domain_dir(node, uid):
    """{name: (octal mode, content)} of the domain directory, "." for the directory itself."""
    path = os.path.join(node.dirs.plugins, CD, "domains", uid)
    out = {".": oct(stat.S_IMODE(os.stat(path).st_mode))}
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name)) as f:
            out[name] = (oct(stat.S_IMODE(os.stat(os.path.join(path, name)).st_mode)), f.read())
    return out


def base_spec(node):
    """The node-wide spec daemon claims name (.../device=all), parsed (nvdra writes JSON, upstream YAML: README)."""
    with open(os.path.join(node.dirs.cdi, BASE_SPEC)) as f:
        return yaml.safe_load(f)


def normalised(value, names):
    """`value` with each key of `names` replaced by its value, through its JSON (sets as sorted lists)."""
    text = json.dumps(value, sort_keys=True, default=sorted)
    for old, new in names.items():
        text = text.replace(old, new)
    return json.loads(text)


def daemon_side(node, plugin, which, uid):
    claim = node.allocate(f"daemon-{which}", [("daemon", "daemon-0")],
                          [([], {"apiVersion": GV, "kind": "ComputeDomainDaemonConfig", "domainID": uid})], driver=CD)
    answer = plugin.prepare([claim])[claim.uid]
    names = {claim.uid: "<claim>", uid: "<cd>", f"cd-{which}": "<cd-name>"}
    # Everything the runtime applies: the daemon's own device (the claim spec) and the node-wide device=all
    # (nvcdi's "management" spec: every device node of the driver root's /dev, IMEX channels and caps included).
    edits = claim_edits(node.dirs.cdi, ids_of(answer)) if not answer["error"] else {}
    out = {"answer": normalised((answer["error"], ids_of(answer)), names), "edits": normalised(edits, names),
           "dir": domain_dir(node, uid) if not answer["error"] else None}
    out["unprepare"] = plugin.unprepare([claim])[claim.uid]
    return out


def not_ready_side(node, plugin, which, timeout):
    """A channel of a second ComputeDomain whose daemon never reports: the prepare's error (None: the claim was
    left out of the answer), then its unprepare (the label goes)."""
    cd = node.api.put_object({"apiVersion": GV, "kind": "ComputeDomain",
                              "metadata": {"name": f"nr-{which}", "namespace": "default"},
                              "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "nr"}}}})
    uid = cd["metadata"]["uid"]
    claim = node.allocate(f"nr-{which}", [("channel", "channel-0")], [([], channel_config(uid))], driver=CD)
    answer = plugin.prepare([claim], timeout=timeout).get(claim.uid)
    return {"error": answer["error"] if answer else None, "unprepare": plugin.unprepare([claim])[claim.uid]}


@needs_upstream
class DriverManagedParity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.node = node = upstream_node("gb200-nvl", args=["--controller=false"], drivers=[CD])
        cls.seen = {}
        try:
            for which in ("nvdra", "upstream"):
                cls.seen[which] = cls.run_side(which)
        except Exception:
            node.cleanup()
            raise

    @classmethod
    def run_side(cls, which):
        node, out = cls.node, {}
        cd = node.api.put_object({"apiVersion": GV, "kind": "ComputeDomain",
                                  "metadata": {"name": f"cd-{which}", "namespace": "default"},
                                  "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "t"}}}})
        uid = cd["metadata"]["uid"]
        up = None
        if which == "nvdra":
            node.start()
            plugin = node.plugins[CD]
        else:
            up = UpstreamPlugins(node, drivers=[CD], imex_mode="driverManaged", templates=templates_dir(node),
                                 gates={CD: "IMEXDaemonsWithDNSNames=true,ComputeDomainCliques=true"})
            up.start(wait_slices=False)
            plugin = up.cd()
        try:
            out["slices"] = node.api.wait_for_objects(
                "resource.k8s.io/v1", "resourceslices",
                lambda items: any(s["spec"]["driver"] == CD and s["spec"].get("devices") for s in items), 60)
            out["slices"] = slices_of(node, CD)
            out["base"] = base_spec(node)
            wrong = node.allocate(f"wrong-{which}", [("channel", "channel-0")], [([], channel_config(uid))],
                                  namespace="other", driver=CD)
            out["wrong"] = plugin.prepare([wrong])[wrong.uid]["error"]
            clique = node.wait_log(r"mode=driverManaged clique=(\S+)").group(1)
            node.api.put_object(clique_object(uid, clique, node.node))
            claim = node.allocate(f"ch-{which}", [("channel", "channel-0")], [([], channel_config(uid))], driver=CD)
            answer = plugin.prepare([claim])[claim.uid]
            out["answer"] = (answer["error"], [i.replace(claim.uid, "<uid>") for i in ids_of(answer)])
            edits = claim_edits(node.dirs.cdi, ids_of(answer)) if not answer["error"] else {}
            out["edits"] = dict(edits, files={f.replace(claim.uid, "<uid>") for f in edits.get("files", ())})
            out["label"] = node.api.objects("v1", "nodes")[0]["metadata"].get("labels", {}).get(LABEL) == uid
            out["unprepare"] = plugin.unprepare([claim])[claim.uid]
            out["label_after"] = node.api.objects("v1", "nodes")[0]["metadata"].get("labels", {}).get(LABEL)
            out["daemon"] = daemon_side(node, plugin, which, uid)
            # Upstream retries until its own 45 s deadline: its call gets more; nvdra answers before a short one.
            out["not_ready"] = not_ready_side(node, plugin, which, 60.0 if which == "upstream" else 5.0)
            out["not_ready"]["logged"] = "current node not ready in ComputeDomain" in (up.log_text() if up else "")
        finally:
            if up:
                up.cleanup()
            else:
                node.stop()
            node.api.delete_matching("resource.k8s.io/v1", "resourceslices", "")
        return out

    @classmethod
    def tearDownClass(cls):
        cls.node.cleanup()

    def test_slices_equal(self):
        self.assertTrue(self.seen["upstream"]["slices"])
        self.assertEqual(comparable(self.seen["nvdra"]["slices"]), comparable(self.seen["upstream"]["slices"]))

    def test_node_wide_daemon_spec_equal(self):
        """The spec behind .../device=all, written at start by each side into the same CDI root: the same
        device "all" (every device node of the driver's /dev, in nvcdi's order) and the same spec-wide edits."""
        upstream = self.seen["upstream"]["base"]
        paths = [n["path"] for n in upstream["devices"][0]["containerEdits"]["deviceNodes"]]
        self.assertIn("/dev/nvidia-caps-imex-channels/channel0", paths)
        self.assertEqual(self.seen["nvdra"]["base"], upstream)

    def test_channel_answers_and_edits_equal(self):
        self.assertEqual(self.seen["nvdra"]["answer"], self.seen["upstream"]["answer"])
        self.assertEqual(self.seen["nvdra"]["edits"], self.seen["upstream"]["edits"])

    def test_both_label_the_node_and_remove_the_label(self):
        for which in ("nvdra", "upstream"):
            self.assertTrue(self.seen[which]["label"], which)
            self.assertEqual(self.seen[which]["unprepare"], "", which)
            self.assertIsNone(self.seen[which]["label_after"], which)

    def test_daemon_answers_edits_and_domain_directory_equal(self):
        nvdra, upstream = self.seen["nvdra"]["daemon"], self.seen["upstream"]["daemon"]
        self.assertEqual(upstream["answer"][0], "")
        self.assertEqual(nvdra["answer"], upstream["answer"])
        self.assertEqual(nvdra["edits"], upstream["edits"])
        self.assertEqual(upstream["dir"]["imexd.cfg.tmpl"][1], TEMPLATE)  # upstream copies the image's file
        # The same names and modes, and the same keys in the same order (README: nvdra's file has no comments).
        self.assertEqual({k: v[0] if k != "." else v for k, v in nvdra["dir"].items()},
                         {k: v[0] if k != "." else v for k, v in upstream["dir"].items()})
        self.assertEqual(keys_of(nvdra["dir"]["imexd.cfg.tmpl"][1]), keys_of(TEMPLATE))
        self.assertEqual((nvdra["unprepare"], upstream["unprepare"]), ("", ""))

    def test_not_ready_in_upstreams_words(self):
        """Upstream retries until its own 45 s and then leaves the claim out of its answer (its words only in its
        log); nvdra answers with them before the call's deadline (README: a deliberate difference)."""
        nvdra, upstream = self.seen["nvdra"]["not_ready"], self.seen["upstream"]["not_ready"]
        self.assertIn("current node not ready in ComputeDomain", nvdra["error"])
        self.assertTrue(upstream["logged"])
        if upstream["error"] is not None:
            self.assertIn("current node not ready in ComputeDomain", upstream["error"])
        self.assertEqual((nvdra["unprepare"], upstream["unprepare"]), ("", ""))

    def test_wrong_namespace_in_upstreams_words(self):
        for which in ("nvdra", "upstream"):
            self.assertIn("the ResourceClaim's namespace is different than the ComputeDomain's namespace",
                          self.seen[which]["wrong"], which)


@needs_upstream
class DriverManagedTakeOver(unittest.TestCase):
    """One side prepares a channel claim (its daemon Ready) and stops; the other starts on the same plugins
    directory and unprepares it: the node label, the claim's CDI spec and the checkpoint entry are gone."""

    def setUp(self):
        self.node = upstream_node("gb200-nvl", args=["--controller=false"], drivers=[CD])
        self.addCleanup(self.node.cleanup)
        self.node.start()  # the clique id, from nvdra's log
        self.clique = self.node.wait_log(r"mode=driverManaged clique=(\S+)").group(1)
        self.node.stop()
        cd = self.node.api.put_object({"apiVersion": GV, "kind": "ComputeDomain",
                                       "metadata": {"name": "cd", "namespace": "default"},
                                       "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "t"}}}})
        self.uid = cd["metadata"]["uid"]
        self.node.api.put_object(clique_object(self.uid, self.clique, self.node.node))
        self.claim = self.node.allocate("ch", [("channel", "channel-0")], [([], channel_config(self.uid))], driver=CD)

    def side(self, which):
        if which == "nvdra":
            self.node.start()
            return None, self.node.plugins[CD]
        up = UpstreamPlugins(self.node, drivers=[CD], imex_mode="driverManaged",
                             gates={CD: "IMEXDaemonsWithDNSNames=true,ComputeDomainCliques=true"})
        up.start(wait_slices=False)
        return up, up.cd()

    def stop(self, up):
        if up:
            up.cleanup()
        else:
            self.node.stop()

    def label(self):
        return self.node.api.objects("v1", "nodes")[0]["metadata"].get("labels", {}).get(LABEL)

    def hand_over(self, first, second):
        up, plugin = self.side(first)
        try:
            self.assertEqual(plugin.prepare([self.claim])[self.claim.uid]["error"], "")
        finally:
            self.stop(up)
        self.assertEqual(self.label(), self.uid)
        self.assertEqual(sorted(self.node.checkpoint(CD)), [self.claim.uid])
        up, plugin = self.side(second)
        try:
            self.assertEqual(plugin.unprepare([self.claim])[self.claim.uid], "")
        finally:
            self.stop(up)
        self.assertIsNone(self.label())
        self.assertEqual(self.node.checkpoint(CD), {})
        self.assertEqual([f for f in self.node.cdi_files() if "claim_" in f], [])

    def test_upstream_takes_over_from_nvdra(self):
        self.hand_over("nvdra", "upstream")

    def test_nvdra_takes_over_from_upstream(self):
        self.hand_over("upstream", "nvdra")


if __name__ == "__main__":
    exit_without_upstream()
    unittest.main()
