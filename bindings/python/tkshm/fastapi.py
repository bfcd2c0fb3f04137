"""Per-route limits for FastAPI: a dependency over tkshm.route.

    from fastapi import Depends, FastAPI
    from tkshm.fastapi import RateLimit
    from tkshm.route import Limit

    app = FastAPI()

    @app.post("/login", dependencies=[Depends(RateLimit("5/minute"))])
    async def login(): ...

    @app.get("/search", dependencies=[Depends(
        RateLimit("10/second", "1000/day", key="header:X-Api-Key"))])
    async def search(): ...

    # one bucket per user, shared by every route that names "writes"
    writes = RateLimit(Limit("100/hour", key="user", name="writes"))

A route's limits are decided as one: admitted only if every limit admits,
and a denial consumes nothing in the others.  A denial raises
HTTPException(429) with the RateLimit headers and Retry-After (FastAPI's
handler answers it; a websocket route gets WebSocketException 1008); an
admission adds the RateLimit headers to the response (FastAPI merges a
dependency's Response into the endpoint's, unless the endpoint returns a
Response of its own: the verdict is then in request.state.rate_limit).

Buckets are per route: one RateLimit used on several routes (or on a
router, or the whole app) gives each route its own tables (see route_id),
unless its limits are given a name.  Several RateLimits on one route (the
app's, the router's and the route's own) each have tables of their own
there: the second in the route's dependencies is "<route_id>#1".
"""

from collections.abc import Callable, Sequence
from typing import Any

from fastapi import HTTPException, WebSocketException
from starlette.requests import HTTPConnection
from starlette.responses import Response

from . import Redis
from ._http import check_style, is_strict
from ._http import check_policy, check_policy_name, check_status
from .asgi import Scope, _run_in_thread
from .route import KeySource, Limit, RouteLimits, Verdict

__all__ = ["RateLimit", "StarletteKeys", "route_id", "user_id"]

# A policy violation: the websocket close code of a denied connection.
WS_POLICY_VIOLATION = 1008


def user_id(user: Any) -> str | None:
    """The id of scope["user"] (what Starlette's AuthenticationMiddleware
    sets): its identity, else its display_name; None when there is no
    user or it is not authenticated."""
    if user is None or not getattr(user, "is_authenticated", True):
        return None
    for attr in ("identity", "display_name"):
        try:
            value = getattr(user, attr)
        except (AttributeError, NotImplementedError):
            continue  # Starlette's BaseUser raises for what it lacks
        if value is not None:
            return str(value)
    return str(user)


class StarletteKeys(KeySource):
    """What a Starlette (FastAPI) request or websocket tells route.key_of:
    the peer's address, a header, the authenticated user."""

    def client_addr(self, request: HTTPConnection) -> str | None:
        client = request.client
        return client.host if client else None

    def header(self, request: HTTPConnection, name: str) -> str | None:
        return request.headers.get(name)

    def user(self, request: HTTPConnection) -> str | None:
        # scope, not request.user, which asserts the middleware is there.
        return user_id(request.scope.get("user"))


KEYS = StarletteKeys()


def route_id(scope: Scope) -> str:
    """The route a request was routed to: its endpoint's module and
    qualified name, then the route's methods and path ("app.login[POST
    /login]"), which stay the same across workers and restarts.  The
    route (FastAPI puts it in the scope) tells apart one endpoint serving
    several routes, and endpoints a loop made with one qualified name."""
    route = scope.get("route")
    endpoint = scope.get("endpoint") or getattr(route, "endpoint", None)
    if endpoint is None:
        raise RuntimeError("tkshm.fastapi.RateLimit is a route dependency: "
                           "the request was not routed to an endpoint")
    qualname = getattr(endpoint, "__qualname__", None) or \
        type(endpoint).__qualname__
    where = "%s.%s" % (getattr(endpoint, "__module__", None) or "app",
                       qualname)
    path = getattr(route, "path", None)
    if path is None:
        return where
    methods = getattr(route, "methods", None) or ("WS",)
    return "%s[%s %s]" % (where, ",".join(sorted(methods)), path)


def _limits(rates: Sequence[Any], key: Any, cost: Any, name: str | None,
            policy_name: str | None) -> list[Limit]:
    """The Limits of RateLimit's arguments: a Limit as it is, a rate string
    made into one with the shared options; named limits get `name`, then
    `name.1`, `name.2` (one name, one rate)."""
    if len(rates) == 1 and isinstance(rates[0], (list, tuple)):
        rates = rates[0]
    limits = []
    for i, rate in enumerate(rates):
        if not isinstance(rate, Limit):
            table_name = None if name is None else \
                name if i == 0 else "%s.%d" % (name, i)
            rate = Limit(rate, key=key, cost=cost, name=table_name,
                         policy_name=policy_name)
        if rate.table is None:
            # A wrong rate is an error here, at import, not at the route's
            # first request.
            check_policy(rate.rate)
        # (the headers refuse what is not printable ASCII: at every
        # request, were it not refused here)
        check_policy_name(rate.policy_name)
        limits.append(rate)
    if not 1 <= len(limits) <= 16:
        raise ValueError("RateLimit takes 1 to 16 limits, not %d"
                         % len(limits))
    return limits


