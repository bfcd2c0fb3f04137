"""Per-route limits for Django, over tkshm.route: a view decorator, and a
middleware for the default limits and the response headers, configured
by settings.TKSHM.

    # settings.py
    MIDDLEWARE = [
        ...,
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "tkshm.django.RateLimitMiddleware",
    ]
    TKSHM = {"DEFAULT_LIMITS": ["100/minute"], "HEADERS": "draft"}

    # views.py
    from django.utils.decorators import method_decorator
    from tkshm.django import exempt, limit

    @limit("5/minute", "100/day", key="user")
    def login(request): ...

    @method_decorator(limit("10/second"), name="dispatch")
    class Search(View): ...

A route's limits are decided as one: admitted only if every limit admits,
and a denial consumes nothing in the others.  Each decorated view has its
own tables (one per limit; `name=` shares them across views); the default
limits apply per view to every view without limits of its own.  Every
table is a file in tkshm.run_dir() that every worker opens, so the limits
hold across gunicorn's workers however they were started.

A denial is answered with an HttpResponse (429 and Retry-After, or what
TKSHM["DENIED_VIEW"] returns); checked responses get the RateLimit
headers, and request.rate_limit is the tkshm.route.Verdict.
"""

import functools
import hashlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.http import HttpRequest, HttpResponse
from django.utils.module_loading import import_string

from ._http import is_strict
from ._view_limits import ATTR, LimitSpec, Mark, RouteCache, Settings, \
    build_route_limits, merged_mark, read_settings
from .route import KeySource, Limit, RouteLimits, Verdict

__all__ = ["DjangoKeys", "RateLimitMiddleware", "exempt", "limit",
           "limits_for", "view_id"]

V = TypeVar("V", bound=Callable[..., Any])

# TKSHM's keys beside those read_settings reads.
DENIED_VIEW = "DENIED_VIEW"


class DjangoKeys(KeySource):
    """What an HttpRequest tells route.key_of: REMOTE_ADDR (the peer; a
    proxy's own address behind one, so give a key function there), a
    header, and request.user's pk when authenticated (request.user is set
    by django.contrib.auth's AuthenticationMiddleware; without it every
    request is anonymous, keyed by address)."""

    def client_addr(self, request: HttpRequest) -> str | None:
        addr = request.META.get("REMOTE_ADDR")
        return None if addr is None else str(addr)

    def header(self, request: HttpRequest, name: str) -> str | None:
        value = request.headers.get(name)
        return None if value is None else str(value)

    def user(self, request: HttpRequest) -> str | None:
        user = getattr(request, "user", None)
        if user is None or not getattr(user, "is_authenticated", False):
            return None
        return str(user.pk)


KEYS = DjangoKeys()


class _Config:
    """settings.TKSHM, validated."""

    def __init__(self, settings: Settings,
                 denied_view: Callable[..., HttpResponse] | None) -> None:
        self.settings = settings
        self.denied_view = denied_view


def _label(name: str) -> str:
    return "TKSHM[%r]" % (name,)


def _import(path: str, name: str) -> Any:
    try:
        return import_string(path)
    except ImportError as e:
        raise ImproperlyConfigured("%s: cannot import %r: %s"
                                   % (_label(name), path, e)) from e


def _default_name() -> str:
    """The stem of the default limits' table names: the URLconf's module
    and a digest of where it is, so two sites on a host share nothing."""
    urlconf = getattr(django_settings, "ROOT_URLCONF", None) or "django"
    where = getattr(sys.modules.get(urlconf), "__file__", None)
    if where is None:
        try:
            spec = importlib.util.find_spec(urlconf)
            where = spec.origin if spec else None
        except (ImportError, ValueError):
            where = None
    where = os.path.abspath(where or os.getcwd())
    digest = hashlib.blake2b(where.encode("utf-8", "replace"),
                             digest_size=4).hexdigest()
    return "django.%s-%s" % (urlconf, digest)


