"""What the Flask and Django view limits share: the arguments of one
limit(...) decorator (LimitSpec), the mark a decorated view carries, the
settings both read (one vocabulary: DEFAULT_LIMITS, KEY, HEADERS, ...),
the default limits of a route, and the per-process cache of each route's
RouteLimits.

Default limits are per route (each route its own bucket per key) but
share one table per default limit: the key is prefixed with the route's
tag.  A table per route and default limit would be allocated in full for
every route (4 to 9 MiB at 65536 slots), most of them for a handful of
keys.
"""

import difflib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import Error, Redis, plan
from ._http import check_style
from .route import KeySource, Limit, RouteLimits, _check_key_spec, key_of

__all__ = ["ATTR", "LimitSpec", "Mark", "RouteCache", "Settings",
           "build_route_limits", "check_rate", "default_limits",
           "merged_mark", "read_settings"]

# The attribute a decorated (or exempt) view carries its Mark under;
# functools.wraps copies it to the decorators above.
ATTR = "_tkshm_mark"

SETTING_NAMES = ("ENABLED", "DEFAULT_LIMITS", "KEY", "HEADERS", "STATUS",
                 "FAIL_OPEN", "SLOTS", "REDIS", "NAME")


def check_rate(rate: str) -> None:
    """tkshm.Error now if `rate` is not a rate or policy string, where the
    table it is for is opened only at its route's first request: planning
    a path that cannot exist parses it, and touches nothing."""
    plan("/dev/null/tkshm", rate)


def _check_limit(item: object) -> None:
    if isinstance(item, Limit):
        if item.table is None:
            check_rate(item.rate)
    elif isinstance(item, str):
        check_rate(item)
    else:
        raise TypeError("a limit is a rate string or a tkshm.route.Limit, "
                        "not %r" % (item,))


def _check_cost(cost: object) -> None:
    if isinstance(cost, bool) or not (
            callable(cost) or isinstance(cost, (int, float))):
        raise TypeError("cost must be a number or a function of the "
                        "request, not %r" % (cost,))


class LimitSpec:
    """The arguments of one limit(...) call: rate strings and Limit
    objects, with the options the strings share.  key None: the
    framework's configured key, known only once settings are read."""

    def __init__(self, rates: Sequence[Any], key: Any = None,
                 cost: Any = 1, name: str | None = None,
                 policy_name: str | None = None) -> None:
        if len(rates) == 1 and isinstance(rates[0], (list, tuple)):
            rates = rates[0]
        if not 1 <= len(rates) <= 16:
            raise ValueError("limit() takes 1 to 16 rates, not %d"
                             % len(rates))
        for rate in rates:
            _check_limit(rate)
        if key is not None:
            _check_key_spec(key)
        _check_cost(cost)
        self.rates = tuple(rates)
        self.key = key
        self.cost = cost
        self.name = name
        self.policy_name = policy_name

    def keys(self, default_key: Any) -> list[Any]:
        """The key spec of each of its limits."""
        key = default_key if self.key is None else self.key
        return [r.key if isinstance(r, Limit) else key for r in self.rates]

    def limits(self, default_key: Any) -> list[Limit]:
        """Its Limits; named ones get `name`, then `name.1`, `name.2` (one
        name, one rate), as tkshm.fastapi names them."""
        key = default_key if self.key is None else self.key
        out = []
        for i, rate in enumerate(self.rates):
            if not isinstance(rate, Limit):
                name = None if self.name is None else \
                    self.name if i == 0 else "%s.%d" % (self.name, i)
                rate = Limit(rate, key=key, cost=self.cost, name=name,
                             policy_name=self.policy_name)
            out.append(rate)
        return out

    def __repr__(self) -> str:
        return "LimitSpec(%r)" % (self.rates,)


class Mark:
    """What a decorated or exempt view carries: the specs of its limit
    decorators (applied as one), whether the default limits are added to
    them, and, for a decorated view, the undecorated view and the wrapper
    made, so that a decorator stacked right on top merges with it."""

    __slots__ = ("specs", "override_defaults", "exempt", "view", "wrapper")

    def __init__(self, specs: tuple[LimitSpec, ...] = (),
                 override_defaults: bool = True, exempt: bool = False,
                 view: Any = None) -> None:
        self.specs = specs
        self.override_defaults = override_defaults
        self.exempt = exempt
        self.view = view
        self.wrapper: Any = None

    @property
    def owner(self) -> tuple[Any, ...]:
        """What makes a route's limits: two marks with one owner make the
        same RouteLimits."""
        return self.specs + (self.override_defaults,)


