#!/usr/bin/env python3
"""Writes the hand-made seeds of test/fuzz/corpus/<target>/ (ok-… must be accepted, err-…
rejected; see test/fuzz/replay_main.cpp). The ok-encoded/ok-held/ok-three-states/… seeds of slice,
lease, checkpoint and compute_domain are our own encoders' output, written once; ld.so.cache seeds
come from make_ld_so_cache_seeds.py; machine profiles are copies of nvml/mock/profiles."""
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def dump(obj):
    return json.dumps(obj, separators=(",", ":"))


def claim(results, configs, uid="u-1"):
    return dump({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                 "metadata": {"name": "c1", "namespace": "ns", "uid": uid, "resourceVersion": "9"},
                 "status": {"allocation": {"devices": {"results": results, "config": configs}}}})


def result(request, device, driver="gpu.nvidia.com", **extra):
    return dict({"request": request, "driver": driver, "pool": "node-a", "device": device}, **extra)


def config(source, requests, params, driver="gpu.nvidia.com"):
    return {"source": source, "requests": requests, "opaque": {"driver": driver, "parameters": params}}


GPU_CONFIG = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
              "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}}

CD = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
      "metadata": {"name": "cd-1", "namespace": "team", "uid": "cd-uid-1", "resourceVersion": "5",
                   "finalizers": ["resource.nvidia.com/computeDomain"]},
      "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "cd-1-channel"}, "allocationMode": "Single"}},
      "status": {"status": "NotReady", "nodes": []}}

KUBECONFIG = """apiVersion: v1
kind: Config
current-context: ctx
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
contexts:
- name: ctx
  context: {cluster: c, user: u}
users:
- name: u
  user: {token: abc123}
"""