def _read_config() -> _Config:
    raw = getattr(django_settings, "TKSHM", {})
    if not isinstance(raw, dict):
        raise ImproperlyConfigured("settings.TKSHM must be a dict, not %r"
                                   % (raw,))
    raw = dict(raw)
    denied = raw.pop(DENIED_VIEW, None)
    key = raw.get("KEY")
    # A dotted path names a key function (settings hold no functions).
    if isinstance(key, str) and "." in key and \
            not key.startswith("header:"):
        raw["KEY"] = _import(key, "KEY")
    try:
        settings = read_settings(raw, _label, _default_name(),
                                 extra=(DENIED_VIEW,))
    except (ValueError, TypeError) as e:
        raise ImproperlyConfigured(str(e)) from e
    if isinstance(denied, str):
        denied = _import(denied, DENIED_VIEW)
    if denied is not None and not callable(denied):
        raise ImproperlyConfigured("%s must be a view (request, verdict) "
                                   "or its dotted path, not %r"
                                   % (_label(DENIED_VIEW), denied))
    return _Config(settings, denied)


_config: _Config | None = None
_ROUTES = RouteCache()


def config() -> _Config:
    """settings.TKSHM validated (ImproperlyConfigured naming the wrong
    setting), read once and again whenever a test overrides it."""
    global _config
    found = _config
    if found is None:
        found = _config = _read_config()
    return found


def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    global _config
    if setting == "TKSHM":
        _config = None
        _ROUTES.clear()


setting_changed.connect(_settings_changed)


def view_id(view: Any) -> str:
    """A view's route identity: its module and qualified name; for a
    method a class-based view's dispatch() runs (method_decorator hands
    the decorator a partial of the bound method), the instance's class,
    not the class that defines the method (View.dispatch is everyone's)."""
    while isinstance(view, functools.partial):
        view = view.func
    owner = getattr(view, "__self__", None)
    if owner is not None and inspect.ismethod(view):
        cls = owner if isinstance(owner, type) else type(owner)
        return "%s.%s.%s" % (cls.__module__, cls.__qualname__,
                             view.__name__)
    target = view if hasattr(view, "__qualname__") else type(view)
    return "%s.%s" % (getattr(target, "__module__", None) or "views",
                      target.__qualname__)


def _route_limits(route: str, mark: Mark | None,
                  cfg: _Config) -> RouteLimits | None:
    if mark is None:
        # The default limits' tables are named, not after the route: the
        # cache key keeps them apart from a decorated view's limits.
        return _ROUTES.get("defaults:" + route, "defaults",
                           lambda: build_route_limits(
                               route, route, None, cfg.settings, KEYS))
    return _ROUTES.get(route, mark.owner, lambda: build_route_limits(
        route, route, mark, cfg.settings, KEYS))


def _with_headers(request: HttpRequest, response: Any) -> Any:
    verdict = getattr(request, "rate_limit", None)
    if verdict is not None and response is not None:
        for name, value in verdict.headers:
            response[name] = value
    return response


def _denial(request: HttpRequest, verdict: Verdict,
            cfg: _Config) -> HttpResponse:
    if cfg.denied_view is not None:
        response = cfg.denied_view(request, verdict)
    else:
        body = "Too Many Requests\n" if verdict.decision is not None \
            else "rate limiter unavailable\n"
        response = HttpResponse(body, status=verdict.status,
                                content_type="text/plain; charset=utf-8")
    return _with_headers(request, response)


def _settle(request: HttpRequest, verdict: Verdict,
            cfg: _Config) -> HttpResponse | None:
    """The denial's response, or None to go on with the view."""
    setattr(request, "rate_limit", verdict)
    return None if verdict.allowed else _denial(request, verdict, cfg)


def _check(route: str, mark: Mark | None,
           request: HttpRequest) -> HttpResponse | None:
    cfg = config()
    if not cfg.settings.enabled:
        return None
    limits = _route_limits(route, mark, cfg)
    if limits is None:
        return None
    return _settle(request, limits.decide(request, KEYS), cfg)


async def _check_async(route: str, mark: Mark,
                       request: HttpRequest) -> HttpResponse | None:
    cfg = config()
    if not cfg.settings.enabled:
        return None
    limits = await sync_to_async(_route_limits)(route, mark, cfg)
    if limits is None:
        return None
    # A strict table's check is a Redis round trip: off the event loop.
    if any(is_strict(t) for t in limits.tables):
        verdict = await sync_to_async(limits.decide)(request, KEYS)
    else:
        verdict = limits.decide(request, KEYS)
    return _settle(request, verdict, cfg)


