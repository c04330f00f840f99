"""nvdra demo, --compute-domain: a ComputeDomain in upstream's default driver-managed IMEX mode on a simulated
NVLink node (gb200-nvl). What upstream's controller and the IMEX daemon would do is done by hand: the daemon's
claim is prepared, a workload's channel claim waits for the daemon, the daemon's ComputeDomainClique entry
turns Ready, the channel is prepared, and the node label comes and goes."""
import os
import threading
import time

GV = "resource.nvidia.com/v1beta1"
CD = "compute-domain.nvidia.com"
LABEL = "resource.nvidia.com/computeDomain"


def run(step):
    from compute_domain_objects import clique_object
    from gpu_node import SimulatedNode
    node = SimulatedNode(profile="gb200-nvl", node="demo-node", args=["--controller=false"])
    try:
        step("starting nvdra-agent in driver-managed IMEX mode (no HostManagedIMEX gate: upstream's default)")
        node.start()
        clique = node.wait_log(r"mode=driverManaged clique=(\S+)").group(1)
        print(f"  node clique {clique}; published for {CD}: {sorted(node.published(CD))}")
        cd = node.api.put_object({"apiVersion": GV, "kind": "ComputeDomain",
                                  "metadata": {"name": "train", "namespace": "default"},
                                  "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "train-ch"}}}})
        uid = cd["metadata"]["uid"]
        plugin = node.plugins[CD]

        step(f"a workload's channel claim for ComputeDomain default/train ({uid})")
        channel = node.allocate("train-worker", [("channel", "channel-0")],
                                [([], {"apiVersion": GV, "kind": "ComputeDomainChannelConfig", "domainID": uid})],
                                driver=CD)
        answer = {}
        worker = threading.Thread(target=lambda: answer.update(plugin.prepare([channel])[channel.uid]))
        t0 = time.monotonic()
        worker.start()
        node.api.wait_for_objects("v1", "nodes", lambda n: n[0]["metadata"].get("labels", {}).get(LABEL) == uid, 20)
        print(f"  node label {LABEL}={uid} set; the prepare waits for the IMEX daemon")

        step("the IMEX daemon's claim (what upstream's per-domain DaemonSet pod asks for)")
        daemon = node.allocate("imex-daemon", [("daemon", "daemon-0")],
                               [([], {"apiVersion": GV, "kind": "ComputeDomainDaemonConfig", "domainID": uid})],
                               driver=CD)
        d = plugin.prepare([daemon])[daemon.uid]
        print(f"  prepared while the channel waits: {d['devices'][0]['cdi_device_ids']}")
        domain_dir = os.path.join(node.dirs.plugins, CD, "domains", uid)
        print(f"  {domain_dir}: {sorted(os.listdir(domain_dir))}")

        step("the daemon reports Ready in ComputeDomainClique " + f"{uid}.{clique}")
        node.api.put_object(clique_object(uid, clique, node.node))
        worker.join(60)
        print(f"  channel prepared {(time.monotonic() - t0) * 1000:.0f} ms after the prepare started: "
              f"{answer['devices'][0]['cdi_device_ids']} {answer['error'] or ''}")

        step("unprepare both")
        print(f"  channel: {plugin.unprepare([channel])[channel.uid] or 'ok'}; daemon: "
              f"{plugin.unprepare([daemon])[daemon.uid] or 'ok'}")
        labels = node.api.objects("v1", "nodes")[0]["metadata"].get("labels", {})
        print(f"  node label {LABEL}: {labels.get(LABEL, '(removed)')}")
        return node.stop()
    except Exception:
        print(f"\nagent log:\n{node.agent_log() if node.runs else ''}")
        raise
    finally:
        node.cleanup()
