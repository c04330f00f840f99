"""The API-server double: HTTPS + bearer tokens, resource CRUD with resourceVersions, chunked watch
streams, strict validation against the real OpenAPI documents plus LIMITS.md, and fault injection
driven by the test through /admin/* (see README.md)."""
import json
import os
import sys
import random
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from .admission import WebhookCaller
from .custom_resources import CUSTOM_RESOURCES, CrdValidator
from .event_validation import check_event
from .store import Store
from .validation import (SchemaValidator, check_metadata_name, check_resource_slice, default_gates,
                         document_path, drop_disabled_fields)

# plural -> (group/version, kind, namespaced)
RESOURCES = {
    ("resource.k8s.io/v1", "resourceslices"): ("ResourceSlice", False),
    ("resource.k8s.io/v1", "resourceclaims"): ("ResourceClaim", True),
    ("resource.k8s.io/v1", "resourceclaimtemplates"): ("ResourceClaimTemplate", True),
    ("resource.k8s.io/v1", "deviceclasses"): ("DeviceClass", False),
    ("v1", "nodes"): ("Node", False),
    ("coordination.k8s.io/v1", "leases"): ("Lease", True),
    ("events.k8s.io/v1", "events"): ("Event", True),
}
RESOURCES.update(CUSTOM_RESOURCES)  # the ComputeDomain CRD (custom_resources.py)
WRITE_METHODS = ("POST", "PUT", "PATCH", "DELETE")
DEBUG = bool(os.environ.get("NVDRA_DOUBLE_DEBUG"))


def status(code, reason, message, details=None):
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


def field_value(obj, path):
    for part in path.split("."):
        if not isinstance(obj, dict):
            return ""
        obj = obj.get(part, "")
    return "" if obj is None else str(obj)


def selector_matcher(selector):
    terms = []
    for term in filter(None, (selector or "").split(",")):
        if "!=" in term:
            k, v = term.split("!=", 1)
            terms.append((k, v, False))
        else:
            k, v = term.split("=", 1)
            terms.append((k.rstrip("="), v, True))
    return lambda obj: all((field_value(obj, k) == v) == eq for k, v, eq in terms)


def _selector_terms(selector):
    """The comma-separated terms of a labelSelector, commas inside a set's parentheses kept."""
    terms, depth, term = [], 0, ""
    for ch in selector or "":
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            terms.append(term.strip())
            term = ""
        else:
            term += ch
    terms.append(term.strip())
    return [t for t in terms if t]


def label_matcher(selector):
    """A labelSelector as the API server reads it: `k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`, `k notin (a,b)`."""
    checks = []
    for term in _selector_terms(selector):
        words = term.split(None, 1)
        if len(words) == 2 and words[1].split(None, 1)[0] in ("in", "notin"):
            op, values = words[1].split(None, 1)
            wanted = {v.strip() for v in values.strip().strip("()").split(",")}
            checks.append(lambda labels, k=words[0], w=wanted, neg=op == "notin":
                          (labels.get(k) in w) != neg if k in labels else neg)
        elif "!=" in term:
            k, v = term.split("!=", 1)
            checks.append(lambda labels, k=k.strip(), v=v.strip(): labels.get(k) != v)
        elif "=" in term:
            k, v = term.split("=", 1)
            checks.append(lambda labels, k=k.rstrip("=").strip(), v=v.lstrip("=").strip(): labels.get(k) == v)
        elif term.startswith("!"):
            checks.append(lambda labels, k=term[1:].strip(): k not in labels)
        else:
            checks.append(lambda labels, k=term: k in labels)
    return lambda obj: all(c((obj.get("metadata") or {}).get("labels") or {}) for c in checks)


def query_matcher(query):
    """fieldSelector and labelSelector of a list or watch, both applying."""
    fields, labels = selector_matcher(query.get("fieldSelector")), label_matcher(query.get("labelSelector"))
    return lambda obj: fields(obj) and labels(obj)


