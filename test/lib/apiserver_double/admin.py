"""Test controls over HTTPS, for tests that drive the double from another process (no token needed;
the double only listens on loopback):
  POST /admin/faults        {"method","resource","status","count","retry_after","name","drop"}
  POST /admin/drop-watches  close every open watch abruptly
  POST /admin/outage {"seconds"}  down (connections cut, nothing listening), back on the same port after
                            `seconds`;  GET /admin/came-up: {"time"} it came back (time.time())
  POST /admin/release-hangs  answer nothing more to "hang" faults: their connections are dropped
  POST /admin/cut-watch-mid-event {"count"}  the next N watch writes stop halfway through an event
  POST /admin/compact       forget history: resuming from an older version gets 410 Expired
  POST /admin/tokens        {"tokens": [...]} replaces the accepted bearer tokens
  POST /admin/objects       seed an object (validated), e.g. a Node or an allocated ResourceClaim
  POST /admin/delete        {"apiVersion","resource","fieldSelector"} delete matching objects
  GET  /admin/requests      request log;  POST /admin/requests/reset clears it
  GET  /admin/rejections    validation failures sent back so far
  GET  /admin/watches       {"open": n}: watches streaming now
  GET  /admin/cpu           {"seconds"}: the CPU time (user + system, all threads) this process used so far
  GET  /admin/wait-write?after=R&timeout=S  answers {"revision"} once the store is past revision R
                            (or at the timeout): a waiter from another process without polling
"""
import resource
import time



def handle_admin(h, d, method, path, query):
    body = h.read_body() if method == "POST" else None
    if method == "POST" and path == "/admin/faults":
        d.add_fault(body["method"], body["resource"], body.get("status", 500), body.get("count", 1),
                    body.get("retry_after"), body.get("name"), body.get("drop", False), body.get("hang", False),
                    body.get("lose_response", False))
    elif method == "POST" and path == "/admin/outage":
        # Answered first; then down for `seconds` (every connection cut) and back on the same port.
        import threading
        from . import outage
        seconds = float(body.get("seconds", 5))

        def down_then_up():
            outage.go_down(d)
            d.up_again = threading.Event()
            d.up_again.wait(seconds)  # a timer for the bench's restart, not a test's wait
            outage.come_up(d)
            d.came_up_at = time.time()
        h.send_json(200, {"ok": True})
        threading.Thread(target=down_then_up, daemon=True).start()
        return
    elif method == "GET" and path == "/admin/came-up":
        h.send_json(200, {"time": getattr(d, "came_up_at", None)})
        return
    elif method == "POST" and path == "/admin/release-hangs":
        d.hang_release.set()
    elif method == "POST" and path == "/admin/cut-watch-mid-event":
        d.cut_mid_event += int(body.get("count", 1))
    elif method == "POST" and path == "/admin/drop-watches":
        d.store.drop_watches()
    elif method == "POST" and path == "/admin/compact":
        d.store.compact()
        d.store.drop_watches()
    elif method == "POST" and path == "/admin/tokens":
        d.tokens = set(body["tokens"])
    elif method == "POST" and path == "/admin/objects":
        try:
            h.send_json(200, d.put_object(body))
        except ValueError as e:
            h.send_json(422, {"error": str(e)})
        return
    elif method == "POST" and path == "/admin/delete":
        gv = body.get("apiVersion", "resource.k8s.io/v1")
        d.delete_matching(gv, body["resource"], body.get("fieldSelector", ""))
    elif method == "GET" and path == "/admin/requests":
        h.send_json(200, d.request_log())
        return
    elif method == "POST" and path == "/admin/requests/reset":
        d.reset_requests()
    elif method == "GET" and path == "/admin/cpu":
        used = resource.getrusage(resource.RUSAGE_SELF)
        h.send_json(200, {"seconds": used.ru_utime + used.ru_stime})
        return
    elif method == "GET" and path == "/admin/watches":
        with d.store.cond:
            count = d.store.open_watches
        h.send_json(200, {"open": count})
        return
    elif method == "GET" and path == "/admin/wait-write":
        after, end = int(query.get("after", "0")), time.monotonic() + float(query.get("timeout", "30"))
        with d.store.cond:
            while d.store.revision <= after and time.monotonic() < end:
                d.store.cond.wait(end - time.monotonic())
            revision = d.store.revision
        h.send_json(200, {"revision": revision})
        return
    elif method == "GET" and path == "/admin/rejections":
        h.send_json(200, d.rejections)
        return
    else:
        h.send_json(404, {"error": f"unknown admin endpoint {method} {path}"})
        return
    h.send_json(200, {"ok": True})
