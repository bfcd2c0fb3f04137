"""Per-route limits, whatever the framework: the engine under the Flask and
Django decorators and the FastAPI dependency.

    limits = RouteLimits("shop.views.login",
                         [Limit("5/minute"), Limit("100/day", key="user")])
    verdict = limits.decide(request, adapter)
    if not verdict.allowed:
        ...  # answer verdict.status with verdict.headers

A route's limits are decided as one: the request is admitted only if every
limit admits, and a denial consumes nothing anywhere (tkshm.check_multi).
Each limit has its own table file in tkshm.run_dir(), opened by every
worker process alike, so a limit holds across workers however the server
started them; limits given one `name` share one table (and so one bucket
per key) across every route that names it.

The adapter is what a framework knows about its request: its client
address, a header, the user (see KeySource).
"""

import hashlib
import math
import os
import re
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, \
    Tuple, Union

from . import ECOST, Decision, Error, Redis, Table, check_multi, \
    client_key
from ._http import STATUS_TEXT, check_cost, check_policy_name, \
    check_style, fails_closed, fit_key, open_table, response_headers

__all__ = ["KeySource", "Limit", "RouteLimits", "Verdict", "key_of"]

# What a limit is keyed by: "ip", "user", "header:<Name>", or a function of
# the framework's request returning the key (None: the limit does not
# apply to the request).
KeySpec = Union[str, Callable[[Any], Union[str, bytes, None]]]


class KeySource:
    """What a framework adapter tells about a request: override all three.
    client_addr() is the peer's address as the server saw it (behind a
    proxy, give the limit a key function instead); header() is None when
    the header is absent; user() is None for an anonymous request."""

    def client_addr(self, request: Any) -> Optional[str]:
        raise NotImplementedError

    def header(self, request: Any, name: str) -> Optional[str]:
        raise NotImplementedError

    def user(self, request: Any) -> Any:
        raise NotImplementedError


def _address_key(addr: Optional[str]) -> str:
    """"a:" and the address as tkshm.client_key() keys it (an IPv6
    address aggregated to its /64); a name that is not an IP address (a
    unix socket's) as it is."""
    addr = addr or "-"
    try:
        return "a:" + client_key(addr)
    except (Error, ValueError):  # not an IP address; ValueError: a NUL
        return "a:" + addr


def key_of(spec: "KeySpec", request: Any,
           source: KeySource) -> Union[str, bytes, None]:
    """The key `spec` gives for `request`, or None (the limit does not
    apply).  spec is "ip" (the client address, IPv6 aggregated to its
    /64), "header:<Name>" (the header's value; a request without it is
    keyed by its address, so leaving the header out never skips the
    limit), "user" (the user's id; an anonymous request is keyed by its
    address) or a function of the request.  The prefixes a:, h: and u:
    keep an address, a header value and a user id from ever naming one
    bucket."""
    if callable(spec):
        return spec(request)
    if spec == "ip":
        return _address_key(source.client_addr(request))
    if spec == "user":
        user = source.user(request)
        if user is None:
            return _address_key(source.client_addr(request))
        return "u:" + str(user)
    value = source.header(request, spec[len("header:"):])
    if value is None:
        return _address_key(source.client_addr(request))
    return "h:" + value


def _check_key_spec(key: "KeySpec") -> "KeySpec":
    if callable(key) or key in ("ip", "user"):
        return key
    if isinstance(key, str) and key.startswith("header:") and \
            len(key) > len("header:"):
        return key
    raise ValueError("key must be 'ip', 'user', 'header:<Name>' or a "
                     "function of the request, not %r" % (key,))


class Limit:
    """One limit of a route.

    rate: a rate string ("5/minute", "100 per hour", "10/second,burst=20")
        or any tkshm policy string ("slidingWindow:limit=100,windowMs=
        60000"), with its cross-host options after a ';'.
    key: "ip" (default), "header:<Name>", "user" or a function of the
        framework's request returning str, bytes or None (None: this limit
        does not apply to the request).
    cost: a number, or a function of the request.
    name: the table's name: limits that give the same name share one
        table (with one rate) across routes; by default each route's limit
        has a table of its own.
    table: a tkshm.Table to use instead (shared with whoever holds it).
    policy_name: the name the RateLimit headers give the policy."""

    def __init__(self, rate: Optional[str], key: "KeySpec" = "ip",
                 cost: Union[float, Callable[[Any], float]] = 1,
                 name: Optional[str] = None, table: Optional[Table] = None,
                 policy_name: Optional[str] = None) -> None:
        if table is None and not isinstance(rate, str):
            raise TypeError("rate must be a rate or policy string")
        self.rate = rate
        self.key = _check_key_spec(key)
        self.cost: Union[float, Callable[[Any], float]] = \
            cost if callable(cost) else check_cost(cost)
        self.name = name
        self.table = table
        self.policy_name = check_policy_name(policy_name)

    def __repr__(self) -> str:
        return "Limit(%r, key=%r)" % (self.rate, self.key)


def _code_digest(route_id: str) -> str:
    """A digest of where the route's code lives, so that two deployments
    of one code base on a host do not share tables."""
    module = route_id.rpartition(".")[0]
    # The route's module is the longest loaded prefix: a method's or a
    # nested function's qualified name has dots of its own.
    while module and module not in sys.modules:
        module = module.rpartition(".")[0]
    where = getattr(sys.modules.get(module), "__file__", None) or os.getcwd()
    return hashlib.blake2b(os.path.abspath(where).encode("utf-8", "replace"),
                           digest_size=4).hexdigest()


