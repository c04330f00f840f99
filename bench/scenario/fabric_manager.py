#!/usr/bin/python3
"""Whole-process figures for FabricManager partitions (not a test): prepare and unprepare latency of a
4-GPU claim through the real agent on the hgx-h100-nvswitch mock, with both gates off (FM untouched)
and with FabricManagerPartitioning (the claim's partition activated and deactivated through the mock
libnvfm.so.1), kubelet double over the real sockets. The difference is what activation costs on the
mock; a real FM trains NVLinks on activation and is slower.

    bench/scenario/fabric_manager.py [--build-dir build] [--runs 40]
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))
sys.path.insert(0, os.path.join(TOP, "test", "process"))
from gpu_claims import pct_ms as pct  # noqa: E402  (one percentile rule for every bench)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    from fabric_manager_test import BOARD_5678, fabric_node, fm_state

    report = {}
    for case, gates in (("gates off", ""), ("FabricManagerPartitioning", "FabricManagerPartitioning=true")):
        node = fabric_node(gates)
        try:
            node.start()
            claim = node.allocate("bench", BOARD_5678)
            plugin = node.gpu()
            prep, unprep = [], []
            for _ in range(args.runs):
                t = time.perf_counter()
                answer = plugin.prepare([claim])
                prep.append(time.perf_counter() - t)
                assert answer[claim.uid]["error"] == "", answer
                t = time.perf_counter()
                assert plugin.unprepare([claim])[claim.uid] == ""
                unprep.append(time.perf_counter() - t)
            calls = fm_state(node).get("calls", {})
            report[case] = {"prepare_ms": {"p50": pct(prep, 50), "p90": pct(prep, 90)},
                            "unprepare_ms": {"p50": pct(unprep, 50), "p90": pct(unprep, 90)}, "runs": args.runs,
                            "fm_activations": calls.get("fmActivateFabricPartition", 0)}
            node.stop()
        finally:
            node.cleanup()
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
