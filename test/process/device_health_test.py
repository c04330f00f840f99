"""Device health on the simulated node (NVMLDeviceHealthCheck, issue #18): XIDs and GPU loss injected
into the running mock NVML become upstream's device taints in the API double, the DRA health stream
(v1 and v1alpha1) reports the same devices, recovery after a GPU reset removes them, and slices stay
valid against the 1.34, 1.35 and 1.36 API documents."""
import re
import threading
import time
import unittest
import urllib.request

from gpu_node import SimulatedNode

DEADLINE = 20.0
XID = "gpu.nvidia.com/xid"
LOST = "gpu.nvidia.com/gpu-lost"
UNMONITORED = "gpu.nvidia.com/unmonitored"
LISTENING = re.compile(r"metrics listening address=(\S+) port=(\d+) path=(\S+)")


def gpu_uuid(index):
    return f"GPU-4a1f0c2e-7d3b-4e5a-9c81-0a2b3c4d5e0{index + 1}"  # dgx-a100's GPU <index>


def taints(devices, name):
    return [(t["key"], t.get("value", ""), t["effect"]) for t in devices[name].get("taints", [])]


class HealthWatch:
    """Follows one NodeWatchResources stream on a thread; wait(pred) returns the first report that holds."""

    def __init__(self, plugin, version):
        self.stream = plugin.watch_health(version)
        self.cond = threading.Condition()
        self.reports = []
        self.arrived = []  # time.monotonic() of each report (bench/device_health.py times the stream)
        self.thread = threading.Thread(target=self._follow, daemon=True)
        self.thread.start()

    def _follow(self):
        try:
            for report in self.stream:
                with self.cond:
                    self.reports.append({d["device_name"]: d for d in report})
                    self.arrived.append(time.monotonic())
                    self.cond.notify_all()
        except Exception:  # cancelled
            pass

    def wait(self, predicate, timeout=DEADLINE):
        with self.cond:
            if not self.cond.wait_for(lambda: self.reports and predicate(self.reports[-1]), timeout):
                raise AssertionError(f"health stream: condition not met; last {self.reports[-1:]}")
            return self.reports[-1]

    def close(self):
        self.stream.cancel()
        self.thread.join(timeout=10)


