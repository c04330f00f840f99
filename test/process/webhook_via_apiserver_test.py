"""nvdra-webhook called by the API double as kube-apiserver calls it: the ValidatingWebhookConfiguration
the gpu-webhook-secret overlay ships (its caBundle replaced by the test CA's, its Service mapped to the
test's webhook), and ResourceClaims and ResourceClaimTemplates created and updated over the double's
HTTPS API as kubectl would, in resource.k8s.io v1, v1beta1 (its requests flat, without `exactly`) and
v1beta2, each validated against its own schemas. A bad GpuConfig is refused with the webhook's message and
not stored; a good GpuConfig, a VfioDeviceConfig and a compute-domain channel config are created; with
the webhook down, failurePolicy Fail refuses naming the webhook and Ignore lets the claim in."""
import base64
import copy
import http.client
import json
import os
import shutil
import socket
import ssl
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from apiserver_double import start_in  # noqa: E402
from apiserver_double.outage import reserve_port  # noqa: E402
from kustomize import render  # noqa: E402
from webhook_process import WebhookProcess  # noqa: E402

GATES = "TimeSlicingSettings=true,MPSSupport=true,PassthroughSupport=true,FabricTopologySupport=true"
VERSIONS = ("v1", "v1beta1", "v1beta2")
PLURALS = ("resourceclaims", "resourceclaimtemplates")
DENIED = 'admission webhook "gpu.nvidia.com" denied the request: '


def config(driver, kind, **body):
    return {"requests": ["gpu"], "opaque": {"driver": driver, "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": kind, **body}}}


# name -> (device class of the request, its config)
GOOD = {"gpu-config": ("gpu.nvidia.com", config("gpu.nvidia.com", "GpuConfig", sharing={"strategy": "MPS"})),
        "vfio": ("vfio.gpu.nvidia.com", config("gpu.nvidia.com", "VfioDeviceConfig")),
        "channel": ("compute-domain-default-channel.nvidia.com",
                    config("compute-domain.nvidia.com", "ComputeDomainChannelConfig", domainID="d1",
                           allocationMode="All"))}
BAD = config("gpu.nvidia.com", "GpuConfig", sharingPolicy="MPS")


