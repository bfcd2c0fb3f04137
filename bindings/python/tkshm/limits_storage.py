"""A storage for the `limits` library under the tkshm:// scheme, for
Flask-Limiter and slowapi: the limit is one for every process on the host
that names the same tables, decided atomically in shared memory.

    import tkshm.limits_storage  # registers tkshm:// with limits
    limiter = Limiter(get_remote_address, app=app, storage_uri="tkshm://")

limits registers a storage class under its STORAGE_SCHEME when the class
is created, so this module must be imported before the URI is resolved
(Limiter(app=...) or init_app).

Every rate item (amount per window) of each kind has its own table file,
fixed-10-per-60000ms for "10 per minute", so that a hit is one real check
of the item's limit: admitted and counted together, or denied and not
counted, with no read-then-write between processes.
- fixed window (incr/get/get_expiry): fixedWindow, limit=amount; its
  windows are aligned to the epoch, where limits' start at a key's first
  hit.  incr returns the count after an admission, or the count plus the
  cost after a denial, so that the strategy's `count <= amount` gives the
  table's decision.  Elastic expiry is refused (NotImplementedError).
- moving window (acquire_entry/get_moving_window): slidingWindowLog, exact,
  for a limit up to 128; above that slidingWindow with 64 buckets over a
  window widened by 1/63, which never admits more than the limit in any
  trailing window and may deny for up to 2/63 of the window longer than an
  exact log would.
- a key that is not limits' (its last three '/' fields are not amount,
  multiples and granularity, or incr's expiry does not match them) is
  counted in count-per-<window>ms, a fixedWindow counter that admits
  everything: incr returns the count with this hit's cost included, as
  limits' Redis storage does, and the caller compares.
See bindings/python/README.md, "tkshm:// for limits, Flask-Limiter and
slowapi".
"""

import hashlib
import os
import time

from limits.limits import GRANULARITIES
from limits.storage import MovingWindowSupport, Storage

from . import ENOENT, KEY_MAX, Error, Table
from . import _limits_location
from ._limits_location import URIError  # noqa: F401

__all__ = ["TkshmStorage", "URIError"]

LOG_MAX = 128  # slidingWindowLog's largest limit in tkshm
SLIDING_BUCKETS = 64  # slidingWindow's most buckets: the finest estimate
# The counter of keys that are not limits': a check is always admitted
# below it (whole costs stay exact up to 2^48).
COUNTER_LIMIT = 1 << 40
# The largest amount a table is made with: an amount above it counts as
# it.  A table of a limit of 2^50 or more refuses a cost of 1 (too small
# to change its state: tkshm.Error, where the strategy wants a decision).
AMOUNT_MAX = COUNTER_LIMIT
ELASTIC = ("tkshm:// does not implement fixed-window-elastic-expiry: every "
           "hit (denied ones too) would have to extend the window, which no "
           "tkshm kind does atomically.  Use the fixed-window or "
           "moving-window strategy.")
_PROBE = b"\x00tkshm:// check"


