/*
 * algo_testing.h - helpers shared by the tests of the pure algorithm
 * transitions (test_algo_*.c): reading the golden vectors, a deterministic
 * PRNG, and field-by-field comparisons of decisions and state words.
 *
 * Nothing here calls the code under test: the expected values of every
 * test come from the golden vectors or from a model written in the test
 * itself from shared/notes/throttlekit-semantics.md.
 */
#ifndef TKSHM_TESTS_ALGO_TESTING_H
#define TKSHM_TESTS_ALGO_TESTING_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "test_support.h"

/* An epoch-sized now, as ThrottleKit's conformance timelines use. */
#define ALGO_EPOCH 1.7e12

/* ------------------------------------------------------------------------
 * Golden vectors
 * ---------------------------------------------------------------------- */

/* A required member, or the test fails: a renamed field must not turn into
 * a silently skipped suite. */
static inline cJSON *
gv_member(const cJSON *obj, const char *name)
{
	cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, name);

	if (!m)
		fail_msg("golden vectors: member \"%s\" missing", name);
	return m;
}

static inline double
gv_number(const cJSON *obj, const char *name)
{
	cJSON *m = gv_member(obj, name);

	if (!cJSON_IsNumber(m))
		fail_msg("golden vectors: \"%s\" is not a number", name);
	return m->valuedouble;
}

/* An integral decision field (every one in the file is below 2^53). */
static inline int64_t
gv_integer(const cJSON *obj, const char *name)
{
	double v = gv_number(obj, name);

	if (v != floor(v) || fabs(v) > 9007199254740992.0)
		fail_msg("golden vectors: \"%s\" = %.17g is not an integer",
			 name, v);
	return (int64_t)v;
}

/* The expected decision of one op, with `offset` added to resetAt. */
static inline tkshm_decision
gv_expect(const cJSON *op, double offset)
{
	const cJSON *exp = gv_member(op, "expect");
	tkshm_decision d;

	memset(&d, 0, sizeof d);
	if (!cJSON_IsBool(gv_member(exp, "allowed")))
		fail_msg("golden vectors: \"allowed\" is not a boolean");
	d.allowed = cJSON_IsTrue(gv_member(exp, "allowed"));
	d.limit = gv_integer(exp, "limit");
	d.remaining = gv_integer(exp, "remaining");
	d.reset_at = gv_integer(exp, "resetAt") + (int64_t)offset;
	d.retry_after_ms = gv_integer(exp, "retryAfterMs");
	return d;
}

/* True for a rateLimit suite of strategy kind `kind`. */
static inline bool
gv_is_ratelimit(const cJSON *suite, const char *kind)
{
	const cJSON *prim =
		cJSON_GetObjectItemCaseSensitive(suite, "primitive");
	const cJSON *strat =
		cJSON_GetObjectItemCaseSensitive(suite, "strategy");
	const cJSON *k =
		strat ? cJSON_GetObjectItemCaseSensitive(strat, "kind") : NULL;

	return cJSON_IsString(prim) &&
	       strcmp(prim->valuestring, "rateLimit") == 0 &&
	       cJSON_IsString(k) && strcmp(k->valuestring, kind) == 0;
}

/* True for a suite whose primitive is `prim`. */
static inline bool
gv_is_primitive(const cJSON *suite, const char *prim)
{
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(suite, "primitive");

	return cJSON_IsString(p) && strcmp(p->valuestring, prim) == 0;
}

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

/* The exact bit pattern of a double (the state-word encoding). */
static inline uint64_t
algo_bits(double x)
{
	uint64_t w;

	memcpy(&w, &x, sizeof w);
	return w;
}

static inline double
algo_double(uint64_t w)
{
	double x;

	memcpy(&x, &w, sizeof x);
	return x;
}

/* Fails unless the decision matches on every field (flags included: the
 * pure transitions set none) and remaining is not negative. */
static inline void
algo_assert_decision(const char *what, const tkshm_decision *got,
		     const tkshm_decision *want)
{
	tkt_assert_decision(what, got, want);
	if (got->flags != 0)
		fail_msg("%s: flags %#x, want 0", what, got->flags);
	if (got->remaining < 0)
		fail_msg("%s: remaining %lld is negative", what,
			 (long long)got->remaining);
}

/* Fails unless state word `i` holds exactly the double `want`. */
static inline void
algo_assert_word(const char *what, const uint64_t *st, unsigned i, double want)
{
	if (st[i] != algo_bits(want))
		fail_msg("%s: state word %u = %.17g (%#llx), want %.17g "
			 "(%#llx)",
			 what, i, algo_double(st[i]), (unsigned long long)st[i],
			 want, (unsigned long long)algo_bits(want));
}

/* A REAL state word never has its top 13 bits all set (I4). */
static inline void
algo_assert_real_words(const char *what, const uint64_t *st, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if ((st[i] & UINT64_C(0xFFF8000000000000)) ==
		    UINT64_C(0xFFF8000000000000))
			fail_msg("%s: state word %u = %#llx has its top 13 "
				 "bits set",
				 what, i, (unsigned long long)st[i]);
}

/* A word pattern no transition writes: a denial must leave it in place. */
#define ALGO_UNTOUCHED UINT64_C(0x5A5A5A5A5A5A5A5A)

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
 * The period [*start, *reset) containing now (section 2.7 of the notes):
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
