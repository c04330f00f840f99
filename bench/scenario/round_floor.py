#!/usr/bin/python3
"""The 64-concurrent prepare round against its floor, nvdra alone (issue #33 item 5; a benchmark, not a test).

versus_upstream.py measures the round once per run among many figures; this runs only the round, --rounds times,
with the floor (64 concurrent claim GETs on connections opened beforehand) interleaved, at equal client limits,
on the same node and doubles (upstream_node's profile, CDI root on tmpfs). It also reports the CPU that the
agent, the API double and the claim client use per round (from /proc/<pid>/stat and getrusage, around each
client run: its 64 concurrent prepares and its one unprepare of all 64), which says whether a round is bound by
CPU on this machine. The node's directories (checkpoint included) are made under TMPDIR: TMPDIR=/dev/shm puts
them on tmpfs, to tell the disk's part from the rest.

    bench/scenario/round_floor.py [--rounds 30] [--build-dir build] [--upstream-dir DIR] [--json F]
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOP, "test", "lib"))
import versus_upstream as vu  # noqa: E402  (the same node, claims, client and floor as the full comparison)


def cpu_ms(pid):
    """User + system CPU of a process so far, in ms."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def children_ms():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r.ru_utime + r.ru_stime) * 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--upstream-dir", default=os.environ.get("NVDRA_UPSTREAM_DIR", ""),
                    help="unpacked upstream plugins (upstream_node needs them to build the node)")
    ap.add_argument("--profile", default="dgx-a100")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    if not args.upstream_dir:
        ap.error("--upstream-dir or NVDRA_UPSTREAM_DIR: the unpacked upstream plugins (shared/upstream/unpack DIR)")
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    os.environ["NVDRA_UPSTREAM_DIR"] = os.path.abspath(args.upstream_dir)
    import upstream_node as um

    node = um.upstream_node(args.profile, node="bench-node", gates=vu.NVDRA_GATES,
                            args=["--imex-mode=hostManaged", "--controller=false"], api_process=True)
    node.dirs.cdi = tempfile.mkdtemp(prefix="nvdra-round-cdi-", dir="/dev/shm")
    sides = vu.Sides(node, um, args.upstream_dir)
    client_bin = os.path.join(args.build_dir, "bench", "kubelet", "kubelet_claim_client")
    try:
        claims = vu.admin_claims(node, vu.whole_gpus(args.profile), 64)
        claims_file = vu.write_claims_file(node, claims)
        sides.start("nvdra", True)

        def client(n):
            return vu.run_claim_client(client_bin, sides.plugins[um.GPU].endpoint, claims_file, "concurrent",
                                       n)["round_us"]

        client(3)  # warm-up: connections, the checkpoint's caches
        agent, api = sides.pids[0], node.api.proc.pid
        rounds, floors, cpu = [], [], {"agent": 0.0, "api_double": 0.0, "claim_client": 0.0}
        for _ in range(args.rounds):
            before = (cpu_ms(agent), cpu_ms(api), children_ms())
            rounds += client(1)
            after = (cpu_ms(agent), cpu_ms(api), children_ms())
            for key, b, a in zip(cpu, before, after):
                cpu[key] += a - b
            floors += vu.claim_read_floor(node, claims, 1)
        sides.stop("nvdra")
    finally:
        node.cleanup()
        shutil.rmtree(node.dirs.cdi, ignore_errors=True)
    r, f = statistics.median(rounds) / 1000, statistics.median(floors) / 1000
    fig = {"rounds": args.rounds, "round_p50_ms": round(r, 2), "floor_p50_ms": round(f, 2),
           "round_over_floor": round(r / f, 2), "node_dirs": tempfile.gettempdir(),
           "cpu_ms_per_round": {k: round(v / args.rounds, 1) for k, v in cpu.items()}}
    text = json.dumps(fig, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
