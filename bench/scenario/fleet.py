#!/usr/bin/python3
"""Fleet scenario (issues #22 item 7, #33 item 3; a benchmark, not a test): N real nvdra-agent processes, each
on a simulated node of its own (its own generated 8 x H100 mock NVML profile with GPUs of its own UUIDs, its
own mock state, registrar/plugins/CDI folders and node name; the fake driver root is one read-only layout
for all), against ONE API-server double in a process of its own. Per N:

  start      until every node's ResourceSlices are stored;
  idle       over --idle seconds: requests per second at the API server (in all, per agent), watches held,
             each agent's RSS and CPU;
  restart    the double goes down for --outage seconds (connections cut, nothing listening) and comes back
             on the same port; for each agent the seconds from its return to the agent's first request
             and to its last watch reopened (p50/p90/max), the requests per second at the server, and
             the largest share of the fleet whose first request fell in one second (goal <= 1/10);
  5,000      the per-agent figures scaled linearly to 5,000 nodes.

With NVDRA_UPSTREAM_DIR (contrib/dev/prerequisites) and root, --upstream M runs upstream's two plugins
(gpu-kubelet-plugin + compute-domain-kubelet-plugin, test/lib/upstream_node.py, each node's client-go
through a pb2json-proxy of its own) on M nodes against one double the same way.

    bench/scenario/fleet.py [--agents 10,100,200] [--upstream 10] [--idle 20] [--outage 5] [--spread S]
                            [--out bench/scale]

writes <out>/fleet.json and <out>/fleet.png (also: bench/scenario/scale.py --scenario fleet).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))
GPUS = 8
FLEET = 5000
NODE_OF = re.compile(r"spec\.nodeName=([^,&]+)")


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else None


def spread(values):
    return {k: round(v, 3) for k, v in (("p50", pct(values, 50)), ("p90", pct(values, 90)),
                                        ("max", max(values)))} if values else {}


def proc_figures(pid):
    """(RSS kB, CPU seconds) of one process."""
    with open(f"/proc/{pid}/status") as f:
        rss = next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return rss, (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until(predicate, timeout, what):
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise RuntimeError(f"{what}: not within {timeout} s")
        time.sleep(0.2)  # a bench polling the double's admin API, not a test


def api_requests(log):
    return [r for r in log if not r["path"].startswith("/admin")]


def is_watch(r):
    return r["query"].get("watch") in ("1", "true")


def node_of(r):
    m = NODE_OF.search(r["query"].get("fieldSelector", ""))
    return m.group(1) if m else None


class NvdraFleet:
    """N nvdra agents; pids() → {node: [pid]}."""
    name = "nvdra"

    def __init__(self, n, api, root, binary, extra=()):
        from machine_profiles import write_profile
        from nvdra_testlib import AgentDirs, clean_env, simulated_gpu_node
        self.procs, self.dirs = {}, []
        layout = None
        for i in range(n):
            node = f"node-{i}"
            profile = write_profile(os.path.join(root, f"{node}.yaml"), GPUS, False, first_uuid=i * GPUS)
            layout = layout or simulated_gpu_node(os.path.join(root, "layout"), profile)
            dirs = AgentDirs()
            self.dirs.append(dirs)
            state = tempfile.mkdtemp(prefix="mock-", dir=root)
            log = open(os.path.join(root, f"{node}.log"), "w")
            cmd = [binary] + dirs.args(node, gpu_node=False) + layout + ["--kubeconfig", api.kubeconfig,
                                                                          "--mps-manager=process", *extra]
            self.procs[node] = subprocess.Popen(cmd, env=clean_env(NVDRA_MOCK_PROFILE=profile,
                                                                   NVDRA_MOCK_STATE_DIR=state),
                                                stdout=log, stderr=log)
            log.close()

    def pids(self):
        return {node: [p.pid] for node, p in self.procs.items()}

    def stop(self):
        for p in self.procs.values():
            p.terminate()
        for p in self.procs.values():
            p.wait()
        for d in self.dirs:
            d.cleanup()


class UpstreamFleet:
    """M nodes of upstream's two plugins (each through its own pb2json-proxy) on the shared double."""
    name = "upstream"

    def __init__(self, n, api, root, binary, extra=()):
        del binary, extra
        from machine_profiles import write_profile
        from upstream_node import UpstreamPlugins, upstream_node
        self.members = []
        for i in range(n):
            node_name = f"node-{i}"
            profile = write_profile(os.path.join(root, f"{node_name}.yaml"), GPUS, False, first_uuid=i * GPUS)
            node = upstream_node(profile, node=node_name)
            own_api, node.api = node.api, api  # the plugins talk to the fleet's double
            up = UpstreamPlugins(node)
            up.ca, up.token = os.path.join(api.dir, "ca.crt"), os.path.join(api.dir, "token")
            self.members.append((node, own_api, up))
            up.start(timeout=120, wait_slices=False)

    def pids(self):
        return {node.node: list(up.pids().values()) for node, _, up in self.members}

    def stop(self):
        for node, own_api, up in self.members:
            up.cleanup()
            node.api = own_api
            node.cleanup()


