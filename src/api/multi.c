/*
 * multi.c - multi-dimensional limits: `all` and `any` over keys of one or
 * more tables, with ThrottleKit's rules for the binding decision: the
 * arguments' checks, strict dimensions and the binding dimension here, the
 * shared-memory decision of local ones in src/shm/multi.c.
 *
 * `any` is independent checks, in order.  `all` must consume nothing
 * unless every dimension admits, without a lock across tables: it decides
 * every dimension without writing, then commits in order; a commit that
 * now denies (another process got there first) makes it give back the
 * commits already made and decide again.  Give-backs are exact when the
 * key still holds the state the commit wrote, and otherwise conservative
 * (tk_algo_refund), so no dimension is ever admitted beyond its policy.
 *
 * A key named by several dimensions (one table, or two handles of one
 * table) is checked by each of them in turn: `all` decides those
 * dimensions again in order, each on the state the earlier ones would
 * leave, before it commits anything, so that a request whose repeats add
 * up beyond the limit is denied without a commit to give back.  Decisions
 * and writes are the Redis script's (src/redis/lua/multi.lua) step for
 * step.
 */
#include <string.h>

#include "api/handle.h"
#include "global/route.h"
#include "shm/multi.h"
#include "shm/table.h"
#include "shm/validate.h"
#include "tkshm.h"

/* ThrottleKit's binding dimension (ties to the earlier). */
static size_t
tk_binding(tkshm_multi_mode mode, const tkshm_decision *d, size_t n)
{
	bool any_allowed = false, any_denied = false;
	size_t best = n;

	for (size_t i = 0; i < n; i++) {
		any_allowed |= d[i].allowed;
		any_denied |= !d[i].allowed;
	}
	for (size_t i = 0; i < n; i++) {
		bool better;

		if (mode == TKSHM_MULTI_ALL && any_denied) {
			/* The denier that frees up last. */
			if (d[i].allowed)
				continue;
			better = best == n ||
				 d[i].retry_after_ms > d[best].retry_after_ms;
		} else if (mode == TKSHM_MULTI_ALL) {
			/* The tightest of the admitting dimensions. */
			better =
				best == n || d[i].remaining < d[best].remaining;
		} else if (any_allowed) {
			/* The roomiest of the admitting dimensions. */
			if (!d[i].allowed)
				continue;
			better =
				best == n || d[i].remaining > d[best].remaining;
		} else {
			/* The denier that frees up first. */
			better = best == n ||
				 d[i].retry_after_ms < d[best].retry_after_ms;
		}
		if (better)
			best = i;
	}
	return best;
}

/* Every dimension strict, on one Redis connection, with a kind the multi
 * script runs (ThrottleKit's: gcra, tokenBucket, fixedWindow): one
 * script decides and commits them all.  Lease tables spend local
 * credits that a multi-key commit could not undo: refused. */
static int
tk_multi_strict(tkshm_multi_mode mode, const tkshm_dimension *dims, size_t n,
		double now, tkshm_decision *d)
{
	const struct tkshm_table *t0 = dims[0].table;

	for (size_t i = 0; i < n; i++) {
		const struct tkshm_table *t = dims[i].table;
		tkshm_kind kind = t->algo.kind;

		if (t->policy.global.mode != TKSHM_MODE_STRICT ||
		    (kind != TKSHM_KIND_GCRA &&
		     kind != TKSHM_KIND_TOKEN_BUCKET &&
		     kind != TKSHM_KIND_FIXED_WINDOW))
			return TKSHM_ENOTSUP;
		if (!t->strict)
			return TKSHM_ENOREDIS;
		if (t->redis != t0->redis)
			return TKSHM_ENOTSUP; /* one script, one server */
	}
	return t0->strict->multi(mode, dims, n, now, d);
}

/* The body of tkshm_check_multi_at, on instances (handle.h). */
static int
tk_multi_at(tkshm_multi_mode mode, const tkshm_dimension *dims, size_t n,
	    double now_ms, tkshm_decision *out, tkshm_decision *each,
	    size_t *binding)
{
	tkshm_decision d[TKSHM_MULTI_MAX];
	size_t b;
	int rc;

	if (!dims || !out)
		return TKSHM_ENULL;
	if (n == 0 || n > TKSHM_MULTI_MAX ||
	    (mode != TKSHM_MULTI_ALL && mode != TKSHM_MULTI_ANY))
		return TKSHM_EINVAL;
	if ((rc = tk_check_now(now_ms)) != TKSHM_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (!dims[i].table)
			return TKSHM_ENULL;
		if ((rc = tk_check_key(dims[i].key, dims[i].key_len)) !=
			    TKSHM_OK ||
		    (rc = tk_check_cost(dims[i].table, dims[i].cost)) !=
			    TKSHM_OK)
			return rc;
		if ((rc = tk_check_limiter(dims[i].table)) != TKSHM_OK)
			return rc;
		if (dims[i].table->readonly)
			return TKSHM_EREADONLY;
	}
	if (tk_is_global(dims[0].table)) {
		rc = tk_multi_strict(mode, dims, n, now_ms, d);
	} else {
		for (size_t i = 0; i < n; i++)
			if (tk_is_global(dims[i].table))
				return TKSHM_ENOTSUP; /* local and strict mixed */
		rc = tk_multi_local(mode, dims, n, now_ms, d);
	}
	if (rc != TKSHM_OK)
		return rc;
	b = tk_binding(mode, d, n);
	*out = d[b];
	if (each)
		memcpy(each, d, sizeof(tkshm_decision) * n);
	if (binding)
		*binding = b;
	return TKSHM_OK;
}

/* True when every dimension's handle is on itself (tk_on_itself). */
static bool
tk_all_on_themselves(const tkshm_dimension *dims, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!dims[i].table || !tk_on_itself(dims[i].table))
			return false;
	return true;
}

int
tkshm_check_multi_at(tkshm_multi_mode mode, const tkshm_dimension *dims,
		     size_t n, double now_ms, tkshm_decision *out,
		     tkshm_decision *each, size_t *binding)
{
	tkshm_dimension on[TKSHM_MULTI_MAX];

	if (!dims || !out)
		return TKSHM_ENULL;
	if (n == 0 || n > TKSHM_MULTI_MAX)
		return TKSHM_EINVAL;
	if (tk_all_on_themselves(dims, n)) {
		/* As TK_HANDLE_CALL: handles that never followed a change
		 * need no read-side section (handle.h). */
		int rc = tk_multi_at(mode, dims, n, now_ms, out, each, binding);

		if (__builtin_expect(rc != TK_EMOVED, 1))
			return rc;
	}
	for (unsigned tries = 0;; tries++) {
		int rc;

		tk_rcu_lock();
		/* Each dimension on the instance its handle is on now. */
		for (size_t i = 0; i < n; i++) {
			on[i] = dims[i];
			if (dims[i].table)
				on[i].table = tk_resolve(dims[i].table);
		}
		rc = tk_multi_at(mode, on, n, now_ms, out, each, binding);
		tk_leave();
		if (rc != TK_EMOVED)
			return rc;
		for (size_t i = 0; i < n; i++)
			if (dims[i].table &&
			    (rc = tk_follow_error(dims[i].table)) != 0)
				return rc;
		if (tries >= 64)
			return TKSHM_EBUSY;
		tk_follow_pause(tries);
	}
}

int
tkshm_check_multi(tkshm_multi_mode mode, const tkshm_dimension *dims, size_t n,
		  tkshm_decision *out, tkshm_decision *each, size_t *binding)
{
	return tkshm_check_multi_at(mode, dims, n, tkshm_now_ms(), out, each,
				    binding);
}
