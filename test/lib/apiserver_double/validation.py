"""Validation of written objects the way kube-apiserver does it: the real OpenAPI v3 schema with
strict field validation (unknown fields rejected), then the limits of LIMITS.md that the schema only
states in prose. Each problem is (field path, message); the server turns them into a Status."""
import copy
import json
import os
import re

REFERENCE = os.environ.get(
    "NVDRA_OPENAPI_DIR",
    os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared", "reference", "k8s-openapi"))

DOCS = {
    "v1": "api__v1_openapi.json",
    "resource.k8s.io/v1": "apis__resource.k8s.io__v1_openapi.json",
    "resource.k8s.io/v1beta2": "apis__resource.k8s.io__v1beta2_openapi.json",
    "coordination.k8s.io/v1": "apis__coordination.k8s.io__v1_openapi.json",
}

# The documents of each served minor version, where they differ from the 1.35 set above (SOURCE.txt):
# 1.34 has its own resource.k8s.io/v1; 1.36 has reconstructed resource documents; nothing was
# obtained for 1.37, which is served as 1.36's documents (plus the 1.36 rules below) — an assumption.
VERSION_DOCS = {
    34: {"resource.k8s.io/v1": "v1.34/apis__resource.k8s.io__v1_openapi.json"},
    35: {},
    36: {"resource.k8s.io/v1": "v1.36/apis__resource.k8s.io__v1_openapi.reconstructed.json",
         "resource.k8s.io/v1beta2": "v1.36/apis__resource.k8s.io__v1beta2_openapi.reconstructed.json"},
}
SUPPORTED_MINORS = (34, 35, 36, 37)


def documents_for(minor):
    """group/version -> file (relative to the reference folder) for a server of 1.<minor>."""
    if minor not in SUPPORTED_MINORS:
        raise ValueError(f"the double serves Kubernetes 1.34 to 1.37, not 1.{minor}")
    return dict(DOCS, **VERSION_DOCS[min(minor, 36)])


def document_path(minor, group_version):
    return os.path.join(_find_openapi_dir(), documents_for(minor)[group_version])


# Feature gates of the simulated API server that clear fields on write when off (LIMITS.md
# "Feature-gated fields are silently dropped"), with their default per minor version.
def default_gates(minor):
    return {"DRAListTypeAttributes": False,          # alpha in 1.36 (and, as far as known, 1.37)
            "DRAConsumableCapacity": minor >= 36}     # alpha in 1.34/1.35, beta (on) from 1.36


LIST_KINDS = ("bools", "ints", "strings", "versions")


def drop_disabled_fields(obj, gates, doc_minor=36):
    """What the resourceslice strategy does to a new object when a gate is off: the fields go, the
    write succeeds. List-valued attributes go as a whole (they hold no other value). A server whose
    documents (doc_minor) lack list-valued attributes has no such gate: they stay, for strict
    validation to refuse as unknown fields."""
    for dev in (obj.get("spec") or {}).get("devices") or []:
        if doc_minor >= 36 and not gates.get("DRAListTypeAttributes"):
            attrs = dev.get("attributes") or {}
            for key in [k for k, v in attrs.items() if isinstance(v, dict) and any(x in v for x in LIST_KINDS)]:
                del attrs[key]
        if not gates.get("DRAConsumableCapacity"):
            dev.pop("allowMultipleAllocations", None)
            for cap in (dev.get("capacity") or {}).values():
                if isinstance(cap, dict):
                    cap.pop("requestPolicy", None)


_SUFFIXES = {"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60,
             "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}


def quantity(text):
    """Integer quantities with a binary or decimal suffix (all nvdra writes); None otherwise."""
    m = re.match(r"^([0-9]+)([A-Za-z]*)$", text or "")
    if not m or m.group(2) not in _SUFFIXES:
        return None
    return int(m.group(1)) * _SUFFIXES[m.group(2)]


def _check_request_policy(f, key, cap, p):
    pol = cap["requestPolicy"]
    value = quantity(cap.get("value"))
    if "validValues" in pol and "validRange" in pol:
        p.append((f"{f}.capacity[{key}].requestPolicy", "only one of validValues or validRange"))
    if "default" not in pol and ("validValues" in pol or "validRange" in pol):
        p.append((f"{f}.capacity[{key}].requestPolicy.default", "Required value"))
        return
    default = quantity(pol.get("default"))
    rng = pol.get("validRange")
    if rng is not None:
        lo, hi, step = quantity(rng.get("min")), quantity(rng.get("max")), quantity(rng.get("step"))
        if lo is None:
            p.append((f"{f}.capacity[{key}].requestPolicy.validRange.min", "Required value"))
            return
        if value is not None and lo > value:
            p.append((f"{f}.capacity[{key}].requestPolicy.validRange.min", "must be less than or equal to the capacity value"))
        if hi is not None and value is not None and hi > value:
            p.append((f"{f}.capacity[{key}].requestPolicy.validRange.max", "must be less than or equal to the capacity value"))
        if default is not None and (default < lo or (hi is not None and default > hi)):
            p.append((f"{f}.capacity[{key}].requestPolicy.default", "must be within validRange"))
        if step is not None:
            if step <= 0:
                p.append((f"{f}.capacity[{key}].requestPolicy.validRange.step", "must be positive"))
                return
            if hi is not None and hi % step:
                p.append((f"{f}.capacity[{key}].requestPolicy.validRange.max", "must be a multiple of step"))
            if default is not None and default % step:
                p.append((f"{f}.capacity[{key}].requestPolicy.default", "must be a multiple of step"))
            if value is not None and lo + step > value:
                p.append((f"{f}.capacity[{key}].requestPolicy.validRange.step", "min + step must not exceed the value"))

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
C_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")


def _find_openapi_dir():
    for cand in (REFERENCE, "/work/shared/reference/k8s-openapi"):
        if os.path.isdir(cand):
            return cand
    raise FileNotFoundError("k8s-openapi reference folder not found; set NVDRA_OPENAPI_DIR")


def _strict(node):
    """Rewrites refs to #/definitions and closes every object that lists its properties."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key.startswith("x-kubernetes") or key == "description":
                continue
            if key == "$ref":
                out[key] = value.replace("#/components/schemas/", "#/definitions/")
            elif key == "properties":
                out[key] = {k: _strict(v) for k, v in value.items()}
            else:
                out[key] = _strict(value)
        if "properties" in out and "additionalProperties" not in out:
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


class SchemaValidator:
    """One validator per kind, built from the real documents of one server version."""

    def __init__(self, minor=35):
        import jsonschema  # Debian's python3-jsonschema
        self._jsonschema = jsonschema
        self._defs = {}
        base = _find_openapi_dir()
        for gv, fname in documents_for(minor).items():
            path = os.path.join(base, fname)
            if not os.path.exists(path):
                continue
            with open(path) as f:
                doc = json.load(f)
            self._defs[gv] = {k: _strict(v) for k, v in doc["components"]["schemas"].items()}
        # events.k8s.io/v1: the Event schemas from the real document (schemas/events.k8s.io_v1.json
        # says which), over the core document that defines the meta and ObjectReference types they use.
        if "v1" in self._defs:
            with open(os.path.join(os.path.dirname(__file__), "schemas", "events.k8s.io_v1.json")) as f:
                extra = json.load(f)["schemas"]
            self._defs["events.k8s.io/v1"] = dict(self._defs["v1"], **{k: _strict(v) for k, v in extra.items()})
        # resource.k8s.io/v1beta1 claims and claim templates: their schemas from the real document
        # (schemas/resource.k8s.io_v1beta1.json says which), over the v1 document's meta and core types.
        if "resource.k8s.io/v1" in self._defs:
            with open(os.path.join(os.path.dirname(__file__), "schemas", "resource.k8s.io_v1beta1.json")) as f:
                extra = json.load(f)["schemas"]
            self._defs["resource.k8s.io/v1beta1"] = dict(self._defs["resource.k8s.io/v1"],
                                                         **{k: _strict(v) for k, v in extra.items()})
        self._cache = {}
        self._memo = {}  # (gv, kind, the object without _SCHEMA_NEUTRAL metadata) -> problems

    def schema_name(self, group_version, kind):
        group, _, version = group_version.rpartition("/")
        prefix = {"": "io.k8s.api.core", "resource.k8s.io": "io.k8s.api.resource",
                  "coordination.k8s.io": "io.k8s.api.coordination", "events.k8s.io": "io.k8s.api.events"}.get(group)
        return f"{prefix}.{version}.{kind}" if prefix else None

    def validate(self, group_version, kind, obj):
        name = self.schema_name(group_version, kind)
        defs = self._defs.get(group_version)
        if not name or not defs or name not in defs:
            return [("kind", f"no schema for {group_version} {kind}")]
        key = (group_version, kind)
        if key not in self._cache:
            schema = {"$ref": f"#/definitions/{name}", "definitions": defs}
            self._cache[key] = self._jsonschema.Draft7Validator(schema)
        # Schema checks are a pure function of the object, and benches write the same slices again
        # and again (4 ms of Python each for a 13-device slice: more than the agent's whole publish).
        # The name, identity and version fields are plain strings to the schema: only their types
        # are in the key.
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        memo_key = None
        if isinstance(meta, dict):
            memo_key = (key, json.dumps(dict(obj, metadata={k: type(v).__name__ if k in _SCHEMA_NEUTRAL else v
                                                               for k, v in meta.items()}),
                                        sort_keys=True))
            if memo_key in self._memo:
                return list(self._memo[memo_key])
        problems = []
        for err in sorted(self._cache[key].iter_errors(obj), key=lambda e: list(e.absolute_path)):
            path = _path(err.absolute_path)
            if err.validator == "additionalProperties":
                extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
                for field in extra:
                    problems.append((_join(path, field), f'strict decoding error: unknown field "{_join(path, field)}"'))
            else:
                problems.append((path or "<root>", err.message))
        if memo_key is not None:
            if len(self._memo) >= 512:
                self._memo.clear()
            self._memo[memo_key] = tuple(problems)
        return problems


# Metadata fields whose value never changes what the schema says (all plain strings or integers).
_SCHEMA_NEUTRAL = ("name", "resourceVersion", "uid", "creationTimestamp", "generation")


def _path(parts):
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (("." if out else "") + str(p))
    return out


def _join(path, field):
    return f"{path}.{field}" if path else field


def _dns_subdomain(value):
    return isinstance(value, str) and 0 < len(value) <= 253 and all(DNS_LABEL.match(p) for p in value.split("."))


def _qualified_name(name):
    domain, _, ident = name.rpartition("/")
    if domain and (len(domain) > 63 or not _dns_subdomain(domain.lower())):
        return False
    return bool(C_IDENT.match(ident)) and len(ident) <= 32


def _label_name(name):
    prefix, _, rest = name.rpartition("/")
    if prefix and not _dns_subdomain(prefix):
        return False
    return len(rest) <= 63 and bool(LABEL_NAME.match(rest))


def check_resource_slice(obj, minor, old=None):
    """LIMITS.md rules for ResourceSlice; `minor` is the simulated server's minor version."""
    p = []
    meta = obj.get("metadata", {})
    if "name" in meta and not _dns_subdomain(meta["name"]):
        p.append(("metadata.name", f'"{meta["name"]}" must be a DNS subdomain'))
    spec = obj.get("spec", {})
    driver = spec.get("driver", "")
    if not driver or len(driver) > 63 or not _dns_subdomain(driver.lower()):
        p.append(("spec.driver", f'"{driver}" must be a DNS subdomain of at most 63 characters'))
    pool = spec.get("pool", {})
    pname = pool.get("name", "")
    if not pname or len(pname) > 253 or not all(_dns_subdomain(s) for s in pname.split("/")):
        p.append(("spec.pool.name", f'"{pname}" must be DNS subdomains separated by "/", at most 253 characters'))
    if pool.get("resourceSliceCount", 0) <= 0:
        p.append(("spec.pool.resourceSliceCount", "must be greater than zero"))
    if pool.get("generation", 0) < 0:
        p.append(("spec.pool.generation", "must be greater than or equal to zero"))
    selectors = [k for k in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection") if spec.get(k)]
    if len(selectors) != 1:
        p.append(("spec", "exactly one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection is required"))
    if spec.get("nodeName") and not _dns_subdomain(spec["nodeName"]):
        p.append(("spec.nodeName", "must be a DNS subdomain"))
    devices = spec.get("devices") or []
    counters = spec.get("sharedCounters") or []

    def has_list(d):
        return any(isinstance(v, dict) and any(k in v for k in LIST_KINDS) for v in (d.get("attributes") or {}).values())
    # 1.36: ResourceSliceMaxDevicesWithAdvancedFeatures also counts list-type attributes.
    advanced = any(d.get("taints") or d.get("consumesCounters") or (minor >= 36 and has_list(d)) for d in devices)
    limit = 64 if (minor >= 35 and advanced) else 128
    if len(devices) > limit:
        p.append(("spec.devices", f"Too many: {len(devices)}: must have at most {limit} items"))
        return p
    if minor >= 35 and devices and counters:
        p.append(("spec", "only one of `sharedCounters` or `devices` is allowed"))
    if len(counters) > 8:
        p.append(("spec.sharedCounters", f"Too many: {len(counters)}: must have at most 8 items"))
    set_names = {}
    for i, cs in enumerate(counters):
        if not DNS_LABEL.match(cs.get("name", "")):
            p.append((f"spec.sharedCounters[{i}].name", "must be a DNS label"))
        cnt = cs.get("counters") or {}
        if not 1 <= len(cnt) <= 32:
            p.append((f"spec.sharedCounters[{i}].counters", "must have between 1 and 32 counters"))
        for cname in cnt:
            if not DNS_LABEL.match(cname):
                p.append((f"spec.sharedCounters[{i}].counters[{cname}]", "must be a DNS label"))
        set_names[cs.get("name")] = set(cnt)
    if minor < 35 and sum(len(s) for s in set_names.values()) > 32:
        p.append(("spec.sharedCounters", "at most 32 counters in total"))
    seen = set()
    for i, dev in enumerate(devices):
        f = f"spec.devices[{i}]"
        name = dev.get("name", "")
        if not DNS_LABEL.match(name) or len(name) > 63:
            p.append((f + ".name", f'"{name}" must be a DNS label'))
        if name in seen:
            p.append((f + ".name", f'Duplicate value: "{name}"'))
        seen.add(name)
        attrs, caps = dev.get("attributes") or {}, dev.get("capacity") or {}
        if len(attrs) + len(caps) > 32:
            p.append((f, "the total number of attributes and capacities must not exceed 32"))
        for key, val in attrs.items():
            if not _qualified_name(key):
                p.append((f"{f}.attributes[{key}]", "must be a qualified name"))
            kinds = [k for k in ("bool", "int", "string", "version") + (LIST_KINDS if minor >= 36 else ()) if k in val]
            if len(kinds) != 1:
                p.append((f"{f}.attributes[{key}]", "exactly one value must be specified"))
            for lk in LIST_KINDS:
                if lk in val:
                    if not isinstance(val[lk], list) or not val[lk]:
                        p.append((f"{f}.attributes[{key}].{lk}", "must be a non-empty list"))
                        continue
                    if lk in ("strings", "versions") and any(len(x) > 64 for x in val[lk]):
                        p.append((f"{f}.attributes[{key}].{lk}", "each value may not be more than 64 bytes"))
                    if lk == "versions" and not all(SEMVER.match(x) for x in val[lk]):
                        p.append((f"{f}.attributes[{key}].{lk}", "each value must be semantic version 2.0.0"))
            if "string" in val and len(val["string"]) > 64:
                p.append((f"{f}.attributes[{key}].string", "may not be more than 64 bytes"))
            if "version" in val and (len(val["version"]) > 64 or not SEMVER.match(val["version"])):
                p.append((f"{f}.attributes[{key}].version", f'"{val["version"]}" must be semantic version 2.0.0'))
        if minor >= 36:
            values = sum(len(v[k]) if k in LIST_KINDS else 1
                         for v in attrs.values() if isinstance(v, dict) for k in v)
            if values > 48:
                p.append((f + ".attributes", f"Too many: {values}: at most 48 attribute values per device"))
        for key, val in caps.items():
            if not _qualified_name(key):
                p.append((f"{f}.capacity[{key}]", "must be a qualified name"))
            if "requestPolicy" in val and not dev.get("allowMultipleAllocations"):
                p.append((f"{f}.capacity[{key}].requestPolicy", "Forbidden without allowMultipleAllocations"))
            elif "requestPolicy" in val:
                _check_request_policy(f, key, val, p)
        taints = dev.get("taints") or []
        if len(taints) > (16 if minor >= 35 else 4):
            p.append((f + ".taints", "Too many taints"))
        effects = ("NoSchedule", "NoExecute", "None") if minor >= 35 else ("NoSchedule", "NoExecute")
        for j, t in enumerate(taints):
            if not _label_name(t.get("key", "")):
                p.append((f"{f}.taints[{j}].key", "must be a label name"))
            if t.get("effect") not in effects:
                p.append((f"{f}.taints[{j}].effect", f'Unsupported value: "{t.get("effect")}": supported values: '
                          + ", ".join(f'"{e}"' for e in effects)))
        cc = dev.get("consumesCounters") or []
        if len(cc) > 2:
            p.append((f + ".consumesCounters", "Too many: must have at most 2 items"))
        for j, c in enumerate(cc):
            if not DNS_LABEL.match(c.get("counterSet", "")):
                p.append((f"{f}.consumesCounters[{j}].counterSet", "must be a DNS label"))
            if not 1 <= len(c.get("counters") or {}) <= 32:
                p.append((f"{f}.consumesCounters[{j}].counters", "must have between 1 and 32 counters"))
            if minor < 35:
                known = set_names.get(c.get("counterSet"))
                if known is None or not set(c.get("counters") or {}) <= known:
                    p.append((f"{f}.consumesCounters[{j}]", "must reference a counterSet/counter defined in the "
                              "ResourceSlice sharedCounters"))
    if old is not None:
        ospec = old.get("spec", {})
        for field in ("driver", "nodeName"):
            if ospec.get(field) != spec.get(field):
                p.append((f"spec.{field}", "field is immutable"))
        if ospec.get("pool", {}).get("name") != pool.get("name"):
            p.append(("spec.pool.name", "field is immutable"))
    return p


def check_metadata_name(obj):
    meta = obj.get("metadata", {})
    if "name" in meta and not _dns_subdomain(meta["name"]):
        return [("metadata.name", f'"{meta["name"]}" must be a DNS subdomain')]
    return []


def deep_copy(obj):
    return copy.deepcopy(obj)
