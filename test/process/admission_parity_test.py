"""The admission check (agent/admission, here through `nvdractl validate`, the webhook's own code)
against upstream's prepare and nvdra's prepare on one simulated dgx-a100: a corpus of GpuConfig and
MigDeviceConfig parameters (every field, good and bad, the seed README's fabricTopologyConfig example)
given to each config's device. Every config upstream's gpu-kubelet-plugin refuses at prepare is refused
by the webhook, every config nvdra's prepare refuses is too, and each config only the webhook refuses is
one of the differences README.md lists ("Admission" section). Both sides run upstream's gates
(TimeSlicingSettings, MPSSupport). Runs where upstream_node can run upstream (NVDRA_UPSTREAM_DIR, root);
skips with one line elsewhere (CI=true: see test/lib/upstream_node.py)."""
import os
import subprocess
import sys
import tempfile
import unittest

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "lib"))
from gpu_node import GPU, gpu_config  # noqa: E402
from nvdra_testlib import BINARY_DIR, clean_env  # noqa: E402
from upstream_node import UpstreamPlugins, exit_without_upstream, needs_upstream, upstream_node  # noqa: E402

GATES = "TimeSlicingSettings=true,MPSSupport=true"
DEVICES = {"gpu": ("gpu", "gpu-1"), "mig": ("mig", "gpu-6-mig-1g5gb-19-6")}
CLASSES = {"gpu": "gpu.nvidia.com", "mig": "mig.nvidia.com"}  # upstream's DeviceClasses (reference §10.3)
MIG = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "MigDeviceConfig"}
SEED_FABRIC = {"strategy": "Auto", "partitionSize": 4, "virtualizationModel": "BareMetal", "minBandwidth": 600.0,
               "maxLatency": 0.1, "partitionIDs": ["partition-1"]}

