/*
 * soak_bound.c - the hot keys' admissions, per clock epoch, against GCRA.
 *
 * The bound (the argument of tests/mp/test_kill_storm.c, per epoch).  GCRA
 * admits at `now` t only if TAT - tau <= t (tau = (burst - 1) * T) and
 * every admission moves the TAT to max(TAT, t) + T.  Take the admissions
 * of one key made with the `now`s of one epoch, in the order the table saw
 * them, and follow V, the TAT these admissions alone would have made
 * (V' = max(V, t) + T).  The table's TAT is never below V: other epochs'
 * admissions only raise it, and so does an eviction (the TAT is remembered
 * and restored, protocol.h I8).  So from the first admission (at t_s) the
 * j-th leaves V >= t_s + j*T and needed t_j >= V - tau, which gives
 *     count <= burst + (t_max - t_min) / T
 * whatever the order of the nows (a `now` behind the TAT only waits) and
 * whatever other epochs did in between.
 *
 * The one thing that lowers the TAT below V is a reclaim of the key's slot
 * as idle by a process whose `now` is past the TAT, which happens when the
 * processes' clocks disagree (docs/guarantees.md, "Guarantees and their limits": a
 * lagging now gains at most s/T) - here, across a clock jump, by up to an
 * hour.  The next check of the key then restarts it from absent, at t',
 * and the worker sees it: an admission from an absent state (remaining =
 * burst - 1).  An eviction is not such a reset: the evicted TAT is merged
 * into a debt cell by a maximum and a returning key starts from it while
 * it is in debt (flagged DEBT_RESTORED), so it is held to the exact bound.
 * Whoever reclaimed, the chain before the restart is worth at most
 * (V - t_s) / T admissions, and V is at most the last of them plus
 * burst * T (it needed V - T <= t + tau), a `now` read before the
 * restarting call returned: V - t' <= latency + burst * T.  The chain from
 * t' then obeys the bound again.
 *
 * The restart may also be made on another epoch's clock.  Behind this
 * epoch (before a forward jump), its fresh TAT is in this epoch's past and
 * this epoch's next admission is seen as a restart.  Ahead of it (a call
 * on the previous clock still running after a backward jump of J), its
 * fresh TAT t_S + T is below V by at most its latency + tau - J: the
 * worker counts that restart as `foreign` in this epoch too.  So, per
 * (key, epoch),
 *     count <= floor(burst + (t_max - t_min + S + 0.01) / T)
 * with S the sum over its restarts, foreign ones included, of (call
 * latency + burst * T), and 0.01 ms for the rounding of the doubles.  A
 * key that never restarted must meet exact GCRA: a lost update or two live
 * slots for one key fail.
 *
 * Most restarts gain nothing: a hot key whose checks all stall for more
 * than tau + T (16 processes on 2 cores) is idle in its slot and restarts
 * in place; the decision does not tell the two apart, so every restart
 * gets the allowance.  The summary therefore also counts admissions above
 * the exact bound (no allowance at all).  The one gap: a restart whose
 * worker was killed after the call returned and before recording it adds
 * no allowance (as in test_kill_storm.c; the window is a few instructions).
 */
#include <math.h>
#include <stdio.h>

#include "mp_util.h"
#include "soak.h"

uint64_t
soak_check_bounds(const struct soak_shared *sh, uint32_t from, uint32_t to,
		  struct soak_bound_stats *st)
{
	uint32_t last = __atomic_load_n(&sh->epoch, __ATOMIC_ACQUIRE);
	uint64_t violations = 0;

	for (uint32_t e = from; e < to && e <= last; e++) {
		for (int k = 0; k < SOAK_HOT_KEYS; k++) {
			const struct soak_obs *o = &sh->obs[k][e];
			uint32_t count, restarts, foreign;
			double span, allow;
			uint64_t exact, bound;

			count = __atomic_load_n(&o->count, __ATOMIC_RELAXED);
			if (count == 0)
				continue;
			restarts =
				__atomic_load_n(&o->restarts, __ATOMIC_RELAXED);
			foreign =
				__atomic_load_n(&o->foreign, __ATOMIC_RELAXED);
			span = mp_bits_double(__atomic_load_n(
				       &o->max_now, __ATOMIC_RELAXED)) -
			       mp_bits_double(__atomic_load_n(
				       &o->min_now, __ATOMIC_RELAXED));
			allow = (double)__atomic_load_n(&o->stale_us,
							__ATOMIC_RELAXED) /
					1000 +
				(restarts + foreign) * SOAK_BURST * SOAK_T_MS;
			exact = (uint64_t)floor(SOAK_BURST +
						(span + 0.01) / SOAK_T_MS);
			bound = (uint64_t)floor(
				SOAK_BURST + (span + allow + 0.01) / SOAK_T_MS);
			if (count > bound) {
				violations++;
				if (st)
					printf("VIOLATION: hot-%d in epoch %u: %u "
					       "admissions over a span of %.3f ms; "
					       "GCRA allows %llu (exact %llu; %u "
					       "restarts, %u foreign, allowance "
					       "%.3f ms)\n",
					       k, e, count, span,
					       (unsigned long long)bound,
					       (unsigned long long)exact,
					       restarts, foreign, allow);
			}
			if (!st)
				continue;
			st->cells++;
			st->admissions += count;
			st->at_exact += count == exact;
			st->over_exact += count > exact ? count - exact : 0;
			st->restarts += restarts;
			st->foreign += foreign;
			if ((double)count / (double)exact > st->max_fill)
				st->max_fill = (double)count / (double)exact;
		}
	}
	return violations;
}
