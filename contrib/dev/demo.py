#!/usr/bin/python3
"""nvdra demo: the agent's main job on a simulated GPU node, driven from outside over its real sockets.

The mock NVML (a dgx-a100 by default) on a fake driver and host root, the API-server double holding
the node's allocated ResourceClaims, the agent, and the kubelet double calling NodePrepareResources
and NodeUnprepareResources — the same binaries and doubles as the test suite.
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))


def step(text):
    print(f"\n\033[1m== {text}\033[0m", flush=True)


def attr(device, name):
    value = device.get("attributes", {}).get(name, {})
    return str(next(iter(value.values()), "")) if value else ""


def slices_table(devices):
    rows = [("DEVICE", "TYPE", "PRODUCT", "MEMORY", "UUID")]
    for name in sorted(devices, key=lambda n: (len(n.split("-")[1]), n)):
        d = devices[name]
        rows.append((name, attr(d, "type"), attr(d, "productName"), d.get("capacity", {}).get("memory", {}).get("value", ""),
                     attr(d, "uuid")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)))


def show_passthrough(node, when):
    """The VFIO claim's GPU in the fake sysfs and the slice: one face of a GPU is offered at a time."""
    bdf = node.pci.gpu_address(4)
    want = (lambda n: "gpu-4" not in n) if when == "after prepare" else (lambda n: "gpu-4" in n)
    slices = node.api.wait_for_objects("resource.k8s.io/v1", "resourceslices", lambda items: want(
        {d["name"] for s in items for d in s["spec"].get("devices", []) if s["spec"]["driver"] == "gpu.nvidia.com"}), 20)
    names = {d["name"] for s in slices for d in s["spec"].get("devices", []) if s["spec"]["driver"] == "gpu.nvidia.com"}
    print(f"  {when}: {bdf} is bound to {node.pci.driver(bdf) or 'no driver'};"
          f" /dev/vfio on the host: {sorted(os.listdir(os.path.join(node.host_root, 'dev', 'vfio')))};"
          f" gpu-4 {'published' if 'gpu-4' in names else 'withdrawn'}, gpu-vfio-4 "
          f"{'published' if 'gpu-vfio-4' in names else 'withdrawn'}")


