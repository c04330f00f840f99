#!/usr/bin/env python3
"""nvdra-webhook over HTTPS (issue #32): admission latency p50/p99 for a ResourceClaimTemplate with four
opaque configs on one warm, kept-alive TLS connection, as the API server keeps its connections; requests
per second from one sequential client (the webhook serves on one io_context thread: one core); RSS at idle
and after the load (/proc/<pid>/status VmRSS). The latency is measured by this Python client and includes
its own http.client and json costs; build/bench/admission/admission_review_bench times the decision alone.
Usage: bench/admission/webhook_bench.py [N]   (NVDRA_BINARY_DIR: the build tree)."""
import http.client
import json
import os
import ssl
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "test", "lib"))
from webhook_process import PATH, WebhookProcess  # noqa: E402

GATES = "TimeSlicingSettings=true,MPSSupport=true,PassthroughSupport=true"


def config(driver, kind, request, **body):
    return {"requests": [request], "opaque": {"driver": driver, "parameters": {
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": kind, **body}}}


def review(bad):
    configs = [config("gpu.nvidia.com", "GpuConfig", "gpu", sharing={"strategy": "MPS", "mpsConfig": {
                   "defaultActiveThreadPercentage": 120 if bad else 50, "defaultPinnedDeviceMemoryLimit": "10Gi"}}),
               config("gpu.nvidia.com", "GpuConfig", "gpu", sharing={"strategy": "TimeSlicing",
                                                               "timeSlicingConfig": {"interval": "Long"}}),
               config("gpu.nvidia.com", "VfioDeviceConfig", "vm", iommu={"backendPolicy": "PreferIommuFD"}),
               config("compute-domain.nvidia.com", "ComputeDomainChannelConfig", "channel", domainID="d-1",
                      allocationMode="All")]
    classes = {"gpu": "gpu.nvidia.com", "vm": "vfio.gpu.nvidia.com", "channel": "compute-domain-default-channel.nvidia.com"}
    spec = {"devices": {"requests": [{"name": n, "exactly": {"deviceClassName": c}} for n, c in classes.items()],
                        "config": configs}}
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "4f1c", "operation": "CREATE",
        "resource": {"group": "resource.k8s.io", "version": "v1", "resource": "resourceclaimtemplates"},
        "object": {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                   "metadata": {"name": "t", "namespace": "ml"}, "spec": {"spec": spec}}}}).encode()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with tempfile.TemporaryDirectory(prefix="nvdra-webhook-bench-") as d:
        w = WebhookProcess(d, GATES)
        try:
            idle = rss_kib(w.proc.pid)
            ctx = ssl.create_default_context(cafile=w.ca)
            conn = http.client.HTTPSConnection("127.0.0.1", w.port, context=ctx, timeout=30)
            results = {}
            for verdict, body in (("allowed", review(False)), ("denied", review(True))):
                for _ in range(200):  # warm: TLS session, caches, allocator
                    conn.request("POST", PATH, body=body, headers={"Content-Type": "application/json"})
                    conn.getresponse().read()
                times = []
                t_start = time.perf_counter()
                for _ in range(n):
                    t0 = time.perf_counter()
                    conn.request("POST", PATH, body=body, headers={"Content-Type": "application/json"})
                    answer = conn.getresponse().read()
                    times.append(time.perf_counter() - t0)
                elapsed = time.perf_counter() - t_start
                assert (b'"allowed":true' in answer) == (verdict == "allowed"), answer
                results[verdict] = (pct(times, 50) * 1e6, pct(times, 99) * 1e6, n / elapsed, len(body))
            loaded = rss_kib(w.proc.pid)
            conn.close()
        finally:
            w.kill()
    print(f"webhook: {n} AdmissionReviews per verdict, one kept-alive TLS connection, 4 configs per template")
    for verdict, (p50, p99, rps, size) in results.items():
        print(f"  {verdict:8s} body {size} B  p50 {p50:.0f} µs  p99 {p99:.0f} µs  {rps:.0f} req/s (one client)")
    print(f"  RSS idle {idle} KiB, after load {loaded} KiB")


if __name__ == "__main__":
    main()
