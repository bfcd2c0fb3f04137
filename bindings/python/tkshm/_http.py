"""What every web adapter of tkshm shares (the WSGI and ASGI middlewares,
the Flask, Django and FastAPI limits): how a request's key is fitted to a
table, how a table is opened from a policy string, how the response
headers are spelled, and when a failed check may let a request through.

The headers are chosen by one vocabulary everywhere (Python, PHP, the
Apache and nginx modules): "draft" (the IETF draft's RateLimit-Policy and
RateLimit fields, the default), "legacy" (RateLimit-Limit, -Remaining and
-Reset) or "none" (only Retry-After on a denial).
"""

import hashlib
from typing import Any

from . import LEASE_KEY_MAX, Decision, Error, Redis, Table, \
    app_table_name, default_table_path, headers as _headers

HEADER_STYLES = ("draft", "legacy", "none")

STATUS_TEXT = {429: "Too Many Requests", 503: "Service Unavailable"}


def check_style(style: str) -> str:
    """`style` if it is one of HEADER_STYLES, else ValueError saying so."""
    if style not in HEADER_STYLES:
        raise ValueError("headers must be 'draft', 'legacy' or 'none', "
                         "not %r" % (style,))
    return style


def response_headers(decision: Decision, style: str,
                     policy_name: str | None = None
                     ) -> list[tuple[str, str]]:
    """The headers a response to `decision` carries under `style`:
    Retry-After on a denial whatever the style."""
    return _headers(decision, policy_name, style=style)


def fit_key(key: str | bytes) -> bytes:
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


def _cross_host_options(table: Table) -> list[str]:
    _, _, cross_host = getattr(table, "policy", "").partition(";")
    return cross_host.split(",")


def is_strict(table: Table) -> bool:
    """True when `table`'s canonical policy string says mode=strict."""
    return "mode=strict" in _cross_host_options(table)


def fails_closed(table: Table) -> bool:
    """True when `table` is a strict or lease table whose failure policy
    is fail-closed (its canonical policy string says so): a check it
    cannot decide must deny, whatever the caller's own fallback."""
    return "failure=fail-closed" in _cross_host_options(table)


def open_table(table: Table | str, name: str, slots: int = 65536,
               redis: Redis | dict[str, Any] | None = None) -> Table:
    """`table` if it is a tkshm.Table, else the table file called `name`
    in tkshm.run_dir() with the policy (or rate) string `table`, opened by
    every worker alike (a changed policy or more slots change the live
    table).  redis (a tkshm.Redis, or a dict of its options) is attached
    when the table is strict, and ignored otherwise, so that one
    configuration serves both."""
    if isinstance(table, str):
        table = Table(default_table_path(name), table, slots=slots)
    elif not isinstance(table, Table):
        raise TypeError("table must be a tkshm.Table or a policy string")
    if redis is not None and is_strict(table):
        if isinstance(redis, dict):
            redis = Redis(**redis)
        table.attach(redis)
    return table


def default_name(app: object, name: str | None = None) -> str:
    """`name`, or the default table name of the application `app`."""
    return name or app_table_name(app)
