"""In-memory object store with resourceVersions and an event history for watches, like etcd behind
kube-apiserver: one global revision counter, compaction makes old revisions unavailable (410).
Finalizers as the real server: deleting an object that has some only sets deletionTimestamp; the
update that removes the last one deletes it."""
import bisect
import copy
import random
import threading
import time
import uuid

# k8s.io/apiserver/pkg/storage/names: the prefix is cut to 58 characters, then 5 random ones from
# k8s.io/apimachinery/pkg/util/rand's alphabet (no vowels, no look-alikes) are appended.
MAX_GENERATED_PREFIX = 58
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def generate_name(prefix):
    return prefix[:MAX_GENERATED_PREFIX] + "".join(random.choice(_SUFFIX_ALPHABET) for _ in range(5))


class Store:
    def __init__(self):
        self.cond = threading.Condition()
        self.revision = 100
        self.objects = {}     # resource -> {(ns, name): obj}
        # resource -> [(revision, type, obj)], ascending: a watch finds what is new by bisection, so
        # its cost does not grow with the events of other resources or with how many came before.
        self.history = {}
        self.compacted = 0    # revisions <= compacted are gone
        self.watch_epoch = 0  # bumped to drop every open watch
        self.open_watches = 0

    def _bump(self):
        self.revision += 1
        return str(self.revision)

    def _record(self, resource, etype, obj):
        self.history.setdefault(resource, []).append((self.revision, etype, copy.deepcopy(obj)))
        self.cond.notify_all()

    def get(self, resource, ns, name):
        with self.cond:
            obj = self.objects.get(resource, {}).get((ns, name))
            return copy.deepcopy(obj) if obj else None

    def list(self, resource, ns, match):
        with self.cond:
            items = [copy.deepcopy(o) for (ons, _), o in sorted(self.objects.get(resource, {}).items())
                     if (not ns or ons == ns) and match(o)]
            return items, str(self.revision)

    def create(self, resource, ns, obj):
        with self.cond:
            meta = obj.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = generate_name(meta["generateName"])
            key = (ns, meta["name"])
            bucket = self.objects.setdefault(resource, {})
            if key in bucket:
                return None
            meta["uid"] = str(uuid.uuid4())
            meta["resourceVersion"] = self._bump()
            meta["creationTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            meta["generation"] = 1
            if ns:
                meta["namespace"] = ns
            bucket[key] = copy.deepcopy(obj)
            self._record(resource, "ADDED", obj)
            return copy.deepcopy(obj)

    def update(self, resource, ns, name, obj):
        """Returns (stored object | None, error reason: 'NotFound' | 'Conflict' | None)."""
        with self.cond:
            bucket = self.objects.setdefault(resource, {})
            old = bucket.get((ns, name))
            if old is None:
                return None, "NotFound"
            meta = obj.setdefault("metadata", {})
            if meta.get("resourceVersion") and meta["resourceVersion"] != old["metadata"]["resourceVersion"]:
                return None, "Conflict"
            for keep in ("uid", "creationTimestamp", "namespace", "deletionTimestamp"):
                if keep in old["metadata"]:
                    meta[keep] = old["metadata"][keep]
            meta["generation"] = old["metadata"].get("generation", 1) + (1 if old.get("spec") != obj.get("spec") else 0)
            meta["resourceVersion"] = self._bump()
            if meta.get("deletionTimestamp") and not meta.get("finalizers"):
                # The last finalizer of a deleting object is gone: the object goes (as the real server).
                del bucket[(ns, name)]
                self._record(resource, "DELETED", obj)
                return copy.deepcopy(obj), None
            bucket[(ns, name)] = copy.deepcopy(obj)
            self._record(resource, "MODIFIED", obj)
            return copy.deepcopy(obj), None

    def delete(self, resource, ns, name, pre=None):
        with self.cond:
            bucket = self.objects.setdefault(resource, {})
            old = bucket.get((ns, name))
            if old is None:
                return None, "NotFound"
            pre = pre or {}
            if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
                return None, "Conflict"
            if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
                return None, "Conflict"
            if old["metadata"].get("finalizers"):
                # Finalizers pending: mark the object deleting; it goes when the last one is removed.
                if not old["metadata"].get("deletionTimestamp"):
                    old["metadata"]["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                    old["metadata"]["deletionGracePeriodSeconds"] = 0
                    old["metadata"]["resourceVersion"] = self._bump()
                    self._record(resource, "MODIFIED", old)
                return copy.deepcopy(old), None
            del bucket[(ns, name)]
            old["metadata"]["resourceVersion"] = self._bump()
            self._record(resource, "DELETED", old)
            return copy.deepcopy(old), None

    def compact(self):
        with self.cond:
            self.compacted = self.revision
            self.history = {}

    def drop_watches(self):
        with self.cond:
            self.watch_epoch += 1
            self.cond.notify_all()

    def events_after(self, resource, revision):
        """Events of `resource` newer than `revision`, or None when that revision was compacted."""
        if revision < self.compacted:
            return None
        events = self.history.get(resource, [])
        start = bisect.bisect_right(events, revision, key=lambda e: e[0])
        return [(rev, etype, copy.deepcopy(obj)) for rev, etype, obj in events[start:]]
