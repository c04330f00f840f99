"""REST verbs of the double: get, list, watch (chunked), create, update, patch (merge and strategic merge
of plain fields, as Event series need), delete, deletecollection."""
import json
import time

from .custom_resources import STATUS_SUBRESOURCE, merge_for_subresource
from .admission import admission_request
from .server import query_matcher, status


def parse_path(path):
    """('/apis/g/v' | '/api/v1') [/namespaces/ns] /plural [/name [/status]] -> (gv, ns, plural, name, sub)."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        gv, rest = parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        gv, rest = f"{parts[1]}/{parts[2]}", parts[3:]
    else:
        return None
    ns = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        ns, rest = rest[1], rest[2:]
    if len(rest) == 3 and rest[2] == "status":
        return gv, ns, rest[0], rest[1], "status"
    if len(rest) not in (1, 2):
        return None
    return gv, ns, rest[0], rest[1] if len(rest) == 2 else "", ""


def handle_rest(h, d, method, path, query):
    parsed = parse_path(path)
    if not parsed or (parsed[0], parsed[2]) not in d.resources:
        h.send_json(404, status(404, "NotFound", f"the server could not find the requested resource ({path})"))
        return
    gv, ns, plural, name, sub = parsed
    kind, _ = d.resources[(gv, plural)]
    if sub and (method != "PUT" or f"{gv}/{plural}" not in STATUS_SUBRESOURCE):
        h.send_json(405, status(405, "MethodNotAllowed", f"{method} is not allowed on {path}"))
        return
    resource = f"{gv}/{plural}"
    watch = query.get("watch") in ("1", "true")
    fault = d.take_fault("WATCH" if watch else method, plural, name or None)
    if fault and fault.get("lose_response"):
        h.lose_response, fault = True, None  # carried out below; send_json drops instead of answering
    if fault:
        if fault.get("hang"):
            h.log_now()  # logged with status 0: read, never answered
            d.hang_release.wait(600)
            h.drop()
            return
        if fault["drop"]:
            h.drop()
            return
        headers = {"Retry-After": str(fault["retry_after"])} if fault["retry_after"] is not None else {}
        reasons = {409: "Conflict", 410: "Expired", 429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable"}
        h.send_json(fault["status"], status(fault["status"], reasons.get(fault["status"], "InternalError"),
                                            f"injected fault for {method} {plural}"), headers)
        return
    if method == "GET" and watch:
        serve_watch(h, d, resource, ns, query)
    elif method == "GET" and name:
        obj = d.store.get(resource, ns, name)
        if obj is None:
            h.send_json(404, status(404, "NotFound", f'{plural}.{gv.split("/")[0]} "{name}" not found'))
        else:
            h.send_json(200, obj)
    elif method == "GET":
        items, rv = d.store.list(resource, ns, query_matcher(query))
        h.send_json(200, {"apiVersion": gv, "kind": kind + "List", "metadata": {"resourceVersion": rv}, "items": items})
    elif method == "POST" and not name:
        create(h, d, gv, kind, resource, ns, plural)
    elif method == "PUT" and name:
        update(h, d, gv, kind, resource, ns, plural, name, sub)
    elif method == "PATCH" and name and not sub:
        patch(h, d, gv, kind, resource, ns, plural, name)
    elif method == "DELETE" and name:
        body = h.read_body() or {}
        _, reason = d.store.delete(resource, ns, name, body.get("preconditions"))
        if reason == "NotFound":
            h.send_json(404, status(404, "NotFound", f'{plural} "{name}" not found'))
        elif reason == "Conflict":
            h.send_json(409, status(409, "Conflict", f'Precondition failed for {plural} "{name}"'))
        else:
            h.send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"})
    elif method == "DELETE":
        h.read_body()
        d.delete_matching(gv, plural, query.get("fieldSelector", ""))
        h.send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"})
    else:
        h.send_json(405, status(405, "MethodNotAllowed", f"{method} is not allowed on {path}"))


def reject(h, d, method, plural, problems):
    d.rejections.append({"method": method, "resource": plural, "problems": problems})
    unknown = [m for _, m in problems if m.startswith("strict decoding error")]
    if unknown:
        h.send_json(400, status(400, "BadRequest", "; ".join(unknown)))
        return
    msg = "; ".join(f"{f}: {m}" for f, m in problems)
    h.send_json(422, status(422, "Invalid", f"{plural} is invalid: {msg}",
                            {"causes": [{"field": f, "message": m} for f, m in problems]}))


def refused_by_webhook(h, d, operation, gv, plural, kind, ns, obj, old=None):
    """Validating admission after validation, before storing (as kube-apiserver); True when answered."""
    if d.admission is None:
        return False
    refusal = d.admission.review(admission_request(operation, gv, plural, kind, ns, obj, old))
    if refusal is not None:
        h.send_json(*refusal)
    return refusal is not None


def create(h, d, gv, kind, resource, ns, plural):
    obj = h.read_body()
    if not isinstance(obj, dict):
        h.send_json(400, status(400, "BadRequest", "body is not a JSON object"))
        return
    meta = obj.get("metadata", {})
    if ns and meta.get("namespace") not in (None, "", ns):
        h.send_json(400, status(400, "BadRequest", "the namespace of the provided object does not match the "
                                                   "namespace sent on the request"))
        return
    if ns and isinstance(meta, dict):
        meta["namespace"] = ns  # as the real server, before validation
    problems = d.validate_write(gv, kind, obj)
    if not problems and not meta.get("name") and not meta.get("generateName"):
        problems = [("metadata.name", "name or generateName is required")]
    if not problems and (obj.get("apiVersion") != gv or obj.get("kind") != kind):
        problems = [("kind", f"must be apiVersion {gv} kind {kind}")]
    if problems:
        reject(h, d, "POST", plural, problems)
        return
    if refused_by_webhook(h, d, "CREATE", gv, plural, kind, ns, obj):
        return
    stored = d.store.create(resource, ns, obj)
    if stored is None:
        h.send_json(409, status(409, "AlreadyExists", f'{plural} "{meta.get("name")}" already exists'))
    else:
        h.send_json(201, stored)


def update(h, d, gv, kind, resource, ns, plural, name, sub=""):
    obj = h.read_body()
    if not isinstance(obj, dict) or obj.get("metadata", {}).get("name") != name:
        h.send_json(400, status(400, "BadRequest", "metadata.name in the body does not match the URL"))
        return
    old = d.store.get(resource, ns, name)
    problems = d.validate_write(gv, kind, obj, old)
    if not problems:
        obj, problems = merge_for_subresource(resource, sub, old, obj)
    if problems:
        reject(h, d, "PUT", plural, problems)
        return
    if old is not None and refused_by_webhook(h, d, "UPDATE", gv, plural, kind, ns, obj, old):
        return
    stored, reason = d.store.update(resource, ns, name, obj)
    if reason == "NotFound":
        h.send_json(404, status(404, "NotFound", f'{plural} "{name}" not found'))
    elif reason == "Conflict":
        h.send_json(409, status(409, "Conflict", f'Operation cannot be fulfilled on {plural} "{name}": the object '
                                                 "has been modified; please apply your changes to the latest version "
                                                 "and try again"))
    else:
        h.send_json(200, stored)


PATCH_TYPES = ("application/strategic-merge-patch+json", "application/merge-patch+json")


def merge_patch(target, patch_obj):
    """RFC 7386 merge; for the plain (non-list) fields patched here a strategic merge patch is the same."""
    if not isinstance(patch_obj, dict):
        return patch_obj
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch_obj.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def patch(h, d, gv, kind, resource, ns, plural, name):
    body = h.read_body()
    ctype = (h.headers.get("Content-Type") or "").split(";")[0].strip()
    if ctype not in PATCH_TYPES:
        h.send_json(415, status(415, "UnsupportedMediaType", f"the body of the request was in an unknown format - "
                                                              f"accepted media types include: {', '.join(PATCH_TYPES)}"))
        return
    if not isinstance(body, dict):
        h.send_json(400, status(400, "BadRequest", "the patch is not a JSON object"))
        return
    old = d.store.get(resource, ns, name)
    if old is None:
        h.send_json(404, status(404, "NotFound", f'{plural}.{gv.split("/")[0]} "{name}" not found'))
        return
    obj = merge_patch(old, body)
    problems = d.validate_write(gv, kind, obj, old)
    if problems:
        reject(h, d, "PATCH", plural, problems)
        return
    if refused_by_webhook(h, d, "UPDATE", gv, plural, kind, ns, obj, old):
        return
    stored, reason = d.store.update(resource, ns, name, obj)
    if reason:
        h.send_json(409 if reason == "Conflict" else 404, status(409 if reason == "Conflict" else 404, reason,
                                                                 f'{plural} "{name}": {reason}'))
    else:
        h.send_json(200, stored)


def write_chunk(h, data):
    h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
    h.wfile.flush()


def send_events(h, d, lines):
    """Frames newline-terminated events into chunks per the double's chunking mode."""
    data = b"".join(lines)
    mode = d.chunking if d.chunking != "mixed" else d.rng.choice(["event", "split", "coalesce"])
    if mode == "coalesce" or not lines:
        pieces = [data] if data else []
    elif mode == "split":
        pieces, rest = [], data
        while rest:
            cut = d.rng.randint(1, max(1, len(rest)))
            pieces.append(rest[:cut])
            rest = rest[cut:]
    else:
        pieces = lines
    if d.cut_mid_event and data and b'"BOOKMARK"' not in lines[0]:
        with d.lock:
            cut, d.cut_mid_event = d.cut_mid_event > 0, max(0, d.cut_mid_event - 1)
        if cut:
            # Half of the first event, then the connection is gone: the client holds a partial line.
            write_chunk(h, lines[0][:max(1, len(lines[0]) // 2)])
            h.drop()
            raise ConnectionResetError("watch cut mid-event (test fault)")
    for p in pieces:
        write_chunk(h, p)


def event_line(etype, obj):
    return (json.dumps({"type": etype, "object": obj}) + "\n").encode()


def serve_watch(h, d, resource, ns, query):
    match = query_matcher(query)
    bookmarks = query.get("allowWatchBookmarks") == "true"
    deadline = time.time() + min(float(query.get("timeoutSeconds") or 1800), 1800)
    rv = query.get("resourceVersion", "")
    store = d.store
    with store.cond:
        epoch = store.watch_epoch
        initial = []
        if rv in ("", "0"):
            items, rv = store.list(resource, ns, match)
            initial = [event_line("ADDED", o) for o in items]
        since = int(rv)
        expired = store.events_after(resource, since) is None
    if expired and d.watch_410_as_http:
        h.send_json(410, status(410, "Expired", f"too old resource version: {since} ({store.compacted})"))
        return
    h.last_status = 200
    h.log_now()
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    if expired:
        send_events(h, d, [event_line("ERROR", status(410, "Expired",
                                                      f"too old resource version: {since} ({store.compacted})"))])
        write_chunk(h, b"")
        return
    with store.cond:
        store.open_watches += 1  # /admin/watches: tests wait for a watch before dropping it
    try:
        send_events(h, d, initial)
        last_bookmark = time.time()
        while True:
            with store.cond:
                if store.watch_epoch != epoch:
                    h.drop()
                    return
                events = store.events_after(resource, since)
                if events is None:
                    h.drop()
                    return
                if not events:
                    store.cond.wait(timeout=0.2)
                    # Cut while waiting: nothing recorded after drop_watches() may go out on this
                    # stream (a test that cuts, then writes, relies on the client seeing the cut).
                    if store.watch_epoch != epoch:
                        h.drop()
                        return
                    events = store.events_after(resource, since) or []
                head = store.revision
            lines = []
            for rev, etype, obj in events:
                since = rev
                if (not ns or obj["metadata"].get("namespace") == ns) and match(obj):
                    lines.append(event_line(etype, obj))
            if lines:
                send_events(h, d, lines)
            now = time.time()
            if bookmarks and now - last_bookmark >= d.bookmark_interval:
                since = max(since, head)
                kind = d.resources[tuple(resource.rsplit("/", 1))][0]
                send_events(h, d, [event_line("BOOKMARK", {"kind": kind, "apiVersion": resource.rsplit("/", 1)[0],
                                                           "metadata": {"resourceVersion": str(since)}})])
                last_bookmark = now
            if now >= deadline:
                write_chunk(h, b"")
                return
    finally:
        with store.cond:
            store.open_watches -= 1
