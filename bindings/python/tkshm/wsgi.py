"""A WSGI middleware that rate-limits requests with a tkshm table.

    from tkshm.wsgi import RateLimitMiddleware
    application = RateLimitMiddleware(application, "gcra:limit=10,periodMs=1000")

A policy string gives the application its default table: a file named
after the application (app_table_name(app), or name=...) in
tkshm.run_dir(), which every worker process opens, so the limit is one
across workers with or without --preload, and with servers that spawn
their workers (uvicorn --workers).  Creating it is race-free: the workers
that start together all end up on one file.  A policy edited and reloaded
(gunicorn's SIGHUP) is applied to that live table, every key keeping its
state where the kinds allow; table.change says what was done.  A
tkshm.Table may be given instead.

A strict policy (";mode=strict") decides on Redis: pass redis= (a
tkshm.Redis, or a dict of its options) and it is attached to the table:

    application = RateLimitMiddleware(
        application, "gcra:limit=5,periodMs=60000;mode=strict,prefix=login",
        redis={"host": "10.0.0.5", "command_timeout_ms": 50})

The key is the client address by default, an IPv6 address aggregated to its
/64 (one host usually owns a whole /64).
"""

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from . import Error, Redis, Table, client_key as _client_key
from ._http import STATUS_TEXT, check_cost, check_policy_name, \
    check_status, check_style, check_with_cost, default_name, \
    fails_closed, fit_key, is_strict, open_table, \
    response_headers  # noqa: F401

if TYPE_CHECKING:  # the WSGI types of typeshed (wsgiref.types is 3.11+)
    from _typeshed import OptExcInfo
    from _typeshed.wsgi import StartResponse, WSGIApplication, \
        WSGIEnvironment


def client_key(environ: "WSGIEnvironment") -> str:
    """REMOTE_ADDR as tkshm.client_key() keys it: an IPv6 address becomes
    its /64 ("2001:db8::/64"), a v4-mapped one its IPv4 address; anything
    that is not an IP address (a unix socket's name) is used as it is."""
    addr = environ.get("REMOTE_ADDR") or "-"
    try:
        return _client_key(addr)
    except Error:
        return addr


class RateLimitMiddleware:
    """Checks every request against `table`; a denial answers `status`
    (429) without calling the app.  headers: "draft" (the default) adds
    the IETF draft's RateLimit-Policy/RateLimit, "legacy" the older
    RateLimit-Limit/-Remaining/-Reset, "none" none (Retry-After is always
    sent on a denial).
    key_func(environ) returns the key (str or bytes), or None to let the
    request through unchecked; an empty or over-long key is fitted
    (fit_key), never refused.  cost is a number or a function of environ.
    table: a tkshm.Table, or a policy string for the application's
    default table (named `name`, default app_table_name(app), with `slots`
    slots, in tkshm.run_dir()).
    redis: a tkshm.Redis, or a dict of its keyword options (a Redis is
    then made for this middleware), attached to the table if its policy
    is strict (ignored otherwise, so one configuration serves both).
    A Redis fault never reaches here: the library decides it by the
    table's failure policy.  A table error (full, busy) fails open unless
    fail_open=False, or unless the table is a cross-host one whose policy
    fails closed: such a table is never admitted by this fallback."""

    default_key = staticmethod(client_key)

    def __init__(
            self, app: "WSGIApplication", table: Table | str,
            key_func: "Callable[[WSGIEnvironment], str | bytes | None]"
            = client_key,
            cost: "float | Callable[[WSGIEnvironment], float]" = 1,
            status: int = 429, headers: str = "draft",
            policy_name: str | None = None, fail_open: bool = True,
            name: str | None = None, slots: int = 65536,
            redis: Redis | dict[str, Any] | None = None) -> None:
        self.app = app
        self.table = open_table(table, default_name(app, name), slots, redis)
        self.key_func = key_func
        # Every option is checked now: a bad one would otherwise fail
        # every request, or make checks fail that fail-open admits.
        self.cost: "float | Callable[[WSGIEnvironment], float]" = \
            cost if callable(cost) else check_cost(cost)
        status = check_status(status)
        self.status = "%d %s" % (status, STATUS_TEXT.get(status, "Denied"))
        self.headers = check_style(headers)
        self.policy_name = check_policy_name(policy_name)
        self.fail_open = fail_open and not fails_closed(self.table)

    def __call__(self, environ: "WSGIEnvironment",
                 start_response: "StartResponse") -> Iterable[bytes]:
        key = self.key_func(environ)
        if key is None:
            return self.app(environ, start_response)
        key = fit_key(key)
        # A cost function's bad answer is raised (the application's bug),
        # never a failed check that fail-open would admit.
        cost = check_cost(self.cost(environ)) if callable(self.cost) \
            else float(self.cost)
        if cost == 0:  # nothing to consume: nothing to decide
            return self.app(environ, start_response)
        try:
            d = check_with_cost(self.table, key, cost)
        except Error:
            if self.fail_open:
                return self.app(environ, start_response)
            start_response("503 Service Unavailable",
                           [("Content-Type", "text/plain")])
            return [b"rate limiter unavailable\n"]
        extra = response_headers(d, self.headers, self.policy_name)
        if not d.allowed:
            body = b"Too Many Requests\n"
            start_response(self.status, [
                ("Content-Type", "text/plain"),
                ("Content-Length", str(len(body))),
            ] + extra)
            return [body]
        if not extra:
            return self.app(environ, start_response)

        def _start(status: str, response_headers: list[tuple[str, str]],
                   exc_info: "OptExcInfo | None" = None
                   ) -> Callable[[bytes], object]:
            return start_response(status, list(response_headers) + extra,
                                  exc_info)

        return self.app(environ, _start)
