<?php

/**
 * The PHP API of the tkshm extension, as PHP declarations: the reference for
 * src/tkshm_arginfo.h (which must match it; tests/api_test.php checks the
 * loaded extension against it through Reflection) and a stub for IDEs and
 * static analysers.  Not loadable beside the extension.
 */

namespace Tkshm;

/** The library's error codes (Tkshm\Exception::getCode()). */
const ENULL = -30900;
const EINVAL = -30901;
const EKEYEMPTY = -30902;
const EKEYLONG = -30903;
const ECOST = -30904;
const ENOW = -30905;
const EPOLICY = -30906;
const EMISMATCH = -30907;
const EBADMAGIC = -30908;
const EVERSION = -30909;
const ESIZE = -30910;
const ECORRUPT = -30911;
const ESYMLINK = -30912;
const ENOTFILE = -30913;
const EPERM = -30914;
const ENOENT = -30915;
const EEXIST = -30916;
const ENOSPC = -30917;
const ENOMEM = -30918;
const ESYSTEM = -30919;
const EFULL = -30920;
const EBUSY = -30921;
const EREADONLY = -30922;
const ENOTSUP = -30923;
const EINTR = -30924;
const ENOTHELD = -30925;
const ENOREDIS = -30926;
const EUNAVAILABLE = -30927;
const EREDIS = -30928;
const ECROSSSLOT = -30929;

/** The longest key, in bytes. */
const KEY_MAX = 1024;
/** Decision::$flags bits. */
const DECISION_EVICTED_DEBTOR = 1;
const DECISION_DEBT_RESTORED = 2;
const DECISION_CACHED = 4;
const DECISION_FALLBACK = 8;
const DECISION_NO_LEASE = 16;
/** The C library's version ("0.1.0"). */
const LIBRARY_VERSION = "0.1.0";

/** A library call failed: getCode() is the library's negative code. */
class Exception extends \RuntimeException
{
}

/**
 * The read-only result of a check or peek.  Made only by Table: `new`
 * throws an Error, and it cannot be changed, extended or serialized.
 */
final readonly class Decision
{
    public bool $allowed;
    /** the effective ceiling (GCRA: the burst) */
    public int $limit;
    /** whole units left */
    public int $remaining;
    /** epoch ms of full replenishment */
    public int $resetAt;
    /** 0 when allowed */
    public int $retryAfterMs;
    /** DECISION_* bits */
    public int $flags;
}

/**
 * A shared table.  Constructing one with the same path again in the same
 * process (every request of a PHP-FPM worker) reuses the handle opened the
 * first time.  Every construction states what the table is to be: a
 * policy, or a larger $slots, that differs from the live table's is
 * applied to it (for every process attached), as the first construction
 * applies it when it opens an existing table; change() says what was done.
 */
final class Table
{
    /** Opens (creating if absent) the table at $path ("name" is
     *  /dev/shm/name), or reuses this process's handle of it, and makes
     *  the table's policy $policy: in place when the state keeps its
     *  shape, else by a replacement that carries the keys over.  $slots
     *  (0: 65536 to create, the table's own to attach) creates or grows
     *  the table; a smaller $slots keeps its size.  $mode (permission
     *  bits, 0 to 0777; 0 is 0600) applies when this call creates it.
     *  $keep: change nothing, throw EMISMATCH if the table differs.
     *  $redis: attached to the table (attach()); a policy that is not
     *  strict throws ENOTSUP before anything is opened. */
    public function __construct(string $path, string $policy, int $slots = 0, int $mode = 0600, bool $keep = false, ?Redis $redis = null) {}

    /** Decides this strict table's checks and peeks on Redis through
     *  $redis; null detaches (checks then throw ENOREDIS).  The
     *  attachment is this process's handle's: later constructions (later
     *  requests) find it until attach() changes it.  A table that is not
     *  strict throws ENOTSUP. */
    public function attach(?Redis $redis): void {}

    /** Checks $key, consuming $cost if admitted; $nowMs (epoch ms)
     *  defaults to the system clock. */
    public function check(string $key, float|int $cost = 1, ?float $nowMs = null): Decision {}

    /** What a check of cost 1 would decide, consuming nothing. */
    public function peek(string $key, ?float $nowMs = null): Decision {}

    /** Forgets $key: its next check starts fresh. */
    public function reset(string $key): void {}

    /** The table's counters and geometry. */
    public function stats(): array {}

    /** The table's canonical policy string, as it is now. */
    public function policy(): string {}

    /** What the construction (or the last apply()) did to the table:
     *  ['kind' => 'none'|'create'|'in_place'|'replace',
     *   'states_kept' => bool, 'slots_before' => int (0: no table),
     *   'slots_after' => int, 'text' => "limit 10 -> 20, states kept"]. */
    public function change(): array {}

    /** Changes the live table's policy ($policy null: keep it) and/or
     *  grows it to $slots (0: keep its size; fewer than it has throws
     *  EINVAL), for every process attached; returns what was done, as
     *  change() does. */
    public function apply(?string $policy, int $slots = 0): array {}

    /** What `new Table($path, $policy, $slots)` would do to the table at
     *  $path ('create' when there is none), as change() says it, changing
     *  nothing. */
    public static function plan(string $path, string $policy, int $slots = 0): array {}

    /** How many tables this process has opened (calls of tkshm_open that
     *  succeeded); handles reused across requests, or inherited over
     *  fork, do not count. */
    public static function openCount(): int {}
}

/**
 * A connection handle for strict tables (a policy with ";mode=strict").
 * Constructing one with the same options again in the same process (every
 * request of a PHP-FPM worker) reuses the handle, and the connection, made
 * the first time; it connects on first use, in the process that uses it
 * (a forked child opens its own).
 */
final class Redis
{
    /** $options (camelCase, all optional): host (default "127.0.0.1"),
     *  port (1 to 65535, default 6379), unixPath, username, password, db,
     *  cluster ("host:port,host:port" or a list of "host:port"),
     *  sentinels (the same) with sentinelMaster, connectTimeoutMs (default
     *  200), commandTimeoutMs (100), breakerFailures (3), breakerOpenMs
     *  (1000), serverTime (true).  A bad value, an unknown name, cluster
     *  with sentinels or sentinels without sentinelMaster throw EINVAL; a
     *  value of the wrong type a TypeError. */
    public function __construct(array $options = []) {}
}

/**
 * The response headers for $d as name => value: the style's RateLimit
 * headers ("draft": RateLimit-Policy and RateLimit; "legacy":
 * RateLimit-Limit, -Remaining, -Reset; "none": none) and, on a denial,
 * Retry-After.  $nowMs must be the clock the check used (default: now).
 */
function headers(Decision $d, ?string $policyName = null, string $style = "draft", ?float $nowMs = null): array {}

/** The rate-limit key of a client address: IPv4 as is, IPv4-mapped IPv6
 *  as IPv4, other IPv6 as its /$v6Prefix network ("2001:db8::/64"). */
function client_key(string $addr, int $v6Prefix = 64): string {}
