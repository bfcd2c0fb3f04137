"""tkshm.asgi.RateLimitMiddleware and tkshm.fastapi.RateLimit in-process
(Starlette's TestClient, httpx's ASGI transport for chosen client
addresses, raw ASGI calls where neither reaches):

- the middleware: the limit then 429 with its headers in the three
  styles, a key of None, a cost function, fail-open and fail-closed (a
  strict table without Redis: its check fails), the strict check in a
  worker thread, websockets (a close 1008, or a 429 through the ASGI
  denial response extension), lifespan untouched, add_middleware and the
  default table's name, IPv6 keyed by its /64;
- the dependency: several limits as one (a denial consumes nothing in the
  others), each route its own buckets, a name shared across routes, the
  key kinds (ip, header, user, a function), websocket routes, a strict
  table, rate strings.

Run as a script (ctest does): exits 77 (skipped) without Debian's
python3-fastapi (Starlette, httpx)."""

import asyncio
import os
import shutil
import socket
import sys
import tempfile
import threading
import unittest

try:
    import httpx
    from fastapi import Depends, FastAPI, Request, WebSocket
    from fastapi.testclient import TestClient
    from starlette.authentication import AuthCredentials, \
        AuthenticationBackend, SimpleUser
    from starlette.middleware.authentication import AuthenticationMiddleware
    from starlette.responses import PlainTextResponse
    from starlette.websockets import WebSocketDisconnect
    from tkshm.fastapi import RateLimit, user_id
except ImportError as e:
    MISSING = e
else:
    MISSING = None

import tkshm
from tkshm import asgi as tkshm_asgi
from tkshm import route as tkshm_route
from tkshm.route import Limit

DAY_MS = 86400000


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gcra(limit):
    """limit per day, all of it at once: nothing refills during a test."""
    return "gcra:limit=%d,periodMs=%d" % (limit, DAY_MS)


def strict(failure):
    """A strict table with no Redis attached: every check fails."""
    return gcra(5) + ";mode=strict,prefix=t,failure=" + failure


def remaining(response):
    """r= of the draft's RateLimit field."""
    return int(response.headers["RateLimit"].split(";r=")[1].split(";")[0])


def get_from(app, client, path="/", headers=None):
    """A GET with scope["client"] = (client, 40000)."""
    async def run():
        transport = httpx.ASGITransport(app=app, client=(client, 40000))
        async with httpx.AsyncClient(transport=transport,
                                     base_url="http://t") as c:
            return await c.get(path, headers=headers)
    return asyncio.run(run())


def hello_app():
    """A FastAPI app with "/", "/healthz", "/big" and a websocket "/ws";
    app.state.calls counts the requests that reached it."""
    app = FastAPI()
    app.state.calls = 0

    @app.get("/{path:path}")
    def anything(path: str):
        app.state.calls += 1
        return PlainTextResponse("ok\n")

    @app.websocket("/ws")
    async def ws(websocket: WebSocket):
        app.state.calls += 1
        await websocket.accept()
        await websocket.send_text("hi")
        await websocket.close()

    return app


class ThreadRecorder:
    """Records the threads the adapters run strict checks in."""

    def __init__(self, test):
        self.threads = []
        real = tkshm_asgi._run_in_thread

        async def recording(func, *args):
            def run(*a):
                self.threads.append(threading.get_ident())
                return func(*a)
            return await real(run, *args)

        for module in (tkshm_asgi, sys.modules["tkshm.fastapi"]):
            test.addCleanup(setattr, module, "_run_in_thread",
                            module._run_in_thread)
            module._run_in_thread = recording


