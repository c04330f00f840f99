"""kubelet's gRPC probe (k8s.io/kubernetes pkg/probe/grpc): grpc.health.v1.Health/Check on
host:port with the probe's `service`, within the probe's timeoutSeconds (default 1 s), on a fresh
connection each time. Only SERVING is a success."""
import grpc

from kubelet_double import stubs

_health = None


def _pb():
    global _health
    if _health is None:
        _health = stubs.load()["grpc_health_v1"]
    return _health


def grpc_probe(port, service="", host="127.0.0.1", timeout=1.0):
    """One probe as kubelet runs it. Returns ("success" | "failure", message)."""
    msgs, svc = _pb()
    target = f"{host}:{port}"
    with grpc.insecure_channel(target) as ch:
        try:
            reply = svc.HealthStub(ch).Check(msgs.HealthCheckRequest(service=service), timeout=timeout)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.UNIMPLEMENTED:
                return "failure", f"this server does not implement the grpc health protocol ({target})"
            if e.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
                return "failure", f"timeout: health rpc did not complete within {timeout}s"
            return "failure", f"error: health rpc probe failed: {e.code().name}: {e.details()}"
    name = msgs.HealthCheckResponse.ServingStatus.Name(reply.status)
    if name != "SERVING":
        return "failure", f'service unhealthy (responded with "{name}")'
    return "success", ""


def check(port, service="", host="127.0.0.1", timeout=1.0):
    """The status name Check answers ("SERVING", "NOT_SERVING", …); RPC errors raise grpc.RpcError."""
    msgs, svc = _pb()
    with grpc.insecure_channel(f"{host}:{port}") as ch:
        reply = svc.HealthStub(ch).Check(msgs.HealthCheckRequest(service=service), timeout=timeout)
    return msgs.HealthCheckResponse.ServingStatus.Name(reply.status)


class HealthWatch:
    """Health/Watch on one service: iterate for status names, one per change; cancel() to stop."""

    def __init__(self, port, service="", host="127.0.0.1", timeout=60.0):
        """`timeout` bounds the whole stream (it then ends with DEADLINE_EXCEEDED)."""
        msgs, svc = _pb()
        self._msgs = msgs
        self._channel = grpc.insecure_channel(f"{host}:{port}")
        self._stream = svc.HealthStub(self._channel).Watch(msgs.HealthCheckRequest(service=service), timeout=timeout)

    def __iter__(self):
        for reply in self._stream:
            yield self._msgs.HealthCheckResponse.ServingStatus.Name(reply.status)

    def next_until(self, wanted, what=""):
        """Reads updates until one equals `wanted`; returns the statuses seen. The stream's end raises."""
        seen = []
        try:
            for status in self:
                seen.append(status)
                if status == wanted:
                    return seen
        except grpc.RpcError as e:
            raise AssertionError(f"health watch {what}: {e.code().name} before {wanted}; saw {seen}") from None
        raise AssertionError(f"health watch {what} ended before {wanted}; saw {seen}")

    def cancel(self):
        self._stream.cancel()
        self._channel.close()
