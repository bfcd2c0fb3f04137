"""nginx (4 workers, ngx_http_tkshm_module) in front of a PHP-FPM pool (4
workers, the PHP extension), both limiting on ONE table file:

- /a is limited by nginx: "tkshm_limit day key=$http_x_api_key";
- /b is passed to PHP-FPM, whose application (php_app.php) constructs
  Tkshm\\Table with the same path and policy and checks the same key.

160 requests with one key, half to each path, interleaved, from 16 client
threads at once, against 40 per day: exactly 40 are admitted over both
paths, and once the budget is spent both paths deny.

Ownership: nginx's master opens the table first (it starts first) and,
when it runs as root, gives the file (mode 0600) to its workers' user,
nobody:nogroup (nginx.py).  The pool runs its workers as that same user,
so they open the file as its owner: no mode wider than 0600 is needed.  As
another user, nginx and php-fpm both run as that user.  The pool listens
on a free loopback port, and is started and stopped by this test by its
pid.

The environment (set by ctest) names the PHP side too:
  TKSHM_PHP_FPM  php-fpm (php-fpm8.2)
  TKSHM_PHP_SO   the built extension (tkshm.so)
Exits 77 without nginx, the module, php-fpm or the extension."""

import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from nginx import Nginx, at_once, check, child_pids, free_port, main

HERE = os.path.dirname(os.path.abspath(__file__))
FPM = os.environ.get("TKSHM_PHP_FPM", "")
SO = os.environ.get("TKSHM_PHP_SO", "")

LIMIT = 40
REQUESTS = 160
THREADS = 16
KEY = "shared-key"
POLICY = "%d/day" % LIMIT

# {fpm_port} is this test's; {port} and {dir} are nginx.py's.
HTTP = """
    tkshm_table day file={dir}/day.tbl policy=%(policy)s;
    server {
        listen 127.0.0.1:{port} reuseport;
        root html;
        location /a {
            try_files /index.html =404;
            tkshm_limit day key=$http_x_api_key;
        }
        location /b {
            fastcgi_pass 127.0.0.1:{fpm_port};
            fastcgi_param SCRIPT_FILENAME {dir}/app.php;
            fastcgi_param SCRIPT_NAME /app.php;
            fastcgi_param REQUEST_METHOD $request_method;
            fastcgi_param QUERY_STRING $query_string;
            fastcgi_param REQUEST_URI $request_uri;
            fastcgi_param SERVER_PROTOCOL $server_protocol;
            fastcgi_param GATEWAY_INTERFACE CGI/1.1;
            fastcgi_param REMOTE_ADDR $remote_addr;
            # the table nginx declares above, for the application
            fastcgi_param TKSHM_TABLE {dir}/day.tbl;
            fastcgi_param TKSHM_POLICY %(policy)s;
        }
    }
""" % {"policy": POLICY}

POOL = """\
[global]
pid = {dir}/fpm.pid
error_log = {dir}/fpm.log
daemonize = no
[nginx]
{user}listen = 127.0.0.1:{port}
listen.allowed_clients = 127.0.0.1
pm = static
pm.max_children = 4
catch_workers_output = yes
"""


def skip_without_php():
    for what, path in (("TKSHM_PHP_FPM", FPM), ("TKSHM_PHP_SO", SO)):
        if not path or not os.path.isfile(path):
            print("skipped: %s=%r is not a file (install php8.2-fpm, build "
                  "the PHP extension; ctest sets it)" % (what, path),
                  file=sys.stderr)
            sys.exit(77)


class Fpm:
    """A php-fpm of 4 static workers on a free loopback port, its files in
    nginx's directory; as root its workers run as nginx's (nobody)."""

    def __init__(self, dir_):
        self.dir = dir_
        self.port = free_port()
        self.proc = None
        user = "user = nobody\ngroup = nogroup\n" if os.geteuid() == 0 else ""
        with open(os.path.join(dir_, "fpm.conf"), "w") as f:
            f.write(POOL.format(dir=dir_, port=self.port, user=user))

    def start(self):
        self.proc = subprocess.Popen(
            [FPM, "-n", "-d", "extension=" + SO, "-d",
             "display_errors=stderr", "-y", os.path.join(self.dir, "fpm.conf"),
             "-F"],
            stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.dir, "fpm.out"), "w"))

    def workers(self):
        return child_pids(self.proc.pid)

    def log(self):
        out = []
        for name in ("fpm.out", "fpm.log"):
            try:
                with open(os.path.join(self.dir, name)) as f:
                    out.append(f.read()[-4000:])
            except OSError:
                pass
        return "\n".join(out)

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)  # the master ends its workers
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wait_ready(n, fpm):
    """Until the pool has its 4 workers and answers through nginx."""
    deadline = time.time() + 20
    while time.time() < deadline:
        if fpm.proc.poll() is not None:
            raise RuntimeError("php-fpm exited: %s" % fpm.log())
        if len(fpm.workers()) >= 4:
            try:
                if n.get("/b?op=ping")[0] == 200:
                    return
            except OSError:
                pass
        time.sleep(0.05)
    raise RuntimeError("php-fpm did not answer: %s" % fpm.log())


