"""tkshm.flask.Limiter in-process, with Flask's test client:

- several limits on a route as one decision (a denial by one consumes
  nothing in the others: the tables' peek says so), stacked decorators
  merged, each route its own buckets, a name shared by two routes;
- the default limits (per route, a named one shared), exempt views, a
  view's own limits replacing or joining them;
- the key kinds: the address (IPv6 by its /64), a header, the user, a
  function; a cost function;
- the header styles, the denial (429 with Retry-After, errorhandler(429),
  another status), fail-open and fail-closed, a rate string;
- configuration from app.config (an app factory), and its errors.

Run as a script (ctest does): exits 77 (skipped) without Debian's
python3-flask."""

import os
import shutil
import sys
import tempfile
import unittest

try:
    import flask
    from flask import Flask, g
    from flask.views import MethodView
except ImportError as e:
    MISSING = e
else:
    MISSING = None

import tkshm
from tkshm.route import Limit

DAY_MS = 86400000
LOCAL = "a:127.0.0.1"  # the test client's address, as the limits key it


def gcra(limit):
    """limit per day, all of it at once: nothing refills during a test."""
    return "gcra:limit=%d,periodMs=%d" % (limit, DAY_MS)


def strict(failure):
    """A strict table with no Redis attached: every check fails."""
    return gcra(5) + ";mode=strict,prefix=t,failure=" + failure


def setUpModule():
    global RUN_DIR, OLD_XDG
    RUN_DIR = tempfile.mkdtemp(prefix="tkshm-flask-")
    os.chmod(RUN_DIR, 0o700)
    OLD_XDG = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = RUN_DIR


def tearDownModule():
    if OLD_XDG is None:
        os.environ.pop("XDG_RUNTIME_DIR", None)
    else:
        os.environ["XDG_RUNTIME_DIR"] = OLD_XDG
    shutil.rmtree(RUN_DIR)


def make_app(name, config=None, **options):
    """A Flask app named `name` (the tables' names derive from it, so each
    test has its own) with a Limiter of small tables."""
    from tkshm.flask import Limiter
    app = Flask("t_" + name)
    app.config.update(config or {})
    options.setdefault("slots", 1024)
    return app, Limiter(app, **options)


def ok():
    return "ok\n"


def codes(client, path, n, **kw):
    return [client.get(path, **kw).status_code for _ in range(n)]


