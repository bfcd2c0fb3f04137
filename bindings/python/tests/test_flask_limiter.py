"""One Flask app limited by Flask-Limiter (Debian's python3-flask-limiter)
to "10 per day" on one client, served by gunicorn with 4 prefork workers,
80 requests from 8 concurrent clients, for each strategy (fixed-window,
moving-window) and each storage:

- memory:// keeps a count per worker: it admits up to 10 per worker that
  served (the figure is printed), more than the limit;
- tkshm:// (tkshm.limits_storage) decides on one table file that every
  worker opens: exactly 10 admitted.

Every response carries the pid of the worker that served it, so the test
also checks that the requests did spread over several workers.

Run as a script (ctest does): exits 77 (skipped) without gunicorn, Flask
or Flask-Limiter."""

import os
import sys
import textwrap
import time
import unittest

import web_servers
from web_servers import DAY_MS, fetch_all, tally

LIMIT = 10
WORKERS = 4
REQUESTS = 80
CLIENTS = 8

APP = textwrap.dedent('''
    import os
    import time

    import tkshm.limits_storage  # registers tkshm:// with limits
    from flask import Flask
    from flask_limiter import Limiter
    from flask_limiter.util import get_remote_address

    app = Flask(__name__)
    limiter = Limiter(get_remote_address, app=app, headers_enabled=True,
                      storage_uri=os.environ["TEST_STORAGE_URI"],
                      strategy=os.environ["TEST_STRATEGY"])

    @app.route("/")
    @limiter.limit("%d per day")
    def index():
        return "ok\\n"

    @app.route("/healthz")
    def healthz():
        return "ok\\n"

    @app.after_request
    def worker_pid(response):  # 429s included
        # Every response keeps its worker busy a while, denials too (they
        # are fast), so that concurrent requests find the others free.
        time.sleep(0.01)
        response.headers["X-Worker"] = str(os.getpid())
        return response
''' % LIMIT)


class Server(web_servers.Server):
    """gunicorn with WORKERS sync workers serving APP from a fresh
    directory, with $XDG_RUNTIME_DIR in it."""

    name = "gunicorn"

    def __init__(self, storage_uri, strategy):
        super().__init__("tkshm-flask-limiter-", {"app.py": APP})
        self.tables = os.path.join(self.dir, "tables")
        self.start(self.gunicorn("app:app", WORKERS), TEST_STRATEGY=strategy,
                   TEST_STORAGE_URI=storage_uri.replace("TABLES",
                                                        self.tables))


class FlaskLimiterTest(unittest.TestCase):
    def setUp(self):
        # tkshm's fixed window is the UTC day: never start near its end.
        left = DAY_MS - time.time() * 1000 % DAY_MS
        if left < 120000:
            time.sleep(left / 1000 + 1)

    def serve(self, storage_uri, strategy):
        """Runs the burst on a new server: (admitted, {worker pid: served},
        the server, the responses)."""
        srv = Server(storage_uri, strategy)
        self.addCleanup(srv.stop)
        srv.wait_booted(WORKERS, 30)
        results = fetch_all(srv.base, ["/"] * REQUESTS, CLIENTS)
        codes, per_worker = tally(results)
        self.assertEqual(codes[200] + codes[429], REQUESTS, srv.text())
        self.assertNotIn(None, per_worker)
        # One worker alone would admit exactly the limit with any storage.
        self.assertGreaterEqual(len(per_worker), 2, per_worker)
        for _, status, headers in results:
            self.assertEqual(headers.get("X-RateLimit-Limit"), str(LIMIT))
            if status == 429:
                self.assertGreaterEqual(int(headers["Retry-After"]), 1)
        return codes[200], per_worker, srv

    def compare(self, strategy, table):
        admitted, per_worker, _ = self.serve("memory://", strategy)
        # One count per worker: each admits its own first LIMIT.
        self.assertEqual(admitted, sum(min(LIMIT, n)
                                       for n in per_worker.values()))
        self.assertGreater(admitted, LIMIT)
        self.report(strategy, "memory://", admitted, per_worker)
        admitted, per_worker, srv = self.serve("tkshm://TABLES/", strategy)
        self.assertEqual(admitted, LIMIT)
        self.assertEqual(os.listdir(srv.tables), [table])
        self.report(strategy, "tkshm://", admitted, per_worker)

    @staticmethod
    def report(strategy, storage, admitted, per_worker):
        print("\nFlask-Limiter %s, %s, gunicorn --workers %d: %d of %d "
              "admitted (limit %d per day), served per worker %s" % (
                  strategy, storage, WORKERS, admitted, REQUESTS, LIMIT,
                  sorted(per_worker.values())), file=sys.stderr)

    def test_fixed_window(self):
        self.compare("fixed-window", "fixed-%d-per-%dms" % (LIMIT, DAY_MS))

    def test_moving_window(self):
        self.compare("moving-window", "log-%d-per-%dms" % (LIMIT, DAY_MS))


if __name__ == "__main__":
    try:
        import flask  # noqa: F401
        import flask_limiter  # noqa: F401
        import gunicorn  # noqa: F401
    except ImportError as e:
        print("skipped: %s (apt-get install gunicorn python3-flask "
              "python3-flask-limiter)" % e, file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
