#!/usr/bin/python3
"""Whole-process figures for --healthcheck-port (not a test), on the simulated node with both drivers:
how long after kubelet's NotifyRegistrationStatus the health service says so (withdraw → NOT_SERVING,
register → SERVING, read from a grpc.health.v1 Watch), kubelet's gRPC probe round trip (a fresh
connection and one Check, as kubelet makes it), and the agent's RSS with the health port on and off.

    bench/scenario/healthcheck.py [--build-dir build] [--runs 50]
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))
from gpu_claims import pct_ms as pct  # noqa: E402  (one percentile rule for every bench)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    os.environ.setdefault("NVDRA_SOURCE_DIR", TOP)
    from gpu_node import GPU, SimulatedNode
    from kubelet_double.probe import HealthWatch, grpc_probe

    rss = {}
    for label, extra in (("off", []), ("on", ["--healthcheck-port", "0"])):
        node = SimulatedNode(args=extra)
        try:
            node.start()
            rss[label] = node.rss_kb()
            if label == "off":
                continue
            port = node.healthcheck_port()
            watch = HealthWatch(port, "liveness")
            watch.next_until("SERVING", "at start")
            withdraw, register, probe = [], [], []
            gpu = node.plugins[GPU]
            for _ in range(args.runs):
                t = time.monotonic()
                node.kubelet.notify(gpu, False, "bench")
                watch.next_until("NOT_SERVING", "withdraw")
                withdraw.append(time.monotonic() - t)
                t = time.monotonic()
                node.kubelet.notify(gpu, True)
                watch.next_until("SERVING", "register")
                register.append(time.monotonic() - t)
            for _ in range(args.runs):
                t = time.monotonic()
                assert grpc_probe(port, "liveness") == ("success", "")
                probe.append(time.monotonic() - t)
            watch.cancel()
            rss[label] = node.rss_kb()
        finally:
            node.cleanup()
    print(f"notify(false) -> NOT_SERVING ms p50/p99: {pct(withdraw, 50)} / {pct(withdraw, 99)}  (includes the "
          f"double's NotifyRegistrationStatus call)")
    print(f"notify(true) -> SERVING ms p50/p99: {pct(register, 50)} / {pct(register, 99)}  (includes one probe "
          f"round: GetInfo + empty NodePrepareResources)")
    print(f"kubelet-style probe (fresh connection + Check) ms p50/p99: {pct(probe, 50)} / {pct(probe, 99)}")
    print(f"agent RSS kB: healthcheck off {rss['off']}, on {rss['on']} (after {args.runs} cycles)")


if __name__ == "__main__":
    main()
