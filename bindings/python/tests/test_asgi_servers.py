"""One FastAPI app, limited by tkshm.asgi.RateLimitMiddleware (added with
add_middleware: the application's default table) and, on /login, by a
tkshm.fastapi.RateLimit dependency (a table of the route's own), served
by 4 worker processes:

- uvicorn --workers 4 (Debian's python3-uvicorn: workers spawned by
  multiprocessing, each a new interpreter that imports the app);
- gunicorn -w 4 -k uvicorn.workers.UvicornWorker (forked workers that
  import the app after the fork).

Concurrent clients send to "/" and "/login" interleaved; across the 4
workers exactly the limit of each is admitted, and more than one worker
answered (every response carries the worker's pid).

Run as a script (ctest does): exits 77 (skipped) without uvicorn,
gunicorn or FastAPI."""

import os
import random
import subprocess
import sys
import textwrap
import unittest

import web_servers
from web_servers import DAY_MS, fetch_all, tally

WORKERS = 4
CLIENTS = 8
APP_LIMIT = 20
LOGIN_LIMIT = 7
SENT = {"/": 80, "/login": 40}

APP = textwrap.dedent('''
    import os
    import time

    from fastapi import Depends, FastAPI
    from tkshm.asgi import RateLimitMiddleware, client_key
    from tkshm.fastapi import RateLimit

    PID = str(os.getpid()).encode()

    api = FastAPI()

    # Sync endpoints that take a while run in uvicorn's threads, so that a
    # worker is busy now and then and its siblings take connections too.
    @api.get("/")
    def root():
        time.sleep(0.005)
        return "ok"

    @api.get("/login", dependencies=[Depends(
        RateLimit(os.environ["TKSHM_TEST_LOGIN"], policy_name="login"))])
    def login():
        time.sleep(0.005)
        return "ok"

    @api.get("/healthz")
    def healthz():
        return "ok"

    def app_key(scope):
        # /login has a limit of its own; /healthz is not counted.
        if scope["path"] in ("/login", "/healthz"):
            return None
        return client_key(scope)

    api.add_middleware(RateLimitMiddleware, table=os.environ["TKSHM_TEST_APP"],
                       key_func=app_key, policy_name="app", slots=1024)

    class WorkerPid:
        """X-Worker: the pid, on every response (added last: outermost,
        so the middleware's denials carry it too)."""

        def __init__(self, app):
            self.app = app

        async def __call__(self, scope, receive, send):
            async def send_pid(message):
                if message["type"] == "http.response.start":
                    message["headers"] = list(message.get("headers", [])) \\
                        + [(b"x-worker", PID)]
                await send(message)
            await self.app(scope, receive, send_pid)

    api.add_middleware(WorkerPid)
''')


class Server(web_servers.Server):
    """The app above, served by `command` from a fresh directory with
    $XDG_RUNTIME_DIR in it, in a process group of its own."""

    booted = "Application startup complete."  # once per worker

    def __init__(self, command):
        super().__init__("tkshm-asgi-servers-", {"app.py": APP})
        self.start(command(self),
                   TKSHM_TEST_APP="gcra:limit=%d,periodMs=%d" % (
                       APP_LIMIT, DAY_MS),
                   TKSHM_TEST_LOGIN="gcra:limit=%d,periodMs=%d" % (
                       LOGIN_LIMIT, DAY_MS))

    def stop(self):
        super().stop(15)


def uvicorn(srv):
    return srv.uvicorn("app:api", WORKERS)


def gunicorn(srv):
    return srv.gunicorn("app:api", WORKERS, "uvicorn.workers.UvicornWorker")


def burst(base):
    """SENT's requests, shuffled, from CLIENTS threads: [(path, status,
    headers by their lower-case names)]."""
    paths = [p for p, n in SENT.items() for _ in range(n)]
    random.shuffle(paths)
    return [(path, status, {k.lower(): v for k, v in headers.items()})
            for path, status, headers in fetch_all(base, paths, CLIENTS)]


class AsgiServersTest(unittest.TestCase):
    def serve(self, command, label):
        srv = Server(command)
        self.addCleanup(srv.stop)
        srv.wait_booted(WORKERS, 20)
        results = burst(srv.base)
        _, workers = tally(results)
        self.assertNotIn(None, workers)
        # Otherwise a table per worker would pass the exactness test.
        self.assertGreaterEqual(len(workers), 2, workers)
        for path, limit, name in (("/", APP_LIMIT, "app"),
                                  ("/login", LOGIN_LIMIT, "login")):
            mine = [(s, h) for p, s, h in results if p == path]
            codes = [s for s, _ in mine]
            self.assertEqual(codes.count(200), limit, (path, codes))
            self.assertEqual(codes.count(429), SENT[path] - limit,
                             (path, codes))
            for s, h in mine:
                self.assertEqual(h["ratelimit-policy"],
                                 '"%s";q=%d' % (name, limit), (path, h))
                self.assertEqual("retry-after" in h, s == 429, (path, h))
            print("%s: %s admitted %d of %d (limit %d) across %d workers"
                  % (label, path, codes.count(200), len(codes), limit,
                     len(workers)), file=sys.stderr)
        tables = sorted(os.listdir(os.path.join(srv.run, "tkshm")))
        self.assertEqual(len(tables), 2, tables)
        self.assertTrue(tables[0].startswith("app.api-"), tables)
        self.assertTrue(tables[1].startswith("route-app.login_GET__login_-0-"),
                        tables)

    def test_uvicorn_workers(self):
        self.serve(uvicorn, "uvicorn --workers %d" % WORKERS)

    def test_gunicorn_uvicorn_workers(self):
        self.serve(gunicorn, "gunicorn -w %d -k uvicorn.workers.UvicornWorker"
                   % WORKERS)


def missing():
    """What this test needs and is not installed, or None."""
    for module, package in (("uvicorn.workers", "python3-uvicorn"),
                            ("gunicorn", "gunicorn"),
                            ("fastapi", "python3-fastapi")):
        found = subprocess.run([sys.executable, "-c", "import " + module],
                               stderr=subprocess.DEVNULL).returncode == 0
        if not found:
            return package
    return None


if __name__ == "__main__":
    package = missing()
    if package:
        print("skipped: %s is not installed (apt-get install %s)"
              % (package, package), file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
