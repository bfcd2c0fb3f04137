/*
 * tkshm.h - shared-memory rate limiting for the processes of one host.
 *
 * tkshm keeps per-key rate-limit state in a memory-mapped table that every
 * process of a host can attach (Apache prefork children, PHP-FPM workers,
 * gunicorn workers, any fork()ing server).  Every change to a key's state is
 * one compare-and-swap: no process ever holds a lock, so a worker that is
 * killed (kill -9, OOM, segfault) or stopped at any instruction leaves
 * nothing to repair and nobody waiting.
 *
 * Decisions are bit-identical to ThrottleKit's (the same IEEE-754 double
 * arithmetic in the same order), so tkshm, ThrottleKit's Node and Python
 * clients and its Redis scripts agree on every field.
 *
 * Conventions of this header
 * --------------------------
 * - Every fallible call returns an int: TKSHM_OK (0) or a negative code from
 *   enum tkshm_error.  tkshm_strerror() turns a code into a sentence.
 *   A denial is a decision (allowed == false), never an error.
 * - Bad input is refused with an error before anything is changed.
 * - The library never aborts, never prints and never exits.
 * - Time is injected: every operation has an `_at` form taking `now_ms`, the
 *   time in milliseconds since the Unix epoch as a double (fractions allowed).
 *   The forms without `_at` read CLOCK_REALTIME once per call.
 * - Each call's contract ends with fixed fields:
 *     Threads:   whether one handle may be used by several threads at once.
 *     Processes: what holds when several processes use the same table.
 *     Crash:     what a process killed in the middle of the call leaves.
 *   Calls that only compute (versions, errors, policies, the clock) touch no
 *   shared memory and are safe from any thread at any time.
 */
#ifndef TKSHM_H
#define TKSHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(TKSHM_STATIC_DEFINE)
#define TKSHM_API __attribute__((visibility("default")))
#else
#define TKSHM_API
#endif

/* ---------------------------------------------------------------------------
 * Versions
 * ------------------------------------------------------------------------- */

#define TKSHM_VERSION_MAJOR 0
#define TKSHM_VERSION_MINOR 1
#define TKSHM_VERSION_PATCH 0

/** The library's version as "MAJOR.MINOR.PATCH".  Never fails. */
TKSHM_API const char *tkshm_version(void);

/** The segment layout version this library writes and accepts.  It changes
 *  independently of the API version; a table with another layout version is
 *  refused with TKSHM_EVERSION. */
TKSHM_API uint32_t tkshm_layout_version(void);

/* ---------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------- */

/** Every error the library returns.  Codes are negative and stable. */
enum tkshm_error {
	TKSHM_OK = 0,
	TKSHM_ENULL = -30900,	  /**< a required pointer argument is NULL */
	TKSHM_EINVAL = -30901,	  /**< an argument is out of its range */
	TKSHM_EKEYEMPTY = -30902, /**< the key has length 0 */
	TKSHM_EKEYLONG = -30903,  /**< the key is longer than TKSHM_KEY_MAX */
	TKSHM_ECOST = -30904,	  /**< cost is NaN, infinite, <= 0, > 2^53-1,
				     or too small to change the key's state */
	TKSHM_ENOW = -30905,	  /**< now_ms is NaN, negative or > 2^42 ms */
	TKSHM_EPOLICY = -30906,	  /**< invalid policy or policy string */
	TKSHM_EMISMATCH =
		-30907, /**< the table exists with another policy or size */
	TKSHM_EBADMAGIC = -30908, /**< the file is not a tkshm table */
	TKSHM_EVERSION = -30909,  /**< the table has another layout version */
	TKSHM_ESIZE = -30910, /**< the file size is not what its header says */
	TKSHM_ECORRUPT = -30911, /**< the header or table fails validation */
	TKSHM_ESYMLINK = -30912, /**< the path is a symbolic link */
	TKSHM_ENOTFILE = -30913, /**< the path is not a regular file */
	TKSHM_EPERM = -30914,	 /**< permission denied by the system */
	TKSHM_ENOENT = -30915,	 /**< no such table file (and creation was not
				  asked), key or further entry */
	TKSHM_EEXIST =
		-30916, /**< the table exists and TKSHM_O_EXCL was given */
	TKSHM_ENOSPC = -30917, /**< no space to allocate the table */
	TKSHM_ENOMEM = -30918, /**< out of memory (process memory or mapping) */
	TKSHM_ESYSTEM = -30919, /**< another system call failure; see errno */
	TKSHM_EFULL = -30920,	/**< the key's probe window is full of live keys
					  and the table refuses to evict */
	TKSHM_EBUSY = -30921,	/**< contention did not settle within the
					  bounded number of retries */
	TKSHM_EREADONLY = -30922, /**< a write through a read-only handle */
	TKSHM_ENOTSUP = -30923,	  /**< the table's algorithm cannot do this */
	TKSHM_EINTR = -30924,	  /**< a signal interrupted a wait; what was
				 reserved stands */
	TKSHM_ENOTHELD = -30925,  /**< the permit is not held: released
				    already, taken back after its holder
				    died, or not this process's */
	TKSHM_ENOREDIS = -30926,  /**< a strict table has no Redis
				    connection (tkshm_redis_attach) */
	TKSHM_EUNAVAILABLE = -30927, /**< Redis did not answer: refused,
				       timed out, connection lost, or the
				       circuit breaker is open (a peek; a
				       check gets the failure policy's
				       decision) */
	TKSHM_EREDIS = -30928,	     /**< Redis answered with an error or
				 with no valid answer (a peek; a check
				 gets the failure policy's decision) */
	TKSHM_ECROSSSLOT = -30929,   /**< on a Redis Cluster, the keys of one
				      multi-key check hash to different
				      slots: give them one hash tag
				      ("{user42}:minute", "{user42}:day") */
};

/** A sentence describing `err` (a tkshm code, or TKSHM_OK).  Unknown codes get
 *  "unknown tkshm error".  Never returns NULL.  Threads: safe. */
TKSHM_API const char *tkshm_strerror(int err);

/** The symbolic name of `err` ("TKSHM_EKEYLONG").  Never returns NULL. */
TKSHM_API const char *tkshm_error_name(int err);

/* ---------------------------------------------------------------------------
 * Policies
 * ------------------------------------------------------------------------- */

/** The longest key accepted, in bytes. */
#define TKSHM_KEY_MAX 1024

/** The largest cost accepted: 2^53 - 1, ThrottleKit's Number.MAX_SAFE_INTEGER. */
#define TKSHM_COST_MAX 9007199254740991.0

/** The largest now_ms accepted: 2^42 ms (2109-05-15 UTC).  A clock in
 *  microseconds or nanoseconds passed as ms is far above it and refused
 *  with TKSHM_ENOW.  Every time step a policy defines must be at least 16
 *  ulps of the largest time it is added to: 1/64 ms for horizons below
 *  2^42 ms (docs/policies.md). */
#define TKSHM_NOW_MAX 4398046511104.0

/** Algorithms.  Values are stored in table headers and never reused. */
typedef enum tkshm_kind {
	TKSHM_KIND_GCRA = 1, /**< Generic Cell Rate Algorithm (default) */
	TKSHM_KIND_TOKEN_BUCKET = 2,   /**< ThrottleKit "tokenBucket" */
	TKSHM_KIND_FIXED_WINDOW = 3,   /**< ThrottleKit "fixedWindow" */
	TKSHM_KIND_SLIDING_WINDOW = 4, /**< ThrottleKit "slidingWindow" */
	TKSHM_KIND_SLIDING_LOG = 5,    /**< ThrottleKit "slidingWindowLog" */
	TKSHM_KIND_QUOTA = 6,	       /**< ThrottleKit "quota" */
	TKSHM_KIND_TOKEN_BUDGET = 7,   /**< ThrottleKit "tokenBudget" */
	/** ThrottleKit "leakyBucket": the shaper.  Tables of this kind are
	 *  used through tkshm_reserve() and tkshm_schedule(); a check
	 *  returns TKSHM_ENOTSUP. */
	TKSHM_KIND_LEAKY_BUCKET = 8,
	/** "concurrency": at most `limit` permits in flight.  Used through
	 *  tkshm_acquire() and tkshm_release(); a check returns
	 *  TKSHM_ENOTSUP. */
	TKSHM_KIND_CONCURRENCY = 9,
	/** "adaptiveConcurrency": a concurrency limit whose value follows
	 *  the latency its permits' holders report (gradient2 or AIMD). */
	TKSHM_KIND_ADAPTIVE_CONCURRENCY = 10,
} tkshm_kind;

/** The largest concurrency limit (and adaptive maxLimit): a permit is one
 *  state word naming its holder. */
#define TKSHM_CONCURRENCY_MAX_LIMIT 256

