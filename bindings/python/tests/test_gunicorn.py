"""gunicorn (Debian's) with 4 prefork sync workers, each opening one file
table through tkshm.wsgi.RateLimitMiddleware: 200 requests from 8 client
threads must give exactly 50 x 200 and 150 x 429 across all workers, with
the right RateLimit headers.  The test starts and stops gunicorn itself.

Run as a script (ctest does): exits 77 (skipped) without gunicorn."""

import concurrent.futures
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import urllib.error
import urllib.request

LIMIT = 50
REQUESTS = 200
CLIENTS = 8
WORKERS = 4
DAY_MS = 86400000
POLICY = "fixedWindow:limit=%d,windowMs=%d" % (LIMIT, DAY_MS)

APP = textwrap.dedent('''
    import os
    import time

    import tkshm
    from tkshm.wsgi import RateLimitMiddleware

    # Once per worker process: gunicorn imports the app after the fork.
    TABLE = tkshm.Table(os.environ["TKSHM_TEST_TABLE"],
                        os.environ["TKSHM_TEST_POLICY"], slots=1024)

    def inner(environ, start_response):
        time.sleep(0.005)  # keeps a worker busy, so that all serve
        start_response("200 OK", [("Content-Type", "text/plain"),
                                  ("X-Worker", str(os.getpid()))])
        return [b"ok\\n"]

    def key(environ):
        if environ.get("PATH_INFO") == "/healthz":
            return None  # not counted
        return RateLimitMiddleware.default_key(environ)

    application = RateLimitMiddleware(inner, TABLE, key_func=key)
''')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


class GunicornTest(unittest.TestCase):
    def setUp(self):
        # A fixed window of one day: never start within a minute of its end.
        now = time.time() * 1000
        left = DAY_MS - now % DAY_MS
        if left < 60000:
            time.sleep(left / 1000 + 1)
        self.dir = tempfile.mkdtemp(prefix="tkshm-gunicorn-")
        with open(os.path.join(self.dir, "app.py"), "w") as f:
            f.write(APP)
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "gunicorn.log"), "w+")
        env = dict(os.environ)
        env["TKSHM_TEST_TABLE"] = os.path.join(self.dir, "rl.tkshm")
        env["TKSHM_TEST_POLICY"] = POLICY
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", str(WORKERS),
             "--worker-class", "sync", "--bind",
             "127.0.0.1:%d" % self.port, "--chdir", self.dir,
             "--graceful-timeout", "5", "app:application"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.base = "http://127.0.0.1:%d" % self.port

    def tearDown(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir)

    def gunicorn_log(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def wait_ready(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self.assertIsNone(self.proc.poll(),
                              "gunicorn exited:\n" + self.gunicorn_log())
            booted = self.gunicorn_log().count("Booting worker")
            try:
                status, _, _ = fetch(self.base + "/healthz")
                if status == 200 and booted >= WORKERS:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        self.fail("gunicorn did not start:\n" + self.gunicorn_log())

    def test_exact_admission_across_workers(self):
        self.wait_ready()
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            results = list(pool.map(lambda _: fetch(self.base + "/"),
                                    range(REQUESTS)))
        codes = [s for s, _, _ in results]
        self.assertEqual(codes.count(200), LIMIT, codes)
        self.assertEqual(codes.count(429), REQUESTS - LIMIT, codes)

        ok = [h for s, h, _ in results if s == 200]
        denied = [h for s, h, _ in results if s == 429]
        workers = {h["X-Worker"] for h in ok}
        self.assertGreaterEqual(len(workers), 2, "one worker served all")
        # each admission saw a different remaining count: 49 .. 0
        remaining = sorted(int(h["RateLimit"].split(";r=")[1].split(";")[0])
                           for h in ok)
        self.assertEqual(remaining, list(range(LIMIT)))
        for h in ok:
            self.assertEqual(h["RateLimit-Policy"], '"default";q=%d' % LIMIT)
            self.assertNotIn("Retry-After", h)
        for h in denied:
            self.assertEqual(h["RateLimit-Policy"], '"default";q=%d' % LIMIT)
            rl = h["RateLimit"]
            self.assertTrue(rl.startswith('"default";r=0;t='), rl)
            reset_s = int(rl.split(";t=")[1])
            retry = int(h["Retry-After"])
            now = time.time() * 1000
            expect = (DAY_MS - now % DAY_MS) / 1000
            self.assertLessEqual(abs(retry - expect), 60, (retry, expect))
            self.assertLessEqual(abs(reset_s - retry), 1)
            self.assertGreaterEqual(retry, 1)

        # stop: SIGTERM, workers and master exit
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(self.proc.wait(30), 0, self.gunicorn_log())
        print("gunicorn: %d x 200 by %d workers, %d x 429"
              % (len(ok), len(workers), len(denied)), file=sys.stderr)


if __name__ == "__main__":
    try:
        import gunicorn  # noqa: F401
    except ImportError:
        print("skipped: gunicorn is not installed (apt-get install "
              "gunicorn)", file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