def show_device_health(node, name):
    """An XID injected into the mock NVML becomes a taint; NVML's recovery action, once carried out, lifts it."""
    uuid = attr(node.published()[name], "uuid")
    step(f"device health: the driver reports XID 48 on {name} and asks for a GPU reset")
    node.set_recovery_action(uuid, 1)
    node.inject_xid(uuid, 48)
    devices = node.wait_published(lambda d: d[name].get("taints"))
    for t in devices[name]["taints"]:
        print(f"  {name}: taint {t['key']}={t.get('value', '')}:{t['effect']}")
    step(f"device health: {name} was reset (NVML's recovery action reads none again)")
    t0 = time.monotonic()
    node.set_recovery_action(uuid, 0)
    node.wait_published(lambda d: not d[name].get("taints"))
    print(f"  taint removed after {(time.monotonic() - t0) * 1000:.0f} ms")
    lines = [ln for ln in node.agent_log().splitlines() if "device health: gpu=" in ln]
    for ln in lines[-2:]:
        print(f"  log: {ln[25:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--profile", default="dgx-a100")
    ap.add_argument("--passthrough", action="store_true",
                    help="gate PassthroughSupport on, on the passthrough host (8 GPUs in a fake sysfs PCI tree): "
                         "a VFIO claim moves a GPU to vfio-pci")
    ap.add_argument("--compute-domain", action="store_true",
                    help="a ComputeDomain in driver-managed IMEX mode on a simulated NVLink node (gb200-nvl): daemon "
                         "claim, channel claim waiting for the daemon's Ready, node label")
    args = ap.parse_args()
    if args.passthrough and args.profile == "dgx-a100":
        args.profile = "passthrough"
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    os.environ["NVDRA_SOURCE_DIR"] = TOP
    from gpu_node import MOCK, SimulatedNode, gpu_config
    from nvdra_testlib import agent_binary
    if args.compute_domain:
        sys.path.insert(0, HERE)
        import demo_compute_domain
        return 0 if demo_compute_domain.run(step) == 0 else 1

    t_demo = time.monotonic()
    # NVMLDeviceHealthCheck and PassthroughSupport are exclusive (a GPU on vfio-pci has no NVML events).
    gates = "TimeSlicingSettings=true,MPSSupport=true" + (",PassthroughSupport=true" if args.passthrough
                                                           else ",NVMLDeviceHealthCheck=true")
    node = SimulatedNode(profile=args.profile, node="demo-node", gates=gates, pci=args.passthrough or None)
    code = 1
    try:
        step(f"GPUs on the simulated node (mock NVML, profile {args.profile})")
        subprocess.run([agent_binary(), "devices", "--nvml-library", MOCK], env=node.env(), check=True)

        step("starting nvdra-agent (API-server double, kubelet double)")
        node.start()
        print(f"  both plugins registered with kubelet; READY=1 after {node.ready_ms:.0f} ms")

        step("ResourceSlices the agent published for gpu.nvidia.com")
        devices = node.published()
        slices_table(devices)

        step("the scheduler's allocations: five claims")
        migs = sorted(n for n in devices if "-mig-" in n)
        gpus = sorted(n for n in devices if "-mig-" not in n and "-vfio-" not in n
                      and n not in {d.split("-mig-")[0] for d in devices if "-mig-" in d})
        vm = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "VfioDeviceConfig"}
        claims = [
            ("full-gpu", [("gpu", gpus[0])], []),
            ("vfio-vm", [("vm", "gpu-vfio-4")], [([], vm)]) if args.passthrough else ("mig-slice", [("mig", migs[0])], []),
            ("time-sliced", [("gpu", gpus[1])],
             [([], gpu_config(sharing={"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}))]),
            ("mps-shared", [("gpu", gpus[2])],
             [([], gpu_config(sharing={"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50}}))]),
            ("bad-config", [("gpu", gpus[3])], [([], gpu_config(sharing={"strategy": "TimeSlicing", "sharingPolicy": 1}))]),
        ]
        allocated = []
        for name, results, configs in claims:
            claim = node.allocate(name, results, configs)
            allocated.append(claim)
            extra = f"  config: {configs[0][1].get('sharing') or configs[0][1]['kind']}" if configs else ""
            print(f"  {name:12s} → {', '.join(d for _, d in results)}{extra}")

        step("kubelet: NodePrepareResources for all five in one call")
        t0 = time.monotonic()
        answer = node.gpu().prepare(allocated)
        print(f"  answered in {(time.monotonic() - t0) * 1000:.1f} ms")
        for claim in allocated:
            entry = answer[claim.uid]
            if entry["error"]:
                print(f"  {claim.name:12s} ERROR {entry['error']}")
                continue
            for d in entry["devices"]:
                print(f"  {claim.name:12s} {d['device_name']:22s} {' '.join(d['cdi_device_ids'])}")
        print("  CDI specs on disk:")
        for f in node.cdi_files():
            print(f"    {os.path.join(node.dirs.cdi, f)}")
        print(f"  nvidia-smi ran: {node.helper_log('nvidia-smi').strip().replace(chr(10), '; ') or '-'}")
        if args.passthrough:
            show_passthrough(node, "after prepare")
        mps = "; ".join(x for x in node.helper_log("nvidia-cuda-mps-control").splitlines() if x.strip())
        print(f"  nvidia-cuda-mps-control ran: {mps or '-'}")

        step("kubelet: NodeUnprepareResources")
        errors = node.gpu().unprepare(allocated)
        print(f"  {sum(1 for e in errors.values() if not e)}/{len(errors)} unprepared;"
              f" CDI specs left: {node.cdi_files()}; claims in the checkpoint: {len(node.checkpoint())}")
        print(f"  nvidia-smi ran (all): {node.helper_log('nvidia-smi').strip().replace(chr(10), '; ')}")
        if args.passthrough:
            show_passthrough(node, "after unprepare")

        if not args.passthrough:
            show_device_health(node, gpus[4])

        step("SIGTERM")
        t1 = time.monotonic()
        code = node.stop()
        print(f"  exit status {code} after {(time.monotonic() - t1) * 1000:.0f} ms;"
              f" sockets left: {sorted(os.listdir(node.dirs.registrar))}")
        print(f"\ndemo done in {time.monotonic() - t_demo:.1f} s; agent log: {node.log_path} (removed on exit)")
    except Exception:
        print(f"\nagent log:\n{node.agent_log() if node.runs else ''}")
        raise
    finally:
        node.cleanup()
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
