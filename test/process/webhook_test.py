"""nvdra-webhook over HTTPS, called as the API server calls it: an AdmissionReview POSTed to
/validate-resource-claim-parameters on a kept-alive TLS connection that trusts the webhook's CA
(the ValidatingWebhookConfiguration's caBundle). Every kind and version, allowed and denied; /readyz;
TLS below 1.2 refused; a plain-HTTP client, an oversized body, a malformed and a truncated review, garbage HTTP inside TLS,
each refused while the server keeps serving; the certificate rotated on disk (served by the next
connection, no restart) and a broken renewal (the previous certificate stays); the metrics; SIGTERM."""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from apiserver_double.outage import fingerprint, new_serving_certificate  # noqa: E402
from webhook_process import PATH, WebhookProcess  # noqa: E402
GATES = "TimeSlicingSettings=true,MPSSupport=true,PassthroughSupport=true,FabricTopologySupport=true"


def config(driver, kind, **body):
    return {"requests": ["gpu"], "opaque": {"driver": driver, "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": kind, **body}}}


def review(resource, version, configs, uid="e3b0c442-98fc-1c14-9afb-f4c8996fb924"):
    spec = {"devices": {"requests": [{"name": "gpu"}], "config": configs}}
    template = resource == "resourceclaimtemplates"
    obj = {"apiVersion": f"resource.k8s.io/{version}", "kind": "ResourceClaimTemplate" if template else "ResourceClaim",
           "metadata": {"name": "c", "namespace": "default"}, "spec": {"spec": spec} if template else spec}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": uid, "operation": "CREATE", "object": obj,
        "kind": {"group": "resource.k8s.io", "version": version, "kind": obj["kind"]},
        "resource": {"group": "resource.k8s.io", "version": version, "resource": resource}}}


GOOD = [config("gpu.nvidia.com", "GpuConfig", sharing={"strategy": "MPS"}),
        config("gpu.nvidia.com", "VfioDeviceConfig"),
        config("compute-domain.nvidia.com", "ComputeDomainChannelConfig", domainID="d1", allocationMode="All"),
        {"opaque": {"driver": "example.com/other", "parameters": {"whatever": True}}}]