/** How an adaptive concurrency limit moves (its `algorithm` option). */
typedef enum tkshm_adaptive_algorithm {
	/** "gradient2": limit' = limit * gradient + sqrt(limit), smoothed,
	 *  gradient = clamp(tolerance * rttNoLoad / rtt, 0.5, 1). */
	TKSHM_ADAPTIVE_GRADIENT2 = 1,
	/** "aimd": +1 while in use and fast, * backoffRatio on a drop or a
	 *  latency above timeoutMs. */
	TKSHM_ADAPTIVE_AIMD = 2,
} tkshm_adaptive_algorithm;

/** The most entries a slidingWindowLog policy keeps per key: its `limit` may
 *  not exceed this (one timestamp word per unit of the limit). */
#define TKSHM_SLIDING_LOG_MAX_LIMIT 128

/** The most sub-buckets of a slidingWindow policy (and of a rolling quota). */
#define TKSHM_SLIDING_WINDOW_MAX_BUCKETS 64

/** A quota's reset cadence (ThrottleKit's `resetCadence`; in policy strings
 *  the word in quotes).  Values 1..4 are ThrottleKit's Lua mode numbers. */
typedef enum tkshm_quota_cadence {
	/** "calendar-month": on the 1st of each civil month, 00:00 at UTC +
	 *  offsetMinutes. */
	TKSHM_QUOTA_CALENDAR_MONTH = 1,
	/** "calendar-week": at 00:00 of weekStartsOn each week. */
	TKSHM_QUOTA_CALENDAR_WEEK = 2,
	/** "calendar-day": at 00:00 (UTC + offsetMinutes) each day. */
	TKSHM_QUOTA_CALENDAR_DAY = 3,
	/** "fixed": every periodMs from anchor. */
	TKSHM_QUOTA_FIXED = 4,
	/** "rolling": a trailing periodMs window, ThrottleKit's
	 *  slidingWindow({limit, windowMs: periodMs, buckets}). */
	TKSHM_QUOTA_ROLLING = 5,
} tkshm_quota_cadence;

/** How a table's limits hold across hosts (the policy string's `mode`). */
typedef enum tkshm_global_mode {
	/** "local": this host only; no Redis (the default). */
	TKSHM_MODE_LOCAL = 0,
	/** "strict": every decision is one atomic Lua script on Redis,
	 *  exact across hosts; denials are cached in the table (an exact
	 *  negative cache) and repeated checks of a denied key stay local. */
	TKSHM_MODE_STRICT = 1,
	/** "lease": tkshm-syncd leases budget from Redis ahead of need and
	 *  workers spend it in the table; a check never waits on Redis.
	 *  gcra and fixedWindow policies only. */
	TKSHM_MODE_LEASE = 2,
} tkshm_global_mode;

/** What a strict or lease table decides while Redis cannot be reached
 *  (the policy string's `failure`). */
typedef enum tkshm_failure_policy {
	/** "safe-share" (the default): a local limit of limit/N on this
	 *  host, N being the last known number of hosts (the policy's
	 *  `hosts` until Redis has told). */
	TKSHM_FAILURE_SAFE_SHARE = 0,
	/** "fail-open": admit, and count it. */
	TKSHM_FAILURE_OPEN = 1,
	/** "fail-closed": deny. */
	TKSHM_FAILURE_CLOSED = 2,
} tkshm_failure_policy;

/** The longest Redis key prefix of a table (bytes, without the NUL). */
#define TKSHM_PREFIX_MAX 63

/** The longest key of a lease table: the sync agent names the key in
 *  Redis, so the table keeps each key whole (in a per-slot record). */
#define TKSHM_LEASE_KEY_MAX 224

/** The cross-host part of a policy.  All zero is "local". */
typedef struct tkshm_global {
	tkshm_global_mode mode;
	tkshm_failure_policy failure;
	/** safe-share: the number of hosts assumed until Redis has told
	 *  (an integer >= 1; default 1). */
	double hosts;
	/** lease mode with gcra: how long leased tokens may be spent,
	 *  measured from before the lease was asked for (> 0; default
	 *  1000).  The over-admission bound is r * leaseMs
	 *  (docs/cross-host.md, "Lease"). */
	double lease_ms;
	/** The Redis key prefix: a key k is stored as "prefix:k"
	 *  (ThrottleKit's limiter prefix); empty: k itself.  Letters,
	 *  digits and _ - . : { } only. */
	char prefix[TKSHM_PREFIX_MAX + 1];
} tkshm_global;

/** A validated policy: an algorithm and its parameters, in ThrottleKit's
 *  units (milliseconds, requests).  Build one with tkshm_policy_gcra() or
 *  tkshm_policy_parse(); a policy built by hand is validated when used.
 *
 *  `kind` selects the member of `u`.  Every parameter is a double, as in
 *  ThrottleKit, and is checked as ThrottleKit's constructor checks it (plus
 *  the tkshm limits stated below, and a refusal of parameters that would
 *  make a decision field non-finite).  A policy built by hand gets no
 *  defaults: zero is a value (weekStartsOn 0 is Sunday, buckets 0 is
 *  refused), so set every field the kind reads or use tkshm_policy_parse(),
 *  which fills ThrottleKit's defaults.  Each member fits in `reserved`. */
typedef struct tkshm_policy {
	tkshm_kind kind;
	union {
		/** TKSHM_KIND_GCRA, "gcra": `limit` per `period_ms`, paced
		 *  evenly, with bursts of up to `burst`.  Decision.limit is
		 *  the burst. */
		struct {
			double limit;	  /**< requests per period, > 0 */
			double period_ms; /**< period length, > 0 */
			double burst;	  /**< burst tolerance, >= 1 */
		} gcra;
		/** TKSHM_KIND_TOKEN_BUCKET, "tokenBucket": a bucket of
		 *  `capacity` tokens, full when cold, refilled continuously.
		 *  Decision.limit is the capacity. */
		struct {
			double capacity;       /**< bucket size, > 0 */
			double refill_per_sec; /**< tokens per second, > 0 */
		} token_bucket;
		/** TKSHM_KIND_FIXED_WINDOW, "fixedWindow": `limit` units per
		 *  epoch-aligned window (up to 2 x limit across one
		 *  boundary, by design). */
		struct {
			double limit;	  /**< units per window, > 0 */
			double window_ms; /**< window width, > 0 */
		} fixed_window;
		/** TKSHM_KIND_SLIDING_WINDOW, "slidingWindow": `limit` units
		 *  per trailing window, estimated from `buckets`
		 *  sub-buckets (the oldest weighted linearly). */
		struct {
			double limit;	  /**< units per window, > 0 */
			double window_ms; /**< window width, > 0 */
			double buckets;	  /**< an integer 1..
					       TKSHM_SLIDING_WINDOW_MAX_BUCKETS
					       (64); ThrottleKit's default 10 */
		} sliding_window;
		/** TKSHM_KIND_SLIDING_LOG, "slidingWindowLog": `limit` units
		 *  per trailing window, counted exactly from one timestamp
		 *  per unit (a cost c counts as ceil(c) units). */
		struct {
			double limit;	  /**< > 0 and at most
					       TKSHM_SLIDING_LOG_MAX_LIMIT
					       (128; a tkshm limit) */
			double window_ms; /**< window width, > 0 */
		} sliding_log;
		/** TKSHM_KIND_QUOTA, "quota": `limit` units per period that
		 *  resets on a calendar boundary, every period_ms, or
		 *  (rolling) over a trailing window.  A cadence reads only
		 *  some of the options; the others are ignored, as
		 *  ThrottleKit ignores them (see tkshm_policy_parse). */
		struct {
			double limit; /**< units per period, > 0 */
			/** a tkshm_quota_cadence value, as a double */
			double reset_cadence;
			/** calendar-*: the period's UTC offset, an integer
			 *  within -840..840 (ThrottleKit's default 0) */
			double offset_minutes;
			/** calendar-week: the first day, an integer 0..6,
			 *  0 = Sunday (ThrottleKit's default 1, Monday) */
			double week_starts_on;
			/** fixed and rolling (required): the period, > 0 */
			double period_ms;
			/** fixed: an epoch ms integer that periods are
			 *  aligned to (ThrottleKit's default 0) */
			double anchor;
			/** rolling: sub-buckets, an integer 1..64
			 *  (ThrottleKit's default 10) */
			double buckets;
		} quota;
		/** TKSHM_KIND_TOKEN_BUDGET, "tokenBudget": ThrottleKit's
		 *  streaming token meter, floor(budget) tokens per
		 *  epoch-aligned window; a debit is admitted while budget
		 *  remains before it.  The cost of a check is the debit in
		 *  tokens and must be an integer (else TKSHM_ECOST).
		 *  Decision.limit is floor(budget). */
		struct {
			double budget;	  /**< tokens per window, >= 1 */
			double window_ms; /**< window width, > 0 */
		} token_budget;
		/** TKSHM_KIND_LEAKY_BUCKET, "leakyBucket": requests leave at
		 *  `rate_per_sec`; one that would wait more than
		 *  `max_queue_ms` is rejected. */
		struct {
			double rate_per_sec; /**< departures per second, > 0 */
			double max_queue_ms; /**< the longest wait, >= 0 */
		} leaky_bucket;
		/** TKSHM_KIND_CONCURRENCY, "concurrency". */
		struct {
			double limit; /**< permits, an integer 1..
					 TKSHM_CONCURRENCY_MAX_LIMIT */
		} concurrency;
		/** TKSHM_KIND_ADAPTIVE_CONCURRENCY, "adaptiveConcurrency".
		 *  Limits are whole permits; the limit in force is the
		 *  floor of the adapted value. */
		struct {
			/** a tkshm_adaptive_algorithm, as a double */
			double algorithm;
			double initial_limit; /**< min..max (default 20) */
			double min_limit;     /**< integer >= 1 (default 1) */
			double max_limit; /**< integer <= 256 (default 200) */
			/** gradient2: weight of a new estimate, in (0, 1]
			 *  (default 0.2) */
			double smoothing;
			/** gradient2: queueing tolerated before the limit
			 *  falls, >= 1 (default 1.5) */
			double tolerance;
			/** gradient2: rttNoLoad is the least latency of the
			 *  current and the previous window of this length,
			 *  > 0 (default 10000) */
			double rtt_window_ms;
			/** aimd: the factor a drop applies, in [0.5, 1)
			 *  (default 0.9) */
			double backoff_ratio;
			/** aimd: a latency above this counts as a drop, > 0
			 *  (default 5000) */
			double timeout_ms;
		} adaptive;
		double reserved
			[16]; /**< room for the parameters of later kinds */
	} u;
	/** How the limit holds across hosts; all zero: local. */
	tkshm_global global;
} tkshm_policy;

