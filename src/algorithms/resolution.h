/*
 * resolution.h - the time steps and costs a policy's doubles can resolve.
 *
 * Every algorithm keeps time as IEEE-754 doubles in ms (ThrottleKit's
 * arithmetic, bit for bit).  Near a time t the doubles are ulp(t) apart,
 * so a step much smaller than ulp(t) rounds away: a GCRA TAT that does
 * not advance, a sliding log whose window `now - windowMs` is `now`, a
 * budget window that ends where it starts.  Each of those admits without
 * bound.  tkshm refuses such policies when they are made, by one rule
 * (docs/policies.md):
 *
 *   every time step a policy defines (GCRA's and the shaper's emission
 *   interval, a window, a sliding window's bucket, a fixed quota's period)
 *   is at least TK_RESOLUTION_ULPS ulps of the largest time it is added
 *   to: TK_NOW_MAX plus the horizon the kind adds to now.
 *
 * For horizons below 2^42 ms that is 16 * 2^-10 = 1/64 ms (15.625 us).
 * 16 ulps bound the rounding of one step to 1/32 of it, so rounding can
 * shift what a limit admits by at most about 3%, never without bound.
 *
 * The same rounding applies to a cost added to a count or a TAT: a cost
 * below min_cost (tk_algo_resolve) would add nothing to the state, so the
 * check family refuses it with TKSHM_ECOST.
 */
#ifndef TKSHM_ALGORITHMS_RESOLUTION_H
#define TKSHM_ALGORITHMS_RESOLUTION_H

#include <stddef.h>

struct tk_algo;

/* How many ulps a step must span (see above). */
#define TK_RESOLUTION_ULPS 16.0

/* The spacing of the doubles in [2^e, 2^(e+1)) that holds x (finite, > 0). */
double tk_ulp(double x);

/* The smallest cost whose addition to (or removal from) a count of up to
 * `count` is kept: TK_RESOLUTION_ULPS ulps of it. */
double tk_min_cost_for_count(double count);

/* Checks every time step of the kind in `a` (already initialised by its
 * own _init) against the rule above, and sets a->min_cost.  TKSHM_OK, or
 * TKSHM_EPOLICY with a sentence naming the parameter and the smallest
 * value it may take. */
int tk_algo_resolve(struct tk_algo *a, char *err, size_t err_len);

#endif /* TKSHM_ALGORITHMS_RESOLUTION_H */
