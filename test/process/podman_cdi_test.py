"""Claims of every kind prepared by the agent on a simulated node, their CDI ids handed to a real
container runtime: Debian's podman (4.3, with its own copy of the container-device-interface
library). `podman create --device <id>` + `podman init` must resolve every id and put the specs'
edits into the container's OCI spec (device nodes, env, mounts, hooks); crun then creates the
container, running the createContainer hooks. cdi_consumer_test.py is the fast check beside it.

The simulated node keeps its device nodes in the driver root's dev/ (the GPU Operator's layout), as
real character devices, so the hostPaths the specs name exist. VFIO specs name their nodes by path
only, as upstream's do (/dev/vfio/<group>, /dev/vfio/vfio, /dev/iommu, /dev/vfio/devices/vfioN): podman
stats them on the host, so the nodes the fake kernel made under the simulated host root are given to
podman as character devices of its namespace's /dev (podman_runtime's host_devices). Needs root (rootful podman, mknod,
a private mount namespace: see podman_runtime.py); skips with one line where those are missing,
and fails instead when CI=true.
"""
import os
import stat
import tempfile
import unittest

import yaml

from gpu_node import CD, GPU, SimulatedNode, gpu_config
from podman_runtime import PodmanRuntime, podman_binary
import prerequisites


def missing_requirements():
    missing = []
    if not podman_binary():
        missing.append("podman (Debian package podman)")
    if os.geteuid() != 0:
        missing.append("root (rootful podman, mknod, unshare -m)")
    return missing


def spec_devices(cdi_dir):
    """{qualified id: (file, spec, device)} of every spec file, as a runtime loads them (JSON is YAML)."""
    found = {}
    for name in sorted(os.listdir(cdi_dir)):
        if name.startswith(".") or not name.endswith((".yaml", ".json")):
            continue
        with open(os.path.join(cdi_dir, name)) as f:
            spec = yaml.safe_load(f)
        for dev in spec["devices"]:
            found[spec["kind"] + "=" + dev["name"]] = (name, spec, dev)
    return found


VFIO_CONFIG = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "VfioDeviceConfig"}
# Numbers of the host's VFIO nodes: /dev/vfio/vfio is the misc device 10:196 (VFIO_MINOR); the others'
# majors are dynamic on a real host, here fixed ones (a group's minor is its group number).
VFIO_CONTAINER, IOMMUFD = (10, 196), (10, 123)
VFIO_GROUP_MAJOR, VFIO_CDEV_MAJOR = 243, 238


def vfio_host_devices(host_root):
    """{path: (major, minor)} for the VFIO nodes the simulated host has now (the fake kernel makes
    /dev/vfio/<group> and, on an iommufd host, /dev/vfio/devices/vfioN as it binds vfio-pci)."""
    found = {}
    for path in ("/dev/vfio/vfio", "/dev/iommu"):
        if os.path.exists(host_root + path):
            found[path] = VFIO_CONTAINER if path == "/dev/vfio/vfio" else IOMMUFD
    for name in os.listdir(os.path.join(host_root, "dev", "vfio")):
        if name.isdigit():
            found["/dev/vfio/" + name] = (VFIO_GROUP_MAJOR, int(name))
    cdevs = os.path.join(host_root, "dev", "vfio", "devices")
    for name in os.listdir(cdevs) if os.path.isdir(cdevs) else []:
        found["/dev/vfio/devices/" + name] = (VFIO_CDEV_MAJOR, int(name[len("vfio"):]))
    return found


def merged_edits(cdi_dir, ids):
    """The edits the ids ask for: each device's, plus its spec's spec-level edits once."""
    devices = spec_devices(cdi_dir)
    merged = {"env": [], "deviceNodes": [], "mounts": [], "hooks": []}
    seen = set()
    for cdi_id in ids:
        name, spec, dev = devices[cdi_id]
        parts = [dev.get("containerEdits", {})]
        if name not in seen:
            seen.add(name)
            parts.append(spec.get("containerEdits", {}))
        for edits in parts:
            for key in merged:
                merged[key].extend(edits.get(key, []))
    return merged