def merged_mark(view: Any, spec: LimitSpec, override_defaults: bool,
                what: str) -> Mark:
    """The Mark for `spec` applied to `view`: merged with the mark of a
    limit decorator right below it (so that both are one decision), or a
    new one.  ValueError for an exempt view, or one whose limits another
    decorator stands between (two separate checks of one route)."""
    mark = getattr(view, ATTR, None)
    if mark is None:
        return Mark((spec,), override_defaults, view=view)
    if mark.exempt:
        raise ValueError("%r is exempt: it cannot have limits" % (view,))
    if mark.wrapper is not view:
        raise ValueError(
            "%r already has limits below another decorator: put the %s "
            "decorators of a view right on top of each other, so that "
            "they are decided as one" % (view, what))
    return Mark(mark.specs + (spec,),
                mark.override_defaults and override_defaults,
                view=mark.view)


class Settings:
    """The validated settings of one application (read_settings)."""

    def __init__(self) -> None:
        self.enabled = True
        self.default_limits: list[str | Limit] = []
        self.key: Any = "ip"
        self.headers = "draft"
        self.status = 429
        self.fail_open = True
        self.slots = 65536
        self.redis: Redis | None = None
        self.name = "defaults"

    def uses_user(self) -> bool:
        """True when the default key or a default limit keys by user."""
        return self.key == "user" or any(
            isinstance(lim, Limit) and lim.key == "user"
            for lim in self.default_limits)


def _unknown(names: Sequence[str], known: Sequence[str],
             label: Callable[[str], str]) -> None:
    for name in names:
        if name not in known:
            near = difflib.get_close_matches(str(name), known, 1)
            hint = " (did you mean %s?)" % label(near[0]) if near else ""
            raise ValueError("%s is not a tkshm setting%s; they are %s"
                             % (label(name), hint,
                                ", ".join(map(label, known))))


def _read_one(s: Settings, name: str, value: Any) -> None:
    """Sets s's `name` from `value`, or ValueError/TypeError saying what
    is wrong with it (read_settings adds which setting)."""
    if name in ("ENABLED", "FAIL_OPEN"):
        if not isinstance(value, bool):
            raise TypeError("must be True or False, not %r" % (value,))
        setattr(s, name.lower(), value)
    elif name == "DEFAULT_LIMITS":
        items = [value] if isinstance(value, (str, Limit)) else value
        if not isinstance(items, (list, tuple)):
            raise TypeError("must be a list of rate strings or Limits, "
                            "not %r" % (value,))
        for item in items:
            _check_limit(item)
        if len(items) > 16:
            raise ValueError("takes at most 16 limits")
        s.default_limits = list(items)
    elif name == "KEY":
        s.key = _check_key_spec(value)
    elif name == "HEADERS":
        s.headers = check_style(value)
    elif name == "STATUS":
        if isinstance(value, bool) or not isinstance(value, int) or \
                not 400 <= value <= 599:
            raise ValueError("must be an HTTP error status (400 to 599), "
                             "not %r" % (value,))
        s.status = value
    elif name == "SLOTS":
        if isinstance(value, bool) or not isinstance(value, int) or \
                value < 1:
            raise ValueError("must be a positive int, not %r" % (value,))
        s.slots = value
    elif name == "REDIS":
        # A dict of options makes one Redis for every table of the
        # application (no I/O until a strict check).
        s.redis = Redis(**value) if isinstance(value, dict) else value
        if s.redis is not None and not isinstance(s.redis, Redis):
            raise TypeError("must be a tkshm.Redis or a dict of its "
                            "options, not %r" % (value,))
    elif name == "NAME":
        if not isinstance(value, str) or not value:
            raise TypeError("must be a non-empty str, not %r" % (value,))
        s.name = value