/** Builds a GCRA policy: `limit` requests per `period_ms`, with a burst of
 *  `burst` (0 means "same as limit", ThrottleKit's default).
 *  @return TKSHM_OK; TKSHM_ENULL if out is NULL; TKSHM_EPOLICY if a parameter
 *  is not finite, not positive, burst < 1, or the emission interval
 *  period_ms/limit is so small or large that a decision field could stop
 *  being finite.  On error *out is unchanged.
 *  Threads: safe.  Processes: n/a.  Crash: n/a. */
TKSHM_API int tkshm_policy_gcra(tkshm_policy *out, double limit,
				double period_ms, double burst);

/** Checks every parameter of `p` as the constructors do, for every kind.
 *  @return TKSHM_OK, TKSHM_ENULL or TKSHM_EPOLICY (with a sentence in err when
 *  err is not NULL). */
TKSHM_API int tkshm_policy_validate(const tkshm_policy *p, char *err,
				    size_t err_len);

/** Parses a policy string with ThrottleKit's kind and option names:
 *      kind ":" name "=" value { "," name "=" value }
 *  Options come in any order; values are decimal numbers, except quota's
 *  resetCadence, which is a word; whitespace around tokens is ignored.
 *  Times are milliseconds.  The kinds and their options, with ThrottleKit's
 *  defaults in brackets (an option without one is required):
 *
 *    gcra              limit, periodMs, burst [= limit]
 *        "gcra:limit=10,periodMs=1000,burst=5"
 *    tokenBucket       capacity, refillPerSec
 *        "tokenBucket:capacity=10,refillPerSec=5"
 *    fixedWindow       limit, windowMs
 *        "fixedWindow:limit=5,windowMs=1000"
 *    slidingWindow     limit, windowMs, buckets [10] (an integer 1..64)
 *        "slidingWindow:limit=10,windowMs=1000"   (10 buckets)
 *    slidingWindowLog  limit (at most 128 in tkshm), windowMs
 *        "slidingWindowLog:limit=5,windowMs=1000"
 *    quota             limit, resetCadence, offsetMinutes [0],
 *                      weekStartsOn [1], periodMs, anchor [0], buckets [10]
 *        "quota:limit=1000000,resetCadence=calendar-month,offsetMinutes=330"
 *        "quota:limit=500,resetCadence=calendar-week,weekStartsOn=0"
 *        "quota:limit=100,resetCadence=fixed,periodMs=3600000,anchor=250"
 *        "quota:limit=100,resetCadence=rolling,periodMs=3600000,buckets=60"
 *    tokenBudget       budget, windowMs
 *        "tokenBudget:budget=100,windowMs=60000"
 *    leakyBucket       ratePerSec, maxQueueMs
 *        "leakyBucket:ratePerSec=50,maxQueueMs=2000"
 *    concurrency       limit (an integer 1..256)
 *        "concurrency:limit=16"
 *    adaptiveConcurrency  algorithm [gradient2], minLimit [1],
 *                      maxLimit [200], initialLimit [20, within min..max],
 *                      smoothing [0.2],
 *                      tolerance [1.5], rttWindowMs [10000],
 *                      backoffRatio [0.9], timeoutMs [5000]
 *        "adaptiveConcurrency:maxLimit=64"
 *        "adaptiveConcurrency:algorithm=aimd,timeoutMs=250"
 *
 *  Quota: resetCadence is one of calendar-month, calendar-week, calendar-day,
 *  fixed or rolling.  offsetMinutes (an integer within -840..840) shifts the
 *  calendar cadences from UTC; weekStartsOn (an integer 0..6, 0 = Sunday)
 *  is read by calendar-week; periodMs is required by fixed and rolling;
 *  anchor (an integer) is read by fixed; buckets (an integer 1..64) by
 *  rolling.  As in ThrottleKit, an option the cadence does not read is
 *  accepted and ignored, but offsetMinutes, weekStartsOn and anchor are
 *  validated for every cadence except rolling, which validates only limit,
 *  periodMs and buckets.
 *
 *  Refused, with TKSHM_EPOLICY: an unknown kind or option (names are
 *  case-sensitive), a repeated option, a missing required option (periodMs
 *  included, for fixed and rolling quotas), a value that is not a finite
 *  decimal number (or not one of the cadence words), and any value the
 *  kind's validation refuses (tkshm_policy_validate), for instance
 *  slidingWindow buckets 0, 65 or 2.5, a slidingWindowLog limit above 128,
 *  a quota offsetMinutes of 841 or weekStartsOn of 7, a tokenBudget budget
 *  below 1.
 *
 *  adaptiveConcurrency: algorithm is gradient2 or aimd; smoothing,
 *  tolerance and rttWindowMs are read by gradient2, backoffRatio and
 *  timeoutMs by aimd (the others are accepted, validated and ignored).
 *  minLimit <= initialLimit <= maxLimit.
 *  @param err  if not NULL, receives a sentence naming the bad option.
 *  @return TKSHM_OK, TKSHM_ENULL or TKSHM_EPOLICY; *out unchanged on error.
 *  Threads: safe. */
TKSHM_API int tkshm_policy_parse(const char *spec, tkshm_policy *out, char *err,
				 size_t err_len);

/** The longest canonical policy string, NUL included. */
#define TKSHM_POLICY_MAX 512

/** Writes the canonical policy string of `p`: the kind, then every option
 *  the kind reads, in the order listed at tkshm_policy_parse, defaults
 *  written out ("slidingWindow:limit=10,windowMs=1000,buckets=10"), numbers
 *  with round-trip precision and a quota's resetCadence as its word.  A
 *  quota's options that its cadence ignores are left out
 *  ("quota:limit=1000000,resetCadence=calendar-month,offsetMinutes=330").
 *  tkshm_policy_parse() of the result gives a policy tkshm_policy_equal()
 *  to `p`.  At most TKSHM_POLICY_MAX bytes with the NUL.
 *  @return the length written (excluding NUL), TKSHM_ENULL, TKSHM_EPOLICY
 *  (`p` is not valid), or TKSHM_EINVAL if `len` is too small (buf then holds
 *  a truncated string). */
TKSHM_API int tkshm_policy_format(const tkshm_policy *p, char *buf, size_t len);

/** True when both policies have the same kind and bit-identical values of
 *  every parameter the kind reads (0.0 and -0.0 differ): all of them, but
 *  for a quota only limit, resetCadence and the options its cadence reads
 *  (calendar-month and calendar-day: offsetMinutes; calendar-week:
 *  offsetMinutes, weekStartsOn; fixed: periodMs, anchor; rolling: periodMs,
 *  buckets).  Bytes of `u` outside the kind's member are never compared.
 *  False if either is NULL or its kind is unknown. */
TKSHM_API bool tkshm_policy_equal(const tkshm_policy *a, const tkshm_policy *b);

/* ---------------------------------------------------------------------------
 * Tables
 * ------------------------------------------------------------------------- */

/** An open table: a process-local handle onto a shared segment.  A handle
 *  survives fork(): children may keep using the parent's handle. */
typedef struct tkshm_table tkshm_table;

/** What to do when a new key's probe window holds only live keys. */
typedef enum tkshm_on_full {
	/** Evict the key with the least debt.  Its debt is remembered (merged
	 *  into a small per-table array indexed by key hash, keeping the
	 *  maximum), and a key that comes back starts from that debt, so an
	 *  eviction never resets a key in debt.  Evictions of keys in debt are
	 *  counted and flagged in the decision. */
	TKSHM_ON_FULL_EVICT = 0,
	/** Refuse: the check returns TKSHM_EFULL and the caller fails open or
	 *  closed.  Refusals are counted. */
	TKSHM_ON_FULL_REFUSE = 1,
} tkshm_on_full;

