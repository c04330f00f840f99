#!/usr/bin/python3
"""Whole-process scenario bench for gpu.nvidia.com claims (not a test: it reports numbers).

Runs the real agent on a simulated dgx-a100 (mock NVML, fake driver root, API-server double,
kubelet double over the real sockets, real files and fsync in a temp dir on this machine's disk)
and prints:
  start-to-READY, prepare p50/p99 for one claim at a time and for 64 concurrent claims,
  unprepare p50/p99, fsyncs per claim (strace, in a separate phase so it does not skew latency),
  idle RSS, and RSS drift over N prepare/unprepare cycles.

    bench/scenario/gpu_claims.py [--build-dir build] [--cycles 1000] [--json out.json]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def ms(v):
    return round(v * 1000, 3)


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def fsyncs_during(pid, fn):
    """Runs fn() while strace counts the agent's fsync-family calls; None without strace."""
    if not shutil.which("strace"):
        return None, fn()
    out_file = f"/tmp/nvdra-bench-strace-{pid}.txt"
    tracer = subprocess.Popen(["strace", "-f", "-c", "-e", "trace=fsync,fdatasync,syncfs,sync_file_range",
                               "-o", out_file, "-p", str(pid)], stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # strace needs a moment to attach to every thread; a bench, not a test
    result = fn()
    tracer.terminate()
    tracer.wait()
    total = 0
    with open(out_file) as f:
        for line in f:
            m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(fsync|fdatasync|syncfs|sync_file_range)$", line)
            if m:
                total += int(m.group(1))
    os.unlink(out_file)
    return total, result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--profile", default="dgx-a100")
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--single", type=int, default=200, help="sequential one-claim prepares")
    ap.add_argument("--batches", type=int, default=10, help="rounds of 64 concurrent prepares")
    ap.add_argument("--json")
    ap.add_argument("--agent-arg", action="append", default=[], help="extra agent flag (repeatable)")
    args = ap.parse_args()
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    from gpu_node import SimulatedNode

    node = SimulatedNode(profile=args.profile, node="bench-node", args=args.agent_arg, api_process=True)
    report = {"profile": args.profile, "machine": os.uname().nodename, "nproc": os.cpu_count()}
    try:
        starts = []
        for _ in range(5):
            node.start()
            starts.append(node.ready_ms)
            node.stop()
        report["start_to_ready_ms"] = {"p50": round(statistics.median(starts), 1), "all": [round(s) for s in starts]}
        node.start()
        time.sleep(1.0)
        report["idle_rss_kb"] = node.rss_kb()
        gpus = sorted(n for n in node.published() if "-mig-" not in n)

        claims = [node.allocate(f"c{i}", [("gpu", gpus[i % len(gpus)])]) for i in range(64)]
        plugin = node.gpu()
        plugin.prepare([claims[0]]), plugin.unprepare([claims[0]])  # warm the channel and the API client

        prep, unprep = [], []
        for i in range(args.single):
            c = claims[i % 64]
            t, answer = timed(lambda: plugin.prepare([c]))
            assert answer[c.uid]["error"] == "", answer
            prep.append(t)
            t, _ = timed(lambda: plugin.unprepare([c]))
            unprep.append(t)
        report["prepare_one_ms"] = {"p50": ms(pct(prep, 50)), "p99": ms(pct(prep, 99)), "n": len(prep)}
        report["unprepare_one_ms"] = {"p50": ms(pct(unprep, 50)), "p99": ms(pct(unprep, 99)), "n": len(unprep)}

        per_claim, batch_wall = [], []
        for _ in range(args.batches):
            t0 = time.perf_counter()
            futures = [(c, plugin.prepare_future([c]), time.perf_counter()) for c in claims]
            done = []
            for c, f, started in futures:
                reply = f.result()
                assert reply.claims[c.uid].error == "", reply.claims[c.uid].error
                done.append(time.perf_counter() - started)
            batch_wall.append(time.perf_counter() - t0)
            per_claim += done
            plugin.unprepare(claims)
        report["prepare_64_concurrent_ms"] = {"p50": ms(pct(per_claim, 50)), "p99": ms(pct(per_claim, 99)),
                                              "batch_walls": [ms(b) for b in batch_wall],
                                              "batch_wall_p50": ms(statistics.median(batch_wall))}

        def one_batch():
            fs = [plugin.prepare_future([c]) for c in claims]
            for f in fs:
                f.result()
        n_fsync, _ = fsyncs_during(node.proc.pid, one_batch)
        report["fsyncs_per_claim_64_concurrent"] = None if n_fsync is None else round(n_fsync / 64, 3)
        n_unprep, _ = fsyncs_during(node.proc.pid, lambda: plugin.unprepare(claims))
        report["fsyncs_per_claim_unprepare_64"] = None if n_unprep is None else round(n_unprep / 64, 3)
        n_one, _ = fsyncs_during(node.proc.pid, lambda: (plugin.prepare([claims[0]]), plugin.unprepare([claims[0]])))
        report["fsyncs_one_prepare_plus_unprepare"] = n_one

        rss_before = node.rss_kb()
        for i in range(args.cycles):
            c = claims[i % 64]
            plugin.prepare([c])
            plugin.unprepare([c])
        rss_after = node.rss_kb()
        report["rss_cycles"] = {"cycles": args.cycles, "before_kb": rss_before, "after_kb": rss_after,
                                "drift_kb": rss_after - rss_before}
        node.stop()
    finally:
        node.cleanup()
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
