"""ABI check: a program built against NVIDIA's own nvml.h (abi/nvml_abi_probe.cpp) reads the mock
libnvidia-ml.so.1 and must see exactly what `nvdra-agent devices -o json` prints, for every shipped
profile; it also drives the MIG and event calls the agent makes through NVIDIA's prototypes."""
import json
import os
import subprocess
import tempfile
import unittest

BIN = os.environ["NVDRA_BINARY_DIR"]
MOCK = os.path.join(BIN, "nvml-mock", "libnvidia-ml.so.1")
PROBE = os.path.join(BIN, "test", "nvml", "nvml_abi_probe")
AGENT = os.path.join(BIN, "agent", "nvdra-agent")
BRANDS = ["Unknown", "Quadro", "Tesla", "NVS", "Grid", "GeForce", "Titan", "NvidiaVApps", "NvidiaVPC",
          "NvidiaVCS", "NvidiaVWS", "NvidiaCloudGaming", "QuadroRTX", "NvidiaRTX", "Nvidia", "GeForceRTX",
          "TitanRTX"]
ARCHS = {7: "Ampere", 8: "Ada Lovelace", 9: "Hopper", 10: "Blackwell"}
MODES = {0: "None", 1: "HMM", 2: "ATS"}


def bus_id(raw):
    s = raw.lower()
    return s[4:] if s.index(":") == 8 and s.startswith("0000") else s


def cluster_uuid(data):
    if not any(data):
        return ""
    h = "".join("%02x" % b for b in data)
    return "-".join([h[0:8], h[8:12], h[12:16], h[16:20], h[20:32]])


class AbiCheck(unittest.TestCase):
    def run_both(self, profile, state_dir, *probe_args):
        env = dict(os.environ, NVDRA_MOCK_PROFILE=profile, NVDRA_MOCK_STATE_DIR=state_dir)
        agent = subprocess.run([AGENT, "devices", "-o", "json", "--nvml-library", MOCK], env=env,
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(agent.returncode, 0, agent.stderr)
        probe = subprocess.run([PROBE, MOCK, *probe_args], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(probe.returncode, 0, probe.stderr)
        return json.loads(agent.stdout), json.loads(probe.stdout)

    def test_nvidia_header_reads_what_the_agent_prints_for_every_profile(self):
        for profile in ["dgx-a100", "hgx-h100", "gb200-nvl", "l4"]:
            with self.subTest(profile=profile), tempfile.TemporaryDirectory() as state:
                agent, probe = self.run_both(profile, state)
                self.assertEqual(agent["driverVersion"], probe["driverVersion"])
                self.assertEqual(agent["cudaDriverVersion"], probe["cudaDriverVersion"])
                self.assertEqual(len(agent["gpus"]), len(probe["gpus"]))
                for a, p in zip(agent["gpus"], probe["gpus"]):
                    for key in ["index", "minor", "uuid", "productName", "cudaComputeCapability", "memoryBytes",
                                "pciDeviceId", "pciSubsystemId", "migCapable", "migEnabled"]:
                        self.assertEqual(a[key], p[key], key)
                    self.assertEqual(a["brand"], BRANDS[p["brand"]])
                    self.assertEqual(a["architecture"], ARCHS[p["architecture"]])
                    self.assertEqual(a["pciBusId"], bus_id(p["pciBusId"]))
                    self.assertEqual(a.get("addressingMode"), MODES.get(p.get("addressingMode")))
                    self.assertEqual("fabric" in a, "fabric" in p)
                    if "fabric" in a:
                        for key in ["state", "status", "cliqueId"]:
                            self.assertEqual(a["fabric"][key], p["fabric"][key], key)
                        self.assertEqual(a["fabric"]["clusterUuid"], cluster_uuid(p["fabric"]["clusterUuidBytes"]))
                    keys = ["profileIndex", "profileId", "sliceCount", "instanceCount", "memoryMiB", "multiprocessors",
                            "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines", "placements"]
                    self.assertEqual([{k: x[k] for k in keys} for x in a["migProfiles"]], p.get("migProfiles", []))
                    keys = ["uuid", "giId", "ciId", "profileId", "ciProfileId", "placement"]
                    self.assertEqual([{k: x[k] for k in keys} for x in a["migDevices"]], p.get("migDevices", []))

    def test_mig_and_event_calls_behave_through_nvidias_prototypes(self):
        with tempfile.TemporaryDirectory() as state:
            _, probe = self.run_both("hgx-h100", state, "--exercise")
            ex = probe["exercise"]
            self.assertEqual(ex["occupiedPlacement"], "Insufficient Resources")
            self.assertEqual(ex["ciProfileSlices"], 1)
            self.assertEqual(ex["migUuidPrefix"], "MIG-")
            self.assertEqual(ex["supportedEvents"] & 0xB, 0xB)
            self.assertEqual(ex["idleWait"], "Timeout")


if __name__ == "__main__":
    unittest.main()
