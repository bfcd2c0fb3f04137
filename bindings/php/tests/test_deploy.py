"""The deployment of bindings/php/deploy/ run as pasted: the PHP-FPM pool
(tkshm-pool.conf), the application (index.php), and nginx (nginx-site.conf)
and Apache (apache-site.conf) in front of the pool, each front on its own
free loopback port, all three started and stopped by this test by pid.

The files are used as they are, except for these mechanical substitutions
(start_fpm() and site() below; each must occur in its file, or the test
fails):

  every file but index.php  /run/php/tkshm-app.sock -> <tmp>/fpm.sock
  tkshm-pool.conf           /dev/shm/tkshm-app.tkshm -> a file in <tmp>
                            www-data -> this user and group (non-root only)
  nginx-site.conf           "listen 80;" -> "listen 127.0.0.1:<port>;"
  apache-site.conf          "*:80" -> "127.0.0.1:<port>"
  both sites                /var/www/app -> <tmp>/www (index.php, as is)

and these additions: the pool file is included from a [global] section of
the test's own (pid, logs, daemonize = no), and gets
php_admin_value[extension] = the build's tkshm.so (the deployment relies on
`phpenmod tkshm`, which a test cannot run) and an access log naming each
request's worker; nginx-site.conf is included in an http{} block of the
test's own (4 workers, pid, logs, temp paths; Debian's fastcgi_params
copied beside it); apache-site.conf is included after a server
configuration of the test's own (mpm_event, authz_core, dir, proxy,
proxy_fcgi; pid, logs, Listen).

Checks:
- README.md shows each of the four files, byte for byte, in a fenced
  block (the README cannot drift from what is tested).
- Through nginx, then through Apache, each from its own client address
  (the application's key): requests reach index.php; 130 concurrent
  requests (16 threads) are admitted exactly 100 times (the policy's
  100/hour), served by several of the pool's 4 workers; every denial is 429
  with Retry-After and the RateLimit headers.
- Both fronts at once, from a third client address: 100 admitted of 130
  over both (one table behind both).

Run as a script (ctest does) with TKSHM_PHP_SO and TKSHM_PHP_FPM in the
environment (TKSHM_NGINX and TKSHM_HTTPD, TKSHM_HTTPD_MODULES are
optional: /usr/sbin/nginx, /usr/sbin/apache2, /usr/lib/apache2/modules);
exits 77 without php-fpm or without both nginx and Apache; a front that
is not installed is skipped alone."""

import collections
import http.client
import os
import grp
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "nginx", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "apache", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "support"))

import httpd  # noqa: E402  (bindings/apache/tests)
from at_once import at_once  # noqa: E402  (tests/support)
import nginx  # noqa: E402  (bindings/nginx/tests)
import test_fpm  # noqa: E402  (children_of)

DEPLOY = os.path.join(HERE, "..", "deploy")
README = os.path.join(HERE, "..", "README.md")
FPM = os.environ.get("TKSHM_PHP_FPM", "")
SO = os.environ.get("TKSHM_PHP_SO", "")

WORKERS = 4        # the pool's pm.max_children
LIMIT = 100        # index.php's "100/hour"
REQUESTS = 130
THREADS = 16
SOCKET = "/run/php/tkshm-app.sock"
ROOT = "/var/www/app"
TABLE = "/dev/shm/tkshm-app.tkshm"

# (file, language of its README block)
FILES = [("tkshm-pool.conf", "ini"), ("nginx-site.conf", "nginx"),
         ("apache-site.conf", "apache"), ("index.php", "php")]


def read(name):
    with open(os.path.join(DEPLOY, name)) as f:
        return f.read()


def substitute(text, subs, name):
    """Each (old, new) of subs replaced in text; every old must occur."""
    for old, new in subs:
        if old not in text:
            raise AssertionError("%s: %r does not occur" % (name, old))
        text = text.replace(old, new)
    return text


