"""Device-count scenario of bench/scenario/scale.py (issue #33): machine profiles generated for nodes from 1 to
~500 published devices, each started once per API server version (1.34-1.37, the API double's schemas and slice
limits), the agent and the double each in a process of its own. Per size and version:
  start_ms       exec -> READY=1 (both plugins registered; the agent publishes before it reports ready);
  devices        gpu.nvidia.com devices published; slices per driver;
  slice_bytes    the stored slices' JSON size (what the writes carried, near enough); writes: write requests;
  rss_kb         the agent's RSS once ready; rss_idle_kb the same IDLE_S later (upstream: both plugins');
  republish      after an XID on one GPU (NVMLDeviceHealthCheck taints its devices): the write requests it
                 cost and the slices whose resourceVersion changed (one GPU's slices rewritten, not all).
Profiles: H100 80GB nodes of 1 to 64 GPUs with MIG off (one device each), and under DynamicMIG (every MIG
placement of every GPU published, 26 devices per H100) 1 to 20 GPUs. Written by test/lib/machine_profiles.py.
With vfio (scale.py --vfio): the MIG-off sizes, every GPU with its VFIO twin (PassthroughSupport and the simulated
host's PCI tree, as the passthrough profile); no republish figure, as PassthroughSupport excludes the health
check that drives it."""
import os
import re
import sys
import time

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "test", "lib"))
from machine_profiles import gpu_uuid, node_kwargs, write_profile  # noqa: E402

# RSS is read twice: once ready, and again this long after (both sides idle; nvdra's heap trimmed 200 ms after
# its slices are stored): rss_kb, rss_idle_kb.
IDLE_S = 1.0
SIZES = [(1, False), (8, False), (64, False), (1, True), (8, True), (20, True)]
VERSIONS = [(1, 34), (1, 35), (1, 36), (1, 37)]


def _rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def _gpu_slices(node):
    return [s for s in node.api.objects("resource.k8s.io/v1", "resourceslices", f"spec.nodeName={node.node}")]


def measure(node_class, profile, mig, version, vfio=False):
    gates = "NVMLDeviceHealthCheck=true" + (",DynamicMIG=true" if mig else "")
    kwargs = dict({"gates": gates}, **node_kwargs(vfio))
    node = node_class(profile=profile, api_version=version, api_process=True, **kwargs)
    try:
        node.start(timeout=300)
        out = {"start_ms": round(node.ready_ms, 1), "rss_kb": _rss_kb(node.proc.pid)}
        slices = _gpu_slices(node)
        out["devices"] = sum(len(s["spec"].get("devices", [])) for s in slices if s["spec"]["driver"] == "gpu.nvidia.com")
        out["slices"] = {}
        for s in slices:
            out["slices"][s["spec"]["driver"]] = out["slices"].get(s["spec"]["driver"], 0) + 1
        out["slice_bytes"] = sum(len(yaml.safe_dump(s).encode()) for s in slices)  # YAML: near JSON's size
        out["writes"] = len(node.api.writes())
        time.sleep(IDLE_S)
        out["rss_idle_kb"] = _rss_kb(node.proc.pid)
        if vfio:
            out["vfio_devices"] = sum(1 for s in slices for d in s["spec"].get("devices", [])
                                      if d["name"].startswith("gpu-vfio-"))
            return out
        before = {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in slices}
        writes_before = len(node.api.writes())
        node.inject_xid(gpu_uuid(0), 79)
        node.wait_published(lambda d: any(dev.get("taints") for dev in d.values()), timeout=60)
        time.sleep(1.0)  # a bench, not a test: let any follow-up write land before counting
        after = {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in _gpu_slices(node)}
        out["republish"] = {"writes": len(node.api.writes()) - writes_before,
                            "slices_rewritten": sum(1 for n, rv in after.items() if before.get(n) != rv),
                            "slices": len(after)}
        return out
    finally:
        node.cleanup()


def measure_upstream(profile, mig, version, upstream_dir):
    """Upstream's two plugins on the same profile (test/lib/upstream_node.py; root): start -> registered and the
    GPU plugin's slices stored, slices, bytes, writes, RSS of both plugins. No republish figure: upstream's
    health check is not driven here."""
    import upstream_node as um  # noqa: PLC0415
    node = um.upstream_node(profile, api_version=version, api_process=True)
    up = None
    try:
        # Upstream refuses DynamicMIG with MPSSupport ("feature gate DynamicMIG is currently mutually exclusive
        # with MPSSupport") and exits: under DynamicMIG its GPU plugin runs with time-slicing alone.
        gates = {um.GPU: "TimeSlicingSettings=true,DynamicMIG=true" if mig else um.DEFAULT_GATES[um.GPU]}
        up = um.UpstreamPlugins(node, gates=gates, directory=upstream_dir).start(timeout=60)
        slices = _gpu_slices(node)
        out = {"start_ms": round(up.ready_ms, 1), "rss_kb": sum(_rss_kb(p) for p in up.pids().values())}
        out["devices"] = sum(len(s["spec"].get("devices", [])) for s in slices if s["spec"]["driver"] == "gpu.nvidia.com")
        out["slices"] = {}
        for s in slices:
            out["slices"][s["spec"]["driver"]] = out["slices"].get(s["spec"]["driver"], 0) + 1
        out["slice_bytes"] = sum(len(yaml.safe_dump(s).encode()) for s in slices)
        out["writes"] = len(node.api.writes())
        time.sleep(IDLE_S)
        out["rss_idle_kb"] = sum(_rss_kb(p) for p in up.pids().values())
        return out
    finally:
        if up is not None:
            up.cleanup()
        node.cleanup()


