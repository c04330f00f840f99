"""A kubelet double speaking the real gRPC protocol over the plugins' unix sockets.

It discovers plugins the way kubelet's plugin watcher does (every unix socket under the registration
directory, subdirectories included, names starting with '.' ignored), calls GetInfo with kubelet's
1 s deadline, chooses the DRA service from the plugin's list in the plugin's order, then reports
NotifyRegistrationStatus. A registered Plugin then drives NodePrepareResources /
NodeUnprepareResources (v1 or v1beta1) and the resource-health stream (v1 or v1alpha1)."""
import contextlib
import os
import stat
import threading
import time
from dataclasses import dataclass, field

import grpc

from kubelet_double import stubs
from kubelet_double.wakeups import Wakeups

KNOWN_DRA = ("v1.DRAPlugin", "v1beta1.DRAPlugin")
KNOWN_HEALTH = ("v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth")  # kubelet 1.37's own order
CALL_TIMEOUT = 45.0  # kubelet's deadline for prepare/unprepare

_pb = None


def pb():
    global _pb
    if _pb is None:
        _pb = stubs.load()
    return _pb


@dataclass(frozen=True)
class Claim:
    namespace: str
    name: str
    uid: str

    @staticmethod
    def parse(text):
        """'namespace/name/uid' -> Claim."""
        parts = text.split("/")
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"claim {text!r}: expected namespace/name/uid")
        return Claim(*parts)


class RegistrationError(Exception):
    pass


def find_sockets(directory):
    """Every unix socket kubelet's plugin watcher would consider, sorted."""
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            path = os.path.join(root, name)
            try:
                if not name.startswith(".") and stat.S_ISSOCK(os.lstat(path).st_mode):
                    found.append(path)
            except FileNotFoundError:
                pass
    return sorted(found)


@dataclass
class Plugin:
    name: str
    endpoint: str
    supported_versions: list
    registration_socket: str
    dra_version: str = ""
    health_version: str = ""
    registered_at: float = 0.0  # time.time() when NotifyRegistrationStatus(true) returned (benches)
    _channel: object = field(default=None, repr=False)

    def channel(self):
        if self._channel is None:
            self._channel = grpc.insecure_channel("unix:" + self.endpoint)
        return self._channel

    def close(self):
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def _dra(self, version):
        version = version or self.dra_version
        module = {"v1": "dra_v1", "v1beta1": "dra_v1beta1"}[version.split(".")[0]]
        msgs, svc = pb()[module]
        return msgs, svc.DRAPluginStub(self.channel())

    @staticmethod
    def _claims(msgs, claims):
        return [msgs.Claim(namespace=c.namespace, name=c.name, uid=c.uid) for c in claims]

    def prepare(self, claims, version=None, timeout=CALL_TIMEOUT):
        """NodePrepareResources; returns {uid: {"error": str, "devices": [dict]}}. RPC errors raise grpc.RpcError."""
        msgs, stub = self._dra(version)
        reply = stub.NodePrepareResources(msgs.NodePrepareResourcesRequest(claims=self._claims(msgs, claims)),
                                          timeout=timeout)
        out = {}
        for uid, entry in reply.claims.items():
            devices = []
            for d in entry.devices:
                device = {"request_names": list(d.request_names), "pool_name": d.pool_name,
                          "device_name": d.device_name, "cdi_device_ids": list(d.cdi_device_ids)}
                if hasattr(d, "share_id") and d.HasField("share_id"):
                    device["share_id"] = d.share_id
                devices.append(device)
            out[uid] = {"error": entry.error, "devices": devices}
        return out

    def prepare_future(self, claims, version=None, timeout=CALL_TIMEOUT):
        """Starts NodePrepareResources without waiting; returns a grpc future (cancel() = kubelet giving up)."""
        msgs, stub = self._dra(version)
        return stub.NodePrepareResources.future(
            msgs.NodePrepareResourcesRequest(claims=self._claims(msgs, claims)), timeout=timeout)

    def unprepare(self, claims, version=None, timeout=CALL_TIMEOUT):
        """NodeUnprepareResources; returns {uid: error string ("" = success)}."""
        msgs, stub = self._dra(version)
        reply = stub.NodeUnprepareResources(msgs.NodeUnprepareResourcesRequest(claims=self._claims(msgs, claims)),
                                            timeout=timeout)
        return {uid: entry.error for uid, entry in reply.claims.items()}

    def watch_health(self, version=None):
        """Opens NodeWatchResources; yields reports, each a list of device dicts. Cancel with .cancel()."""
        version = version or self.health_version or "v1alpha1.DRAResourceHealth"
        module = {"v1": "health_v1", "v1alpha1": "health_v1alpha1"}[version.split(".")[0]]
        msgs, svc = pb()[module]
        stream = svc.DRAResourceHealthStub(self.channel()).NodeWatchResources(msgs.NodeWatchResourcesRequest())
        return HealthStream(stream, msgs)


class HealthStream:
    def __init__(self, stream, msgs):
        self._stream = stream
        self._msgs = msgs

    def __iter__(self):
        for report in self._stream:
            yield [{"pool_name": d.device.pool_name, "device_name": d.device.device_name,
                    "health": self._msgs.HealthStatus.Name(d.health), "last_updated_time": d.last_updated_time,
                    "health_check_timeout_seconds": d.health_check_timeout_seconds, "message": d.message}
                   for d in report.devices]

    def cancel(self):
        self._stream.cancel()


