#!/usr/bin/python3
"""Fleet figures (issue #22 item 7; not a test): N agents, each on its own simulated node (mock NVML,
its own kubelet/CDI folders), against ONE API-server double in a process of its own.

  * start: time until every node's ResourceSlices are stored;
  * idle: over --idle seconds, the watches held (per agent and in all), requests and writes sent, the
    agents' CPU time; what timeoutSeconds the watches asked for (one shared value = one shared beat);
  * mass drop: the double cuts every watch at once (as an API server restart); when each agent's
    watches come back, relative to the cut: spread (min, p50, p90, max) and a 100 ms histogram.

    bench/scenario/fleet.py [--agents 10,30,60] [--idle 20] [--agent-binary build/agent/nvdra-agent]

--agent-binary of another build (e.g. main's, before the jitter) runs the same scenario for comparison.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else float("nan")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def wait_until(predicate, timeout, what):
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise RuntimeError(f"{what}: not within {timeout} s")
        time.sleep(0.1)


def is_watch(r):
    return r["query"].get("watch") in ("1", "true")


def run_fleet(n, args, root):
    from gpu_node import RemoteApiDouble
    from nvdra_testlib import AgentDirs, clean_env, simulated_gpu_node

    api = RemoteApiDouble(os.path.join(root, "api"), (1, 35))
    agents = []
    try:
        node_args = simulated_gpu_node(os.path.join(root, "node"), "l4")  # one read-only node layout for all
        for i in range(n):
            api.put_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"node-{i}"}})
        t0 = time.monotonic()
        for i in range(n):
            dirs = AgentDirs()
            state = tempfile.mkdtemp(prefix="mock-", dir=root)
            log = open(os.path.join(root, f"agent-{i}.log"), "w")
            cmd = [args.agent_binary] + dirs.args(f"node-{i}", gpu_node=False) + node_args + [
                "--kubeconfig", api.kubeconfig, "--mps-manager=process"]
            proc = subprocess.Popen(cmd, env=clean_env(NVDRA_MOCK_PROFILE="l4", NVDRA_MOCK_STATE_DIR=state),
                                    stdout=log, stderr=log)
            agents.append((proc, dirs, log))

        def published():
            slices = api.objects("resource.k8s.io/v1", "resourceslices")
            return len({s["spec"]["nodeName"] for s in slices}) == n
        wait_until(published, 120 + n, "every node published")
        start_s = time.monotonic() - t0
        # Idle: let the start settle, then count.
        wait_until(lambda: api._call("GET", "/admin/watches")["open"] >= n, 60, "watches open")
        time.sleep(2)
        api._call("POST", "/admin/requests/reset")
        cpu0 = sum(cpu_seconds(p.pid) for p, _, _ in agents)
        time.sleep(args.idle)
        idle_log = api.request_log()
        cpu1 = sum(cpu_seconds(p.pid) for p, _, _ in agents)
        held = api._call("GET", "/admin/watches")["open"]
        rss = sorted(rss_kb(p.pid) for p, _, _ in agents)
        # Mass drop.
        api._call("POST", "/admin/requests/reset")
        t_cut = time.time()
        api._call("POST", "/admin/drop-watches")
        wait_until(lambda: sum(1 for r in api.request_log() if is_watch(r) and r["status"] == 200) >= held, 120,
                   "every watch reopened")
        drop_log = api.request_log()
        back = [r["time"] - t_cut for r in drop_log if is_watch(r) and r["status"] == 200]
        # API server restart: down --outage seconds, every agent reconnecting in its backoff meanwhile.
        api._call("POST", "/admin/requests/reset")
        api._call("POST", "/admin/outage", {"seconds": args.outage})

        def came_up():
            try:
                return api._call("GET", "/admin/came-up")["time"]
            except OSError:
                return None
        wait_until(lambda: came_up() is not None, args.outage + 30, "double back")
        t_up = came_up()
        wait_until(lambda: sum(1 for r in api.request_log() if is_watch(r) and r["status"] == 200) >= held, 120,
                   "every watch reopened after the restart")
        after = [r["time"] - t_up for r in api.request_log() if is_watch(r) and r["status"] == 200]
        timeouts = sorted({int(r["query"].get("timeoutSeconds", 0)) for r in drop_log if is_watch(r)})
        hist = {}
        for b in back:
            hist[int(b * 10) / 10] = hist.get(int(b * 10) / 10, 0) + 1
        return {
            "agents": n, "start_to_all_published_s": round(start_s, 2),
            "idle_s": args.idle, "watches_held": held, "watches_per_agent": round(held / n, 2),
            "idle_requests": len([r for r in idle_log if not r["path"].startswith("/admin")]),
            "idle_writes": len([r for r in idle_log if r["method"] in ("POST", "PUT", "PATCH", "DELETE")
                                and not r["path"].startswith("/admin")]),
            "idle_agent_cpu_s_total": round(cpu1 - cpu0, 3), "rss_kb_p50": pct(rss, 50),
            "reconnect_s": {"min": round(min(back), 3), "p50": round(pct(back, 50), 3),
                            "p90": round(pct(back, 90), 3), "max": round(max(back), 3)},
            "reconnect_histogram_100ms": {f"{k:.1f}": v for k, v in sorted(hist.items())},
            "outage_s": args.outage,
            "after_restart_reconnect_s": {"min": round(min(after), 3), "p50": round(pct(after, 50), 3),
                                          "p90": round(pct(after, 90), 3), "max": round(max(after), 3)},
            "distinct_timeoutSeconds_after_drop": len(timeouts),
            "timeoutSeconds_range": [timeouts[0], timeouts[-1]] if timeouts else [],
        }
    finally:
        for proc, dirs, log in agents:
            proc.terminate()
        for proc, dirs, log in agents:
            proc.wait()
            log.close()
            dirs.cleanup()
        api.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--agent-binary", default=None)
    ap.add_argument("--agents", default="10,30,60")
    ap.add_argument("--idle", type=float, default=20.0)
    ap.add_argument("--outage", type=float, default=5.0, help="API server down this long in the restart phase")
    args = ap.parse_args()
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    os.environ.setdefault("NVDRA_SOURCE_DIR", TOP)
    args.agent_binary = os.path.abspath(args.agent_binary or os.path.join(args.build_dir, "agent", "nvdra-agent"))
    for n in (int(x) for x in args.agents.split(",")):
        root = tempfile.mkdtemp(prefix=f"nvdra-fleet-{n}-")
        try:
            print(json.dumps(run_fleet(n, args, root)), flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
