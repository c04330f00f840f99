"""Renders each kustomize overlay in contrib/kubernetes with `kubectl kustomize` and checks it:
every object whose kind the real OpenAPI documents cover validates (strictly) against them, the
DaemonSet's pod template against core/v1 PodTemplateSpec, RBAC grants exactly the verbs the agent
uses, the DeviceClasses carry upstream's CEL, the CRD is upstream's, and the host-managed overlay
renders no daemon DeviceClass and no daemon RBAC."""
import os
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from kustomize import agent_container, render, require_kubectl  # noqa: E402
from openapi_validator import OPENAPI_DIR, OpenApiValidator  # noqa: E402

CRD = os.path.join(OPENAPI_DIR, "..", "upstream-crds", "resource.nvidia.com_computedomains.yaml")
CLIQUE_CRD = os.path.join(OPENAPI_DIR, "..", "upstream-crds", "resource.nvidia.com_computedomaincliques.yaml")

# upstream-driver.md §10.3, verbatim.
CEL = {
    "gpu.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "mig.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
    "vfio.gpu.nvidia.com":
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'vfio'",
    "compute-domain-default-channel.nvidia.com":
        "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == "
        "'channel' && device.attributes['compute-domain.nvidia.com'].id == 0",
    "compute-domain-daemon.nvidia.com":
        "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com'].type == "
        "'daemon'",
}
AGENT_RULES = {
    ("resource.k8s.io", "resourceslices"): ["get", "list", "watch", "create", "update", "delete"],
    ("resource.k8s.io", "resourceclaims"): ["get", "list", "watch"],
    ("", "nodes"): ["get"],
    ("events.k8s.io", "events"): ["create", "patch"],
}
# Driver-managed IMEX (issue #29): the ComputeDomain and ComputeDomainClique watches, the Node label patches.
DRIVER_MANAGED_RULES = {
    ("resource.nvidia.com", "computedomains"): ["get", "list", "watch"],
    ("resource.nvidia.com", "computedomaincliques"): ["get", "list", "watch"],
    ("", "nodes"): ["patch"],
}
LEASE_RULES = {("coordination.k8s.io", "leases"): ["get", "list", "watch", "create", "update"]}
CONTROLLER_RULES = {
    ("resource.nvidia.com", "computedomains"): ["get", "list", "watch", "update"],
    ("resource.nvidia.com", "computedomains/status"): ["update"],
    ("resource.k8s.io", "resourceclaimtemplates"): ["create", "get", "list", "watch", "update", "delete"],  # update: the finalizer
}


def rules_of(objs, kind, name):
    role = next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name)
    return {(g, r): rule["verbs"] for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]}


def env_of(objs):
    ds = next(o for o in objs if o["kind"] == "DaemonSet")
    return {e["name"]: e.get("value") for e in ds["spec"]["template"]["spec"]["containers"][0]["env"]}


