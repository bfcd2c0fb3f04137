"""The metrics as Prometheus scrapes them: `tkshm-inspect serve` answering
plain HTTP GETs on a loopback port (tables labelled by name, counters that
move with the checks, tkshm_status_errors for a table it cannot read, a
non-loopback address refused without --allow-remote), `metrics --textfile
DIR` replacing its file whole, both outputs passed by `promtool check
metrics`; and contrib/'s alerting rules (`promtool check rules`, `promtool
test rules`) and Grafana dashboard, whose every metric must be one the
exporter exposes.

Run by ctest (tool_inspect_exporter) with TKSHM_INSPECT_BIN, PROMTOOL and
TKSHM_CONTRIB in the environment.  Standard library only."""

import json
import os
import re
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "support"))
from prom import samples  # noqa: E402  (tests/support/prom.py)

INSPECT = os.environ["TKSHM_INSPECT_BIN"]
PROMTOOL = os.environ["PROMTOOL"]
CONTRIB = os.environ["TKSHM_CONTRIB"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, flush=True)


def loopback_port():
    """A free port on 127.0.0.1 below 55536 (the project's rule: the
    ephemeral range above is the kernel's)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < 55536:
            return port
    raise SystemExit("no free port below 55536")


def inspect(*args, stdin=None):
    return subprocess.run([INSPECT, *args], input=stdin, capture_output=True,
                          text=True, timeout=60)


def promtool(*args, stdin=None):
    return subprocess.run([PROMTOOL, *args], input=stdin, capture_output=True,
                          text=True, timeout=60)


class Server:
    """`tkshm-inspect serve ARGS`, up once it says where it listens."""

    def __init__(self, *args):
        self.p = subprocess.Popen([INSPECT, "serve", *args],
                                  stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([self.p.stderr], [], [], 10)
        self.banner = self.p.stderr.readline() if ready else ""
        if "serving the metrics" not in self.banner:
            self.stop()
            raise SystemExit("serve did not start: %r" % self.banner)

    def stop(self):
        """SIGTERM by pid; returns the exit status."""
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            return self.p.wait()


def get(url, method="GET"):
    """(status, content type, body) of a plain HTTP request."""
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read().decode()


def metric_names(text):
    return set(re.findall(r"^# TYPE (\S+) ", text, re.M))


def replay(table, policy, lines):
    r = inspect("replay", "--table", table, "--policy", policy,
                stdin="".join("%d %s 1\n" % (now, key) for now, key in lines))
    check(r.returncode == 0, "replay: %s" % r.stderr)
    return [json.loads(x)["allowed"] for x in r.stdout.splitlines()]


def test_serve(d):
    api, web = os.path.join(d, "api"), os.path.join(d, "web")
    lease = os.path.join(d, "lease")
    missing = os.path.join(d, "missing")
    fixed = "fixedWindow:limit=5,windowMs=60000"
    for path, policy in ((api, fixed),
                         (web, "gcra:limit=10,periodMs=1000"),
                         (lease, fixed + ";mode=lease,prefix=exp")):
        r = inspect("create", path, "--policy", policy, "--slots", "64")
        check(r.returncode == 0, "create %s: %s" % (path, r.stderr))

    port = loopback_port()
    srv = Server(api, web, lease, missing, "--listen", "127.0.0.1:%d" % port)
    try:
        url = "http://127.0.0.1:%d" % port
        status, ctype, body = get(url + "/metrics")
        check(status == 200, "GET /metrics: %d" % status)
        check(ctype == "text/plain; version=0.0.4; charset=utf-8",
              "content type %r" % ctype)
        s = samples(body)
        check(s.get('tkshm_decisions_total{table="api",decision="allowed"}')
              == 0, "api starts at 0 allowed")
        check(s.get('tkshm_slots{table="web"}', 0) >= 64, "web's slots")
        check(s.get('tkshm_global_mode{table="lease",mode="lease"}') == 1,
              "the lease table's mode")
        check(s.get("tkshm_status_errors") == 1,
              "one table cannot be read: %r" % s.get("tkshm_status_errors"))
        check(not any(d in k for k in s), "a label holds the directory")

        # Checks move the counters the next scrape reads: 8 checks of one
        # key in one window of 5, then 2 of another key.
        got = replay(api, fixed, [(1000, "a")] * 8 + [(1000, "b")] * 2)
        check(got == [True] * 5 + [False] * 3 + [True] * 2,
              "replay decisions %r" % got)
        body = get(url + "/metrics")[2]
        s = samples(body)
        check(s.get('tkshm_decisions_total{table="api",decision="allowed"}')
              == 7, "allowed after the checks: %r" % s)
        check(s.get('tkshm_decisions_total{table="api",decision="denied"}')
              == 3, "denied after the checks")
        check(s.get('tkshm_inserts_total{table="api"}') == 2, "inserts")
        check(s.get('tkshm_decisions_total{table="web",decision="allowed"}')
              == 0, "web untouched")

        r = promtool("check", "metrics", stdin=body)
        check(r.returncode == 0, "promtool check metrics: %s%s"
              % (r.stdout, r.stderr))
        print("promtool check metrics (serve): exit %d %s%s"
              % (r.returncode, r.stdout, r.stderr), flush=True)
        print("scrape:\n" + "\n".join(
            l for l in body.splitlines()
            if 'table="api"' in l and ("decisions" in l or "keys" in l)
            or 'table="lease"' in l and "redis_up" in l
            or l.startswith("tkshm_status_errors")), flush=True)

        check(get(url + "/")[0] == 200, "GET /")
        check(get(url + "/nope")[0] == 404, "GET /nope")
        check(get(url + "/metrics", "POST")[0] == 405, "POST /metrics")
        check(get(url + "/metrics", "HEAD")[0] == 200, "HEAD /metrics")
    finally:
        check(srv.stop() == 0, "serve's exit status after SIGTERM")
    return body


def test_serve_slow_clients_and_ipv6(d):
    """Clients that connect and say nothing (or half a request) do not
    keep a scrape from being answered; [::1] is a loopback address."""
    api = os.path.join(d, "api")
    port = loopback_port()
    srv = Server(api, "--listen", "127.0.0.1:%d" % port)
    idle = []
    try:
        for i in range(8):
            c = socket.create_connection(("127.0.0.1", port), timeout=10)
            if i % 2:
                c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            idle.append(c)
        status, _, body = get("http://127.0.0.1:%d/metrics" % port)
        check(status == 200 and 'table="api"' in body,
              "a scrape beside 8 idle connections: %d" % status)
    finally:
        for c in idle:
            c.close()
        check(srv.stop() == 0, "serve's exit status (idle clients)")
    if not socket.has_ipv6:
        return
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        return  # no IPv6 loopback here
    port = loopback_port()
    srv = Server(api, "--listen", "[::1]:%d" % port)
    try:
        check(get("http://[::1]:%d/metrics" % port)[0] == 200,
              "serve on [::1]")
    finally:
        check(srv.stop() == 0, "serve's exit status ([::1])")


def test_serve_refuses_remote(d):
    api = os.path.join(d, "api")
    for listen in ("0.0.0.0:%d", "[::]:%d", "10.1.2.3:%d"):
        r = inspect("serve", api, "--listen", listen % loopback_port())
        check(r.returncode == 2 and "not a loopback address" in r.stderr,
              "serve on %s: %d %s" % (listen, r.returncode, r.stderr))
    for listen in ("localhost:1", "127.0.0.1", "127.0.0.1:x", ":9"):
        r = inspect("serve", api, "--listen", listen)
        check(r.returncode == 2, "serve --listen %s: %d" % (listen,
                                                            r.returncode))
    # Allowed when asked for (any address: 0.0.0.0 answers on loopback).
    port = loopback_port()
    srv = Server(api, "--listen", "0.0.0.0:%d" % port, "--allow-remote")
    try:
        check(get("http://127.0.0.1:%d/metrics" % port)[0] == 200,
              "serve --allow-remote answers")
    finally:
        check(srv.stop() == 0, "serve --allow-remote's exit status")
    # A port already taken: a clear failure, not a hang.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        r = inspect("serve", api, "--listen",
                    "127.0.0.1:%d" % held.getsockname()[1])
        check(r.returncode == 4 and "cannot listen" in r.stderr,
              "serve on a taken port: %d %s" % (r.returncode, r.stderr))


def test_textfile(d):
    api = os.path.join(d, "api")
    out = os.path.join(d, "textfile")
    os.mkdir(out)
    r = inspect("metrics", api, "--textfile", out)
    check(r.returncode == 0, "metrics --textfile: %s" % r.stderr)
    check(os.listdir(out) == ["tkshm.prom"], "files: %r" % os.listdir(out))
    prom = os.path.join(out, "tkshm.prom")
    check(stat.S_IMODE(os.stat(prom).st_mode) == 0o644, "mode of the file")
    with open(prom) as f:
        text = f.read()
    s = samples(text)
    check(s.get('tkshm_decisions_total{table="api",decision="allowed"}')
          == 7, "textfile allowed")
    check(s.get("tkshm_status_errors") == 0, "textfile status errors")
    r = promtool("check", "metrics", stdin=text)
    check(r.returncode == 0, "promtool check metrics (textfile): %s%s"
          % (r.stdout, r.stderr))
    # A table it cannot read: written all the same, exit 3.
    inode = os.stat(prom).st_ino
    r = inspect("metrics", api, os.path.join(d, "missing"), "--textfile",
                out)
    check(r.returncode == 3, "textfile with a missing table: %d"
          % r.returncode)
    with open(prom) as f:
        check("tkshm_status_errors 1\n" in f.read(), "errors counted")
    check(os.stat(prom).st_ino != inode, "replaced by a rename")
    check(os.listdir(out) == ["tkshm.prom"], "no temporary file left")
    # A directory it cannot write in: exit 4, nothing half written.
    r = inspect("metrics", api, "--textfile", os.path.join(d, "nodir"))
    check(r.returncode == 4 and "cannot write" in r.stderr,
          "textfile into a missing directory: %d" % r.returncode)
    r = inspect("metrics", api, "--textfile", out, "--json")
    check(r.returncode == 2, "--textfile with --json")


def test_contrib(scrape):
    rules = os.path.join(CONTRIB, "prometheus", "tkshm-alerts.yml")
    r = promtool("check", "rules", rules)
    print("promtool check rules: exit %d %s" % (r.returncode,
                                                r.stdout.strip()), flush=True)
    check(r.returncode == 0, "promtool check rules: %s%s" % (r.stdout,
                                                              r.stderr))
    r = subprocess.run([PROMTOOL, "test", "rules", "tkshm-alerts.test.yml"],
                       cwd=os.path.dirname(rules), capture_output=True,
                       text=True, timeout=60)
    print("promtool test rules: exit %d %s" % (r.returncode,
                                               r.stdout.strip()), flush=True)
    check(r.returncode == 0, "promtool test rules: %s%s" % (r.stdout,
                                                             r.stderr))
    # Every metric the rules and the dashboard use is one the exporter
    # exposes (a renamed metric would leave a panel or an alert blind).
    exposed = metric_names(scrape)
    with open(rules) as f:
        used = set(re.findall(r"\btkshm_[a-z_]+", "".join(
            l for l in f if not l.lstrip().startswith("#"))))
    with open(os.path.join(CONTRIB, "grafana", "tkshm-dashboard.json")) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    check(len(exprs) >= 10, "dashboard queries: %d" % len(exprs))
    for e in exprs:
        used |= set(re.findall(r"\btkshm_[a-z_]+", e))
    check(used and used <= exposed, "not exposed: %r" % (used - exposed))


def main():
    for tool in (INSPECT, PROMTOOL):
        if not os.access(tool, os.X_OK):
            raise SystemExit("missing %s" % tool)
    d = tempfile.mkdtemp(prefix="tkshm-exporter-")
    try:
        scrape = test_serve(d)
        test_serve_slow_clients_and_ipv6(d)
        test_serve_refuses_remote(d)
        test_textfile(d)
        test_contrib(scrape)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