class KubeletDouble:
    """Watches one registration directory; registers the plugins that appear there."""

    def __init__(self, registrar_dir):
        self.registrar_dir = registrar_dir
        self.plugins = {}  # registration socket -> Plugin
        self._inflight = {}  # registration socket -> the thread registering it
        self._errors = []  # rejections raised by those threads, for the caller
        self._wakeups = Wakeups(registrar_dir)  # a new socket, a registration done: no poll's delay

    def get_info(self, socket_path, channel=None):
        msgs, svc = pb()["registration"]
        with contextlib.ExitStack() as stack:
            ch = channel or stack.enter_context(grpc.insecure_channel("unix:" + socket_path))
            info = svc.RegistrationStub(ch).GetInfo(msgs.InfoRequest(), timeout=1.0)
        return Plugin(name=info.name, endpoint=info.endpoint or socket_path,
                      supported_versions=list(info.supported_versions), registration_socket=socket_path)

    def notify(self, plugin, registered, error="", channel=None):
        """NotifyRegistrationStatus as kubelet sends it (5 s deadline). A rejection is answered with an error."""
        msgs, svc = pb()["registration"]
        with contextlib.ExitStack() as stack:
            ch = channel or stack.enter_context(grpc.insecure_channel("unix:" + plugin.registration_socket))
            try:
                svc.RegistrationStub(ch).NotifyRegistrationStatus(
                    msgs.RegistrationStatus(plugin_registered=registered, error=error), timeout=5.0)
            except grpc.RpcError:
                if registered:
                    raise

    def register(self, socket_path, notify=True, reject=None):
        """kubelet's sequence for one socket: GetInfo, validate, NotifyRegistrationStatus, over one
        connection as kubelet's plugin watcher dials once per socket. Returns the Plugin."""
        with grpc.insecure_channel("unix:" + socket_path) as ch:
            plugin = self.get_info(socket_path, ch)
            reason = reject
            if plugin_type_error := self._validate(plugin):
                reason = plugin_type_error
            if reason is not None:
                if notify:
                    self.notify(plugin, False, reason, channel=ch)
                raise RegistrationError(f"{plugin.name} at {socket_path}: {reason}")
            if notify:
                self.notify(plugin, True, channel=ch)
        plugin.registered_at = time.time()
        self.plugins[socket_path] = plugin
        return plugin

    @staticmethod
    def _validate(plugin):
        if not plugin.supported_versions:
            return "RegisterPlugin error -- plugin validation failed: empty list of supported gRPC services"
        known = [v for v in plugin.supported_versions if v in KNOWN_DRA]  # the plugin's order decides
        if not known:
            return f"RegisterPlugin error -- plugin validation failed: none of {plugin.supported_versions} is supported"
        plugin.dra_version = known[0]
        plugin.health_version = next((h for h in KNOWN_HEALTH if h in plugin.supported_versions), "")
        return None

    def register_new(self, notify=True):
        """One pass of kubelet's plugin watcher: starts registering every socket that is neither
        registered nor being registered, each on a thread of its own, as kubelet's operation executor
        runs one goroutine per plugin (so a slow plugin never holds up another). A rejection is
        raised here, by the pass after it happened."""
        for path in find_sockets(self.registrar_dir):
            if path in self.plugins or path in self._inflight:
                continue
            thread = threading.Thread(target=self._register_one, args=(path, notify), daemon=True)
            self._inflight[path] = thread
            thread.start()
        if self._errors:
            raise self._errors.pop(0)

    def _register_one(self, path, notify):
        try:
            self.register(path, notify=notify)
        except grpc.RpcError:
            pass  # not listening yet, or going away: kubelet retries too (the next pass)
        except Exception as e:
            self._errors.append(e)
        finally:
            self._inflight.pop(path, None)
            self._wakeups.notify()

    def _join_inflight(self):
        for thread in list(self._inflight.values()):
            thread.join()

    def watch_until(self, done, timeout=20.0, notify=True, what="condition", wake=()):
        """Registers sockets as they appear, as kubelet's watcher does for as long as it runs, until
        done() is true; raises TimeoutError naming `what`. `wake`: descriptors (sockets) whose input
        may make done() true, checked as soon as it arrives."""
        deadline = time.monotonic() + timeout
        while True:
            self.register_new(notify=notify)
            if done():
                # Every socket seen has had its registration finished, and a rejection is raised,
                # before the caller goes on.
                self._join_inflight()
                if self._errors:
                    raise self._errors.pop(0)
                return
            if time.monotonic() > deadline:
                self._join_inflight()
                raise TimeoutError(f"{what} not within {timeout}s; sockets seen: {find_sockets(self.registrar_dir)}")
            # kubelet's watcher is woken by inotify and registers a socket within a millisecond; so is
            # this one (Wakeups), and by a registration finishing or `wake`'s input. The poll is the
            # fallback; at 20 ms the double's phase, not the plugin, decided start-up figures
            # (bench/scenario/versus_upstream.py, issue #16). A pass is a listdir and a select.
            self._wakeups.wait(0.002, wake)

    def wait_for_plugins(self, names, timeout=20.0, notify=True):
        """Registers sockets as they appear until a plugin of every name in `names` is registered.
        Returns {name: Plugin}; raises TimeoutError naming what is missing."""
        wanted = set(names)

        def got():
            return {p.name: p for p in self.plugins.values() if p.name in wanted}

        self.watch_until(lambda: wanted <= set(got()), timeout, notify,
                         what=f"plugins {sorted(wanted)} registered")
        return got()

    def close(self):
        self._join_inflight()
        self._wakeups.close()
        for plugin in self.plugins.values():
            plugin.close()
