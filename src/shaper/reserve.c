/*
 * reserve.c - the shaper: tkshm_reserve and tkshm_schedule on leakyBucket
 * tables (their arguments' checks and the routing of a non-local table
 * are src/api/shaper_api.c's).
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
#include "base/clock.h"
#include "base/words.h"
#include "shaper/reserve.h"
#include "shaper/sleep.h"
#include "shm/table.h"
#include "tkshm.h"

/* One reservation of key k at `now` in this table (reserve.h). */
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
tk_schedule_wait(struct timespec start, tkshm_reservation *out)
{
	struct timespec deadline;
	double left = 0;
	int rc;

	deadline = tk_deadline_after(start, out->wait_ms);
	rc = tk_sleep_until(&deadline, &left);
	if (rc == TKSHM_EINTR)
		out->wait_ms = left;
	return rc;
}
