"""tkshm: lock-free shared-memory rate limiting across processes.

    import tkshm
    table = tkshm.Table("/dev/shm/api.tkshm", "gcra:limit=10,periodMs=1000")
    d = table.check("client-1")
    if not d:
        ...  # 429, see tkshm.headers(d)

Open a table once per worker process (not per request); the handle survives
fork(), so a table opened before the fork (path=None: anonymous) is shared
with the children; one made in a worker would be that worker's alone, and
raises RuntimeError where that can be told (private=True if meant).  A
table file (a path) is shared by every process that opens it, forked or
not: default_table_path(name) names one in the run directory.  Opening a
table with another policy or more slots changes the live table
(Table.change says how; tkshm.plan says it beforehand; keep=True refuses).
A strict table (";mode=strict") decides on Redis through a tkshm.Redis
attached to it (Table(..., redis=r) or table.attach(r)).
See bindings/python/README.md.
"""

import hashlib
import os
import re
import stat
import sys
from typing import TYPE_CHECKING

from ._tkshm import (  # noqa: F401
    Change,
    Decision,
    Error,
    Redis,
    Table,
    check_multi,
    client_key,
    now_ms,
    plan,
    strerror,
)
from . import _tkshm

if TYPE_CHECKING:
    # What the loop below copies, as a type checker sees it (_tkshm.pyi).
    from ._tkshm import *  # noqa: F401,F403

# The library's error codes (tkshm.EKEYEMPTY, ...), KEY_MAX, DECISION_* flags.
for _name in dir(_tkshm):
    if _name.isupper():
        globals()[_name] = getattr(_tkshm, _name)
del _name

__version__ = _tkshm.library_version

__all__ = ["Change", "Decision", "Error", "Redis", "Table", "app_table_name",
           "check_multi", "client_key", "default_table_path", "headers", "now_ms", "plan",
           "run_dir", "strerror"]


def run_dir() -> str:
    """The directory default tables live in, the first that is usable:
    $XDG_RUNTIME_DIR/tkshm (a user's runtime directory, set by a login
    session or systemd's RuntimeDirectory), /run/tkshm (root, or a
    directory an operator made for the server's user), else /dev/shm
    itself (the table's name then carries the uid).  A directory tkshm
    makes is 0700.  One that exists must be a directory owned by this
    user that nobody else can write: anyone who can write to it could
    put their own table (their own limit) in place.  A symbolic link is
    never followed: Error (ESYMLINK)."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        d = _own_dir(os.path.join(xdg, "tkshm"))
        if d:
            return d
    return _own_dir("/run/tkshm") or "/dev/shm"


def _own_dir(path: str) -> str | None:
    """path when it is (or can now be made) a directory of ours that only
    we can write, else None; Error if it is a symbolic link."""
    try:
        os.mkdir(path, 0o700)
        os.chmod(path, 0o700)  # whatever the umask took away
    except FileExistsError:
        pass
    except OSError:  # no such parent, or not ours to write: not usable
        return None
    st = os.lstat(path)  # a link planted there is never followed
    if stat.S_ISLNK(st.st_mode):
        err = Error("%s is a symbolic link: tkshm does not follow it"
                    % path)
        err.code, err.name = _tkshm.ESYMLINK, "TKSHM_ESYMLINK"
        raise err
    if (not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid()
            or st.st_mode & 0o022 or not os.access(path, os.W_OK | os.X_OK)):
        return None
    return path


def default_table_path(name: str) -> str:
    """The path of the table called `name` in run_dir(): every process of
    a user that asks for one name gets one table, however it was started
    (no --preload needed).  The name keeps [A-Za-z0-9._-]; /dev/shm names
    carry the uid, so that two users never share one by accident."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name).strip(".")[:96] or "table"
    d = run_dir()
    if d == "/dev/shm":
        return "/dev/shm/tkshm-%d-%s" % (os.geteuid(), safe)
    return os.path.join(d, safe)


def app_table_name(app: object) -> str:
    """The default table name of a WSGI or ASGI application object: its
    module and qualified name, and a digest of the module's file, so two
    deployments of one code base on a host do not share a table."""
    target = app if hasattr(app, "__qualname__") else type(app)
    module = getattr(target, "__module__", None) or "app"
    qual = getattr(target, "__qualname__", None) or "app"
    where = getattr(sys.modules.get(module), "__file__", None) or os.getcwd()
    digest = hashlib.blake2b(os.path.abspath(where).encode("utf-8", "replace"),
                             digest_size=4).hexdigest()
    return "%s.%s-%s" % (module, qual, digest)


_STYLES = {"draft": 0, "legacy": 1, "none": 2}


def headers(decision: Decision, policy_name: str | None = None,
            style: str = "draft", window_s: float | None = None,
            now: float | None = None) -> list[tuple[str, str]]:
    """The response headers for `decision`, as a list of (name, value).

    style "draft" (the default): the IETF draft's structured fields
        RateLimit-Policy: "<name>";q=<limit>[;w=<window_s>]
        RateLimit: "<name>";r=<remaining>;t=<seconds to reset>
    "legacy": the older RateLimit-Limit, RateLimit-Remaining and
    RateLimit-Reset (seconds from now); "none": no RateLimit headers.  The
    same three words choose the headers in every binding (the
    middlewares' headers=, PHP's $style, TkshmHeaders, tkshm_headers).  A
    denial adds Retry-After (whole seconds, at least 1).  policy_name
    defaults to "default" (printable ASCII); `now` (epoch ms) to the clock
    checks use.  The same C function builds the Apache module's and the
    PHP extension's headers.
    """
    if not isinstance(decision, Decision):
        raise TypeError("decision must be a tkshm.Decision")
    try:
        code = _STYLES[style]
    except (KeyError, TypeError):
        raise ValueError("style must be 'draft', 'legacy' or 'none', not %r"
                         % (style,)) from None
    if now is None:
        now = now_ms()
    return _tkshm.http_headers(decision, code, policy_name,
                               -1 if window_s is None else int(window_s),
                               float(now))
