"""Custom resources of the double: the ComputeDomain and ComputeDomainClique CRDs
(resource.nvidia.com/v1beta1) as the repo ships them in contrib/, served like kube-apiserver serves a CRD with a status subresource:
  * every write is validated against the CRD's openAPIV3Schema (unknown fields rejected, enums,
    required fields) and metadata against the real ObjectMeta schema; structural defaults applied;
  * `spec` is immutable (the CRD's `self == oldSelf` rule);
  * PUT on the object keeps the stored status, PUT on `/status` keeps everything but the status.
Finalizers and deletionTimestamp are handled for every resource by the store (store.py)."""
import copy
import os

import yaml

from .validation import _path, _strict

HERE = os.path.dirname(os.path.abspath(__file__))
CRD_FILES = {
    ("resource.nvidia.com/v1beta1", "computedomains"): os.path.join(
        HERE, "..", "..", "..", "contrib", "kubernetes", "components", "compute-domain",
        "resource.nvidia.com_computedomains.yaml"),
    # upstream's CRD byte for byte (shared/reference/upstream-crds): the objects daemons write, read
    # by the compute-domain driver in driver-managed mode.
    ("resource.nvidia.com/v1beta1", "computedomaincliques"): os.path.join(
        HERE, "..", "..", "..", "contrib", "kubernetes", "components", "compute-domain-driver-managed",
        "resource.nvidia.com_computedomaincliques.yaml"),
}

# (group/version, plural) -> (kind, namespaced), merged into server.RESOURCES.
CUSTOM_RESOURCES = {
    ("resource.nvidia.com/v1beta1", "computedomains"): ("ComputeDomain", True),
    ("resource.nvidia.com/v1beta1", "computedomaincliques"): ("ComputeDomainClique", True),
}
# Resources whose status is only written through the /status subresource.
STATUS_SUBRESOURCE = {"resource.nvidia.com/v1beta1/computedomains"}
IMMUTABLE_SPEC = {"resource.nvidia.com/v1beta1/computedomains"}


def _load_crd_schema(path, version):
    with open(path) as f:
        crd = next(d for d in yaml.safe_load_all(f) if d)
    for v in crd["spec"]["versions"]:
        if v["name"] == version:
            return v["schema"]["openAPIV3Schema"]
    raise ValueError(f"{path} has no version {version}")


def apply_defaults(schema, obj):
    """Fills `default` values of absent properties, as the API server does for structural schemas."""
    if not isinstance(obj, dict) or schema.get("type") != "object":
        return
    for name, sub in schema.get("properties", {}).items():
        if name not in obj and "default" in sub:
            obj[name] = copy.deepcopy(sub["default"])
        if name in obj:
            apply_defaults(sub, obj[name])


class CrdValidator:
    """Validates custom objects; `meta_defs` are the built-in definitions holding ObjectMeta."""

    def __init__(self, meta_defs):
        import jsonschema
        self._validators = {}
        self._schemas = {}
        for (gv, plural), path in CRD_FILES.items():
            kind = CUSTOM_RESOURCES[(gv, plural)][0]
            schema = _load_crd_schema(path, gv.rsplit("/", 1)[1])
            self._schemas[(gv, kind)] = schema
            strict = _strict(schema)
            strict["properties"]["metadata"] = {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
            strict["definitions"] = meta_defs
            self._validators[(gv, kind)] = jsonschema.Draft7Validator(strict)

    def handles(self, gv, kind):
        return (gv, kind) in self._validators

    def validate(self, gv, kind, obj):
        apply_defaults(self._schemas[(gv, kind)], obj)
        problems = []
        for err in sorted(self._validators[(gv, kind)].iter_errors(obj), key=lambda e: list(e.absolute_path)):
            path = _path(err.absolute_path)
            if err.validator == "additionalProperties":
                extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
                for field in extra:
                    full = f"{path}.{field}" if path else field
                    problems.append((full, f'strict decoding error: unknown field "{full}"'))
            else:
                problems.append((path or "<root>", err.message))
        return problems


def merge_for_subresource(resource, subresource, old, obj):
    """What a PUT may change: the status on /status, everything but the status on the object.
    Returns (object to store, problems)."""
    if old is None:
        return obj, []
    if resource in IMMUTABLE_SPEC and subresource != "status" and obj.get("spec") != old.get("spec"):
        return obj, [("spec", "Invalid value: \"object\": A computeDomain.spec is immutable")]
    if resource not in STATUS_SUBRESOURCE:
        return obj, []
    if subresource == "status":
        merged = copy.deepcopy(old)
        merged["status"] = copy.deepcopy(obj.get("status"))
        if merged["status"] is None:
            del merged["status"]
        merged["metadata"]["resourceVersion"] = obj.get("metadata", {}).get("resourceVersion", "")
        return merged, []
    merged = copy.deepcopy(obj)
    if "status" in old:
        merged["status"] = copy.deepcopy(old["status"])
    else:
        merged.pop("status", None)
    return merged, []
