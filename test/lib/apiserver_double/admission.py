"""Validating admission webhooks, called as kube-apiserver calls them (opt-in: only a double given
ValidatingWebhookConfiguration objects calls anything). A CREATE or UPDATE that passed validation and
matches a webhook's rules is POSTed as an admission.k8s.io/v1 AdmissionReview over HTTPS, trusting only
the configuration's caBundle, within its timeoutSeconds; a call that fails answers as failurePolicy says
(Fail: 500 "failed calling webhook"; Ignore: allowed); a denial answers with the webhook's Status as
k8s.io/apiserver's webhook errors.ToStatusErr shapes it (code at least 400, message prefixed with
`admission webhook "<name>" denied the request`).

The double has no admissionregistration.k8s.io OpenAPI document to validate the configurations against,
so they are given to the constructor (`webhooks=`), not written over the API; every field here has an
effect, and a field it does not implement (namespaceSelector, objectSelector, matchConditions, ...) is
refused by name. A clientConfig.service is reached at the URL the test maps it to (`webhook_services=`,
there is no cluster DNS); the webhook's certificate is checked against that URL's host."""
import base64
import http.client
import json
import ssl
import uuid
from urllib.parse import urlsplit

WEBHOOK_FIELDS = {"name", "admissionReviewVersions", "sideEffects", "failurePolicy", "timeoutSeconds",
                  "clientConfig", "rules"}
RULE_FIELDS = {"apiGroups", "apiVersions", "operations", "resources", "scope"}
CLIENT_FIELDS = {"url", "service", "caBundle"}


def _refuse_unknown(where, obj, allowed):
    extra = sorted(set(obj) - allowed)
    if extra:
        raise ValueError(f"{where}: the API double does not implement {', '.join(extra)} (allowed: "
                         f"{', '.join(sorted(allowed))})")


def check_configuration(config):
    """The webhooks of one ValidatingWebhookConfiguration, each checked; raises ValueError naming the field."""
    if config.get("apiVersion") != "admissionregistration.k8s.io/v1" or \
            config.get("kind") != "ValidatingWebhookConfiguration":
        raise ValueError("webhooks= takes admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration objects")
    hooks = config.get("webhooks") or []
    for i, hook in enumerate(hooks):
        where = f"{config['metadata']['name']}.webhooks[{i}]"
        _refuse_unknown(where, hook, WEBHOOK_FIELDS)
        _refuse_unknown(f"{where}.clientConfig", hook.get("clientConfig", {}), CLIENT_FIELDS)
        for j, rule in enumerate(hook.get("rules") or []):
            _refuse_unknown(f"{where}.rules[{j}]", rule, RULE_FIELDS)
        if "v1" not in hook.get("admissionReviewVersions", []):
            raise ValueError(f"{where}.admissionReviewVersions: the double sends admission.k8s.io/v1 only")
        if hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise ValueError(f"{where}.sideEffects: must be None or NoneOnDryRun")
        if hook.get("failurePolicy", "Fail") not in ("Fail", "Ignore"):
            raise ValueError(f"{where}.failurePolicy: must be Fail or Ignore")
        client = hook.get("clientConfig") or {}
        if ("url" in client) == ("service" in client):
            raise ValueError(f"{where}.clientConfig: exactly one of url or service is required")
        try:
            base64.b64decode(client.get("caBundle", ""), validate=True)
        except ValueError as e:
            raise ValueError(f"{where}.clientConfig.caBundle: not base64 ({e})") from e
    return hooks


def _matches(values, value):
    return "*" in values or value in values


def rule_matches(rule, operation, group, version, plural, namespaced):
    scope = rule.get("scope", "*")
    return (_matches(rule.get("operations", []), operation) and _matches(rule.get("apiGroups", []), group)
            and _matches(rule.get("apiVersions", []), version) and _matches(rule.get("resources", []), plural)
            and (scope == "*" or scope == ("Namespaced" if namespaced else "Cluster")))


class CallFailed(Exception):
    pass


def internal_error(message):
    """apierrors.NewInternalError, as the validating dispatcher answers a failed call under failurePolicy Fail."""
    return 500, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "message": f"Internal error occurred: {message}", "reason": "InternalError",
                 "details": {"causes": [{"message": message}]}, "code": 500}


