#!/usr/bin/env python3
"""Device health latency (issue #18): time from an XID injected into the running mock NVML to the taint being
visible in the API double and on the DRA health stream (v1), p50/p99 over N events, and API writes per event.
Each event alternates XID 79/48 on GPU 3 so every one changes the taint. Usage: bench/device_health.py [N]
(run from the build tree's environment: PYTHONPATH=test/lib, NVDRA_BUILD_DIR as for the process tests)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "process"))
from device_health_test import HealthWatch, gpu_uuid  # noqa: E402
from gpu_node import SimulatedNode  # noqa: E402


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    node = SimulatedNode(profile="dgx-a100", gates="NVMLDeviceHealthCheck=true")
    try:
        node.start()
        health = HealthWatch(node.gpu(), "v1.DRAResourceHealth")
        health.wait(lambda r: "gpu-3" in r)
        writes_before = len(node.api.writes())
        api_ms, stream_ms = [], []
        for i in range(n):
            xid = 79 if i % 2 == 0 else 48
            t0 = time.monotonic()
            node.inject_xid(gpu_uuid(3), xid)
            node.wait_published(lambda d: any(t.get("value") == str(xid) for t in d["gpu-3"].get("taints", [])))
            api_ms.append((time.monotonic() - t0) * 1000)
            health.wait(lambda r: f"xid={xid}" in r["gpu-3"]["message"])
            stream_ms.append((time.monotonic() - t0) * 1000)
        writes = len(node.api.writes()) - writes_before
        health.close()
        print(f"events={n} (t0 before the injecting child process starts: an upper bound)")
        print(f"taint in API double: p50={pct(api_ms, 50):.1f} ms p99={pct(api_ms, 99):.1f} ms")
        print(f"health stream (v1):  p50={pct(stream_ms, 50):.1f} ms p99={pct(stream_ms, 99):.1f} ms")
        print(f"API writes per event: {writes / n:.2f}")
    finally:
        node.cleanup()


if __name__ == "__main__":
    main()
