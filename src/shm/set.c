/*
 * set.c - an operator's override of one key (tkshm_set_remaining_at,
 * tkshm_block_at).
 *
 * The override is one more writer of the slot protocol: a present key's
 * state is replaced by one CAS of its slot word (GCRA) or one wide
 * transition (W2-W4), so it races with checks like any check does.  An
 * absent key is first inserted by an ordinary check (I5, I6: never a second
 * REAL slot), and the state that check wrote is then replaced.
 */
#include <math.h>

#include "shm/table.h"
#include "shm/wide.h"

int
tk_table_set(struct tkshm_table *t, const void *key, size_t len, double now,
	     const uint64_t *target)
{
	struct tk_where w;
	double insert_cost = fmin(1.0, tk_algo_capacity(&t->algo));
	unsigned retries = 0;
	bool reset_done = false, denied = false;

	tk_where_of(t, tk_key_fp(t, key, len), &w);
	for (;;) {
		uint64_t st;
		int pos;

		if (retries > TK_MAX_RETRIES)
			return TKSHM_EBUSY;
		pos = tk_find_real(t, &w, &st);

		if (pos >= 0) {
			if (t->wide) {
				int rc = tk_wide_replace(t, &w, pos, target);

				if (rc != TK_WIDE_GONE)
					return rc;
			} else if (tk_cas128(tk_window_slot(t, &w, pos), w.fp,
					     st, w.fp, target[0])) {
				return TKSHM_OK;
			}
		} else if (denied && !reset_done) {
			/* Absent, and its insert was denied: the debt cell
			 * remembers an evicted debt.  The operator overrides
			 * it as a reset does (I9). */
			int rc = tk_table_reset(t, key, len);

			if (rc != TKSHM_OK)
				return rc;
			reset_done = true;
			retries++;
			continue;
		} else {
			tkshm_decision d;
			int rc = tk_table_check(t, key, len, insert_cost, now,
						&d, NULL);

			if (rc != TKSHM_OK)
				return rc;
			/* Writing a state is no decision: the insert's
			 * count is taken back (the counters are sums mod
			 * 2^64 of this thread's shard, so adding 2^64 - 1
			 * subtracts one exactly). */
			tk_count(t, d.allowed ? TK_C_ALLOWED : TK_C_DENIED,
				 UINT64_MAX);
			denied = !d.allowed;
			retries++;
			continue;
		}
		tk_count(t, TK_C_CAS_RETRIES, 1);
		tk_backoff(++retries);
	}
}