class TkshmStorage(Storage, MovingWindowSupport):
    """limits' storage on tkshm tables: tkshm:// (or tkshm://NAME, or
    tkshm:///DIRECTORY/ or tkshm:///DIRECTORY/PREFIX), with ?slots=N and
    ?mode=0640, or the same as keyword options (Flask-Limiter's
    storage_options).  A bad URI raises URIError saying what is wrong."""

    STORAGE_SCHEME = ["tkshm"]

    def __init__(self, uri="tkshm://", **options):
        self.location = _limits_location.parse(uri or "tkshm://", options)
        super().__init__(uri)
        # Per process: a handle opened before a fork serves the child too,
        # and every handle of one file is one table.
        self._tables = {}

    # -- the fixed window strategies ------------------------------------

    def incr(self, key, expiry, elastic_expiry=False, amount=1):
        """One hit of `amount` on `key` in its fixed window: the count the
        strategy compares with the item's amount."""
        if elastic_expiry:
            raise NotImplementedError(ELASTIC)
        cost = _cost(amount)
        window_ms = _window_ms(expiry)
        item = _item(key)
        if item is None or item[1] != window_ms:
            return self._count(key, window_ms, cost)
        amount = item[0]
        limit = min(amount, AMOUNT_MAX)
        if cost == 0:  # nothing to consume: nothing to check
            return self.get(key)
        if cost > limit:
            # Never admitted (a limit of 0 too), consuming nothing; a check
            # would refuse a cost beyond 2^53-1 as an error.
            return max(self.get(key) + cost, amount + 1)
        d = self._fixed(limit, window_ms).check(_fit(key), cost)
        used = d.limit - d.remaining
        return used if d.allowed else used + cost

    def get(self, key):
        """The units counted in `key`'s current window (a peek)."""
        d = self._peek_fixed(key)
        return 0 if d is None else d.limit - d.remaining

    def get_expiry(self, key):
        """The end of `key`'s current window, in epoch seconds."""
        d = self._peek_fixed(key)
        return int(time.time()) if d is None else int(d.reset_at / 1000)

    def _peek_fixed(self, key):
        """A peek at `key` in the table incr counts it in, or None when
        none holds it (a limit of 0; a counter key never hit)."""
        item = _item(key)
        if item is None:
            return self._peek_counters(key)
        if item[0] == 0:
            return None
        return self._fixed(min(item[0], AMOUNT_MAX), item[1]).peek(_fit(key))

    def _count(self, key, window_ms, cost):
        """A key that is not limits': counted, admitted or not, in a
        counter that only ever denies past 2^40."""
        table = self._table("count-per-%dms" % window_ms, "fixedWindow:limit"
                            "=%d,windowMs=%d" % (COUNTER_LIMIT, window_ms))
        if cost == 0 or cost > COUNTER_LIMIT:
            # Counted as limits' storages count (the cost added, admitted
            # or not) only up to 2^40: beyond, the check would refuse it.
            d = table.peek(_fit(key))
            return d.limit - d.remaining + cost
        d = table.check(_fit(key), cost)
        return d.limit - d.remaining + (0 if d.allowed else cost)

    def _peek_counters(self, key):
        """The counter holding the most of `key` (get() is not told the
        window, so every counter of the location is asked), or None."""
        best = None
        for name in self.location.table_names():
            table = self._existing(name) if name.startswith("count-") \
                else None
            if table is None:
                continue
            d = table.peek(_fit(key))  # (a Decision is false when denied)
            if d.remaining < d.limit and (best is None or
                                          d.remaining < best.remaining):
                best = d
        return best

    # -- the moving window strategy -------------------------------------

    def acquire_entry(self, key, limit, expiry, amount=1):
        """Admits `amount` hits of `key` if the trailing window of `expiry`
        seconds has room for them under `limit`; a denial records
        nothing."""
        cost = _cost(amount)
        if cost == 0:
            return True
        if cost > min(limit, AMOUNT_MAX):  # (a check refuses a huge cost)
            return False
        table = self._moving(limit, _window_ms(expiry))
        return table.check(_fit(key), cost).allowed

    def get_moving_window(self, key, limit, expiry):
        """(the window's start, the hits in it), in epoch seconds: the
        strategy's reset is start + expiry, when the oldest counted hit
        leaves (above 128: when every counted hit has left)."""
        now = int(time.time())
        if limit <= 0:
            return now, 0
        d = self._moving(limit, _window_ms(expiry)).peek(_fit(key))
        count = d.limit - d.remaining
        if count == 0:
            return now, 0
        return int(d.reset_at / 1000 - expiry), count

    # -- the storage ------------------------------------------------------

    def check(self):
        """True when the tables are usable: the location's directory can
        take new tables and every table this process opened answers."""
        directory = self.location.directory
        try:
            if not (os.path.isdir(directory) and
                    os.access(directory, os.R_OK | os.W_OK | os.X_OK)):
                return False
            for table in list(self._tables.values()):
                table.peek(_PROBE)
            return True
        except (OSError, Error, ValueError):
            return False

    def clear(self, key):
        """Forgets `key` in every table of the location (a key's tables
        are not all known from the key alone: a moving window's comes
        from acquire_entry's arguments)."""
        for name in self.location.table_names():
            table = self._existing(name)
            if table is not None:
                table.reset(_fit(key))

    def reset(self):
        """Forgets every key of every table of the location, for every
        process: each table is replaced twice, through a kind its states
        do not convert to (docs/lifecycle.md: keys start afresh) and back
        to its policy.  A check made during the reset counts under the old
        or the new state.  Returns the number of tables reset."""
        done = 0
        for name in self.location.table_names():
            table = self._existing(name)
            if table is None:
                continue
            # The policy the name says, not table.policy: that may be the
            # passing one of another process's reset, which this one
            # would then leave the table in.
            table.apply(_unconverted(name))
            table.apply(_policy(name))
            done += 1
        return done

    # -- tables -----------------------------------------------------------

    def _fixed(self, limit, window_ms):
        return self._table("fixed-%d-per-%dms" % (limit, window_ms),
                           "fixedWindow:limit=%d,windowMs=%d"
                           % (limit, window_ms))

    def _moving(self, limit, window_ms):
        limit = min(limit, AMOUNT_MAX)
        if limit <= LOG_MAX:
            return self._table("log-%d-per-%dms" % (limit, window_ms),
                               "slidingWindowLog:limit=%d,windowMs=%d"
                               % (limit, window_ms))
        return self._table("sliding-%d-per-%dms" % (limit, window_ms),
                           "slidingWindow:limit=%d,windowMs=%d,buckets=%d"
                           % (limit, _widened(window_ms), SLIDING_BUCKETS))

    def _table(self, name, policy):
        """The table `name`, created with `policy` if it does not exist
        (the name says the policy, so every process opens it alike)."""
        table = self._tables.get(name)
        if table is None:
            with self.lock:
                table = self._tables.get(name)
                if table is None:
                    table = Table(self.location.path(name), policy,
                                  slots=self.location.slots,
                                  mode=self.location.mode)
                    self._tables[name] = table
        return table

    def _existing(self, name):
        """The table `name` if its file exists, else None."""
        table = self._tables.get(name)
        if table is not None:
            return table
        try:
            table = Table(self.location.path(name), None, create=False)
        except Error as e:
            if e.code == ENOENT:  # removed since it was listed
                return None
            raise
        with self.lock:
            return self._tables.setdefault(name, table)


