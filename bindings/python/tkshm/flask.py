"""Per-route limits for Flask, in Flask-Limiter's idiom, over tkshm.route.

    from flask import Flask, g
    from tkshm.flask import Limiter

    limiter = Limiter(default_limits=["100/minute"],
                      user=lambda: getattr(g.get("user"), "id", None))

    def create_app():
        app = Flask(__name__)
        limiter.init_app(app)      # or Limiter(app, ...)
        return app

    @bp.route("/login", methods=["POST"])
    @limiter.limit("5/minute", "100/day")
    def login(): ...

    @bp.route("/healthz")
    @limiter.exempt
    def healthz(): ...

A route's limits are decided as one: admitted only if every limit admits,
and a denial consumes nothing in the others.  Each decorated route has
its own tables (one per limit; `name=` shares them across routes);
default limits apply per route to every view without limits of its own.
Every table is a file in tkshm.run_dir() that every worker opens, so the
limits hold across gunicorn's workers however they were started.

A denial raises RateLimitExceeded, an HTTPException that is also
werkzeug's TooManyRequests (for status 429), so @app.errorhandler(429)
answers it if the app has one; the RateLimit headers and Retry-After are
added to that response and to every checked response (after_request).
"""

import functools
import hashlib
import inspect
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from flask import Flask, current_app, request
from werkzeug.exceptions import HTTPException, default_exceptions

from . import Redis
from ._view_limits import ATTR, LimitSpec, Mark, RouteCache, Settings, \
    build_route_limits, merged_mark, read_settings
from .route import KeySource, Limit, RouteLimits, Verdict

if TYPE_CHECKING:
    from werkzeug.sansio.response import Response

__all__ = ["FlaskKeys", "Limiter", "RateLimitExceeded"]

F = TypeVar("F", bound=Callable[..., Any])

# Where a request's Verdict is kept for after_request: the request's own
# environ, which no other request shares (flask.g may outlive a request
# when the app context was pushed by the caller).
ENVIRON_KEY = "tkshm.rate_limit"

NEEDS_USER = ("a limit keyed by 'user' needs Limiter(user=...), a function "
              "returning the current user's id or None")


class FlaskKeys(KeySource):
    """What a Flask request tells route.key_of: request.remote_addr (the
    peer; behind a proxy, werkzeug's ProxyFix makes it the client's), a
    header, and the user as Limiter's user() callable says."""

    def __init__(self, user: Callable[[], object] | None) -> None:
        self._user = user

    def client_addr(self, request: Any) -> str | None:
        addr = request.remote_addr
        return None if addr is None else str(addr)

    def header(self, request: Any, name: str) -> str | None:
        value = request.headers.get(name)
        return None if value is None else str(value)

    def user(self, request: Any) -> str | None:
        if self._user is None:
            raise RuntimeError("key 'user' needs Limiter(user=...)")
        user = self._user()
        return None if user is None else str(user)


class RateLimitExceeded(HTTPException):
    """A request the limits denied (verdict.status, 429 by default), or
    could not decide and must not admit (503).  The class raised is made
    per status and also derives from werkzeug's class for it
    (TooManyRequests, ServiceUnavailable), so that @app.errorhandler(429),
    errorhandler(TooManyRequests) and errorhandler(RateLimitExceeded) all
    catch it.  verdict: the tkshm.route.Verdict, headers included."""

    def __init__(self, verdict: Verdict) -> None:
        super().__init__()
        self.verdict = verdict
        if verdict.decision is None:
            self.description = "The rate limiter could not decide this " \
                               "request."

    def get_headers(self, environ: Any = None,
                    scope: Any = None) -> list[tuple[str, str]]:
        return super().get_headers(environ, scope) + self.verdict.headers


_exception_classes: dict[int, type[RateLimitExceeded]] = {}


def exception_class(status: int) -> type[RateLimitExceeded]:
    """The RateLimitExceeded class raised for `status`.  Flask finds an
    error handler by the class's code, then its bases: the base class
    has no code, so its handler catches every status."""
    cls = _exception_classes.get(status)
    if cls is None:
        base = default_exceptions.get(status, HTTPException)
        cls = type("RateLimitExceeded", (RateLimitExceeded, base),
                   {"code": status, "__module__": __name__})
        _exception_classes[status] = cls
    return cls


class _AppState:
    """One app's settings and routes (app.extensions["tkshm"])."""

    def __init__(self, limiter: "Limiter", settings: Settings,
                 import_name: str) -> None:
        self.limiter = limiter
        self.settings = settings
        self.keys = FlaskKeys(limiter.user)
        self.routes = RouteCache()
        self.import_name = import_name

    def limits(self, endpoint: str, mark: Mark | None) -> RouteLimits | None:
        """The limits of `endpoint` for its view's mark (None: the
        default limits)."""
        route_id = "%s.%s" % (self.import_name, endpoint)
        # The default limits' tables are named, not after the route: the
        # cache key keeps them apart from a decorated view's limits.
        key = route_id if mark is not None else "defaults:" + route_id
        owner = mark.owner if mark is not None else "defaults"
        return self.routes.get(key, owner, lambda: build_route_limits(
            route_id, endpoint, mark, self.settings, self.keys))


