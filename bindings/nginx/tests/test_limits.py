"""ngx_http_tkshm_module under a real nginx of 4 workers: exact admission
across the workers, several limits decided as one, keys from a variable
and from the client's address (IPv6 by its /64), the RateLimit headers in
the three styles, and the dry run."""

import collections
import json
import os
import socket
import subprocess

from nginx import Nginx, check, main

INSPECT = os.environ.get("TKSHM_INSPECT", "")

SERVER = """
    server {
        listen 127.0.0.1:{port} reuseport;
        root html;
%s
    }
"""


def site(tables, locations):
    # Every location serves index.html: try_files runs after the
    # preaccess phase ("return" would answer before it).
    locations = locations.replace("{ tkshm_limit",
                                  "{ try_files /index.html =404; tkshm_limit")
    return tables + SERVER % locations


def with_nginx(http, body):
    n = Nginx(http)
    try:
        n.start()
        body(n)
    finally:
        n.cleanup()


def test_exact_across_workers():
    """200 concurrent requests, limit 50 per day: exactly 50 admitted, by
    more than one worker."""
    http = site('tkshm_table day file={dir}/day.tbl policy=50/day;',
                'location / { tkshm_limit day; }')

    def body(n):
        counts = n.burst("/", 200, threads=16)
        check(counts == {200: 50, 429: 150}, "50 of 200 admitted: %s"
              % dict(counts))
        log = n.access_log(rows=200)
        pids = {row[0] for row in log if row[1] == "200"}
        check(len(pids) > 1, "admitted by %d workers" % len(pids))
        outcomes = collections.Counter(r[2] for r in log)
        check(outcomes == {"ALLOWED": 50, "DENIED": 150},
              "$tkshm_status: %s" % dict(outcomes))
    with_nginx(http, body)


def test_multi_all_or_nothing():
    """Two limits in one location are one decision: a denial by one
    consumes nothing of the other."""
    http = site(
        'tkshm_table small file={dir}/small.tbl policy=3/day;\n'
        'tkshm_table big anonymous policy=10/day;',
        'location /both { tkshm_limit small; tkshm_limit big; }\n'
        'location /big { tkshm_limit big; }')

    def body(n):
        counts = n.burst("/both", 8, threads=4)
        check(counts == {200: 3, 429: 5}, "small binds /both: %s"
              % dict(counts))
        # big spent 3 on the admitted requests only: 7 are left.
        counts = n.burst("/big", 10, threads=4)
        check(counts == {200: 7, 429: 3}, "big kept 7: %s" % dict(counts))
        status, headers, _ = n.get("/both")
        check(status == 429
              and headers.get("ratelimit", "").startswith('"small";r=0;'),
              "the denying table names the headers: %s" % headers)
    with_nginx(http, body)


def test_key_variable():
    """key=$http_x_api_key: each key its own budget; an empty key: the
    limit does not apply."""
    http = site('tkshm_table api anonymous policy=2/day;',
                'location / { tkshm_limit api key=$http_x_api_key; }')

    def body(n):
        a = [n.get("/", {"X-Api-Key": "alice"})[0] for _ in range(3)]
        b = [n.get("/", {"X-Api-Key": "bob"})[0] for _ in range(3)]
        none = [n.get("/")[0] for _ in range(5)]
        check(a == [200, 200, 429], "alice: %s" % a)
        check(b == [200, 200, 429], "bob: %s" % b)
        check(none == [200] * 5, "no key, no limit: %s" % none)
        long_key = "k" * 5000
        c = [n.get("/", {"X-Api-Key": long_key})[0] for _ in range(3)]
        check(c == [200, 200, 429], "a 5000-byte key is limited: %s" % c)
    with_nginx(http, body)


def test_ipv6_client():
    """Over [::1], the client's key is its /64: the limit applies to it."""
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        print("ok: no IPv6 loopback here, not tested")
        return
    http = site('tkshm_table v6 file={dir}/v6.tbl policy=3/day;',
                'location / { tkshm_limit v6; }')
    http = http.replace("listen 127.0.0.1:{port} reuseport;",
                        "listen 127.0.0.1:{port} reuseport;\n"
                        "        listen [::1]:{port};")

    def body(n):
        got = [n.get("/", host="::1")[0] for _ in range(4)]
        check(got == [200, 200, 200, 429], "[::1] limited: %s" % got)
        v4 = [n.get("/")[0] for _ in range(4)]
        check(v4 == [200, 200, 200, 429], "127.0.0.1 is another key: %s"
              % v4)
        if not INSPECT:
            print("ok: no tkshm-inspect (TKSHM_INSPECT): keys not read")
            return
        keys = {}
        for key in ("::/64", "::1", "127.0.0.1"):
            r = subprocess.run([INSPECT, "show", n.path("v6.tbl"), key],
                               capture_output=True, text=True)
            keys[key] = r.returncode
        check(keys == {"::/64": 0, "::1": 1, "127.0.0.1": 0},
              "the table holds ::/64 (the /64 of ::1) and 127.0.0.1, not "
              "::1: %s" % keys)
    with_nginx(http, body)


