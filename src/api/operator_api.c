/*
 * operator_api.c - the public calls an operator's tool needs: walking a
 * table's keys, looking at one, and overriding one (tkshm-inspect list,
 * show, top, set).  Arguments are checked here, before anything is read or
 * changed; the work is in src/shm/entry.c and src/shm/set.c.
 */
#include <math.h>

#include "shm/table.h"
#include "shm/validate.h"
#include "tkshm.h"

int
tk_api_entry_next_at(tkshm_table *t, uint64_t *cursor, double now_ms,
		     tkshm_entry *out)
{
	int rc;

	if (!t || !cursor || !out)
		return TKSHM_ENULL;
	if ((rc = tk_check_now(now_ms)) != TKSHM_OK)
		return rc;
	return tk_entry_next(t, cursor, now_ms, out);
}

int
tk_api_entry_get_at(tkshm_table *t, const void *key, size_t key_len,
		    double now_ms, tkshm_entry *out)
{
	int rc;

	if (!t || !out)
		return TKSHM_ENULL;
	if ((rc = tk_check_key(key, key_len)) != TKSHM_OK ||
	    (rc = tk_check_now(now_ms)) != TKSHM_OK)
		return rc;
	return tk_entry_get(t, key, key_len, now_ms, out);
}

/* The checks every override shares. */
static int
tk_check_override(const tkshm_table *t, const void *key, size_t key_len,
		  double now_ms)
{
	int rc;

	if (!t)
		return TKSHM_ENULL;
	if ((rc = tk_check_key(key, key_len)) != TKSHM_OK ||
	    (rc = tk_check_now(now_ms)) != TKSHM_OK)
		return rc;
	/* Permits change hands only by acquire, release and reap: no state
	 * an operator writes could name their holders. */
	if (tk_algo_is_concurrency(&t->algo))
		return TKSHM_ENOTSUP;
	/* A cross-host limit's state is in Redis; this host's table holds
	 * only a lease or a cached denial. */
	if (t->policy.global.mode != TKSHM_MODE_LOCAL)
		return TKSHM_ENOTSUP;
	return t->readonly ? TKSHM_EREADONLY : TKSHM_OK;
}

int
tk_api_set_remaining_at(tkshm_table *t, const void *key, size_t key_len,
			double remaining, double now_ms)
{
	uint64_t target[TK_ALGO_MAX_WORDS] = { 0 };
	tkshm_decision d;
	double capacity, spent;
	int rc;

	if ((rc = tk_check_override(t, key, key_len, now_ms)) != TKSHM_OK)
		return rc;
	capacity = tk_algo_capacity(&t->algo);
	if (!(remaining >= 0 && remaining <= capacity))
		return TKSHM_EINVAL;
	spent = capacity - remaining;
	if (spent == 0)
		return tk_table_reset(t, key, key_len);
	/* The state an absent key reaches by spending `spent` now: the
	 * algorithm's own transition, so it refills as the policy says. */
	if (tk_check_cost(t, spent) != TKSHM_OK ||
	    !tk_algo_check_w(&t->algo, false, target, now_ms, spent, target,
			     &d))
		return TKSHM_EINVAL;
	return tk_table_set(t, key, key_len, now_ms, target);
}

int
tk_api_block_at(tkshm_table *t, const void *key, size_t key_len,
		double until_ms, double now_ms)
{
	uint64_t target[TK_ALGO_MAX_WORDS] = { 0 };
	int rc;

	if ((rc = tk_check_override(t, key, key_len, now_ms)) != TKSHM_OK)
		return rc;
	if (tk_check_now(until_ms) != TKSHM_OK || !(until_ms > now_ms))
		return TKSHM_EINVAL;
	if (!tk_algo_blocked_state(&t->algo, until_ms, target))
		return TKSHM_ENOTSUP;
	return tk_table_set(t, key, key_len, now_ms, target);
}
