"""Kubernetes 1.34 to 1.37: every simulated machine's slices, with everything nvdra can publish switched on
(consumable shares, list-valued attributes, DynamicMIG counters), are accepted by an API server of each
version, which validates against that version's OpenAPI documents and limits; what the agent publishes
follows what each server serves (found through /openapi/v3) and what its gates keep."""
import json
import os
import unittest

import yaml

from fabric_manager_test import equip_fabric_manager
from gpu_node import GPU, SimulatedNode
from nvdra_testlib import SOURCE_DIR

# Every mock machine, with the gate that makes it what it is (its extra devices and attributes).
PROFILES = {"dgx-a100": "", "hgx-h100": "", "gb200-nvl": "", "l4": "",
            "hgx-h100-nvswitch": "FabricManagerPartitioning=true",  # gpuModuleID, partitionN
            "passthrough": "PassthroughSupport=true"}               # the VFIO twins
VERSIONS = ((1, 34), (1, 35), (1, 36), (1, 37))
SHARES = "ConsumableShares=true,DRAListTypeAttributes=true"
NUMA = "resource.kubernetes.io/numaNode"


def bus_ids(profile):
    """The profile's GPUs as sysfs names them ("00000008:01:00.0" -> "0008:01:00.0")."""
    with open(os.path.join(SOURCE_DIR, "nvml", "mock", "profiles", profile + ".yaml")) as f:
        gpus = yaml.safe_load(f)["gpus"]
    out = []
    for g in gpus:
        domain, rest = g["pciBusId"].split(":", 1)
        out.append((domain[-4:] + ":" + rest).lower())
    return out