class Verdict:
    """What decide() found: allowed; status (the HTTP status to answer a
    denial or a failure with, else None); headers, [(name, value)], for
    the response either way; decision, the binding tkshm.Decision (None
    when no limit applied or the check failed)."""

    __slots__ = ("allowed", "status", "headers", "decision")

    def __init__(self, allowed: bool, status: Optional[int] = None,
                 headers: Sequence[Tuple[str, str]] = (),
                 decision: Optional[Decision] = None) -> None:
        self.allowed = allowed
        self.status = status
        self.headers = list(headers)
        self.decision = decision

    @property
    def reason(self) -> str:
        """The status line's text for status."""
        return STATUS_TEXT.get(self.status or 0, "Denied")

    def __bool__(self) -> bool:
        return self.allowed


# The longest table name default_table_path() keeps whole.
_NAME_MAX = 96

def _open_limit(limit: Limit, name: Optional[str], slots: int,
                redis: Union[Redis, Dict[str, Any], None]) -> Table:
    """The limit's own table, or the table file `name` at its rate."""
    if limit.table is not None:
        return limit.table
    assert name is not None and limit.rate is not None  # Limit checks it
    return open_table(limit.rate, name, slots, redis)


# The table names declared in this process and their rates: one name, one
# rate (opening a named table with another rate would change the live
# table under the routes that share it).
_declared: Dict[str, Optional[str]] = {}


def _check_all(dims: List[Tuple[Table, bytes, float]]) -> Tuple[Decision, int]:
    """check_multi(dims): the binding decision and its index.  A cost the
    tables refuse though it is in range (too small to change a key's
    state: ECOST) is checked as whole units, as _http.check_with_cost
    does for one table: charged more, never admitted by a fail-open
    fallback."""
    try:
        decision, binding, _ = check_multi(dims)
    except Error as e:
        if e.code != ECOST:
            raise
        decision, binding, _ = check_multi(
            [(t, k, float(math.ceil(c))) for t, k, c in dims])
    return decision, binding


class RouteLimits:
    """The limits of one route (route_id: its view's module and qualified
    name), decided as one.  headers: "draft", "legacy" or "none"; status:
    the denial's status; fail_open: a check that fails (a full table) lets
    the request through (never for a table whose policy fails closed);
    slots: the size of the tables this makes; redis: a tkshm.Redis (or a
    dict of its options) attached to the strict ones."""

    def __init__(self, route_id: str, limits: Sequence[Limit],
                 headers: str = "draft", status: int = 429,
                 fail_open: bool = True, slots: int = 65536,
                 redis: Union[Redis, Dict[str, Any], None] = None) -> None:
        if not limits:
            raise ValueError("a route needs at least one Limit")
        if len(limits) > 16:
            raise ValueError("a route takes at most 16 limits")
        self.route_id = route_id
        self.limits = list(limits)
        self.headers = check_style(headers)
        self.status = status
        self.fail_open = fail_open
        names = [self._table_name(i, lim)
                 for i, lim in enumerate(self.limits)]
        # Opened now, so that a wrong rate is an error at startup, not at
        # the first request; a handle survives fork(), and the files are
        # what every worker shares.
        self.tables = [_open_limit(lim, name, slots, redis)
                       for lim, name in zip(self.limits, names)]

    def _table_name(self, index: int, limit: Limit) -> Optional[str]:
        if limit.table is not None:
            return None
        if limit.name is None:
            name = "route-%s-%d-%s" % (self.route_id, index,
                                       _code_digest(self.route_id))
        else:
            name = "limit-" + limit.name
        if len(name) > _NAME_MAX or re.search(r"[^A-Za-z0-9._-]", name):
            # default_table_path() keeps _NAME_MAX characters of
            # [A-Za-z0-9._-], the others made "_": such a name keeps a
            # prefix and a digest of the whole, so that two limits never
            # share a table by a common prefix or spelling ("/a/b" and
            # "/a_b").
            digest = hashlib.blake2b(name.encode("utf-8", "replace"),
                                     digest_size=8).hexdigest()
            name = name[:_NAME_MAX - 17] + "-" + digest
        seen = _declared.setdefault(name, limit.rate)
        if seen != limit.rate:
            raise ValueError("the table %r is declared with two rates, %r "
                             "and %r: limits that share a name share one "
                             "rate, and a route is declared once"
                             % (limit.name or name, seen, limit.rate))
        return name

    def _dimensions(self, request: Any, source: KeySource
                    ) -> Tuple[List[Tuple[Table, bytes, float]], List[int]]:
        dims, which = [], []
        for i, (lim, table) in enumerate(zip(self.limits, self.tables)):
            key = key_of(lim.key, request, source)
            if key is None:
                continue
            cost = check_cost(lim.cost(request)) \
                if callable(lim.cost) else float(lim.cost)
            if cost == 0:  # nothing to consume: nothing to check
                continue
            dims.append((table, fit_key(key), cost))
            which.append(i)
        return dims, which

    def decide(self, request: Any, source: KeySource) -> Verdict:
        """Checks `request` against every limit that applies to it, as one
        decision, and says how to answer."""
        # Outside the try: a key or cost function that raises (even
        # tkshm.Error, from tkshm.client_key on a header's garbage) is the
        # application's error, never a failed check that fail-open admits.
        dims, which = self._dimensions(request, source)
        if not dims:
            return Verdict(True)
        try:
            decision, binding = _check_all(dims)
        except Error:
            closed = any(fails_closed(t) for t in self.tables)
            if self.fail_open and not closed:
                return Verdict(True)
            return Verdict(False, 503)
        lim = self.limits[which[binding]]
        headers = response_headers(decision, self.headers,
                                   lim.policy_name)
        if decision.allowed:
            return Verdict(True, None, headers, decision)
        return Verdict(False, self.status, headers, decision)
