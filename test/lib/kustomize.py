"""Renders the shipped kustomize overlays (contrib/kubernetes/overlays/<name>) with `kubectl kustomize`,
as an operator would apply them. Without kubectl a test is skipped, except in CI (CI=true), where the
manifests must be checked: there a missing kubectl fails the test (prerequisites.py)."""
import os
import shutil
import subprocess

import yaml

from prerequisites import require

SOURCE_DIR = os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
KUSTOMIZE_DIR = os.path.join(SOURCE_DIR, "contrib", "kubernetes")
OVERLAYS = ("gpu-only", "gpu-host-managed-imex", "gpu-passthrough", "gpu-driver-managed-imex")
# gpu-only plus the admission webhook: their DaemonSet is gpu-only's (test/systemd/webhook_manifests_test.py).
WEBHOOK_OVERLAYS = ("gpu-webhook-cert-manager", "gpu-webhook-secret")


def require_kubectl():
    """A skip without kubectl, or a failure in CI (CI=true), where the manifests must be rendered."""
    require(shutil.which("kubectl"), "kubectl (with kustomize) on PATH", "needed to render contrib/kubernetes")


def render(overlay):
    """The overlay's objects, as `kubectl kustomize` renders them."""
    require_kubectl()
    out = subprocess.run(["kubectl", "kustomize", os.path.join(KUSTOMIZE_DIR, "overlays", overlay)],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"kubectl kustomize {overlay} failed: {out.stderr}")
    return [o for o in yaml.safe_load_all(out.stdout) if o]


def daemonset(objs):
    return next(o for o in objs if o["kind"] == "DaemonSet")


def agent_container(objs):
    return daemonset(objs)["spec"]["template"]["spec"]["containers"][0]