def _why(failure):
    """A failed upstream start in a line or three: what timed out, then the plugins' own errors (their first
    distinct ones), not the start of their logs."""
    head, _, logs = failure.partition("; logs:")
    errors = []
    for line in logs.splitlines():
        m = re.search(r'err="([^"]*)"', line) if line.startswith("E") else None
        text = m.group(1) if m else line if line.startswith("Error:") else None
        if text and text not in errors:
            errors.append(text)
    return "; ".join([head] + errors[:3])[:1000]


def run_devices(build_dir, scratch, vfio=False):
    os.environ.setdefault("NVDRA_BINARY_DIR", os.path.abspath(build_dir))
    from gpu_node import SimulatedNode  # noqa: PLC0415  (after the path and the build dir are set)
    folder = scratch or os.path.join(build_dir, "scale-profiles")
    os.makedirs(folder, exist_ok=True)
    points, upstream = [], []
    upstream_dir = os.environ.get("NVDRA_UPSTREAM_DIR", "")
    for gpus, mig in (s for s in SIZES if not (vfio and s[1])):
        name = f"h100-{gpus}{'-mig' if mig else ''}{'-vfio' if vfio else ''}.yaml"
        profile = write_profile(os.path.join(folder, name), gpus, mig, vfio=vfio)
        for version in VERSIONS:
            p = measure(SimulatedNode, profile, mig, version, vfio)
            p.update(gpus=gpus, dynamic_mig=mig, vfio=vfio, version="%d.%d" % version)
            sys.stderr.write(f"devices: {p}\n")
            points.append(p)
        if upstream_dir and os.geteuid() == 0 and not vfio:
            try:
                u = measure_upstream(profile, mig, (1, 35), upstream_dir)
                u.update(gpus=gpus, dynamic_mig=mig, version="1.35")
            except Exception as e:  # noqa: BLE001  (a bench: say what did not run, go on)
                u = {"gpus": gpus, "dynamic_mig": mig, "version": "1.35", "error": _why(str(e))}
            sys.stderr.write(f"devices, upstream: {u}\n")
            upstream.append(u)
    return {"points": points, "upstream": upstream,
            "upstream_note": "not run: VFIO twins are nvdra's side only here" if vfio else
            "" if upstream_dir and os.geteuid() == 0 else "not run: needs root and NVDRA_UPSTREAM_DIR"}


def draw_devices(table, png):
    import matplotlib  # noqa: PLC0415
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    pts = sorted((p for p in table["points"] if p["version"] == "1.35"), key=lambda p: p["devices"])
    n = [p["devices"] for p in pts]
    fig, (start, mem, pub) = plt.subplots(1, 3, figsize=(15, 4.2))
    start.plot(n, [p["start_ms"] for p in pts], "o-", label="nvdra start -> ready (slices published)")
    ups = sorted((u for u in table.get("upstream", []) if "error" not in u), key=lambda u: u["devices"])
    if ups:
        start.plot([u["devices"] for u in ups], [u["start_ms"] for u in ups], "s--",
                   label="upstream start -> registered + GPU slices")
    start.set(xscale="log", xlabel="devices published (1.35 server)", ylabel="ms", title="Start")
    mem.plot(n, [p.get("rss_idle_kb", p["rss_kb"]) / 1024 for p in pts], "o-",
             label="nvdra RSS, idle 1 s after ready")
    if ups:
        mem.plot([u["devices"] for u in ups], [u.get("rss_idle_kb", u["rss_kb"]) / 1024 for u in ups], "s--",
                 label="upstream, both plugins")
    mem.set(xscale="log", xlabel="devices published", ylabel="MiB", title="Memory")
    for version in sorted({p["version"] for p in table["points"]}):
        vp = sorted((p for p in table["points"] if p["version"] == version), key=lambda p: p["devices"])
        pub.plot([p["devices"] for p in vp], [p["slices"].get("gpu.nvidia.com", 0) for p in vp], "o-",
                 label=f"gpu.nvidia.com slices, {version} server")
    if all("republish" in p for p in pts):
        pub.plot(n, [p["republish"]["slices_rewritten"] for p in pts], "x--",
                 label="slices rewritten after one XID (1.35)")
    pub.set(xscale="log", xlabel="devices published", ylabel="slices", title="Slices")
    for ax in (start, mem, pub):
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=80)
