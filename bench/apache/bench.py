#!/usr/bin/env python3
"""What mod_tkshm and ngx_http_tkshm_module cost a request: Apache httpd
(event MPM) with and without mod_tkshm, nginx with and without limit_req
and nginx with ngx_http_tkshm_module, loaded by wrk on the same machine.

    python3 bench/apache/bench.py --module PATH/mod_tkshm.so \\
        --hook PATH/tkshm_bench_apache_hook --inspect PATH/tkshm-inspect \\
        [--nginx-module PATH/ngx_http_tkshm_module.so] \\
        [--nginx-timed-module PATH/ngx_http_tkshm_module.so] \\
        --out DIR/apache.jsonl [--quick]

First the module's request hook alone (hook_bench.c: the CPU time it adds
to a request, outside httpd), then the servers.

Servers (each on 127.0.0.1 and a free port, from a private directory,
stopped at the end, also on failure):
  apache-plain   httpd without the module, a 2-byte static file;
  apache         httpd with mod_tkshm, the same file under locations that
                 differ by their limit only;
  nginx          nginx (2 workers), the same file, locations with and
                 without limit_req (its zone keyed the same way); the
                 module is not loaded: this is plain nginx;
  nginx-tkshm    the same nginx with ngx_http_tkshm_module loaded
                 (load_module), locations with and without tkshm_limit,
                 tables of the same policies as mod_tkshm's (default
                 tkshm_headers, draft, as mod_tkshm's default); left out
                 without --nginx-module.
No access log anywhere: the cases differ by the limiter alone.

Cases (wrk -t2 -c32, keep-alive), rounds alternating the servers and
locations so that a drift of the machine spreads over all of them:
  none       no limit (the baseline of the same server);
  hot        every request checked on one key (127.0.0.1), always admitted;
  keys_none  no limit, wrk sending X-Key from 100,000 keys (keys.lua);
  keys       the same requests, limited per X-Key, always admitted;
  deny       every request denied (429).
Then `paced`: a gcra policy of 1,000/s with a burst of 100 on one key,
hammered for a few seconds: admissions must stay within burst + rate x
time, and come close to it.
Then `crowd`: 10 times more clients than a table holds.  mod_tkshm's and
ngx_http_tkshm_module's tables have CROWD_SLOTS slots (on_full=evict),
nginx's limit_req zone 32 KiB (about 200 states: a zone sized too small
for its clients, which limit_req answers by letting traffic through when
it is full), all 1 request per second per X-Key (tkshm
burst 1, limit_req burst 0: the first request of a key then one a second,
the same allowance), and wrk sends X-Key from 10 x CROWD_SLOTS keys for a
few seconds: admissions must stay near keys x (1 + rate x time).  The
tables' counters (evictions, evictions in debt) are read with tkshm-inspect
stats.

Then `handler` (with --nginx-timed-module, the module built with
TKSHM_NGINX_TIMING=ON): ngx_http_tkshm_module's request handler timed
inside nginx, for the hot and keys cases, each worker's totals logged at
its exit: the module's own share of a request, which the servers' CPU
figures cannot resolve on a shared machine.

Each run also records the CPU time (user + system) all the server's
processes used while wrk ran, per request served: the cost of a request
that other work on a shared machine disturbs far less than req/s.

Writes JSON Lines: one "machine" record, one "run" record per wrk run and
one "paced" and one "crowd" record per server but apache-plain.  Standard library only; needs apache2,
nginx and wrk (bench/run.sh's dependencies)."""

import argparse
import datetime
import glob
import http.client
import json
import os
import platform
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The module's tests start servers too: their process helpers.
sys.path.insert(0, os.path.join(HERE, "..", "..", "bindings", "apache",
                                "tests"))
from httpd import child_pids, free_port  # noqa: E402
KEYS_LUA = os.path.join(HERE, "keys.lua")
HTTPD = "/usr/sbin/apache2"
NGINX = "/usr/sbin/nginx"
HTTPD_MODULES = "/usr/lib/apache2/modules"
THREADS, CONNECTIONS = 2, 32
PACED_RATE, PACED_BURST = 1000, 100
# The crowd case: a table of CROWD_SLOTS slots and 10 times as many keys,
# each allowed CROWD_BURST at once then CROWD_RATE per second (issue 8:
# "10x more clients than table slots").
CROWD_SLOTS, CROWD_RATE, CROWD_BURST = 256, 1, 1
CROWD_KEYS = 10 * CROWD_SLOTS
CLK_TCK = os.sysconf("SC_CLK_TCK")
# The tables: in shared memory (tmpfs) as in production, not in a
# directory of a disk; removed at the end.
SHM_PREFIX = "/dev/shm/tkshm-bench-apache.%d" % os.getpid()

