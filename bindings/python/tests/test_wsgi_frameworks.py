"""A Flask app (tkshm.flask.Limiter) and a Django app (tkshm.django) each
served by gunicorn with 4 prefork sync workers, each worker importing the
app and opening the tables itself (no --preload): 80 requests to /login
(limit() of 10 per day) and 80 to / (a default limit of 20 per day),
interleaved, from 8 concurrent clients, on one client address.

Exactly the limits are admitted across the workers (10 and 20: / and
/login have buckets of their own), more than one worker answered (each
response carries its worker's pid), and the denials carry Retry-After.
The figures are printed.

Run as a script (ctest does): exits 77 (skipped) without gunicorn, or
without both Flask and Django (one of them missing skips its test)."""

import collections
import importlib.util
import os
import sys
import textwrap
import time
import unittest

import web_servers
from web_servers import DAY_MS, fetch_all, tally

WORKERS = 4
CLIENTS = 8
PER_ROUTE = 80
LOGIN_LIMIT = 10
INDEX_LIMIT = 20


def installed(module):
    return importlib.util.find_spec(module) is not None


def policy(limit):
    return "fixedWindow:limit=%d,windowMs=%d" % (limit, DAY_MS)


FLASK_APP = textwrap.dedent('''
    import os
    import time

    from flask import Flask
    from tkshm.flask import Limiter

    app = Flask(__name__)
    limiter = Limiter(app, default_limits=[os.environ["TEST_INDEX"]],
                      slots=1024)

    @app.route("/")
    def index():
        return "ok\\n"

    @app.route("/login")
    @limiter.limit(os.environ["TEST_LOGIN"])
    def login():
        return "ok\\n"

    @app.route("/healthz")
    @limiter.exempt
    def healthz():
        return "ok\\n"

    @app.after_request
    def worker_pid(response):  # 429s included
        # Every response keeps its worker busy a while (denials are
        # fast), so that concurrent requests find the others free.
        time.sleep(0.005)
        response.headers["X-Worker"] = str(os.getpid())
        return response
''')

DJANGO_APP = textwrap.dedent('''
    import os
    import time

    from django.conf import settings

    settings.configure(
        DEBUG=False, SECRET_KEY="test", ALLOWED_HOSTS=["127.0.0.1"],
        ROOT_URLCONF=__name__, INSTALLED_APPS=[],
        MIDDLEWARE=[__name__ + ".worker_pid",
                    "tkshm.django.RateLimitMiddleware"],
        TKSHM={"DEFAULT_LIMITS": [os.environ["TEST_INDEX"]],
               "SLOTS": 1024})

    from django.core.wsgi import get_wsgi_application
    from django.http import HttpResponse
    from django.urls import path
    from tkshm.django import exempt, limit

    def worker_pid(get_response):
        def middleware(request):  # 429s included: see the Flask app
            response = get_response(request)
            time.sleep(0.005)
            response["X-Worker"] = str(os.getpid())
            return response
        return middleware

    def index(request):
        return HttpResponse("ok\\n")

    @limit(os.environ["TEST_LOGIN"])
    def login(request):
        return HttpResponse("ok\\n")

    @exempt
    def healthz(request):
        return HttpResponse("ok\\n")

    urlpatterns = [path("", index), path("login", login),
                   path("healthz", healthz)]
    application = get_wsgi_application()
''')


class Server(web_servers.Server):
    """gunicorn with WORKERS sync workers serving `source` (as app.py,
    `attr` its WSGI callable) from a fresh directory, with
    $XDG_RUNTIME_DIR in it; its own process group, stopped by pid."""

    name = "gunicorn"

    def __init__(self, source, attr):
        super().__init__("tkshm-wsgi-frameworks-", {"app.py": source})
        self.start(self.gunicorn("app:" + attr, WORKERS),
                   TEST_LOGIN=policy(LOGIN_LIMIT),
                   TEST_INDEX=policy(INDEX_LIMIT))


class FrameworksTest(unittest.TestCase):
    def setUp(self):
        # The fixed window is the UTC day: never start near its end.
        left = DAY_MS - time.time() * 1000 % DAY_MS
        if left < 120000:
            time.sleep(left / 1000 + 1)

    def serve(self, framework, source, attr):
        srv = Server(source, attr)
        self.addCleanup(srv.stop)
        srv.wait_booted(WORKERS, 30)
        # / and /login interleaved
        results = fetch_all(srv.base, ["/", "/login"] * PER_ROUTE, CLIENTS)
        admitted = collections.Counter()
        for path, status, headers in results:
            self.assertIn(status, (200, 429), srv.text())
            self.assertIn("RateLimit", headers)
            if status == 200:
                admitted[path] += 1
            else:
                self.assertGreaterEqual(int(headers["Retry-After"]), 1)
        _, workers = tally(results)
        self.assertNotIn(None, workers)
        print("\n%s, gunicorn --workers %d, %d clients: /login %d of %d "
              "admitted (limit %d per day), / %d of %d (default limit %d "
              "per day); served per worker %s" % (
                  framework, WORKERS, CLIENTS, admitted["/login"],
                  PER_ROUTE, LOGIN_LIMIT, admitted["/"], PER_ROUTE,
                  INDEX_LIMIT, sorted(workers.values())), file=sys.stderr)
        self.assertEqual(admitted["/login"], LOGIN_LIMIT)
        self.assertEqual(admitted["/"], INDEX_LIMIT)
        # One worker alone would admit exactly the limits with any table.
        self.assertGreaterEqual(len(workers), 2, workers)
        # Every table was a file in the server's run directory.
        tables = os.listdir(os.path.join(srv.run, "tkshm"))
        self.assertEqual(len(tables), 2, tables)
        self.assertEqual(sum(n.startswith("route-app.") for n in tables), 1)
        self.assertEqual(sum(n.startswith("limit-") for n in tables), 1)

    @unittest.skipUnless(installed("flask"), "python3-flask is not installed")
    def test_flask(self):
        self.serve("Flask", FLASK_APP, "app")

    @unittest.skipUnless(installed("django"),
                         "python3-django is not installed")
    def test_django(self):
        self.serve("Django", DJANGO_APP, "application")


if __name__ == "__main__":
    if not installed("gunicorn"):
        print("skipped: gunicorn is not installed (apt-get install "
              "gunicorn)", file=sys.stderr)
        sys.exit(77)
    if not installed("flask") and not installed("django"):
        print("skipped: neither Flask nor Django is installed (apt-get "
              "install python3-flask python3-django)", file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