/** Open flags. */
#define TKSHM_O_CREATE 0x1u /**< create the table if the path does not exist */
#define TKSHM_O_EXCL   0x2u /**< with CREATE: fail with TKSHM_EEXIST if it does */
#define TKSHM_O_RDONLY 0x4u /**< map read-only: peek, stats, verify only */
/** Ask for transparent huge pages (madvise MADV_HUGEPAGE) on the mapping,
 *  so a large table costs one TLB entry per 2 MiB instead of per 4 KiB.
 *  Advice only: the open never fails for it.  The kernel honours it for
 *  shared memory when /sys/kernel/mm/transparent_hugepage/shmem_enabled is
 *  `advise` or `always` (Debian's default is `never`); an anonymous table
 *  then gets huge pages as it is first touched. */
#define TKSHM_O_HUGEPAGES 0x8u
/** Attach only as the table is: a policy or slots that differ from the
 *  table's are TKSHM_EMISMATCH (errbuf names the difference), and nothing
 *  is changed.  Without it, tkshm_open() applies them (tkshm_apply()). */
#define TKSHM_O_KEEP 0x10u

/** The default directory for relative table names and the default slots. */
#define TKSHM_DEFAULT_DIR   "/dev/shm"
#define TKSHM_DEFAULT_SLOTS 65536u
/** The largest capacity a table can be created with. */
#define TKSHM_MAX_SLOTS (UINT64_C(1) << 36)

struct tkshm_change;

/** Options for tkshm_open().  Initialise with TKSHM_OPTIONS_INIT so that
 *  `size` is right; fields added later go at the end. */
typedef struct tkshm_options {
	/** sizeof(tkshm_options). */
	size_t size;
	/** Required to create.  When attaching, NULL adopts the table's
	 *  policy; another policy is applied to the live table (in place or
	 *  by replacement, see tkshm_change_kind), unless TKSHM_O_KEEP asks
	 *  for TKSHM_EMISMATCH instead. */
	const tkshm_policy *policy;
	/** Capacity to create, rounded up to a power of two (at least 8);
	 *  0 = TKSHM_DEFAULT_SLOTS.  When attaching: 0 keeps the table's; a
	 *  larger value grows the table (a replacement keeping every key);
	 *  a smaller one keeps the table's size (tables do not shrink:
	 *  tkshm_change.text says so), or is TKSHM_EMISMATCH under
	 *  TKSHM_O_KEEP. */
	uint64_t slots;
	/** Permission bits of a created file, within 0777; 0 means 0600.
	 *  Applied with fchmod, so the umask does not narrow it.  Any bit
	 *  outside 0777 (setuid, setgid, sticky, above) is TKSHM_EINVAL,
	 *  creating nothing, even when attaching. */
	uint32_t mode;
	/** Group of a created file; -1 keeps the creator's group.  Below -1
	 *  or above 4294967294 is TKSHM_EINVAL. */
	int64_t gid;
	/** TKSHM_O_* flags. */
	uint32_t flags;
	/** Fixed at creation and stored in the header; ignored when
	 *  attaching. */
	tkshm_on_full on_full;
	/** Optional: receives a sentence naming what was wrong or what
	 *  differs. */
	char *errbuf;
	size_t errbuf_len;
	/** Optional: receives what the open did to the table (created it,
	 *  attached as it was, changed its policy in place or replaced it);
	 *  see tkshm_change.  Filled only when the call returns TKSHM_OK. */
	struct tkshm_change *change;
} tkshm_options;

#define TKSHM_OPTIONS_INIT                                                \
	{                                                                 \
		sizeof(tkshm_options), NULL, 0, 0600, -1, TKSHM_O_CREATE, \
			TKSHM_ON_FULL_EVICT, NULL, 0, NULL                \
	}

/** What opening a table with a policy, or tkshm_apply(), does to it. */
typedef enum tkshm_change_kind {
	/** The table already had this policy and size: attached as it was. */
	TKSHM_CHANGE_NONE = 0,
	/** There was no table: one was created. */
	TKSHM_CHANGE_CREATE = 1,
	/** Same kind, same state shape: the new policy was written into the
	 *  live table.  Every key keeps its state, which is read under the
	 *  new policy from the next check on (docs/lifecycle.md says what a
	 *  key sees, per kind).  Every process notices on its next call. */
	TKSHM_CHANGE_IN_PLACE = 2,
	/** Another kind, another state shape (a sliding window's buckets, a
	 *  log's limit, cross-host mode) or more slots: a new table replaced
	 *  the old one under the same path.  Every key's state is carried
	 *  over where the kinds allow it (states_kept); every process
	 *  attached to the old table follows on its next call. */
	TKSHM_CHANGE_REPLACE = 3,
} tkshm_change_kind;

/** The longest tkshm_change.text, with its NUL. */
#define TKSHM_CHANGE_TEXT_MAX 512

/** A report of what a policy or size change does to a table. */
typedef struct tkshm_change {
	tkshm_change_kind kind;
	/** IN_PLACE and NONE: true.  REPLACE: true when every live key's
	 *  state is carried over (converted where the kind changes: gcra <->
	 *  tokenBucket, the window kinds' counts), false when keys start
	 *  from absent (the kinds' states cannot be converted).  CREATE:
	 *  false (there were none). */
	bool states_kept;
	/** The table's slots before (0: no table) and after. */
	uint64_t slots_before, slots_after;
	/** A sentence for operators, e.g. "limit 20 -> 40, states kept",
	 *  "slots 64 -> 1024: replaced, states carried over", "kind gcra ->
	 *  slidingWindow (...): replaced, keys start afresh" or "created:
	 *  POLICY, 65536 slots". */
	char text[TKSHM_CHANGE_TEXT_MAX];
} tkshm_change;

/** Opens the table at `path`, creating it if TKSHM_O_CREATE is set and it
 *  does not exist.  A path without a '/' names a file in TKSHM_DEFAULT_DIR.
 *  A NULL path creates an anonymous table (MAP_SHARED|MAP_ANONYMOUS) that
 *  is shared with the children forked after this call (the prefork pattern).
 *
 *  Creation is race-free: the segment is built and fully allocated under no
 *  name (O_TMPFILE, or a private temporary name) and then linked to `path`;
 *  whoever links first wins and every other creator attaches to the winner's
 *  segment, so no process ever sees a half-built table.  The file gets
 *  `mode` (default 0600) and `gid`, is never opened through a symbolic link
 *  (TKSHM_ESYMLINK), and is allocated up front, so a full disk fails here
 *  (TKSHM_ENOSPC) and never later with SIGBUS.
 *
 *  Attaching validates magic, layout version, header checksum, geometry,
 *  the stored policy and the file size, and refuses any mismatch with its own
 *  code: TKSHM_EBADMAGIC, TKSHM_EVERSION, TKSHM_ESIZE, TKSHM_ECORRUPT.
 *  A policy or a larger `slots` that differs from the table's is applied to
 *  the live table as tkshm_apply() does (opts->change says what was done),
 *  or refused with TKSHM_EMISMATCH under TKSHM_O_KEEP.  A read-only open
 *  never changes a table: a difference is TKSHM_EMISMATCH.
 *
 *  @param opts  NULL means TKSHM_OPTIONS_INIT (which cannot create: no policy).
 *  @param out   receives the handle; unchanged on error.
 *  @return TKSHM_OK or a negative tkshm_error.
 *  Threads: safe (each call makes its own handle).
 *  Processes: any number may open one path at once; all end up on one
 *  segment.  Crash: a creator killed before linking leaves only an unnamed
 *  inode, which the kernel frees; nothing half-built is ever visible. */
TKSHM_API int tkshm_open(const char *path, const tkshm_options *opts,
			 tkshm_table **out);

/** Unmaps the table and frees the handle.  The shared state stays (for a file
 *  until it is removed; for an anonymous table until its last process
 *  unmaps it).  NULL is accepted and ignored.
 *  Threads: no other thread may use the handle during or after the call.
 *  Processes: others using the table are unaffected.  Crash: the segment is
 *  not written by close, so there is nothing to leave half done. */
TKSHM_API int tkshm_close(tkshm_table *t);

/** The name of a change's kind, as the bindings and tkshm-inspect show it:
 *  "none", "create", "in_place" or "replace" ("unknown" for any other
 *  value).  Never NULL.  Threads: safe. */
TKSHM_API const char *tkshm_change_name(tkshm_change_kind kind);

/** Says what tkshm_open(path, opts) would do to the table at `path`,
 *  changing nothing: *out is filled as opts->change would be (CREATE when
 *  there is no table).  For configuration tests ("apache2 -t", "nginx -t").
 *  @return TKSHM_OK, or the error tkshm_open() would return (an invalid
 *  policy, a file that is not a table, ...).  Threads and processes: safe;
 *  it reads the table's header only. */
TKSHM_API int tkshm_plan(const char *path, const tkshm_options *opts,
			 tkshm_change *out);

