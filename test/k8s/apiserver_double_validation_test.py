"""The API-server double's per-version validation of ResourceSlices (test/lib/apiserver_double): the writes
each simulated Kubernetes version refuses, through the same path a POST takes (gates that clear fields,
then the version's OpenAPI documents with strict field validation, then the LIMITS.md rules). The process
tests only show the double accepting what nvdra writes; these show that it refuses what a server of that
version would, so an accepted write means something."""
import copy
import unittest

from apiserver_double import ApiServerDouble

GV = "resource.k8s.io/v1"
NUMA = "resource.kubernetes.io/numaNode"
ALL = ((1, 34), (1, 35), (1, 36), (1, 37))
LISTS_ON = {"DRAListTypeAttributes": True}


def device(i, **attributes):
    attrs = {"type": {"string": "gpu"}}
    attrs.update(attributes)
    return {"name": f"gpu-{i}", "attributes": attrs, "capacity": {"memory": {"value": "40Gi"}}}


def resource_slice(devices):
    return {"apiVersion": GV, "kind": "ResourceSlice", "metadata": {"name": "node-a-gpu.nvidia.com-x7k2p"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-a", "devices": devices,
                     "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1}}}


def problems(version, devices, gates=None, openapi_version=None):
    """What a double of `version` answers to a slice of `devices`: [] when it takes it."""
    double = ApiServerDouble(None, None, version=version, gates=gates, openapi_version=openapi_version)
    obj = resource_slice(copy.deepcopy(devices))
    return double.validate_write(GV, "ResourceSlice", obj), obj


def messages(found):
    return " | ".join(f"{field}: {message}" for field, message in found)


class ListAttributesPerVersion(unittest.TestCase):
    def test_ints_are_unknown_before_136_whatever_the_gates(self):
        for version in ((1, 34), (1, 35)):
            for gates in (None, LISTS_ON):
                with self.subTest(version=version, gates=gates):
                    found, _ = problems(version, [device(0, **{NUMA: {"ints": [0]}})], gates)
                    self.assertIn(f'unknown field "spec.devices[0].attributes.{NUMA}.ints"', messages(found))

    def test_ints_are_taken_from_136_with_the_gate_and_dropped_without(self):
        for version in ((1, 36), (1, 37)):
            with self.subTest(version=version):
                found, stored = problems(version, [device(0, **{NUMA: {"ints": [0]}})], LISTS_ON)
                self.assertEqual(found, [])
                self.assertEqual(stored["spec"]["devices"][0]["attributes"][NUMA], {"ints": [0]})
                found, stored = problems(version, [device(0, **{NUMA: {"ints": [0]}})])  # gate off: its default
                self.assertEqual(found, [])
                self.assertNotIn(NUMA, stored["spec"]["devices"][0]["attributes"])

    def test_a_136_server_with_135_documents_refuses_ints(self):
        found, _ = problems((1, 36), [device(0, **{NUMA: {"ints": [0]}})], LISTS_ON, openapi_version=(1, 35))
        self.assertIn("unknown field", messages(found))

    def test_the_int_form_is_taken_everywhere(self):
        for version in ALL:
            with self.subTest(version=version):
                self.assertEqual(problems(version, [device(0, **{NUMA: {"int": 0}})])[0], [])


class LimitsFrom136(unittest.TestCase):
    def test_more_than_48_attribute_values_per_device(self):
        def values(n):  # one list of n - 1 values and the type attribute
            return [device(0, big={"ints": list(range(n - 1))})]
        for version in ((1, 36), (1, 37)):
            with self.subTest(version=version):
                self.assertEqual(problems(version, values(48), LISTS_ON)[0], [])
                found, _ = problems(version, values(49), LISTS_ON)
                self.assertIn("Too many: 49: at most 48 attribute values per device", messages(found))

    def test_a_list_element_over_64_characters(self):
        for kind, ok, long in (("strings", "a" * 64, "a" * 65), ("versions", "1.0.0-" + "a" * 58, "1.0.0-" + "a" * 59)):
            with self.subTest(kind=kind):
                self.assertEqual(problems((1, 36), [device(0, names={kind: ["short", ok] if kind == "strings"
                                                                      else ["1.0.0", ok]})], LISTS_ON)[0], [])
                found, _ = problems((1, 36), [device(0, names={kind: [long]})], LISTS_ON)
                self.assertIn(f"spec.devices[0].attributes[names].{kind}: each value may not be more than 64 bytes",
                              messages(found))

    def test_64_device_cap_counts_list_attributes_from_136(self):
        scalar = [device(i, **{NUMA: {"int": 0}}) for i in range(65)]
        listed = [device(i, **{NUMA: {"ints": [0]}}) for i in range(65)]
        for version in ((1, 36), (1, 37)):
            with self.subTest(version=version):
                self.assertEqual(problems(version, scalar, LISTS_ON)[0], [])  # 128 without advanced features
                self.assertEqual(problems(version, listed[:64], LISTS_ON)[0], [])
                found, _ = problems(version, listed, LISTS_ON)
                self.assertEqual(found, [("spec.devices", "Too many: 65: must have at most 64 items")])


class ConsumableCapacity(unittest.TestCase):
    POLICY = {"default": "1Mi", "validRange": {"min": "1Mi", "max": "40Gi", "step": "1Mi"}}

    def shared(self, allow):
        d = device(0)
        d["capacity"]["memory"]["requestPolicy"] = dict(self.POLICY)
        if allow:
            d["allowMultipleAllocations"] = True
        return [d]

    def test_request_policy_needs_allow_multiple_allocations(self):
        for version in ALL:
            gates = {"DRAConsumableCapacity": True}
            with self.subTest(version=version):
                self.assertEqual(problems(version, self.shared(True), gates)[0], [])
                found, _ = problems(version, self.shared(False), gates)
                self.assertEqual(found, [("spec.devices[0].capacity[memory].requestPolicy",
                                          "Forbidden without allowMultipleAllocations")])


if __name__ == "__main__":
    unittest.main()
