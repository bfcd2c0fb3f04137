/*
 * deny_bound.h - the fields a denial can be answered with when the state
 * at hand may be missing consumption (strict mode's negative cache).
 *
 * The cache holds the state of a key's last Redis reply; other hosts (and
 * ThrottleKit services) sharing the key may have consumed since, so
 * Redis's true state holds at least the cached one and possibly more.
 * Every algorithm then tells a later retryAfterMs and resetAt and a lower
 * remaining the more was consumed, so the cached state's own fields can
 * be early.  These functions answer with the fields of the WORST state
 * Redis can hold: the cached one plus everything the policy could have
 * admitted to others by `now`.  No true state gives a later retry or
 * reset, so the answer errs late, never early; it equals the true one
 * when the key was drained.  Per kind (on a forward clock):
 *
 *   gcra          TAT = the latest an admission at or before now can
 *                 write (allowAt <= now): retry of T*cost, reset now+tau
 *   tokenBucket   an empty bucket refilled at now: retry cost/rate,
 *                 reset now + capacity/rate
 *   fixedWindow, quota (calendar, fixed), tokenBudget
 *                 the cached fields: retry and reset are the window's
 *                 end, which consumption does not move
 *   slidingWindow, quota rolling
 *                 the time to the next sub-bucket boundary, rounded up
 *                 past the double arithmetic's error (ThrottleKit's
 *                 weighted retry never exceeds it by more than that)
 *   slidingWindowLog
 *                 the cached live stamps, then the log filled to `limit`
 *                 with stamps at now: the reset is the oldest live
 *                 stamp's (consumption only appends later ones)
 *   leakyBucket   the cached fields: a rejection does not depend on the
 *                 cost, so while the cached departure rejects at now,
 *                 every reservation since was rejected too (none moved it)
 *   remaining     always 0, the one value no true state is below.
 *
 * Concurrency and lease states have no such bound: for those the
 * functions return false.
 */
#ifndef TKSHM_ALGORITHMS_DENY_BOUND_H
#define TKSHM_ALGORITHMS_DENY_BOUND_H

#include <stdbool.h>
#include <stdint.h>

#include "algorithms/algorithm.h"

/* The bounded fields of a denial of `cost` at `now` for a key whose true
 * state holds at least `st` (a->words words): *d as a check would fill it,
 * remaining 0.  False when the kind has no bound or `st` does not deny at
 * `now` (the caller then asks Redis). */
bool tk_algo_deny_bound_w(const struct tk_algo *a, const uint64_t *st,
			  double now, double cost, tkshm_decision *d);

#endif /* TKSHM_ALGORITHMS_DENY_BOUND_H */
