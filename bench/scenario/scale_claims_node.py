"""Claims scenario, whole node (bench/scenario/scale.py --scenario claims, issue #33): nvdra's agent and upstream's
gpu-kubelet-plugin, one after the other on the same simulated node (test/lib/upstream_node.py, as
bench/scenario/versus_upstream.py starts them; root and NVDRA_UPSTREAM_DIR), each with 1, 10, 100, ... claims
already prepared (adminAccess on the node's whole GPUs, prepared through the kubelet double in batches of 100 as
kubelet may send them). At each count: `rounds` prepare + unprepare of one more claim through the compiled gRPC
client (bench/kubelet/claim_client.cpp), both sides at equal client limits (QPS and burst 1000, as
versus_upstream.py's equal phases: upstream's default limits would show its rate limiter): p50/p99 in us, the GPU
checkpoint's size, the side's RSS; then the side is stopped and started again on that checkpoint three times
(start-up with it: exec to registered and published, the median; RSS once ready). The counts grow on one side's
run (the claims stay prepared between points and across its restarts); between the sides the checkpoint is
emptied by unpreparing every claim, so that neither side takes over the other's claims."""
import json
import os
import subprocess
import sys

import versus_upstream as vu

BATCH = 100


def _claim(node, name, gpu):
    from kubelet_double import Claim  # noqa: PLC0415  (test/lib is on the path once versus_upstream is imported)
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                                         "adminAccess": True}}]}},
           "status": {"allocation": {"devices": {"results": [
               {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node.node, "device": gpu, "adminAccess": True}]}}}}
    return Claim("default", name, node.api.put_object(obj)["metadata"]["uid"])


def _in_batches(call, claims):
    for i in range(0, len(claims), BATCH):
        answers = call(claims[i:i + BATCH], timeout=300)
        # prepare answers {uid: {"error": ...}}, unprepare {uid: error}
        bad = {uid: a["error"] if isinstance(a, dict) else a for uid, a in answers.items()}
        bad = {uid: e for uid, e in bad.items() if e}
        if bad:
            raise RuntimeError(f"{len(bad)} claims failed, e.g. {next(iter(bad.items()))}")


def _upstream_node():
    import upstream_node  # noqa: PLC0415  (after NVDRA_BINARY_DIR is set)
    return upstream_node


def _node(um, name):
    """The simulated node both sides run on, its API double in a process of its own."""
    return um.upstream_node("dgx-a100", node=name, gates=vu.NVDRA_GATES,
                            args=["--imex-mode=hostManaged", "--controller=false"], api_process=True)


