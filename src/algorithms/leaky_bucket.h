/*
 * leaky_bucket.h - ThrottleKit's leaky-bucket shaper, as a pure transition.
 *
 * (docs/semantics.md, "Leaky bucket".)  Requests leave at
 * ratePerSec; each accepted one is given a departure slot:
 *
 *   T = 1000 / ratePerSec          inc = T * cost
 *   departure = max(state or now, now)     delay = departure - now
 *   delay > maxQueueMs: reject, delayMs = ceil(delay - maxQueueMs), no write
 *   otherwise:          accept, delayMs = ceil(delay), state = departure + inc
 *
 * Admission looks at the wait before this request.  The state is the next
 * free departure, one double, exactly like GCRA's TAT: a state at or before
 * `now` decides as an absent key does, and debt, merge and validity are
 * GCRA's (gcra.h), so the one-word store serves both.
 *
 * ThrottleKit's shaper answers {accepted, delayMs} only.  tkshm also fills
 * a Decision, for operators (tkshm-inspect, tkshm_peek) and for the
 * reservation's retry-after, with these meanings:
 *   limit       the queue in cost-1 requests: floor(maxQueueMs / T) + 1
 *   remaining   floor((maxQueueMs - wait) / T) + 1 with the wait after
 *               this one: the cost-1 requests the queue has room for, in
 *               real arithmetic (doubles can admit one or two more or fewer
 *               near a rounding edge; forecast's spendable_now walks the
 *               exact double recurrence)
 *   reset_at    ceil(the departure after this one): the queue is empty then
 *   retry_after rejected: ceil(delay - maxQueueMs) (ThrottleKit's delayMs);
 *               accepted: 0
 */
#ifndef TKSHM_ALGORITHMS_LEAKY_BUCKET_H
#define TKSHM_ALGORITHMS_LEAKY_BUCKET_H

#include <stdbool.h>
#include <stdint.h>

#include "algorithms/decision.h"
#include "algorithms/gcra.h"
#include "algorithms/rounding.h"
#include "base/words.h"
#include "tkshm.h"

struct tk_leaky_bucket {
	double T;	     /* ms between departures of cost 1 */
	double max_queue;    /* maxQueueMs */
	int64_t limit_field; /* floor(maxQueueMs / T) + 1 */
};

/* Validates ratePerSec > 0 and maxQueueMs >= 0 (ThrottleKit's checks) and
 * that T and every field stay finite.  TKSHM_OK or TKSHM_EPOLICY. */
int tk_leaky_bucket_init(struct tk_leaky_bucket *l, double rate_per_sec,
			 double max_queue_ms, char *err, size_t err_len);

/* Cost-1 requests accepted in a row from a queue that waits `delay` ms. */
static inline int64_t
tk_leaky_room(const struct tk_leaky_bucket *l, double delay)
{
	int64_t r;

	if (delay > l->max_queue)
		return 0;
	r = tk_field_floor0((l->max_queue - delay) / l->T);
	return r == INT64_MAX ? r : r + 1;
}

/* max(state or now, now): the departure a request at `now` is given.  The
 * wait of an accepted request is this minus now, from the state it was
 * decided from (reserve.c recomputes it from the store's commit record). */
static inline double
tk_leaky_departure(bool present, uint64_t st, double now)
{
	double dep = present ? tk_word_f64(st) : now;

	return dep > now ? dep : now;
}

/* One reservation.  True when accepted, with *st_out the next departure.
 * The wait of an accepted request is departure - now, where departure is
 * max(st, now) of the state it was decided from (the store returns that
 * state in its commit record, so the caller recomputes the same double). */
static inline bool
tk_leaky_bucket_check(const struct tk_leaky_bucket *l, bool present,
		      uint64_t st, double now, double cost, uint64_t *st_out,
		      tkshm_decision *d)
{
	double departure = tk_leaky_departure(present, st, now);
	double delay = departure - now;
	double next;

	d->limit = l->limit_field;
	d->flags = 0;
	if (delay > l->max_queue) {
		d->allowed = false;
		d->remaining = 0;
		d->reset_at = tk_field_ceil(departure);
		d->retry_after_ms =
			tk_denial_retry(tk_field_ceil(delay - l->max_queue));
		return false;
	}
	next = departure + l->T * cost;
	d->allowed = true;
	d->remaining = tk_leaky_room(l, next - now);
	d->reset_at = tk_field_ceil(next);
	d->retry_after_ms = 0;
	*st_out = tk_f64_word(next);
	return true;
}

/* What a cost-1 reservation would decide now, writing nothing. */
static inline void
tk_leaky_bucket_peek(const struct tk_leaky_bucket *l, bool present, uint64_t st,
		     double now, tkshm_decision *d)
{
	double departure = tk_leaky_departure(present, st, now);
	double delay = departure - now;

	d->limit = l->limit_field;
	d->flags = 0;
	d->remaining = tk_leaky_room(l, delay);
	d->allowed = d->remaining >= 1;
	d->reset_at = tk_field_ceil(departure);
	d->retry_after_ms =
		d->allowed ?
			0 :
			tk_denial_retry(tk_field_ceil(delay - l->max_queue));
}

#endif /* TKSHM_ALGORITHMS_LEAKY_BUCKET_H */
