#!/usr/bin/python3
"""Whole-process figures for PassthroughSupport (not a test): prepare and unprepare latency of one VFIO
claim through the real agent on the simulated passthrough host (test/lib/fake_pci.py: sysfs PCI tree
and kernel stand-in; the mock NVML hides the GPU while it is on vfio-pci), kubelet double over the
real sockets. Prepare = busy check, unbind from nvidia, driver_override, drivers_probe, confirm,
CDI spec, two checkpoint writes; unprepare = the reverse plus the wait until NVML sees the GPU again.

    bench/scenario/vfio_passthrough.py [--build-dir build] [--runs 100] [--device gpu-vfio-0]
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))
sys.path.insert(0, HERE)
from gpu_claims import pct_ms as pct  # noqa: E402  (one percentile rule for every bench)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--device", default="gpu-vfio-0", help="gpu-vfio-7 also moves the card's audio function")
    args = ap.parse_args()
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    os.environ.setdefault("NVDRA_SOURCE_DIR", TOP)
    from gpu_node import SimulatedNode

    node = SimulatedNode(profile="passthrough", gates="PassthroughSupport=true", api_process=True)
    report = {}
    try:
        node.start()
        claim = node.allocate("bench-vm", [("vm", args.device)])
        plugin = node.gpu()
        prep, unprep = [], []
        for _ in range(args.runs):
            t = time.perf_counter()
            answer = plugin.prepare([claim])
            prep.append(time.perf_counter() - t)
            assert answer[claim.uid]["error"] == "", answer
            t = time.perf_counter()
            assert plugin.unprepare([claim]) == {claim.uid: ""}
            unprep.append(time.perf_counter() - t)
        report = {"device": args.device, "runs": args.runs,
                  "prepare_ms": {"p50": pct(prep, 50), "p99": pct(prep, 99)},
                  "unprepare_ms": {"p50": pct(unprep, 50), "p99": pct(unprep, 99)}}
        node.stop()
    finally:
        node.cleanup()
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
