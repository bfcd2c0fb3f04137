"""A lease table under nginx: tkshm-syncd leases budget from a Redis
server into the table and the workers spend it without waiting on Redis.
Exactly the limit is admitted (never more), the rest denied with
Retry-After.  Needs redis-server and tkshm-syncd (TKSHM_SYNCD); exits 77
without them."""

import os
import shutil
import subprocess
import sys
import time

import nginx
from nginx import Nginx, check, free_port, main

SYNCD = os.environ.get("TKSHM_SYNCD", "")
REDIS = shutil.which("redis-server")

SITE = """
    tkshm_table l file={dir}/l.tbl
        "policy=fixedWindow:limit=50,windowMs=86400000;mode=lease,prefix=%s";
    server {
        listen 127.0.0.1:{port} reuseport;
        root html;
        location / { try_files /index.html =404; tkshm_limit l; }
    }
"""


def start(args, log):
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


def test_lease_exact():
    prefix = "ngx%d" % os.getpid()
    n = Nginx(SITE % prefix)
    redis = syncd = None
    rport = free_port()
    log = open(n.path("agents.log"), "w")
    try:
        redis = start([REDIS, "--port", str(rport), "--bind", "127.0.0.1",
                       "--save", "", "--appendonly", "no"], log)
        n.start()
        with open(n.path("syncd.conf"), "w") as f:
            f.write("redis_host = 127.0.0.1\nredis_port = %d\n"
                    "poll_ms = 2\nheartbeat_ms = 50\ntable = %s\n"
                    % (rport, n.path("l.tbl")))
        syncd = start([SYNCD, "-f", "-c", n.path("syncd.conf"),
                       "-p", n.path("syncd.pid")], log)
        admitted, sent, deadline = 0, 0, time.time() + 30
        while admitted < 50 and time.time() < deadline:
            status = n.get("/")[0]
            sent += 1
            admitted += status == 200
            if status not in (200, 429):
                raise AssertionError("a lease check answered %d" % status)
            time.sleep(0.005)
        more = n.burst("/", 40, threads=8)
        check(admitted == 50 and more == {429: 40},
              "exactly 50 admitted (of %d sent), then 40 of 40 denied: %s"
              % (sent, dict(more)))
        s, h, _ = n.get("/")
        check(s == 429 and int(h.get("retry-after", "0")) >= 1,
              "a denial has Retry-After")
    finally:
        for p in (syncd, redis):
            if p is not None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        log.close()
        if sys.exc_info()[0] is not None:
            with open(n.path("agents.log")) as f:
                print(f.read()[-2000:])
        n.cleanup()


if __name__ == "__main__":
    nginx.skip_without_nginx()
    if not REDIS or not os.access(SYNCD, os.X_OK):
        print("skipped: needs redis-server and tkshm-syncd (TKSHM_SYNCD)",
              file=sys.stderr)
        sys.exit(77)
    main([test_lease_exact])