class ApiServerDouble:
    """Start with start(); the URL, CA and a token are then in .url, .ca_file, .tokens."""

    def __init__(self, cert_file, key_file, tokens=("test-token",), version=(1, 35), chunking="mixed",
                 bookmark_interval=1.0, seed=None, gates=None, openapi_version=None, webhooks=None,
                 webhook_services=None, claim_versions=()):
        """openapi_version: the version whose OpenAPI documents are served and validated against, where
        they differ from `version` (which /version reports and whose limits apply): e.g. a 1.36 server
        with 1.35's documents, one that does not serve list-valued attributes.
        webhooks: ValidatingWebhookConfiguration objects, called as kube-apiserver calls them
        (admission.py); webhook_services: {(namespace, name, port): "https://host:port"} for their
        clientConfig.service. claim_versions: more resource.k8s.io versions (e.g. "v1beta2") whose
        resourceclaims and resourceclaimtemplates are served, each stored apart (no conversion)."""
        self.store = Store()
        self.resources = dict(RESOURCES)
        for served in claim_versions:
            self.resources[(f"resource.k8s.io/{served}", "resourceclaims")] = ("ResourceClaim", True)
            self.resources[(f"resource.k8s.io/{served}", "resourceclaimtemplates")] = ("ResourceClaimTemplate", True)
        self.admission = WebhookCaller(webhooks, webhook_services) if webhooks else None
        self.doc_minor = (openapi_version or version)[1]
        self.validator = SchemaValidator(self.doc_minor)
        # The simulated server's feature gates that clear fields on write (validation.default_gates).
        self.gates = dict(default_gates(version[1]), **(gates or {}))
        self.crd_validator = CrdValidator(self.validator._defs["coordination.k8s.io/v1"])
        self.tokens = set(tokens)
        self.version = version
        self.chunking = chunking              # event | split | coalesce | mixed
        self.bookmark_interval = bookmark_interval
        self.rng = random.Random(seed)
        self.faults = []                      # dicts: method, resource, name, status, count, retry_after, drop
        self.requests = []                    # log of handled requests
        self.rejections = []                  # validation failures sent back
        self.watch_410_as_http = False        # False: 200 + ERROR event (what the real server does)
        self.path_prefix = ""                 # served under a proxy's prefix, e.g. "/k8s/clusters/c-abc"
        self.hang_release = threading.Event()  # "hang" faults hold their request until this is set
        self.cut_mid_event = 0                # the next N watch writes stop halfway through an event
        self.connections = set()              # open client sockets (an outage closes them all)
        self.connections_accepted = 0         # TLS connections so far: the request log's "connection"
        self.ssl_ctx = None
        self.fixed_port = 0                   # the port kept across outages (outage.py)
        self.lock = threading.Lock()
        self.log_cond = threading.Condition(self.lock)
        self.cert_file, self.key_file = cert_file, key_file
        self.httpd = None
        self.thread = None

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self, host="127.0.0.1", port=0):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert_file, self.key_file)
        self.ssl_ctx = ctx
        self.hang_release.clear()
        double = self

        class Handler(ApiHandler):
            server_double = double

        class Server(ThreadingHTTPServer):
            # socketserver's default listen backlog is 5: a client opening its connection pool at
            # once (the agent opens up to 8) lost SYNs and waited a 1 s TCP retransmit.
            request_queue_size = 128

        self.httpd = Server((host, port), Handler)
        self.httpd.daemon_threads = True
        # Clients that give up mid-handshake (cancelled, shut down) are normal here: no traceback.
        self.httpd.handle_error = lambda request, address: None
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True, do_handshake_on_connect=False)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.fixed_port = self.port
        return self

    @property
    def port(self):
        return self.httpd.server_address[1] if self.httpd else self.fixed_port

    @property
    def url(self):
        return f"https://127.0.0.1:{self.port}"

    def stop(self):
        self.hang_release.set()
        if self.httpd:
            self.store.drop_watches()
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    # ---- test controls (also reachable over /admin/*) ---------------------------------------
    def add_fault(self, method, resource, status_code=500, count=1, retry_after=None, name=None, drop=False,
                  hang=False, lose_response=False):
        """hang: the request is read and never answered (until hang_release is set or the double stops).
        lose_response: the request is carried out, then the connection drops instead of the answer."""
        with self.lock:
            self.faults.append(dict(method=method, resource=resource, name=name, status=status_code, count=count,
                                    retry_after=retry_after, drop=drop, hang=hang, lose_response=lose_response))

    def take_fault(self, method, resource, name):
        with self.lock:
            for f in self.faults:
                if f["count"] > 0 and f["method"] in (method, "*") and f["resource"] in (resource, "*") \
                        and f["name"] in (None, name):
                    f["count"] -= 1
                    return dict(f)
        return None

    def log_request(self, entry):
        with self.log_cond:
            self.requests.append(entry)
            self.log_cond.notify_all()

    def wait_for_requests(self, predicate, timeout):
        """Blocks until predicate(request log) holds, woken by each logged request; returns the log, or
        raises TimeoutError with it."""
        end = time.monotonic() + timeout
        with self.log_cond:
            while not predicate(self.requests):
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"request log condition not met within {timeout} s: {self.requests}")
                self.log_cond.wait(left)
            return list(self.requests)

    def request_log(self):
        with self.lock:
            return list(self.requests)

    def writes(self):
        return [r for r in self.request_log() if r["method"] in WRITE_METHODS and not r["path"].startswith("/admin")]

    def reset_requests(self):
        with self.lock:
            self.requests = []

    def put_object(self, obj):
        """Seeds an object (Node, ResourceClaim with status) after validating it."""
        gv, kind = obj["apiVersion"], obj["kind"]
        plural = next(p for (g, p), (k, _) in self.resources.items() if g == gv and k == kind)
        problems = (self.validate_write(gv, kind, obj) if self.crd_validator.handles(gv, kind)
                    else self.validator.validate(gv, kind, obj))
        if problems:
            raise ValueError(f"seed object {kind} is invalid: {problems}")
        ns = obj["metadata"].get("namespace", "")
        existing = self.store.get(f"{gv}/{plural}", ns, obj["metadata"]["name"])
        if existing:
            obj["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            return self.store.update(f"{gv}/{plural}", ns, obj["metadata"]["name"], obj)[0]
        return self.store.create(f"{gv}/{plural}", ns, obj)

    def objects(self, gv, plural, selector=""):
        return self.store.list(f"{gv}/{plural}", "", selector_matcher(selector))[0]

    def wait_for_objects(self, gv, plural, predicate, timeout):
        """Blocks until predicate(objects) holds, re-checked at each write the store records; returns the
        objects, or raises TimeoutError with the last ones seen."""
        end = time.monotonic() + timeout
        with self.store.cond:
            while True:
                items = self.objects(gv, plural)
                if predicate(items):
                    return items
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{gv} {plural}: condition not met within {timeout} s; have {items}")
                self.store.cond.wait(left)

    def delete_matching(self, gv, plural, selector=""):
        """What kubelet does at its start: DeleteCollection of the node's slices."""
        for obj in self.objects(gv, plural, selector):
            meta = obj["metadata"]
            self.store.delete(f"{gv}/{plural}", meta.get("namespace", ""), meta["name"])

    def validate_write(self, gv, kind, obj, old=None):
        if self.crd_validator.handles(gv, kind):
            return self.crd_validator.validate(gv, kind, obj) or check_metadata_name(obj)
        if kind == "ResourceSlice":
            drop_disabled_fields(obj, self.gates, self.doc_minor)
        problems = self.validator.validate(gv, kind, obj)
        if not problems and kind == "ResourceSlice":
            problems = check_resource_slice(obj, self.version[1], old)
        elif not problems and kind == "Event":
            problems = check_event(obj, old)
        elif not problems:
            problems = check_metadata_name(obj)
        return problems


class ApiHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_double = None

    def log_message(self, fmt, *args):  # quiet: the request log is kept in memory
        pass

    def setup(self):
        try:
            # As a real API server: no Nagle delay between a response's header and body writes.
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.request.do_handshake()
        except (ssl.SSLError, OSError):
            self.request.close()
            raise
        with self.server_double.lock:
            self.server_double.connections.add(self.request)
            self.server_double.connections_accepted += 1
            self.connection_id = self.server_double.connections_accepted
        super().setup()

    def finish(self):
        with self.server_double.lock:
            self.server_double.connections.discard(self.request)
        try:
            super().finish()
        except OSError:
            pass

    # ---- plumbing ----------------------------------------------------------------------------
    def send_json(self, code, body, headers=None):
        data = json.dumps(body).encode()
        self.last_status = code
        if getattr(self, "lose_response", False):
            self.lose_response = False
            self._entry["lost_response"] = True
            self.log_now()
            self.drop()
            return
        self.log_now()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def read_body(self):
        """The request body, read once: an unread body would be parsed as the next request."""
        if not hasattr(self, "_body"):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            try:
                self._body = json.loads(raw) if raw else None
            except ValueError:
                self._body = raw.decode(errors="replace")
        return self._body

    def do_GET(self):
        self.dispatch("GET")

    def do_POST(self):
        self.dispatch("POST")

    def do_PUT(self):
        self.dispatch("PUT")

    def do_PATCH(self):
        self.dispatch("PATCH")

    def do_DELETE(self):
        self.dispatch("DELETE")

    def dispatch(self, method):
        d = self.server_double
        if d.httpd is None:  # down (outage.go_down): this connection is about to be cut; answer nothing
            self.close_connection = True
            return
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        self.last_status = 0
        self._entry = {"method": method, "path": url.path, "query": query,
                       "user_agent": self.headers.get("User-Agent", ""), "connection": self.connection_id}
        if hasattr(self, "_body"):
            del self._body  # keep-alive: the handler object serves the next request too
        self.read_body()
        if DEBUG:
            print(f"double: {method} {self.path}", file=sys.stderr, flush=True)
        prefix = d.path_prefix
        try:
            if prefix and url.path.startswith(prefix + "/"):
                url = url._replace(path=url.path[len(prefix):])
                self._entry["path"] = url.path
                self._entry["prefixed"] = True
            elif prefix and not url.path.startswith("/admin/"):
                self.send_json(404, status(404, "NotFound", f"{url.path} is outside the proxy prefix {prefix}"))
                return
            if url.path.startswith("/admin/"):
                from .admin import handle_admin
                handle_admin(self, d, method, url.path, query)
                return
            auth = self.headers.get("Authorization", "")
            if not auth.startswith("Bearer ") or auth[7:] not in d.tokens:
                self.send_json(401, status(401, "Unauthorized", "Unauthorized"))
                return
            if url.path.startswith("/openapi/v3"):
                self.send_openapi(d, url.path)
                return
            if url.path == "/version":
                self.send_json(200, {"major": str(d.version[0]), "minor": str(d.version[1]),
                                     "gitVersion": f"v{d.version[0]}.{d.version[1]}.0"})
                return
            from .rest import handle_rest
            handle_rest(self, d, method, url.path, query)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True
        finally:
            self.log_now()

    def send_openapi(self, d, path):
        """/openapi/v3 (the index) and /openapi/v3/apis/resource.k8s.io/v1: the served version's document,
        which is how a client learns the fields this server has."""
        gv = "resource.k8s.io/v1"
        if path == "/openapi/v3":
            self.send_json(200, {"paths": {f"apis/{gv}": {
                "serverRelativeURL": f"/openapi/v3/apis/{gv}?hash=v1.{d.doc_minor}"}}})
            return
        if path == f"/openapi/v3/apis/{gv}":
            with open(document_path(d.doc_minor, gv), "rb") as f:
                body = f.read()
            self.last_status = 200
            self.log_now()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_json(404, status(404, "NotFound", f"{path} not found"))

    def log_now(self):
        """Logs this request once, with its status, before the client can read the answer: a test that
        reads /admin/requests right after its call returned must find the call there."""
        entry, self._entry = getattr(self, "_entry", None), None
        if entry is not None:
            self.server_double.log_request({**entry, "status": self.last_status, "time": time.time()})

    def drop(self):
        """Ends the connection abruptly (no terminating chunk, no TLS close_notify)."""
        try:
            self.request.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True