class PodmanCdi(unittest.TestCase):
    def setUp(self):
        missing = missing_requirements()
        if missing:
            prerequisites.missing(", ".join(missing), "the podman CDI check; see contrib/dev/packages.txt")
        self.tmp = tempfile.TemporaryDirectory(prefix="nvdra-podman-")
        self.addCleanup(self.tmp.cleanup)
        self.podman = PodmanRuntime(os.path.join(self.tmp.name, "podman"))
        self.addCleanup(self.podman.cleanup)

    def node(self, **kw):
        node = SimulatedNode(node_options=("--driver-container",), **kw)
        self.addCleanup(node.cleanup)
        nvidia0 = os.path.join(node.driver_root, "dev", "nvidia0")
        if not stat.S_ISCHR(os.stat(nvidia0).st_mode):
            self.fail(f"{nvidia0} is not a character device: mknod was refused")
        node.start()
        return node

    def prepared_ids(self, plugin, claims):
        answer = plugin.prepare(claims)
        self.assertEqual({c.name: answer[c.uid]["error"] for c in claims}, {c.name: "" for c in claims})
        return {c.name: [i for d in answer[c.uid]["devices"] for i in d["cdi_device_ids"]] for c in claims}

    def assert_applied(self, node, name, ids, result):
        """Every edit of the ids' specs is in the container's OCI spec."""
        self.assertEqual(result["error"], "", name)
        oci = result["config"]
        self.assertIsNotNone(oci, f"{name}: podman wrote no config.json")
        edits = merged_edits(node.dirs.cdi, ids)
        for e in edits["env"]:
            self.assertIn(e, oci["process"]["env"], name)
        devices = {d["path"]: d for d in oci["linux"].get("devices", [])}
        for n in edits["deviceNodes"]:
            self.assertIn(n["path"], devices, name)
            got = devices[n["path"]]
            self.assertEqual(got["type"], "c", f"{name}: {n['path']}")
            if "hostPath" in n:  # the runtime read the node on the host
                rdev = os.stat(n["hostPath"]).st_rdev
                self.assertEqual((got["major"], got["minor"]), (os.major(rdev), os.minor(rdev)), name)
            if "major" in n:
                self.assertEqual((got["major"], got["minor"]), (n["major"], n.get("minor", 0)), f"{name}: {n['path']}")
        mounts = {m["destination"]: m for m in oci.get("mounts", [])}
        for m in edits["mounts"]:
            self.assertIn(m["containerPath"], mounts, name)
            self.assertEqual(mounts[m["containerPath"]]["source"], m["hostPath"], name)
        hooks = [(h["path"], h.get("args"), h.get("env")) for h in oci.get("hooks", {}).get("createContainer", [])]
        for h in edits["hooks"]:
            self.assertIn((h["path"], h["args"], h.get("env")), hooks, name)
        return edits

    def test_gpu_claims_of_every_static_kind_start_in_podman(self):
        node = self.node(profile="dgx-a100", gates="TimeSlicingSettings=true,MPSSupport=true")
        devices = node.published()
        full = sorted(n for n in devices if "-mig-" not in n and not any(m.startswith(n + "-mig-") for m in devices))
        migs = sorted(n for n in devices if "-mig-" in n)
        claims = [
            node.allocate("full-gpu", [("gpu", full[0])]),
            node.allocate("static-mig", [("mig", migs[0]), ("mig", migs[-1])]),
            node.allocate("time-slicing", [("gpu", full[1])],
                          [([], gpu_config(sharing={"strategy": "TimeSlicing",
                                                    "timeSlicingConfig": {"interval": "Long"}}))]),
            node.allocate("mps", [("gpu", full[2])],
                          [([], gpu_config(sharing={"strategy": "MPS",
                                                    "mpsConfig": {"defaultActiveThreadPercentage": 50}}))]),
        ]
        ids = self.prepared_ids(node.gpu(), claims)
        ids["two-claims"] = ids["full-gpu"] + ids["time-slicing"]  # one container, two claims
        results = self.podman.apply(node.dirs.cdi, ids)
        for name, claim_ids in ids.items():
            edits = self.assert_applied(node, name, claim_ids, results[name])
            self.assertIn("NVIDIA_VISIBLE_DEVICES=void", edits["env"], name)
            # Four hooks per claim spec (each spec carries the driver's edits, as upstream's do).
            self.assertEqual(len(edits["hooks"]), 8 if name == "two-claims" else 4, name)
        mig_nodes = [n["path"] for n in merged_edits(node.dirs.cdi, ids["static-mig"])["deviceNodes"]]
        self.assertEqual(len([p for p in mig_nodes if p.startswith("/dev/nvidia-caps/")]), 4, mig_nodes)
        mps_mounts = {m["containerPath"] for m in merged_edits(node.dirs.cdi, ids["mps"])["mounts"]}
        self.assertTrue({"/dev/shm", "/tmp/nvidia-mps"} <= mps_mounts, mps_mounts)
        # crun ran the driver's createContainer hooks (the node's nvidia-cdi-hook records its arguments).
        self.assertIn("update-ldcache --folder", node.helper_log("nvidia-cdi-hook"))

        # Unprepared: the ids no longer resolve, and podman says so.
        self.assertEqual(set(node.gpu().unprepare(claims).values()), {""})
        gone = self.podman.apply(node.dirs.cdi, {"gone": ids["full-gpu"]})["gone"]
        self.assertIn("unresolvable CDI devices " + ids["full-gpu"][0], gone["error"])

    def test_dynamic_mig_claim_starts_in_podman(self):
        node = self.node(profile="hgx-h100", gates="DynamicMIG=true")
        mig = sorted(n for n in node.published() if n.startswith("gpu-0-mig-"))[0]
        claim = node.allocate("dynamic-mig", [("mig", mig)])
        ids = self.prepared_ids(node.gpu(), [claim])
        result = self.podman.apply(node.dirs.cdi, ids)["dynamic-mig"]
        edits = self.assert_applied(node, "dynamic-mig", ids["dynamic-mig"], result)
        self.assertEqual(len([n for n in edits["deviceNodes"] if n["path"].startswith("/dev/nvidia-caps/")]), 2)
        self.assertEqual(node.gpu().unprepare([claim]), {claim.uid: ""})

    def test_imex_channel_claim_starts_in_podman(self):
        node = self.node(profile="gb200-nvl", gates="HostManagedIMEX=true",
                         args=["--controller=false", "--imex-check=off"])
        domain = node.api.put_object({
            "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
            "metadata": {"name": "train-a", "namespace": "default"},
            "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "train-a-channel"},
                                                "allocationMode": "Single"}}})["metadata"]["uid"]
        claim = node.allocate("channel", [("channel", "channel-0")],
                              [([], {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainChannelConfig",
                                     "domainID": domain, "allocationMode": "Single"})], driver=CD)
        ids = self.prepared_ids(node.plugins[CD], [claim])
        result = self.podman.apply(node.dirs.cdi, ids)["channel"]
        edits = self.assert_applied(node, "channel", ids["channel"], result)
        self.assertEqual([n["path"] for n in edits["deviceNodes"]], ["/dev/nvidia-caps-imex-channels/channel0"])
        self.assertEqual(node.plugins[CD].unprepare([claim]), {claim.uid: ""})

    def test_driver_managed_daemon_claim_starts_in_podman(self):
        # Upstream's default IMEX mode: the daemon claim's ids name its claim spec and the node-wide
        # device_base spec (device=all, upstream's management nodes); podman resolves both.
        node = self.node(profile="gb200-nvl", args=["--controller=false"])
        domain = node.api.put_object({
            "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
            "metadata": {"name": "train-b", "namespace": "default"},
            "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "train-b-channel"}}}})["metadata"]["uid"]
        claim = node.allocate("daemon", [("daemon", "daemon-0")],
                              [([], {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomainDaemonConfig",
                                     "domainID": domain})], driver=CD)
        ids = self.prepared_ids(node.plugins[CD], [claim])
        result = self.podman.apply(node.dirs.cdi, ids)["daemon"]
        edits = self.assert_applied(node, "daemon", ids["daemon"], result)
        self.assertIn(f"COMPUTE_DOMAIN_UUID={domain}", edits["env"])
        self.assertEqual(node.plugins[CD].unprepare([claim]), {claim.uid: ""})

    def assert_vfio_applied(self, node, name, ids, result, host_devices, nodes):
        """The claim's container has exactly `nodes` of the VFIO nodes, as the host's character devices."""
        edits = self.assert_applied(node, name, ids, result)
        self.assertEqual(edits["env"], ["NVIDIA_VISIBLE_DEVICES=void"] * len({i.split("-gpu-vfio-")[0] for i in ids}),
                         name)
        self.assertEqual(edits["hooks"], [], name)
        got = {d["path"]: (d["type"], d["major"], d["minor"]) for d in result["config"]["linux"].get("devices", [])
               if d["path"].startswith(("/dev/vfio", "/dev/iommu"))}
        self.assertEqual(got, {p: ("c",) + host_devices[p] for p in nodes}, name)
        # The device cgroup lets the container open them (podman adds a rule per CDI node).
        rules = {(r.get("major"), r.get("minor")) for r in result["config"]["linux"]["resources"]["devices"]
                 if r.get("allow") and r.get("type") == "c"}
        self.assertTrue({host_devices[p] for p in nodes} <= rules, f"{name}: {rules}")
        return edits

    def test_vfio_claim_starts_in_podman(self):
        node = SimulatedNode(profile="passthrough", gates="PassthroughSupport=true,DeviceMetadata=true")
        self.addCleanup(node.cleanup)
        node.start()
        group = {i: node.pci.devices[node.pci.gpu_address(i)]["group"] for i in range(8)}
        api = dict(VFIO_CONFIG, iommu={"backendPolicy": "LegacyOnly", "enableAPIDevice": True})
        claims = [node.allocate("vm-a", [("vm", "gpu-vfio-0")], [(["vm"], VFIO_CONFIG)]),
                  node.allocate("vm-api", [("vm", "gpu-vfio-1")], [(["vm"], api)])]
        ids = self.prepared_ids(node.gpu(), claims)
        ids["two-claims"] = ids["vm-a"] + ids["vm-api"]
        host = vfio_host_devices(node.host_root)
        self.assertEqual(set(host), {"/dev/vfio/vfio", f"/dev/vfio/{group[0]}", f"/dev/vfio/{group[1]}"})
        results = self.podman.apply(node.dirs.cdi, ids, host_devices=host)
        a = self.assert_vfio_applied(node, "vm-a", ids["vm-a"], results["vm-a"], host, [f"/dev/vfio/{group[0]}"])
        self.assert_vfio_applied(node, "vm-api", ids["vm-api"], results["vm-api"], host,
                                 ["/dev/vfio/vfio", f"/dev/vfio/{group[1]}"])
        self.assert_vfio_applied(node, "two-claims", ids["two-claims"], results["two-claims"], host,
                                 ["/dev/vfio/vfio", f"/dev/vfio/{group[0]}", f"/dev/vfio/{group[1]}"])
        # KEP-5304: the claim's metadata file, read-only at the path the kubelet helper reads.
        metadata = os.path.join(node.dirs.plugins, GPU, "dra-device-metadata", "default_vm-a", "vm", "metadata.json")
        mounts = {m["destination"]: m for m in results["vm-a"]["config"]["mounts"]}
        target = "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/vm-a/vm/gpu.nvidia.com-metadata.json"
        self.assertEqual([m["containerPath"] for m in a["mounts"]], [target])
        self.assertEqual((mounts[target]["source"], "ro" in mounts[target]["options"]), (metadata, True))

        # Unprepared: the ids no longer resolve (the host's nodes stay: only the spec is gone).
        self.assertEqual(set(node.gpu().unprepare(claims).values()), {""})
        gone = self.podman.apply(node.dirs.cdi, {"gone": ids["vm-a"]}, host_devices=host)["gone"]
        self.assertIn("unresolvable CDI devices " + ids["vm-a"][0], gone["error"])

    def test_iommufd_vfio_claim_starts_in_podman(self):
        node = SimulatedNode(profile="passthrough", gates="PassthroughSupport=true", iommufd=True)
        self.addCleanup(node.cleanup)
        node.start()
        config = dict(VFIO_CONFIG, iommu={"backendPolicy": "PreferIommuFD", "enableAPIDevice": True})
        claim = node.allocate("vm-fd", [("vm", "gpu-vfio-3")], [([], config)])
        ids = self.prepared_ids(node.gpu(), [claim])
        host = vfio_host_devices(node.host_root)
        result = self.podman.apply(node.dirs.cdi, ids, host_devices=host)["vm-fd"]
        edits = self.assert_vfio_applied(node, "vm-fd", ids["vm-fd"], result, host,
                                         ["/dev/iommu", "/dev/vfio/devices/vfio3"])
        self.assertEqual(edits["mounts"], [])
        self.assertEqual(node.gpu().unprepare([claim]), {claim.uid: ""})
        gone = self.podman.apply(node.dirs.cdi, ids, host_devices=host)["vm-fd"]
        self.assertIn("unresolvable CDI devices " + ids["vm-fd"][0], gone["error"])


if __name__ == "__main__":
    unittest.main()