def read_settings(raw: Mapping[str, Any], label: Callable[[str], str],
                  name: str, extra: Sequence[str] = ()) -> Settings:
    """Settings from `raw` (SETTING_NAMES to values; absent: the
    defaults), `name` the default NAME; `extra` names the framework's own
    settings, which raw may hold and this leaves alone.  A wrong or
    unknown setting raises ValueError or TypeError whose message starts
    with label(<its name>) (Flask's TKSHM_HEADERS, Django's
    TKSHM['HEADERS'])."""
    _unknown(list(raw), SETTING_NAMES + tuple(extra), label)
    s = Settings()
    s.name = name
    for key in SETTING_NAMES:
        if key not in raw:
            continue
        try:
            _read_one(s, key, raw[key])
        except Error as e:  # a rate the parser refuses, a Redis option
            raise ValueError("%s: %s" % (label(key), e)) from e
        except (ValueError, TypeError) as e:
            raise type(e)("%s: %s" % (label(key), e)) from e
    return s


class RouteScopedKey:
    """The key of a default limit on one route: the route's tag, a NUL,
    then the key `spec` gives; so one table holds every route's buckets
    and no two routes share one."""

    def __init__(self, tag: str, spec: Any, source: KeySource) -> None:
        self.tag = tag.encode("utf-8", "surrogatepass") + b"\x00"
        self.spec = spec
        self.source = source

    def __call__(self, request: Any) -> bytes | None:
        key = key_of(self.spec, request, self.source)
        if key is None:
            return None
        if isinstance(key, str):
            key = key.encode("utf-8", "surrogatepass")
        return self.tag + bytes(key)


def default_limits(settings: Settings, tag: str,
                   source: KeySource) -> list[Limit]:
    """The default limits of the route tagged `tag`: an unnamed one in
    the table "<NAME>.<i>", keyed per route; a named one (or one with a
    table) as it is, so shared by every route."""
    out = []
    for i, item in enumerate(settings.default_limits):
        if isinstance(item, Limit):
            if item.name is not None or item.table is not None:
                out.append(item)
                continue
            rate, key, cost, pname = (item.rate, item.key, item.cost,
                                      item.policy_name)
        else:
            rate, key, cost, pname = item, settings.key, 1, None
        out.append(Limit(rate, key=RouteScopedKey(tag, key, source),
                         cost=cost, name="%s.%d" % (settings.name, i),
                         policy_name=pname))
    return out


def build_route_limits(route_id: str, tag: str, mark: Mark | None,
                       settings: Settings,
                       source: KeySource) -> RouteLimits | None:
    """The RouteLimits of a route (None: nothing limits it): its
    decorators' limits, with the default limits when it has none or its
    decorators asked for them (override_defaults=False)."""
    limits = []
    if mark is not None:
        for spec in mark.specs:
            limits += spec.limits(settings.key)
    if mark is None or not mark.override_defaults:
        limits += default_limits(settings, tag, source)
    if not limits:
        return None
    return RouteLimits(route_id, limits, settings.headers, settings.status,
                       settings.fail_open, settings.slots, settings.redis)


class RouteCache:
    """Each route's RouteLimits, made at the route's first request (the
    tables then opened) and kept for the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._routes: dict[str, tuple[Any, RouteLimits | None]] = {}

    def get(self, route_id: str, owner: Any,
            build: Callable[[], RouteLimits | None]) -> RouteLimits | None:
        """The route's RouteLimits, built by build() the first time.
        `owner` is what made it (a Mark's owner): another owner for one
        route would be a second, separate set of limits whose tables
        bear the same names, so it is a ValueError."""
        found = self._routes.get(route_id)
        if found is None:
            with self._lock:
                found = self._routes.get(route_id)
                if found is None:
                    found = (owner, build())
                    self._routes[route_id] = found
        if found[0] != owner:
            raise ValueError(
                "the route %s has two separate sets of tkshm limits: two "
                "limit decorators with another between them (give them as "
                "one, or stack them right on top of each other), or two "
                "views with one qualified name (lambdas, views made in a "
                "loop: define each view on its own)" % route_id)
        return found[1]

    def clear(self) -> None:
        with self._lock:
            self._routes.clear()