def measure_idle(api, fleet, n, idle_s):
    api._call("POST", "/admin/requests/reset")
    pids = [pid for ps in fleet.pids().values() for pid in ps]
    cpu0 = sum(proc_figures(p)[1] for p in pids)
    time.sleep(idle_s)  # the window counted
    requests = api_requests(api.request_log())
    figures = {node: [proc_figures(p) for p in ps] for node, ps in fleet.pids().items()}
    rss_mib = sorted(sum(r for r, _ in f) / 1024 for f in figures.values())
    cpu1 = sum(c for f in figures.values() for _, c in f)
    return {"idle_s": idle_s, "requests": len(requests),
            "requests_per_s": round(len(requests) / idle_s, 3),
            "requests_per_s_per_agent": round(len(requests) / idle_s / n, 4),
            "writes": sum(1 for r in requests if r["method"] in ("POST", "PUT", "PATCH", "DELETE")),
            "watches_held": api._call("GET", "/admin/watches")["open"],
            "rss_mib_per_agent": {"p50": round(pct(rss_mib, 50), 1), "max": round(rss_mib[-1], 1)},
            "cpu_s_per_agent": round((cpu1 - cpu0) / n, 4)}


def measure_restart(api, n, watches_held, outage_s, timeout):
    api._call("POST", "/admin/requests/reset")
    api._call("POST", "/admin/outage", {"seconds": outage_s})

    def came_up():
        try:
            return api._call("GET", "/admin/came-up")["time"]
        except OSError:
            return None
    wait_until(lambda: came_up() is not None, outage_s + 30, "double back")
    t_up = came_up()

    def back(log):  # every watch held before reopened, and every node heard from
        watches = sum(1 for r in log if is_watch(r) and r["status"] == 200)
        return watches >= watches_held and len({node_of(r) for r in log} - {None}) == n
    # Only what reached the returned server (the cut watches are logged as they end, before it).
    after = lambda: [r for r in api_requests(api.request_log()) if r["time"] >= t_up]  # noqa: E731
    wait_until(lambda: back(after()), timeout, "every agent's watches reopened")
    log = after()
    first, last_watch = {}, {}
    for r in log:
        node = node_of(r)
        if node is None:
            continue
        first.setdefault(node, r["time"] - t_up)
        if is_watch(r) and r["status"] == 200:
            last_watch[node] = r["time"] - t_up
    per_second, agents_per_second = {}, {}
    for r in log:
        s = int(r["time"] - t_up)
        per_second[s] = per_second.get(s, 0) + 1
    for t in first.values():
        agents_per_second[int(t)] = agents_per_second.get(int(t), 0) + 1
    return {"outage_s": outage_s, "first_request_s": spread(list(first.values())),
            "watches_back_s": spread(list(last_watch.values())), "requests": len(log),
            "requests_per_agent": round(len(log) / n, 2), "peak_requests_per_s": max(per_second.values()),
            "max_share_of_fleet_in_one_second": round(max(agents_per_second.values()) / n, 4),
            "watched": sorted({r["path"] for r in log if is_watch(r)}),
            "agents_per_second": {str(k): v for k, v in sorted(agents_per_second.items())}}


def run_fleet(kind, n, args, root):
    from gpu_node import RemoteApiDouble
    api = RemoteApiDouble(os.path.join(root, "api"), (1, 35))
    api.dir = os.path.join(root, "api")
    fleet = None
    try:
        for i in range(n):
            api.put_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}"}})
        t0 = time.monotonic()
        extra = [f"--api-reconnect-spread={args.spread}"] if args.spread is not None else []
        fleet = kind(n, api, root, args.agent_binary, extra)

        def published():
            return len({s["spec"]["nodeName"] for s in api.objects("resource.k8s.io/v1", "resourceslices")}) == n
        wait_until(published, 120 + 2 * n, "every node published")
        start_s = time.monotonic() - t0
        wait_until(lambda: api._call("GET", "/admin/watches")["open"] >= n, 120, "watches open")
        time.sleep(3)  # let the start settle before counting
        out = {"agents": n, "implementation": kind.name, "start_to_all_published_s": round(start_s, 2)}
        out["idle"] = measure_idle(api, fleet, n, args.idle)
        out["restart"] = measure_restart(api, n, out["idle"]["watches_held"], args.outage, args.outage + 120)
        out["at_5000"] = extrapolate(out, out["idle"]["watches_held"] / n)
        return out
    finally:
        if fleet is not None:
            fleet.stop()
        api.stop()