/** Changes the policy and/or the size of a live table, for every process
 *  attached to it, without a restart and without losing state.
 *
 *  - Same kind and same state shape (gcra's limit, periodMs or burst; a
 *    window's limit or windowMs; a bucket's capacity or rate; the
 *    cross-host prefix, failure policy, hosts or lease): the policy is
 *    written in place (TKSHM_CHANGE_IN_PLACE); states are kept and read
 *    under the new policy.
 *  - Another kind or state shape, or more slots: a new table with the same
 *    hash seed is published under the same path (rename), and every key is
 *    carried over, converted where the kinds allow (TKSHM_CHANGE_REPLACE).
 *    No admission is lost: a key is sealed in the old table as it is
 *    carried, and a process still on the old table follows the path on its
 *    next call.  docs/lifecycle.md gives the protocol and its bounds.
 *
 *  Every attached process notices a change on its next call (one load of a
 *  shared word per call) and follows; other threads of a process that are
 *  mid-call on the old mapping finish on it (read-copy-update: the old
 *  mapping is released after a grace period).
 *
 *  @param policy  the new policy, or NULL to keep the table's.
 *  @param slots   the new capacity, or 0 to keep it; smaller than the
 *                 table's is TKSHM_EINVAL (tables do not shrink).
 *  @param out     optional: what was done.
 *  @return TKSHM_OK; TKSHM_EPOLICY (errbuf-less: see tkshm_plan for a
 *          sentence), TKSHM_EINVAL, TKSHM_EREADONLY, TKSHM_EBUSY (another
 *          process is changing the table and did not finish within a
 *          second), or a system error (TKSHM_ENOSPC, TKSHM_EPERM, ...).
 *          On error nothing changed.
 *
 *  An anonymous table has no path to follow: an in-place change reaches
 *  every process sharing it, but a replacement is made for the calling
 *  process only (the handle moves to a new anonymous table carrying every
 *  key's state as it is at the call); processes forked before keep the
 *  old table until they exit (an Apache graceful restart's old
 *  generation).  Children forked after the call share the new one.
 *  Threads: safe.  Processes: changes are serialised by a writer word held
 *  by a live process; a writer killed at any step leaves a usable table
 *  (the next writer or opener finishes or discards its work). */
TKSHM_API int tkshm_apply(tkshm_table *t, const tkshm_policy *policy,
			  uint64_t slots, tkshm_change *out);

/** tkshm_apply() at `now_ms` (tkshm_apply reads the clock): the time, in
 *  the time base of the table's checks, at which a replacement converts
 *  the keys it carries to another kind (what a key owes then is owed
 *  under the new policy, paid at its pace).  Tables checked with injected
 *  times change with this form.
 *  @return as tkshm_apply(); TKSHM_ENOW for a now_ms that is NaN,
 *  negative or above TKSHM_NOW_MAX. */
TKSHM_API int tkshm_apply_at(tkshm_table *t, const tkshm_policy *policy,
			     uint64_t slots, double now_ms, tkshm_change *out);

/* ---------------------------------------------------------------------------
 * Decisions
 * ------------------------------------------------------------------------- */

/** Flags reported in tkshm_decision.flags. */
#define TKSHM_DECISION_EVICTED_DEBTOR \
	0x1u /**< to make room, this check
						evicted a key that was in debt
						(its debt is remembered) */
#define TKSHM_DECISION_DEBT_RESTORED \
	0x2u /**< the key was absent and started
						from debt remembered from an
						eviction */
/** Strict: denied by the table's negative cache, without asking Redis.
 *  Redis would deny too.  Other hosts may have consumed since the cached
 *  reply, so the fields are bounds: remaining 0; retry_after_ms and
 *  reset_at the latest that any state Redis can hold gives, never
 *  earlier than Redis's own (docs/redis-negative-cache.md). */
#define TKSHM_DECISION_CACHED 0x4u
/** Strict or lease: decided by the failure policy (Redis unreachable). */
#define TKSHM_DECISION_FALLBACK 0x8u
/** Lease: the key had no leased budget left (yet); denied locally while
 *  tkshm-syncd leases more. */
#define TKSHM_DECISION_NO_LEASE 0x10u

/** The result of one check, with ThrottleKit's fields, all integers. */
typedef struct tkshm_decision {
	bool allowed;		/**< admitted (and consumed) */
	int64_t limit;		/**< the effective ceiling (GCRA: burst) */
	int64_t remaining;	/**< whole units left; never negative */
	int64_t reset_at;	/**< epoch ms of full replenishment */
	int64_t retry_after_ms; /**< 0 when allowed */
	uint32_t flags;		/**< TKSHM_DECISION_* */
} tkshm_decision;

/** One element of a batch. */
typedef struct tkshm_request {
	const void *key;
	size_t key_len;
	double cost;
} tkshm_request;

/** Milliseconds since the Unix epoch from CLOCK_REALTIME, with sub-ms
 *  fraction.  The clock the `_at`-less calls use.  Never fails. */
TKSHM_API double tkshm_now_ms(void);

/** Checks `key` against the table's policy at `now_ms`, consuming `cost`
 *  if admitted.  A denial consumes nothing and writes nothing.
 *  @param key      1..TKSHM_KEY_MAX arbitrary bytes.
 *  @param cost     finite, > 0, <= TKSHM_COST_MAX; fractions allowed
 *                  except by tokenBudget (whole tokens; TKSHM_ECOST).
 *  @param now_ms   finite, >= 0.
 *  @param out      receives the decision.
 *  @return TKSHM_OK when a decision was made (read out->allowed);
 *  TKSHM_ENULL, TKSHM_EKEYEMPTY, TKSHM_EKEYLONG, TKSHM_ECOST, TKSHM_ENOW for
 *  bad input (nothing changed); TKSHM_EREADONLY on a read-only handle;
 *  TKSHM_EFULL when the window is full and the table refuses to evict;
 *  TKSHM_EBUSY if contention did not settle (the caller fails open or
 *  closed; this takes thousands of colliding writers, or for an algorithm
 *  with a wide state, 4096 lost races and then 250 ms more of losing).
 *  Threads: safe.  Processes: safe; concurrent checks of one key never admit
 *  more than the policy allows, whatever their interleaving, as long as the
 *  callers' `now` values agree with the order of their calls (true for one
 *  clock read just before the call).  A slot is judged idle by the `now` of
 *  whoever looks at it, so a caller whose `now` lags the others by s ms can
 *  see a key restart from absent and gain at most s / T of an admission.
 *  Crash: a process killed anywhere in the call leaves the table valid; at
 *  worst its own admission was recorded without being reported. */
TKSHM_API int tkshm_check_at(tkshm_table *t, const void *key, size_t key_len,
			     double cost, double now_ms, tkshm_decision *out);

/** tkshm_check_at() with now_ms = tkshm_now_ms(). */
TKSHM_API int tkshm_check(tkshm_table *t, const void *key, size_t key_len,
			  double cost, tkshm_decision *out);

/** A key hashed once for one table, for callers that check the same key
 *  many times (a connection's client address, a worker's API key): a check
 *  of a hashed key skips hashing.  Fill it with tkshm_key_hash(); the
 *  fields are private.  It holds no pointer to the key's bytes (only the
 *  first TKSHM_LABEL_MAX of them, for the table's label), so it may outlive
 *  them.  Valid for the table it was hashed for, and for every handle on
 *  the same table file; other tables refuse it with TKSHM_EINVAL. */
typedef struct tkshm_key {
	uint64_t fp_;	/* private: the key's fingerprint in that table */
	uint64_t seed_; /* private: that table's hash seed */
	uint32_t len_;	/* private: the key's length */
	unsigned char prefix_[19]; /* private: its first bytes */
} tkshm_key;

/** Hashes `key` for table `t` into *out.
 *  @return TKSHM_OK; TKSHM_ENULL, TKSHM_EKEYEMPTY, TKSHM_EKEYLONG for bad
 *  input (*out unchanged).  Threads, Processes: safe (reads the handle
 *  only).  Crash: nothing written. */
TKSHM_API int tkshm_key_hash(const tkshm_table *t, const void *key,
			     size_t key_len, tkshm_key *out);

/** tkshm_check_at() of a hashed key: the same decision, contract and
 *  errors, without hashing; TKSHM_EINVAL if `key` was hashed for another
 *  table. */
TKSHM_API int tkshm_check_hashed_at(tkshm_table *t, const tkshm_key *key,
				    double cost, double now_ms,
				    tkshm_decision *out);

/** tkshm_check_hashed_at() with now_ms = tkshm_now_ms(). */
TKSHM_API int tkshm_check_hashed(tkshm_table *t, const tkshm_key *key,
				 double cost, tkshm_decision *out);

/** Checks `n` requests at one instant; out[i] is the decision for reqs[i].
 *  Every request is validated first: if any is invalid, the call returns
 *  its error and checks nothing.  Otherwise each request is checked in input
 *  order (a key repeated in the batch sees its earlier consumption).
 *  If a check fails with TKSHM_EFULL or TKSHM_EBUSY, the requests before it
 *  stand and the call returns that error; `*done` (if not NULL) receives
 *  the number of decisions made.  Threads, Processes, Crash: as
 *  tkshm_check_at(). */
