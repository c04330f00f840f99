#!/usr/bin/python3
"""nvdra demo: the agent on a simulated GPU node, driven from outside over its real sockets.

Readable progress on the terminal; every step uses the same binaries and doubles as the test suite.
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "test", "lib"))


def step(text):
    print(f"\n\033[1m== {text}\033[0m", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build-dir", default=os.path.join(TOP, "build"))
    ap.add_argument("--profile", default="dgx-a100")
    args = ap.parse_args()
    args.build_dir = os.path.abspath(args.build_dir)
    os.environ["NVDRA_BINARY_DIR"] = args.build_dir
    os.environ["NVDRA_SOURCE_DIR"] = TOP
    from kubelet_double import Claim, KubeletDouble
    from nvdra_testlib import AgentDirs, NotifySocket, clean_env

    agent = os.path.join(args.build_dir, "agent", "nvdra-agent")
    mock = os.path.join(args.build_dir, "nvml-mock", "libnvidia-ml.so.1")
    dirs = AgentDirs()
    state = tempfile.mkdtemp(prefix="nvdra-mock-state-", dir=dirs.root)
    env = clean_env(NVDRA_MOCK_PROFILE=args.profile, NVDRA_MOCK_STATE_DIR=state)

    step(f"GPUs on the simulated node (mock NVML, profile {args.profile})")
    subprocess.run([agent, "devices", "--nvml-library", mock], env=env, check=True)

    step("starting nvdra-agent")
    notify = NotifySocket(dirs.root)
    log_path = os.path.join(dirs.root, "agent.log")
    log = open(log_path, "w")
    t0 = time.monotonic()
    proc = subprocess.Popen([agent] + dirs.args("demo-node") + ["--nvml-library", mock],
                            env=dict(env, NOTIFY_SOCKET=notify.path), stderr=log)
    code = 1
    try:
        print(notify.wait_for("STATUS=").strip())
        step("kubelet registers the plugins")
        kubelet = KubeletDouble(dirs.registrar)
        plugins = kubelet.wait_for_plugins(["gpu.nvidia.com", "compute-domain.nvidia.com"])
        for name, plugin in sorted(plugins.items()):
            print(f"  {name:28s} endpoint={plugin.endpoint}")
        notify.wait_for("READY=1")
        print(f"  READY=1 after {(time.monotonic() - t0) * 1000:.0f} ms")

        step("kubelet prepares and unprepares a claim")
        claim = Claim("default", "demo-claim", "6f1f0c2e-0000-4000-8000-000000000001")
        print("  prepare:", plugins["gpu.nvidia.com"].prepare([claim]))
        print("  unprepare:", plugins["gpu.nvidia.com"].unprepare([claim]))
        kubelet.close()

        step("SIGTERM")
        t1 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=10)
        print(f"  exit status {code} after {(time.monotonic() - t1) * 1000:.0f} ms;"
              f" sockets left: {sorted(os.listdir(dirs.registrar))}")
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
        print(f"\nagent log:\n{open(log_path).read()}")
        notify.close()
        dirs.cleanup()
    return 0 if code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
