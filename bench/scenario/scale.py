#!/usr/bin/python3
"""How nvdra's costs grow (issue #33): runs the scale scenarios, writes their tables as JSON and draws each
growth curve as a PNG (Debian's python3-matplotlib, in contrib/dev/packages.txt). A benchmark, not a test:
the figures are noisy on a shared machine; rerun the command rather than trusting one run.

Scenarios:
  claims   per-prepare checkpoint cost with 1, 10, 100 and 1,000 claims already prepared on the node
           (build/bench/claims/claims_checkpoint_scale_bench): prepare/unprepare p50/p99, bytes written and
           fsyncs per prepare, against two references measured in the same run: every save re-encoding every
           claim (the encoding before #33) and the floor (writing and fsyncing the same bytes, no encoding);
           and on the whole node, nvdra's agent beside upstream's gpu-kubelet-plugin with the same claims already
           prepared: one more claim's prepare/unprepare p50/p99 through gRPC, checkpoint size, RSS, and the start
           with that checkpoint (stopped and started again on it; the bench adds the checkpoint's open + load)
           (bench/scenario/scale_claims_node.py; root and NVDRA_UPSTREAM_DIR, else the JSON says not run); and
           nvdra's prepare at 1,000 claims against 1 claim on two nodes probed in turn (node_pair: the ratio
           with both counts on the same minutes of the disk).

  devices  machine profiles of 1 to ~500 published devices (H100 nodes, MIG off and DynamicMIG), started under
           each server version 1.34-1.37: start, slices per driver, slice bytes and writes, RSS, and what
           republishing after one GPU's XID costs (bench/scenario/scale_devices.py).

  fleet    10, 100 and 200 agents, each on a simulated node of its own, against one API double: idle load,
           watches, RSS per node, the reconnect after an API server restart, scaled to 5,000 nodes; upstream's
           plugins on 10 nodes (bench/scenario/fleet.py, which also runs alone).

Upstream's plugin is drawn in the claims curve from the whole-node runs (its checkpoint cost cannot be taken
apart from its node); --node-counts picks the counts (default 1,10,100,1000: the last takes minutes per side).

    bench/scenario/scale.py [--build-dir build] [--out bench/scale] [--rounds 40] [--scenario claims]
    bench/scenario/scale.py --scenario devices --vfio     # every GPU with its VFIO twin: devices-vfio.json

writes <out>/<scenario>.json and <out>/<scenario>.png.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import fleet  # noqa: E402
import scale_claims_node  # noqa: E402
import scale_devices  # noqa: E402


def run_claims(build_dir, rounds, scratch, node_counts=(1, 10, 100, 1000), upstream_counts=None):
    """Twice: on the disk (--scratch, else the temp directory), where fsync dominates, and on /dev/shm
    (tmpfs: fsync is free), where what is left is the CPU the encoding and the copy into the page cache cost."""
    binary = os.path.join(build_dir, "bench", "claims", "claims_checkpoint_scale_bench")
    table = {}
    for where, folder in (("disk", scratch), ("memory", "/dev/shm/nvdra-checkpoint-scale")):
        args = [binary, "--rounds", str(rounds)] + (["--dir", folder] if folder else [])
        sys.stderr.write(f"claims scenario, checkpoint on {where}:\n")
        out = subprocess.run(args, check=True, capture_output=True, text=True)
        sys.stderr.write(out.stderr)
        table[where] = json.loads(out.stdout)
    table["node"] = scale_claims_node.run_node(build_dir, list(node_counts), NODE_ROUNDS, upstream_counts,
                                               UPSTREAM_NODE_ROUNDS)
    # The ratio (1,000 claims against 1) from two nodes probed in turn, so both see the same disk.
    table["node_pair"] = scale_claims_node.run_pair(build_dir, max(node_counts), NODE_ROUNDS)
    return table


# Prepare + unprepare of one more claim per count, on the whole node: nvdra's take ~2-5 ms, so 200 keep its p50
# steady on a noisy disk; upstream's take over a second at 1,000 claims, so 40.
NODE_ROUNDS = 200
UPSTREAM_NODE_ROUNDS = 40


def _node_panel(ax, node):
    for which, style in (("nvdra", "o-"), ("upstream", "s--")):
        pts = node.get(which, [])
        ax.plot([p["claims"] for p in pts], [p["prepare_p50_us"] / 1000 for p in pts], style,
                label=f"{which} prepare p50 (gRPC, whole node)")
        ax.plot([p["claims"] for p in pts], [p["unprepare_p50_us"] / 1000 for p in pts], style[0] + ":",
                label=f"{which} unprepare p50")
    ax.set(xscale="log", yscale="log", xlabel="claims already prepared on the node", ylabel="ms",
           title="Whole node: nvdra and upstream" if "nvdra" in node else node.get("note", ""))
    ax.legend(fontsize=7)


def _cost_panel(ax, pts, title):
    n = [p["claims"] for p in pts]
    ax.plot(n, [p["prepare_p50_us"] / 1000 for p in pts], "o-", label="nvdra prepare p50, plain claim (one save)")
    ax.plot(n, [p["recorded_prepare_p50_us"] / 1000 for p in pts], "D-",
            label="nvdra prepare p50, claim whose steps need PrepareStarted (two saves)")
    ax.plot(n, [p["full_encode_prepare_p50_us"] / 1000 for p in pts], "s--", label="re-encoding every claim, two saves (before #33)")
    ax.plot(n, [p["floor_prepare_p50_us"] / 1000 for p in pts], "^:", label="floor: write + fsync the same bytes once")
    ax.plot(n, [p["unprepare_p50_us"] / 1000 for p in pts], "x-", label="nvdra unprepare p50")
    ax.set(xscale="log", yscale="log", xlabel="claims already prepared on the node", ylabel="ms", title=title)
    ax.legend(fontsize=7)


def _start_panel(ax, table):
    """Start-up with that checkpoint: each side stopped and started again on its claims (exec to registered and
    published), and the checkpoint's own part (the bench's open + load, on the disk)."""
    node = table.get("node", {})
    for which, style in (("nvdra", "o-"), ("upstream", "s--")):
        pts = [p for p in node.get(which, []) if "start_ms" in p]
        ax.plot([p["claims"] for p in pts], [p["start_ms"] for p in pts], style, label=f"{which} start with the claims")
    pts = table["disk"]["points"]
    if all("load_p50_us" in p for p in pts):
        ax.plot([p["claims"] for p in pts], [p["load_p50_us"] / 1000 for p in pts], "^:",
                label="nvdra checkpoint open + load (read, parse, both checksums)")
    ax.set(xscale="log", yscale="log", xlabel="claims already prepared on the node", ylabel="ms",
           title="Start-up with that checkpoint")
    ax.legend(fontsize=7)


def draw_claims(table, png):
    import matplotlib  # noqa: PLC0415  (only drawing needs it; the JSON is written first)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    fig, (disk, memory, written, node, start) = plt.subplots(1, 5, figsize=(25, 4.2))
    _cost_panel(disk, table["disk"]["points"], "Checkpoint cost of one prepare (disk)")
    _cost_panel(memory, table["memory"]["points"], "Same on tmpfs: the CPU part")
    pts = table["disk"]["points"]
    written.plot([p["claims"] for p in pts], [p["bytes_written_per_prepare"] / 1024 for p in pts], "o-",
                 label="plain claim: the whole file, once (%.0f fsyncs: the file's, the directory's)"
                 % pts[-1]["fsyncs_per_prepare"])
    written.plot([p["claims"] for p in pts], [p["recorded_bytes_written_per_prepare"] / 1024 for p in pts], "D-",
                 label="with PrepareStarted saved: twice (%.0f fsyncs)" % pts[-1]["recorded_fsyncs_per_prepare"])
    written.set(xscale="log", yscale="log", xlabel="claims already prepared on the node", ylabel="KiB",
                title="Written to the checkpoint per prepare")
    written.legend(fontsize=7)
    _node_panel(node, table.get("node", {"note": "whole node not run"}))
    pair = table.get("node_pair", {})
    if "ratio_p50" in pair:
        node.text(0.02, 0.02, "nvdra, %d claims against 1 on two nodes in turn: prepare %.2fx, unprepare %.2fx"
                  % (pair["claims"]["high"], pair["ratio_p50"], pair["unprepare_ratio_p50"]),
                  transform=node.transAxes, fontsize=7)
    _start_panel(start, table)
    fig.tight_layout()
    fig.savefig(png, dpi=80)


def run_devices(build_dir, rounds, scratch, vfio=False):
    del rounds  # one start per size and server version
    return scale_devices.run_devices(build_dir, scratch, vfio)


def run_fleet(build_dir, rounds, scratch):
    del rounds, scratch  # fleet.py's defaults: 10, 100 and 200 agents, upstream on 10 nodes
    return fleet.run_table(fleet.parser().parse_args(["--build-dir", build_dir]))


SCENARIOS = {"claims": (run_claims, draw_claims), "devices": (run_devices, scale_devices.draw_devices),
             "fleet": (run_fleet, fleet.draw_fleet)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--out", default=os.path.join(TOP, "bench", "scale"))
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--scratch", default="", help="directory for the checkpoint files (the kubelet plugins disk)")
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    ap.add_argument("--node-counts", default="1,10,100,1000",
                    help="claims scenario: prepared-claim counts of the whole-node runs (nvdra and upstream)")
    ap.add_argument("--upstream-node-counts", help="claims scenario: upstream's counts, if fewer (1,000 takes long)")
    ap.add_argument("--vfio", action="store_true", help="devices scenario only: every GPU with its VFIO twin "
                    "(PassthroughSupport; MIG-off sizes), written as devices-vfio.json/png")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    names = a.scenario or sorted(SCENARIOS)
    if a.vfio and names != ["devices"]:
        ap.error("--vfio applies to the devices scenario only: give --scenario devices")
    for name in names:
        run, draw = SCENARIOS[name]
        extra = {"vfio": True} if a.vfio else {}
        if name == "claims":
            extra["node_counts"] = [int(n) for n in a.node_counts.split(",")]
            if a.upstream_node_counts:
                extra["upstream_counts"] = [int(n) for n in a.upstream_node_counts.split(",")]
        table = run(a.build_dir, a.rounds, a.scratch, **extra)
        name += "-vfio" if a.vfio else ""
        with open(os.path.join(a.out, name + ".json"), "w") as f:
            json.dump(table, f, indent=1)
            f.write("\n")
        draw(table, os.path.join(a.out, name + ".png"))
        print(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
