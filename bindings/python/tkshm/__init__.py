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

from ._tkshm import (  # noqa: F401
    Decision,
    Error,
    Table,
    client_key,
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

__all__ = ["Decision", "Error", "Table", "client_key", "headers", "now_ms",
           "strerror"]


_STYLES = {True: 0, "draft": 0, False: 1, "legacy": 1, "none": 2}


def headers(decision, policy_name=None, draft=True, window_s=None, now=None):
    """The response headers for `decision`, as a list of (name, value).

    draft=True (or "draft"): the IETF draft's structured fields
        RateLimit-Policy: "<name>";q=<limit>[;w=<window_s>]
        RateLimit: "<name>";r=<remaining>;t=<seconds to reset>
    draft=False (or "legacy"): the older RateLimit-Limit,
    RateLimit-Remaining and RateLimit-Reset (seconds from now); "none":
    no RateLimit headers.  A denial adds Retry-After (whole seconds, at
    least 1).  policy_name defaults to "default" (printable ASCII);
    `now` (epoch ms) to the clock checks use.  The same C function builds
    the Apache module's and the PHP extension's headers.
    """
    if not isinstance(decision, Decision):
        raise TypeError("decision must be a tkshm.Decision")
    try:
        style = _STYLES[draft]
    except (KeyError, TypeError):
        raise ValueError("draft must be True, False, 'draft', 'legacy' "
                         "or 'none'") from None
    if now is None:
        now = now_ms()
    return _tkshm.http_headers(decision, style, policy_name,
                               -1 if window_s is None else int(window_s),
                               float(now))
