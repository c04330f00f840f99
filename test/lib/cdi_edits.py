"""What a container runtime applies for a list of CDI device ids, read from the spec files of a CDI
root (JSON or YAML), in a form two implementations' specs can be compared in: the container edits of
every named device plus the spec-wide edits of each spec a device comes from, merged, with device
nodes keyed by container path (major/minor/mode left to the runtime, which reads them from the host
node) and mounts by container path."""
import os

import yaml


def load_specs(cdi_dir):
    specs = []
    for name in sorted(os.listdir(cdi_dir)) if os.path.isdir(cdi_dir) else []:
        if name.startswith(".") or not name.endswith((".json", ".yaml")):
            continue
        with open(os.path.join(cdi_dir, name)) as f:
            spec = yaml.safe_load(f)  # JSON is YAML
        spec["_file"] = name
        specs.append(spec)
    return specs


def _merge(out, edits):
    edits = edits or {}
    out["env"].update(edits.get("env") or [])
    for n in edits.get("deviceNodes") or []:
        out["deviceNodes"][n["path"]] = n.get("hostPath", n["path"])
    for m in edits.get("mounts") or []:
        out["mounts"][m["containerPath"]] = (m["hostPath"], tuple(m.get("options") or []))
    for h in edits.get("hooks") or []:
        out["hooks"].add((h["hookName"], h["path"], tuple(h.get("args") or []), tuple(h.get("env") or [])))


def claim_edits(cdi_dir, ids):
    """The merged edits of `ids`; raises KeyError naming an id no spec resolves (the runtime's error)."""
    specs = load_specs(cdi_dir)
    out = {"env": set(), "deviceNodes": {}, "mounts": {}, "hooks": set(), "files": set()}
    for cdi_id in ids:
        kind, _, name = cdi_id.partition("=")
        spec = next((s for s in specs if s.get("kind") == kind
                     and any(d["name"] == name for d in s.get("devices") or [])), None)
        if spec is None:
            raise KeyError(f"unresolvable CDI device {cdi_id}")
        device = next(d for d in spec["devices"] if d["name"] == name)
        _merge(out, device.get("containerEdits"))
        if spec["_file"] not in out["files"]:
            _merge(out, spec.get("containerEdits"))
            out["files"].add(spec["_file"])
    return out