APACHE_CONF = """
ServerRoot "{dir}"
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
PidFile "{dir}/httpd.pid"
DefaultRuntimeDir "{dir}"
Mutex file:{dir} default
ErrorLog "{dir}/error.log"
LogLevel warn
{user}
LoadModule mpm_event_module {modules}/mod_mpm_event.so
StartServers 2
ServerLimit 2
ThreadsPerChild 32
ThreadLimit 32
MaxRequestWorkers 64
MinSpareThreads 64
MaxSpareThreads 64
LoadModule authz_core_module {modules}/mod_authz_core.so
KeepAlive On
MaxKeepAliveRequests 0
DocumentRoot "{docs}"
<Directory "{docs}">
    Require all granted
</Directory>
{tkshm}
"""

# Always admitted: hot and keys (limits far above what wrk can send);
# deny admits one request a day; paced is the policy under test.
APACHE_TKSHM = """
LoadModule tkshm_module "{module}"
TkshmTable hot {shm}.hot gcra:limit=64000,periodMs=1000,burst=1000000000
TkshmTable keys {shm}.keys gcra:limit=64000,periodMs=1000,burst=1000000000 slots=262144
TkshmTable deny {shm}.deny gcra:limit=1,periodMs=86400000
TkshmTable paced {shm}.paced gcra:limit={rate},periodMs=1000,burst={burst}
TkshmTable crowd {shm}.crowd gcra:limit={crowd_rate},periodMs=1000,burst={crowd_burst} slots={crowd_slots}
<Location /hot>
    TkshmLimit hot
</Location>
<Location /keys>
    TkshmLimit keys key=%{{HTTP:X-Key}}
</Location>
<Location /deny>
    TkshmLimit deny
</Location>
<Location /paced>
    TkshmLimit paced
</Location>
<Location /crowd>
    TkshmLimit crowd key=%{{HTTP:X-Key}}
</Location>
"""

NGINX_CONF = """
worker_processes 2;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
{user}
events {{ worker_connections 1024; }}
http {{
    access_log off;
    keepalive_requests 100000000;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    limit_req_status 429;
    limit_req_zone $binary_remote_addr zone=hot:1m rate=100000000r/s;
    limit_req_zone $http_x_key zone=keys:64m rate=100000000r/s;
    limit_req_zone $binary_remote_addr zone=deny:1m rate=1r/m;
    limit_req_zone $binary_remote_addr zone=paced:1m rate={rate}r/s;
    limit_req_zone $http_x_key zone=tiny:32k rate={crowd_rate}r/s;
    server {{
        listen 127.0.0.1:{port};
        root {docs};
        location /none/ {{ }}
        location /hot/ {{ limit_req zone=hot burst=100000000 nodelay; }}
        location /keys/ {{ limit_req zone=keys burst=100000000 nodelay; }}
        location /deny/ {{ limit_req zone=deny; }}
        location /paced/ {{ limit_req zone=paced burst={burst} nodelay; }}
        location /crowd/ {{ limit_req zone=tiny nodelay; }}
    }}
}}
"""

# nginx with ngx_http_tkshm_module: the tables of APACHE_TKSHM (the same
# policies, slots and on_full) in locations of the same paths as NGINX_CONF's
# limit_req ones.  Default tkshm_headers (draft), as mod_tkshm's default.
NGINX_TKSHM_CONF = """
load_module "{module}";
worker_processes 2;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log {error_level};
{user}
events {{ worker_connections 1024; }}
http {{
    access_log off;
    keepalive_requests 100000000;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    tkshm_table hot file={shm}.ngx-hot policy=gcra:limit=64000,periodMs=1000,burst=1000000000;
    tkshm_table keys file={shm}.ngx-keys policy=gcra:limit=64000,periodMs=1000,burst=1000000000 slots=262144;
    tkshm_table deny file={shm}.ngx-deny policy=gcra:limit=1,periodMs=86400000;
    tkshm_table paced file={shm}.ngx-paced policy=gcra:limit={rate},periodMs=1000,burst={burst};
    tkshm_table crowd file={shm}.ngx-crowd policy=gcra:limit={crowd_rate},periodMs=1000,burst={crowd_burst} slots={crowd_slots} on_full=evict;
    server {{
        listen 127.0.0.1:{port};
        root {docs};
        location /none/ {{ }}
        location /hot/ {{ tkshm_limit hot; }}
        location /keys/ {{ tkshm_limit keys key=$http_x_key; }}
        location /deny/ {{ tkshm_limit deny; }}
        location /paced/ {{ tkshm_limit paced; }}
        location /crowd/ {{ tkshm_limit crowd key=$http_x_key; }}
    }}
}}
"""