TKSHM_API int tkshm_check_many_at(tkshm_table *t, const tkshm_request *reqs,
				  size_t n, double now_ms, tkshm_decision *out,
				  size_t *done);

/** tkshm_check_many_at() with one read of the system clock. */
TKSHM_API int tkshm_check_many(tkshm_table *t, const tkshm_request *reqs,
			       size_t n, tkshm_decision *out, size_t *done);

/** What a check of cost 1 would decide now, without consuming or writing
 *  (ThrottleKit's peek: allowed == remaining >= 1).  Works on read-only
 *  handles.  Errors as tkshm_check_at() minus the write-side ones.
 *  Threads: safe.  Processes: safe.  Crash: nothing written. */
TKSHM_API int tkshm_peek_at(tkshm_table *t, const void *key, size_t key_len,
			    double now_ms, tkshm_decision *out);

/** tkshm_peek_at() with the system clock. */
TKSHM_API int tkshm_peek(tkshm_table *t, const void *key, size_t key_len,
			 tkshm_decision *out);

/** ThrottleKit's Forecast: a projection of one key for requests of one
 *  cost, in whole units and whole epoch ms. */
typedef struct tkshm_forecast {
	int64_t spendable_now;	   /**< checks of `cost` admitted in a row at
				      now (saturates at 2^31) */
	int64_t next_replenish_at; /**< first ms a peek shows one more whole
				      unit than now (full_at if none) */
	int64_t full_at;	   /**< first ms the key decides as an absent
				      key does */
} tkshm_forecast;

/** Projects `key` at `now_ms` for requests of `cost`, consuming nothing and
 *  writing nothing (every algorithm; formulas in
 *  src/algorithms/forecast.h).  Works on read-only handles.
 *  @return TKSHM_OK; TKSHM_ENULL, TKSHM_EKEYEMPTY, TKSHM_EKEYLONG,
 *  TKSHM_ECOST, TKSHM_ENOW for bad input; TKSHM_ECORRUPT if the key's
 *  state is not valid; TKSHM_EBUSY if its record kept moving.
 *  Threads, Processes: safe.  Crash: nothing written. */
TKSHM_API int tkshm_forecast_at(tkshm_table *t, const void *key, size_t key_len,
				double cost, double now_ms,
				tkshm_forecast *out);

/** tkshm_forecast_at() with the system clock. */
TKSHM_API int tkshm_forecast_get(tkshm_table *t, const void *key,
				 size_t key_len, double cost,
				 tkshm_forecast *out);

/** Forgets `key`: its next check starts fresh.  Also clears the remembered
 *  debt of its hash cell (shared with the few keys that hash to the same
 *  cell, so a reset may forgive their evicted debt too).  Resetting an absent
 *  key succeeds.  Errors: TKSHM_ENULL, TKSHM_EKEYEMPTY, TKSHM_EKEYLONG,
 *  TKSHM_EREADONLY, TKSHM_EBUSY.
 *  Threads, Processes: safe.  Crash: the key is either reset or not. */
TKSHM_API int tkshm_reset(tkshm_table *t, const void *key, size_t key_len);

/* ---------------------------------------------------------------------------
 * Multi-dimensional limits
 * ------------------------------------------------------------------------- */

/** How several dimensions combine (ThrottleKit's multi). */
typedef enum tkshm_multi_mode {
	/** Admit only if every dimension admits; consume nothing otherwise. */
	TKSHM_MULTI_ALL = 1,
	/** Admit if any dimension admits; consume only where admitted. */
	TKSHM_MULTI_ANY = 2,
} tkshm_multi_mode;

/** The most dimensions one multi check takes. */
#define TKSHM_MULTI_MAX 16

/** One dimension: a key of a table (whose policy applies) and a cost. */
typedef struct tkshm_dimension {
	tkshm_table *table;
	const void *key;
	size_t key_len;
	double cost;
} tkshm_dimension;

/** Checks `n` dimensions (1..TKSHM_MULTI_MAX, tables may differ) at one
 *  instant and combines them.  *out receives the binding decision, by
 *  ThrottleKit's rules: `all` and every dimension admits: the one with the
 *  smallest remaining; `all` and some deny: the denier with the largest
 *  retry-after (nothing is consumed anywhere); `any` and some admit: the
 *  admitter with the largest remaining; `any` and all deny: the one with the
 *  smallest retry-after.  Ties go to the earlier dimension.
 *  @param each     optional, n decisions: what each dimension decided (in
 *                  `all` mode with a denial, what it would have decided;
 *                  nothing was consumed).
 *  @param binding  optional: index of the binding dimension.
 *  A key named by several dimensions (the same key of one table, or of two
 *  handles of one table file; the same key in two tables is two keys) is
 *  checked by each of them in turn, as the same checks one after another
 *  would be: each sees what the earlier ones took.  `all` with {k, 2}
 *  three times on a fresh fixedWindow key of limit 5 is denied by the
 *  third (2 + 2 + 2 > 5) and consumes nothing; `any` consumes 4.  The
 *  decisions are the Redis multi script's, field for field: `all` first
 *  decides every dimension on the stored states as if it were alone; if
 *  one denies, those are the decisions.  Otherwise it decides them again
 *  in order, each on the state the earlier ones would leave; the first
 *  that denies then ends it (the dimensions after it keep their first
 *  decisions); nothing is written unless all admit.
 *  `all` decides every dimension without writing, then commits them in
 *  order; if a commit loses a race and now denies, the earlier commits are
 *  given back (exactly when nobody touched the key since, otherwise
 *  conservatively) and the whole check is decided again.  Rollbacks are
 *  counted in tkshm_stats.multi_rollbacks.  Each decision that stands is
 *  counted once in its table's tkshm_stats: a dimension consumed in
 *  `allowed`, a denier in `denied`; in a denied `all` the dimensions that
 *  would have admitted count in neither.
 *  @return TKSHM_OK, or any error of tkshm_check_at() (all dimensions are
 *  validated first: bad input changes nothing); TKSHM_EINVAL for n out of
 *  range or an unknown mode.  On TKSHM_EFULL/TKSHM_EBUSY during commits, the
 *  commits made are given back.
 *  Threads, Processes: safe; no dimension is ever admitted beyond its policy.
 *  Crash: a process killed between commits leaves those commits consumed
 *  (never more than the request asked for; the request is not admitted). */
TKSHM_API int tkshm_check_multi_at(tkshm_multi_mode mode,
				   const tkshm_dimension *dims, size_t n,
				   double now_ms, tkshm_decision *out,
				   tkshm_decision *each, size_t *binding);

/** tkshm_check_multi_at() with one read of the system clock. */
TKSHM_API int tkshm_check_multi(tkshm_multi_mode mode,
				const tkshm_dimension *dims, size_t n,
				tkshm_decision *out, tkshm_decision *each,
				size_t *binding);

/* ---------------------------------------------------------------------------
 * The shaper (leakyBucket tables)
 * ------------------------------------------------------------------------- */

/** What a reservation decided (ThrottleKit's {accepted, delayMs}). */
typedef struct tkshm_reservation {
	/** The request has a departure slot (and consumed it). */
	bool accepted;
	/** ThrottleKit's delayMs.  Accepted: ceil(the wait before this
	 *  request may go).  Rejected: ceil(the wait beyond maxQueueMs),
	 *  after which it would be accepted. */
	int64_t delay_ms;
	/** Rejected: delay_ms; accepted: 0. */
	int64_t retry_after_ms;
	/** Accepted: the exact wait, departure - now, in ms (what
	 *  tkshm_schedule sleeps); after TKSHM_EINTR, the part of it still
	 *  to wait.  Rejected: 0. */
	double wait_ms;
} tkshm_reservation;

/** Reserves a departure for `cost` units of `key` at `now_ms` in a
 *  leakyBucket table, by ThrottleKit's formulas: T = 1000 / ratePerSec,
 *  departure = max(state, now); a request whose wait (departure - now)
 *  exceeds maxQueueMs is rejected and writes nothing; otherwise the
 *  key's next departure becomes departure + T * cost.  Admission looks at
 *  the wait before this request, so a cost larger than the queue is
 *  accepted when the queue is empty.  The caller waits out->wait_ms
 *  (tkshm_schedule does it).
 *  @return TKSHM_OK (read out->accepted); TKSHM_ENOTSUP if the table is not
 *  a leakyBucket table; input errors as tkshm_check_at(); TKSHM_EREADONLY,
 *  TKSHM_EFULL, TKSHM_EBUSY.
 *  Threads, Processes: safe; the departures of all processes are spaced
 *  T * cost apart (one CAS per reservation).  Crash: as tkshm_check_at(). */
TKSHM_API int tkshm_reserve_at(tkshm_table *t, const void *key, size_t key_len,
			       double cost, double now_ms,
			       tkshm_reservation *out);

