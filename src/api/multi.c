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

/* ThrottleKit's binding dimension (ties to the earlier): for `all`, the
 * denier that frees up last, or if none denies the tightest admitter; for
 * `any`, the roomiest admitter, or if none admits the denier that frees
 * up first.  One pass keeps each mode's two candidates. */
static size_t
tk_binding(tkshm_multi_mode mode, const tkshm_decision *d, size_t n)
{
	size_t late = n, early = n, tight = n, roomy = n;

	for (size_t i = 0; i < n; i++) {
		if (!d[i].allowed) {
			if (late == n ||
			    d[i].retry_after_ms > d[late].retry_after_ms)
				late = i;
			if (early == n ||
			    d[i].retry_after_ms < d[early].retry_after_ms)
				early = i;
		} else {
			if (tight == n || d[i].remaining < d[tight].remaining)
				tight = i;
			if (roomy == n || d[i].remaining > d[roomy].remaining)
				roomy = i;
		}
	}
	if (mode == TKSHM_MULTI_ALL)
		return late < n ? late : tight;
	return roomy < n ? roomy : early;
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

/* The call's outputs from the dimensions' decisions d[0..n). */
static void
tk_multi_finish(tkshm_multi_mode mode, const tkshm_decision *d, size_t n,
		tkshm_decision *out, tkshm_decision *each, size_t *binding)
{
	size_t b = tk_binding(mode, d, n);

	*out = d[b];
	if (each)
		memcpy(each, d, sizeof(tkshm_decision) * n);
	if (binding)
		*binding = b;
}

/* The body of tkshm_check_multi_at, on instances (handle.h). */
static int
tk_multi_at(tkshm_multi_mode mode, const tkshm_dimension *dims, size_t n,
	    double now_ms, tkshm_decision *out, tkshm_decision *each,
	    size_t *binding)
{
	tkshm_decision d[TKSHM_MULTI_MAX];
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
	if (rc == TKSHM_OK)
		tk_multi_finish(mode, d, n, out, each, binding);
	return rc;
}

/* Whether tkshm_check_multi_at may take tk_multi_all_one_word: `all`
 * with every argument valid, every dimension's handle on itself (no
 * read-side section: handle.h) with a local, writable GCRA table of
 * one-word states.  Anything else (an argument to refuse included) takes
 * tk_multi_at, which checks every argument in its contract's order. */
static bool
tk_multi_one_word_args(tkshm_multi_mode mode, const tkshm_dimension *dims,
		       size_t n, double now_ms)
{
	if (mode != TKSHM_MULTI_ALL || tk_check_now(now_ms) != TKSHM_OK)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct tkshm_table *t = dims[i].table;

		if (!t || !tk_on_itself(t) || t->algo.kind != TKSHM_KIND_GCRA ||
		    t->wide || t->readonly || tk_is_global(t) ||
		    tk_check_key(dims[i].key, dims[i].key_len) != TKSHM_OK ||
		    tk_check_cost(t, dims[i].cost) != TKSHM_OK)
			return false;
	}
	return true;
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
	if (tk_multi_one_word_args(mode, dims, n, now_ms)) {
		tkshm_decision d[TKSHM_MULTI_MAX];
		int rc = tk_multi_all_one_word(dims, n, now_ms, d);

		if (__builtin_expect(rc == TKSHM_OK, 1)) {
			tk_multi_finish(mode, d, n, out, each, binding);
			return rc;
		}
	}
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