class LimitsTest(unittest.TestCase):
    def test_several_limits_are_one_decision(self):
        app, limiter = make_app("several")

        @app.route("/one")
        @limiter.limit(gcra(5), gcra(2))
        def one():
            return ok()

        @app.route("/stacked")
        @limiter.limit(gcra(5))
        @limiter.limit(gcra(2))
        def stacked():
            return ok()

        c = app.test_client()
        for path in ("/one", "/stacked"):
            self.assertEqual(codes(c, path, 4), [200, 200, 429, 429])
            with app.app_context():
                tables = limiter.limits_for(path[1:]).tables
            self.assertEqual(len(tables), 2)
            remaining = sorted(t.peek(LOCAL).remaining for t in tables)
            # the narrow limit denied twice; the wide one counted only the
            # two admissions
            self.assertEqual(remaining, [0, 3], path)

    def test_denial_headers_and_body(self):
        app, limiter = make_app("denial")

        @app.route("/")
        @limiter.limit(gcra(1), policy_name="one")
        def index():
            return ok()

        c = app.test_client()
        r = c.get("/")
        self.assertEqual(r.status_code, 200)
        self.assertEqual(r.headers["RateLimit-Policy"], '"one";q=1')
        self.assertTrue(r.headers["RateLimit"].startswith('"one";r=0;t='))
        self.assertNotIn("Retry-After", r.headers)
        r = c.get("/")
        self.assertEqual(r.status_code, 429)
        self.assertGreaterEqual(int(r.headers["Retry-After"]), 1)
        self.assertEqual(r.headers["RateLimit-Policy"], '"one";q=1')
        self.assertIn(b"Too Many Requests", r.data)

    def test_errorhandler_answers_the_denial(self):
        from tkshm.flask import RateLimitExceeded
        app, limiter = make_app("handler")

        @app.errorhandler(429)
        def too_many(e):
            self.assertIsInstance(e, RateLimitExceeded)
            return flask.jsonify(error="slow down",
                                 retry_ms=e.verdict.decision.retry_after_ms
                                 ), 429

        @app.route("/")
        @limiter.limit(gcra(1))
        def index():
            return ok()

        c = app.test_client()
        c.get("/")
        r = c.get("/")
        self.assertEqual(r.status_code, 429)
        self.assertEqual(r.json["error"], "slow down")
        self.assertGreater(r.json["retry_ms"], 0)
        self.assertIn("Retry-After", r.headers)  # added after the handler
        self.assertIn("RateLimit", r.headers)

    def test_another_status(self):
        from werkzeug.exceptions import Forbidden
        from tkshm.flask import RateLimitExceeded
        app, limiter = make_app("status", status=403)
        seen = []

        @app.errorhandler(RateLimitExceeded)
        def denied(e):
            seen.append(e)
            return "denied\n", e.code

        @app.route("/")
        @limiter.limit(gcra(1))
        def index():
            return ok()

        c = app.test_client()
        self.assertEqual(codes(c, "/", 2), [200, 403])
        self.assertIsInstance(seen[0], Forbidden)

    def test_routes_have_their_own_buckets(self):
        app, limiter = make_app("routes")

        @app.route("/")
        @limiter.limit(gcra(2))
        def index():
            return ok()

        @app.route("/login")
        @limiter.limit(gcra(2))
        def login():
            return ok()

        c = app.test_client()
        self.assertEqual(codes(c, "/login", 3), [200, 200, 429])
        self.assertEqual(codes(c, "/", 3), [200, 200, 429])

    def test_a_name_shares_a_table_across_routes(self):
        app, limiter = make_app("named")
        shared = limiter.limit(gcra(3), name="flask-shared")

        @app.route("/a")
        @shared
        def a():
            return ok()

        @app.route("/b")
        @limiter.limit(gcra(3), name="flask-shared")
        def b():
            return ok()

        c = app.test_client()
        self.assertEqual(codes(c, "/a", 2) + codes(c, "/b", 2),
                         [200, 200, 200, 429])
        with app.app_context():
            ta = limiter.limits_for("a").tables[0]
            tb = limiter.limits_for("b").tables[0]
        self.assertTrue(os.path.exists(
            tkshm.default_table_path("limit-flask-shared")))
        self.assertEqual(ta.peek(LOCAL).remaining, 0)
        self.assertEqual(tb.peek(LOCAL).remaining, 0)
        self.assertEqual(ta.stats(), tb.stats())

    def test_method_view(self):
        app, limiter = make_app("methodview")

        class Items(MethodView):
            decorators = [limiter.limit(gcra(1))]

            def get(self):
                return ok()

        app.add_url_rule("/items", view_func=Items.as_view("items"))
        self.assertEqual(codes(app.test_client(), "/items", 2), [200, 429])

    def test_limit_above_route_is_not_lost(self):
        app, limiter = make_app("order")

        # Flask registers the undecorated function: the wrapper never runs
        @limiter.limit(gcra(2))
        @app.route("/")
        def index():
            return ok()

        c = app.test_client()
        self.assertEqual(codes(c, "/", 3), [200, 200, 429])
        self.assertIn("RateLimit", c.get("/").headers)
        with app.app_context():
            self.assertEqual(limiter.limits_for("index").tables[0].peek(
                LOCAL).remaining, 0)
            self.assertRaises(KeyError, limiter.limits_for, "nowhere")

    def test_rate_string(self):
        app, limiter = make_app("rate")

        @app.route("/")
        @limiter.limit("5/minute")
        def index():
            return ok()

        c = app.test_client()
        self.assertEqual(codes(c, "/", 6), [200] * 5 + [429])
        self.assertEqual(c.get("/").headers["RateLimit-Policy"],
                         '"default";q=5')


