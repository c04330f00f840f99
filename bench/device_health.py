#!/usr/bin/env python3
"""Device health latency (issue #18): time from an XID injected into the running mock NVML to the taint
being visible in the API double and on the DRA health stream (v1), p50/p99 over N events, and API writes
per event. The XID is injected from this process (the mock's test hook through ctypes), so t0 is the
moment the event exists.

The API double runs in its own process, whose answer time for the slice update is "visible in the API";
the stream's reports are timed as they arrive on this process's gRPC thread.

Two phases:
  spaced  one event at a time, 250 ms apart (more than 1/--kube-api-qps): what one event costs;
  burst   N events back to back, alternating over GPUs 0-5 (6 and 7 are MIG parents): how many writes a
          storm costs (the client rate limit, --kube-api-qps 5 / --kube-api-burst 10 as upstream, paces
          writes; events that arrive while a write waits are folded into the next one).
Usage: bench/device_health.py [N]   (NVDRA_BINARY_DIR: the build tree, as for the process tests)."""
import ctypes
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "process"))
from device_health_test import HealthWatch, gpu_uuid  # noqa: E402
from gpu_node import MOCK, SimulatedNode  # noqa: E402


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


def injector(node):
    """The mock's nvdraMockInjectEvent in this process, on the node's mock state."""
    for key, value in node.env().items():
        if key.startswith("NVDRA_MOCK_"):
            os.environ[key] = value
    lib = ctypes.CDLL(MOCK)
    f = lib.nvdraMockInjectEvent
    f.argtypes = [ctypes.c_char_p, ctypes.c_ulonglong, ctypes.c_ulonglong, ctypes.c_uint, ctypes.c_uint]

    def inject(uuid, xid):
        rc = f(uuid.encode(), 0x8, xid, 0xFFFFFFFF, 0xFFFFFFFF)
        if rc != 0:
            raise AssertionError(f"nvdraMockInjectEvent: {rc}")
    return inject


class TimedWatch(HealthWatch):
    """HealthWatch that finds when a report arrived, so the stream is timed on its own."""

    def first_since(self, t0, predicate):
        """When the first report after t0 that satisfies predicate arrived."""
        self.wait(predicate)
        with self.cond:
            return next(t for r, t in zip(self.reports, self.arrived) if t >= t0 and predicate(r))


def taint_value(devices, name):
    return next((t.get("value") for t in devices[name].get("taints", []) if t["key"] == "gpu.nvidia.com/xid"), None)


def wait_for(check, timeout=60.0, every=0.002):
    """Polls check() (the API double runs in its own process: polling keeps this one's GIL free for
    the health stream's thread) until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError("bench: condition not met within the deadline")
        time.sleep(every)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    node = SimulatedNode(profile="dgx-a100", gates="NVMLDeviceHealthCheck=true", api_process=True)
    try:
        node.start()
        inject = injector(node)
        health = TimedWatch(node.gpu(), "v1.DRAResourceHealth")
        health.wait(lambda r: "gpu-3" in r)
        writes_before = len(node.api.writes())
        api_ms, stream_ms = [], []
        for i in range(n):
            xid = 79 if i % 2 == 0 else 48
            time.sleep(0.25)  # a bench, not a test: lets the client's rate limiter refill
            seen = len(node.api.writes())
            t0, wall0 = time.monotonic(), time.time()
            inject(gpu_uuid(3), xid)
            stream_ms.append((health.first_since(t0, lambda r: f"xid={xid}" in r["gpu-3"]["message"]) - t0) * 1000)
            write = wait_for(lambda: node.api.writes()[seen:])[-1]
            api_ms.append((write["time"] - wall0) * 1000)
        if taint_value(node.published(), "gpu-3") != str(79 if (n - 1) % 2 == 0 else 48):
            raise AssertionError("bench: the last write did not carry the last XID")
        spaced_writes = len(node.api.writes()) - writes_before
        print(f"spaced: events={n} (API double in its own process)")
        print(f"  taint written (the double answered the update): p50={pct(api_ms, 50):.1f} ms "
              f"p99={pct(api_ms, 99):.1f} ms")
        print(f"  health stream (v1) report received:              p50={pct(stream_ms, 50):.1f} ms "
              f"p99={pct(stream_ms, 99):.1f} ms")
        print(f"  API writes per event: {spaced_writes / n:.2f}")

        time.sleep(3)  # a full bucket again
        writes_before = len(node.api.writes())
        last = {}
        t0 = time.monotonic()
        for i in range(n):
            gpu, xid = i % 6, 100 + i
            inject(gpu_uuid(gpu), xid)
            last[f"gpu-{gpu}"] = str(xid)
        wait_for(lambda: all(taint_value(node.published(), name) == v for name, v in last.items()), every=0.005)
        burst_ms = (time.monotonic() - t0) * 1000
        burst_writes = len(node.api.writes()) - writes_before
        print(f"burst: events={n} over 6 GPUs, last taint visible after {burst_ms:.0f} ms")
        print(f"  API writes: {burst_writes} ({burst_writes / n:.2f} per event)")
        health.close()
    finally:
        node.cleanup()


if __name__ == "__main__":
    main()
