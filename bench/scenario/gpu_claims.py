#!/usr/bin/python3
"""Whole-process scenario bench for gpu.nvidia.com claims (not a test: it reports numbers).

Runs the real agent on a simulated dgx-a100 (mock NVML, fake driver root, API-server double,
kubelet double over the real sockets, real files and fsync in a temp dir on this machine's disk)
and prints the figures below. Latencies are timed by a compiled gRPC client
(bench/kubelet/claim_client.cpp), as kubelet's is; the kubelet double registers the plugin and
drives the fsync and RSS phases. The CDI root is on tmpfs (/dev/shm) as /var/run/cdi is on a
host, unless --cdi-on-disk; the checkpoint is on this machine's disk either way.
  start-to-READY, prepare p50/p99 for one claim at a time and for 64 concurrent claims,
  unprepare p50/p99, fsyncs per claim (strace, in a separate phase so it does not skew latency),
  idle RSS (and the RSS of a bare grpc++ server with OpenSSL, the floor under it), and RSS drift
  over N prepare/unprepare cycles.

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
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def ms(v):
    return round(v * 1000, 3)


def pct_ms(values, p):
    """The p-th percentile of values in seconds, in milliseconds to two places."""
    return round(pct(values, p) * 1000, 2)


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


def grpc_floor_rss_kb(build_dir, root):
    """RSS of kubelet_grpc_floor: a bare grpc++ server plus OpenSSL, linked as the agent is."""
    proc = subprocess.Popen([os.path.join(build_dir, "bench", "kubelet", "kubelet_grpc_floor"),
                             os.path.join(root, "floor.sock")], stdout=subprocess.PIPE, text=True)
    try:
        proc.stdout.readline()  # "ready"
        time.sleep(1.0)  # as long as the agent is left idle
        with open(f"/proc/{proc.pid}/status") as f:
            return int(next(line for line in f if line.startswith("VmRSS:")).split()[1])
    finally:
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--profile", default="dgx-a100")
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--single", type=int, default=200, help="sequential one-claim prepares")
    ap.add_argument("--batches", type=int, default=10, help="rounds of 64 concurrent prepares")
    ap.add_argument("--json")
    ap.add_argument("--agent-arg", action="append", default=[], help="extra agent flag (repeatable)")
    ap.add_argument("--cdi-on-disk", action="store_true", help="CDI root beside the checkpoint, not on tmpfs")
    args = ap.parse_args()
    cdi_tmpfs = None
    if not args.cdi_on_disk:
        cdi_tmpfs = tempfile.mkdtemp(prefix="nvdra-bench-cdi-", dir="/dev/shm")
        args.agent_arg += ["--cdi-root", cdi_tmpfs]
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    from gpu_node import SimulatedNode

    node = SimulatedNode(profile=args.profile, node="bench-node", args=args.agent_arg, api_process=True)
    report = {"profile": args.profile, "cdi_root": "tmpfs" if cdi_tmpfs else "disk", "machine": os.uname().nodename, "nproc": os.cpu_count()}
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
        report["idle_rss_floor_kb"] = grpc_floor_rss_kb(args.build_dir, node.root)
        gpus = sorted(n for n in node.published() if "-mig-" not in n)

        claims = [node.allocate(f"c{i}", [("gpu", gpus[i % len(gpus)])]) for i in range(64)]
        plugin = node.gpu()
        claims_file = os.path.join(node.root, "bench-claims.json")
        with open(claims_file, "w") as f:
            json.dump([{"uid": c.uid, "namespace": c.namespace, "name": c.name} for c in claims], f)

        def client(mode, n):
            """The latency phases, timed by the compiled client (bench/kubelet/claim_client.cpp)."""
            out = subprocess.run([os.path.join(args.build_dir, "bench", "kubelet", "kubelet_claim_client"),
                                  "--socket", plugin.endpoint, "--claims", claims_file, mode, str(n)],
                                 check=True, capture_output=True, text=True)
            return json.loads(out.stdout)

        one = client("sequential", args.single)
        prep, unprep = [u / 1e6 for u in one["prepare_us"]], [u / 1e6 for u in one["unprepare_us"]]
        report["prepare_one_ms"] = {"p50": ms(pct(prep, 50)), "p99": ms(pct(prep, 99)), "n": len(prep)}
        report["unprepare_one_ms"] = {"p50": ms(pct(unprep, 50)), "p99": ms(pct(unprep, 99)), "n": len(unprep)}

        many = client("concurrent", args.batches)
        per_claim, batch_wall = [u / 1e6 for u in many["prepare_us"]], [u / 1e6 for u in many["round_us"]]
        report["prepare_64_concurrent_ms"] = {"p50": ms(pct(per_claim, 50)), "p99": ms(pct(per_claim, 99)),
                                              "batch_walls": [ms(b) for b in batch_wall],
                                              "batch_wall_p50": ms(statistics.median(batch_wall))}
        report["ratio_64_concurrent_p99_to_one_p99"] = round(pct(per_claim, 99) / pct(prep, 99), 2)

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
        if cdi_tmpfs:
            shutil.rmtree(cdi_tmpfs, ignore_errors=True)
    print(json.dumps(report, indent=2))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