class DefaultsTest(unittest.TestCase):
    def test_defaults_exempt_and_own_limits(self):
        app, limiter = make_app("defaults", default_limits=[gcra(2)])
        for name in ("x", "y"):
            app.add_url_rule("/" + name, name, ok)

        @app.route("/free")
        @limiter.exempt
        def free():
            return ok()

        @app.route("/own")
        @limiter.limit(gcra(3))
        def own():
            return ok()

        @app.route("/both")
        @limiter.limit(gcra(3), override_defaults=False)
        def both():
            return ok()

        c = app.test_client()
        # per route: /x and /y each have 2
        self.assertEqual(codes(c, "/x", 3), [200, 200, 429])
        self.assertEqual(codes(c, "/y", 3), [200, 200, 429])
        r = c.get("/free")
        self.assertEqual(r.status_code, 200)
        self.assertNotIn("RateLimit", r.headers)
        self.assertEqual(codes(c, "/free", 5), [200] * 5)
        self.assertEqual(codes(c, "/own", 4), [200, 200, 200, 429])
        self.assertEqual(codes(c, "/both", 3), [200, 200, 429])
        self.assertEqual(c.get("/nowhere").status_code, 404)
        # an automatic OPTIONS answer runs no view: not counted
        self.assertEqual([c.options("/own").status_code,
                          c.options("/x").status_code], [200, 200])
        with app.app_context():
            x, y = limiter.limits_for("x"), limiter.limits_for("y")
            joined = limiter.limits_for("both")
            self.assertIsNone(limiter.limits_for("free"))
        # one table for the default limit, a bucket per route in it (each
        # route's tag, a NUL, then the key)
        for limits, route in ((x, b"x"), (y, b"y"), (joined, b"both")):
            table = limits.tables[-1]
            self.assertEqual(table.peek(route + b"\0" + LOCAL.encode()
                                        ).remaining, 0, route)
            self.assertEqual(table.stats(), x.tables[0].stats())
        self.assertEqual(len(joined.tables), 2)
        # /both's own limit counted the two admissions only
        self.assertEqual(joined.tables[0].peek(LOCAL).remaining, 1)

    def test_a_named_default_is_shared_by_every_route(self):
        app, limiter = make_app(
            "sitewide", default_limits=[Limit(gcra(3), name="flask-site")])
        for name in ("p", "q"):
            app.add_url_rule("/" + name, name, ok)
        c = app.test_client()
        self.assertEqual(codes(c, "/p", 2) + codes(c, "/q", 2),
                         [200, 200, 200, 429])

    def test_app_factory_reads_the_config(self):
        from tkshm.flask import Limiter
        limiter = Limiter()

        @limiter.limit(gcra(1))
        def limited():
            return ok()

        app = Flask("t_factory")
        app.config.update(TKSHM_DEFAULT_LIMITS=[gcra(2)],
                          TKSHM_HEADERS="legacy", TKSHM_SLOTS=1024)
        app.add_url_rule("/d", "d", ok)
        app.add_url_rule("/limited", "limited", limited)
        limiter.init_app(app)
        c = app.test_client()
        r = c.get("/d")
        self.assertEqual(r.headers["RateLimit-Limit"], "2")
        self.assertEqual(codes(c, "/d", 2), [200, 429])
        self.assertEqual(codes(c, "/limited", 2), [200, 429])

    def test_disabled(self):
        app, limiter = make_app("disabled", {"TKSHM_ENABLED": False},
                                default_limits=[gcra(1)])
        app.add_url_rule("/", "index", ok)

        @app.route("/own")
        @limiter.limit(gcra(1))
        def own():
            return ok()

        c = app.test_client()
        self.assertEqual(codes(c, "/", 3) + codes(c, "/own", 3), [200] * 6)
        self.assertNotIn("RateLimit", c.get("/").headers)


