"""Validates Kubernetes objects against the real OpenAPI v3 documents in
shared/reference/k8s-openapi/, the way `kubectl apply --validate=strict` would: types, required
fields, enums, and unknown fields (the documents leave objects open, so this closes every schema
that lists its properties, unless it says x-kubernetes-preserve-unknown-fields)."""
import copy
import json
import os

import jsonschema

OPENAPI_DIR = os.environ.get("NVDRA_OPENAPI_DIR") or os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "reference", "k8s-openapi"))


def _close(node):
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node \
                and not node.get("x-kubernetes-preserve-unknown-fields"):
            node["additionalProperties"] = False
        for value in node.values():
            _close(value)
    elif isinstance(node, list):
        for value in node:
            _close(value)


class OpenApiValidator:
    def __init__(self, files):
        self._docs = []
        self._by_gvk = {}
        for name in files:
            with open(os.path.join(OPENAPI_DIR, name)) as f:
                doc = json.load(f)
            _close(doc)
            index = len(self._docs)
            self._docs.append((name, doc))
            for schema_name, schema in doc["components"]["schemas"].items():
                for gvk in schema.get("x-kubernetes-group-version-kind", []):
                    api = gvk["version"] if not gvk["group"] else f'{gvk["group"]}/{gvk["version"]}'
                    self._by_gvk.setdefault((api, gvk["kind"]), (index, schema_name))

    def covers(self, obj):
        return (obj.get("apiVersion"), obj.get("kind")) in self._by_gvk

    def validate(self, obj):
        """Problems with `obj`, each naming the field path; [] when valid."""
        index, schema_name = self._by_gvk[(obj["apiVersion"], obj["kind"])]
        return self.validate_as(obj, schema_name, index)

    def validate_as(self, value, schema_name, index=None):
        for i, (_, doc) in enumerate(self._docs):
            if (index is None or i == index) and schema_name in doc["components"]["schemas"]:
                break
        else:
            raise KeyError(f"no schema {schema_name} in {[n for n, _ in self._docs]}")
        schema = copy.copy(doc["components"]["schemas"][schema_name])
        resolver = jsonschema.RefResolver.from_schema(doc)
        validator = jsonschema.Draft4Validator(schema, resolver=resolver)
        return [f'{"/".join(str(p) for p in e.absolute_path) or "<root>"}: {e.message}'
                for e in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))]