def get(port, path, source):
    """(status, headers, body) of one GET from loopback address source."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20,
                                   source_address=(source, 0))
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        c.close()


def burst(targets, source):
    """Each (port, path) of targets requested once, from THREADS threads
    at once: the list of (port, status, headers, body)."""
    results = at_once(targets, lambda t: get(t[0], t[1], source), THREADS,
                      errors=(OSError, http.client.HTTPException),
                      failed=lambda _, e: (0, {}, repr(e).encode()))
    return [(port, status, headers, body)
            for (port, _), (status, headers, body) in results]


class Nginx(nginx.Nginx):
    """nginx.py's nginx, with the http{} block of this test including the
    site file as it is (no tkshm module: the site uses none)."""

    def write_conf(self, site):
        os.makedirs(self.path("sites-enabled"), exist_ok=True)
        with open(self.path("sites-enabled", "app"), "w") as f:
            f.write(site)
        # "include fastcgi_params" is relative to nginx.conf's directory
        shutil.copy("/etc/nginx/fastcgi_params", self.path("fastcgi_params"))
        # the pool's socket is www-data's (listen.owner): so are the
        # workers, as on Debian (nginx.conf's "user www-data;")
        conf = nginx.main_conf(
            self.dir, '    access_log "%s/access.log";\n'
            '    include "%s/sites-enabled/app";' % (self.dir, self.dir),
            user="www-data www-data")
        with open(self.path("nginx.conf"), "w") as f:
            f.write(conf)


class Httpd(httpd.Httpd):
    """httpd.py's httpd, with a server configuration of this test's
    including the site file as it is (no mod_tkshm: the site uses none)."""

    CONF = httpd.SERVER + """LogLevel warn
{user}
LoadModule mpm_event_module {modules}/mod_mpm_event.so
LoadModule authz_core_module {modules}/mod_authz_core.so
LoadModule dir_module {modules}/mod_dir.so
LoadModule proxy_module {modules}/mod_proxy.so
LoadModule proxy_fcgi_module {modules}/mod_proxy_fcgi.so
CustomLog "{dir}/access.log" common
LogFormat "%h %l %u %t \\"%r\\" %>s %b" common
KeepAlive Off
Include "{dir}/sites-enabled/app.conf"
"""

    def write_conf(self, site):
        os.makedirs(self.path("sites-enabled"), exist_ok=True)
        with open(self.path("sites-enabled", "app.conf"), "w") as f:
            f.write(site)
        self.conf = self.path("httpd.conf")
        with open(self.conf, "w") as f:
            f.write(self.CONF.format(dir=self.dir, port=self.port,
                                     user=self.user, modules=httpd.MODULES))


class DeployTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="tkshm-deploy-")
        os.chmod(cls.dir, 0o755)  # the workers (www-data) read www/
        cls.socket = os.path.join(cls.dir, "fpm.sock")
        cls.www = os.path.join(cls.dir, "www")
        cls.table = os.path.join(cls.dir, "tables", "app.tkshm")
        cls.fpm = None
        os.makedirs(cls.www)
        os.makedirs(os.path.dirname(cls.table))
        shutil.copy(os.path.join(DEPLOY, "index.php"), cls.www)
        os.chmod(os.path.join(cls.www, "index.php"), 0o644)
        if os.geteuid() == 0:
            # the workers (www-data) create the table
            pw = pwd.getpwnam("www-data")
            os.chown(os.path.dirname(cls.table), pw.pw_uid, pw.pw_gid)
        try:
            cls.start_fpm()
        except BaseException:
            cls.tearDownClass()  # unittest does not when setUpClass fails
            raise

    @classmethod
    def start_fpm(cls):
        subs = [(SOCKET, cls.socket), (TABLE, cls.table)]
        if os.geteuid() != 0:
            # FPM cannot switch users or give its socket away
            user = pwd.getpwuid(os.getuid()).pw_name
            group = grp.getgrgid(os.getgid()).gr_name
            subs += [("user = www-data", "user = " + user),
                     ("group = www-data", "group = " + group),
                     ("listen.owner = www-data", "listen.owner = " + user),
                     ("listen.group = www-data", "listen.group = " + group)]
        pool = substitute(read("tkshm-pool.conf"), subs, "tkshm-pool.conf")
        pool += ("\n; added by test_deploy.py\n"
                 "php_admin_value[extension] = %s\n"
                 "access.log = %s/fpm-access.log\n"
                 'access.format = "%%p %%s %%{REMOTE_ADDR}e %%r"\n'
                 % (SO, cls.dir))
        os.makedirs(os.path.join(cls.dir, "pool.d"))
        with open(os.path.join(cls.dir, "pool.d", "app.conf"), "w") as f:
            f.write(pool)
        with open(os.path.join(cls.dir, "php-fpm.conf"), "w") as f:
            f.write("[global]\npid = %s/fpm.pid\nerror_log = %s/fpm.log\n"
                    "daemonize = no\ninclude = %s/pool.d/*.conf\n"
                    % (cls.dir, cls.dir, cls.dir))
        cls.fpm_out = open(os.path.join(cls.dir, "fpm.out"), "w")
        cls.fpm = subprocess.Popen(
            [FPM, "-n", "-y", os.path.join(cls.dir, "php-fpm.conf"), "-F"],
            stdout=cls.fpm_out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if cls.fpm.poll() is not None:
                raise AssertionError("php-fpm exited:\n" + cls.fpm_log())
            if (len(test_fpm.children_of(cls.fpm.pid)) == WORKERS
                    and os.path.exists(cls.socket)):
                return
            time.sleep(0.05)
        raise AssertionError("php-fpm did not start:\n" + cls.fpm_log())

    @classmethod
    def fpm_log(cls):
        text = ""
        for name in ("fpm.out", "fpm.log"):
            try:
                with open(os.path.join(cls.dir, name)) as f:
                    text += "--- %s\n%s" % (name, f.read()[-4000:])
            except OSError:
                pass
        return text

    @classmethod
    def tearDownClass(cls):
        if cls.fpm is not None and cls.fpm.poll() is None:
            cls.fpm.send_signal(signal.SIGQUIT)  # graceful stop
            try:
                cls.fpm.wait(10)
            except subprocess.TimeoutExpired:
                cls.fpm.kill()
                cls.fpm.wait()
        if cls.fpm is not None:
            cls.fpm_out.close()
            cls.fpm = None
        shutil.rmtree(cls.dir, ignore_errors=True)

    def site(self, name, port):
        subs = [(SOCKET, self.socket), (ROOT, self.www)]
        if name == "nginx-site.conf":
            subs.append(("listen 80;", "listen 127.0.0.1:%d;" % port))
        else:
            subs.append(("*:80", "127.0.0.1:%d" % port))
        return substitute(read(name), subs, name)

    def fpm_pids(self, source):
        """The workers that served requests from `source` (FPM's access
        log: "pid status address request")."""
        pids = collections.Counter()
        with open(os.path.join(self.dir, "fpm-access.log")) as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 3 and fields[2] == source:
                    pids[int(fields[0])] += 1
        return pids

    def check_burst(self, what, targets, source):
        """REQUESTS requests over targets [(port, path)] from `source`:
        exactly LIMIT admitted, every answer index.php's."""
        t0 = time.monotonic()
        rs = burst(targets, source)
        took = time.monotonic() - t0
        statuses = collections.Counter(r[1] for r in rs)
        self.assertEqual(statuses, {200: LIMIT, 429: REQUESTS - LIMIT},
                         "%s: %s\n%s" % (what, statuses, self.fpm_log()))
        remaining = []
        for port, status, headers, body in rs:
            self.assertEqual(headers.get("RateLimit-Policy"),
                             '"app";q=%d' % LIMIT, headers)
            if status == 200:
                self.assertEqual(body, b"Hello from PHP-FPM\n")
                self.assertNotIn("Retry-After", headers)
                m = re.fullmatch(r'"app";r=(\d+);t=\d+',
                                 headers.get("RateLimit", ""))
                self.assertIsNotNone(m, headers)
                remaining.append(int(m.group(1)))
            else:
                self.assertTrue(body.startswith(b"Too many requests"), body)
                # the next unit is due in (at most) 36 s
                self.assertTrue(1 <= int(headers["Retry-After"]) <= 36,
                                headers)
                self.assertRegex(headers.get("RateLimit", ""),
                                 r'^"app";r=0;t=\d+$')
        # remaining counts down to 0 (not once each: a worker whose clock
        # read came first may commit second, and then sees one unit less)
        self.assertTrue(all(0 <= r < LIMIT for r in remaining), remaining)
        self.assertIn(0, remaining)
        # the pool's access log has a request's line once it has answered
        pids = self.fpm_pids(source)
        workers = set(test_fpm.children_of(self.fpm.pid))
        self.assertEqual(sum(pids.values()), REQUESTS, pids)
        self.assertTrue(set(pids) <= workers, (pids, workers))
        self.assertGreaterEqual(len(pids), 2, "one worker served all")
        print("%s: %d requests in %.2f s: %d admitted, %d denied (429); "
              "served by %d of the pool's %d workers %s"
              % (what, REQUESTS, took, statuses[200], statuses[429],
                 len(pids), len(workers), sorted(pids.values())),
              file=sys.stderr)
        return rs

    def test_readme(self):
        """README.md shows each file byte for byte in a fenced block."""
        with open(README) as f:
            readme = f.read()
        for name, lang in FILES:
            block = "```%s\n%s```\n" % (lang, read(name))
            self.assertEqual(readme.count(block), 1,
                             "README.md does not show deploy/%s as it is "
                             "(a ```%s block)" % (name, lang))

    @unittest.skipUnless(os.access(nginx.NGINX, os.X_OK), "no nginx")
    def test_nginx(self):
        n = Nginx("")
        try:
            n.write_conf(self.site("nginx-site.conf", n.port))
            ok, out = n.configtest()
            self.assertTrue(ok, out)
            n.start()
            self.front(n.port, "nginx", "127.0.1.2", "127.0.0.2")
        finally:
            n.cleanup()

    @unittest.skipUnless(os.access(httpd.HTTPD, os.X_OK), "no apache2")
    def test_apache(self):
        h = Httpd("")
        try:
            h.write_conf(self.site("apache-site.conf", h.port))
            rc, out = h.configtest()
            self.assertEqual(rc, 0, out)
            self.start_httpd(h)
            self.front(h.port, "apache", "127.0.1.3", "127.0.0.3")
        finally:
            h.cleanup()

    @unittest.skipUnless(os.access(nginx.NGINX, os.X_OK)
                         and os.access(httpd.HTTPD, os.X_OK),
                         "no nginx or no apache2")
    def test_both(self):
        """Both fronts at once: one table behind both."""
        n, h = Nginx(""), Httpd("")
        try:
            n.write_conf(self.site("nginx-site.conf", n.port))
            h.write_conf(self.site("apache-site.conf", h.port))
            n.start()
            self.start_httpd(h)
            targets = [(n.port, "/"), (h.port, "/")] * (REQUESTS // 2)
            rs = self.check_burst("nginx and apache", targets, "127.0.0.4")
            admitted = collections.Counter(r[0] for r in rs if r[1] == 200)
            self.assertTrue(admitted[n.port] and admitted[h.port],
                            "both fronts admitted some: %s" % admitted)
        finally:
            n.cleanup()
            h.cleanup()

    def start_httpd(self, h):
        h.start(wait=False)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            self.assertIsNone(h.proc.poll(), h.output())
            if "resuming normal operations" in h.output():
                try:
                    socket.create_connection(("127.0.0.1", h.port), 1).close()
                    return
                except OSError:
                    pass
            time.sleep(0.05)
        self.fail("apache2 did not start:\n" + h.output())

    def front(self, port, what, reach, source):
        """Requests from `reach` reach index.php; then the burst from
        `source`."""
        # index.php answers "/" (index), "/index.php" and any other path
        # (try_files, FallbackResource); a missing .php is the front's 404
        for path in ("/", "/index.php", "/some/page?x=1"):
            status, headers, body = get(port, path, reach)
            self.assertEqual((status, body), (200, b"Hello from PHP-FPM\n"),
                             "%s %s: %s" % (what, path, self.fpm_log()))
            self.assertIn("RateLimit", headers)
        self.assertEqual(get(port, "/missing.php", reach)[0], 404)
        self.check_burst(what, [(port, "/")] * REQUESTS, source)


if __name__ == "__main__":
    if not FPM or not os.access(FPM, os.X_OK):
        print("skipped: php-fpm is not installed (apt-get install "
              "php8.2-fpm)", file=sys.stderr)
        sys.exit(77)
    if not SO or not os.path.isfile(SO):
        print("TKSHM_PHP_SO must name the built tkshm.so", file=sys.stderr)
        sys.exit(2)
    if not (os.access(nginx.NGINX, os.X_OK)
            or os.access(httpd.HTTPD, os.X_OK)):
        print("skipped: neither nginx nor apache2 is installed",
              file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
