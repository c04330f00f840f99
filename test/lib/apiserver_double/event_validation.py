"""kube-apiserver's validation of events.k8s.io/v1 Events, for the double (split from validation.py)."""
from .validation import LABEL_NAME, _dns_subdomain, check_metadata_name

EVENT_IMMUTABLE = ("action", "reason", "reportingController", "reportingInstance", "regarding", "related", "type",
                   "eventTime", "note")


def check_event(obj, old=None):
    """kube-apiserver's rules for a new events.k8s.io/v1 Event (ValidateEventCreate) and, on update, that
    only the series changes (ValidateEventUpdate)."""
    p = check_metadata_name(obj)
    if not obj.get("eventTime"):
        p.append(("eventTime", "Required value"))
    if obj.get("type") not in ("Normal", "Warning"):
        p.append(("type", f'Unsupported value: "{obj.get("type")}": supported values: "Normal", "Warning"'))
    for field in ("reportingController", "reportingInstance", "action", "reason"):
        value = obj.get(field) or ""
        if not value:
            p.append((field, "Required value"))
        elif len(value.encode()) > 128:
            p.append((field, "can have at most 128 characters"))
    if obj.get("reportingController") and not _qualified_name_any(obj["reportingController"]):
        p.append(("reportingController", "must be a qualified name"))
    if len((obj.get("note") or "").encode()) > 1024:
        p.append(("note", "can have at most 1024 bytes"))
    series = obj.get("series")
    if series is not None:
        if series.get("count", 0) < 2:
            p.append(("series.count", "should be at least 2"))
        if not series.get("lastObservedTime"):
            p.append(("series.lastObservedTime", "Required value"))
    ns = obj.get("metadata", {}).get("namespace", "")
    rns = (obj.get("regarding") or {}).get("namespace", "")
    if rns and rns != ns:
        p.append(("regarding.namespace", "does not match event.namespace"))
    if not rns and ns not in ("default", "kube-system"):
        p.append(("metadata.namespace", "a cluster-scoped object's Event goes in default or kube-system"))
    if old is not None:
        for field in EVENT_IMMUTABLE:
            if old.get(field) != obj.get(field):
                p.append((field, "field is immutable"))
    return p


def _qualified_name_any(name):
    prefix, _, rest = name.rpartition("/")
    if prefix and not _dns_subdomain(prefix):
        return False
    return 0 < len(rest) <= 63 and bool(LABEL_NAME.match(rest))
