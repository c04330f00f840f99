"""Renders the webhook overlays (contrib/kubernetes/overlays/gpu-webhook-{cert-manager,secret}) with
`kubectl kustomize` and checks them: two replicas whose probes ask the port and path nvdra-webhook
serves, the pod template valid against core/v1, a Service and a ValidatingWebhookConfiguration that
point at each other with upstream's webhook name, rules, path and failurePolicy (Fail); cert-manager's
Certificate, Issuer and CA injection in one variant, the given Secret and caBundle in the other; the
agent's feature gates copied to the webhook; and the container's arguments accepted by the binary."""
import base64
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from kustomize import KUSTOMIZE_DIR, WEBHOOK_OVERLAYS, render, require_kubectl  # noqa: E402
from openapi_validator import OpenApiValidator  # noqa: E402

BINARY_DIR = os.environ.get("NVDRA_BINARY_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))


def one(objs, kind, name=None):
    found = [o for o in objs if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''}"
    return found[0]


def render_dir(top, overlay):
    out = subprocess.run(["kubectl", "kustomize", os.path.join(top, "overlays", overlay)],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"kubectl kustomize {overlay} failed: {out.stderr}")
    return [o for o in yaml.safe_load_all(out.stdout) if o]


class WebhookOverlays(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        require_kubectl()  # skips without kubectl, except in CI (CI=true), where it fails
        cls.validator = OpenApiValidator(["api__v1_openapi.json"])
        cls.rendered = {o: render(o) for o in WEBHOOK_OVERLAYS}
        cls.gpu_only = render("gpu-only")

    def container(self, objs):
        return one(objs, "Deployment", "nvdra-webhook")["spec"]["template"]["spec"]["containers"][0]

    def test_two_replicas_with_probes_on_what_the_webhook_serves(self):
        for overlay, objs in self.rendered.items():
            dep = one(objs, "Deployment", "nvdra-webhook")
            self.assertEqual(dep["metadata"]["namespace"], "nvdra")
            self.assertEqual(dep["spec"]["replicas"], 2)
            self.assertEqual(self.validator.validate_as(dep["spec"]["template"], "io.k8s.api.core.v1.PodTemplateSpec"),
                             [], overlay)
            c = self.container(objs)
            ports = {p["name"]: p["containerPort"] for p in c["ports"]}
            self.assertIn(f"--port={ports['https']}", c["args"])
            self.assertIn(f"--http-endpoint=:{ports['metrics']}", c["args"])
            for kind in ("readinessProbe", "livenessProbe"):
                self.assertEqual(c[kind]["httpGet"], {"path": "/readyz", "port": "https", "scheme": "HTTPS"}, kind)
            mount = next(m for m in c["volumeMounts"] if m["name"] == "tls")
            self.assertIn(f"--tls-cert-file={mount['mountPath']}/tls.crt", c["args"])
            self.assertIn(f"--tls-private-key-file={mount['mountPath']}/tls.key", c["args"])
            volume = next(v for v in dep["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls")
            self.assertEqual(volume["secret"]["secretName"], "nvdra-webhook-tls")
            pdb = one(objs, "PodDisruptionBudget", "nvdra-webhook")
            self.assertEqual(pdb["spec"]["selector"]["matchLabels"], dep["spec"]["selector"]["matchLabels"])

    def test_the_agent_is_gpu_onlys(self):
        # daemonset_probes_test covers the agent's probes on gpu-only; these overlays must not change it.
        for overlay, objs in self.rendered.items():
            self.assertEqual(one(objs, "DaemonSet"), one(self.gpu_only, "DaemonSet"), overlay)

    def test_registration_points_at_the_service_as_upstreams(self):
        for overlay, objs in self.rendered.items():
            svc = one(objs, "Service", "nvdra-webhook")
            dep = one(objs, "Deployment", "nvdra-webhook")
            self.assertEqual(svc["spec"]["selector"], dep["spec"]["template"]["metadata"]["labels"] | svc["spec"]["selector"])
            vwc = one(objs, "ValidatingWebhookConfiguration", "nvdra-webhook")
            (hook,) = vwc["webhooks"]
            self.assertEqual(hook["name"], "gpu.nvidia.com")
            self.assertEqual(hook["failurePolicy"], "Fail")
            self.assertEqual(hook["admissionReviewVersions"], ["v1"])
            self.assertEqual(hook["sideEffects"], "None")
            ref = hook["clientConfig"]["service"]
            self.assertEqual((ref["name"], ref["namespace"], ref["path"]),
                             (svc["metadata"]["name"], svc["metadata"]["namespace"], "/validate-resource-claim-parameters"))
            (port,) = svc["spec"]["ports"]
            self.assertEqual((ref["port"], port["targetPort"]), (port["port"], "https"))
            (rule,) = hook["rules"]
            self.assertEqual((rule["apiGroups"], rule["apiVersions"], rule["operations"], rule["resources"]),
                             (["resource.k8s.io"], ["v1", "v1beta1", "v1beta2"], ["CREATE", "UPDATE"],
                              ["resourceclaims", "resourceclaimtemplates"]), overlay)

    def test_cert_manager_variant(self):
        objs = self.rendered["gpu-webhook-cert-manager"]
        cert = one(objs, "Certificate", "nvdra-webhook")
        issuer = one(objs, "Issuer")
        self.assertEqual(cert["spec"]["secretName"], "nvdra-webhook-tls")
        self.assertEqual(cert["spec"]["issuerRef"], {"name": issuer["metadata"]["name"], "kind": "Issuer"})
        self.assertIn("nvdra-webhook.nvdra.svc", cert["spec"]["dnsNames"])
        vwc = one(objs, "ValidatingWebhookConfiguration", "nvdra-webhook")
        self.assertEqual(vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
                         f'{cert["metadata"]["namespace"]}/{cert["metadata"]["name"]}')

    def test_given_secret_variant_takes_the_operators_ca_bundle(self):
        objs = self.rendered["gpu-webhook-secret"]
        self.assertFalse([o for o in objs if o["kind"] in ("Certificate", "Issuer")])
        with tempfile.TemporaryDirectory() as tmp:
            top = os.path.join(tmp, "kubernetes")
            shutil.copytree(KUSTOMIZE_DIR, top)
            bundle = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n").decode()
            path = os.path.join(top, "overlays", "gpu-webhook-secret", "ca-bundle.yaml")
            with open(path) as f:
                text = f.read()
            self.assertIn("REPLACE-WITH-base64", text)  # the placeholder, as shipped
            with open(path, "w") as f:
                f.write(text.replace("REPLACE-WITH-base64-OF-THE-CA-THAT-SIGNED-tls.crt", bundle))
            vwc = one(render_dir(top, "gpu-webhook-secret"), "ValidatingWebhookConfiguration")
        self.assertEqual(vwc["webhooks"][0]["clientConfig"]["caBundle"], bundle)

    def test_the_webhook_takes_the_agents_feature_gates(self):
        # An operator's layout: the agent's gates in one kustomization, the webhook components on top
        # (kustomize runs a component's replacements before the same kustomization's own patches).
        with tempfile.TemporaryDirectory() as tmp:
            top = os.path.join(tmp, "kubernetes")
            shutil.copytree(KUSTOMIZE_DIR, top)
            gates_patch = yaml.safe_dump([{"op": "replace", "path": "/spec/template/spec/containers/0/env/4",
                                           "value": {"name": "FEATURE_GATES", "value": "MPSSupport=true"}}])
            layers = {
                "mine-gates": {"resources": ["../gpu-only"], "patches": [
                    {"target": {"kind": "DaemonSet", "name": "nvdra-agent"}, "patch": gates_patch}]},
                "mine": {"namespace": "nvdra", "resources": ["../mine-gates"],
                         "components": ["../../components/webhook", "../../components/webhook-cert-manager"]},
            }
            for name, body in layers.items():
                os.makedirs(os.path.join(top, "overlays", name))
                with open(os.path.join(top, "overlays", name, "kustomization.yaml"), "w") as f:
                    yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", **body}, f)
            objs = render_dir(top, "mine")
        env = {e["name"]: e["value"] for e in self.container(objs)["env"]}
        self.assertEqual(env["FEATURE_GATES"], "MPSSupport=true")
        agent = one(objs, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]
        self.assertIn({"name": "FEATURE_GATES", "value": "MPSSupport=true"}, agent["env"])

    def test_the_binary_accepts_the_containers_arguments(self):
        webhook = os.path.join(BINARY_DIR, "agent", "admission", "nvdra-webhook")
        if not os.path.exists(webhook):
            raise AssertionError(f"{webhook} is not built")
        c = self.container(self.rendered["gpu-webhook-cert-manager"])
        # The certificate files do not exist here: a start-up failure naming them (1), not a usage error (2).
        out = subprocess.run([webhook, *c["args"]], capture_output=True, text=True, timeout=30,
                             env={"PATH": os.environ["PATH"], "FEATURE_GATES": "MPSSupport=true"})
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertIn("--tls-cert-file=/etc/nvdra-webhook/tls/tls.crt", out.stderr)
        bad = subprocess.run([webhook, *c["args"]], capture_output=True, text=True, timeout=30,
                             env={"PATH": os.environ["PATH"], "FEATURE_GATES": "NoSuchGate=true"})
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("NoSuchGate", bad.stderr)


if __name__ == "__main__":
    unittest.main()