class KeysTest(unittest.TestCase):
    def test_ipv6_by_its_64(self):
        app, limiter = make_app("ipv6")

        @app.route("/")
        @limiter.limit(gcra(1))
        def index():
            return ok()

        c = app.test_client()

        def get(addr):
            return c.get("/", environ_overrides={"REMOTE_ADDR": addr}
                         ).status_code

        self.assertEqual(get("2001:db8:1:2::1"), 200)
        self.assertEqual(get("2001:db8:1:2:ffff::9"), 429)  # same /64
        self.assertEqual(get("2001:db8:1:3::1"), 200)       # another /64
        self.assertEqual(get("192.0.2.1"), 200)
        self.assertEqual(get("::ffff:192.0.2.1"), 429)      # the same v4
        with app.app_context():
            t = limiter.limits_for("index").tables[0]
        self.assertEqual(t.peek("a:2001:db8:1:2::/64").remaining, 0)
        self.assertEqual(t.peek("a:2001:db8:1:4::/64").remaining, 1)

    def test_header(self):
        app, limiter = make_app("header")

        @app.route("/")
        @limiter.limit(gcra(1), key="header:X-Api-Key")
        def index():
            return ok()

        c = app.test_client()

        def get(key=None):
            headers = {} if key is None else {"X-Api-Key": key}
            return c.get("/", headers=headers).status_code

        self.assertEqual([get("k1"), get("k1"), get("k2")], [200, 429, 200])
        # no header: keyed by the address, never unlimited
        self.assertEqual([get(), get()], [200, 429])
        with app.app_context():
            t = limiter.limits_for("index").tables[0]
        self.assertEqual(t.peek("h:k2").remaining, 0)
        self.assertEqual(t.peek(LOCAL).remaining, 0)

    def test_user(self):
        app, limiter = make_app("user", user=lambda: g.get("user_id"))

        @app.before_request
        def load_user():
            g.user_id = flask.request.headers.get("X-User")

        @app.route("/")
        @limiter.limit(gcra(1), key="user")
        def index():
            return ok()

        c = app.test_client()

        def get(user=None):
            headers = {} if user is None else {"X-User": user}
            return c.get("/", headers=headers).status_code

        self.assertEqual([get("alice"), get("alice"), get("bob")],
                         [200, 429, 200])
        self.assertEqual([get(), get()], [200, 429])  # anonymous: address
        with app.app_context():
            t = limiter.limits_for("index").tables[0]
        self.assertEqual(t.peek("u:bob").remaining, 0)
        self.assertEqual(t.peek("u:carol").remaining, 1)

    def test_user_is_the_default_key(self):
        app, limiter = make_app("userdefault", key="user",
                                user=lambda: flask.request.args.get("u"),
                                default_limits=[gcra(1)])
        app.add_url_rule("/", "index", ok)
        c = app.test_client()
        self.assertEqual([c.get("/?u=a").status_code,
                          c.get("/?u=a").status_code,
                          c.get("/?u=b").status_code], [200, 429, 200])

    def test_key_function_and_cost(self):
        app, limiter = make_app("function")

        @app.route("/")
        @limiter.limit(gcra(5), key=lambda req: req.args.get("k"),
                       cost=lambda req: int(req.args.get("n", "1")))
        def index():
            return ok()

        c = app.test_client()
        # no key: the limit does not apply (no headers either)
        r = c.get("/")
        self.assertEqual(r.status_code, 200)
        self.assertNotIn("RateLimit", r.headers)
        self.assertEqual([c.get("/?k=a&n=3").status_code,
                          c.get("/?k=a&n=3").status_code,
                          c.get("/?k=a&n=2").status_code], [200, 429, 200])


class ResponsesTest(unittest.TestCase):
    def test_header_styles(self):
        cases = {
            "draft": {"RateLimit-Policy", "RateLimit"},
            "legacy": {"RateLimit-Limit", "RateLimit-Remaining",
                       "RateLimit-Reset"},
            "none": set()}
        every = set().union(*cases.values())
        for style, expect in cases.items():
            app, limiter = make_app("style_" + style,
                                    {"TKSHM_HEADERS": style})

            @app.route("/")
            @limiter.limit(gcra(1))
            def index():
                return ok()

            c = app.test_client()
            for status in (200, 429):
                r = c.get("/")
                self.assertEqual(r.status_code, status)
                self.assertEqual({h for h in every if h in r.headers},
                                 expect, (style, status))
                self.assertEqual("Retry-After" in r.headers, status == 429)

    def test_failed_check_fails_open_unless_closed(self):
        from werkzeug.exceptions import ServiceUnavailable
        cases = (("fail-open", True, 200), ("fail-open", False, 503),
                 ("fail-closed", True, 503))
        for failure, fail_open, expect in cases:
            app, limiter = make_app("fail_%s_%s" % (failure, fail_open),
                                    fail_open=fail_open)
            seen = []
            app.register_error_handler(503, lambda e: (
                seen.append(e) or ("unavailable\n", 503)))

            @app.route("/")
            @limiter.limit(strict(failure))
            def index():
                return ok()

            r = app.test_client().get("/")
            self.assertEqual(r.status_code, expect, (failure, fail_open))
            if expect == 503:
                self.assertIsInstance(seen[0], ServiceUnavailable)
                self.assertIsNone(seen[0].verdict.decision)

    def test_async_view(self):
        import importlib.util
        if importlib.util.find_spec("asgiref") is None:
            # Flask runs async views with it (flask[async])
            self.skipTest("asgiref is not installed")
        app, limiter = make_app("async")

        @app.route("/")
        @limiter.limit(gcra(1))
        async def index():
            return ok()

        self.assertEqual(codes(app.test_client(), "/", 2), [200, 429])