def _item(key):
    """(amount, window in ms) when `key` is one limits made (key_for:
    .../<amount>/<multiples>/<granularity>), else None."""
    parts = key.rsplit("/", 3)
    if len(parts) != 4:
        return None
    _, amount, multiples, granularity = parts
    item = GRANULARITIES.get(granularity)
    if item is None or not (_digits(amount) and _digits(multiples)):
        return None
    seconds = item.GRANULARITY.seconds * int(multiples)
    return (int(amount), seconds * 1000) if seconds > 0 else None


def _digits(text):
    return text.isascii() and text.isdigit()


def _cost(amount):
    """A hit's cost: a whole number >= 0, as limits' strategies pass it."""
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 0:
        raise ValueError("the cost must be a whole number >= 0, not %r"
                         % (amount,))
    return amount


def _window_ms(expiry):
    window_ms = round(expiry * 1000)
    if window_ms <= 0:
        raise ValueError("the expiry must be > 0 seconds, not %r" % (expiry,))
    return window_ms


def _fit(key):
    """The key's bytes, or, beyond the table's KEY_MAX bytes, a digest
    that keeps it a bucket of its own."""
    raw = key.encode("utf-8", "surrogatepass")
    if len(raw) > KEY_MAX:
        return b"\x00b2:" + hashlib.blake2b(raw, digest_size=20).digest()
    return raw


def _policy(name):
    """The policy of the table `name`: what _fixed, _moving and _count
    create it with."""
    m = _limits_location.TABLE_NAME.match(name)
    window = int(m.group("window"))
    if m.group("count"):
        return "fixedWindow:limit=%d,windowMs=%d" % (COUNTER_LIMIT, window)
    amount = int(m.group("amount"))
    if m.group("kind") == "fixed":
        return "fixedWindow:limit=%d,windowMs=%d" % (amount, window)
    if m.group("kind") == "log":
        return "slidingWindowLog:limit=%d,windowMs=%d" % (amount, window)
    # sliding-A-per-Wms: W is the item's window, the table's is widened.
    return "slidingWindow:limit=%d,windowMs=%d,buckets=%d" % (
        amount, _widened(window), SLIDING_BUCKETS)


def _widened(window_ms):
    """The sliding window's width for a moving window of window_ms: the
    S buckets counted in full (the current one partly elapsed) span at
    least (S-1)/S of it; widened so that this covers the whole window, an
    admission leaves every trailing window within the limit (the oldest
    bucket's linear share can only add)."""
    return -(-window_ms * SLIDING_BUCKETS // (SLIDING_BUCKETS - 1))


def _unconverted(name):
    """A policy the table `name`'s states do not convert to: a fixed or
    sliding window's counts carry over to the other (lifecycle.md), a log's
    stamps to nothing, so the window counters go through a log and the log
    through a fixed window."""
    m = _limits_location.TABLE_NAME.match(name)
    window = int(m.group("window"))
    if m.group("kind") == "log":
        return "fixedWindow:limit=%s,windowMs=%d" % (m.group("amount"),
                                                      window)
    amount = LOG_MAX if m.group("count") else int(m.group("amount"))
    return "slidingWindowLog:limit=%d,windowMs=%d" % (min(amount, LOG_MAX),
                                                      window)