def claim(version, plural, name, cfg, device_class="gpu.nvidia.com"):
    # v1beta1 has the request's fields inline; v1beta2 and v1 put them under `exactly`.
    request = {"name": "gpu", "deviceClassName": device_class} if version == "v1beta1" else \
        {"name": "gpu", "exactly": {"deviceClassName": device_class}}
    spec = {"devices": {"requests": [request], "config": [cfg]}}
    template = plural == "resourceclaimtemplates"
    return {"apiVersion": f"resource.k8s.io/{version}",
            "kind": "ResourceClaimTemplate" if template else "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"spec": spec} if template else spec}


def shipped_configuration(ca_file):
    """The overlay's ValidatingWebhookConfiguration, trusting the test CA."""
    vwc = next(o for o in render("gpu-webhook-secret") if o["kind"] == "ValidatingWebhookConfiguration")
    with open(ca_file, "rb") as f:
        vwc["webhooks"][0]["clientConfig"]["caBundle"] = base64.b64encode(f.read()).decode()
    return vwc


class WebhookViaApiServer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="nvdra-webhook-api-")
        os.makedirs(os.path.join(cls.dir, "webhook"))
        cls.webhook = WebhookProcess(os.path.join(cls.dir, "webhook"), GATES)
        cls.vwc = shipped_configuration(cls.webhook.ca)
        svc = cls.vwc["webhooks"][0]["clientConfig"]["service"]
        cls.service = (svc["namespace"], svc["name"], svc["port"])
        cls.double = cls.start_double("api", f"https://127.0.0.1:{cls.webhook.port}", cls.vwc)

    @classmethod
    def start_double(cls, name, url, vwc):
        os.makedirs(os.path.join(cls.dir, name))
        return start_in(os.path.join(cls.dir, name), webhooks=[vwc], webhook_services={cls.service: url},
                        claim_versions=("v1beta1", "v1beta2"))

    @classmethod
    def tearDownClass(cls):
        cls.double.stop()
        cls.webhook.kill()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def send(self, double, method, obj, plural, name="", content_type="application/json"):
        """One request over the double's HTTPS API with its token, as kubectl sends it."""
        ctx = ssl.create_default_context(cafile=double.ca_file)
        conn = http.client.HTTPSConnection("127.0.0.1", double.port, context=ctx, timeout=60)
        path = f"/apis/{obj['apiVersion']}/namespaces/default/{plural}" + (f"/{name}" if name else "")
        conn.request(method, path, json.dumps(obj), {"Content-Type": content_type,
                                                     "Authorization": "Bearer test-token"})
        res = conn.getresponse()
        body = json.loads(res.read())
        conn.close()
        return res.status, body

    def test_bad_gpu_config_is_refused_with_the_webhooks_message(self):
        for version in VERSIONS:
            for plural in PLURALS:
                with self.subTest(version=version, plural=plural):
                    code, body = self.send(self.double, "POST", claim(version, plural, "bad", BAD), plural)
                    # The webhook's Status has no code: kube-apiserver answers 400 (errors.ToStatusErr).
                    self.assertEqual(code, 400, body)
                    self.assertEqual((body["kind"], body["status"], body["reason"], body["code"]),
                                     ("Status", "Failure", "Invalid", 400), body)
                    spec = "spec" if plural == "resourceclaims" else "spec.spec"
                    self.assertTrue(body["message"].startswith(
                        f"{DENIED}1 configs failed to validate: error decoding object at {spec}.devices.config[0]"
                        '.opaque.parameters: strict decoding error: unknown field "sharingPolicy"; allowed fields: '
                        "apiVersion, kind, sharing, fabricTopologyConfig"), body)
                    self.assertEqual(self.double.objects(f"resource.k8s.io/{version}", plural, "metadata.name=bad"),
                                     [], "stored")

    def test_good_configs_are_created_after_a_review_of_the_write(self):
        for version in VERSIONS:
            for plural in PLURALS:
                for name, (device_class, cfg) in GOOD.items():
                    with self.subTest(version=version, plural=plural, config=name):
                        sent = len(self.double.admission.reviews)
                        code, body = self.send(self.double, "POST", claim(version, plural, name, cfg, device_class),
                                               plural)
                        self.assertEqual(code, 201, body)
                        review, response = self.double.admission.reviews[sent]
                        self.assertTrue(response["allowed"], response)
                        req = review["request"]
                        self.assertEqual(response["uid"], req["uid"])
                        self.assertEqual((req["operation"], req["namespace"], req["name"], req["dryRun"]),
                                         ("CREATE", "default", name, False))
                        self.assertEqual(req["resource"], {"group": "resource.k8s.io", "version": version,
                                                           "resource": plural})
                        self.assertEqual(req["requestKind"], req["kind"])
                        self.assertEqual(req["kind"]["kind"], body["kind"])
                        self.assertEqual(req["object"]["spec"], body["spec"])
                        self.assertIsNone(req["oldObject"])

    def test_each_version_is_validated_against_its_own_schema_before_any_review(self):
        # v1beta1 requests are flat: v1's `exactly` is an unknown field there, and v1beta1's deviceClassName
        # one in v1 (strict field validation: 400); neither write reaches the webhook.
        for version, other, field in (("v1beta1", "v1", "exactly"), ("v1", "v1beta1", "deviceClassName")):
            with self.subTest(version=version):
                sent = len(self.double.admission.reviews)
                obj = dict(claim(other, "resourceclaims", "shape", GOOD["gpu-config"][1]),
                           apiVersion=f"resource.k8s.io/{version}")
                code, body = self.send(self.double, "POST", obj, "resourceclaims")
                self.assertEqual((code, body["reason"]), (400, "BadRequest"), body)
                self.assertIn(f'unknown field "spec.devices.requests[0].{field}"', body["message"])
                self.assertEqual(len(self.double.admission.reviews), sent)

    def test_an_update_to_a_bad_config_is_refused_and_the_old_object_sent(self):
        for version in VERSIONS:
            with self.subTest(version=version):
                obj = claim(version, "resourceclaims", "upd", GOOD["gpu-config"][1])
                code, stored = self.send(self.double, "POST", obj, "resourceclaims")
                self.assertEqual(code, 201, stored)
                changed = copy.deepcopy(stored)
                changed["spec"]["devices"]["config"] = [BAD]
                code, body = self.send(self.double, "PUT", changed, "resourceclaims", "upd")
                self.assertEqual(code, 400, body)
                self.assertTrue(body["message"].startswith(DENIED), body)
                review, _ = self.double.admission.reviews[-1]
                self.assertEqual(review["request"]["operation"], "UPDATE")
                self.assertEqual(review["request"]["oldObject"], stored)
                patch = {"spec": {"devices": {"config": [BAD]}}}
                code, body = self.send(self.double, "PATCH", dict(patch, apiVersion=stored["apiVersion"]),
                                       "resourceclaims", "upd", "application/merge-patch+json")
                self.assertEqual(code, 400, body)
                self.assertEqual(self.double.admission.reviews[-1][0]["request"]["oldObject"], stored)
                kept = self.double.objects(f"resource.k8s.io/{version}", "resourceclaims", "metadata.name=upd")
                self.assertEqual(kept, [stored])

    def test_webhook_down_fail_refuses_naming_the_webhook_and_ignore_admits(self):
        down = f"https://127.0.0.1:{reserve_port()}"
        ignoring = copy.deepcopy(self.vwc)
        ignoring["webhooks"][0]["failurePolicy"] = "Ignore"
        for name, vwc in (("down-fail", self.vwc), ("down-ignore", ignoring)):
            double = self.start_double(name, down, vwc)
            try:
                for version in VERSIONS:
                    with self.subTest(policy=name, version=version):
                        obj = claim(version, "resourceclaims", "c", GOOD["gpu-config"][1])
                        code, body = self.send(double, "POST", obj, "resourceclaims")
                        if name == "down-ignore":
                            self.assertEqual(code, 201, body)
                            continue
                        self.assertEqual((code, body["reason"]), (500, "InternalError"), body)
                        self.assertTrue(body["message"].startswith(
                            'Internal error occurred: failed calling webhook "gpu.nvidia.com": failed to call '
                            f'webhook: Post "{down}/validate-resource-claim-parameters"'), body)
                        self.assertEqual(double.objects(f"resource.k8s.io/{version}", "resourceclaims"), [])
            finally:
                double.stop()

    def refusal_by(self, name, vwc, url):
        """What a double with this configuration, its Service at url, answers a good claim."""
        double = self.start_double(name, url, vwc)
        try:
            return self.send(double, "POST", claim("v1", "resourceclaims", "c", GOOD["gpu-config"][1]),
                             "resourceclaims")
        finally:
            double.stop()

    def test_only_the_ca_bundle_is_trusted(self):
        other_ca = copy.deepcopy(self.vwc)
        with open(self.double.ca_file, "rb") as f:  # a CA that did not sign the webhook's certificate
            other_ca["webhooks"][0]["clientConfig"]["caBundle"] = base64.b64encode(f.read()).decode()
        code, body = self.refusal_by("other-ca", other_ca, f"https://127.0.0.1:{self.webhook.port}")
        self.assertEqual(code, 500, body)
        self.assertIn('failed calling webhook "gpu.nvidia.com"', body["message"])
        self.assertIn("CERTIFICATE_VERIFY_FAILED", body["message"])

    def test_a_webhook_that_never_answers_fails_after_timeout_seconds(self):
        short = copy.deepcopy(self.vwc)
        short["webhooks"][0]["timeoutSeconds"] = 1
        with socket.socket() as silent:  # accepts connections (backlog) and never answers the handshake
            silent.bind(("127.0.0.1", 0))
            silent.listen(8)
            code, body = self.refusal_by("silent", short, f"https://127.0.0.1:{silent.getsockname()[1]}")
        self.assertEqual(code, 500, body)
        self.assertIn('failed calling webhook "gpu.nvidia.com"', body["message"])
        self.assertIn("timed out", body["message"])

    def test_a_configuration_field_the_double_does_not_implement_is_refused_by_name(self):
        selector = copy.deepcopy(self.vwc)
        selector["webhooks"][0]["namespaceSelector"] = {"matchLabels": {"a": "b"}}
        with self.assertRaisesRegex(ValueError, r"nvdra-webhook\.webhooks\[0\]: the API double does not "
                                                r"implement namespaceSelector"):
            self.start_double("selector", "https://127.0.0.1:1", selector)
        shipped = next(o for o in render("gpu-webhook-secret") if o["kind"] == "ValidatingWebhookConfiguration")
        with self.assertRaisesRegex(ValueError, r"webhooks\[0\]\.clientConfig\.caBundle: not base64"):
            self.start_double("placeholder", "https://127.0.0.1:1", shipped)  # the overlay's placeholder

    def test_writes_the_rules_do_not_match_call_no_webhook(self):
        sent = len(self.double.admission.reviews)
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
        ctx = ssl.create_default_context(cafile=self.double.ca_file)
        conn = http.client.HTTPSConnection("127.0.0.1", self.double.port, context=ctx, timeout=60)
        conn.request("POST", "/api/v1/nodes", json.dumps(node), {"Authorization": "Bearer test-token"})
        self.assertEqual(conn.getresponse().status, 201)
        conn.close()
        self.assertEqual(len(self.double.admission.reviews), sent)


if __name__ == "__main__":
    unittest.main()