SEEDS = {
    "claim": {
        "ok-one-gpu.json": claim([result("gpu", "gpu-0")], [config("FromClaim", ["gpu"], GPU_CONFIG)]),
        "ok-subrequest-class-config.json": claim(
            [result("gpu/small", "gpu-0-mig-1g10gb-19-0", shareID="s-1", adminAccess=True),
             result("cd", "channel-0", driver="compute-domain.nvidia.com")],
            [config("FromClass", [], GPU_CONFIG), config("FromClaim", ["gpu", "other"], {}),
             config("FromClaim", [], {}, driver="other.example.com")]),
        "err-uid-mismatch.json": claim([result("gpu", "gpu-0")], [], uid="u-2"),
        "err-not-allocated.json": dump({"metadata": {"name": "c1", "namespace": "ns", "uid": "u-1"}, "status": {}}),
        "err-not-json.json": "{\"metadata\":",
    },
    "slice": {
        "err-spec-not-object.json": dump({"metadata": {"name": "s"}, "spec": []}),
        "err-not-json.json": "[1,",
    },
    "lease": {
        "ok-no-spec.json": dump({"metadata": {"name": "l", "namespace": "n"}}),
        "err-array.json": "[]",
        "err-not-json.json": "{",
    },
    "list_response": {
        "ok-two-items.json": dump({"kind": "ResourceClaimList", "apiVersion": "resource.k8s.io/v1",
                                   "metadata": {"resourceVersion": "42", "continue": "c2"},
                                   "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}),
        "ok-null-items.json": dump({"metadata": {"resourceVersion": "1"}, "items": None}),
        "err-item-not-object.json": dump({"metadata": {}, "items": [1]}),
        "err-metadata-not-object.json": dump({"metadata": "rv", "items": []}),
        "err-not-json.json": "{\"items\":[",
    },
    "server_version": {
        "ok-release.json": dump({"major": "1", "minor": "35", "gitVersion": "v1.35.2", "platform": "linux/amd64"}),
        "ok-distribution-plus.json": dump({"major": "1", "minor": "34+", "gitVersion": "v1.34.1-eks-1"}),
        "err-no-major.json": dump({"minor": "35"}),
        "err-major-not-string.json": dump({"major": 1, "minor": "35"}),
        "err-minor-too-large.json": dump({"major": "1", "minor": "99999999999", "gitVersion": "v1.99999999999.0"}),
        "err-array.json": "[]",
    },
    "openapi_index": {
        "ok-index.json": dump({"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=AB"},
                                         "apis/resource.k8s.io/v1": {
                                             "serverRelativeURL": "/openapi/v3/apis/resource.k8s.io/v1?hash=CD"}}}),
        "err-not-listed.json": dump({"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1"}}}),
        "err-no-url.json": dump({"paths": {"apis/resource.k8s.io/v1": {}}}),
        "err-no-paths.json": dump({"openapi": "3.0.0"}),
    },
    "served_fields": {
        "ok-entry.json": dump({"documentPath": "/openapi/v3/apis/resource.k8s.io/v1?hash=CD",
                               "listAttributes": False, "multipleAllocations": True}),
        "err-missing-field.json": dump({"documentPath": "/openapi/v3/apis/resource.k8s.io/v1?hash=CD",
                                        "listAttributes": False}),
        "err-extra-field.json": dump({"documentPath": "p", "listAttributes": False, "multipleAllocations": True,
                                      "x": 1}),
        "err-not-bool.json": dump({"documentPath": "p", "listAttributes": "no", "multipleAllocations": True}),
        "err-truncated.json": '{"documentPath":"p","listAttr',
    },
    "openapi_document": {
        "ok-1-36.json": dump({"components": {"schemas": {
            "io.k8s.api.resource.v1.Device": {"properties": {"name": {}, "allowMultipleAllocations": {}}},
            "io.k8s.api.resource.v1.DeviceAttribute": {"properties": {"int": {}, "ints": {}}}}}}),
        "ok-1-33.json": dump({"components": {"schemas": {
            "io.k8s.api.resource.v1.Device": {"properties": {"name": {}}},
            "io.k8s.api.resource.v1.DeviceAttribute": {"properties": {"int": {}}}}}}),
        "err-no-attribute-schema.json": dump({"components": {"schemas": {
            "io.k8s.api.resource.v1.Device": {"properties": {}}}}}),
        "err-no-properties.json": dump({"components": {"schemas": {"io.k8s.api.resource.v1.Device": {}}}}),
        "err-not-json.json": "{\"components\":",
    },
    "compute_domain": {
        "ok-compute-domain.json": dump(CD),
        "ok-deleting.json": dump(dict(CD, metadata=dict(CD["metadata"], deletionTimestamp="2025-01-02T03:04:05Z"))),
        "err-no-uid.json": dump({"metadata": {"name": "cd-1"}, "spec": {}}),
        "err-not-object.json": "\"cd\"",
    },
    "kubeconfig": {
        "ok-token.yaml": KUBECONFIG,
        "ok-ipv6-client-cert.yaml": KUBECONFIG.replace("https://127.0.0.1:6443", "https://[::1]:6443").replace(
            "{token: abc123}", "{client-certificate-data: LS0tLS1CRUdJTiBDRVJU, client-key-data: LS0tLS1CRUdJTiBLRVk=}"),
        "err-no-context.yaml": KUBECONFIG.replace("current-context: ctx", "current-context: other"),
        "err-bad-base64.yaml": KUBECONFIG.replace("insecure-skip-tls-verify: true", "certificate-authority-data: '%%%'"),
        "err-not-yaml.yaml": "clusters: [\n",
    },
    "agent_config": {
        "ok-options.yaml": "node-name: n1\ndrivers: [gpu]\nfeature-gates:\n  MPSSupport: true\n",
        "ok-empty.yaml": "",
        "err-not-a-mapping.yaml": "- node-name\n- n1\n",
        "err-nested.yaml": "node-name:\n  deeper: {x: 1}\n",
        "err-not-yaml.yaml": "a: [b\n",
    },
    "proc_devices": {
        "ok-proc-devices.txt": "Character devices:\n  1 mem\n195 nvidia-frontend\n234 nvidia-caps-imex-channels\n"
                               "235 nvidia-caps\n\nBlock devices:\n  8 sd\n",
        "ok-cap-access.txt": "DeviceFileMinor: 1\nDeviceFileMode: 256\nDeviceFileModify: 1\n",
        "err-block-only.txt": "Character devices:\n  1 mem\nBlock devices:\n235 nvidia-caps\n",
        "err-negative-major.txt": "Character devices:\n-235 nvidia-caps\n-234 nvidia-caps-imex-channels\n",
        "err-major-too-large.txt": "Character devices:\n4096 nvidia-caps\n99999999999 nvidia-caps-imex-channels\n",
        "err-minor-too-large.txt": "DeviceFileMinor: 1048576\n",
    },
    "machine_profile": {
        "err-not-a-mapping.yaml": "- gpus\n",
        "err-not-yaml.yaml": "gpus: [\n",
    },
}


def main(out):
    for target, seeds in SEEDS.items():
        os.makedirs(os.path.join(out, target), exist_ok=True)
        for name, text in seeds.items():
            with open(os.path.join(out, target, name), "w") as f:
                f.write(text)
    profiles = os.path.join(HERE, "..", "..", "nvml", "mock", "profiles")
    for name in sorted(os.listdir(profiles)):
        shutil.copy(os.path.join(profiles, name), os.path.join(out, "machine_profile", "ok-" + name))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus"))