class DeviceHealth(unittest.TestCase):
    def start(self, api_version=(1, 35), args=("--additional-xids-to-ignore=94",)):
        node = SimulatedNode(profile="dgx-a100", api_version=api_version, gates="NVMLDeviceHealthCheck=true",
                             args=list(args))
        self.addCleanup(node.cleanup)
        node.start()
        return node

    def watch(self, node, version):
        w = HealthWatch(node.gpu(), version)
        self.addCleanup(w.close)
        return w

    def test_xid_79_taints_the_gpu_and_the_health_stream_reports_it_on_both_versions(self):
        node = self.start()
        streams = [self.watch(node, v) for v in ("v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth")]
        for s in streams:
            first = s.wait(lambda r: "gpu-3" in r)
            self.assertEqual(first["gpu-3"]["health"], "HEALTHY")
            self.assertEqual(first["gpu-3"]["pool_name"], node.node)
            self.assertEqual(first["gpu-3"]["health_check_timeout_seconds"], 30)
        node.inject_xid(gpu_uuid(3), 79)
        devices = node.wait_published(lambda d: taints(d, "gpu-3"), DEADLINE)
        self.assertEqual(taints(devices, "gpu-3"), [(XID, "79", "NoSchedule")])
        self.assertEqual([n for n in devices if n != "gpu-3" and devices[n].get("taints")], [])
        for s in streams:
            report = s.wait(lambda r: r["gpu-3"]["health"] == "UNHEALTHY")
            self.assertEqual([n for n, d in report.items() if d["health"] != "HEALTHY"], ["gpu-3"])
            self.assertIn("gpu.nvidia.com/xid=79", report["gpu-3"]["message"])
        self.assertIn(f"gpu={gpu_uuid(3)} pci=0000:4e:00.0 xid=79", node.agent_log())
        self.assertEqual(node.api.rejections, [])

    def test_an_xid_on_a_mig_parent_taints_all_its_mig_devices_and_one_on_an_instance_only_that(self):
        node = self.start()
        migs = sorted(n for n, d in node.published().items() if d["attributes"].get("parentUUID", {}).get("string")
                      == gpu_uuid(6))
        self.assertEqual(len(migs), 3)
        node.inject_xid(gpu_uuid(6), 48)
        devices = node.wait_published(lambda d: all(taints(d, m) for m in migs), DEADLINE)
        for m in migs:
            self.assertEqual(taints(devices, m), [(XID, "48", "NoSchedule")])
        self.assertEqual([n for n in devices if n not in migs and devices[n].get("taints")], [])
        other = sorted(n for n, d in devices.items() if d["attributes"].get("parentUUID", {}).get("string")
                       == gpu_uuid(7))
        mig_uuid = devices[other[1]]["attributes"]["uuid"]["string"]
        node.inject_xid(mig_uuid, 79)  # the mock fills in that instance's GI/CI ids
        devices = node.wait_published(lambda d: taints(d, other[1]), DEADLINE)
        self.assertEqual([n for n in other if devices[n].get("taints")], [other[1]])

    def test_ignored_xids_are_tainted_with_effect_none_including_additional_ones(self):
        node = self.start(api_version=(1, 36))
        node.inject_xid(gpu_uuid(1), 13)
        node.inject_xid(gpu_uuid(2), 94)  # --additional-xids-to-ignore=94
        node.inject_xid(gpu_uuid(4), 94 + 1)
        devices = node.wait_published(lambda d: all(taints(d, n) for n in ("gpu-1", "gpu-2", "gpu-4")), DEADLINE)
        self.assertEqual(taints(devices, "gpu-1"), [(XID, "13", "None")])
        self.assertEqual(taints(devices, "gpu-2"), [(XID, "94", "None")])
        self.assertEqual(taints(devices, "gpu-4"), [(XID, "95", "NoSchedule")])
        report = self.watch(node, "v1.DRAResourceHealth").wait(lambda r: r["gpu-4"]["health"] == "UNHEALTHY")
        self.assertEqual(report["gpu-1"]["health"], "HEALTHY")  # effect None keeps pods coming
        self.assertEqual(node.api.rejections, [])

    def test_on_1_34_effect_none_is_left_out_and_no_schedule_published(self):
        node = self.start(api_version=(1, 34))
        node.inject_xid(gpu_uuid(1), 13)
        node.inject_xid(gpu_uuid(3), 79)
        devices = node.wait_published(lambda d: taints(d, "gpu-3"), DEADLINE)
        self.assertEqual(taints(devices, "gpu-3"), [(XID, "79", "NoSchedule")])
        self.assertEqual(taints(devices, "gpu-1"), [])
        self.assertEqual(node.api.rejections, [])

    def test_a_lost_gpu_taints_every_device_and_its_return_removes_the_taints(self):
        node = self.start()
        health = self.watch(node, "v1alpha1.DRAResourceHealth")
        node.inject_xid(gpu_uuid(3), 79)
        node.wait_published(lambda d: taints(d, "gpu-3"), DEADLINE)
        node.set_gpu_lost(gpu_uuid(3))
        devices = node.wait_published(lambda d: all((LOST, "", "NoSchedule") in taints(d, n) for n in d), DEADLINE)
        self.assertEqual(len(devices), len(node.published()))
        health.wait(lambda r: all(d["health"] == "UNHEALTHY" for d in r.values()))
        node.set_gpu_lost(gpu_uuid(3), lost=False)  # reset: NVML serves the GPU again
        node.wait_published(lambda d: not any(dev.get("taints") for dev in d.values()), DEADLINE)
        health.wait(lambda r: all(d["health"] == "HEALTHY" for d in r.values()))
        self.assertEqual(node.api.rejections, [])

    def metrics(self, node):
        port = LISTENING.search(node.agent_log()).group(2)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            return r.read().decode()

    def test_an_xid_whose_recovery_action_was_carried_out_loses_its_taint_a_reboot_one_keeps_it(self):
        node = self.start(args=("--http-endpoint=127.0.0.1:0",))
        health = self.watch(node, "v1.DRAResourceHealth")
        node.set_recovery_action(gpu_uuid(3), 1)  # the driver asks for a GPU reset with the XID
        node.inject_xid(gpu_uuid(3), 48)
        node.set_recovery_action(gpu_uuid(4), 2)  # ... and for a node reboot with this one
        node.inject_xid(gpu_uuid(4), 79)
        node.wait_published(lambda d: taints(d, "gpu-3") and taints(d, "gpu-4"), DEADLINE)
        self.assertIn(f"gpu={gpu_uuid(3)} pci=0000:4e:00.0 xid=48 event_type=0x8 gi=-1 ci=-1 "
                      "recovery_action=gpu-reset", node.agent_log())
        node.set_recovery_action(gpu_uuid(4), 0)  # first, so the monitor has seen it once GPU 3 recovers
        node.set_recovery_action(gpu_uuid(3), 0)  # the reset was done
        devices = node.wait_published(lambda d: not taints(d, "gpu-3"), DEADLINE)
        self.assertEqual(taints(devices, "gpu-4"), [(XID, "79", "NoSchedule")])
        report = health.wait(lambda r: r["gpu-3"]["health"] == "HEALTHY")
        self.assertEqual(report["gpu-4"]["health"], "UNHEALTHY")
        self.assertIn(f"device health: gpu={gpu_uuid(3)} recovered (recovery_action)", node.agent_log())
        page = self.metrics(node)
        self.assertIn(f'nvdra_gpu_xid_events_total{{gpu="{gpu_uuid(3)}",xid="48"}} 1', page)
        self.assertIn(f'nvdra_gpu_xid_events_total{{gpu="{gpu_uuid(4)}",xid="79"}} 1', page)
        self.assertIn(f'nvdra_device_health_recoveries_total{{gpu="{gpu_uuid(3)}",reason="recovery_action"}} 1', page)
        self.assertNotIn(f'nvdra_device_health_recoveries_total{{gpu="{gpu_uuid(4)}"', page)
        self.assertIn('nvdra_devices{health="unhealthy"} 1', page)
        self.assertEqual(node.api.rejections, [])

    def test_recovery_none_keeps_the_taints_of_a_gpu_that_came_back_as_upstream(self):
        node = self.start(args=("--device-health-recovery=none",))
        node.set_recovery_action(gpu_uuid(3), 1)
        node.inject_xid(gpu_uuid(3), 48)
        node.wait_published(lambda d: taints(d, "gpu-3"), DEADLINE)
        node.set_gpu_lost(gpu_uuid(3))
        node.wait_published(lambda d: all((LOST, "", "NoSchedule") in taints(d, n) for n in d), DEADLINE)
        node.set_gpu_lost(gpu_uuid(3), lost=False)
        node.set_recovery_action(gpu_uuid(3), 0)
        node.inject_xid(gpu_uuid(1), 94)  # seen only after the return: everything before it was too
        devices = node.wait_published(lambda d: (XID, "94", "NoSchedule") in taints(d, "gpu-1"), DEADLINE)
        self.assertEqual(taints(devices, "gpu-3"), [(LOST, "", "NoSchedule"), (XID, "48", "NoSchedule")])
        self.assertNotIn("recovered", node.agent_log())

    def test_a_gpu_that_refuses_event_registration_is_unmonitored_and_unknown(self):
        node = self.start()
        node.set_events_supported(gpu_uuid(2), False)
        node.stop()
        node.start()  # registration happens at start
        devices = node.wait_published(lambda d: taints(d, "gpu-2"), DEADLINE)
        self.assertEqual(taints(devices, "gpu-2"), [(UNMONITORED, "", "None")])
        self.assertEqual([n for n in devices if n != "gpu-2" and devices[n].get("taints")], [])
        report = self.watch(node, "v1.DRAResourceHealth").wait(lambda r: "gpu-2" in r)
        self.assertEqual(report["gpu-2"]["health"], "UNKNOWN")
        self.assertIn(f"device health: gpu={gpu_uuid(2)} unmonitored: nvmlDeviceRegisterEvents", node.agent_log())
        node.inject_xid(gpu_uuid(3), 79)  # the other GPUs are still watched
        node.wait_published(lambda d: taints(d, "gpu-3"), DEADLINE)

    def test_without_the_gate_no_health_stream_is_advertised(self):
        node = SimulatedNode(profile="dgx-a100")
        self.addCleanup(node.cleanup)
        node.start()
        self.assertEqual(node.gpu().health_version, "")


if __name__ == "__main__":
    unittest.main()