# name → (device, parameters, requests). Valid MPS configs are left out: their prepare starts control
# daemons (upstream: a Deployment), which is not what this compares.
CORPUS = {
    "gpu-empty": ("gpu", gpu_config(), []),
    "gpu-ts-default": ("gpu", gpu_config(sharing={"strategy": "TimeSlicing"}), []),
    "gpu-ts-long": ("gpu", gpu_config(sharing={"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}), []),
    "gpu-ts-short-named": ("gpu", gpu_config(sharing={"strategy": "TimeSlicing",
                                                      "timeSlicingConfig": {"interval": "Short"}}), ["gpu"]),
    "gpu-ts-forever": ("gpu", gpu_config(sharing={"strategy": "TimeSlicing",
                                                  "timeSlicingConfig": {"interval": "Forever"}}), []),
    "gpu-ts-interval-number": ("gpu", gpu_config(sharing={"strategy": "TimeSlicing",
                                                          "timeSlicingConfig": {"interval": 5}}), []),
    "gpu-strategy-unknown": ("gpu", gpu_config(sharing={"strategy": "Nope"}), []),
    "gpu-strategy-empty": ("gpu", gpu_config(sharing={"strategy": ""}), []),
    "gpu-sharing-policy-typo": ("gpu", gpu_config(sharingPolicy="MPS"), []),
    "gpu-unknown-sharing-field": ("gpu", gpu_config(sharing={"strategy": "TimeSlicing", "slices": 4}), []),
    "gpu-mps-percentage-120": ("gpu", gpu_config(sharing={"strategy": "MPS",
                                                          "mpsConfig": {"defaultActiveThreadPercentage": 120}}), []),
    "gpu-mps-percentage-negative": ("gpu", gpu_config(sharing={"strategy": "MPS",
                                                               "mpsConfig": {"defaultActiveThreadPercentage": -1}}), []),
    "gpu-mps-percentage-string": ("gpu", gpu_config(sharing={"strategy": "MPS",
                                                             "mpsConfig": {"defaultActiveThreadPercentage": "50"}}), []),
    "gpu-mps-pinned-not-a-quantity": ("gpu", gpu_config(sharing={"strategy": "MPS", "mpsConfig": {
        "defaultPinnedDeviceMemoryLimit": "lots"}}), []),
    "gpu-mps-unknown-field": ("gpu", gpu_config(sharing={"strategy": "MPS", "mpsConfig": {"threads": 1}}), []),
    "gpu-fabric-seed-example": ("gpu", gpu_config(sharing={"strategy": "TimeSlicing"},
                                                  fabricTopologyConfig=SEED_FABRIC), []),
    "gpu-seed-example-api-version": ("gpu", {"apiVersion": "nvidia.com/v1beta1", "kind": "GpuConfig",
                                             "sharing": {"strategy": "TimeSlicing"}}, []),
    "gpu-kind-unknown": ("gpu", {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GPUConfig"}, []),
    "gpu-kind-missing": ("gpu", {"apiVersion": "resource.nvidia.com/v1beta1"}, []),
    "gpu-channel-kind-named": ("gpu", {"apiVersion": "resource.nvidia.com/v1beta1",
                                       "kind": "ComputeDomainChannelConfig", "domainID": "d"}, ["gpu"]),
    "gpu-channel-kind-requestless": ("gpu", {"apiVersion": "resource.nvidia.com/v1beta1",
                                             "kind": "ComputeDomainChannelConfig", "domainID": "d"}, []),
    "mig-empty": ("mig", dict(MIG), []),
    "mig-ts": ("mig", dict(MIG, sharing={"strategy": "TimeSlicing"}), []),
    "mig-ts-config-not-for-mig": ("mig", dict(MIG, sharing={"strategy": "TimeSlicing",
                                                            "timeSlicingConfig": {"interval": "Long"}}), []),
    "mig-mps-percentage-120": ("mig", dict(MIG, sharing={"strategy": "MPS",
                                                         "mpsConfig": {"defaultActiveThreadPercentage": 120}}), []),
    "mig-gpu-config-named": ("mig", gpu_config(), ["mig"]),
}

# Configs the webhook refuses although a prepare accepts them: README.md "Admission", Differences.
# A request-less config of the other driver's kind applies to no device at prepare (nothing reads
# it); the webhook refuses it as a config that cannot take effect.
ONLY_WEBHOOK_REFUSES = {"gpu-channel-kind-requestless"}


def validate(corpus):
    """{name: refused?} from `nvdractl validate` over one ResourceClaim per config."""
    docs = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name},
             "spec": {"devices": {"requests": [{"name": DEVICES[dev][0],
                                                "exactly": {"deviceClassName": CLASSES[dev]}}],
                                  "config": [dict({"opaque": {"driver": GPU, "parameters": params}},
                                                  **({"requests": reqs} if reqs else {}))]}}}
            for name, (dev, params, reqs) in corpus.items()]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        yaml.safe_dump_all(docs, f)
        f.flush()
        out = subprocess.run([os.path.join(BINARY_DIR, "agent", "ctl", "nvdractl"), "validate", "-f", f.name,
                              "--feature-gates", GATES], capture_output=True, text=True, env=clean_env(), timeout=60)
    if out.returncode not in (0, 1):
        raise AssertionError(f"nvdractl validate failed: {out.stderr}")
    refused = {line.split("(ResourceClaim ", 1)[1].split(")", 1)[0] for line in out.stdout.splitlines()}
    return {name: name in refused for name in corpus}


@needs_upstream
class AdmissionParity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.webhook = validate(CORPUS)
        node = upstream_node("dgx-a100", gates=GATES + ",HostManagedIMEXDaemon=true",
                             args=["--imex-mode=hostManaged", "--controller=false"])
        cls.prepare = {}
        try:
            for which in ("nvdra", "upstream"):
                side = UpstreamPlugins(node, drivers=(GPU,), gates={GPU: GATES}) if which == "upstream" else node
                side.start()
                try:
                    plugin = side.plugins[GPU]
                    for name, (dev, params, reqs) in CORPUS.items():
                        claim = node.allocate(f"{which}-{name}", [DEVICES[dev]], [(reqs, params)])
                        answer = plugin.prepare([claim])[claim.uid]
                        cls.prepare[which, name] = answer["error"]
                        if not answer["error"]:
                            plugin.unprepare([claim])
                finally:
                    side.stop()
                    if which == "upstream":
                        side.cleanup()
        finally:
            node.cleanup()

    def test_every_config_upstream_refuses_at_prepare_the_webhook_refuses(self):
        for name in CORPUS:
            with self.subTest(config=name):
                if self.prepare["upstream", name]:
                    self.assertTrue(self.webhook[name], f"upstream refuses: {self.prepare['upstream', name]}")

    def test_every_config_nvdras_prepare_refuses_the_webhook_refuses(self):
        for name in CORPUS:
            with self.subTest(config=name):
                if self.prepare["nvdra", name]:
                    self.assertTrue(self.webhook[name], f"nvdra's prepare refuses: {self.prepare['nvdra', name]}")

    def test_what_only_the_webhook_refuses_is_a_listed_difference(self):
        only = {n for n in CORPUS if self.webhook[n] and not self.prepare["upstream", n]}
        self.assertEqual(only, ONLY_WEBHOOK_REFUSES)
        only_nvdra = {n for n in CORPUS if self.webhook[n] and not self.prepare["nvdra", n]}
        self.assertEqual(only_nvdra, ONLY_WEBHOOK_REFUSES)

    def test_the_corpus_has_both_verdicts(self):
        self.assertGreaterEqual(sum(self.webhook.values()), 10)
        self.assertGreaterEqual(sum(not v for v in self.webhook.values()), 5)


if __name__ == "__main__":
    exit_without_upstream()
    unittest.main()