class FreshRunDir(unittest.TestCase):
    """Every test's default tables in a run directory of its own, as a
    deployment of its own: the tests reuse route names with other rates,
    which one process refuses (one name, one rate)."""

    def setUp(self):
        tkshm_route._declared.clear()
        self.dir = tempfile.mkdtemp(prefix="tkshm-asgi-")
        old = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = self.dir
        self.addCleanup(shutil.rmtree, self.dir)
        if old is None:
            self.addCleanup(os.environ.pop, "XDG_RUNTIME_DIR")
        else:
            self.addCleanup(os.environ.__setitem__, "XDG_RUNTIME_DIR", old)

    def tables(self):
        return sorted(os.listdir(os.path.join(self.dir, "tkshm")))

    @staticmethod
    def table_file(app):
        """The file name of `app`'s default table by app_table_name()."""
        name = tkshm.app_table_name(app)
        return os.path.basename(tkshm.default_table_path(name))


class MiddlewareTest(FreshRunDir):
    def test_limit_then_denial_with_headers(self):
        app = hello_app()
        mw = tkshm_asgi.RateLimitMiddleware(app, gcra(3), name="t",
                                            policy_name="api")
        with TestClient(mw) as client:
            ok = [client.get("/") for _ in range(3)]
            denied = client.get("/")
        self.assertEqual([r.status_code for r in ok], [200] * 3)
        self.assertEqual([remaining(r) for r in ok], [2, 1, 0])
        for r in ok:
            self.assertEqual(r.headers["RateLimit-Policy"], '"api";q=3')
            self.assertNotIn("Retry-After", r.headers)
            self.assertEqual(r.text, "ok\n")
        self.assertEqual(denied.status_code, 429)
        self.assertEqual(denied.text, "Too Many Requests\n")
        self.assertTrue(denied.headers["Content-Type"].startswith(
            "text/plain"))
        self.assertGreaterEqual(int(denied.headers["Retry-After"]), 1)
        self.assertEqual(denied.headers["RateLimit-Policy"], '"api";q=3')
        self.assertEqual(remaining(denied), 0)
        self.assertEqual(app.state.calls, 3)  # the denial never reached it
        self.assertEqual(self.tables(), ["t"])

    def test_header_styles(self):
        for style in ("legacy", "none"):
            app = hello_app()
            mw = tkshm_asgi.RateLimitMiddleware(app, gcra(2), headers=style,
                                                name="style-" + style,
                                                status=503)
            with TestClient(mw) as client:
                first, _, denied = [client.get("/") for _ in range(3)]
            self.assertEqual(denied.status_code, 503)
            self.assertEqual(denied.text, "Service Unavailable\n")
            self.assertGreaterEqual(int(denied.headers["Retry-After"]), 1)
            self.assertNotIn("RateLimit", first.headers)
            self.assertNotIn("RateLimit-Policy", first.headers)
            if style == "legacy":
                self.assertEqual(first.headers["RateLimit-Limit"], "2")
                self.assertEqual(first.headers["RateLimit-Remaining"], "1")
                self.assertEqual(denied.headers["RateLimit-Remaining"], "0")
            else:
                self.assertFalse([h for h in first.headers
                                  if h.lower().startswith("ratelimit")])
        with self.assertRaises(ValueError):
            tkshm_asgi.RateLimitMiddleware(hello_app(), gcra(2), name="x",
                                           headers="ietf")

    def test_key_none_passes_unchecked(self):
        app = hello_app()

        def key(scope):
            return None if scope["path"] == "/healthz" else "one"

        mw = tkshm_asgi.RateLimitMiddleware(app, gcra(1), key_func=key,
                                            name="keynone")
        with TestClient(mw) as client:
            health = [client.get("/healthz") for _ in range(4)]
            self.assertEqual(mw.table.peek("one").remaining, 1)
            self.assertEqual(client.get("/").status_code, 200)
            self.assertEqual(client.get("/").status_code, 429)
        self.assertEqual([r.status_code for r in health], [200] * 4)
        self.assertNotIn("RateLimit", health[0].headers)

    def test_cost_function(self):
        def cost(scope):
            return 3 if scope["path"] == "/big" else 1

        mw = tkshm_asgi.RateLimitMiddleware(hello_app(), gcra(5), cost=cost,
                                            key_func=lambda s: "k",
                                            name="cost")
        with TestClient(mw) as client:
            self.assertEqual(remaining(client.get("/big")), 2)
            self.assertEqual(client.get("/big").status_code, 429)
            self.assertEqual(remaining(client.get("/")), 1)
        self.assertEqual(mw.table.peek("k").remaining, 1)

    def test_costs_out_of_range_are_never_admitted_by_fail_open(self):
        # The table refuses a cost above 2^53-1 or too small to change the
        # state (ECOST): that is no failed check for fail-open to admit.
        # A huge cost is denied, a tiny one charged as a whole unit.
        costs = {"huge": 2 ** 60, "huger": 10 ** 400, "tiny": 1e-12}
        for label, value in costs.items():
            app = hello_app()
            mw = tkshm_asgi.RateLimitMiddleware(
                app, gcra(2), name="cost-" + label, key_func=lambda s: "k",
                cost=lambda s, v=value: v if s["path"] == "/odd" else 1)
            with TestClient(mw) as client:
                if label == "tiny":
                    self.assertEqual(client.get("/odd").status_code, 200)
                    self.assertEqual(mw.table.peek("k").remaining, 1)
                else:
                    self.assertEqual(client.get("/odd").status_code, 429)
                    self.assertEqual(mw.table.peek("k").remaining, 2)
                self.assertEqual(client.get("/").status_code, 200)
                if label != "tiny":
                    self.assertEqual(client.get("/").status_code, 200)
                r = client.get("/odd")
            self.assertEqual(r.status_code, 429, label)
            self.assertIn("Retry-After", r.headers)

    def test_costs_that_are_not_numbers_are_raised(self):
        # The application's bug, raised: never a failed check that
        # fail-open would admit.
        for value in (-1, float("nan"), float("inf"), True, "1", None):
            mw = tkshm_asgi.RateLimitMiddleware(
                hello_app(), gcra(2), name="badcost",
                cost=lambda s, v=value: v)
            with TestClient(mw) as client:
                with self.assertRaises(ValueError, msg=repr(value)):
                    client.get("/")
            with self.assertRaises(ValueError, msg=repr(value)):
                tkshm_asgi.RateLimitMiddleware(hello_app(), gcra(2),
                                               name="badcost", cost=value)

    def test_a_cost_of_zero_passes_unchecked(self):
        # Nothing to consume (the table refuses a cost of 0): not a failed
        # check, which fail_open=False would answer 503.
        app = hello_app()
        mw = tkshm_asgi.RateLimitMiddleware(app, gcra(1), name="free",
                                            key_func=lambda s: "k",
                                            cost=lambda s: 0,
                                            fail_open=False)
        with TestClient(mw) as client:
            codes = [client.get("/").status_code for _ in range(3)]
        self.assertEqual(codes, [200] * 3)
        self.assertEqual(app.state.calls, 3)
        self.assertEqual(mw.table.peek("k").remaining, 1)

    def test_unusable_options_are_refused_at_once(self):
        # Not at every request: a policy name the headers cannot carry
        # (tkshm.Error at each check), a status that is not one.
        for bad in ({"policy_name": "caf\u00e9"}, {"policy_name": "a\nb"},
                    {"policy_name": "x", "headers": "none",
                     "status": "429"},
                    {"status": 200}, {"status": True}):
            with self.assertRaises(ValueError, msg=bad):
                tkshm_asgi.RateLimitMiddleware(hello_app(), gcra(2),
                                               name="opts", **bad)

    def test_client_addresses_that_are_not_ip_addresses(self):
        # None (no peer), a unix socket's path, a NUL: keyed as they are,
        # never an exception.
        for client, key in ((None, "-"), (["/run/app.sock", 0],
                                          "/run/app.sock"),
                            (("", 0), "-"), (("1.2.3.4\0", 1), "1.2.3.4\0"),
                            (("::ffff:10.0.0.1", 1), "10.0.0.1")):
            self.assertEqual(tkshm_asgi.client_key({"client": client}), key)

    def test_two_middlewares_on_one_default_table(self):
        # A global limit and a tighter one on /api, both named after the
        # app: the second open changed the first's table to its own
        # policy, so /api was admitted at 100, not 3.  Refused now, until
        # each has a name.
        def api_key(scope):
            return "api" if scope["path"].startswith("/api") else None

        def layered(**names):
            app = hello_app()
            app.add_middleware(tkshm_asgi.RateLimitMiddleware,
                               table=gcra(100), name=names.get("all"))
            app.add_middleware(tkshm_asgi.RateLimitMiddleware,
                               table=gcra(3), key_func=api_key,
                               name=names.get("api"))
            return app

        with TestClient(layered()) as client:
            with self.assertRaises(ValueError) as e:
                client.get("/api/x")
        self.assertIn("name=", str(e.exception))
        with TestClient(layered(all="all", api="api")) as client:
            codes = [client.get("/api/x").status_code for _ in range(4)]
            r = client.get("/")
        self.assertEqual(codes, [200] * 3 + [429])
        self.assertEqual(r.headers["RateLimit-Policy"], '"default";q=100')
        # One policy twice: one table, as a name shared on purpose.
        first = tkshm_asgi.RateLimitMiddleware(hello_app(), gcra(5),
                                               name="same")
        second = tkshm_asgi.RateLimitMiddleware(hello_app(), "gcra:limit=5,"
                                                "periodMs=86400000,burst=5",
                                                name="same")
        self.assertEqual(first.table.policy, second.table.policy)

    def test_failed_check_fails_open_unless_closed(self):
        recorder = ThreadRecorder(self)
        cases = (("fail-open", True, 200), ("fail-open", False, 503),
                 ("fail-closed", True, 503), ("safe-share", True, 200))
        for failure, fail_open, expect in cases:
            app = hello_app()
            mw = tkshm_asgi.RateLimitMiddleware(
                app, strict(failure), fail_open=fail_open,
                name="strict-%s-%s" % (failure, fail_open))
            with TestClient(mw) as client:
                r = client.get("/")
            self.assertEqual(r.status_code, expect, (failure, fail_open))
            self.assertEqual(app.state.calls, int(expect == 200))
            self.assertNotIn("RateLimit", r.headers)
            if expect == 503:
                self.assertEqual(r.text, "rate limiter unavailable\n")
        # Each strict check ran off the event loop's thread.
        self.assertEqual(len(recorder.threads), len(cases))
        self.assertNotIn(threading.get_ident(), recorder.threads)

    def test_redis_is_attached_to_a_strict_table(self):
        # A Redis nobody listens on: the library decides by the failure
        # policy (a decision, with headers), where a table left without
        # one fails its check (503 above).
        mw = tkshm_asgi.RateLimitMiddleware(
            hello_app(), strict("fail-closed"), name="redis",
            redis={"host": "127.0.0.1", "port": free_port()})
        self.assertIsInstance(mw.table.redis, tkshm.Redis)
        with TestClient(mw) as client:
            r = client.get("/")
        self.assertEqual(r.status_code, 429)
        self.assertEqual(r.headers["RateLimit-Policy"], '"default";q=5')

    def test_websocket_close_1008(self):
        app = hello_app()
        mw = tkshm_asgi.RateLimitMiddleware(app, gcra(1), name="ws")
        with TestClient(mw) as client:
            with client.websocket_connect("/ws") as ws:
                self.assertEqual(ws.receive_text(), "hi")
                accepted = dict(ws.extra_headers)
            with self.assertRaises(WebSocketDisconnect) as cm:
                with client.websocket_connect("/ws"):
                    pass
        self.assertEqual(cm.exception.code, 1008)
        self.assertEqual(app.state.calls, 1)
        self.assertTrue(accepted[b"ratelimit"].startswith(
            b'"default";r=0;t='), accepted)

    def test_websocket_denial_response_extension(self):
        app = hello_app()
        mw = tkshm_asgi.RateLimitMiddleware(app, gcra(1), name="wsext",
                                            key_func=lambda s: "k")
        mw.table.check("k")  # spent
        sent = []

        async def receive():
            return {"type": "websocket.connect"}

        async def send(message):
            sent.append(message)

        scope = {"type": "websocket", "path": "/ws", "headers": [],
                 "client": ("10.0.0.1", 1), "query_string": b"",
                 "extensions": {"websocket.http.response": {}}}
        asyncio.run(mw(scope, receive, send))
        self.assertEqual([m["type"] for m in sent],
                         ["websocket.http.response.start",
                          "websocket.http.response.body"])
        self.assertEqual(sent[0]["status"], 429)
        names = [n for n, _ in sent[0]["headers"]]
        self.assertIn(b"retry-after", names)
        self.assertIn(b"ratelimit", names)
        self.assertEqual(sent[1]["body"], b"Too Many Requests\n")
        self.assertEqual(app.state.calls, 0)

    def test_lifespan_passes_through(self):
        events, keyed = [], []
        app = hello_app()
        app.router.on_startup.append(lambda: events.append("startup"))
        app.router.on_shutdown.append(lambda: events.append("shutdown"))

        def key(scope):
            keyed.append(scope["type"])
            return "k"

        app.add_middleware(tkshm_asgi.RateLimitMiddleware, table=gcra(5),
                           key_func=key, name="life")
        with TestClient(app) as client:
            self.assertEqual(events, ["startup"])
            self.assertEqual(keyed, [])
            client.get("/")
        self.assertEqual(events, ["startup", "shutdown"])
        self.assertEqual(keyed, ["http"])

    def test_add_middleware_names_the_table_after_the_app(self):
        # Starlette hands the middleware its own ExceptionMiddleware: the
        # name comes from the application in scope["app"], found under
        # the module-level name it is bound to, as `uvicorn module:app`.
        mod = sys.modules[__name__]
        apps = []
        for attr in ("BOUND_APP_ONE", "BOUND_APP_TWO"):
            app = hello_app()
            app.add_middleware(tkshm_asgi.RateLimitMiddleware, table=gcra(2))
            setattr(mod, attr, app)
            self.addCleanup(delattr, mod, attr)
            apps.append(app)
        for app in apps:
            with TestClient(app) as client:
                codes = [client.get("/").status_code for _ in range(3)]
            self.assertEqual(codes, [200, 200, 429])
        tables = self.tables()
        self.assertEqual(len(tables), 2, tables)
        for attr, table in zip(("BOUND_APP_ONE", "BOUND_APP_TWO"), tables):
            self.assertTrue(table.startswith("%s.%s-" % (__name__, attr)),
                            table)

    def test_direct_wrap_names(self):
        async def plain(scope, receive, send):
            await send({"type": "http.response.start", "status": 200,
                        "headers": []})
            await send({"type": "http.response.body", "body": b"ok"})

        mw = tkshm_asgi.RateLimitMiddleware(plain, gcra(1))
        self.assertEqual(self.tables(), [self.table_file(plain)])
        # No lifespan: this app knows none.
        self.assertEqual(remaining(TestClient(mw).get("/")), 0)
        # An unbound instance (a factory's) is named when first called.
        factory_made = tkshm_asgi.RateLimitMiddleware(hello_app(), gcra(1))
        self.assertIsNone(factory_made.table)
        with TestClient(factory_made) as client:
            self.assertEqual(client.get("/").status_code, 200)
        self.assertIn(self.table_file(factory_made.app), self.tables())
        # A wrong policy is an error at once, even for a table opened later.
        with self.assertRaises(tkshm.Error):
            tkshm_asgi.RateLimitMiddleware(hello_app(), "bogus:limit=1")
        with self.assertRaises(TypeError):
            tkshm_asgi.RateLimitMiddleware(hello_app(), 5)

    def test_ipv6_keyed_by_its_64(self):
        mw = tkshm_asgi.RateLimitMiddleware(hello_app(), gcra(1), name="v6")
        for client, expect in (("2001:db8:1:2::1", 200),
                               ("2001:db8:1:2:ffff::7", 429),  # same /64
                               ("2001:db8:1:3::1", 200),
                               ("192.0.2.1", 200),
                               ("::ffff:192.0.2.1", 429)):  # its IPv4
            self.assertEqual(get_from(mw, client).status_code, expect,
                             client)
        self.assertEqual(tkshm_asgi.client_key({"client": None}), "-")


