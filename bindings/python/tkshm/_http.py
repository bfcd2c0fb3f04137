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
import math
import numbers
from typing import Any

from . import ECOST, LEASE_KEY_MAX, Decision, Error, Redis, Table, plan, \
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


def check_policy(policy: str) -> None:
    """Raises tkshm.Error (or TypeError) now, at startup, if `policy` is
    not a policy or rate string, where the table it is for will be opened
    only later: planning a path that cannot exist parses it, and touches
    nothing."""
    if not isinstance(policy, str):
        raise TypeError("table must be a tkshm.Table or a policy string")
    plan("/dev/null/tkshm", policy)


# TKSHM_COST_MAX: the largest cost a check takes (2^53 - 1).
COST_MAX = 9007199254740991


def check_cost(cost: Any) -> float:
    """`cost` as a check takes it: a finite real number >= 0 (not a
    bool), a cost above COST_MAX lowered to it (any limit denies it,
    where the table would refuse it as an error, which a fail-open limit
    would admit).  Anything else raises ValueError: a cost function that
    returns it is the application's bug, never a check that fails."""
    if isinstance(cost, bool) or not isinstance(cost, numbers.Real):
        raise ValueError("a cost must be a finite number >= 0, not %r"
                         % (cost,))
    if isinstance(cost, numbers.Integral):
        whole = int(cost)
        if whole < 0:
            raise ValueError("a cost must be a finite number >= 0, not %r"
                             % (cost,))
        return float(min(whole, COST_MAX))
    try:
        value = float(cost)
    except OverflowError:  # a Fraction beyond any float
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ValueError("a cost must be a finite number >= 0, not %r"
                         % (cost,))
    return min(value, float(COST_MAX))


def check_policy_name(policy_name: str | None) -> str | None:
    """`policy_name` if the headers can carry it (printable ASCII), else
    ValueError now, rather than a failure at every request."""
    if policy_name is not None and (
            not isinstance(policy_name, str) or
            any(not " " <= c <= "~" for c in policy_name)):
        raise ValueError("policy_name must be printable ASCII, not %r"
                         % (policy_name,))
    return policy_name


def check_status(status: Any) -> int:
    """A denial's status: an int from 400 to 599."""
    if isinstance(status, bool) or not isinstance(status, int) or \
            not 400 <= status <= 599:
        raise ValueError("status must be an HTTP status from 400 to 599, "
                         "not %r" % (status,))
    return status


def check_with_cost(table: Table, key: bytes, cost: float) -> Decision:
    """table.check(key, cost); a cost the table refuses though it is in
    range (too small to change the key's state, or a fraction of a
    whole-token budget: ECOST) is checked as the next whole number of
    units: charged more, never admitted for free or by a fail-open
    fallback however spent the key is."""
    try:
        return table.check(key, cost)
    except Error as e:
        if e.code != ECOST or cost == math.ceil(cost):
            raise
    return table.check(key, math.ceil(cost))
