#!/usr/bin/python3
"""Start against its floor (issue #33 item 5; a benchmark, not a test). nvdra's start (exec -> READY=1: both
plugins registered with the kubelet double, both drivers' ResourceSlices written; SimulatedNode.ready_ms) is
timed in the same run, interleaved, as the least any start must do on the same doubles: a minimal client
that serves both drivers' registration and DRA sockets (grpc), lets the kubelet double register
them over kubelet's real protocol (GetInfo, NotifyRegistrationStatus), and meanwhile creates the same
ResourceSlices nvdra published (their bytes, under another node's name) on the API double, one keep-alive
TLS connection per driver, both drivers at once. The floor starts with its process already running and its
imports done, so the exec and the library loading of nvdra's start are above it. The same run times that
part on its own: `nvdra-agent --version` from spawn to exit (exec, the dynamic loader, static
initialisers, the command line), reported as `exec_p50_ms` and as a second ratio against floor + exec.

The native floor (`native_floor_*`, NativeFloor): the same least a start must do as a process of its own,
bench/kubelet/start_floor.cpp exec'd each round (grpc++ and Beast/OpenSSL linked as the agent links them), timed
from spawn to its "done": it pays the exec, the loader and OpenSSL's and gRPC's initialisation that the Python
floor's running process has already paid, and nothing else a plugin does. Its rounds are interleaved too.
`native_floor_reads_*`: the same process built with the reads (kubelet_start_floor_reads --reads-node), which also makes the two reads no correct start
can skip (the Node, whose UID the slices' owner names, and the node's slices, what to update rather than
create), one on each connection before the creates, as the agent does; not /version or the OpenAPI index,
nvdra's own questions. The issue's goal is against the native floor; this one says how much of the rest is
those reads.

Where the time goes: each round also counts the CPU it cost (`cpu_ms`, medians): the agent's own (all its
threads, exec to READY=1), the API double's (its process, /admin/cpu) and this process's (the kubelet
double's registrations; for the floor also its gRPC servers and its writes). `cores_busy` is their sum over
the wall time: on a machine whose cores are all busy through a start, wall time follows total CPU, and a
floor that keeps them as busy leaves no room to overlap more.

Before each nvdra round its slices are deleted, so every start writes them (an unchanged restart writes
nothing). Profiles: the generated 8 x H100 node (8 devices, MIG off) by default, --dynamic-mig-gpus N for N
H100s under DynamicMIG (26 devices each: 20 -> 520).

    bench/scenario/start_floor.py [--rounds 9] [--gpus 8] [--dynamic-mig-gpus 0] [--agent-args '...'] [--out F.json]
"""
import argparse
import concurrent.futures
import copy
import http.client
import json
import os
import resource
import select
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from concurrent import futures

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))
RS = "/apis/resource.k8s.io/v1/resourceslices"
FLOOR_NODE = "floor-node"


def floor_slices(slices, node_uid):
    """nvdra's stored slices as a client would send them, renamed onto the floor's node."""
    out = []
    for s in slices:
        body = copy.deepcopy(s)
        meta = body["metadata"]
        for k in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"):
            meta.pop(k, None)
        meta["name"] = "floor-" + meta["name"]
        meta.pop("generateName", None)
        for ref in meta.get("ownerReferences", []):
            ref["name"], ref["uid"] = FLOOR_NODE, node_uid
        body["spec"]["nodeName"] = FLOOR_NODE
        out.append(body)
    return out


def create_all(api, bodies):
    """POSTs `bodies` over one keep-alive TLS connection; returns when the last is stored."""
    url = urllib.parse.urlsplit(api.url)
    conn = http.client.HTTPSConnection(url.hostname, url.port, context=api.ctx)
    try:
        for body in bodies:
            data = json.dumps(body).encode()
            conn.request("POST", RS, body=data, headers={"Authorization": f"Bearer {api.token}",
                                                         "Content-Type": "application/json"})
            r = conn.getresponse()
            r.read()
            if r.status != 201:
                raise RuntimeError(f"floor create: {r.status}")
    finally:
        conn.close()


class FloorPlugins:
    """Registration + DRA sockets of both drivers (a grpc server each), answering GetInfo and
    NotifyRegistrationStatus as a plugin must (nothing else)."""

    def __init__(self, root, drivers):
        import grpc
        from kubelet_double.double import pb
        msgs, svc = pb()["registration"]
        self.registrar = tempfile.mkdtemp(prefix="registry-", dir=root)
        plugins = tempfile.mkdtemp(prefix="plugins-", dir=root)
        self.servers = []
        for driver in drivers:  # a server each: one Registration service per socket pair
            server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
            endpoint = os.path.join(plugins, driver + ".sock")

            class Registration(svc.RegistrationServicer):
                def GetInfo(self, request, context, driver=driver, endpoint=endpoint):
                    return msgs.PluginInfo(type="DRAPlugin", name=driver, endpoint=endpoint,
                                           supported_versions=["v1.DRAPlugin"])

                def NotifyRegistrationStatus(self, request, context):
                    return msgs.RegistrationStatusResponse()
            svc.add_RegistrationServicer_to_server(Registration(), server)
            server.add_insecure_port("unix:" + endpoint)
            server.add_insecure_port("unix:" + os.path.join(self.registrar, driver + "-reg.sock"))
            server.start()
            self.servers.append(server)

    def stop(self):
        for server in self.servers:
            server.stop(None)


