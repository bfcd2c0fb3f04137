"""gunicorn (Debian's) with 4 prefork sync workers, each opening one file
table through tkshm.wsgi.RateLimitMiddleware: 200 requests from 8 client
threads must give exactly 50 x 200 and 150 x 429 across all workers, with
the right RateLimit headers.  The test starts and stops gunicorn itself.

Run as a script (ctest does): exits 77 (skipped) without gunicorn."""

import os
import signal
import sys
import textwrap
import time
import unittest

import web_servers
from web_servers import DAY_MS, fetch_all

LIMIT = 50
REQUESTS = 200
CLIENTS = 8
WORKERS = 4
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


class Server(web_servers.Server):
    """gunicorn with WORKERS sync workers serving APP, its table a file in
    its directory."""

    name = "gunicorn"

    def __init__(self):
        super().__init__("tkshm-gunicorn-", {"app.py": APP}, run_dir=False)
        self.start(self.gunicorn("app:application", WORKERS),
                   TKSHM_TEST_TABLE=os.path.join(self.dir, "rl.tkshm"),
                   TKSHM_TEST_POLICY=POLICY)


class GunicornTest(unittest.TestCase):
    def setUp(self):
        # A fixed window of one day: never start within a minute of its end.
        now = time.time() * 1000
        left = DAY_MS - now % DAY_MS
        if left < 60000:
            time.sleep(left / 1000 + 1)
        self.srv = Server()
        self.addCleanup(self.srv.stop)

    def test_exact_admission_across_workers(self):
        srv = self.srv
        srv.wait_booted(WORKERS, 30)
        results = fetch_all(srv.base, ["/"] * REQUESTS, CLIENTS)
        codes = [s for _, s, _ in results]
        self.assertEqual(codes.count(200), LIMIT, codes)
        self.assertEqual(codes.count(429), REQUESTS - LIMIT, codes)

        ok = [h for _, s, h in results if s == 200]
        denied = [h for _, s, h in results if s == 429]
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
        srv.proc.send_signal(signal.SIGTERM)
        self.assertEqual(srv.proc.wait(30), 0, srv.text())
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
