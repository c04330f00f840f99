#!/usr/bin/python3
"""Driver-managed IMEX channel readiness, nvdra against upstream's compute-domain-kubelet-plugin on the same
simulated gb200-nvl node and API double (not a test: it reports numbers; needs root and NVDRA_UPSTREAM_DIR or
--upstream-dir, as test/lib/upstream_node.py). For each of --domains ComputeDomains in turn: a channel claim's
prepare starts, the node label shows that it waits for the daemon, the daemon's ComputeDomainClique entry turns
Ready, and the time from that write to the prepare's answer is measured; then the claim is unprepared. Meanwhile
a second writer updates the Node every 100 ms (GET + PUT with its resourceVersion, as kubelet's status writes
do). Reported per side: readiness-to-answer p50/p99, API requests per channel prepare (watches not counted), and
the Node writes of the plugin that the API server answered 409 Conflict. --ready-after models the IMEX daemon's
start: the Ready write comes that many seconds after the label (upstream's retry backoff has grown by then).

    sudo bench/scenario/driver_managed_readiness.py [--build-dir build] [--upstream-dir DIR] [--domains 50] [--ready-after 0] [--json F]
"""
import argparse
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))
from compute_domain_objects import clique_object  # noqa: E402
from gpu_claims import pct_ms  # noqa: E402

GV = "resource.nvidia.com/v1beta1"
LABEL = "resource.nvidia.com/computeDomain"


class NodeWriter(threading.Thread):
    """Another writer of the Node (kubelet's status): a new annotation every 100 ms through the store."""

    def __init__(self, node):
        super().__init__(daemon=True)
        self.node, self.stop_event, self.writes = node, threading.Event(), 0

    def run(self):
        while not self.stop_event.wait(0.1):
            obj = self.node.api.objects("v1", "nodes")[0]
            obj["metadata"].setdefault("annotations", {})["bench/heartbeat"] = str(self.writes)
            self.node.api.put_object(obj)
            self.writes += 1


def one_domain(node, plugin, clique, i, which, ready_after):
    cd = node.api.put_object({"apiVersion": GV, "kind": "ComputeDomain",
                              "metadata": {"name": f"{which}-{i}", "namespace": "default"},
                              "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "t"}}}})
    uid = cd["metadata"]["uid"]
    params = {"apiVersion": GV, "kind": "ComputeDomainChannelConfig", "domainID": uid, "allocationMode": "Single"}
    claim = node.allocate(f"{which}-ch-{i}", [("channel", "channel-0")], [([], params)], driver="compute-domain.nvidia.com")
    out = {}

    def prepare():
        out["start"] = time.time()
        out["answer"] = plugin.prepare([claim])[claim.uid]
        out["end"] = time.monotonic()
        out["end_wall"] = time.time()
    worker = threading.Thread(target=prepare)
    worker.start()
    node.api.wait_for_objects("v1", "nodes", lambda n: n[0]["metadata"].get("labels", {}).get(LABEL) == uid, 60)
    time.sleep(ready_after)  # the daemon pod's start (a model of a duration, not a wait for an event)
    node.api.put_object(clique_object(uid, clique, node.node))
    ready = time.monotonic()
    worker.join(120)
    if out["answer"]["error"]:
        raise RuntimeError(f"{which}: prepare failed: {out['answer']['error']}")
    requests = [r for r in node.api.request_log()
                if out["start"] <= r["time"] <= out["end_wall"] and "watch" not in r.get("query", {})
                and not r["path"].startswith("/admin")]
    if plugin.unprepare([claim])[claim.uid]:
        raise RuntimeError(f"{which}: unprepare failed")
    return out["end"] - ready, len(requests)


def run_side(which, node, args, up_module, clique):
    up = None
    if which == "nvdra":
        node.start()
        plugin = node.plugins["compute-domain.nvidia.com"]
    else:
        up = up_module.UpstreamPlugins(node, drivers=["compute-domain.nvidia.com"], imex_mode="driverManaged",
                                       directory=args.upstream_dir,
                                       gates={"compute-domain.nvidia.com":
                                              "IMEXDaemonsWithDNSNames=true,ComputeDomainCliques=true"})
        up.start(wait_slices=False)
        plugin = up.cd()
    writer = NodeWriter(node)
    writer.start()
    node.api.reset_requests()
    latencies, counts = [], []
    try:
        for i in range(args.domains):
            latency, count = one_domain(node, plugin, clique, i, which, args.ready_after)
            latencies.append(latency)
            counts.append(count)
    finally:
        writer.stop_event.set()
        writer.join()
        conflicts = [r for r in node.api.request_log() if r["path"].startswith("/api/v1/nodes")
                     and r["method"] in ("PUT", "PATCH") and r["status"] == 409]
        (up.cleanup() if up else node.stop())
    return {"ready_to_answer_p50_ms": pct_ms(latencies, 50), "ready_to_answer_p99_ms": pct_ms(latencies, 99),
            "api_requests_per_prepare": sum(counts) / len(counts), "node_write_conflicts": len(conflicts),
            "other_node_writes": writer.writes}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    p.add_argument("--upstream-dir", default=os.environ.get("NVDRA_UPSTREAM_DIR", ""))
    p.add_argument("--domains", type=int, default=50)
    p.add_argument("--ready-after", type=float, default=0.0)
    p.add_argument("--json")
    args = p.parse_args()
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    os.environ["NVDRA_UPSTREAM_DIR"] = args.upstream_dir
    import upstream_node as up_module
    if not up_module.upstream_dir():
        sys.exit(up_module.skip_reason())
    node = up_module.upstream_node("gb200-nvl", args=["--controller=false"], drivers=["compute-domain.nvidia.com"],
                                   api_process=False)
    try:
        node.start()
        clique = node.wait_log(r"mode=driverManaged clique=(\S+)").group(1)
        node.stop()
        results = {which: run_side(which, node, args, up_module, clique) for which in ("nvdra", "upstream")}
    finally:
        node.cleanup()
    for key in results["nvdra"]:
        print(f"{key:28} nvdra {results['nvdra'][key]:>10}   upstream {results['upstream'][key]:>10}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
