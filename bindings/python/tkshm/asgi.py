"""An ASGI middleware that rate-limits requests with a tkshm table: the
WSGI middleware's options and semantics (tkshm.wsgi), for Starlette,
FastAPI or any ASGI application.

    from tkshm.asgi import RateLimitMiddleware
    app = RateLimitMiddleware(app, "gcra:limit=10,periodMs=1000")
    # or, Starlette and FastAPI:
    app.add_middleware(RateLimitMiddleware, table="100/minute")

"http" requests are checked; "lifespan" passes through untouched; a
"websocket" is checked once, when it connects.  An admitted request's
response (a websocket's accept) carries the RateLimit headers; a denied
one is answered here (status, headers with Retry-After, a short text
body), the app never called.  A denied websocket gets the same response
where the server offers the ASGI "websocket.http.response" extension,
and otherwise a close with code 1008 (policy violation) before the
handshake, which the server turns into an HTTP 403.

A policy string opens the application's default table, a file every
worker opens (see default_table_name).  A check takes nanoseconds and
never waits, so it runs on the event loop, except on a strict table
(";mode=strict"), whose check is a Redis round trip: it runs in a worker
thread, so the loop never waits on the network.
"""

import asyncio
import sys
import types
import weakref
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, TypeVar

from . import Error, Table, app_table_name, \
    client_key as _client_key, default_table_path
from ._http import STATUS_TEXT, check_cost, check_policy, \
    check_policy_name, check_status, check_style, check_with_cost, \
    fails_closed, fit_key, is_strict, open_table, response_headers
from .route import _code_digest

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
_T = TypeVar("_T")

__all__ = ["RateLimitMiddleware", "check_cost", "check_policy",
           "client_key", "default_table_name"]


def client_key(scope: Scope) -> str:
    """The peer's address (scope["client"]) as tkshm.client_key() keys
    it: an IPv6 address becomes its /64 ("2001:db8::/64"), a v4-mapped
    one its IPv4 address; anything that is not an IP address (a unix
    socket's peer, a test client's name) is used as it is."""
    client = scope.get("client")
    addr = (client[0] if client else None) or "-"
    try:
        return _client_key(addr)
    except (Error, ValueError):  # ValueError: a NUL in it
        return addr


def _bound_name(app: object) -> str | None:
    """"module.attr-<digest>" for the module-level name an application
    instance is bound to (what `uvicorn main:app` is told), else None.
    An instance's class (FastAPI, Starlette) is the same for every
    application on the host, so the class alone would make them all share
    one default table."""
    found = []
    for modname, mod in list(sys.modules.items()):
        if not isinstance(mod, types.ModuleType):
            continue
        for attr, value in list(vars(mod).items()):
            if value is app and not attr.startswith("_"):
                found.append((modname == "__main__", modname, attr))
    if not found:
        return None
    # Sorted, so that every worker picks the same one of several names.
    _, modname, attr = min(found)
    route = modname + "." + attr
    return "%s-%s" % (route, _code_digest(route))


def default_table_name(app: object) -> str | None:
    """The default table's name for `app`: a function's or class's
    tkshm.app_table_name(app) (as the WSGI middleware's), an instance's
    module-level name (main.app-3f2a9c1e), or None when neither tells
    (an instance made by a factory, or Starlette's own middleware that
    add_middleware wraps)."""
    if hasattr(app, "__qualname__"):
        return app_table_name(app)
    return _bound_name(app)


async def _run_in_thread(func: Callable[..., _T], *args: Any) -> _T:
    """func(*args) in a worker thread: anyio's (Starlette's, under asyncio
    or trio) where installed, else asyncio's."""
    try:
        from anyio.to_thread import run_sync
    except ImportError:
        return await asyncio.to_thread(func, *args)
    return await run_sync(func, *args)