def mixed_burst(n, paths):
    """Every path of `paths` requested once with the key, from THREADS
    threads at once: (Counter of (path, status), PHP's JSON bodies)."""
    counts = collections.Counter()
    bodies = []
    results = at_once(paths, lambda path: n.get(path, {"X-Api-Key": KEY}),
                      THREADS, failed=lambda _, e: (0, {}, b""))
    for path, (status, _, body) in results:
        counts[(path, status)] += 1
        if path.startswith("/b") and status in (200, 429):
            try:
                bodies.append(json.loads(body))
            except ValueError:  # a PHP error: counted apart
                bodies.append({"pid": 0, "change": body[:200]})
    return counts, bodies


def test_one_table_two_servers():
    """40 per day over /a (nginx) and /b (PHP-FPM), 160 requests: 40
    admitted in all."""
    n = Nginx(HTTP)
    fpm = Fpm(n.dir)
    n.write_conf(HTTP.replace("{fpm_port}", str(fpm.port)))
    shutil.copy(os.path.join(HERE, "php_app.php"), n.path("app.php"))
    try:
        n.start()
        fpm.start()
        wait_ready(n, fpm)
        paths = ["/a", "/b?op=check"] * (REQUESTS // 2)
        t0 = time.time()
        counts, bodies = mixed_burst(n, paths)
        took = time.time() - t0
        a_ok, b_ok = counts[("/a", 200)], counts[("/b?op=check", 200)]
        print("figures: %d requests (%d per path, %d threads) in %.2f s: "
              "/a (nginx) admitted %d, /b (PHP-FPM) admitted %d, sum %d of "
              "limit %d; all: %s" % (REQUESTS, REQUESTS // 2, THREADS, took,
                                     a_ok, b_ok, a_ok + b_ok, LIMIT,
                                     dict(counts)))
        denied = counts[("/a", 429)] + counts[("/b?op=check", 429)]
        check(a_ok + b_ok == LIMIT and denied == REQUESTS - LIMIT,
              "exactly %d of %d admitted over both paths" % (LIMIT, REQUESTS))
        check(a_ok > 0 and b_ok > 0, "both servers admitted some")
        pids = {b["pid"] for b in bodies}
        changes = collections.Counter(b["change"] for b in bodies)
        print("figures: PHP answered from %d workers, Table::change(): %s"
              % (len(pids), dict(changes)))
        check(changes == {"none": REQUESTS // 2},
              "PHP found nginx's table as declared (no change, no "
              "replacement)")
        check(sum(1 for b in bodies if b.get("allowed")) == b_ok,
              "PHP's decisions match its statuses")
        after = [n.get(p, {"X-Api-Key": KEY})[0] for p in ("/a", "/b")]
        check(after == [429, 429], "both paths deny once spent: %s" % after)
        other = [n.get(p, {"X-Api-Key": "other"})[0] for p in ("/a", "/b")]
        check(other == [200, 200], "another key is its own budget: %s"
              % other)
        st = os.stat(n.path("day.tbl"))
        print("figures: table file uid %d gid %d mode %o; php-fpm workers "
              "uid %d" % (st.st_uid, st.st_gid, st.st_mode & 0o777,
                          proc_uid(fpm.workers()[0])))
        check(st.st_mode & 0o777 == 0o600
              and proc_uid(fpm.workers()[0]) == st.st_uid,
              "PHP's workers run as the file's owner (mode 0600)")
    finally:
        fpm.stop()
        n.cleanup()


def proc_uid(pid):
    """The effective uid of process `pid`."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Uid:"):
                return int(line.split()[2])
    raise RuntimeError("no Uid in /proc/%d/status" % pid)


if __name__ == "__main__":
    skip_without_php()
    main([test_one_table_two_servers])