def _default_name(app: Flask) -> str:
    """The stem of the default limits' table names: the app and a digest
    of where its code is, so two deployments on a host share nothing."""
    digest = hashlib.blake2b(app.root_path.encode("utf-8", "replace"),
                             digest_size=4).hexdigest()
    return "flask.%s-%s" % (app.import_name, digest)


class Limiter:
    """Per-route limits for a Flask app (`app`, or init_app(app) later).

    Each option left None is taken from app.config's TKSHM_<NAME>, else
    its default:
    key (TKSHM_KEY, "ip"): the default limits' key, and the limit()
        decorator's unless it gives one: "ip" (request.remote_addr, an
        IPv6 address by its /64), "header:<Name>", "user" (user()), or a
        function of flask.request returning str, bytes or None (None: the
        limit does not apply to the request).
    default_limits (TKSHM_DEFAULT_LIMITS, none): rate strings or
        tkshm.route.Limit objects applied, per route, to every view that
        has no limit() of its own and is not exempt; a Limit with a name
        is one bucket per key across every route.
    headers (TKSHM_HEADERS, "draft"): "draft", "legacy" or "none".
    status (TKSHM_STATUS, 429): a denial's status.
    fail_open (TKSHM_FAIL_OPEN, True): a check that fails (a full table)
        admits, unless False (503) or the table's policy fails closed.
    slots (TKSHM_SLOTS, 65536): the size of the tables made.
    redis (TKSHM_REDIS): a tkshm.Redis, or a dict of its options,
        attached to the strict tables.
    name (TKSHM_NAME): the stem of the default limits' table names
        (default: the app's import name and a digest of its root path).
    enabled (TKSHM_ENABLED, True): False checks nothing.
    user: a function of no arguments returning the current user's id, or
        None when anonymous (anonymous requests are keyed by address):
        `lambda: current_user.get_id() if current_user.is_authenticated
        else None` with flask_login.
    A wrong option raises ValueError or TypeError naming it."""

    def __init__(self, app: Flask | None = None, *,
                 key: str | Callable[[Any], Any] | None = None,
                 default_limits: list[str | Limit]
                 | tuple[str | Limit, ...] | None = None,
                 headers: str | None = None, status: int | None = None,
                 fail_open: bool | None = None, slots: int | None = None,
                 redis: Redis | dict[str, Any] | None = None,
                 name: str | None = None, enabled: bool | None = None,
                 user: Callable[[], object] | None = None) -> None:
        self.user = user
        # Each undecorated view this limiter wrapped -> the wrapper's mark.
        self._wrapped: weakref.WeakKeyDictionary[Any, Mark] = \
            weakref.WeakKeyDictionary()
        self._options = {
            "KEY": key, "DEFAULT_LIMITS": default_limits,
            "HEADERS": headers, "STATUS": status, "FAIL_OPEN": fail_open,
            "SLOTS": slots, "REDIS": redis, "NAME": name,
            "ENABLED": enabled}
        # The arguments' errors now, not at init_app in an app factory.
        given = {k: v for k, v in self._options.items() if v is not None}
        self._check_user(read_settings(given, _argument, "defaults"))
        if app is not None:
            self.init_app(app)

    def _check_user(self, settings: Settings) -> None:
        if self.user is None and settings.uses_user():
            raise ValueError(NEEDS_USER)

    def init_app(self, app: Flask) -> None:
        """Reads the app's settings (app.config's TKSHM_*, under the
        constructor's arguments) and hooks the default limits
        (before_request) and the response headers (after_request)."""
        if "tkshm" in app.extensions:
            raise RuntimeError("%r already has a tkshm Limiter" % app)
        raw = {k[len("TKSHM_"):]: v for k, v in app.config.items()
               if k.startswith("TKSHM_")}
        given = {k for k, v in self._options.items() if v is not None}
        raw.update({k: self._options[k] for k in given})
        settings = read_settings(
            raw, lambda n: _argument(n) if n in given else "TKSHM_" + n,
            _default_name(app))
        self._check_user(settings)
        app.extensions["tkshm"] = _AppState(self, settings, app.import_name)
        app.before_request(self._before_request)
        app.after_request(self._add_headers)

    def limit(self, *rates: str | Limit,
              key: str | Callable[[Any], Any] | None = None,
              cost: float | Callable[[Any], float] = 1,
              name: str | None = None, policy_name: str | None = None,
              override_defaults: bool = True) -> Callable[[F], F]:
        """A decorator limiting a view by `rates` (rate or policy strings,
        tkshm.route.Limit objects), all of which must admit.  key: as
        Limiter's (None: the Limiter's); cost: a number or a function of
        flask.request; name: the tables' name, shared by every route that
        gives it (then name.1, name.2 for the next rates); policy_name:
        the name in the RateLimit headers; override_defaults=False adds
        the default limits to these (one decision).  Decorators stacked
        right on top of each other are one decision; put them under
        @app.route, and under a login decorator when key="user"."""
        spec = LimitSpec(rates, key, cost, name, policy_name)
        if self.user is None and "user" in spec.keys(None):
            raise ValueError(NEEDS_USER)

        def decorator(view: F) -> F:
            mark = merged_mark(view, spec, override_defaults,
                               "@limiter.limit")
            return self._wrap(mark)  # type: ignore[return-value]
        return decorator

    def exempt(self, view: F) -> F:
        """Exempts a view from the default limits."""
        mark = getattr(view, ATTR, None)
        if mark is not None and not mark.exempt:
            raise ValueError("%r has limits: it cannot be exempt" % (view,))
        setattr(view, ATTR, Mark(exempt=True))
        return view

    def limits_for(self, endpoint: str,
                   app: Flask | None = None) -> RouteLimits | None:
        """The RouteLimits the endpoint's requests are decided by (made as
        its first request would), or None when nothing limits it;
        KeyError for an endpoint the app does not have."""
        app = app or current_app
        state = self._state(app)
        mark = self._mark_of(app.view_functions[endpoint])
        if mark is not None and mark.exempt:
            return None
        return state.limits(endpoint, mark)

    def _mark_of(self, view: Any) -> Mark | None:
        """The mark of a registered view: its own, or that of the wrapper
        a @limiter.limit put above @app.route made (Flask registered the
        function under it, so the wrapper never runs: its limits are
        checked before the request instead of being silently lost)."""
        mark = getattr(view, ATTR, None)
        if mark is None and view is not None:
            try:
                mark = self._wrapped.get(view)
            except TypeError:  # a view that takes no weak reference
                pass
        return mark

    def _wrap(self, mark: Mark) -> Callable[..., Any]:
        view = mark.view
        if inspect.iscoroutinefunction(view):
            @functools.wraps(view)
            async def wrapper(*args: Any, **kwargs: Any) -> Any:
                self._enforce(mark)
                return await view(*args, **kwargs)
        else:
            @functools.wraps(view)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                self._enforce(mark)
                return view(*args, **kwargs)
        mark.wrapper = wrapper
        setattr(wrapper, ATTR, mark)
        try:
            self._wrapped[view] = mark
        except TypeError:  # a view that takes no weak reference
            pass
        return wrapper

    def _state(self, app: Flask | None = None) -> _AppState:
        app = app or current_app
        state: _AppState | None = app.extensions.get("tkshm")
        if state is None or state.limiter is not self:
            raise RuntimeError("tkshm.flask.Limiter.init_app() was not "
                               "called for the app %r" % app.name)
        return state

    def _enforce(self, mark: Mark) -> None:
        state = self._state()
        if state.settings.enabled:
            endpoint = request.endpoint or mark.view.__name__
            _decide(state, state.limits(endpoint, mark))

    def _before_request(self) -> None:
        state = self._state()
        endpoint = request.endpoint
        # Flask sets provide_automatic_options on the rules it adds.
        automatic = getattr(request.url_rule, "provide_automatic_options",
                            False)
        if (not state.settings.enabled or endpoint is None
                or request.method == "OPTIONS" and automatic):
            # Unrouted requests (404, 405) and automatic OPTIONS answers
            # run no view: a decorated view's limits never see them.
            return
        view = current_app.view_functions.get(endpoint)
        mark = getattr(view, ATTR, None)
        if mark is None:
            mark = self._mark_of(view)
            if mark is not None:  # its wrapper will not run
                _decide(state, state.limits(endpoint, mark))
                return
        if (mark is None and state.settings.default_limits
                and endpoint != "static" and not endpoint.endswith(".static")):
            _decide(state, state.limits(endpoint, None))

    def _add_headers(self, response: "Response") -> "Response":
        verdict = request.environ.get(ENVIRON_KEY)
        if verdict is not None:
            for name, value in verdict.headers:
                response.headers[name] = value
        return response


def _decide(state: _AppState, limits: RouteLimits | None) -> None:
    if limits is None:
        return
    verdict = limits.decide(request, state.keys)
    request.environ[ENVIRON_KEY] = verdict
    if not verdict.allowed:
        raise exception_class(verdict.status)(verdict)


def _argument(name: str) -> str:
    return "Limiter(%s=...)" % name.lower()
