"""A private nginx for the tests of ngx_http_tkshm_module: its own prefix
directory and configuration (the http{} body given by the test), a free
port on loopback, 4 worker processes, started in the foreground (daemon
off) and always stopped by its pid.

The environment (set by ctest, from the build) names what is used:
  TKSHM_NGINX         the nginx binary (/usr/sbin/nginx)
  TKSHM_NGINX_MODULE  the ngx_http_tkshm_module.so under test
Without nginx or the module a test exits 77 (skipped).  Standard library
only.
"""

import collections
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

# tests/support: free_port, child_pids (procfs.py), at_once (at_once.py)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "tests", "support"))
from at_once import at_once  # noqa: E402
from procfs import child_pids, free_port  # noqa: E402

NGINX = os.environ.get("TKSHM_NGINX", "/usr/sbin/nginx")
MODULE = os.environ.get("TKSHM_NGINX_MODULE", "")

# The main configuration every test nginx runs with: `load` is a
# load_module line (or nothing), `http` the body of http{}.
MAIN = """
{load}
worker_processes 4;
daemon off;
master_process on;
pid "{dir}/nginx.pid";
error_log "{dir}/error.log" info;
{user}
events {{ worker_connections 256; }}
http {{
    client_body_temp_path "{dir}/tmp/body";
    proxy_temp_path "{dir}/tmp/proxy";
    fastcgi_temp_path "{dir}/tmp/fastcgi";
    uwsgi_temp_path "{dir}/tmp/uwsgi";
    scgi_temp_path "{dir}/tmp/scgi";
{http}
}}
"""

# What the module's tests add to http{}: the log they read.
LOGGED = """
    # the worker that served, the status, the module's outcome
    log_format tk "$pid $status $tkshm_status $request_uri";
    access_log "{dir}/access.log" tk;
    keepalive_timeout 0;
"""


def main_conf(dir, http, module=None, user="nobody nogroup"):
    """nginx.conf's text for a test nginx in `dir`: the module loaded from
    `module` (None: not loaded), `http` as the body of http{}.  Workers of
    a root master run as `user` (the module's tests keep nobody, so a
    table file must be usable by them); not root: as the master's."""
    user = "user %s;" % user if os.geteuid() == 0 else ""
    load = 'load_module "%s";' % module if module else ""
    return MAIN.format(load=load, dir=dir, user=user, http=http)


def skip_without_nginx():
    """Exit 77 when nginx or the module is not there."""
    if not os.access(NGINX, os.X_OK):
        print("skipped: %s is not installed (apt-get install nginx-light)"
              % NGINX, file=sys.stderr)
        sys.exit(77)
    if not os.path.isfile(MODULE):
        print("skipped: TKSHM_NGINX_MODULE=%r is not a file (build "
              "ngx_http_tkshm_module; ctest sets it)" % MODULE,
              file=sys.stderr)
        sys.exit(77)


class Nginx:
    """One nginx; `http` is the body of http{} where {port} and {dir} are
    replaced (a server listening on 127.0.0.1:{port} is the caller's)."""

    def __init__(self, http):
        self.dir = tempfile.mkdtemp(prefix="tkshm-nginx-")
        # the workers (nobody) open table files here after a replacement
        os.chmod(self.dir, 0o755)
        os.makedirs(self.path("tmp"))
        os.makedirs(self.path("html"))
        with open(self.path("html", "index.html"), "w") as f:
            f.write("ok\n")
        self.port = free_port()
        self.proc = None
        self.seen = set()  # every worker seen, reaped at stop()
        self.write_conf(http)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def write_conf(self, http):
        body = http.replace("{port}", str(self.port)).replace(
            "{dir}", self.dir)
        with open(self.path("nginx.conf"), "w") as f:
            f.write(main_conf(self.dir, LOGGED.format(dir=self.dir) + body,
                              MODULE))

    def run(self, *args):
        return subprocess.run(
            [NGINX, "-p", self.dir, "-c", self.path("nginx.conf")]
            + list(args), capture_output=True, text=True, timeout=30)

    def configtest(self):
        """(ok, what nginx -t said)."""
        r = self.run("-t")
        return r.returncode == 0, r.stderr + r.stdout

    def start(self):
        self.proc = subprocess.Popen(
            [NGINX, "-p", self.dir, "-c", self.path("nginx.conf")],
            stdout=subprocess.DEVNULL, stderr=open(self.path("stderr"), "w"))
        self.wait_workers(4)

    def workers(self):
        pids = child_pids(self.proc.pid)
        self.seen.update(pids)
        return pids

    def wait_workers(self, n, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited: %s" % self.output())
            if len(self.workers()) >= n and self.answers():
                return
            time.sleep(0.05)
        raise RuntimeError("nginx did not start: %s" % self.output())

    def answers(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), 1):
                return True
        except OSError:
            return False

    def output(self):
        out = []
        for name in ("stderr", "error.log"):
            try:
                with open(self.path(name)) as f:
                    out.append(f.read()[-4000:])
            except OSError:
                pass
        return "\n".join(out)

    def reload(self):
        r = self.run("-s", "reload")
        if r.returncode != 0:
            raise RuntimeError("nginx -s reload: " + r.stderr)

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.seen.update(child_pids(self.proc.pid))
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reap_orphans()

    def reap_orphans(self):
        """Workers left behind by a master that died (a master that quits
        waits for its workers): killed by pid, each checked to be an
        orphaned nginx worker first."""
        for pid in sorted(self.seen):
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as f:
                    cmd = f.read()
                with open("/proc/%d/stat" % pid) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                if cmd.startswith(b"nginx: worker") and ppid == 1:
                    os.kill(pid, signal.SIGKILL)
            except (OSError, ValueError, IndexError):
                pass  # gone

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def get(self, path, headers=None, host="127.0.0.1", port=None):
        """(status, headers dict with lower-case names, body)."""
        c = http.client.HTTPConnection(host, port or self.port, timeout=10)
        try:
            c.request("GET", path, headers=headers or {})
            r = c.getresponse()
            body = r.read()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, body
        finally:
            c.close()

    def burst(self, path, n, threads=16, headers=None):
        """n requests from `threads` threads at once: Counter of statuses
        (0: the request failed)."""
        return collections.Counter(
            status for _, status in at_once(
                range(n), lambda _: self.get(path, headers)[0], threads,
                failed=lambda _, e: 0))

    def access_log(self, rows=0, timeout=5):
        """Rows of (pid, status, outcome, uri), once there are `rows` (a
        worker logs a request after its client has the response)."""
        deadline = time.time() + timeout
        while True:
            try:
                with open(self.path("access.log")) as f:
                    out = [tuple(line.split()) for line in f if line.strip()]
            except OSError:
                out = []
            if len(out) >= rows or time.time() > deadline:
                return out
            time.sleep(0.05)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def main(tests):
    """Runs the test functions; exit 0 when all pass."""
    skip_without_nginx()
    failed = 0
    for t in tests:
        t0 = time.time()
        try:
            t()
            print("PASS %s (%.1f s)" % (t.__name__, time.time() - t0))
        except Exception as e:  # report every failure, run the others
            failed += 1
            print("FAIL %s: %s: %s" % (t.__name__, type(e).__name__, e))
    print("%d passed, %d failed" % (len(tests) - failed, failed))
    sys.exit(1 if failed else 0)
