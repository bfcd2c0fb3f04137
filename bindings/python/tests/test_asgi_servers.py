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

import collections
import concurrent.futures
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from test_gunicorn import fetch, free_port

WORKERS = 4
CLIENTS = 8
DAY_MS = 86400000
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


class Server:
    """The app above, served by `command` from a fresh directory with
    $XDG_RUNTIME_DIR in it, in a process group of its own."""

    booted = "Application startup complete."  # once per worker

    def __init__(self, command):
        self.dir = tempfile.mkdtemp(prefix="tkshm-asgi-servers-")
        self.run = os.path.join(self.dir, "run")
        os.mkdir(self.run, 0o700)
        with open(os.path.join(self.dir, "app.py"), "w") as f:
            f.write(APP)
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.log = open(os.path.join(self.dir, "server.log"), "w+")
        env = dict(os.environ, XDG_RUNTIME_DIR=self.run,
                   TKSHM_TEST_APP="gcra:limit=%d,periodMs=%d" % (
                       APP_LIMIT, DAY_MS),
                   TKSHM_TEST_LOGIN="gcra:limit=%d,periodMs=%d" % (
                       LOGIN_LIMIT, DAY_MS))
        self.proc = subprocess.Popen(
            command(self), env=env, cwd=self.dir, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True)

    def text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def wait_booted(self):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("server exited:\n" + self.text())
            if self.text().count(self.booted) >= WORKERS:
                try:
                    if fetch(self.base + "/healthz")[0] == 200:
                        return
                except OSError:
                    pass
            time.sleep(0.05)
        raise AssertionError("server did not start:\n" + self.text())

    def stop(self):
        """SIGTERM to the server's process group, SIGKILL if it lingers."""
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            pass
        except ProcessLookupError:
            self.proc.wait()
        try:  # the master gone, no worker of its group may outlive it
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir)


def uvicorn(srv):
    return [sys.executable, "-m", "uvicorn", "--workers", str(WORKERS),
            "--host", "127.0.0.1", "--port", str(srv.port), "--app-dir",
            srv.dir, "app:api"]


def gunicorn(srv):
    return [sys.executable, "-m", "gunicorn", "--workers", str(WORKERS),
            "--worker-class", "uvicorn.workers.UvicornWorker", "--bind",
            "127.0.0.1:%d" % srv.port, "--chdir", srv.dir,
            "--graceful-timeout", "5", "app:api"]


def burst(base):
    """SENT's requests, shuffled, from CLIENTS threads: [(path, status,
    headers by their lower-case names)]."""
    paths = [p for p, n in SENT.items() for _ in range(n)]
    random.shuffle(paths)

    def one(path):
        status, headers, _ = fetch(base + path)
        return path, status, {k.lower(): v for k, v in headers.items()}

    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        return list(pool.map(one, paths))


class AsgiServersTest(unittest.TestCase):
    def serve(self, command, label):
        srv = Server(command)
        self.addCleanup(srv.stop)
        srv.wait_booted()
        results = burst(srv.base)
        workers = collections.Counter(h.get("x-worker")
                                      for _, _, h in results)
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