class AuthByHeader(AuthenticationBackend if MISSING is None else object):
    """X-User: <name> authenticates <name>; without it, anonymous."""

    async def authenticate(self, conn):
        name = conn.headers.get("X-User")
        if name is None:
            return None
        return AuthCredentials(["authenticated"]), SimpleUser(name)


class DependencyTest(FreshRunDir):
    def serve(self, dependency, path="/login", app=None):
        """A FastAPI app (or `app`) with `dependency` on GET `path`."""
        app = app or FastAPI()

        # A value, not a Response: FastAPI merges the dependency's headers
        # only into a response it makes.
        @app.get(path, dependencies=[Depends(dependency)])
        def endpoint():
            return "ok"

        return app

    def test_admission_headers_and_denial(self):
        app = self.serve(RateLimit(gcra(2), policy_name="login"))
        with TestClient(app) as client:
            ok = [client.get("/login") for _ in range(2)]
            denied = client.get("/login")
        self.assertEqual([r.status_code for r in ok], [200, 200])
        self.assertEqual([remaining(r) for r in ok], [1, 0])
        self.assertEqual(ok[0].headers["RateLimit-Policy"], '"login";q=2')
        self.assertEqual(denied.status_code, 429)
        self.assertEqual(denied.json(), {"detail": "Too Many Requests"})
        self.assertGreaterEqual(int(denied.headers["Retry-After"]), 1)
        self.assertEqual(remaining(denied), 0)

        legacy = self.serve(RateLimit(gcra(2), headers="legacy"), "/l")
        with TestClient(legacy) as client:
            r = client.get("/l")
        self.assertEqual(r.headers["RateLimit-Remaining"], "1")
        self.assertNotIn("RateLimit", r.headers)

    def test_several_limits_are_one_decision(self):
        dep = RateLimit(gcra(5), gcra(2), key=lambda request: "k")
        listed = RateLimit([Limit(gcra(2), key=lambda request: "k"),
                            Limit(gcra(5), key="header:X-Api-Key")])
        app = self.serve(dep)
        self.serve(listed, "/listed", app)
        with TestClient(app) as client:
            codes = [client.get("/login").status_code for _ in range(4)]
            listed_codes = [client.get("/listed", headers={
                "X-Api-Key": "a"}).status_code for _ in range(3)]
        self.assertEqual(codes, [200, 200, 429, 429])
        self.assertEqual(listed_codes, [200, 200, 429])
        login, listed_route = app.routes[-2:]
        wide, narrow = dep.limits_for({"route": login}).tables
        # The denials by the narrow limit consumed nothing in the wide.
        self.assertEqual(wide.peek("k").remaining, 3)
        self.assertEqual(narrow.peek("k").remaining, 0)
        narrow2, wide2 = listed.limits_for({"route": listed_route}).tables
        self.assertEqual(wide2.peek(b"h:a").remaining, 3)
        self.assertEqual(narrow2.peek("k").remaining, 0)

    def test_each_route_its_own_buckets_unless_named(self):
        one = RateLimit(gcra(1))  # one instance on two routes
        app = self.serve(one, "/")
        self.serve(one, "/login", app)
        shared = RateLimit(Limit(gcra(2), name="shared-a"))
        self.serve(shared, "/a", app)
        self.serve(RateLimit(Limit(gcra(2), name="shared-a")), "/b", app)
        self.serve(RateLimit(gcra(2), name="shared-c"), "/c", app)
        self.serve(RateLimit(gcra(2), name="shared-c"), "/d", app)
        with TestClient(app) as client:
            def codes(*paths):
                return [client.get(p).status_code for p in paths]
            self.assertEqual(codes("/", "/login", "/", "/login"),
                             [200, 200, 429, 429])
            self.assertEqual(codes("/a", "/b", "/a", "/b"),
                             [200, 200, 429, 429])
            self.assertEqual(codes("/c", "/d", "/d"), [200, 200, 429])
        tables = self.tables()
        self.assertIn("limit-shared-a", tables)
        self.assertIn("limit-shared-c", tables)
        self.assertEqual(len([t for t in tables if t.startswith("route-")]),
                         2, tables)

    def test_ip_key_by_64(self):
        app = self.serve(RateLimit(gcra(1), key="ip"))
        for client, expect in (("2001:db8:9::1", 200),
                               ("2001:db8:9::2", 429),
                               ("2001:db8:9:1::2", 200),
                               ("198.51.100.7", 200),
                               ("198.51.100.7", 429)):
            self.assertEqual(get_from(app, client, "/login").status_code,
                             expect, client)

    def test_header_key(self):
        app = self.serve(RateLimit(gcra(1), key="header:X-Api-Key"))

        def code(key, client="203.0.113.1"):
            headers = {} if key is None else {"X-Api-Key": key}
            return get_from(app, client, "/login", headers).status_code

        self.assertEqual([code("a"), code("a"), code("b")], [200, 429, 200])
        # "a" from elsewhere is still "a"; leaving the header out is keyed
        # by the address, so it never skips the limit.
        self.assertEqual(code("a", "203.0.113.2"), 429)
        self.assertEqual([code(None), code(None)], [200, 429])

    def test_user_key(self):
        app = FastAPI()
        app.add_middleware(AuthenticationMiddleware, backend=AuthByHeader())
        self.serve(RateLimit(gcra(1), key="user"), app=app)

        def code(user, client="203.0.113.1"):
            headers = {} if user is None else {"X-User": user}
            return get_from(app, client, "/login", headers).status_code

        self.assertEqual([code("alice"), code("alice", "203.0.113.9"),
                          code("bob")], [200, 429, 200])
        self.assertEqual([code(None), code(None), code(None, "203.0.113.2")],
                         [200, 429, 200])

        class WithIdentity(SimpleUser):
            identity = "id-42"

        self.assertEqual(user_id(WithIdentity("Ann")), "id-42")
        self.assertEqual(user_id(SimpleUser("Ann")), "Ann")
        self.assertIsNone(user_id(None))

    def test_several_rate_limits_on_one_route(self):
        # The app's, the router's and the route's own: each its own
        # tables on the route (they used to share route_id's, which two
        # rates refused at every request and one rate counted twice).
        app = FastAPI(dependencies=[Depends(RateLimit(gcra(100)))])
        twice = RateLimit(gcra(3))

        @app.get("/a", dependencies=[Depends(RateLimit(gcra(3)))])
        def a():
            return "ok"

        @app.get("/b", dependencies=[Depends(RateLimit(gcra(4))),
                                     Depends(RateLimit(gcra(4)))])
        def b():
            return "ok"

        @app.get("/c", dependencies=[Depends(twice), Depends(twice)])
        def c():
            return "ok"

        with TestClient(app) as client:
            for path, limit in (("/a", 3), ("/b", 4), ("/c", 3)):
                codes = [client.get(path).status_code
                         for _ in range(limit + 2)]
                self.assertEqual(codes, [200] * limit + [429] * 2, path)
            r = client.get("/a")
        self.assertEqual(r.headers["RateLimit-Policy"], '"default";q=3')
        # the app's on each route, /a 1, /b 2, /c 1 (one RateLimit twice)
        self.assertEqual(len(self.tables()), 7)

    def test_unusable_options_are_refused_at_once(self):
        for bad in ({"policy_name": "caf\u00e9"}, {"status": "429"},
                    {"status": 302}):
            with self.assertRaises(ValueError, msg=bad):
                RateLimit(gcra(1), **bad)
        with self.assertRaises(ValueError):
            RateLimit(Limit(gcra(1), policy_name="a\r\nX-Evil: 1"))

    def test_function_key_and_cost(self):
        dep = RateLimit(gcra(5),
                        key=lambda request: request.query_params.get("k"),
                        cost=lambda request: int(request.query_params.get(
                            "n", "1")))
        app = self.serve(dep)
        with TestClient(app) as client:
            self.assertEqual(remaining(client.get("/login?k=x&n=4")), 1)
            self.assertEqual(client.get("/login?k=x&n=2").status_code, 429)
            self.assertEqual(remaining(client.get("/login?k=x")), 0)
            # No key: the limit does not apply.
            r = client.get("/login")
        self.assertEqual(r.status_code, 200)
        self.assertNotIn("RateLimit", r.headers)

    def test_websocket_route(self):
        app = FastAPI()

        # FastAPI 0.92's websocket() takes no dependencies=: a parameter.
        @app.websocket("/ws")
        async def ws(websocket: WebSocket,
                     _: None = Depends(RateLimit(gcra(1)))):
            await websocket.accept()
            await websocket.send_text("hi")
            await websocket.close()

        with TestClient(app) as client:
            with client.websocket_connect("/ws") as s:
                self.assertEqual(s.receive_text(), "hi")
            with self.assertRaises(WebSocketDisconnect) as cm:
                with client.websocket_connect("/ws"):
                    pass
        self.assertEqual(cm.exception.code, 1008)

    def test_strict_tables_checked_in_a_thread(self):
        recorder = ThreadRecorder(self)
        app = self.serve(RateLimit(strict("fail-closed")), "/closed")
        self.serve(RateLimit(strict("fail-open")), "/open", app)
        self.serve(RateLimit(strict("fail-open"), fail_open=False), "/no",
                   app)
        with TestClient(app) as client:
            codes = [client.get(p).status_code
                     for p in ("/closed", "/open", "/no")]
        self.assertEqual(codes, [503, 200, 503])
        self.assertEqual(len(recorder.threads), 3)
        self.assertNotIn(threading.get_ident(), recorder.threads)

        # A dict of options makes one Redis for every route's tables.
        dep = RateLimit(strict("fail-closed"),
                        redis={"host": "127.0.0.1", "port": free_port()})
        app = self.serve(dep, "/r1")
        self.serve(dep, "/r2", app)
        with TestClient(app) as client:
            codes = [client.get(p).status_code for p in ("/r1", "/r2")]
        self.assertEqual(codes, [429, 429])  # decided, not failed
        tables = [dep.limits_for({"route": r}).tables[0]
                  for r in app.routes[-2:]]
        self.assertIsInstance(dep.redis, tkshm.Redis)
        self.assertEqual([t.redis for t in tables], [dep.redis] * 2)

    def test_declaration_errors(self):
        with self.assertRaises(tkshm.Error):
            RateLimit("10/fortnight")
        with self.assertRaises(tkshm.Error):
            RateLimit("bogus:limit=1")
        for bad in ({"key": "cookie"}, {"headers": "ietf"}):
            with self.assertRaises(ValueError, msg=bad):
                RateLimit(gcra(1), **bad)
        with self.assertRaises(ValueError):
            RateLimit()
        with self.assertRaises(ValueError):
            RateLimit(*[gcra(1)] * 17)

    def test_endpoint_returning_its_own_response(self):
        # FastAPI drops a dependency's headers then: the verdict is in
        # request.state for the endpoint to use.
        app = FastAPI()

        @app.get("/own", dependencies=[Depends(RateLimit(gcra(3)))])
        def own(request: Request):
            return PlainTextResponse(
                "ok\n", headers=dict(request.state.rate_limit.headers))

        with TestClient(app) as client:
            self.assertEqual(remaining(client.get("/own")), 2)

    def test_rate_string(self):
        # "5/minute" is read by the core's policy parser as a GCRA policy.
        app = self.serve(RateLimit("5/minute"))
        with TestClient(app) as client:
            codes = [client.get("/login").status_code for _ in range(6)]
            last = client.get("/login")
        self.assertEqual(codes, [200] * 5 + [429])
        self.assertEqual(last.headers["RateLimit-Policy"], '"default";q=5')


if __name__ == "__main__":
    if MISSING is not None:
        print("skipped: %s (apt-get install python3-fastapi python3-httpx)"
              % MISSING, file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
