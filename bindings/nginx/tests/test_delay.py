"""leakyBucket tables under nginx: limit_req's burst/delay semantics on
tkshm's shaper.  A burst at once is served at the bucket's rate (the k-th
request parked on a timer for k/R seconds), the requests beyond the queue
(maxQueueMs) are denied at once with Retry-After, `nodelay` admits the
queued ones at once, `delay=N` the first N after the first at once and
the rest spaced, and a client leaving while parked does not hurt the
worker.  Latencies are checked by their lower bounds and their order (a
loaded CI machine makes upper bounds meaningless); exits 77 without
nginx."""

import socket
import threading
import time

from nginx import Nginx, check, main

RATE = 10  # per second: a departure every 100 ms

SITE = """
    tkshm_table q anonymous "policy=leakyBucket:ratePerSec=%d,maxQueueMs=500";
    tkshm_table n anonymous "policy=leakyBucket:ratePerSec=2,maxQueueMs=2500";
    tkshm_table p anonymous "policy=leakyBucket:ratePerSec=1,maxQueueMs=5000";
    tkshm_table d anonymous "policy=leakyBucket:ratePerSec=2,maxQueueMs=2000";
    server {
        listen 127.0.0.1:{port} reuseport;
        root html;
        location /q { try_files /index.html =404; tkshm_limit q; }
        location /n { try_files /index.html =404; tkshm_limit n nodelay; }
        location /d { try_files /index.html =404; tkshm_limit d delay=3; }
        location /p {
            try_files /index.html =404;
            tkshm_limit p key=$arg_k;
        }
    }
""" % RATE


def timed_burst(n, path, count):
    """`count` requests at once (one thread each): [(seconds since the
    common start, status, headers)] in completion order."""
    out, lock = [], threading.Lock()
    barrier = threading.Barrier(count + 1)

    def client():
        barrier.wait()
        s, h, _ = n.get(path)
        with lock:
            out.append((time.monotonic() - t0, s, h))

    ts = [threading.Thread(target=client) for _ in range(count)]
    for t in ts:
        t.start()
    t0 = time.monotonic()
    barrier.wait()
    for t in ts:
        t.join()
    return sorted(out, key=lambda x: x[0])


def check_burst(n):
    res = timed_burst(n, "/q", 10)
    served = [r for r in res if r[1] == 200]
    denied = [r for r in res if r[1] == 429]
    # 500 ms of queue at 100 ms apart: 0, 100, ..., 500 ms (the requests
    # arrive over some ms, so one more may fit).
    check(len(served) + len(denied) == 10 and 6 <= len(served) <= 7,
          "10 at once: 6 or 7 served, the rest 429: %s"
          % [(round(t, 3), s) for t, s, _ in res])
    for k, (t, _, _) in enumerate(served):
        check(t >= k / RATE - 0.03,
              "served #%d after %.3f s, not before %.1f s" % (k, t, k / RATE))
    check(all(int(h.get("retry-after", "0")) >= 1 for _, _, h in denied),
          "each denial has Retry-After >= 1")
    check(max(t for t, _, _ in denied) < served[-1][0],
          "the denials answer before the last queued request is served")
    s, h, _ = n.get("/q")
    check(s in (200, 429), "a request after the burst: %d" % s)


def check_nodelay(n):
    res = timed_burst(n, "/n", 8)
    served = [r for r in res if r[1] == 200]
    # 6 slots (0 .. 2500 ms at 500 ms apart), admitted at once: without
    # nodelay the last would wait 2.5 s.
    check(6 <= len(served) <= 7 and len(res) - len(served) >= 1,
          "nodelay, 8 at once: 6 or 7 served, the rest 429: %s"
          % [(round(t, 3), s) for t, s, _ in res])
    check(max(t for t, _, _ in served) < 1.5,
          "nodelay serves the queued ones at once (last %.3f s)"
          % max(t for t, _, _ in served))