def own_cpu_ms():
    used = resource.getrusage(resource.RUSAGE_SELF)
    return (used.ru_utime + used.ru_stime) * 1000


def agent_cpu_ms(pid):
    """CPU time of every thread the agent has now (ns resolution; none of them ends before READY=1)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            total += int(f.read().split()[0])
    return total / 1e6


class CpuMeter:
    """The API double's and this process's CPU over one round, in ms."""

    def __init__(self, api):
        self.api = api
        self.api0, self.own0 = api.cpu_seconds() * 1000, own_cpu_ms()

    def done(self, agent_ms=0.0):
        own, api = own_cpu_ms() - self.own0, self.api.cpu_seconds() * 1000 - self.api0
        return {"agent": agent_ms, "api_double": api, "harness": own, "total": agent_ms + api + own}


def floor_round(node, root, by_driver, cpu=None):
    """One floor start: returns milliseconds until both drivers are registered and every slice is stored;
    its CPU split goes to `cpu` (a list) when given."""
    from kubelet_double import KubeletDouble
    node.api.delete_matching("resource.k8s.io/v1", "resourceslices", f"spec.nodeName={FLOOR_NODE}")
    meter = CpuMeter(node.api) if cpu is not None else None
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(by_driver)) as pool:
        writes = [pool.submit(create_all, node.api, bodies) for bodies in by_driver.values()]
        plugins = FloorPlugins(root, list(by_driver))
        kubelet = KubeletDouble(plugins.registrar)
        kubelet.wait_for_plugins(list(by_driver), timeout=30)
        for w in writes:
            w.result()
    ms = (time.monotonic() - t0) * 1000
    if meter:
        cpu.append(meter.done())
    kubelet.close()
    plugins.stop()
    return ms


class NativeFloor:
    """The floor as a process of its own (bench/kubelet/start_floor.cpp): exec'd each round, it registers
    both drivers with the kubelet double and creates the same slices as the Python floor, paying what
    that floor's running process does not: exec, the loader, OpenSSL's and gRPC's initialisation."""

    def __init__(self, build_dir, root, node, by_driver, reads=False):
        """reads: also the Node (its UID into every slice's owner) and the node's slices, as any correct
        start reads them (--reads-node)."""
        self.reads = reads
        self.binary = os.path.join(build_dir, "bench", "kubelet", "kubelet_start_floor" + ("_reads" if reads else ""))
        if not os.access(self.binary, os.X_OK):
            raise SystemExit(f"{self.binary} is missing: build the target {os.path.basename(self.binary)}")
        self.root, self.node, self.drivers = root, node, list(by_driver)
        self.files = {}
        for driver, bodies in by_driver.items():
            self.files[driver] = os.path.join(root, f"floor-{driver}.jsonl")
            with open(self.files[driver], "w") as f:
                f.writelines(json.dumps(body) + "\n" for body in bodies)

    def round(self, cpu=None):
        """One start of the native floor: milliseconds from spawn to its "done" (both drivers registered,
        every slice stored); its CPU split goes to `cpu` (a list) when given."""
        from kubelet_double import KubeletDouble
        api = self.node.api
        api.delete_matching("resource.k8s.io/v1", "resourceslices", f"spec.nodeName={FLOOR_NODE}")
        registrar = tempfile.mkdtemp(prefix="registry-", dir=self.root)
        plugins = tempfile.mkdtemp(prefix="plugins-", dir=self.root)
        args = [self.binary, "--registrar", registrar, "--plugins", plugins, "--server", api.url,
                "--ca", api.ca_file, "--token", api.token_file]
        if self.reads:
            args += ["--reads-node", FLOOR_NODE]
        for driver in self.drivers:
            args += ["--driver", f"{driver}={self.files[driver]}"]
        meter = CpuMeter(api) if cpu is not None else None
        t0 = time.monotonic()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE)
        kubelet = KubeletDouble(registrar)
        try:
            kubelet.wait_for_plugins(self.drivers, timeout=30)
            line = proc.stdout.readline().split() if select.select([proc.stdout], [], [], 30)[0] else []
            if len(line) != 2 or line[0] != b"done":
                raise RuntimeError(f"kubelet_start_floor did not finish (exit {proc.poll()})")
            ms = (time.monotonic() - t0) * 1000
            if meter:
                cpu.append(meter.done(int(line[1]) / 1000))
            if proc.wait(timeout=30) != 0:
                raise RuntimeError(f"kubelet_start_floor exited {proc.returncode}")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            kubelet.close()
        return ms


