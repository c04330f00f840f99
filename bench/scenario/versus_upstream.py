#!/usr/bin/python3
"""nvdra against upstream's own kubelet plugins on the same simulated node (not a test: it reports numbers).

Both sides run on one SimulatedNode (mock NVML, driver root made acceptable to both, the API-server double
in a process of its own, the kubelet double registering over the real sockets; upstream through
test/lib/upstream_node.py, which needs root and NVDRA_UPSTREAM_DIR or --upstream-dir). Rounds alternate the
side that goes first. Latencies come from the compiled gRPC client (bench/kubelet/claim_client.cpp), as in
gpu_claims.py. Every figure is printed for each side with the ratio upstream / nvdra (higher: nvdra better):
  start -> all plugins registered and both drivers' slices written, at the doubles' own reply times
  (slices wiped before each start; one unmeasured warm-up start per side, then --starts rounds, the
  sides alternating, of three starts of one side: the first, after the other side ran, is reported apart as the cold start
  (this machine's DAMON reclaim pages the libraries out within seconds), the other two are the warm);
  prepare and unprepare p50/p99 over --single claims, at each side's default client limits and at equal ones
  (QPS and burst 1000 on every client); 64 concurrent prepares per round at equal limits, and the floor under
  such a round: 64 concurrent claim GETs against the double (Python threads, one connection each);
  idle RSS and PSS (upstream: both plugins summed); RSS after --cycles prepare/unprepare cycles;
  stripped binary sizes, and with the shared libraries each needs beyond a Debian base system (footprint.py;
  upstream's Go binaries are self-contained), and the OCI image archive when contrib/image/build-oci.sh made one
  (upstream's image cannot be pulled here: n/a); fsyncs per cycle (strace, in packages.txt; n/a without);
  API requests from start to ready, and over --idle-seconds idle (writes counted apart).

    sudo bench/scenario/versus_upstream.py [--build-dir build] [--upstream-dir DIR] [--idle-seconds 60] [--json F]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))
from gpu_claims import fsyncs_during, pct  # noqa: E402  (the same strace count and percentiles as the nvdra-only bench)
import footprint  # noqa: E402
EQUAL = 1000  # QPS and burst for every client in the equal-limits phases
NVDRA_GATES = "TimeSlicingSettings=true,MPSSupport=true,HostManagedIMEXDaemon=true"


def mem_kb(pid, field, path="status"):
    try:
        with open(f"/proc/{pid}/{path}") as f:
            return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
    except (OSError, StopIteration):
        return 0


class Sides:
    """Starts, stops and measures either side on the node."""

    def __init__(self, node, up_module, upstream_dir):
        self.node, self.um, self.upstream_dir = node, up_module, upstream_dir
        self.base_args = list(node.extra_args)
        self.up = None

    def start(self, which, equal):
        """Starts `which`; returns (ms from exec to the last of: every plugin registered with the kubelet
        double, every driver's slices written to the API double; the number of API requests so far).
        The end is the event's own time (the double's reply), not when this process polled it: the
        observers' latency (Python, a few ms) is the same for both sides and is not what is measured."""
        n = self.node
        self.wait_quiet()
        n.api.delete_matching("resource.k8s.io/v1", "resourceslices", "")
        n.api._call("POST", "/admin/requests/reset")
        t0 = time.time()
        if which == "nvdra":
            n.extra_args = self.base_args + ([f"--kube-api-qps={EQUAL}", f"--kube-api-burst={EQUAL}",
                                              f"--claim-read-qps={EQUAL}", f"--claim-read-burst={EQUAL}"]
                                             if equal else [])
            n.start()
            self.plugins = n.plugins
            self.pids = [n.proc.pid]
        else:
            self.up = self.um.UpstreamPlugins(n, qps=EQUAL if equal else None, burst=EQUAL if equal else None,
                                              directory=self.upstream_dir)
            self.up.start(wait_slices=False)
            self.plugins = self.up.plugins
            self.pids = list(self.up.pids().values())
        self.wait_slices()
        registered = [p.registered_at for p in self.plugins.values()]
        written = [r["time"] for r in self.api_requests()
                   if r["method"] in ("POST", "PUT") and "/resourceslices" in r["path"] and r["status"] < 300]
        ready_ms = (max(registered + written) - t0) * 1000
        return ready_ms, len(self.api_requests())

    def wait_quiet(self, timeout=30):
        """Until the double serves no watch of the side that ran before: a start begins on a node where
        nothing of the other side is still being torn down."""
        deadline = time.monotonic() + timeout
        while self.node.api._call("GET", "/admin/watches")["open"]:
            if time.monotonic() > deadline:
                raise TimeoutError("the previous side's watches are still open")
            time.sleep(0.01)  # the double's handler threads end as the stopped side's sockets close

    def wait_slices(self, timeout=60):
        """Until both drivers have slices on the node, re-checked at each write to the double (no
        polling: the observer takes no CPU from the side it measures)."""
        want, node = {self.um.GPU, self.um.CD}, self.node.node
        self.node.api.wait_for_objects("resource.k8s.io/v1", "resourceslices", lambda items: want <= {
            s["spec"]["driver"] for s in items if s["spec"].get("nodeName") == node}, timeout)

    def api_requests(self):
        return [r for r in self.node.api.request_log() if not r["path"].startswith("/admin")]

    def stop(self, which):
        if which == "nvdra":
            self.node.stop()
        else:
            self.up.cleanup()
            self.up = None

    def rss(self):
        return sum(mem_kb(p, "VmRSS") for p in self.pids), sum(mem_kb(p, "Pss", "smaps_rollup") for p in self.pids)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--upstream-dir", default=os.environ.get("NVDRA_UPSTREAM_DIR", ""))
    ap.add_argument("--profile", default="dgx-a100")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds per side")
    ap.add_argument("--starts", type=int, default=4, help="start-only rounds (three starts of one side each, the sides alternating)")
    ap.add_argument("--single", type=int, default=200, help="sequential one-claim prepares per limits setting")
    ap.add_argument("--batches", type=int, default=3, help="rounds of 64 concurrent prepares per side round")
    ap.add_argument("--cycles", type=int, default=1000)
    ap.add_argument("--idle-seconds", type=float, default=60.0,
                    help="idle period for API requests (the issue asks 600; default short for a quick run)")
    ap.add_argument("--cdi-on-disk", action="store_true", help="CDI root on disk, not on tmpfs as /var/run/cdi is")
    ap.add_argument("--json")
    args = ap.parse_args()
    if not args.upstream_dir:
        ap.error("--upstream-dir or NVDRA_UPSTREAM_DIR: the unpacked upstream plugins (shared/upstream/unpack DIR)")
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    os.environ["NVDRA_UPSTREAM_DIR"] = os.path.abspath(args.upstream_dir)
    import upstream_node as um

    node = um.upstream_node(args.profile, node="bench-node", gates=NVDRA_GATES,
                            args=["--imex-mode=hostManaged", "--controller=false"], api_process=True)
    cdi_tmpfs = None
    if not args.cdi_on_disk:  # both sides write the same CDI root
        cdi_tmpfs = node.dirs.cdi = tempfile.mkdtemp(prefix="nvdra-versus-cdi-", dir="/dev/shm")
    sides = Sides(node, um, args.upstream_dir)
    fig = {s: {} for s in ("nvdra", "upstream")}

    def add(which, key, value):
        fig[which].setdefault(key, []).extend(value if isinstance(value, list) else [value])

    client_bin = os.path.join(args.build_dir, "bench", "kubelet", "kubelet_claim_client")
    try:
        claims = admin_claims(node, whole_gpus(args.profile), 64)
        claims_file = write_claims_file(node, claims)

        def client(mode, n):
            return run_claim_client(client_bin, sides.plugins[um.GPU].endpoint, claims_file, mode, n)

        # Warm-up: each side's first start of the run pays for cold caches (page cache, the dynamic
        # loader's, the double's first connections) and is not counted. Then start-only rounds, the
        # sides alternating.
        for which in ("nvdra", "upstream"):
            sides.start(which, False)
            sides.stop(which)
        # Each round's first start follows the other side's (page cache cooled by the machine's reclaim
        # meanwhile): reported apart as the cold figure; the next two are the warm starts.
        for r in range(args.starts):
            which = ("nvdra", "upstream")[r % 2]
            for i in range(3):
                add(which, "start_ms_cold" if i == 0 else "start_ms_warm", sides.start(which, False)[0])
                sides.stop(which)

        per_round = max(1, args.single // args.rounds)
        for r in range(args.rounds):
            for which in (("nvdra", "upstream") if r % 2 == 0 else ("upstream", "nvdra")):
                for equal in (False, True):
                    ready_ms, requests = sides.start(which, equal)
                    tag = "equal" if equal else "default"
                    add(which, f"start_ms_round_{tag}", ready_ms)  # raw data; the start rows use the start-only rounds
                    add(which, "requests_to_ready", requests)
                    one = client("sequential", per_round)
                    add(which, f"prepare_us_{tag}", one["prepare_us"])
                    add(which, f"unprepare_us_{tag}", one["unprepare_us"])
                    if equal:
                        many = client("concurrent", args.batches)
                        add(which, "round64_us", many["round_us"])
                        time.sleep(1.0)  # idle after the phases, as gpu_claims.py measures it
                        rss, pss = sides.rss()
                        add(which, "idle_rss_kb", rss)
                        add(which, "idle_pss_kb", pss)
                    sides.stop(which)

        for which in ("nvdra", "upstream"):
            sides.start(which, True)
            fig[which]["fsyncs_per_prepare_unprepare"] = [fsyncs_per_cycle(sides.pids[0], lambda: client("sequential", 20), 20)]
            client("sequential", args.cycles)
            fig[which]["rss_after_cycles_kb"] = [sides.rss()[0]]
            node.api._call("POST", "/admin/requests/reset")
            time.sleep(args.idle_seconds)  # the idle period itself is what is measured
            idle = sides.api_requests()
            fig[which]["idle_requests"] = [len(idle)]
            fig[which]["idle_writes"] = [sum(1 for q in idle if q["method"] in ("POST", "PUT", "PATCH", "DELETE"))]
            sides.stop(which)

        fig["floor"] = {"round64_claim_reads_us": claim_read_floor(node, claims, args.batches),
                        "one_claim_read_us": claim_read_floor(node, claims[:1], args.single),
                        "durable_write_us": durable_write_us(node.dirs.plugins, args.single)}
        agent = [os.path.join(args.build_dir, "agent", "nvdra-agent")]
        plugins = [os.path.join(args.upstream_dir, um.PROGRAM[d]) for d in (um.GPU, um.CD)]
        for which, binaries in (("nvdra", agent), ("upstream", plugins)):
            stripped = sum(stripped_size(b) for b in binaries)
            fig[which]["binary_bytes"] = [stripped]
            fig[which]["footprint_bytes"] = [stripped + footprint.beyond_base_bytes(binaries)]
        # Upstream's image cannot be pulled here (no registry): its row says n/a.
        fig["nvdra"]["image_bytes"] = [footprint.image_bytes(TOP)]
        fig["upstream"]["image_bytes"] = [None]
    finally:
        if sides.up:
            sides.up.cleanup()
        node.cleanup()
        if cdi_tmpfs:
            shutil.rmtree(cdi_tmpfs, ignore_errors=True)
    report = summarize(fig, args)
    print_table(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"report": report, "raw": fig}, f, indent=1)
    return 0


