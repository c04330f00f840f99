"""CLI: python3 -m kubelet_double {register,prepare,unprepare,health} --dir REGISTRAR_DIR ... | probe --port P
(README.md)."""
import argparse
import json
import sys

import grpc

from kubelet_double.double import Claim, KubeletDouble, RegistrationError
from kubelet_double.probe import grpc_probe


def _plugin(double, args):
    plugins = double.wait_for_plugins([args.driver], timeout=args.timeout, notify=not args.no_notify)
    return plugins[args.driver]


def cmd_register(double, args):
    if args.reject is not None:
        plugins = double.wait_for_plugins(args.driver, timeout=args.timeout, notify=False)
        for plugin in plugins.values():
            try:
                double.register(plugin.registration_socket, reject=args.reject)
            except RegistrationError as e:
                print(json.dumps({"name": plugin.name, "rejected": str(e)}))
        return 0
    for name, plugin in sorted(double.wait_for_plugins(args.driver, timeout=args.timeout).items()):
        print(json.dumps({"name": name, "endpoint": plugin.endpoint, "supported_versions": plugin.supported_versions,
                          "registration_socket": plugin.registration_socket, "dra_version": plugin.dra_version}))
    return 0


def cmd_prepare(double, args):
    result = _plugin(double, args).prepare([Claim.parse(c) for c in args.claim], version=args.version,
                                           timeout=args.call_timeout)
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0 if all(not r["error"] for r in result.values()) else 3


def cmd_unprepare(double, args):
    result = _plugin(double, args).unprepare([Claim.parse(c) for c in args.claim], version=args.version,
                                             timeout=args.call_timeout)
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0 if all(not e for e in result.values()) else 3


def cmd_health(double, args):
    stream = _plugin(double, args).watch_health(version=args.version)
    for i, report in enumerate(stream):
        print(json.dumps(report), flush=True)
        if args.count and i + 1 >= args.count:
            stream.cancel()
            break
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m kubelet_double", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", required=True, help="kubelet registration directory (plugins_registry)")
    common.add_argument("--timeout", type=float, default=20.0, help="seconds to wait for the plugin sockets")
    one = argparse.ArgumentParser(add_help=False, parents=[common])
    one.add_argument("--driver", default="gpu.nvidia.com", help="DRA driver name (default gpu.nvidia.com)")
    one.add_argument("--no-notify", action="store_true", help="skip NotifyRegistrationStatus (GetInfo only)")
    calls = argparse.ArgumentParser(add_help=False, parents=[one])
    calls.add_argument("--claim", action="append", required=True, metavar="NS/NAME/UID")
    calls.add_argument("--version", choices=["v1", "v1beta1"], help="DRA API (default: the plugin's first choice)")
    calls.add_argument("--call-timeout", type=float, default=45.0, help="RPC deadline, kubelet uses 45 s")

    reg = sub.add_parser("register", parents=[common], help="register plugins, print one JSON line each")
    reg.add_argument("--driver", action="append", default=None, help="driver to wait for (repeatable)")
    reg.add_argument("--reject", metavar="REASON", help="answer NotifyRegistrationStatus(false, REASON) instead")
    sub.add_parser("prepare", parents=[calls], help="NodePrepareResources; prints the per-claim map as JSON")
    sub.add_parser("unprepare", parents=[calls], help="NodeUnprepareResources; prints the per-claim map as JSON")
    health = sub.add_parser("health", parents=[one], help="NodeWatchResources; one JSON line per report")
    health.add_argument("--version", choices=["v1", "v1alpha1"], help="health API (default: kubelet 1.37's choice)")
    health.add_argument("--count", type=int, default=0, help="stop after this many reports (0 = forever)")
    probe = sub.add_parser("probe", help="kubelet's gRPC probe (grpc.health.v1 Check); prints {result, message}")
    probe.add_argument("--port", type=int, required=True)
    probe.add_argument("--service", default="", help="the probe's grpc.service (the DaemonSet's: liveness)")
    probe.add_argument("--host", default="127.0.0.1")
    probe.add_argument("--probe-timeout", type=float, default=1.0, help="timeoutSeconds (kubelet's default 1)")

    args = parser.parse_args(argv)
    if args.command == "probe":
        result, message = grpc_probe(args.port, args.service, args.host, args.probe_timeout)
        print(json.dumps({"result": result, "message": message}))
        return 0 if result == "success" else 3
    if args.command == "register" and not args.driver:
        args.driver = ["gpu.nvidia.com", "compute-domain.nvidia.com"]
    double = KubeletDouble(args.dir)
    try:
        return {"register": cmd_register, "prepare": cmd_prepare, "unprepare": cmd_unprepare,
                "health": cmd_health}[args.command](double, args)
    except TimeoutError as e:
        print(f"kubelet_double: {e}", file=sys.stderr)
        return 1
    except grpc.RpcError as e:
        print(f"kubelet_double: {args.command}: {e.code().name}: {e.details()}", file=sys.stderr)
        return 1
    finally:
        double.close()


if __name__ == "__main__":
    sys.exit(main())
