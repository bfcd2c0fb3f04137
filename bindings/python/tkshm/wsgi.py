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

import hashlib

from . import LEASE_KEY_MAX, Error, Redis, Table, app_table_name, \
    client_key as _client_key, default_table_path, headers as _headers

_STATUS_TEXT = {429: "Too Many Requests", 503: "Service Unavailable"}


def client_key(environ):
    """REMOTE_ADDR as tkshm.client_key() keys it: an IPv6 address becomes
    its /64 ("2001:db8::/64"), a v4-mapped one its IPv4 address; anything
    that is not an IP address (a unix socket's name) is used as it is."""
    addr = environ.get("REMOTE_ADDR") or "-"
    try:
        return _client_key(addr)
    except Error:
        return addr


def fit_key(key):
    """The key as the table takes it, whatever the client sent: a key
    that came from the request (a header, an API key) must not be able to
    skip the limit by being refused.  An empty key becomes one shared
    bucket; a key longer than LEASE_KEY_MAX bytes (the shortest limit of
    any table) becomes a BLAKE2b digest of it, so each long key still has
    a bucket of its own and nobody can aim at another's."""
    if isinstance(key, str):
        key = key.encode("utf-8", "surrogatepass")
    if not key:
        return b"\x00empty"
    if len(key) > LEASE_KEY_MAX:
        return b"\x00b2:" + hashlib.blake2b(key, digest_size=20).digest()
    return key


def is_strict(table):
    """True when `table`'s canonical policy string says mode=strict."""
    _, _, cross_host = getattr(table, "policy", "").partition(";")
    return "mode=strict" in cross_host.split(",")


def fails_closed(table):
    """True when `table` is a strict or lease table whose failure policy
    is fail-closed (its canonical policy string says so): a check it
    cannot decide must deny, whatever the caller's own fallback."""
    _, _, cross_host = getattr(table, "policy", "").partition(";")
    return "failure=fail-closed" in cross_host.split(",")


class RateLimitMiddleware:
    """Checks every request against `table`; a denial answers `status`
    (429) without calling the app.  headers: True adds the IETF draft's
    RateLimit-Policy/RateLimit, "legacy" the older RateLimit-Limit/
    -Remaining/-Reset, False none (Retry-After is always sent on a denial).
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

    def __init__(self, app, table, key_func=client_key, cost=1, status=429,
                 headers=True, policy_name=None, fail_open=True, name=None,
                 slots=65536, redis=None):
        self.app = app
        if isinstance(table, str):
            # The application's default table: a named file that every
            # worker opens (a changed policy or more slots change it).
            table = Table(default_table_path(name or app_table_name(app)),
                          table, slots=slots)
        if redis is not None and is_strict(table):
            if isinstance(redis, dict):
                redis = Redis(**redis)
            table.attach(redis)
        self.table = table
        self.key_func = key_func
        self.cost = cost
        self.status = "%d %s" % (status, _STATUS_TEXT.get(status, "Denied"))
        self.headers = headers
        self.policy_name = policy_name
        self.fail_open = fail_open and not fails_closed(table)

    def _headers(self, d):
        if self.headers is False or self.headers is None:
            if d.allowed:
                return []
            return [h for h in _headers(d) if h[0] == "Retry-After"]
        return _headers(d, self.policy_name,
                        draft=self.headers != "legacy")

    def __call__(self, environ, start_response):
        key = self.key_func(environ)
        if key is None:
            return self.app(environ, start_response)
        key = fit_key(key)
        cost = self.cost(environ) if callable(self.cost) else self.cost
        try:
            d = self.table.check(key, cost)
        except Error:
            if self.fail_open:
                return self.app(environ, start_response)
            start_response("503 Service Unavailable",
                           [("Content-Type", "text/plain")])
            return [b"rate limiter unavailable\n"]
        extra = self._headers(d)
        if not d.allowed:
            body = b"Too Many Requests\n"
            start_response(self.status, [
                ("Content-Type", "text/plain"),
                ("Content-Length", str(len(body))),
            ] + extra)
            return [body]
        if not extra:
            return self.app(environ, start_response)

        def _start(status, response_headers, exc_info=None):
            return start_response(status, list(response_headers) + extra,
                                  exc_info)

        return self.app(environ, _start)