def whole_gpus(profile):
    import yaml
    with open(os.path.join(TOP, "nvml", "mock", "profiles", profile + ".yaml")) as f:
        gpus = yaml.safe_load(f)["gpus"]
    return [f"gpu-{g['minor']}" for g in gpus if g.get("migMode") != "enabled"]


def admin_claims(node, gpus, n):
    """n claims over the node's whole GPUs with adminAccess, so that both sides prepare a GPU held by
    another prepared claim (upstream refuses that otherwise: 64 concurrent claims need no 64 GPUs)."""
    from kubelet_double import Claim
    out = []
    for i in range(n):
        obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
               "metadata": {"name": f"c{i}", "namespace": "default"},
               "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                                             "adminAccess": True}}]}},
               "status": {"allocation": {"devices": {"results": [
                   {"request": "gpu", "driver": "gpu.nvidia.com", "pool": node.node, "device": gpus[i % len(gpus)],
                    "adminAccess": True}]}}}}
        out.append(Claim("default", f"c{i}", node.api.put_object(obj)["metadata"]["uid"]))
    return out


def write_claims_file(node, claims):
    """The claims as kubelet_claim_client reads them (--claims); returns the file's path."""
    path = os.path.join(node.root, "bench-claims.json")
    with open(path, "w") as f:
        json.dump([{"uid": c.uid, "namespace": c.namespace, "name": c.name} for c in claims], f)
    return path


