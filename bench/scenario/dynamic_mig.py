#!/usr/bin/python3
"""Whole-process figures for DynamicMIG (not a test): prepare and unprepare latency of one dynamic MIG
device through the real agent on the hgx-h100 mock, kubelet double over the real sockets.

    bench/scenario/dynamic_mig.py [--build-dir build] [--runs 40] [--profile-name 3g.40gb]
"""
import argparse
import json
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
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--profile-name", default="3g.40gb")
    args = ap.parse_args()
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    from gpu_node import SimulatedNode

    node = SimulatedNode(profile="hgx-h100", gates="DynamicMIG=true", api_process=True)
    report = {}
    try:
        node.start()
        devices = node.published()
        name = sorted(n for n, d in devices.items() if n.startswith("gpu-0-mig-")
                      and d["attributes"]["profile"]["string"] == args.profile_name)[0]
        neighbour = sorted(n for n, d in devices.items() if n.startswith("gpu-0-mig-")
                           and d["attributes"]["profile"]["string"] == args.profile_name)[-1]
        claim = node.allocate("bench", [("mig", name)])
        plugin = node.gpu()
        for case in ("empty GPU (MIG mode on and off)", "beside another MIG device"):
            other = None
            if case.startswith("beside"):
                other = node.allocate("neighbour", [("mig", neighbour)])
                assert plugin.prepare([other])[other.uid]["error"] == ""
            prep, unprep = [], []
            for _ in range(args.runs):
                t = time.perf_counter()
                answer = plugin.prepare([claim])
                prep.append(time.perf_counter() - t)
                assert answer[claim.uid]["error"] == "", answer
                t = time.perf_counter()
                plugin.unprepare([claim])
                unprep.append(time.perf_counter() - t)
            report[case] = {"device": name, "prepare_ms": {"p50": pct(prep, 50), "p90": pct(prep, 90)},
                            "unprepare_ms": {"p50": pct(unprep, 50), "p90": pct(unprep, 90)}, "runs": args.runs}
            if other:
                plugin.unprepare([other])
        node.stop()
    finally:
        node.cleanup()
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