def _probe(sides, node, client_bin, which, rounds):
    """rounds prepare + unprepare of one claim not yet prepared: {prepare_us: [...], unprepare_us: [...]}."""
    probe = _claim(node, f"probe-{which}", vu.whole_gpus("dgx-a100")[0])
    path = os.path.join(node.root, f"probe-{which}.json")
    with open(path, "w") as f:
        json.dump([{"uid": probe.uid, "namespace": probe.namespace, "name": probe.name}], f)
    out = subprocess.run([client_bin, "--socket", sides.plugins[_upstream_node().GPU].endpoint, "--claims", path,
                          "sequential", str(rounds)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


RESTARTS = 3


def _restart(sides, which, held):
    """Start-up with that checkpoint: the side stopped and started again on the node RESTARTS times, its `held`
    claims still prepared. start_ms is the median of Sides.start's (exec to the last registration or slice write),
    start_ms_all each; rss_after_start_kb once the last start is ready. The checkpoint must still name every claim
    after each start (the claims are unprepared through the last start later)."""
    starts = []
    for _ in range(RESTARTS):
        sides.stop(which)
        starts.append(round(sides.start(which, True)[0], 2))
        kept = len(sides.node.checkpoint())  # the GPU checkpoint's claims (both sides write upstream's v2)
        if kept != held:
            raise RuntimeError(f"{which} started with {kept} claims in its checkpoint, not the {held} prepared")
    return {"start_ms": sorted(starts)[len(starts) // 2], "start_ms_all": starts, "rss_after_start_kb": sides.rss()[0]}


def _side(sides, node, client_bin, which, counts, rounds):
    """One start of `which`; the claims grow to each count in turn. Returns the points."""
    um, gpus, points, held = _upstream_node(), vu.whole_gpus("dgx-a100"), [], []
    sides.start(which, True)  # equal client limits (QPS, burst 1000): the cost, not upstream's default rate limit
    plugin = sides.plugins[um.GPU]
    try:
        for n in counts:
            more = [_claim(node, f"{which}-c{i}", gpus[i % len(gpus)]) for i in range(len(held), n)]
            _in_batches(plugin.prepare, more)
            held += more
            # What setting up wrote (the batch's CDI specs and checkpoints) reaches the disk first: the probe
            # measures one more claim's cost, not the tail of the writeback behind it (both sides alike).
            os.sync()
            one = _probe(sides, node, client_bin, which + str(n), rounds)
            ckpt = os.path.join(node.dirs.plugins, um.GPU, "checkpoint.json")
            point = {"claims": n, "rounds": rounds,
                     "prepare_p50_us": vu.pct(one["prepare_us"], 50), "prepare_p99_us": vu.pct(one["prepare_us"], 99),
                     "unprepare_p50_us": vu.pct(one["unprepare_us"], 50),
                     "unprepare_p99_us": vu.pct(one["unprepare_us"], 99),
                     "checkpoint_bytes": os.path.getsize(ckpt), "rss_kb": sides.rss()[0]}
            point.update(_restart(sides, which, n))
            plugin = sides.plugins[um.GPU]  # the restarted side's: the next claims, and the unprepare, go to it
            sys.stderr.write(f"claims, {which} on the node: {point}\n")
            points.append(point)
        _in_batches(plugin.unprepare, held)  # the next side starts on an empty checkpoint
    finally:
        sides.stop(which)
    return points


def run_node(build_dir, counts, rounds, upstream_counts=None, upstream_rounds=None):
    """{"nvdra": [points], "upstream": [points]} or {"note": why not run}. upstream_counts, upstream_rounds: fewer
    for upstream (each of its prepares rewrites and fsyncs its growing checkpoint: at 1,000 claims over a second)."""
    upstream_dir = os.environ.get("NVDRA_UPSTREAM_DIR", "")
    if not upstream_dir or os.geteuid() != 0:
        return {"note": "not run: needs root and NVDRA_UPSTREAM_DIR (contrib/dev/prerequisites)"}
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(build_dir)
    um = _upstream_node()
    node = _node(um, "bench-node")
    sides = vu.Sides(node, um, os.path.abspath(upstream_dir))
    client_bin = os.path.join(build_dir, "bench", "kubelet", "kubelet_claim_client")
    try:
        upstream_counts = counts if upstream_counts is None else upstream_counts
        table = {"counts": counts, "nvdra": _side(sides, node, client_bin, "nvdra", counts, rounds),
                 "upstream": _side(sides, node, client_bin, "upstream", upstream_counts, upstream_rounds or rounds)}
        if upstream_counts != counts:
            table["upstream_note"] = (f"upstream run at {upstream_counts} only (--upstream-node-counts): "
                                      f"not at {sorted(set(counts) - set(upstream_counts))} in this run")
        return table
    finally:
        if sides.up:
            sides.up.cleanup()
        node.cleanup()


def run_pair(build_dir, high=1000, rounds=200, blocks=10):
    """nvdra's per-prepare cost at `high` claims against 1 claim, measured in the same minutes: two simulated nodes,
    each with its own agent and API double, one with 1 claim prepared and one with `high`, probed in turn, `blocks`
    blocks of rounds/blocks prepare + unprepare each. A disk whose fsync time moves 2x from minute to minute (this
    machine's) otherwise decides the ratio of two counts measured minutes apart.
    {"low": point, "high": point, "ratio_p50": high/low prepare p50, "block_ratios": [...]} or {"note": ...}."""
    if os.environ.get("NVDRA_UPSTREAM_DIR", "") == "" or os.geteuid() != 0:
        return {"note": "not run: needs root and NVDRA_UPSTREAM_DIR (contrib/dev/prerequisites)"}
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(build_dir)
    um = _upstream_node()
    client_bin = os.path.join(build_dir, "bench", "kubelet", "kubelet_claim_client")
    gpus, pairs = vu.whole_gpus("dgx-a100"), []
    try:
        for name, count in (("low", 1), ("high", high)):
            node = _node(um, f"bench-{name}")
            sides = vu.Sides(node, um, os.environ["NVDRA_UPSTREAM_DIR"])
            pairs.append((name, node, sides))
            sides.start("nvdra", True)
            _in_batches(sides.plugins[um.GPU].prepare, [_claim(node, f"c{i}", gpus[i % len(gpus)]) for i in range(count)])
        os.sync()
        samples = {name: {"prepare_us": [], "unprepare_us": []} for name, _, _ in pairs}
        block_ratios = []
        for b in range(blocks):
            p50 = {}
            for name, node, sides in pairs:
                one = _probe(sides, node, client_bin, f"{name}{b}", max(1, rounds // blocks))
                for k in samples[name]:
                    samples[name][k] += one[k]
                p50[name] = vu.pct(one["prepare_us"], 50)
            block_ratios.append(round(p50["high"] / p50["low"], 2))
        out = {"claims": {"low": 1, "high": high}, "rounds": rounds, "blocks": blocks, "block_ratios": block_ratios}
        for name, s in samples.items():
            out[name] = {"prepare_p50_us": vu.pct(s["prepare_us"], 50), "prepare_p99_us": vu.pct(s["prepare_us"], 99),
                         "unprepare_p50_us": vu.pct(s["unprepare_us"], 50)}
        out["ratio_p50"] = round(out["high"]["prepare_p50_us"] / out["low"]["prepare_p50_us"], 2)
        out["unprepare_ratio_p50"] = round(out["high"]["unprepare_p50_us"] / out["low"]["unprepare_p50_us"], 2)
        sys.stderr.write(f"claims, nvdra at 1 and {high} in turn: {out}\n")
        return out
    finally:
        for _, node, sides in pairs:
            sides.stop("nvdra")
            node.cleanup()