class RateLimit:
    """A FastAPI dependency limiting the routes it is declared on.

    rates: rate strings ("5/minute", "100 per hour", "10/second,burst=20"
        or any tkshm policy string) and tkshm.route.Limit objects, or one
        list of them; all must admit.
    key, cost, name, policy_name: for the rate strings (a Limit has its
        own): key "ip" (the client address, IPv6 by its /64),
        "header:<Name>", "user" (scope["user"]'s identity, else its
        display_name; anonymous requests by address) or a function of
        the Request returning str, bytes or None (the limit does not
        apply); cost a number or a function of the Request; name shares
        the tables across routes (the first rate's table is `name`, the
        next `name.1`...).
    headers: "draft", "legacy" or "none"; status: a denial's (429);
    fail_open: a check that fails (a full table) admits, unless False
        (503) or the table's policy fails closed;
    slots: the size of the tables made; redis: a tkshm.Redis (or a dict
        of its options) attached to the strict tables, whose checks run
        in a worker thread."""

    def __init__(self, *rates: str | Limit | Sequence[str | Limit],
                 key: str | Callable[[Any], Any] = "ip",
                 cost: float | Callable[[Any], float] = 1,
                 name: str | None = None, policy_name: str | None = None,
                 headers: str = "draft", status: int = 429,
                 fail_open: bool = True, slots: int = 65536,
                 redis: Any = None) -> None:
        self.limits = _limits(rates, key, cost, name, policy_name)
        self.headers = check_style(headers)
        self.status = check_status(status)
        self.fail_open = fail_open
        self.slots = slots
        # One Redis for every route's tables, not one per table: a dict of
        # options would make one for each.  It connects on first use.
        self.redis = Redis(**redis) if isinstance(redis, dict) else redis
        # id(the route object, or the endpoint) -> (it, its RouteLimits,
        # whether a check waits on Redis), so that route_id() runs once a
        # route.  By id: FastAPI's routes compare by value and are not
        # hashable; holding the object keeps its id from being reused.
        self._routes: dict[int, tuple[Any, RouteLimits, bool]] = {}

    def limits_for(self, scope: Scope) -> RouteLimits:
        """The limits of the route `scope` was routed to, made (their
        tables opened) at the route's first request: the route is known
        only then."""
        return self._for_route(scope)[1]

    def _for_route(self, scope: Scope) -> tuple[Any, RouteLimits, bool]:
        route = scope.get("route") or scope.get("endpoint")
        found = self._routes.get(id(route))
        if found is None:
            rid = route_id(scope)
            position = _position(self, route)
            if position:
                # Another RateLimit of the route has route_id's tables.
                rid = "%s#%d" % (rid, position)
            limits = RouteLimits(rid, self.limits, self.headers,
                                 self.status, self.fail_open, self.slots,
                                 self.redis)
            found = (route, limits, any(is_strict(t) for t in limits.tables))
            self._routes[id(route)] = found
        return found

    async def __call__(self, request: HTTPConnection,
                       response: Response) -> None:
        _, limits, strict = self._for_route(request.scope)
        if strict:
            verdict = await _run_in_thread(limits.decide, request, KEYS)
        else:
            verdict = limits.decide(request, KEYS)
        request.state.rate_limit = verdict
        if verdict.allowed:
            for name, value in verdict.headers:
                response.headers[name] = value
            return
        _deny(request, verdict)


def _position(limit: RateLimit, route: Any) -> int:
    """Where `limit` is among the distinct RateLimits the route depends
    on, in the order of its dependency tree (the app's, the router's,
    the route's, the endpoint's parameters'): the same in every worker.
    0 for the first, the only one, or one the tree does not show."""
    seen: list[RateLimit] = []

    def walk(dependant: Any) -> None:
        for sub in getattr(dependant, "dependencies", None) or ():
            call = getattr(sub, "call", None)
            if isinstance(call, RateLimit) and \
                    not any(c is call for c in seen):
                seen.append(call)
            walk(sub)

    walk(getattr(route, "dependant", None))
    for i, call in enumerate(seen):
        if call is limit:
            return i
    return 0


def _deny(request: HTTPConnection, verdict: Verdict) -> None:
    """Raises what FastAPI answers a denial with."""
    if request.scope["type"] == "websocket":
        raise WebSocketException(WS_POLICY_VIOLATION, verdict.reason)
    raise HTTPException(verdict.status or 429, verdict.reason,
                        dict(verdict.headers) or None)
