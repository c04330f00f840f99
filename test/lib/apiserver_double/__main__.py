"""CLI: python3 -m apiserver_double --dir DIR [options]   (PYTHONPATH=test/lib)

Writes DIR/ca.crt, DIR/server.{crt,key}, DIR/token, DIR/kubeconfig, then DIR/ready.json
({"url", "port", "kubeconfig", "pid"}) once it serves. Runs until SIGTERM/SIGINT."""
import argparse
import json
import os
import signal

import yaml

from . import start_in


def main():
    ap = argparse.ArgumentParser(prog="apiserver_double", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", required=True, help="folder for certificates, token, kubeconfig, ready.json")
    ap.add_argument("--token", default="test-token", help="accepted bearer token (written to DIR/token)")
    ap.add_argument("--version", default="1.35", choices=["1.34", "1.35", "1.36", "1.37"],
                    help="server version MAJOR.MINOR: /version, the OpenAPI documents validated against and served, "
                         "the validation rules (1.37 = 1.36's documents and rules)")
    ap.add_argument("--gates", default="", help="server feature gates that clear fields when off, e.g. "
                    "DRAListTypeAttributes=true,DRAConsumableCapacity=false (defaults per version)")
    ap.add_argument("--chunking", default="mixed", choices=["event", "split", "coalesce", "mixed"],
                    help="how watch events are cut into HTTP chunks")
    ap.add_argument("--node", action="append", default=[], help="seed a Node with this name (repeatable)")
    ap.add_argument("--seed", action="append", default=[], help="YAML/JSON file of objects to seed (repeatable)")
    args = ap.parse_args()
    # Take SIGTERM/SIGINT synchronously (sigwait below), blocked before any thread starts so every
    # thread inherits the mask: a Python handler calling Event.set() while the main thread sits in
    # Event.wait() could hang the double at exit.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    major, minor = (int(x) for x in args.version.split(".")[:2])
    gates = {k: v.strip().lower() == "true" for k, _, v in
             (item.partition("=") for item in args.gates.split(",") if item.strip())}
    double = start_in(args.dir, token=args.token, version=(major, minor), chunking=args.chunking, gates=gates)
    for node in args.node:
        double.put_object({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}})
    for path in args.seed:
        with open(path) as f:
            for obj in yaml.safe_load_all(f):
                if obj:
                    double.put_object(obj)
    ready = os.path.join(args.dir, "ready.json")
    with open(ready + ".tmp", "w") as f:
        json.dump({"url": double.url, "port": double.port, "kubeconfig": double.kubeconfig, "pid": os.getpid()}, f)
    os.rename(ready + ".tmp", ready)
    print(f"apiserver double serving {double.url}; kubeconfig {double.kubeconfig}", flush=True)
    signal.sigwait(stop_signals)
    double.stop()


if __name__ == "__main__":
    main()