def _wrap(mark: Mark) -> Callable[..., Any]:
    view = mark.view
    route = view_id(view)
    if inspect.iscoroutinefunction(view):
        @functools.wraps(view)
        async def wrapper(request: HttpRequest, *args: Any,
                          **kwargs: Any) -> Any:
            denied = await _check_async(route, mark, request)
            if denied is not None:
                return denied
            return _with_headers(request, await view(request, *args,
                                                     **kwargs))
    else:
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            denied = _check(route, mark, request)
            if denied is not None:
                return denied
            return _with_headers(request, view(request, *args, **kwargs))
    mark.wrapper = wrapper
    setattr(wrapper, ATTR, mark)
    return wrapper


def limit(*rates: str | Limit,
          key: str | Callable[[HttpRequest], Any] | None = None,
          cost: float | Callable[[HttpRequest], float] = 1,
          name: str | None = None, policy_name: str | None = None,
          override_defaults: bool = True) -> Callable[[V], V]:
    """A decorator limiting a function view by `rates` (rate or policy
    strings, tkshm.route.Limit objects), all of which must admit; for a
    class-based view, method_decorator(limit(...), name="dispatch").
    key: "ip" (REMOTE_ADDR, an IPv6 address by its /64), "header:<Name>",
        "user" (request.user's pk; anonymous requests by address) or a
        function of the request returning str, bytes or None (None: the
        limit does not apply); None: TKSHM["KEY"].
    cost: a number or a function of the request; name: the tables' name,
        shared by every view that gives it (then name.1, name.2 for the
        next rates); policy_name: the name in the RateLimit headers;
        override_defaults=False adds TKSHM["DEFAULT_LIMITS"] to these
        (one decision).  Decorators stacked right on top of each other
        are one decision.  Works with or without the middleware."""
    spec = LimitSpec(rates, key, cost, name, policy_name)

    def decorator(view: V) -> V:
        if isinstance(view, type):
            raise TypeError("limit() decorates a function view; for a "
                            "class-based view use @method_decorator("
                            "limit(...), name='dispatch')")
        mark = merged_mark(view, spec, override_defaults, "@limit")
        return _wrap(mark)  # type: ignore[return-value]
    return decorator


def exempt(view: V) -> V:
    """Exempts a view from the default limits (for a class-based view:
    method_decorator(exempt, name="dispatch"))."""
    mark = getattr(view, ATTR, None)
    if mark is not None and not mark.exempt:
        raise ValueError("%r has limits: it cannot be exempt" % (view,))
    setattr(view, ATTR, Mark(exempt=True))
    return view


def limits_for(view: Callable[..., Any]) -> RouteLimits | None:
    """The RouteLimits a function view's requests are decided by (made as
    its first request would), or None when nothing limits it."""
    if hasattr(view, "view_class"):
        raise ValueError("limits_for() takes a function view")
    mark = getattr(view, ATTR, None)
    if mark is not None and mark.exempt:
        return None
    route = view_id(view if mark is None else mark.view)
    return _route_limits(route, mark, config())


class RateLimitMiddleware:
    """Reads settings.TKSHM at startup (ImproperlyConfigured naming a
    wrong setting), applies TKSHM["DEFAULT_LIMITS"] per view to every view
    that has no limit() of its own and is not exempt, and adds the
    RateLimit headers to every checked response.  Put it after
    AuthenticationMiddleware when a limit keys by user."""

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        config()

    def __call__(self, request: HttpRequest) -> Any:
        return _with_headers(request, self.get_response(request))

    def process_view(self, request: HttpRequest, view_func: Any,
                     view_args: Any, view_kwargs: Any) -> Any:
        if getattr(view_func, ATTR, None) is not None:
            return None  # decorated (its wrapper checks) or exempt
        if not config().settings.default_limits:
            return None
        return _check(view_id(view_func), None, request)