# The wrk runs of one round: (server, case, path, with keys.lua).
PLAIN_CASES = [("apache-plain", "none", "/none/f", False),
               ("apache", "none", "/none/f", False),
               ("apache", "hot", "/hot/f", False),
               ("nginx", "none", "/none/f", False),
               ("nginx", "hot", "/hot/f", False),
               ("nginx-tkshm", "none", "/none/f", False),
               ("nginx-tkshm", "hot", "/hot/f", False)]
KEYED_CASES = [("apache", "keys_none", "/none/f", True),
               ("apache", "keys", "/keys/f", True),
               ("nginx", "keys_none", "/none/f", True),
               ("nginx", "keys", "/keys/f", True),
               ("nginx-tkshm", "keys_none", "/none/f", True),
               ("nginx-tkshm", "keys", "/keys/f", True)]
DENY_CASES = [("apache", "deny", "/deny/f", False),
              ("nginx", "deny", "/deny/f", False),
              ("nginx-tkshm", "deny", "/deny/f", False)]
# The servers whose tables tkshm-inspect reads after the crowd case.
CROWD_TABLES = {"apache": SHM_PREFIX + ".crowd",
                "nginx-tkshm": SHM_PREFIX + ".ngx-crowd"}


def run_user():
    """The user the servers' workers run as when started as root."""
    if os.geteuid() != 0:
        return None
    for name in ("www-data", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
    return None


class Server:
    """A server started in the foreground in its own process group."""

    def __init__(self, name, argv, port, logdir):
        self.name, self.port = name, port
        self.log = open(os.path.join(logdir, name + ".out"), "w")
        self.proc = subprocess.Popen(argv, stdout=self.log,
                                     stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def cpu_seconds(self):
        """CPU time used so far by the server's processes (the parent and
        its children, every thread): per request, a measure that other
        work on the machine disturbs far less than requests per second."""
        total = 0
        for pid in [self.proc.pid] + child_pids(self.proc.pid):
            try:
                with open("/proc/%d/stat" % pid) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # exited meanwhile
            total += int(fields[11]) + int(fields[12])  # utime, stime
        return total / CLK_TCK

    def output(self):
        with open(self.log.name) as f:
            return f.read()

    def wait_ready(self, path):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited (%d):\n%s" % (
                    self.name, self.proc.returncode, self.output()))
            try:
                with socket.create_connection(("127.0.0.1", self.port), 1):
                    # one request through, so that workers are up
                    if http_status(self.port, path) == 200:
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("%s did not start:\n%s"
                           % (self.name, self.output()))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()