class ServerVersions(unittest.TestCase):
    def node(self, profile, version, gates=SHARES, args=("--consumable-shares", "3"), api_gates=None,
             api_options=None):
        node = SimulatedNode(profile=profile, api_version=version, gates=gates, args=args, api_gates=api_gates,
                             api_options=api_options)
        self.addCleanup(node.cleanup)
        if "FabricManagerPartitioning=true" in gates:
            equip_fabric_manager(node)
        # NUMA nodes where discovery reads them (<host root>/sys), so numaNode is published.
        for i, bdf in enumerate(bus_ids(profile)):
            d = os.path.join(node.host_root, "sys", "bus", "pci", "devices", bdf)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "numa_node"), "w") as f:
                f.write(f"{i % 2}\n")
        node.start()
        return node

    def slices(self, node):
        items = node.api.objects("resource.k8s.io/v1", "resourceslices", f"spec.nodeName={node.node}")
        return [s for s in items if s["spec"]["driver"] == GPU]

    def test_every_profile_is_accepted_by_every_version(self):
        for profile, gate in PROFILES.items():
            for version in VERSIONS:
                with self.subTest(profile=profile, version=version):
                    # The double's defaults for its own gates: consumable capacity on from 1.36,
                    # list attributes (alpha) switched on here so that 1.36+ keeps them.
                    node = self.node(profile, version, gates=",".join(filter(None, (SHARES, gate))),
                                     api_gates={"DRAListTypeAttributes": True})
                    self.assertEqual(node.api.rejections, [], "the API server refused a write")
                    devices = node.published()
                    gpus = [d for d in devices.values() if d["attributes"]["type"]["string"] in ("gpu", "mig")]
                    self.assertTrue(gpus, profile)
                    if profile == "hgx-h100-nvswitch":
                        self.assertEqual(devices["gpu-0"]["attributes"]["partition8"], {"int": 0})  # FM's 8-GPU partition is id 0 on HGX
                    # VFIO twins: never shared; numaNode a list where lists are taken, as upstream's
                    # addNumaNodeAttribute does for every kind of device.
                    vfio = [d for d in devices.values() if d["attributes"]["type"]["string"] == "vfio"]
                    self.assertEqual(bool(vfio), profile == "passthrough")
                    for d in vfio:
                        numa = d["attributes"][NUMA]
                        self.assertEqual(list(numa), ["ints"] if version >= (1, 36) else ["int"], d["name"])
                        self.assertEqual(len(numa.get("ints", [0])), 1, d["name"])
                        self.assertNotIn("allowMultipleAllocations", d)
                    for d in gpus:
                        numa = d["attributes"].get(NUMA)
                        self.assertIsNotNone(numa, d["name"])
                        shared = d.get("allowMultipleAllocations", False)
                        if version >= (1, 36):
                            self.assertIn("ints", numa, d["name"])  # served and kept
                            self.assertTrue(shared, d["name"])
                            self.assertEqual(d["capacity"]["shares"], {"value": "3", "requestPolicy": {
                                "default": "1", "validRange": {"min": "1", "max": "3", "step": "1"}}})
                            self.assertEqual(d["capacity"]["memory"]["requestPolicy"]["validRange"]["step"], "1Mi")
                        else:
                            self.assertIn("int", numa, d["name"])  # not served: the single value
                            # Served, but the server's DRAConsumableCapacity gate (alpha) dropped it.
                            self.assertFalse(shared, d["name"])
                            self.assertNotIn("requestPolicy", d["capacity"].get("memory", {}))
                    node.stop()

    def test_counter_layout_and_consumable_capacity_per_version_with_dynamic_mig(self):
        for version in VERSIONS:
            with self.subTest(version=version):
                node = self.node("hgx-h100", version, gates="DynamicMIG=true," + SHARES,
                                 api_gates={"DRAConsumableCapacity": True, "DRAListTypeAttributes": True})
                self.assertEqual(node.api.rejections, [])
                slices = self.slices(node)
                mixed = [s for s in slices if s["spec"].get("sharedCounters") and s["spec"].get("devices")]
                if version == (1, 34):
                    self.assertTrue(mixed, "1.34 wants counter sets with their devices")
                else:
                    self.assertEqual(mixed, [], "1.35+ wants counter sets in slices of their own")
                devices = node.published()
                self.assertTrue(all(d.get("allowMultipleAllocations") for d in devices.values()))
                node.stop()

    def test_lists_only_where_gate_and_server_allow(self):
        # Agent gate off: a plain int on every server.
        node = self.node("l4", (1, 36), gates="", args=(), api_gates={"DRAListTypeAttributes": True})
        self.assertEqual(node.published()["gpu-0"]["attributes"][NUMA], {"int": 0})
        node.stop()
        # Agent gate on, 1.36 server serving the field but with its alpha gate off (its default): the
        # list is dropped on write, the agent notices and publishes the single value; it converges.
        node = self.node("l4", (1, 36), gates="DRAListTypeAttributes=true", args=())
        self.assertEqual(node.published()["gpu-0"]["attributes"][NUMA], {"int": 0})
        self.assertIn("dropped list-valued attributes", node.agent_log())
        self.assertEqual(node.api.rejections, [])
        node.stop()
        # Both on: the list.
        node = self.node("l4", (1, 37), gates="DRAListTypeAttributes=true", args=(),
                         api_gates={"DRAListTypeAttributes": True})
        self.assertEqual(node.published()["gpu-0"]["attributes"][NUMA], {"ints": [0]})
        node.stop()

    def test_discovery_not_the_version_number_decides(self):
        # A 1.36 server (by /version) whose OpenAPI document is 1.35's, so it does not serve list-valued
        # attributes (and, validating against that document, would refuse them): the agent reads the
        # document and publishes the single value; a guess from the version number would send the list.
        node = self.node("l4", (1, 36), gates="DRAListTypeAttributes=true", args=(),
                         api_gates={"DRAListTypeAttributes": True}, api_options={"openapi_version": (1, 35)})
        self.assertEqual(node.published()["gpu-0"]["attributes"][NUMA], {"int": 0})
        self.assertEqual(node.api.rejections, [])
        self.assertIn("list attributes not served", node.agent_log())
        self.assertNotIn("dropped list-valued attributes", node.agent_log())
        node.stop()

    def test_publisher_reads_the_servers_openapi(self):
        node = self.node("l4", (1, 36), gates="DRAListTypeAttributes=true", args=(),
                         api_gates={"DRAListTypeAttributes": True})
        paths = [r["path"] for r in node.api.request_log() if r["method"] == "GET"]
        self.assertIn("/openapi/v3", paths)
        self.assertTrue(any(p.startswith("/openapi/v3/apis/resource.k8s.io/v1") for p in paths), paths)
        self.assertIn("list attributes served", node.agent_log())
        # Both drivers' publishers learned it from one lookup: each question went out once.
        for driver in ("gpu.nvidia.com", "compute-domain.nvidia.com"):
            self.assertIn(f"publishing ResourceSlices driver={driver} ", node.agent_log())
        asked = [p for p in paths if p == "/version" or p.startswith("/openapi/v3") or p.startswith("/api/v1/nodes/")]
        self.assertEqual(sorted(p.split("?")[0] for p in asked),
                         ["/api/v1/nodes/" + node.node, "/openapi/v3", "/openapi/v3/apis/resource.k8s.io/v1",
                          "/version"], asked)
        node.stop()

    def test_served_fields_are_kept_until_the_servers_document_changes(self):
        # The OpenAPI document is ~0.5 MB; its path in the /openapi/v3 index carries its hash. A restart
        # that finds the same path takes the fields kept in the gpu driver's data directory; a server
        # whose document changed (here: 1.36's instead of 1.35's) is read again.
        node = self.node("l4", (1, 35), gates="", args=())
        document = "/openapi/v3/apis/resource.k8s.io/v1"

        def documents_read():
            return [r for r in node.api.request_log() if r["method"] == "GET" and r["path"] == document]

        self.assertEqual(len(documents_read()), 1)
        kept = os.path.join(node.dirs.plugins, GPU, "nvdra-served-fields.json")
        with open(kept) as f:
            self.assertEqual(json.load(f), {"documentPath": document + "?hash=v1.35", "listAttributes": False,
                                            "multipleAllocations": True})
        node.stop()
        node.api.reset_requests()
        node.start()
        self.assertEqual(documents_read(), [], "a restart fetched the document its hash said it knew")
        self.assertIn("/openapi/v3", [r["path"] for r in node.api.request_log()])
        self.assertIn("list attributes not served", node.agent_log())
        node.stop()
        node.api.doc_minor = 36  # the server now serves another document (list-valued attributes)
        node.api.reset_requests()
        node.start()
        self.assertEqual(len(documents_read()), 1)
        self.assertIn("list attributes served", node.agent_log())
        with open(kept) as f:
            self.assertEqual(json.load(f)["documentPath"], document + "?hash=v1.36")
        node.stop()


if __name__ == "__main__":
    unittest.main()