def test_headers_styles():
    """draft (the default), legacy and none, with Retry-After on denial."""
    http = site(
        'tkshm_table h anonymous policy=2/minute;',
        'location /draft { tkshm_limit h key=draft; }\n'
        'location /legacy { tkshm_limit h key=legacy; '
        'tkshm_headers legacy; }\n'
        'location /none { tkshm_limit h key=none; tkshm_headers none; }')

    def body(n):
        s, h, _ = n.get("/draft")
        check(s == 200 and h.get("ratelimit-policy") == '"h";q=2'
              and h.get("ratelimit", "").startswith('"h";r=1;t='),
              "draft: %s" % h)
        n.get("/draft")
        s, h, _ = n.get("/draft")
        check(s == 429 and h.get("ratelimit", "").startswith('"h";r=0;')
              and int(h.get("retry-after", "0")) >= 1,
              "draft denial: %s" % h)
        s, h, _ = n.get("/legacy")
        check(s == 200 and h.get("ratelimit-limit") == "2"
              and h.get("ratelimit-remaining") == "1"
              and "ratelimit-reset" in h and "ratelimit" not in h,
              "legacy: %s" % h)
        s, h, _ = n.get("/none")
        check(s == 200 and not any(k.startswith("ratelimit") for k in h),
              "none: %s" % h)
        n.get("/none")
        s, h, _ = n.get("/none")
        check(s == 429 and int(h.get("retry-after", "0")) >= 1
              and not any(k.startswith("ratelimit") for k in h),
              "none denial: Retry-After only: %s" % h)
    with_nginx(http, body)


def test_dry_run_and_status():
    """tkshm_dry_run on counts and logs but never denies; tkshm_status
    sets the denial's code."""
    http = site(
        'tkshm_table d anonymous policy=2/day;',
        'location /dry { tkshm_limit d key=dry; tkshm_dry_run on; }\n'
        'location /503 { tkshm_limit d key=s; tkshm_status 503; }')

    def body(n):
        got = [n.get("/dry") for _ in range(4)]
        check([g[0] for g in got] == [200] * 4, "dry run admits all")
        check(not any("ratelimit" in g[1] for g in got),
              "dry run sends no headers")
        # each of 4 workers writes its own line once its client has the
        # response: the log's order across workers is not the requests'
        rows = [r[2] for r in n.access_log(rows=4) if r[3] == "/dry"]
        check(sorted(rows) == ["ALLOWED", "ALLOWED", "DENIED_DRY_RUN",
                               "DENIED_DRY_RUN"], "dry run outcomes: %s" % rows)
        with open(n.path("error.log")) as f:
            check("table d would deny the request" in f.read(),
                  "dry-run denial logged")
        got = [n.get("/503")[0] for _ in range(3)]
        check(got == [200, 200, 503], "tkshm_status 503: %s" % got)
    with_nginx(http, body)


def test_inheritance():
    """A level without tkshm_limit inherits its parent's limits; a level
    with its own replaces them, as limit_req's."""
    http = ('tkshm_table outer anonymous policy=2/day;\n'
            'tkshm_table inner anonymous policy=4/day;\n'
            'tkshm_limit outer key=k;\n'
            + SERVER % ('location /in { try_files /index.html =404; }\n'
                        'location /own { try_files /index.html =404;\n'
                        '                tkshm_limit inner key=k; }'))

    def body(n):
        inherited = [n.get("/in")[0] for _ in range(3)]
        own = [n.get("/own")[0] for _ in range(5)]
        check(inherited == [200, 200, 429], "/in inherits outer: %s"
              % inherited)
        check(own == [200, 200, 200, 200, 429], "/own has inner only: %s"
              % own)
    with_nginx(http, body)