def http_status(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def start_apache(servers, name, work, docs, module):
    d = os.path.join(work, name)
    os.makedirs(d)
    port = free_port()
    user = run_user()
    tkshm = ""
    if module:
        tkshm = APACHE_TKSHM.format(module=module, shm=SHM_PREFIX,
                                    rate=PACED_RATE, burst=PACED_BURST,
                                    crowd_rate=CROWD_RATE,
                                    crowd_burst=CROWD_BURST,
                                    crowd_slots=CROWD_SLOTS)
    conf = APACHE_CONF.format(
        dir=d, port=port, modules=HTTPD_MODULES, docs=docs, tkshm=tkshm,
        user="User %s\nGroup #%d" % (user.pw_name, user.pw_gid)
        if user else "")
    with open(os.path.join(d, "httpd.conf"), "w") as f:
        f.write(conf)
    servers[name] = Server(name, [HTTPD, "-f", os.path.join(d, "httpd.conf"),
                                  "-DFOREGROUND"], port, work)
    servers[name].wait_ready("/none/f")


def start_nginx(servers, name, work, docs, module, error_level="warn"):
    """nginx with limit_req (module None), or with ngx_http_tkshm_module
    loaded from `module`."""
    d = os.path.join(work, name)
    os.makedirs(d)
    port = free_port()
    user = run_user()
    conf = (NGINX_TKSHM_CONF if module else NGINX_CONF).format(
        dir=d, port=port, docs=docs, rate=PACED_RATE, burst=PACED_BURST,
        crowd_rate=CROWD_RATE, crowd_burst=CROWD_BURST,
        crowd_slots=CROWD_SLOTS, module=module, shm=SHM_PREFIX,
        error_level=error_level,
        user="user %s;" % user.pw_name if user else "")
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(conf)
    servers[name] = Server(name, [NGINX, "-p", d, "-c",
                                  os.path.join(d, "nginx.conf")],
                           port, work)
    servers[name].wait_ready("/none/f")


UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def parse_wrk(text):
    """Requests, duration, non-2xx, req/s and latency percentiles (ms)."""
    out = {}
    m = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", text)
    if not m:
        raise RuntimeError("unreadable wrk output:\n" + text)
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[m.group(3)]
    out["requests"] = int(m.group(1))
    out["duration_s"] = float(m.group(2)) * scale
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    out["non2xx"] = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), "
                  r"timeout (\d+)", text)
    out["socket_errors"] = sum(int(x) for x in m.groups()) if m else 0
    out["rps"] = out["requests"] / out["duration_s"]
    for p in ("50", "99"):
        m = re.search(r"^\s+%s(?:\.000)?%%\s+([\d.]+)(us|ms|s)\s*$" % p,
                      text, re.M)
        out["p%s_ms" % p] = float(m.group(1)) * UNITS[m.group(2)] \
            if m else None
    return out


def wrk(server, path, seconds, keys, nkeys=None):
    """keys: send X-Key from keys.lua, drawn from nkeys keys (keys.lua's
    default, 100,000, when None)."""
    argv = ["wrk", "-t%d" % THREADS, "-c%d" % CONNECTIONS,
            "-d%ds" % seconds, "--latency", "--timeout", "5s"]
    env = None
    if keys:
        argv += ["-s", KEYS_LUA]
        if nkeys is not None:
            env = dict(os.environ, NKEYS=str(nkeys))
    argv.append("http://127.0.0.1:%d%s" % (server.port, path))
    cpu0, t0 = server.cpu_seconds(), time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True,
                       timeout=seconds + 60, env=env)
    wall, cpu = time.monotonic() - t0, server.cpu_seconds() - cpu0
    if p.returncode != 0:
        raise RuntimeError("wrk failed:\n" + p.stdout)
    r = parse_wrk(p.stdout)
    r["wall_s"] = wall
    r["server_cpu_s"] = cpu
    r["cpu_us_per_request"] = 1e6 * cpu / r["requests"] \
        if r["requests"] else None
    return r


def run_hook(path, quick):
    """The records of hook_bench.c, one per case."""
    p = subprocess.run([path] + (["--quick"] if quick else []),
                       stdout=subprocess.PIPE, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d)" % (path, p.returncode))
    out = [json.loads(line) for line in p.stdout.splitlines() if line]
    for r in out:
        print("hook %-5s %6.0f ns of CPU per request" % (
            r["case"], r["ns_per_request"]), file=sys.stderr)
    return out


TIMING_RE = re.compile(r"tkshm timing: calls=(\d+) ns=(\d+) slow=(\d+) "
                       r"read_ns=([\d.]+)")


def run_handler(servers, work, docs, module, seconds):
    """The module's request handler timed inside nginx (the module built
    with TKSHM_NGINX_TIMING): per case, an nginx of its own serves wrk,
    then stops, and each worker logs its handler's calls and time; a
    sample holds about one clock read, subtracted here."""
    out = []
    for case, path, keys in (("hot", "/hot/f", False),
                             ("keys", "/keys/f", True)):
        name = "nginx-timed-" + case
        start_nginx(servers, name, work, docs, module, "notice")
        wrk(servers[name], path, 1, keys)  # warm up
        run = wrk(servers[name], path, seconds, keys)
        servers[name].stop()
        with open(os.path.join(work, name, "error.log")) as f:
            found = TIMING_RE.findall(f.read())
        if not found:
            raise RuntimeError("%s logged no handler timing" % name)
        calls = sum(int(m[0]) for m in found)
        ns = sum(int(m[1]) for m in found)
        read_ns = min(float(m[3]) for m in found)
        r = {"suite": "apache", "record": "handler", "server": "nginx-tkshm",
             "case": case, "calls": calls, "ns": ns,
             "slow": sum(int(m[2]) for m in found), "read_ns": read_ns,
             "ns_per_request": ns / calls - read_ns if calls else None,
             "requests": run["requests"], "workers": len(found)}
        out.append(r)
        print("handler %-5s %6.0f ns per request (%d calls, %d slow)"
              % (case, r["ns_per_request"] or 0, calls, r["slow"]),
              file=sys.stderr)
    return out


