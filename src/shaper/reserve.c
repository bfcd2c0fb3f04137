/*
 * reserve.c - the shaper: tkshm_reserve and tkshm_schedule on leakyBucket
 * tables.
 *
 * A leakyBucket key's state is one word, its next free departure, kept
 * like GCRA's TAT, so a reservation is a check of the one-word store
 * (tk_table_check): a lookup, the pure transition of
 * src/algorithms/leaky_bucket.h and one CAS; a rejection writes nothing.
 * The store hands back, in its commit record, the state the CAS replaced
 * (for an absent key, nothing, or the remembered debt it started from), so
 * the wait is recomputed here from the very double the transition
 * decided from: departure = max(state, now), wait = departure - now.
 * Every process that reserves on a key gets a distinct departure, T * cost
 * after the previous one while the queue is not empty.
 *
 * tkshm_schedule then sleeps until the departure on CLOCK_MONOTONIC with
 * an absolute deadline measured from the start of the call (sleep.h), so
 * the wait is never cut short by a signal or a spurious wake-up, nor by
 * rounding, and a wait of years is slept in full rather than truncated.
 */
#include <errno.h>
#include <time.h>

#include "algorithms/decision.h"
#include "algorithms/leaky_bucket.h"
#include "api/validate.h"
#include "base/clock.h"
#include "base/words.h"
#include "global/route.h"
#include "shaper/sleep.h"
#include "shm/table.h"
#include "tkshm.h"

/* What follows the arguments' checks (tkshm_check_at's, in its order):
 * the table's kind, then the handle's mode. */
static inline int
tk_reserve_check_table(const tkshm_table *t)
{
	if (t->algo.kind != TKSHM_KIND_LEAKY_BUCKET)
		return TKSHM_ENOTSUP;
	if (t->readonly)
		return TKSHM_EREADONLY;
	return TKSHM_OK;
}

/* One reservation of key k at `now` in this table (arguments already
 * valid; also the strict shaper's safe share, src/redis/strict.c). */
int
tk_reserve_ref(tkshm_table *t, const struct tk_keyref *k, double cost,
	       double now, tkshm_reservation *out)
{
	struct tk_commit c = { 0 };
	tkshm_decision d;
	double wait;
	int rc;

	rc = tk_table_check_ref(t, k, cost, now, &d, &c);
	if (rc != TKSHM_OK)
		return rc;
	if (!d.allowed) {
		/* ThrottleKit's delayMs of a rejection: ceil(delay -
		 * maxQueueMs), the decision's retry-after. */
		out->accepted = false;
		out->delay_ms = d.retry_after_ms;
		out->retry_after_ms = d.retry_after_ms;
		out->wait_ms = 0;
		return TKSHM_OK;
	}
	wait = tk_leaky_departure(c.prev_present, c.prev, now) - now;
	out->accepted = true;
	out->delay_ms = tk_field_ceil(wait);
	out->retry_after_ms = 0;
	out->wait_ms = wait;
	return TKSHM_OK;
}

int
tk_api_reserve_at(tkshm_table *t, const void *key, size_t key_len, double cost,
		 double now_ms, tkshm_reservation *out)
{
	struct tk_keyref k;
	int rc;

	if (!t || !out)
		return TKSHM_ENULL;
	if ((rc = tk_check_key(key, key_len)) != TKSHM_OK ||
	    (rc = tk_check_cost(t, cost)) != TKSHM_OK ||
	    (rc = tk_check_now(now_ms)) != TKSHM_OK ||
	    (rc = tk_reserve_check_table(t)) != TKSHM_OK)
		return rc;
	if (tk_is_global(t))
		return tk_global_reserve(t, key, key_len, cost, now_ms, out);
	k = tk_keyref_of(t, key, key_len);
	return tk_reserve_ref(t, &k, cost, now_ms, out);
}

int
tk_api_reserve(tkshm_table *t, const void *key, size_t key_len, double cost,
	      tkshm_reservation *out)
{
	return tkshm_reserve_at(t, key, key_len, cost, tkshm_now_ms(), out);
}

/* Sleeps until `deadline` on CLOCK_MONOTONIC.  TKSHM_OK once it is
 * reached; TKSHM_EINTR, with *left_ms the time still to wait (> 0), when
 * a signal handler interrupted the sleep before it; TKSHM_ESYSTEM (errno
 * set) if the clock cannot be slept on. */
static int
tk_sleep_until(const struct timespec *deadline, double *left_ms)
{
	struct timespec now;

	for (;;) {
		int e = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
					deadline, NULL);

		if (e != 0 && e != EINTR) {
			errno = e;
			return TKSHM_ESYSTEM;
		}
		/* Woken: by the deadline, a signal, or spuriously.  Only the
		 * clock says which. */
		if (clock_gettime(CLOCK_MONOTONIC, &now) != 0)
			return TKSHM_ESYSTEM;
		if (tk_timespec_reached(&now, deadline))
			return TKSHM_OK;
		if (e == EINTR) {
			*left_ms = tk_ms_until(deadline, &now);
			return TKSHM_EINTR;
		}
		/* Returned 0 before the deadline: sleep again. */
	}
}

int
tk_api_schedule_at(tkshm_table *t, const void *key, size_t key_len, double cost,
		  double now_ms, tkshm_reservation *out)
{
	struct timespec start, deadline;
	double left = 0;
	int rc;

	/* The wait is measured from here: the departure is wait_ms after
	 * now_ms, and now_ms was read (by the caller, or by tkshm_schedule)
	 * no later than this, so this deadline is never before it. */
	if (clock_gettime(CLOCK_MONOTONIC, &start) != 0)
		return TKSHM_ESYSTEM;
	rc = tkshm_reserve_at(t, key, key_len, cost, now_ms, out);
	if (rc != TKSHM_OK || !out->accepted || !(out->wait_ms > 0))
		return rc;
	deadline = tk_deadline_after(start, out->wait_ms);
	rc = tk_sleep_until(&deadline, &left);
	if (rc == TKSHM_EINTR)
		out->wait_ms = left;
	return rc;
}

int
tk_api_schedule(tkshm_table *t, const void *key, size_t key_len, double cost,
	       tkshm_reservation *out)
{
	return tkshm_schedule_at(t, key, key_len, cost, tkshm_now_ms(), out);
}
