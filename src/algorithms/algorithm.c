/*
 * algorithm.c - from a public policy to an algorithm's derived constants.
 *
 * Each kind's parameters are validated by its own _init function, in
 * ThrottleKit's order, with a sentence naming the bad parameter; this file
 * only routes a tkshm_policy's doubles to it and records the state size.
 * A quota's resetCadence is a double in the public struct: it is checked to
 * be one of the tkshm_quota_cadence values before it becomes an enum (a
 * cast of any other double would be undefined or silently wrong).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algorithms/algorithm.h"
#include "algorithms/cross_host.h"
#include "algorithms/param_check.h"
#include "algorithms/resolution.h"
#include "algorithms/rounding.h"

/* The public constants and cadence values are the algorithms' own. */
_Static_assert(TKSHM_SLIDING_LOG_MAX_LIMIT == TK_SLIDING_LOG_MAX_LIMIT,
	       "public sliding log limit");
_Static_assert(TKSHM_SLIDING_WINDOW_MAX_BUCKETS ==
		       TK_SLIDING_WINDOW_MAX_BUCKETS,
	       "public sliding window buckets");
_Static_assert(
	(int)TKSHM_QUOTA_CALENDAR_MONTH == (int)TK_QUOTA_CALENDAR_MONTH &&
		(int)TKSHM_QUOTA_CALENDAR_WEEK == (int)TK_QUOTA_CALENDAR_WEEK &&
		(int)TKSHM_QUOTA_CALENDAR_DAY == (int)TK_QUOTA_CALENDAR_DAY &&
		(int)TKSHM_QUOTA_FIXED == (int)TK_QUOTA_FIXED &&
		(int)TKSHM_QUOTA_ROLLING == (int)TK_QUOTA_ROLLING,
	"public quota cadences");

/* The quota cadence a policy's double names, or 0 when it names none. */
static enum tk_quota_cadence
tk_quota_cadence_of(double c)
{
	if (!(c >= TKSHM_QUOTA_CALENDAR_MONTH && c <= TKSHM_QUOTA_ROLLING) ||
	    c != tk_floor(c))
		return (enum tk_quota_cadence)0;
	return (enum tk_quota_cadence)(int)c;
}