/** tkshm_reserve_at() with now_ms = tkshm_now_ms(). */
TKSHM_API int tkshm_reserve(tkshm_table *t, const void *key, size_t key_len,
			    double cost, tkshm_reservation *out);

/** Reserves as tkshm_reserve_at(), then, if accepted, sleeps until the
 *  departure: out->wait_ms after the call began, on CLOCK_MONOTONIC with
 *  an absolute deadline (clock_nanosleep), so it never returns early and
 *  a wait of any length (days, years) is slept in full.  A rejection
 *  returns at once with out->accepted false and the retry-after.
 *  @return TKSHM_OK; TKSHM_EINTR when a signal handler interrupted the
 *  sleep: the reservation stands and out->wait_ms is the time still to
 *  wait; errors as tkshm_reserve_at(); TKSHM_ESYSTEM if the monotonic
 *  clock cannot be read or slept on (the reservation stands).
 *  Threads: safe (each caller sleeps on its own).  Processes, Crash: as
 *  tkshm_reserve_at(). */
TKSHM_API int tkshm_schedule_at(tkshm_table *t, const void *key, size_t key_len,
				double cost, double now_ms,
				tkshm_reservation *out);

/** tkshm_schedule_at() with now_ms = tkshm_now_ms(). */
TKSHM_API int tkshm_schedule(tkshm_table *t, const void *key, size_t key_len,
			     double cost, tkshm_reservation *out);

/* ---------------------------------------------------------------------------
 * Concurrency limits (concurrency and adaptiveConcurrency tables)
 * ------------------------------------------------------------------------- */

/** A permit: proof that the caller holds one unit of a key's concurrency.
 *  Filled by tkshm_acquire_at(); fields are private.  It names the holding
 *  process, so a permit acquired before fork() is the parent's: the child
 *  cannot release it (TKSHM_ENOTHELD). */
typedef struct tkshm_permit {
	uint64_t fp_;	       /* private: the key's fingerprint */
	uint64_t seed_;	       /* private: the table's hash seed */
	uint64_t holder_;      /* private: the holder word written */
	uint64_t serial_;      /* private: this process's acquisition */
	uint64_t epoch_;       /* private: the table's permit epoch */
	double acquired_ms_;   /* private: the acquire's now */
	double acquired_mono_; /* private: monotonic ms at acquire */
	uint32_t cell_;	       /* private: the permit's cell */
	uint32_t state_;       /* private: held or not */
} tkshm_permit;

/** How the work done under a permit went, for an adaptive limit. */
typedef enum tkshm_outcome {
	/** Completed: its latency is a sample. */
	TKSHM_OUTCOME_SUCCESS = 0,
	/** Failed from overload (a timeout, a 503): AIMD backs off;
	 *  gradient2 takes the latency as a sample. */
	TKSHM_OUTCOME_DROPPED = 1,
	/** Not a sample (the work failed for its own reasons). */
	TKSHM_OUTCOME_IGNORE = 2,
} tkshm_outcome;

/** Takes one permit of `key` at `now_ms` if fewer than the limit are held.
 *  A refusal writes nothing, except that it may first take back the
 *  permits of holders that died (see below).
 *  out->allowed says whether *permit was filled; out->limit is the limit
 *  in force (an adaptive limit's floor), out->remaining the permits left
 *  after this one; reset_at is ceil(now_ms) and retry_after_ms is 0: a
 *  permit comes back when a holder releases it, not at a time.
 *
 *  Holders that die.  Each permit is a state word naming its process by
 *  pid and start time (from /proc/PID/stat) and the host's boot, so a pid
 *  reused by a new process never passes for the dead holder.  A refused
 *  acquire checks the holders of the key (at most once every
 *  TKSHM_REAP_INTERVAL_MS per handle) and takes back the permits of every
 *  process that no longer runs (exited, killed, or a zombie).  A permit of
 *  a process that died is therefore back within TKSHM_REAP_INTERVAL_MS of
 *  the first refused acquire after the death; a stopped (SIGSTOP) or busy
 *  holder keeps its permits.  Processes that share a table must share one
 *  pid namespace.
 *  @return TKSHM_OK; TKSHM_ENOTSUP unless the table is a concurrency or
 *  adaptiveConcurrency table; TKSHM_ENULL, TKSHM_EKEYEMPTY, TKSHM_EKEYLONG,
 *  TKSHM_ENOW; TKSHM_EREADONLY, TKSHM_EFULL (no slot for a new key),
 *  TKSHM_EBUSY; TKSHM_ESYSTEM if /proc/self/stat cannot be read.
 *  Threads, Processes: safe; the permits held never exceed the limit in
 *  force when each was granted, whatever the interleaving.
 *  Crash: a process killed in the call holds at most the permit it was
 *  taking, which is taken back as above. */
TKSHM_API int tkshm_acquire_at(tkshm_table *t, const void *key, size_t key_len,
			       double now_ms, tkshm_permit *permit,
			       tkshm_decision *out);

/** tkshm_acquire_at() with now_ms = tkshm_now_ms(). */
TKSHM_API int tkshm_acquire(tkshm_table *t, const void *key, size_t key_len,
			    tkshm_permit *permit, tkshm_decision *out);

/** How often a handle checks for dead holders, at most. */
#define TKSHM_REAP_INTERVAL_MS 100

/** Gives back a permit, exactly once: the permit is marked released and a
 *  second release (of it or of a copy) returns TKSHM_ENOTHELD, as does a
 *  permit taken back after its holder was judged dead, acquired by
 *  another process, or acquired before the table was replaced by one
 *  whose limit does not carry the permits held (docs/lifecycle.md).  For an adaptive limit, the latency now_ms minus the
 *  acquire's now_ms is a sample (unless `outcome` is IGNORE or it is not
 *  positive).
 *  @return TKSHM_OK; TKSHM_ENOTHELD (nothing changed); TKSHM_ENULL,
 *  TKSHM_ENOW, TKSHM_EINVAL (an unknown outcome, or a permit of another
 *  table); TKSHM_EREADONLY, TKSHM_EBUSY.
 *  Threads, Processes: safe.  Crash: the permit is released or not; if
 *  not, it is taken back when the process is found dead. */
TKSHM_API int tkshm_release_at(tkshm_table *t, tkshm_permit *permit,
			       double now_ms, tkshm_outcome outcome);

/** tkshm_release_at() with now_ms = tkshm_now_ms(); the latency sample is
 *  measured on CLOCK_MONOTONIC from the acquire. */
TKSHM_API int tkshm_release(tkshm_table *t, tkshm_permit *permit,
			    tkshm_outcome outcome);

/** Takes back, in every key of a concurrency table, the permits of
 *  processes that no longer run (what a refused acquire does for its key,
 *  for a supervisor to call when it likes).
 *  @param reaped  if not NULL, receives the number of permits taken back.
 *  @return TKSHM_OK; TKSHM_ENOTSUP, TKSHM_ENULL, TKSHM_EREADONLY,
 *  TKSHM_EBUSY.  Threads, Processes: safe.  Crash: each key's permits are
 *  taken back or not. */
TKSHM_API int tkshm_reap(tkshm_table *t, uint64_t *reaped);

/* ---------------------------------------------------------------------------
 * Introspection
 * ------------------------------------------------------------------------- */

/** Counters and geometry of a table.  Counters are summed over shards that
 *  processes update without a shared hot line, so a sum taken while others
 *  work is a consistent-enough snapshot, not an atomic one. */
typedef struct tkshm_stats {
	/** Decisions.  A multi-dimension check counts its decisions once they
	 *  stand (tkshm_check_multi_at): a commit given back is not in
	 *  `allowed` (see multi_rollbacks). */
	uint64_t allowed, denied;
	uint64_t inserts;	    /**< keys inserted (including re-inserts) */
	uint64_t reclaims;	    /**< idle slots taken over by another key */
	uint64_t evictions;	    /**< live keys evicted to make room */
	uint64_t evictions_in_debt; /**< ... of which were in debt */
	uint64_t
		debt_restores; /**< inserts that started from remembered debt */
	uint64_t cas_retries;  /**< compare-and-swaps lost to another writer */
	uint64_t refusals;     /**< TKSHM_EFULL returned */
	uint64_t
		duplicates_killed; /**< concurrent placeholders of one key retired */
	uint64_t resets;
	/** Multi-dimension commits undone because a later dimension of an
	 *  `all` lost a race, or an error stopped the check (each was given
	 *  back; others may have been denied while it held its units). */
	uint64_t multi_rollbacks;
	uint64_t claims_stolen; /**< wide states: claims taken over from a
				   stopped or dead writer (W2) */
	uint64_t releases;	/**< permits given back by their holders (a
			      granted acquire counts in `allowed`, a refused
			      one in `denied`) */
	uint64_t reaped;	/**< permits taken back from dead holders */
	/** The cross-host tier (zero for local tables). */
	struct {
		uint64_t redis_calls;	   /**< commands sent to Redis */
		uint64_t redis_errors;	   /**< ... that failed: refused,
					     timed out, lost, error reply,
					     no valid answer */
		uint64_t noscript_reloads; /**< scripts reloaded on NOSCRIPT */
		uint64_t breaker_opens;	   /**< times the circuit opened */
		uint64_t cache_denials;	   /**< strict: denied from the
					     negative cache */
		uint64_t
			fallback_allowed; /**< admitted by the failure policy */
		uint64_t fallback_denied; /**< denied by the failure policy */
		uint64_t no_lease;	  /**< lease: denied for want of
					     leased budget */
		uint64_t leases;	  /**< lease: grants written */
		uint64_t lease_units;	  /**< lease: units granted */
		uint64_t lease_round_trips;   /**< lease: the agent's round
					     trips to Redis */
		uint64_t lease_units_expired; /**< lease: units unspent when
						their lease ended */
		uint64_t hosts; /**< last known number of hosts, 0: unknown */
		bool redis_up;	/**< the last exchange with Redis worked */
		int64_t agent_pid; /**< tkshm-syncd serving the table, 0: none */
		double agent_beat_ms; /**< its last heartbeat (epoch ms) */
	} global;
	/* geometry (immutable) */
	uint64_t slots, buckets, debt_cells, file_bytes;
	double bytes_per_key; /**< file_bytes / slots */
	double created_ms;
	uint32_t layout_version;
	tkshm_on_full on_full;
	tkshm_policy policy;
	bool anonymous;
} tkshm_stats;

