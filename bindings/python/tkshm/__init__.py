"""tkshm: lock-free shared-memory rate limiting across processes.

    import tkshm
    table = tkshm.Table("/dev/shm/api.tkshm", "gcra:limit=10,periodMs=1000")
    d = table.check("client-1")
    if not d:
        ...  # 429, see tkshm.headers(d)

Open a table once per worker process (not per request); the handle survives
fork(), so a table opened before the fork (path=None: anonymous) is shared
with the children.
"""

import math

from ._tkshm import (  # noqa: F401
    Decision,
    Error,
    Table,
    now_ms,
    strerror,
)
from . import _tkshm

# The library's error codes (tkshm.EKEYEMPTY, ...), KEY_MAX, DECISION_* flags.
for _name in dir(_tkshm):
    if _name.isupper():
        globals()[_name] = getattr(_tkshm, _name)
del _name

__version__ = _tkshm.library_version

__all__ = ["Decision", "Error", "Table", "headers", "now_ms", "strerror"]


def headers(decision, policy_name=None, draft=True, window_s=None, now=None):
    """The response headers for `decision`, as a list of (name, value).

    draft=True: the IETF draft's structured fields
        RateLimit-Policy: "<name>";q=<limit>[;w=<window_s>]
        RateLimit: "<name>";r=<remaining>;t=<seconds to reset>
    draft=False: the older RateLimit-Limit, RateLimit-Remaining and
    RateLimit-Reset (seconds from now).  A denial adds Retry-After (whole
    seconds, at least 1).  policy_name defaults to "default"; `now` (epoch
    ms) to the clock checks use.
    """
    if not isinstance(decision, Decision):
        raise TypeError("decision must be a tkshm.Decision")
    if now is None:
        now = now_ms()
    reset_s = max(0, math.ceil((decision.reset_at - now) / 1000.0))
    out = []
    if draft:
        name = policy_name if policy_name is not None else "default"
        name = name.replace("\\", "\\\\").replace('"', '\\"')
        pol = '"%s";q=%d' % (name, decision.limit)
        if window_s is not None:
            pol += ";w=%d" % window_s
        out.append(("RateLimit-Policy", pol))
        out.append(("RateLimit", '"%s";r=%d;t=%d'
                    % (name, decision.remaining, reset_s)))
    else:
        out.append(("RateLimit-Limit", str(decision.limit)))
        out.append(("RateLimit-Remaining", str(decision.remaining)))
        out.append(("RateLimit-Reset", str(reset_s)))
    if not decision.allowed:
        retry = max(1, math.ceil(decision.retry_after_ms / 1000.0))
        out.append(("Retry-After", str(retry)))
    return out
