/*
 * algo_testing.h - helpers shared by the tests of the pure algorithm
 * transitions (test_algo_*.c): reading and replaying the golden vectors,
 * one key through a transition, a deterministic PRNG, and field-by-field
 * comparisons of decisions and state words (algo_testing.c).
 *
 * Nothing here calls the code under test: the expected values of every
 * test come from the golden vectors or from a model written in the test
 * itself from docs/semantics.md.
 */
#ifndef TKSHM_TESTS_ALGO_TESTING_H
#define TKSHM_TESTS_ALGO_TESTING_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "test_support.h"
#include "base/words.h"

/* An epoch-sized now, as ThrottleKit's conformance timelines use. */
#define ALGO_EPOCH 1.7e12

/* ------------------------------------------------------------------------
 * Golden vectors
 * ---------------------------------------------------------------------- */

/* A required member, or the test fails: a renamed field must not turn into
 * a silently skipped suite. */
cJSON *gv_member(const cJSON *obj, const char *name);
double gv_number(const cJSON *obj, const char *name);
/* An integral decision field (every one in the file is below 2^53). */
int64_t gv_integer(const cJSON *obj, const char *name);
/* The expected decision of one op, with `offset` added to resetAt. */
tkshm_decision gv_expect(const cJSON *op, double offset);
/* True for a rateLimit suite of strategy kind `kind`. */
bool gv_is_ratelimit(const cJSON *suite, const char *kind);
/* True for a suite whose primitive is `prim`. */
bool gv_is_primitive(const cJSON *suite, const char *prim);

/* ------------------------------------------------------------------------
 * PRNG (splitmix64): deterministic, so a failure replays identically.
 * ---------------------------------------------------------------------- */