/** Fills `out`.  Works on read-only handles.  Errors: TKSHM_ENULL.
 *  Threads, Processes: safe.  Crash: nothing written. */
TKSHM_API int tkshm_stats_get(tkshm_table *t, tkshm_stats *out);

/** Longest probe distance tracked in tkshm_usage.probe_hist. */
#define TKSHM_WINDOW_SLOTS 8

/** A scan of every slot at one instant (O(slots), read-only). */
typedef struct tkshm_usage {
	uint64_t live;	/**< keys whose state is not yet idle */
	uint64_t idle;	/**< keys whose state equals absent (reclaimable) */
	uint64_t empty; /**< never-used slots */
	uint64_t
		placeholders; /**< inserts in progress (or abandoned by a crash) */
	uint64_t dead;	      /**< retired placeholders, reclaimable */
	uint64_t probe_hist[TKSHM_WINDOW_SLOTS]; /**< keys (live or idle) by
						    position in their window */
} tkshm_usage;

/** Scans the table at `now_ms`.  Errors: TKSHM_ENULL, TKSHM_ENOW.
 *  Threads, Processes: safe.  Crash: nothing written. */
TKSHM_API int tkshm_usage_get(tkshm_table *t, double now_ms, tkshm_usage *out);

/** The most key bytes a table keeps for display (tkshm_entry.label). */
#define TKSHM_LABEL_MAX 19

/** How many holders a tkshm_entry lists. */
#define TKSHM_ENTRY_HOLDERS 8

/** One key of a table as an operator sees it, read without a lock
 *  (tkshm_entry_next_at, tkshm_entry_get_at). */
typedef struct tkshm_entry {
	uint64_t slot;	      /**< the slot's index, 0..slots-1 */
	uint64_t fingerprint; /**< the key's keyed 64-bit hash */
	/** The key's length in bytes (255: 255 or more); 0 when the table
	 *  holds no intact label for it (an insert racing the read, or a
	 *  process killed while writing the label). */
	uint32_t key_len;
	uint32_t label_len; /**< bytes of label[]: min(key_len, LABEL_MAX) */
	unsigned char label[TKSHM_LABEL_MAX]; /**< the key's first bytes */
	uint32_t probe;	  /**< position in the key's window, 0..7 */
	bool misplaced;	  /**< the slot is outside its fingerprint's window
			    (a corrupt table; verify reports it) */
	bool state_valid; /**< false: the stored state is not one the
			     algorithm accepts (corrupt); nothing below
			     is filled */
	bool idle;	  /**< the state decides as an absent key's does */
	/** Denials of this key since it was inserted.  A display tally, not
	 *  a read-modify-write: simultaneous denials in several processes
	 *  may count once; it never counts denials of another key. */
	uint64_t denials;
	/** Milliseconds until the key is as good as new (0 when idle):
	 *  what eviction ranks keys by, and what TKSHM_ON_FULL_EVICT
	 *  remembers of an evicted key. */
	double debt_ms;
	tkshm_decision peek;	 /**< what a cost-1 check would decide */
	tkshm_forecast forecast; /**< for cost 1 */
	/** Concurrency kinds: permits held, the limit in force, and the
	 *  processes holding them (the first TKSHM_ENTRY_HOLDERS by pid;
	 *  holders_n counts them all).  An adaptive limit's value and
	 *  rttNoLoad (0 before the first sample).  All 0 for other kinds. */
	uint32_t permits_held;
	uint32_t holders_n;
	struct {
		int32_t pid;
		uint32_t permits;
	} holders[TKSHM_ENTRY_HOLDERS];
	double adaptive_limit;
	double rtt_noload_ms;
} tkshm_entry;

/** Walks the keys of a table: fills *out with the first key whose slot
 *  index is >= *cursor and sets *cursor past it.  Start with *cursor = 0.
 *  Keys inserted, reclaimed or moved during a walk may be missed or seen
 *  twice; every key present throughout is seen exactly once.  Idle keys
 *  are included (out->idle), and so are keys with a corrupt state
 *  (out->state_valid false).  Works on read-only handles.
 *  @return TKSHM_OK; TKSHM_ENOENT when no key is left; TKSHM_ENULL,
 *  TKSHM_ENOW.  Threads, Processes: safe; never waits for a writer.
 *  Crash: nothing written. */
TKSHM_API int tkshm_entry_next_at(tkshm_table *t, uint64_t *cursor,
				  double now_ms, tkshm_entry *out);

/** Fills *out for `key`.  @return TKSHM_OK; TKSHM_ECORRUPT when the key's
 *  stored state is corrupt, as a check of it returns (*out is filled up to
 *  state_valid, which is false, so the key can still be shown);
 *  TKSHM_ENOENT when the key has no slot (tkshm_peek_at still shows what a
 *  check would see, including remembered debt); TKSHM_EBUSY when its record
 *  kept moving; input errors as tkshm_peek_at().  Threads, Processes, Crash: as tkshm_entry_next_at. */
TKSHM_API int tkshm_entry_get_at(tkshm_table *t, const void *key,
				 size_t key_len, double now_ms,
				 tkshm_entry *out);

/** An operator's override: makes `key` hold `remaining` units at `now_ms`,
 *  as if an absent key had just spent limit - remaining (so it refills from
 *  there as the policy says).  `remaining` equal to the limit is a reset.
 *  The key is inserted if absent (an absent key with remembered debt has
 *  its debt cell cleared, as tkshm_reset does).  One atomic transition of
 *  the key, like a check; concurrent checks see the state before or after.
 *  @param remaining  0 <= remaining <= the limit (GCRA: burst, a bucket:
 *                    capacity, a tokenBudget: whole tokens).
 *  @return TKSHM_OK; TKSHM_EINVAL for remaining out of range; input errors
 *  as tkshm_check_at(); TKSHM_EREADONLY, TKSHM_EFULL, TKSHM_EBUSY.
 *  Threads, Processes: safe.  Crash: the key is set or not. */
TKSHM_API int tkshm_set_remaining_at(tkshm_table *t, const void *key,
				     size_t key_len, double remaining,
				     double now_ms);

/** Blocks `key`: every check of cost >= 1 before `until_ms` is denied;
 *  afterwards it replenishes as the policy says: GCRA admits at until_ms
 *  (its retry-after points there), a token bucket refills from empty from
 *  until_ms (its retry-after points at its first whole token after it).  GCRA and token bucket only: windowed algorithms restart
 *  with every window and have no state that means "blocked for longer".
 *  @return TKSHM_OK; TKSHM_ENOTSUP for other algorithms; TKSHM_EINVAL when
 *  until_ms is not finite or not after now_ms; input and write errors as
 *  tkshm_set_remaining_at().  Threads, Processes, Crash: as it. */
TKSHM_API int tkshm_block_at(tkshm_table *t, const void *key, size_t key_len,
			     double until_ms, double now_ms);

/** Receives one broken invariant per call, as a sentence. */
typedef void (*tkshm_problem_fn)(void *ctx, const char *problem);

/** Checks every invariant of the slot protocol (src/shm/protocol.h) and of
 *  the header, reading only.  Calls `fn` (if not NULL) once per problem.
 *  @param problems  if not NULL, receives the number of problems.
 *  @return TKSHM_OK if all hold, TKSHM_ECORRUPT if any is broken, TKSHM_ENULL.
 *  A table being written while it is verified may show transient states;
 *  the checked invariants hold at every instant, so a report is real.
 *  Threads, Processes: safe.  Crash: nothing written. */
TKSHM_API int tkshm_verify(tkshm_table *t, tkshm_problem_fn fn, void *ctx,
			   uint64_t *problems);

#ifdef __cplusplus
}
#endif

#endif /* TKSHM_H */