def run_claim_client(client_bin, socket, claims_file, mode, n):
    """One run of the compiled claim client (sequential|concurrent n); its JSON report."""
    out = subprocess.run([client_bin, "--socket", socket, "--claims", claims_file, mode, str(n)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def claim_read_floor(node, claims, rounds):
    """Wall time of 64 concurrent GETs of the claims against the double, each on a connection of its own
    already open (as a client's pool is): the floor under a 64-prepare round."""
    import http.client
    import threading
    api = node.api
    host, port = api.url.split("//")[1].split(":")
    conns = [http.client.HTTPSConnection(host, int(port), context=api.ctx, timeout=30) for _ in claims]
    headers = {"Authorization": f"Bearer {api.token}"}

    def get(conn, c):
        conn.request("GET", f"/apis/resource.k8s.io/v1/namespaces/{c.namespace}/resourceclaims/{c.name}",
                     headers=headers)
        r = conn.getresponse()
        r.read()
        if r.status != 200:
            raise RuntimeError(f"GET claim {c.name}: {r.status}")
    for conn, c in zip(conns, claims):
        get(conn, c)  # connect and warm each connection
    walls = []
    for _ in range(rounds):
        go = threading.Barrier(len(claims) + 1)

        def worker(conn, c):
            go.wait()
            get(conn, c)
        threads = [threading.Thread(target=worker, args=(conn, c)) for conn, c in zip(conns, claims)]
        for t in threads:
            t.start()
        go.wait()
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        walls.append((time.perf_counter() - t0) * 1e6)
    for conn in conns:
        conn.close()
    return walls


def durable_write_us(directory, n):
    """write + fsync + rename + directory fsync of a 4 KiB file beside the checkpoints: one durable write."""
    os.makedirs(directory, exist_ok=True)
    out = []
    for i in range(n):
        t = time.perf_counter()
        tmp = os.path.join(directory, ".bench-floor.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, b"x" * 4096)
        os.fsync(fd)
        os.close(fd)
        os.rename(tmp, os.path.join(directory, ".bench-floor"))
        dfd = os.open(directory, os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
        out.append((time.perf_counter() - t) * 1e6)
    os.unlink(os.path.join(directory, ".bench-floor"))
    return out


def fsyncs_per_cycle(pid, fn, cycles):
    """fsync-family calls per prepare + unprepare while fn() runs `cycles` of them (strace; None without)."""
    total, _ = fsyncs_during(pid, fn)
    return None if total is None else round(total / cycles, 2)


def stripped_size(path):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "b")
        shutil.copy(path, out)
        subprocess.run(["strip", "--strip-all", out], check=True, capture_output=True)
        return os.path.getsize(out)


def summarize(fig, args):
    n, u = fig["nvdra"], fig["upstream"]
    rows = []

    def row(name, unit, fn, key, ukey=None):
        # A figure that could not be measured (strace missing, no image) is n/a, never 0.
        a, b = (fn(v) if v and v[0] is not None else None for v in (n[key], u[ukey or key]))
        rows.append({"figure": name, "unit": unit, "nvdra": "n/a" if a is None else round(a, 2),
                     "upstream": "n/a" if b is None else round(b, 2),
                     "ratio": round(b / a, 2) if a and b is not None else None})

    med = statistics.median
    row("start -> registered + slices published, warm (p50)", "ms", med, "start_ms_warm")
    row("start, first after the other side ran (p50)", "ms", med, "start_ms_cold")
    for tag, label in (("default", "each side's default limits"), ("equal", f"equal limits ({EQUAL})")):
        for kind in ("prepare", "unprepare"):
            for p in (50, 99):
                row(f"{kind} p{p}, {label}", "ms", lambda v, p=p: pct(v, p) / 1000, f"{kind}_us_{tag}")
    row("64 concurrent prepares, round wall p50 (equal limits)", "ms", lambda v: med(v) / 1000, "round64_us")
    row("idle RSS (upstream: both plugins)", "MB", lambda v: med(v) / 1024, "idle_rss_kb")
    row("idle PSS (upstream: both plugins)", "MB", lambda v: med(v) / 1024, "idle_pss_kb")
    row(f"RSS after {args.cycles} cycles", "MB", lambda v: v[0] / 1024, "rss_after_cycles_kb")
    row("stripped binaries", "MB", lambda v: v[0] / 1e6, "binary_bytes")
    row("stripped binaries + shared libraries beyond a Debian base system", "MB", lambda v: v[0] / 1e6,
        "footprint_bytes")
    row("OCI image archive", "MB", lambda v: v[0] / 1e6, "image_bytes")
    row("fsyncs per prepare + unprepare (GPU plugin)", "n", lambda v: v[0], "fsyncs_per_prepare_unprepare")
    row("API requests, start to ready (p50)", "n", med, "requests_to_ready")
    row(f"API requests over {args.idle_seconds:g} s idle", "n", lambda v: v[0], "idle_requests")
    row(f"API writes over {args.idle_seconds:g} s idle", "n", lambda v: v[0], "idle_writes")
    floor = med(fig["floor"]["round64_claim_reads_us"]) / 1000
    one = {p: round(pct(fig["floor"]["one_claim_read_us"], p) / 1000, 2) for p in (50, 99)}
    dur = {p: round(pct(fig["floor"]["durable_write_us"], p) / 1000, 2) for p in (50, 99)}
    return {"rows": rows, "floor_round64_ms": round(floor, 2), "floor_claim_read_ms": one, "floor_durable_write_ms": dur, "profile": args.profile,
            "cdi_root": "disk" if args.cdi_on_disk else "tmpfs", "rounds": args.rounds,
            "machine": os.uname().nodename, "nproc": os.cpu_count()}


def print_table(report):
    print("| figure | nvdra | upstream | upstream / nvdra |")
    print("|---|---|---|---|")
    for r in report["rows"]:
        print(f"| {r['figure']} | {r['nvdra']} {r['unit']} | {r['upstream']} {r['unit']} | {r['ratio']} |")
    print(f"\nfloor under a 64-prepare round (64 concurrent claim GETs against the double): "
          f"{report['floor_round64_ms']} ms; {report['profile']}, {report['rounds']} interleaved rounds, "
          f"CDI root on {report['cdi_root']}, "
          f"{report['nproc']} CPUs")
    print(f"floor under one prepare: one claim GET p50/p99 {report['floor_claim_read_ms'][50]} / "
          f"{report['floor_claim_read_ms'][99]} ms, plus per durable write (write, fsync, rename, dir fsync, on "
          f"the plugins dir's disk) p50/p99 {report['floor_durable_write_ms'][50]} / "
          f"{report['floor_durable_write_ms'][99]} ms")


if __name__ == "__main__":
    sys.exit(main())