class Overlays(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_kubectl()  # skips without kubectl, except in CI (CI=true), where it fails
        cls.v135 = OpenApiValidator(["api__v1_openapi.json", "apis__resource.k8s.io__v1_openapi.json",
                                     "apis__coordination.k8s.io__v1_openapi.json"])
        cls.v134 = OpenApiValidator([os.path.join("v1.34", "apis__resource.k8s.io__v1_openapi.json")])
        cls.rendered = {o: render(o) for o in ("gpu-only", "gpu-host-managed-imex", "gpu-driver-managed-imex")}

    def test_validator_rejects_an_unknown_field(self):
        bad = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "x"},
               "spec": {"selectors": [{"cell": {"expression": "true"}}]}}
        self.assertTrue(self.v135.validate(bad))

    def test_every_covered_object_validates_against_the_openapi_documents(self):
        for overlay, objs in self.rendered.items():
            covered = 0
            for obj in objs:
                where = f'{overlay}: {obj["kind"]} {obj["metadata"]["name"]}'
                for validator in (self.v135, self.v134):
                    if validator.covers(obj):
                        covered += 1
                        self.assertEqual(validator.validate(obj), [], where)
                if obj["kind"] == "DaemonSet":
                    covered += 1
                    self.assertEqual(self.v135.validate_as(obj["spec"]["template"], "io.k8s.api.core.v1.PodTemplateSpec"),
                                     [], where)
                    labels = obj["spec"]["template"]["metadata"]["labels"]
                    for k, v in obj["spec"]["selector"]["matchLabels"].items():
                        self.assertEqual(labels.get(k), v, f"{where}: selector does not match the template")
            self.assertGreaterEqual(covered, 6, overlay)

    def test_device_classes_carry_upstreams_cel_and_no_daemon_class(self):
        expect = {"gpu-only": ["gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com"],
                  "gpu-host-managed-imex": sorted(set(CEL) - {"compute-domain-daemon.nvidia.com"}),
                  "gpu-driver-managed-imex": sorted(CEL)}
        for overlay, objs in self.rendered.items():
            classes = {o["metadata"]["name"]: o for o in objs if o["kind"] == "DeviceClass"}
            self.assertEqual(sorted(classes), sorted(expect[overlay]), overlay)
            for name, dc in classes.items():
                self.assertEqual([s["cel"]["expression"] for s in dc["spec"]["selectors"]], [CEL[name]], name)
            self.assertEqual(classes["gpu.nvidia.com"]["spec"].get("extendedResourceName"), "nvidia.com/gpu")

    def test_rbac_grants_exactly_the_verbs_the_agent_uses(self):
        for overlay, objs in self.rendered.items():
            self.assertEqual(rules_of(objs, "ClusterRole", "nvdra-agent"), AGENT_RULES, overlay)
            self.assertEqual(rules_of(objs, "Role", "nvdra-agent-leases"), LEASE_RULES, overlay)
            role = next(o for o in objs if o["kind"] == "Role")
            self.assertEqual(role["metadata"]["namespace"], "nvdra")
        self.assertEqual(rules_of(self.rendered["gpu-host-managed-imex"], "ClusterRole", "nvdra-controller"),
                         CONTROLLER_RULES)
        self.assertFalse([o for o in self.rendered["gpu-only"] if o["metadata"]["name"] == "nvdra-controller"])

    def test_host_managed_overlay_renders_no_daemon_objects(self):
        for obj in self.rendered["gpu-host-managed-imex"]:
            text = yaml.safe_dump(obj)
            self.assertNotIn("compute-domain-daemon", text, obj["metadata"]["name"])
            for rule in obj.get("rules", []):
                self.assertNotIn("daemonsets", rule["resources"])
                self.assertNotIn("computedomaincliques", rule["resources"])

    def test_agent_environment_matches_each_overlay(self):
        gpu = env_of(self.rendered["gpu-only"])
        self.assertEqual((gpu["NVDRA_DRIVERS"], gpu["FEATURE_GATES"]), ("gpu", ""))
        hm = env_of(self.rendered["gpu-host-managed-imex"])
        self.assertEqual((hm["NVDRA_DRIVERS"], hm["FEATURE_GATES"]), ("gpu,compute-domain", "HostManagedIMEX=true"))
        ds = next(o for o in self.rendered["gpu-host-managed-imex"] if o["kind"] == "DaemonSet")
        mounts = {m["mountPath"] for m in ds["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]}
        self.assertTrue({"/run/dbus", "/var/lib/kubelet/plugins"} <= mounts)
        self.assertNotIn("/etc/nvidia-imex", mounts)  # nvdra never reads the IMEX control socket
        self.assertNotIn("IMEX_HOST_SOCKET_PATH", hm)

    def test_probes_ask_what_the_agent_serves(self):
        # The agent serves grpc.health.v1 on HEALTHCHECK_PORT with the services "", "liveness" and one
        # per driver name (agent/health/health_component.hpp); kubelet's probes must ask exactly that.
        for overlay, objs in self.rendered.items():
            c = agent_container(objs)
            env = {e["name"]: e.get("value") for e in c["env"]}
            drivers = {"gpu": "gpu.nvidia.com", "compute-domain": "compute-domain.nvidia.com"}
            served = {"", "liveness"} | {drivers[d] for d in env["NVDRA_DRIVERS"].split(",")}
            for kind in ("startupProbe", "livenessProbe"):
                probe = c[kind]
                self.assertEqual(set(probe) - {"grpc", "periodSeconds", "failureThreshold", "timeoutSeconds",
                                               "initialDelaySeconds", "successThreshold"}, set(), kind)
                self.assertEqual(probe["grpc"]["port"], int(env["HEALTHCHECK_PORT"]), f"{overlay} {kind}")
                self.assertIn(probe["grpc"].get("service", ""), served, f"{overlay} {kind}")
            self.assertNotIn("readinessProbe", c, overlay)
            # upstream's chart: startup every 1 s up to 600 times, liveness every 10 s, 3 failures.
            self.assertEqual((c["startupProbe"]["periodSeconds"], c["startupProbe"]["failureThreshold"]), (1, 600))

    def test_driver_managed_overlay_runs_beside_upstreams_controller(self):
        objs = self.rendered["gpu-driver-managed-imex"]
        self.assertEqual(rules_of(objs, "ClusterRole", "nvdra-agent-compute-domains"), DRIVER_MANAGED_RULES)
        binding = next(o for o in objs if o["kind"] == "ClusterRoleBinding"
                       and o["metadata"]["name"] == "nvdra-agent-compute-domains")
        self.assertEqual(binding["subjects"], [{"kind": "ServiceAccount", "name": "nvdra-agent", "namespace": "nvdra"}])
        self.assertFalse([o for o in objs if o["metadata"]["name"] == "nvdra-controller"])  # upstream's controller runs
        env = env_of(objs)
        self.assertEqual((env["NVDRA_DRIVERS"], env["FEATURE_GATES"], env["NVDRA_CONTROLLER"]),
                         ("gpu,compute-domain", "", "false"))
        crds = {o["metadata"]["name"]: o for o in objs if o["kind"] == "CustomResourceDefinition"}
        for name, path in (("computedomains.resource.nvidia.com", CRD),
                           ("computedomaincliques.resource.nvidia.com", CLIQUE_CRD)):
            with open(path) as f:
                self.assertEqual(crds[name]["spec"], yaml.safe_load(f)["spec"], name)

    def test_computedomain_crd_is_upstreams(self):
        with open(CRD) as f:
            upstream = yaml.safe_load(f)
        crds = [o for o in self.rendered["gpu-host-managed-imex"] if o["kind"] == "CustomResourceDefinition"]
        self.assertEqual(len(crds), 1)
        self.assertEqual(crds[0]["spec"], upstream["spec"])
        self.assertEqual(crds[0]["metadata"]["name"], "computedomains.resource.nvidia.com")
        self.assertFalse([o for o in self.rendered["gpu-only"] if o["kind"] == "CustomResourceDefinition"])


if __name__ == "__main__":
    unittest.main()