int
tk_algo_init(struct tk_algo *a, const tkshm_policy *p, char *err,
	     size_t err_len)
{
	struct tk_algo tmp;
	int rc = TKSHM_EPOLICY;

	memset(&tmp, 0, sizeof tmp);
	tmp.kind = p->kind;
	switch (p->kind) {
	case TKSHM_KIND_GCRA:
		rc = tk_gcra_init(&tmp.u.gcra, p->u.gcra.limit,
				  p->u.gcra.period_ms, p->u.gcra.burst, err,
				  err_len);
		tmp.words = 1;
		break;
	case TKSHM_KIND_TOKEN_BUCKET:
		rc = tk_token_bucket_init(
			&tmp.u.token_bucket, p->u.token_bucket.capacity,
			p->u.token_bucket.refill_per_sec, err, err_len);
		tmp.words = TK_TOKEN_BUCKET_WORDS;
		break;
	case TKSHM_KIND_FIXED_WINDOW:
		rc = tk_fixed_window_init(
			&tmp.u.fixed_window, p->u.fixed_window.limit,
			p->u.fixed_window.window_ms, err, err_len);
		tmp.words = TK_FIXED_WINDOW_WORDS;
		break;
	case TKSHM_KIND_SLIDING_WINDOW:
		rc = tk_sliding_window_init(
			&tmp.u.sliding_window, p->u.sliding_window.limit,
			p->u.sliding_window.window_ms,
			p->u.sliding_window.buckets, err, err_len);
		if (rc == TKSHM_OK)
			tmp.words =
				tk_sliding_window_words(&tmp.u.sliding_window);
		break;
	case TKSHM_KIND_SLIDING_LOG:
		rc = tk_sliding_log_init(
			&tmp.u.sliding_log, p->u.sliding_log.limit,
			p->u.sliding_log.window_ms, err, err_len);
		if (rc == TKSHM_OK)
			tmp.words = tk_sliding_log_words(&tmp.u.sliding_log);
		break;
	case TKSHM_KIND_QUOTA: {
		enum tk_quota_cadence c =
			tk_quota_cadence_of(p->u.quota.reset_cadence);

		if (c == 0) {
			TK_ERR("quota: resetCadence %g is not calendar-month "
			       "(1), calendar-week (2), calendar-day (3), "
			       "fixed (4) or rolling (5)",
			       p->u.quota.reset_cadence);
			return TKSHM_EPOLICY;
		}
		rc = tk_quota_init(&tmp.u.quota, p->u.quota.limit, c,
				   p->u.quota.offset_minutes,
				   p->u.quota.week_starts_on,
				   p->u.quota.period_ms, p->u.quota.anchor,
				   p->u.quota.buckets, err, err_len);
		if (rc == TKSHM_OK)
			tmp.words = (unsigned)tk_quota_words(&tmp.u.quota);
		break;
	}
	case TKSHM_KIND_TOKEN_BUDGET:
		rc = tk_token_budget_init(
			&tmp.u.token_budget, p->u.token_budget.budget,
			p->u.token_budget.window_ms, err, err_len);
		tmp.words = TK_TOKEN_BUDGET_WORDS;
		break;
	case TKSHM_KIND_LEAKY_BUCKET:
		rc = tk_leaky_bucket_init(
			&tmp.u.leaky_bucket, p->u.leaky_bucket.rate_per_sec,
			p->u.leaky_bucket.max_queue_ms, err, err_len);
		tmp.words = 1;
		break;
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		rc = tk_conc_init(&tmp.u.conc, p, err, err_len);
		if (rc == TKSHM_OK)
			tmp.words = tk_conc_words(&tmp.u.conc);
		break;
	default:
		TK_ERR("unknown policy kind %d", (int)p->kind);
		return TKSHM_EPOLICY;
	}
	if (rc != TKSHM_OK)
		return rc;
	rc = tk_algo_resolve(&tmp, err, err_len);
	if (rc != TKSHM_OK)
		return rc;
	rc = tk_cross_host_validate(p, err, err_len);
	if (rc != TKSHM_OK)
		return rc;
	if (p->global.mode == TKSHM_MODE_LEASE) {
		/* Validated: the base is a GCRA or a fixed window. */
		tmp.leased = true;
		tmp.lease.base = p->kind;
		tmp.lease.gcra = tmp.u.gcra;
		tmp.lease.fixed_window = tmp.u.fixed_window;
		tmp.lease.capacity = p->kind == TKSHM_KIND_GCRA ?
					     tmp.u.gcra.burst :
					     tmp.u.fixed_window.limit;
		tmp.words = TK_LEASE_WORDS;
		/* Leased credit is a count up to the capacity: a cost must
		 * also be resolvable against it (resolution.h). */
		tmp.min_cost = fmax(tmp.min_cost,
				    tk_min_cost_for_count(tmp.lease.capacity));
	}
	/* Every state fits the largest one the store is built for. */
	if (tmp.words < 1 || tmp.words > TK_ALGO_MAX_WORDS) {
		TK_ERR("policy needs %u state words, more than %u", tmp.words,
		       (unsigned)TK_ALGO_MAX_WORDS);
		return TKSHM_EPOLICY;
	}
	*a = tmp;
	return TKSHM_OK;
}

double
tk_algo_capacity(const struct tk_algo *a)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return a->u.gcra.burst;
	case TKSHM_KIND_TOKEN_BUCKET:
		return a->u.token_bucket.capacity;
	case TKSHM_KIND_FIXED_WINDOW:
		return a->u.fixed_window.limit;
	case TKSHM_KIND_SLIDING_WINDOW:
		return a->u.sliding_window.limit;
	case TKSHM_KIND_SLIDING_LOG:
		return a->u.sliding_log.limit;
	case TKSHM_KIND_QUOTA:
		return a->u.quota.limit;
	case TKSHM_KIND_TOKEN_BUDGET:
		return a->u.token_budget.L;
	case TKSHM_KIND_LEAKY_BUCKET:
		return (double)a->u.leaky_bucket.limit_field;
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		return (double)a->u.conc.cap;
	}
	return 0.0;
}

bool
tk_algo_blocked_state(const struct tk_algo *a, double until, uint64_t *st)
{
	if (a->leased)
		return false; /* a lease state has no "blocked" form */
	switch (a->kind) {
	case TKSHM_KIND_GCRA: {
		/* A cost-1 check at now' admits iff now' >= max(TAT, now') +
		 * T - tau; with TAT = until + tau - T that is now' >= until
		 * (tau >= T as burst >= 1). */
		const struct tk_gcra *g = &a->u.gcra;
		st[0] = tk_gcra_state(until + g->tau - g->T);
		return tk_gcra_state_valid(st[0]);
	}
	case TKSHM_KIND_TOKEN_BUCKET:
		/* Empty, last refilled at `until`: nothing refills before
		 * then (a `last` ahead of now never moves back). */
		st[0] = tk_f64_word(0.0);
		st[1] = tk_f64_word(until);
		return true;
	default:
		/* Windowed kinds restart with their window: a block past
		 * the current window has no state that means it. */
		return false;
	}
}