BAD = [config("gpu.nvidia.com", "GpuConfig", sharingPolicy="MPS"),
       config("gpu.nvidia.com", "GpuConfig", sharing={"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 120}}),
       config("gpu.nvidia.com", "GpuConfig", fabricTopologyConfig={"strategy": "Auto", "partitionIDs": ["p"]}),
       config("compute-domain.nvidia.com", "ComputeDomainDaemonConfig")]


class Webhook(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="nvdra-webhook-")
        cls.webhook = WebhookProcess(cls.dir, GATES)
        cls.proc, cls.port, cls.metrics_port = cls.webhook.proc, cls.webhook.port, cls.webhook.metrics_port
        cls.ca, cls.cert, cls.key = cls.webhook.ca, cls.webhook.cert, cls.webhook.key
        cls.first_fingerprint = fingerprint(cls.webhook.first_cert)

    @classmethod
    def tearDownClass(cls):
        cls.webhook.kill()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def tls(self):
        ctx = ssl.create_default_context(cafile=self.ca)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        return ctx

    def connect(self):
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.tls(), timeout=30)

    def post(self, conn, body, content_type="application/json"):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request("POST", PATH, body=data, headers={"Content-Type": content_type})
        res = conn.getresponse()
        return res.status, res.read().decode()

    def assert_serving(self):
        conn = self.connect()
        conn.request("GET", "/readyz")
        res = conn.getresponse()
        self.assertEqual((res.status, res.read()), (200, b"ok"))
        conn.close()
        self.assertIsNone(self.proc.poll(), "the webhook exited")

    def test_every_kind_and_version_on_one_kept_alive_connection(self):
        conn = self.connect()
        for resource in ("resourceclaims", "resourceclaimtemplates"):
            for version in ("v1", "v1beta1", "v1beta2"):
                status, text = self.post(conn, review(resource, version, GOOD))
                self.assertEqual(status, 200, text)
                answer = json.loads(text)
                self.assertEqual(answer["apiVersion"], "admission.k8s.io/v1")
                self.assertEqual(answer["response"]["uid"], "e3b0c442-98fc-1c14-9afb-f4c8996fb924")
                self.assertTrue(answer["response"]["allowed"], text)
                status, text = self.post(conn, review(resource, version, BAD))
                response = json.loads(text)["response"]
                self.assertFalse(response["allowed"])
                self.assertEqual(response["status"]["reason"], "Invalid")
                message = response["status"]["message"]
                spec = "spec" if resource == "resourceclaims" else "spec.spec"
                self.assertTrue(message.startswith("4 configs failed to validate: error decoding object at "
                                                   f"{spec}.devices.config[0].opaque.parameters: strict decoding "
                                                   'error: unknown field "sharingPolicy"; allowed fields: '
                                                   "apiVersion, kind, sharing, fabricTopologyConfig; "), message)
                self.assertIn(f"object at {spec}.devices.config[1].opaque.parameters is invalid: sharing.mpsConfig."
                              "defaultActiveThreadPercentage: active thread percentage must not be greater than 100",
                              message)
                self.assertIn("fabricTopologyConfig.partitionIDs: partitionIDs is set, but the fabric topology "
                              "strategy is Auto", message)
                self.assertIn(f"object at {spec}.devices.config[3].opaque.parameters is invalid: domainID: "
                              "domainID cannot be empty", message)
        conn.close()

    def test_bodies_that_are_no_review_are_refused(self):
        whole = json.dumps(review("resourceclaims", "v1", GOOD)).encode()
        conn = self.connect()
        for body, expected in ((whole[: len(whole) // 2], "request could not be decoded"),
                               (b"{", "request could not be decoded"),
                               (json.dumps({"apiVersion": "v1", "kind": "Pod"}).encode(),
                                "unsupported group version kind")):
            status, text = self.post(conn, body)
            self.assertEqual(status, 400, text)
            self.assertIn(expected, text)
        status, text = self.post(conn, whole, content_type="text/plain")
        self.assertEqual(status, 415, text)
        self.assertIn("expected application/json", text)
        conn.close()
        self.assert_serving()

    def test_a_client_without_tls_is_told_so(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        conn.request("POST", PATH, body=b"{}", headers={"Content-Type": "application/json"})
        res = conn.getresponse()
        self.assertEqual((res.status, res.read()), (400, b"Client sent an HTTP request to an HTTPS server.\n"))
        self.assert_serving()

    def test_a_body_over_the_limit_is_refused_unread(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as raw:
            with self.tls().wrap_socket(raw, server_hostname="127.0.0.1") as s:
                s.sendall(f"POST {PATH} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          f"Content-Length: {8 * 1024 * 1024}\r\n\r\n".encode())
                head = s.recv(4096).decode()
        self.assertTrue(head.startswith("HTTP/1.1 413 "), head)
        self.assertIn("over the 7340032-byte limit", head)
        self.assert_serving()

    def test_garbage_inside_tls_is_a_bad_request(self):
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as raw:
            with self.tls().wrap_socket(raw, server_hostname="127.0.0.1") as s:
                s.sendall(b"\x01\x02 NOT HTTP\r\n\r\n")
                head = s.recv(4096).decode(errors="replace")
        self.assertTrue(head.startswith("HTTP/1.1 400 "), head)
        self.assert_serving()

    def test_tls_below_1_2_is_refused_by_the_server(self):
        def s_client(version):
            # SECLEVEL=0 lets this client offer TLS 1.1: the refusal must come from the server.
            return subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{self.port}", version,
                                   "-cipher", "DEFAULT:@SECLEVEL=0", "-CAfile", self.ca],
                                  input="", capture_output=True, text=True, timeout=30)
        old = s_client("-tls1_1")
        self.assertNotEqual(old.returncode, 0)
        self.assertIn("alert protocol version", old.stdout + old.stderr)
        for version in ("-tls1_2", "-tls1_3"):
            ok = s_client(version)
            self.assertEqual(ok.returncode, 0, ok.stdout + ok.stderr)
            self.assertIn("Verify return code: 0 (ok)", ok.stdout)
        self.assert_serving()

    def test_z_certificate_rotation(self):  # last: it changes the served certificate
        def served():
            with socket.create_connection(("127.0.0.1", self.port), timeout=30) as raw:
                with self.tls().wrap_socket(raw, server_hostname="127.0.0.1") as s:
                    der = s.getpeercert(binary_form=True)
            pem = os.path.join(self.dir, "served.pem")
            with open(pem, "w") as f:
                f.write(ssl.DER_cert_to_PEM_cert(der))
            return fingerprint(pem)

        self.assertEqual(served(), self.first_fingerprint)
        cert, key = new_serving_certificate(self.dir, "renewed")
        # As the kubelet updates a Secret volume: the new files appear whole (rename), not in place.
        for src, dst in ((key, self.key), (cert, self.cert)):
            shutil.copy(src, dst + ".new")
            os.replace(dst + ".new", dst)
        self.assertEqual(served(), fingerprint(cert), "the next connection must present the renewed certificate")
        # A renewal that does not load (a key of another certificate) keeps the last good one.
        other_cert, other_key = new_serving_certificate(self.dir, "other")
        shutil.copy(other_key, self.key + ".new")
        os.replace(self.key + ".new", self.key)
        self.assertEqual(served(), fingerprint(cert))
        page = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=30).read().decode()
        self.assertIn('nvdra_webhook_certificate_reloads_total{result="success"} 1', page)
        self.assertIn('nvdra_webhook_certificate_reloads_total{result="failure"} 1', page)
        self.assert_serving()

    def test_zz_metrics_and_sigterm(self):
        conn = self.connect()
        self.post(conn, review("resourceclaims", "v1", BAD))
        conn.close()
        page = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=30).read().decode()
        denied = re.search(r'^nvdra_webhook_requests_total\{verdict="denied"\} (\d+)', page, re.M)
        self.assertIsNotNone(denied, page)
        self.assertGreaterEqual(int(denied.group(1)), 1)
        self.assertRegex(page, r'(?m)^nvdra_webhook_request_duration_seconds_count [1-9]')
        self.assertRegex(page, r'(?m)^nvdra_webhook_refused_connections_total\{reason="not_tls"\} [1-9]')
        self.assertRegex(page, r'(?m)^nvdra_webhook_refused_connections_total\{reason="handshake"\} [1-9]')
        self.assertRegex(page, r'(?m)^nvdra_webhook_refused_connections_total\{reason="too_large"\} [1-9]')
        self.assertRegex(page, r'(?m)^nvdra_webhook_refused_connections_total\{reason="malformed"\} [1-9]')
        self.assertIn("process_resident_memory_bytes", page)
        idle = self.connect()  # a kept-alive connection, as the API server holds them, does not delay the exit
        self.post(idle, review("resourceclaims", "v1", GOOD))
        self.addCleanup(idle.close)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.assertEqual(self.proc.wait(timeout=10), 0)
        except subprocess.TimeoutExpired:
            raise AssertionError("nvdra-webhook did not exit within 10 s of SIGTERM")


if __name__ == "__main__":
    unittest.main()
