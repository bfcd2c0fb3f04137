"""gunicorn (Debian's) with 4 prefork workers and the middleware's default
table (docs/lifecycle.md):

- without --preload every worker imports the app after the fork; the
  default table is a file named after the app in the run directory, so the
  4 workers share one limit exactly (an anonymous table would give each its
  own: 44 admitted where 11 was the limit); with --preload the same;
- a policy edited while requests keep coming, applied by a reload (SIGHUP:
  gunicorn starts new workers, which import the app again): no 5xx, no
  failed request, and the key's count stands: limit 10 -> 20 per day on a
  key that used 10 admits exactly 10 more.

Run as a script (ctest does): exits 77 (skipped) without gunicorn."""

import concurrent.futures
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

from test_gunicorn import DAY_MS, fetch, free_port

WORKERS = 4

APP = textwrap.dedent('''
    import os

    from tkshm.wsgi import RateLimitMiddleware

    with open(os.path.join(os.path.dirname(__file__), "policy.txt")) as f:
        POLICY = f.read().strip()

    def inner(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain"),
                                  ("X-Worker", str(os.getpid()))])
        return [b"ok\\n"]

    def key(environ):
        if environ.get("PATH_INFO") == "/healthz":
            return None  # not counted
        return "one-client"

    # A policy string: the application's default table, shared by every
    # worker (tkshm.run_dir(): $XDG_RUNTIME_DIR/tkshm here).
    application = RateLimitMiddleware(inner, POLICY, key_func=key,
                                      slots=1024)
''')


def policy(limit):
    return "fixedWindow:limit=%d,windowMs=%d" % (limit, DAY_MS)


class Server:
    """A gunicorn serving APP from a fresh directory."""

    def __init__(self, limit, preload):
        now = time.time() * 1000
        if DAY_MS - now % DAY_MS < 60000:  # never across a window's end
            time.sleep((DAY_MS - now % DAY_MS) / 1000 + 1)
        self.dir = tempfile.mkdtemp(prefix="tkshm-gunicorn-life-")
        os.mkdir(os.path.join(self.dir, "run"), 0o700)
        with open(os.path.join(self.dir, "app.py"), "w") as f:
            f.write(APP)
        self.set_policy(limit)
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.log = open(os.path.join(self.dir, "gunicorn.log"), "w+")
        env = dict(os.environ, XDG_RUNTIME_DIR=os.path.join(self.dir, "run"))
        args = [sys.executable, "-m", "gunicorn", "--workers", str(WORKERS),
                "--worker-class", "sync", "--bind",
                "127.0.0.1:%d" % self.port, "--chdir", self.dir,
                "--graceful-timeout", "5"]
        self.proc = subprocess.Popen(
            args + (["--preload"] if preload else []) + ["app:application"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def set_policy(self, limit):
        with open(os.path.join(self.dir, "policy.txt"), "w") as f:
            f.write(policy(limit) + "\n")

    def text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def wait_booted(self, n):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("gunicorn exited:\n" + self.text())
            if self.text().count("Booting worker") >= n:
                try:
                    if fetch(self.base + "/healthz")[0] == 200:
                        return
                except OSError:
                    pass
            time.sleep(0.05)
        raise AssertionError("gunicorn did not start:\n" + self.text())

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir)


def burst(base, n, clients=8):
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        return [s for s, _, _ in pool.map(lambda _: fetch(base + "/"),
                                          range(n))]


class DefaultTableTest(unittest.TestCase):
    def exact(self, preload):
        srv = Server(11, preload)
        self.addCleanup(srv.stop)
        srv.wait_booted(WORKERS)
        codes = burst(srv.base, 44)
        self.assertEqual(codes.count(200), 11, codes)
        self.assertEqual(codes.count(429), 33, codes)
        tables = os.listdir(os.path.join(srv.dir, "run", "tkshm"))
        self.assertEqual(len(tables), 1, tables)
        self.assertTrue(tables[0].startswith("app.inner-"), tables)
        print("gunicorn %s: 11 of 44 admitted across %d workers, one "
              "table %s" % ("--preload" if preload else "without --preload",
                            WORKERS, tables[0]), file=sys.stderr)

    def test_without_preload(self):
        self.exact(False)

    def test_with_preload(self):
        self.exact(True)


class ReloadTest(unittest.TestCase):
    def test_policy_edit_applied_by_a_reload(self):
        srv = Server(10, False)
        self.addCleanup(srv.stop)
        srv.wait_booted(WORKERS)
        self.assertEqual(burst(srv.base, 30).count(200), 10)
        statuses, stop = [], threading.Event()

        def hammer():
            while not stop.is_set():
                try:
                    statuses.append(fetch(srv.base + "/")[0])
                except OSError as e:
                    statuses.append(repr(e))
                time.sleep(0.002)

        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        srv.set_policy(20)
        srv.proc.send_signal(signal.SIGHUP)  # new workers, new policy
        srv.wait_booted(2 * WORKERS)
        deadline = time.monotonic() + 20
        while statuses.count(200) < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # more requests after the 10: all denied
        stop.set()
        for t in threads:
            t.join()
        failed = [s for s in statuses if s not in (200, 429)]
        self.assertEqual(failed, [], "failed requests across the reload")
        self.assertEqual(statuses.count(200), 10, statuses)
        print("gunicorn reload: %d requests, 0 failed, 10 admitted before "
              "the edit and exactly 10 after it (limit 10 -> 20 per day)"
              % len(statuses), file=sys.stderr)


if __name__ == "__main__":
    try:
        import gunicorn  # noqa: F401
    except ImportError:
        print("skipped: gunicorn is not installed (apt-get install "
              "gunicorn)", file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
