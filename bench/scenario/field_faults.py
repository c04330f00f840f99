#!/usr/bin/python3
"""Whole-process figures for issue #30's field faults (not a test), on the simulated node:
  * driver → published: the agent started with no NVIDIA driver (the mock NVML answers DRIVER_NOT_LOADED while
    the node's /dev/nvidiactl is missing); from the device node's appearance to the API double holding the
    gpu.nvidia.com slices with gpu-0;
  * kubelet back → registered: the kubelet double closed and a new one started; from its start to both plugins
    registered (GetInfo + NotifyRegistrationStatus on each registration socket, as kubelet's watcher does).

    bench/scenario/field_faults.py [--build-dir build] [--runs 20]
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))
from gpu_claims import pct_ms as pct  # noqa: E402  (one percentile rule for every bench)


def driver_to_published(SimulatedNode, CD, GPU):
    node = SimulatedNode(profile="dgx-a100", drivers=[CD])
    try:
        ctl = os.path.join(node.host_root, "dev", "nvidiactl")
        os.rename(ctl, ctl + ".not-yet")
        node.extra_env["NVDRA_MOCK_DRIVER_NODE"] = ctl
        node.start(wait_ready=False)
        node.wait_log("waiting for the NVIDIA driver")
        t = time.monotonic()
        os.rename(ctl + ".not-yet", ctl)
        node.wait_published(lambda d: "gpu-0" in d, timeout=30.0, driver=GPU)
        return time.monotonic() - t
    finally:
        node.cleanup()


def kubelet_back_to_registered(node, KubeletDouble, CD, GPU):
    node.kubelet.close()
    t = time.monotonic()
    node.kubelet = KubeletDouble(node.dirs.registrar)
    node.plugins = node.kubelet.wait_for_plugins([GPU, CD], timeout=30.0)
    return time.monotonic() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    os.environ["NVDRA_BINARY_DIR"] = os.path.abspath(args.build_dir)
    os.environ.setdefault("NVDRA_SOURCE_DIR", TOP)
    from gpu_node import CD, GPU, SimulatedNode
    from kubelet_double.double import KubeletDouble

    published = [driver_to_published(SimulatedNode, CD, GPU) for _ in range(args.runs)]
    node = SimulatedNode(profile="dgx-a100")
    try:
        node.start()
        registered = [kubelet_back_to_registered(node, KubeletDouble, CD, GPU) for _ in range(args.runs)]
    finally:
        node.cleanup()
    print(f"runs={args.runs}")
    print(f"driver appeared -> gpu.nvidia.com published: p50 {pct(published, 50)} ms, p99 {pct(published, 99)} ms")
    print(f"kubelet back -> both plugins registered: p50 {pct(registered, 50)} ms, p99 {pct(registered, 99)} ms")


if __name__ == "__main__":
    main()