def table_stats(inspect, path):
    """tkshm-inspect stats --json of a table: its counters and slots."""
    p = subprocess.run([inspect, "stats", path, "--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("tkshm-inspect stats %s failed:\n%s"
                           % (path, p.stdout))
    return json.loads(p.stdout)


def machine(args):
    def first_line(argv):
        try:
            p = subprocess.run(argv, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            return p.stdout.strip().splitlines()[0]
        except (OSError, IndexError):
            return None

    cpu = None
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    os_name = None
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    os_name = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return {"suite": "apache", "record": "machine", "cpu_model": cpu,
            "cpus": os.cpu_count(), "kernel": platform.release(),
            "os": os_name,
            "date": datetime.datetime.now(datetime.timezone.utc)
            .isoformat(timespec="seconds"),
            "load_avg_1m": os.getloadavg()[0],
            "httpd": first_line([HTTPD, "-v"]),
            "nginx": first_line([NGINX, "-v"]),
            "nginx_module": bool(args.nginx_module),
            "wrk": first_line(["wrk", "--version"]),
            "quick": args.quick, "seconds": args.seconds,
            "rounds": args.rounds, "threads": THREADS,
            "connections": CONNECTIONS}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--module", required=True, help="mod_tkshm.so")
    ap.add_argument("--hook", required=True,
                    help="tkshm_bench_apache_hook (hook_bench.c)")
    ap.add_argument("--inspect", required=True,
                    help="tkshm-inspect (reads the crowd table's counters)")
    ap.add_argument("--nginx-module",
                    help="ngx_http_tkshm_module.so (without it, the "
                         "nginx-tkshm cases are left out)")
    ap.add_argument("--nginx-timed-module",
                    help="ngx_http_tkshm_module.so built with "
                    "TKSHM_NGINX_TIMING=ON: the handler timed inside nginx")
    ap.add_argument("--out", required=True, help="the JSON Lines file")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke: one round of 1 s runs")
    a = ap.parse_args()
    a.seconds = 1 if a.quick else 3
    a.rounds = 1 if a.quick else 5
    paced_s = 1 if a.quick else 5
    crowd_s = 1 if a.quick else 5
    for tool in (HTTPD, NGINX, shutil.which("wrk") or "wrk"):
        if not os.access(tool, os.X_OK):
            sys.exit("bench.py: %s is missing (scripts/install-deps.sh "
                     "bench installs it)" % tool)
    if not os.path.isfile(a.module):
        sys.exit("bench.py: no module at %s" % a.module)
    a.module = os.path.abspath(a.module)  # httpd reads it from ServerRoot
    if a.nginx_module:
        if not os.path.isfile(a.nginx_module):
            sys.exit("bench.py: no nginx module at %s" % a.nginx_module)
        # nginx reads a relative load_module from its prefix
        a.nginx_module = os.path.abspath(a.nginx_module)
    if a.nginx_timed_module:
        if not os.path.isfile(a.nginx_timed_module):
            sys.exit("bench.py: no nginx module at %s"
                     % a.nginx_timed_module)
        a.nginx_timed_module = os.path.abspath(a.nginx_timed_module)
    servers_run = ["apache", "nginx"] + \
        (["nginx-tkshm"] if a.nginx_module else [])
    records = [machine(a)]
    records += run_hook(a.hook, a.quick)

    work = tempfile.mkdtemp(prefix="tkshm-bench-apache-")
    os.chmod(work, 0o755)
    docs = os.path.join(work, "docs")
    for loc in ("none", "hot", "keys", "deny", "paced", "crowd"):
        os.makedirs(os.path.join(docs, loc))
        with open(os.path.join(docs, loc, "f"), "w") as f:
            f.write("k\n")
    servers = {}
    try:
        # registered before they are waited for: all are stopped below
        start_apache(servers, "apache-plain", work, docs, None)
        start_apache(servers, "apache", work, docs, a.module)
        start_nginx(servers, "nginx", work, docs, None)
        if a.nginx_module:
            start_nginx(servers, "nginx-tkshm", work, docs, a.nginx_module)
        for s in servers.values():  # warm up: workers, caches
            wrk(s, "/none/f", 1, False)

        for group, rounds in ((PLAIN_CASES, a.rounds),
                              (KEYED_CASES, a.rounds),
                              (DENY_CASES, max(1, a.rounds // 2))):
            group = [c for c in group if c[0] in servers]
            for rnd in range(rounds):
                # each round starts one case further: no case always
                # runs first
                order = group[rnd % len(group):] + group[:rnd % len(group)]
                for server, case, path, keys in order:
                    r = wrk(servers[server], path, a.seconds, keys)
                    r.update({"suite": "apache", "record": "run",
                              "server": server, "case": case,
                              "round": rnd, "keys": 100000 if keys else 1})
                    records.append(r)
                    print("%-12s %-9s round %d: %8.0f req/s, %5.1f us of "
                          "CPU per request, %d non-2xx"
                          % (server, case, rnd, r["rps"],
                             r["cpu_us_per_request"], r["non2xx"]),
                          file=sys.stderr)

        for server in servers_run:
            r = wrk(servers[server], "/paced/f", paced_s, False)
            admitted = r["requests"] - r["non2xx"]
            r.update({"suite": "apache", "record": "paced",
                      "server": server, "rate": PACED_RATE,
                      "burst": PACED_BURST, "admitted": admitted,
                      # the most the policy allows while wrk ran (its
                      # wall time bounds every check's time)
                      "bound": PACED_BURST + PACED_RATE * r["wall_s"],
                      "ideal": PACED_BURST + PACED_RATE * r["duration_s"]})
            records.append(r)
            print("%-12s paced: %d admitted of %d (bound %.0f)"
                  % (server, admitted, r["requests"], r["bound"]),
                  file=sys.stderr)
        for server in servers_run:
            r = wrk(servers[server], "/crowd/f", crowd_s, True, CROWD_KEYS)
            admitted = r["requests"] - r["non2xx"]
            # limit_req's burst 0 admits a key's first request and then one
            # per 1/rate: the same allowance as the tables' burst 1
            r.update({"suite": "apache", "record": "crowd",
                      "server": server, "keys": CROWD_KEYS,
                      "rate": CROWD_RATE, "burst": CROWD_BURST,
                      "admitted": admitted,
                      # the most the policy allows every key while wrk
                      # ran (its wall time bounds every check's time)
                      "bound": CROWD_KEYS * (CROWD_BURST +
                                             CROWD_RATE * r["wall_s"])})
            if server in CROWD_TABLES:
                st = table_stats(a.inspect, CROWD_TABLES[server])
                r["slots"] = st.get("slots")
                r["table_stats"] = st
                c = st.get("counters", st)
                for name, key in (("evictions", "evictions"),
                                  ("evictions_in_debt", "evictionsInDebt"),
                                  ("debt_restores", "debtRestores"),
                                  ("reclaims", "reclaims"),
                                  ("refusals", "refusals")):
                    r[name] = c.get(key)
            else:
                r["zone_bytes"] = 32 * 1024
            records.append(r)
            print("%-12s crowd: %d admitted of %d (bound %.0f), evictions "
                  "%s (in debt %s)"
                  % (server, admitted, r["requests"], r["bound"],
                     r.get("evictions", "-"),
                     r.get("evictions_in_debt", "-")), file=sys.stderr)
        if a.nginx_timed_module:
            records += run_handler(servers, work, docs,
                                   a.nginx_timed_module, a.seconds * 2)
        records[0]["load_avg_1m_end"] = os.getloadavg()[0]
    finally:
        for s in servers.values():
            s.stop()
        shutil.rmtree(work, ignore_errors=True)
        for name in glob.glob(SHM_PREFIX + ".*"):
            os.unlink(name)

    with open(a.out, "w") as f:
        for r in records:
            f.write(json.dumps(r, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