class ConfigurationTest(unittest.TestCase):
    def assertRaisesWith(self, exc, text, fn, *args, **kw):
        with self.assertRaises(exc) as cm:
            fn(*args, **kw)
        self.assertIn(text, str(cm.exception))

    def test_bad_settings_name_the_setting(self):
        from tkshm.flask import Limiter
        cases = (
            ({"TKSHM_HEADERS": "loud"}, ValueError, "TKSHM_HEADERS"),
            ({"TKSHM_HEADER": "draft"}, ValueError,
             "did you mean TKSHM_HEADERS"),
            ({"TKSHM_STATUS": 200}, ValueError, "TKSHM_STATUS"),
            ({"TKSHM_FAIL_OPEN": "no"}, TypeError, "TKSHM_FAIL_OPEN"),
            ({"TKSHM_SLOTS": 0}, ValueError, "TKSHM_SLOTS"),
            ({"TKSHM_KEY": "cookie"}, ValueError, "TKSHM_KEY"),
            ({"TKSHM_DEFAULT_LIMITS": ["5/fortnight"]}, ValueError,
             'unknown unit "fortnight"'),
            ({"TKSHM_DEFAULT_LIMITS": [5]}, TypeError,
             "TKSHM_DEFAULT_LIMITS"),
            ({"TKSHM_REDIS": {"port": 0}}, ValueError, "TKSHM_REDIS"),
            ({"TKSHM_KEY": "user"}, ValueError, "Limiter(user=...)"),
        )
        for config, exc, text in cases:
            app = Flask("t_bad")
            app.config.update(config)
            self.assertRaisesWith(exc, text, Limiter, app)
            self.assertNotIn("tkshm", app.extensions)

    def test_bad_arguments(self):
        from tkshm.flask import Limiter
        self.assertRaisesWith(ValueError, "Limiter(headers=...)", Limiter,
                              headers="loud")
        self.assertRaisesWith(ValueError, "Limiter(status=...)", Limiter,
                              status=99)
        # an argument wins over the config, and is named in its errors
        app = Flask("t_args")
        app.config["TKSHM_HEADERS"] = "loud"
        Limiter(app, headers="none")
        limiter = Limiter(slots=1024)
        self.assertRaisesWith(tkshm.Error, "fortnight", limiter.limit,
                              "5/fortnight")
        self.assertRaisesWith(ValueError, "key must be", limiter.limit,
                              gcra(1), key="cookie")
        self.assertRaisesWith(ValueError, "Limiter(user=...)",
                              limiter.limit, gcra(1), key="user")
        self.assertRaisesWith(TypeError, "cost", limiter.limit, gcra(1),
                              cost="1")
        self.assertRaisesWith(ValueError, "1 to 16", limiter.limit)

    def test_misuse(self):
        app, limiter = make_app("misuse")
        self.assertRaisesWith(ValueError, "exempt", limiter.limit(gcra(1)),
                              limiter.exempt(lambda: None))
        self.assertRaisesWith(ValueError, "cannot be exempt",
                              limiter.exempt, limiter.limit(gcra(1))(ok))

        def other(view):
            def wrapped():
                return view()
            wrapped.__dict__.update(view.__dict__)
            return wrapped

        # another decorator between two limits: not one decision
        self.assertRaisesWith(ValueError, "right on top",
                              limiter.limit(gcra(1)),
                              other(limiter.limit(gcra(2))(ok)))
        # an app the limiter was not given
        other_app = Flask("t_misuse_other")
        other_app.testing = True  # the error reaches the test client
        other_app.add_url_rule("/", "index", limiter.limit(gcra(1))(ok))
        self.assertRaisesWith(RuntimeError, "init_app() was not called",
                              other_app.test_client().get, "/")
        self.assertRaisesWith(RuntimeError, "already has", limiter.init_app,
                              app)


if __name__ == "__main__":
    if MISSING is not None:
        print("skipped: %s (apt-get install python3-flask)" % MISSING,
              file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