def nvdra_round(node, cpu=None):
    node.api.delete_matching("resource.k8s.io/v1", "resourceslices", f"spec.nodeName={node.node}")
    meter = CpuMeter(node.api) if cpu is not None else None
    node.start(timeout=120)
    ms = node.ready_ms
    if meter:
        cpu.append(meter.done(agent_cpu_ms(node.proc.pid)))
    node.stop()
    return ms


def exec_round():
    """Milliseconds to spawn `nvdra-agent --version` and see it exit: what any start pays before main()."""
    from nvdra_testlib import agent_binary
    t0 = time.monotonic()
    subprocess.run([agent_binary(), "--version"], check=True, stdout=subprocess.DEVNULL)
    return (time.monotonic() - t0) * 1000


def cpu_medians(rows):
    return {k: round(statistics.median(r[k] for r in rows), 1) for k in rows[0]}


def measure(args):
    from gpu_node import SimulatedNode
    from machine_profiles import write_profile
    root = tempfile.mkdtemp(prefix="nvdra-start-floor-")
    mig = args.dynamic_mig_gpus > 0
    profile = write_profile(os.path.join(root, "node.yaml"), args.dynamic_mig_gpus or args.gpus, mig)
    gates = "DynamicMIG=true" if mig else ""
    node = SimulatedNode(profile=profile, gates=gates, api_process=True, args=args.agent_args.split())
    try:
        nvdra_round(node)  # warm the page cache and the double once, and learn the slices
        slices = node.api.objects("resource.k8s.io/v1", "resourceslices", f"spec.nodeName={node.node}")
        uid = node.api.put_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": FLOOR_NODE}})
        uid = (uid or {}).get("metadata", {}).get("uid", "floor-node-uid")
        by_driver = {}
        for body in floor_slices(slices, uid):
            by_driver.setdefault(body["spec"]["driver"], []).append(body)
        native = NativeFloor(os.environ["NVDRA_BINARY_DIR"], root, node, by_driver)
        native.round()  # the same warming for the native floor's binary
        reading = NativeFloor(os.environ["NVDRA_BINARY_DIR"], root, node, by_driver, reads=True)
        reading.round()
        nv, fl, nf, nr, ex, nv_cpu, fl_cpu, nf_cpu, nr_cpu = [], [], [], [], [], [], [], [], []
        for _ in range(args.rounds):
            nv.append(nvdra_round(node, nv_cpu))
            fl.append(floor_round(node, root, by_driver, fl_cpu))
            nf.append(native.round(nf_cpu))
            nr.append(reading.round(nr_cpu))
            ex.append(exec_round())
        devices = sum(len(s["spec"].get("devices", [])) for s in slices)
        med_nv, med_fl, med_ex = statistics.median(nv), statistics.median(fl), statistics.median(ex)
        med_nf, med_nr = statistics.median(nf), statistics.median(nr)
        return {"profile": f"{args.dynamic_mig_gpus or args.gpus} x H100" + (" DynamicMIG" if mig else ""),
                "devices": devices, "slices": len(slices), "rounds": args.rounds,
                "nvdra_start_ms": [round(x, 1) for x in nv], "floor_ms": [round(x, 1) for x in fl],
                "nvdra_start_p50_ms": round(med_nv, 1), "floor_p50_ms": round(med_fl, 1),
                "nvdra_over_floor": round(med_nv / med_fl, 2), "exec_ms": [round(x, 1) for x in ex],
                "exec_p50_ms": round(med_ex, 1), "nvdra_over_floor_with_exec": round(med_nv / (med_fl + med_ex), 2),
                "native_floor_ms": [round(x, 1) for x in nf], "native_floor_p50_ms": round(med_nf, 1),
                "nvdra_over_native_floor": round(med_nv / med_nf, 2),
                "native_floor_reads_ms": [round(x, 1) for x in nr], "native_floor_reads_p50_ms": round(med_nr, 1),
                "nvdra_over_native_floor_reads": round(med_nv / med_nr, 2),
                "cpu_ms": {"nvdra": cpu_medians(nv_cpu), "floor": cpu_medians(fl_cpu),
                           "native_floor": cpu_medians(nf_cpu), "native_floor_reads": cpu_medians(nr_cpu)},
                "cores_busy": {"nvdra": round(statistics.median(c["total"] for c in nv_cpu) / med_nv, 2),
                               "floor": round(statistics.median(c["total"] for c in fl_cpu) / med_fl, 2),
                               "native_floor": round(statistics.median(c["total"] for c in nf_cpu) / med_nf, 2),
                               "native_floor_reads": round(statistics.median(c["total"] for c in nr_cpu) / med_nr, 2)},
                "agent_args": args.agent_args}
    finally:
        node.cleanup()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--dynamic-mig-gpus", type=int, default=0)
    ap.add_argument("--agent-args", default="", help="more agent flags, e.g. '--kube-api-qps=1000 --kube-api-burst=1000'")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    os.environ.setdefault("NVDRA_SOURCE_DIR", TOP)
    result = measure(args)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