# Both sides end each watch after a timeout drawn uniformly from [300, 600) s (client-go: 5 min x
# [1, 2)) and open it again: one request per watch every 450 s on average. An idle window of seconds
# never sees one, so this part of the idle load is derived from the watches held, and named so.
MEAN_WATCH_S = 450.0


def extrapolate(row, watches_per_agent):
    idle, restart = row["idle"], row["restart"]
    return {"idle_requests_per_s": round(idle["requests_per_s_per_agent"] * FLEET, 2),
            "watch_reopens_per_s_derived": round(watches_per_agent * FLEET / MEAN_WATCH_S, 1),
            "watches_held": round(watches_per_agent * FLEET),
            "agent_memory_gib": round(idle["rss_mib_per_agent"]["p50"] * FLEET / 1024, 1),
            "restart_requests": round(restart["requests_per_agent"] * FLEET),
            "restart_peak_requests_per_s": round(restart["requests_per_agent"] * FLEET
                                                 * restart["max_share_of_fleet_in_one_second"])}


def draw_fleet(table, png):
    import matplotlib  # noqa: PLC0415  (only drawing needs it; the JSON is written first)
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    fig, (load, mem, herd) = plt.subplots(1, 3, figsize=(15, 4.2))
    for impl, style, dotted in (("nvdra", "o-", "o:"), ("upstream", "s--", "s:")):
        rows = [r for r in table["rows"] if r["implementation"] == impl]
        if not rows:
            continue
        n = [r["agents"] for r in rows]
        load.plot(n, [r["idle"]["requests_per_s"] for r in rows], style, label=f"{impl}: idle requests/s")
        load.plot(n, [r["idle"]["watches_held"] for r in rows], dotted, label=f"{impl}: watches")
        mem.plot(n, [r["idle"]["rss_mib_per_agent"]["p50"] for r in rows], style, label=f"{impl}: RSS per node")
        herd.plot(n, [100 * r["restart"]["max_share_of_fleet_in_one_second"] for r in rows], style,
                  label=f"{impl}: most of the fleet back in one second")
    load.set(xlabel="nodes", ylabel="at the API server", title="Idle load and watches", xscale="log")
    mem.set(xlabel="nodes", ylabel="MiB", title="Memory per node (both drivers)", xscale="log", ylim=(0, None))
    herd.axhline(10, color="grey", lw=0.8, label="goal: 10 %")
    herd.set(xlabel="nodes", ylabel="% of the fleet", title=f"After a {table['outage_s']} s API server restart",
             xscale="log", ylim=(0, 100))
    for ax in (load, mem, herd):
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=80)


def run_table(args):
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    os.environ.setdefault("NVDRA_SOURCE_DIR", TOP)
    args.agent_binary = os.path.abspath(args.agent_binary or os.path.join(args.build_dir, "agent", "nvdra-agent"))
    runs = [(NvdraFleet, int(x)) for x in args.agents.split(",") if x]
    runs += [(UpstreamFleet, int(x)) for x in args.upstream.split(",") if x]
    table = {"gpus_per_node": GPUS, "idle_s": args.idle, "outage_s": args.outage,
             "api_reconnect_spread_s": args.spread if args.spread is not None else "default (30)", "rows": []}
    for kind, n in runs:
        root = tempfile.mkdtemp(prefix=f"nvdra-fleet-{n}-")
        try:
            row = run_fleet(kind, n, args, root)
            sys.stderr.write(json.dumps(row) + "\n")
            table["rows"].append(row)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return table


def parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--agent-binary", default=None)
    ap.add_argument("--agents", default="10,100,200")
    ap.add_argument("--upstream", default="10", help="upstream fleet sizes ('' for none; needs NVDRA_UPSTREAM_DIR)")
    ap.add_argument("--idle", type=float, default=20.0)
    ap.add_argument("--outage", type=float, default=5.0, help="API server down this long in the restart phase")
    ap.add_argument("--spread", type=float, default=None, help="the agents' --api-reconnect-spread (default: theirs)")
    ap.add_argument("--out", default=os.path.join(TOP, "bench", "scale"))
    return ap


def main():
    args = parser().parse_args()
    table = run_table(args)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "fleet.json"), "w") as f:
        json.dump(table, f, indent=1)
        f.write("\n")
    draw_fleet(table, os.path.join(args.out, "fleet.png"))
    print(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
