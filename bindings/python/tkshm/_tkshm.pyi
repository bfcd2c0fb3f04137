# Type stub of the C extension tkshm._tkshm (src/_tkshm.c).  Checked
# against the built module by the ctest python_stubs (mypy.stubtest, and
# every public name, stats() key and value type compared).
import sys
from _typeshed import StrOrBytesPath, structseq
from types import TracebackType
from typing import Any, Final, Iterable, Literal, TypedDict, final

if sys.version_info >= (3, 11):
    from typing import Self
else:
    from typing_extensions import Self

_Key = str | bytes

library_version: str

# The library's error codes (negative; tkshm.Error.code).
ENULL: int
EINVAL: int
EKEYEMPTY: int
EKEYLONG: int
ECOST: int
ENOW: int
EPOLICY: int
EMISMATCH: int
EBADMAGIC: int
EVERSION: int
ESIZE: int
ECORRUPT: int
ESYMLINK: int
ENOTFILE: int
EPERM: int
ENOENT: int
EEXIST: int
ENOSPC: int
ENOMEM: int
ESYSTEM: int
EFULL: int
EBUSY: int
EREADONLY: int
ENOTSUP: int
EINTR: int
ENOTHELD: int
ENOREDIS: int
EUNAVAILABLE: int
EREDIS: int
ECROSSSLOT: int

KEY_MAX: int
LEASE_KEY_MAX: int
V6_PREFIX_DEFAULT: int

# Decision.flags bits.
DECISION_EVICTED_DEBTOR: int
DECISION_DEBT_RESTORED: int
DECISION_CACHED: int
DECISION_FALLBACK: int
DECISION_NO_LEASE: int

class Error(Exception):
    code: int
    name: str

@final
class Decision:
    @property
    def allowed(self) -> bool: ...
    @property
    def limit(self) -> int: ...
    @property
    def remaining(self) -> int: ...
    @property
    def reset_at(self) -> int: ...
    @property
    def retry_after_ms(self) -> int: ...
    @property
    def flags(self) -> int: ...
    def __bool__(self) -> bool: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Change(structseq[Any], tuple[str, bool, int, int, str]):
    __match_args__: Final = ("kind", "states_kept", "slots_before",
                             "slots_after", "text")
    @property
    def kind(self) -> Literal["none", "create", "in_place", "replace"]: ...
    @property
    def states_kept(self) -> bool: ...
    @property
    def slots_before(self) -> int: ...
    @property
    def slots_after(self) -> int: ...
    @property
    def text(self) -> str: ...

# Table.stats(): the table's counters and geometry.
_GlobalStats = TypedDict("_GlobalStats", {
    "redis_calls": int,
    "redis_errors": int,
    "noscript_reloads": int,
    "breaker_opens": int,
    "cache_denials": int,
    "fallback_allowed": int,
    "fallback_denied": int,
    "no_lease": int,
    "leases": int,
    "lease_units": int,
    "lease_round_trips": int,
    "lease_units_expired": int,
    "hosts": int,
    "redis_up": bool,
    "agent_pid": int,
    "agent_beat_ms": float,
})

_Stats = TypedDict("_Stats", {
    "allowed": int,
    "denied": int,
    "inserts": int,
    "reclaims": int,
    "evictions": int,
    "evictions_in_debt": int,
    "debt_restores": int,
    "cas_retries": int,
    "refusals": int,
    "duplicates_killed": int,
    "resets": int,
    "multi_rollbacks": int,
    "claims_stolen": int,
    "releases": int,
    "reaped": int,
    "slots": int,
    "buckets": int,
    "debt_cells": int,
    "file_bytes": int,
    "bytes_per_key": float,
    "created_ms": float,
    "layout_version": int,
    "on_full": Literal["refuse", "evict"],
    "anonymous": bool,
    "policy": str,
    "global": _GlobalStats,
})

@final
class Redis:
    def __init__(
        self,
        *,
        host: str | None = None,
        port: int | None = None,
        unix_path: str | None = None,
        username: str | None = None,
        password: str | None = None,
        db: int = 0,
        cluster: str | list[str] | tuple[str, ...] | None = None,
        sentinels: str | list[str] | tuple[str, ...] | None = None,
        sentinel_master: str | None = None,
        connect_timeout_ms: float = 0,
        command_timeout_ms: float = 0,
        breaker_failures: int = 0,
        breaker_open_ms: float = 0,
        server_time: bool = True,
    ) -> None: ...
    @property
    def closed(self) -> bool: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> None: ...

@final
class Table:
    def __init__(
        self,
        path: StrOrBytesPath | None,
        policy: str | None = None,
        slots: int = 0,
        create: bool = True,
        mode: int = 0o600,
        keep: bool = False,
        private: bool = False,
        *,
        redis: Redis | None = None,
    ) -> None: ...
    @property
    def policy(self) -> str: ...
    @property
    def change(self) -> Change: ...
    @property
    def closed(self) -> bool: ...
    @property
    def redis(self) -> Redis | None: ...
    def check(self, key: _Key, cost: float = 1,
              now_ms: float | None = None) -> Decision: ...
    def peek(self, key: _Key, now_ms: float | None = None) -> Decision: ...
    def reset(self, key: _Key, /) -> None: ...
    def attach(self, redis: Redis | None, /) -> None: ...
    def apply(self, policy: str | None = None, slots: int = 0) -> Change: ...
    def stats(self) -> _Stats: ...
    def close(self) -> None: ...
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
        /,
    ) -> None: ...

# One dimension of check_multi: (table, key) or (table, key, cost).
_Dimension = tuple[Table, _Key] | tuple[Table, _Key, float]

def strerror(code: int, /) -> str: ...
def now_ms() -> float: ...
def client_key(addr: str, v6_prefix: int = 64) -> str: ...
def plan(path: StrOrBytesPath | None, policy: str | None = None,
         slots: int = 0) -> Change: ...
def check_multi(
    dimensions: Iterable[_Dimension],
    mode: Literal["all", "any"] = "all",
    now_ms: float | None = None,
) -> tuple[Decision, int, list[Decision]]: ...
# tkshm.headers() is the friendly form: style 0 draft, 1 legacy, 2 none.
def http_headers(decision: Decision, style: int, policy_name: str | None,
                 window_s: int, now: float, /) -> list[tuple[str, str]]: ...