def _raw(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """ASGI's header list: lower-case names, bytes."""
    return [(n.lower().encode("latin-1"), v.encode("latin-1"))
            for n, v in headers]


class RateLimitMiddleware:
    """Checks every http request and websocket connection against `table`;
    a denial answers `status` (429) without calling the app.  headers:
    "draft" (the default) adds the IETF draft's RateLimit-Policy and
    RateLimit, "legacy" RateLimit-Limit/-Remaining/-Reset, "none" none
    (Retry-After is always sent on a denial).
    key_func(scope) returns the key (str or bytes), or None to let the
    request through unchecked; an empty or over-long key is fitted
    (fit_key), never refused.  cost is a number or a function of scope:
    a finite number >= 0 (else ValueError, raised to the server); a cost
    of 0 lets the request through unchecked, one above any limit is
    denied.
    table: a tkshm.Table, or a policy string for the application's
    default table, named `name` or else default_table_name(app), with
    `slots` slots, in tkshm.run_dir().  Under add_middleware the app
    given is Starlette's own innermost middleware, so the name is found
    at the first request from the application Starlette puts in the
    scope (scope["app"]); until then `table` is None.
    redis: a tkshm.Redis, or a dict of its options, attached to the table
    if its policy is strict (ignored otherwise).
    A table error (full, busy) fails open unless fail_open=False (503),
    or unless the table's policy fails closed.
    Two middlewares of a process on one table file (one name) with two
    policies raise ValueError: the second would change the first's limit
    under it."""

    default_key = staticmethod(client_key)

    def __init__(self, app: ASGIApp, table: Table | str,
                 key_func: Callable[[Scope], str | bytes | None]
                 = client_key,
                 cost: float | Callable[[Scope], float] = 1,
                 status: int = 429, headers: str = "draft",
                 policy_name: str | None = None, fail_open: bool = True,
                 name: str | None = None, slots: int = 65536,
                 redis: Any = None) -> None:
        self.app = app
        self.key_func = key_func
        self.cost: float | Callable[[Scope], Any] = \
            cost if callable(cost) else check_cost(cost)
        self.status = check_status(status)
        self.headers = check_style(headers)
        self.policy_name = check_policy_name(policy_name)
        self.fail_open = fail_open
        self._strict = False
        self._spec = (table, slots, redis)
        self.table: Table | None = None
        name = name or default_table_name(app)
        if isinstance(table, Table):
            self._open("")  # a Table is used as it is: no name needed
        elif name is not None:
            self._open(name)
        else:
            check_policy(table)

    def _open(self, name: str) -> Table:
        table, slots, redis = self._spec
        if isinstance(table, str):
            _claim(self, default_table_path(name), table)
        self.table = open_table(table, name, slots, redis)
        self.fail_open = self.fail_open and not fails_closed(self.table)
        self._strict = is_strict(self.table)
        return self.table

    def _open_from_scope(self, scope: Scope) -> Table:
        app = scope.get("app")
        name = default_table_name(app) if app is not None else None
        return self._open(name or app_table_name(app or self.app))

    async def __call__(self, scope: Scope, receive: Receive,
                       send: Send) -> None:
        kind = scope["type"]
        if kind != "http" and kind != "websocket":
            await self.app(scope, receive, send)
            return
        table = self.table
        if table is None:
            table = self._open_from_scope(scope)
        key = self.key_func(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        cost = check_cost(self.cost(scope) if callable(self.cost)
                          else self.cost)
        if cost == 0:  # nothing to consume: nothing to decide
            await self.app(scope, receive, send)
            return
        try:
            if self._strict:
                d = await _run_in_thread(check_with_cost, table,
                                         fit_key(key), cost)
            else:
                d = check_with_cost(table, fit_key(key), cost)
        except Error:
            if self.fail_open:
                await self.app(scope, receive, send)
            else:
                await _deny(scope, send, 503, [],
                            b"rate limiter unavailable\n")
            return
        extra = _raw(response_headers(d, self.headers, self.policy_name))
        if not d.allowed:
            await _deny(scope, send, self.status, extra,
                        STATUS_TEXT.get(self.status, "Denied").encode()
                        + b"\n")
            return
        if not extra:
            await self.app(scope, receive, send)
            return
        # A websocket's accept carries headers too (ASGI 2.1).
        opening = "http.response.start" if kind == "http" \
            else "websocket.accept"

        async def send_with_headers(message: Message) -> None:
            if message["type"] == opening:
                message = dict(message)
                message["headers"] = list(message.get("headers", ())) \
                    + extra
            await send(message)

        await self.app(scope, receive, send_with_headers)


# The table files this process's middlewares opened by a policy string:
# path -> (the canonical policy, the middleware).
_claimed: dict[str, tuple[str, "weakref.ref[RateLimitMiddleware]"]] = {}


def _claim(mw: RateLimitMiddleware, path: str, policy: str) -> None:
    """Records that `mw` decides on the table file `path` with `policy`;
    ValueError, before the file is touched, when another live middleware
    of this process decides on it with another policy: opening the file
    with this one would change the other's limit under it (two
    middlewares of one app, e.g. a global limit and a tighter one on some
    paths, both name their table after the app)."""
    with Table(None, policy, private=True, slots=1) as probe:
        canonical = probe.policy
    held = _claimed.get(path)
    other = held[1]() if held is not None else None
    if other is not None and other is not mw and held is not None and \
            held[0] != canonical:
        raise ValueError(
            "the table %s is already the table of another "
            "RateLimitMiddleware, with %r: opening it with %r would change "
            "that one's limit too.  Give each middleware its own name="
            % (path, held[0], canonical))
    _claimed[path] = (canonical, weakref.ref(mw))


async def _deny(scope: Scope, send: Send, status: int,
                headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    """Answers a denied request or connection with `status`."""
    response = [(b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", b"%d" % len(body))] + headers
    if scope["type"] == "http":
        start, more = "http.response.start", "http.response.body"
    elif "websocket.http.response" in (scope.get("extensions") or ()):
        start, more = "websocket.http.response.start", \
            "websocket.http.response.body"
    else:
        # No way to send a status: close before accepting, which the
        # server answers with a 403; 1008 says "policy violation".
        await send({"type": "websocket.close", "code": 1008,
                    "reason": STATUS_TEXT.get(status, "Denied")})
        return
    await send({"type": start, "status": status, "headers": response})
    await send({"type": more, "body": body})