static inline uint64_t
algo_rng(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 random bits. */
static inline double
algo_unit(uint64_t *s)
{
	return (double)(algo_rng(s) >> 11) * 0x1.0p-53;
}

static inline unsigned
algo_below(uint64_t *s, unsigned n)
{
	return (unsigned)(algo_rng(s) % n);
}

/* ------------------------------------------------------------------------
 * Comparisons
 * ---------------------------------------------------------------------- */

/* A double as a decision field: ThrottleKit's fields are integral (floor,
 * ceil), and Redis truncates a reply number to an integer. */
static inline int64_t
algo_field(double x)
{
	return (int64_t)x;
}

/* Fails unless the decision matches on every field (flags included: the
 * pure transitions set none) and remaining is not negative. */
void algo_assert_decision(const char *what, const tkshm_decision *got,
			  const tkshm_decision *want);
/* Fails unless state word `i` holds exactly the double `want`. */
void algo_assert_word(const char *what, const uint64_t *st, unsigned i,
		      double want);
/* A REAL state word never has its top 13 bits all set (I4). */
void algo_assert_real_words(const char *what, const uint64_t *st, unsigned n);

/* A word pattern no transition writes: a denial must leave it in place. */
#define ALGO_UNTOUCHED UINT64_C(0x5A5A5A5A5A5A5A5A)

/* ------------------------------------------------------------------------
 * One key through the code under test
 * ---------------------------------------------------------------------- */

/* The most state words a key here holds (the sliding log's 1 + 128). */
#define ALGO_MAX_WORDS 160

/* A transition seen through one interface: the pure check/peek/state_valid
 * of an algorithm (small adapters in each test), on its parameters `a`. */
struct algo_impl {
	const char *what; /* names the step in messages */
	unsigned words;
	const void *a;
	bool (*check)(const void *a, bool present, const uint64_t *st,
		      double now, double cost, uint64_t *out,
		      tkshm_decision *d);
	void (*peek)(const void *a, bool present, const uint64_t *st,
		     double now, tkshm_decision *d);
	bool (*valid)(const void *a, const uint64_t *st);
};

/* Defines PREFIX_impl(a, what, words): struct algo_impl for the transition
 * PREFIX_check/PREFIX_peek/PREFIX_state_valid on a `const TYPE *`. */
#define ALGO_DEFINE_IMPL(PREFIX, TYPE)                                         \
	static bool PREFIX##_check_any(                                        \
		const void *a, bool present, const uint64_t *st, double now,   \
		double cost, uint64_t *out, tkshm_decision *d)                 \
	{                                                                      \
		return PREFIX##_check((const TYPE *)a, present, st, now, cost, \
				      out, d);                                 \
	}                                                                      \
	static void PREFIX##_peek_any(const void *a, bool present,             \
				      const uint64_t *st, double now,          \
				      tkshm_decision *d)                       \
	{                                                                      \
		PREFIX##_peek((const TYPE *)a, present, st, now, d);           \
	}                                                                      \
	static bool PREFIX##_valid_any(const void *a, const uint64_t *st)      \
	{                                                                      \
		return PREFIX##_state_valid((const TYPE *)a, st);              \
	}                                                                      \
	static inline struct algo_impl PREFIX##_impl(                          \
		const TYPE *a, const char *what, unsigned words)               \
	{                                                                      \
		struct algo_impl im = { what,                                  \
					words,                                 \
					a,                                     \
					PREFIX##_check_any,                    \
					PREFIX##_peek_any,                     \
					PREFIX##_valid_any };                  \
		return im;                                                     \
	}

/*
 * check() on one key ({*present, st}): every decision field must be
 * written, ok must equal allowed and remaining must not be negative; an
 * admission must write a valid state of REAL words (copied into st), a
 * denial must leave the output words untouched.
 */
tkshm_decision algo_key_check(const struct algo_impl *im, bool *present,
			      uint64_t *st, double now, double cost);
/* peek() on one key; remaining must not be negative. */
tkshm_decision algo_key_peek(const struct algo_impl *im, bool present,
			     const uint64_t *st, double now);

/*
 * Replays every suite the golden file holds of rateLimit kind `kind` (or,
 * with kind NULL, of primitive `prim`), each on a cold key: start() gets
 * each suite and returns the transition its options make; every op is
 * decided by algo_key_check() at the op's now + offset with the op's
 * `cost` member (cost_valid, if set, must accept it), and the decision
 * must equal the op's expect (resetAt + offset) on every field
 * (algo_assert_decision).  Every suite must have ops.  Returns the number
 * of ops; *suites (if not NULL) gets the number of suites.
 */
struct algo_gv_replay {
	const char *prim, *kind, *cost;
	struct algo_impl (*start)(const cJSON *suite);
	bool (*cost_valid)(double cost);
};
unsigned algo_gv_replay(const cJSON *golden, const struct algo_gv_replay *r,
			double offset, unsigned *suites);

/* cmocka group setup/teardown: *state is the parsed golden file. */
int algo_golden_setup(void **state);
int algo_golden_teardown(void **state);

/* ------------------------------------------------------------------------
 * Calendar periods from the C library (timegm, gmtime_r: the proleptic
 * Gregorian UTC calendar), not from Hinnant's formulas
 * ---------------------------------------------------------------------- */

#define ALGO_DAY_MS 86400000.0

/* Days since 1970-01-01 of y-m-d; m may be 13 (January of y + 1). */
static inline int64_t
algo_libc_days(int64_t y, int m, int d)
{
	struct tm tm;
	time_t t;

	memset(&tm, 0, sizeof tm);
	tm.tm_year = (int)(y - 1900);
	tm.tm_mon = m - 1;
	tm.tm_mday = d;
	t = timegm(&tm);
	if (t % 86400 != 0)
		fail_msg("timegm(%lld-%02d-%02d) = %lld", (long long)y, m, d,
			 (long long)t);
	return (int64_t)t / 86400;
}

/* The civil date of day z. */
static inline struct tm
algo_libc_civil(int64_t z)
{
	time_t t = (time_t)(z * 86400);
	struct tm tm;

	if (!gmtime_r(&t, &tm))
		fail_msg("gmtime_r(%lld) failed", (long long)t);
	return tm;
}

/* Cadences, numbered as ThrottleKit's Lua modes. */
enum algo_cadence {
	ALGO_MONTH = 1,
	ALGO_WEEK = 2,
	ALGO_DAY = 3,
	ALGO_FIXED = 4,
};

/*
 * The period [*start, *reset) containing now (docs/semantics.md,
 * "Calendar periods"):
 * local midnights, weekdays and month starts come from the C library; the
 * last step, days to epoch ms at the offset, is ThrottleKit's double
 * arithmetic, as is the fixed cadence.
 */
static inline void
algo_model_period(int cadence, double now, double offset_minutes, int wso,
		  double period_ms, double anchor, double *start, double *reset)
{
	double off = offset_minutes * 60000;
	double day;
	struct tm tm;
	int64_t sd, rd;

	if (cadence == ALGO_FIXED) {
		*start = anchor + floor((now - anchor) / period_ms) * period_ms;
		*reset = *start + period_ms;
		return;
	}
	day = floor((now + off) / ALGO_DAY_MS);
	if (cadence == ALGO_DAY) {
		*start = day * ALGO_DAY_MS - off;
		*reset = (day + 1) * ALGO_DAY_MS - off;
		return;
	}
	tm = algo_libc_civil((int64_t)day);
	if (cadence == ALGO_WEEK) {
		sd = (int64_t)day - (tm.tm_wday - wso + 7) % 7;
		rd = sd + 7;
	} else {
		sd = algo_libc_days(tm.tm_year + 1900, tm.tm_mon + 1, 1);
		rd = algo_libc_days(tm.tm_year + 1900, tm.tm_mon + 2, 1);
	}
	*start = (double)sd * ALGO_DAY_MS - off;
	*reset = (double)rd * ALGO_DAY_MS - off;
}

/* Epoch ms of a UTC civil time. */
static inline double
algo_utc(int y, int mo, int d, int h, int mi)
{
	return (double)algo_libc_days(y, mo, d) * ALGO_DAY_MS + h * 3600000.0 +
	       mi * 60000.0;
}

#endif /* TKSHM_TESTS_ALGO_TESTING_H */
