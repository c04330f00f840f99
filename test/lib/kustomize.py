"""Renders the shipped kustomize overlays (contrib/kubernetes/overlays/<name>) with `kubectl kustomize`,
as an operator would apply them. Without kubectl a test is skipped, except in CI (CI=true), where the
manifests must be checked: there a missing kubectl fails the test."""
import os
import shutil
import subprocess
import unittest

import yaml

SOURCE_DIR = os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
KUSTOMIZE_DIR = os.path.join(SOURCE_DIR, "contrib", "kubernetes")
OVERLAYS = ("gpu-only", "gpu-host-managed-imex", "gpu-driver-managed-imex")


def require_kubectl():
    """Raises SkipTest without kubectl, or AssertionError when CI=true (CI must render the manifests)."""
    if shutil.which("kubectl"):
        return
    if os.environ.get("CI") == "true":
        raise AssertionError("kubectl (with kustomize) is required in CI to render contrib/kubernetes; "
                             "it is missing from PATH")
    raise unittest.SkipTest("kubectl (with kustomize) is not installed")


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