def denial(name, result):
    """errors.ToStatusErr: the webhook's Status, code at least 400, the message naming the webhook."""
    result = dict(result or {})
    result.update(kind="Status", apiVersion="v1", metadata=result.get("metadata") or {})
    if int(result.get("code") or 0) < 400:
        result["code"] = 400
    if result.get("status") in (None, "", "Success"):
        result["status"] = "Failure"
    denied_by = f'admission webhook "{name}" denied the request'
    if result.get("message"):
        result["message"] = f"{denied_by}: {result['message']}"
    elif result.get("reason"):
        result["message"] = f"{denied_by}: {result['reason']}"
    else:
        result["message"] = f"{denied_by} without explanation"
    return result["code"], result


class WebhookCaller:
    """Holds the configurations; review() is called for each write that passed validation."""

    def __init__(self, configurations, service_urls=None):
        self.hooks = [h for c in configurations for h in check_configuration(c)]
        self.service_urls = dict(service_urls or {})
        self.reviews = []  # every AdmissionReview sent, with the answer: (review, response or error text)

    def url_of(self, client):
        if "url" in client:
            return client["url"]
        svc = client["service"]
        key = (svc["namespace"], svc["name"], svc.get("port", 443))
        if key not in self.service_urls:
            raise CallFailed(f"service {svc['namespace']}/{svc['name']}:{key[2]} is not mapped to a URL "
                             "(webhook_services=)")
        return self.service_urls[key] + svc.get("path", "")

    def review(self, request):
        """None when every matching webhook allows; else (http code, Status) to answer the client with."""
        gvr = request["resource"]
        namespaced = bool(request.get("namespace"))
        for hook in self.hooks:
            if not any(rule_matches(r, request["operation"], gvr["group"], gvr["version"], gvr["resource"],
                                    namespaced) for r in hook.get("rules") or []):
                continue
            body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "request": dict(request, uid=str(uuid.uuid4()))}
            try:
                response = self.call(hook, body)
            except CallFailed as e:
                self.reviews.append((body, str(e)))
                if hook.get("failurePolicy", "Fail") == "Ignore":
                    continue
                return internal_error(f'failed calling webhook "{hook["name"]}": {e}')
            self.reviews.append((body, response))
            if not response.get("allowed"):
                return denial(hook["name"], response.get("status"))
        return None

    def call(self, hook, body):
        client = hook["clientConfig"]
        url = urlsplit(self.url_of(client))
        if url.scheme != "https":
            raise CallFailed(f"{url.geturl()}: webhooks are called over https only")
        ctx = ssl.create_default_context(cadata=base64.b64decode(client["caBundle"]).decode() or None)
        conn = http.client.HTTPSConnection(url.hostname, url.port or 443, context=ctx,
                                           timeout=hook.get("timeoutSeconds", 10))
        try:
            conn.request("POST", (url.path or "/") + (f"?{url.query}" if url.query else ""), json.dumps(body),
                         {"Content-Type": "application/json", "Accept": "application/json"})
            answer = conn.getresponse()
            data = answer.read()
        except (OSError, ssl.SSLError, http.client.HTTPException) as e:
            raise CallFailed(f'failed to call webhook: Post "{url.geturl()}": {e}') from e
        finally:
            conn.close()
        if answer.status != 200:
            raise CallFailed(f"the server responded with HTTP {answer.status}")
        try:
            review = json.loads(data)
        except ValueError as e:
            raise CallFailed(f"received invalid webhook response: {e}") from e
        response = review.get("response") if isinstance(review, dict) else None
        if review.get("apiVersion") != "admission.k8s.io/v1" or review.get("kind") != "AdmissionReview" \
                or not isinstance(response, dict):
            raise CallFailed("received invalid webhook response: expected an admission.k8s.io/v1 AdmissionReview")
        if response.get("uid") != body["request"]["uid"]:
            raise CallFailed(f"expected response.uid=\"{body['request']['uid']}\", got \"{response.get('uid')}\"")
        return response


def admission_request(operation, gv, plural, kind, ns, obj, old=None):
    """The request part of an AdmissionReview for a write to <gv>/<plural> (uid added per call)."""
    group, _, version = gv.rpartition("/")
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": plural}
    options = "CreateOptions" if operation == "CREATE" else "UpdateOptions"
    request = {"kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
               "name": (obj.get("metadata") or {}).get("name", ""), "operation": operation,
               "userInfo": {"username": "nvdra-test", "groups": ["system:authenticated"]},
               "object": obj, "oldObject": old, "dryRun": False,
               "options": {"kind": options, "apiVersion": "meta.k8s.io/v1"}}
    if ns:
        request["namespace"] = ns
    return request