def check_delay_n(n):
    res = timed_burst(n, "/d", 6)
    served = [r for r in res if r[1] == 200]
    # departures 0, 500, ..., 2000 ms: 5 slots; delay=3 lets the first 4
    # (the one with no wait and 3 more) go at once and the fifth waits
    # 2000 - 3 x 500 ms.
    check(len(served) == 5,
          "delay=3, 6 at once: 5 served: %s"
          % [(round(t, 3), s) for t, s, _ in res])
    early = [t for t, _, _ in served[:4]]
    check(max(early) < 0.4,
          "the first 4 go at once: %s" % [round(t, 3) for t in early])
    check(served[4][0] >= 0.47,
          "the fifth waits its 500 ms: %.3f s" % served[4][0])


def check_disconnect(n):
    pids = set(n.workers())
    check(n.get("/p?k=gone")[0] == 200, "the first of key gone is served")
    socks = []
    for _ in range(3):
        s = socket.create_connection(("127.0.0.1", n.port), 5)
        s.sendall(b"GET /p?k=gone HTTP/1.1\r\nHost: x\r\n\r\n")
        socks.append(s)
    time.sleep(0.3)
    for s in socks:
        # parked: no answer yet
        s.setblocking(False)
        try:
            early = s.recv(1)
        except BlockingIOError:
            early = None
        check(early is None, "a queued request is parked, not answered")
        s.close()
    # past the first parked one's departure (1 s)
    time.sleep(1.2)
    check(set(n.workers()) == pids, "the workers stayed up")
    check(n.get("/p?k=other")[0] == 200, "nginx still serves")
    log = n.output()
    check("signal" not in log and "alert" not in log,
          "no worker crashed or alerted")


def test_delay():
    n = Nginx(SITE)
    try:
        n.start()
        check_burst(n)
        check_nodelay(n)
        check_delay_n(n)
        check_disconnect(n)
        rows = n.access_log(1)
        check(any(r[1] == "499" for r in rows),
              "a client gone while parked is logged as 499")
    finally:
        n.cleanup()


def test_config():
    n = Nginx("""
    tkshm_table q anonymous "policy=leakyBucket:ratePerSec=1,maxQueueMs=9";
    tkshm_table g anonymous policy=10/second;
    server {
        listen 127.0.0.1:{port};
        location / { tkshm_limit q; tkshm_limit g; }
    }
""")
    try:
        ok, out = n.configtest()
        check(not ok and "is a leakyBucket table: it must be the only "
              "tkshm_limit of a level" in out,
              "a leakyBucket beside another limit is refused: " + out[-300:])
        n.write_conf("""
    tkshm_table q anonymous "policy=leakyBucket:ratePerSec=1,maxQueueMs=9";
    server {
        listen 127.0.0.1:{port};
        location / { tkshm_limit q nodelay; }
    }
""")
        ok, out = n.configtest()
        check(ok, "a leakyBucket table alone is accepted: " + out[-300:])
        for limit, says in (
                ("g nodelay", "is not a leakyBucket table: nodelay and "
                 "delay= apply to a queue"),
                ("g delay=2", "is not a leakyBucket table"),
                ("q delay=2 nodelay", "nodelay and delay= exclude each "
                 "other"),
                ("q nodelay delay=2", "delay= is a whole number of at "
                 "least 1, given once and not with nodelay"),
                ("q delay=0", "delay= is a whole number"),
                ("q delay=x", "delay= is a whole number"),
                ("q delay=1 delay=2", "given once")):
            n.write_conf("""
    tkshm_table q anonymous "policy=leakyBucket:ratePerSec=1,maxQueueMs=9";
    tkshm_table g anonymous policy=10/second;
    server {
        listen 127.0.0.1:{port};
        location / { tkshm_limit %s; }
    }
""" % limit)
            ok, out = n.configtest()
            check(not ok and says in out,
                  "tkshm_limit %s is refused: %s" % (limit, out[-300:]))
    finally:
        n.cleanup()


if __name__ == "__main__":
    main([test_config, test_delay])