def test_internal_redirects():
    """A request is counted once: the index module's redirect to
    /index.html and error_page's redirect to the denial's page run the
    preaccess phase again, and are not counted again."""
    http = site(
        'tkshm_table r anonymous policy=3/day;',
        'location / { index index.html; tkshm_limit r key=k;\n'
        '             error_page 429 /denied.html; }\n'
        'location = /denied.html { internal; tkshm_limit r key=k; }')

    def body(n):
        with open(n.path("html", "denied.html"), "w") as f:
            f.write("slow down\n")
        got = [n.get("/") for _ in range(5)]
        check([g[0] for g in got] == [200, 200, 200, 429, 429],
              "3 of 5 admitted through the index: %s"
              % [g[0] for g in got])
        check(got[4][2] == b"slow down\n"
              and int(got[4][1].get("retry-after", "0")) >= 1,
              "the denial's error_page is served, with Retry-After")
    with_nginx(http, body)


def test_status_page():
    """tkshm_status_page: every table's counters, as text, JSON or
    Prometheus's text format."""
    http = site(
        'tkshm_table p file={dir}/p.tbl policy=3/day;\n'
        'tkshm_table q anonymous policy=5/minute;',
        'location / { tkshm_limit p; }\n'
        'location = /tkshm { tkshm_status_page; }')

    def body(n):
        n.burst("/", 10, threads=4)
        s, h, text = n.get("/tkshm")
        lines = dict(line.split(" ", 1)
                     for line in text.decode().splitlines())
        check(s == 200 and h["content-type"] == "text/plain"
              and lines["p.allowed"] == "3" and lines["p.denied"] == "7"
              and lines["p.policy"] == "gcra:limit=3,periodMs=86400000,"
              "burst=3" and lines["q.allowed"] == "0"
              and lines["p.file"] == n.path("p.tbl")
              and lines["q.file"] == "anonymous",
              "text status: %s" % lines)
        s, h, body_ = n.get("/tkshm?json")
        doc = json.loads(body_)
        check(s == 200 and h["content-type"] == "application/json"
              and doc["p"]["allowed"] == 3 and doc["p"]["denied"] == 7
              and doc["q"]["file"] == "" and doc["q"]["slots"] >= 8,
              "JSON status: %s" % doc)
        s, h, text = n.get("/tkshm?prometheus")
        text = text.decode()
        samples = dict(line.rsplit(" ", 1) for line in text.splitlines()
                       if not line.startswith("#"))
        types = dict(line.split()[2:4] for line in text.splitlines()
                     if line.startswith("# TYPE"))
        check(s == 200 and h["content-type"] == "text/plain; version=0.0.4"
              and samples['tkshm_decisions_total{table="p",'
                          'decision="allowed"}'] == "3"
              and samples['tkshm_decisions_total{table="p",'
                          'decision="denied"}'] == "7"
              and samples['tkshm_decisions_total{table="q",'
                          'decision="allowed"}'] == "0"
              and samples['tkshm_keys{table="p",state="live"}'] == "1"
              and int(samples['tkshm_slots{table="q"}']) >= 8
              and samples["tkshm_status_errors"] == "0"
              and len(types) == 19,
              "Prometheus status: %s" % text)
        # promtool's verdict, and tkshm-inspect's metrics of the same
        # file: the same names, types and values (one dashboard for
        # nginx, Apache and the exporter).
        if os.environ.get("PROMTOOL"):
            r = subprocess.run([os.environ["PROMTOOL"], "check", "metrics"],
                               input=text, capture_output=True, text=True,
                               timeout=60)
            check(r.returncode == 0, "promtool check metrics: %s%s"
                  % (r.stdout, r.stderr))
        if os.environ.get("TKSHM_INSPECT"):
            r = subprocess.run([os.environ["TKSHM_INSPECT"], "metrics",
                                n.path("p.tbl")], capture_output=True,
                               text=True, timeout=60)
            theirs = dict(
                line.replace('table="p.tbl"', 'table="p"').rsplit(" ", 1)
                for line in r.stdout.splitlines()
                if not line.startswith("#"))
            mine = {k: v for k, v in samples.items() if 'table="p"' in k}
            check(r.returncode == 0 and mine == theirs
                  and all(types[name] == t for name, t in dict(
                      line.split()[2:4] for line in r.stdout.splitlines()
                      if line.startswith("# TYPE")).items()),
                  "nginx and tkshm-inspect differ: %s\n%s"
                  % (mine, theirs))
    with_nginx(http, body)


if __name__ == "__main__":
    main([test_exact_across_workers, test_multi_all_or_nothing,
          test_key_variable, test_ipv6_client, test_headers_styles,
          test_dry_run_and_status, test_inheritance, test_internal_redirects,
          test_status_page])
