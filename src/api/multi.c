/*
 * multi.c - multi-dimensional limits: `all` and `any` over keys of one or
 * more tables, with ThrottleKit's rules for the binding decision.
 *
 * `any` is independent checks.  `all` must consume nothing unless every
 * dimension admits, without a lock across tables: it decides every dimension
 * without writing, then commits in order; a commit that now denies (another
 * process got there first) makes it give back the commits already made and
 * decide again.  Give-backs are exact when the key still holds the state
 * the commit wrote, and otherwise conservative (tk_algo_refund), so no
 * dimension is ever admitted beyond its policy.
 */
#include <string.h>

#include "api/validate.h"
#include "global/route.h"
#include "shm/table.h"
#include "tkshm.h"

/* Rounds of decide-then-commit before `all` settles for the latest denial. */
#define TK_MULTI_ROUNDS 64

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

/* One request's keys and commits, and when (in its callers' time) the
 * commits were made. */
struct tk_commits {
	struct tk_keyref key[TKSHM_MULTI_MAX];	    /* each hashed once */
	struct tk_decided decided[TKSHM_MULTI_MAX]; /* `all`: this round's */
	struct tk_commit c[TKSHM_MULTI_MAX];
	bool made[TKSHM_MULTI_MAX];
	double now;	/* the request's now_ms */
	double started; /* tk_mono_coarse_ms() when the call began */
};

/* Commits dimension i, remembering what it changed: straight from what
 * `all` decided if the key's slot has not changed since (d already holds
 * that decision), otherwise by checking it again. */
static int
tk_commit_dim(const tkshm_dimension *dim, struct tk_commits *k, size_t i,
	      tkshm_decision *d, bool decided)
{
	int rc;

	if (decided && tk_table_commit(dim->table, k->key[i].fp, &k->decided[i],
				       &k->c[i])) {
		k->c[i].now = k->now;
		k->made[i] = true;
		return TKSHM_OK;
	}
	rc = tk_table_check_ref(dim->table, &k->key[i], dim->cost, k->now, d,
				&k->c[i]);
	k->made[i] = rc == TKSHM_OK && d->allowed;
	return rc;
}

/* Gives back the commits made.  Another process may have admitted on one
 * of these keys since, from a `now` up to the real time that has passed
 * since this call began: what drained before that is not ours to give. */
static void
tk_give_back(const tkshm_dimension *dims, struct tk_commits *k, size_t n)
{
	double now_r = k->now + (tk_mono_ms() - k->started);

	for (size_t i = n; i-- > 0;) {
		if (!k->made[i])
			continue;
		/* TKSHM_EBUSY here means thousands of writers on the key; the
		 * consumption then stays, which errs on the safe side. */
		(void)tk_table_refund(dims[i].table, &k->c[i], dims[i].cost,
				      now_r);
		k->made[i] = false;
	}
}

static int
tk_multi_all(const tkshm_dimension *dims, size_t n, struct tk_commits *k,
	     tkshm_decision *d)
{
	for (unsigned round = 0;; round++) {
		size_t i;
		bool denied = false;

		for (i = 0; i < n; i++) {
			int rc = tk_table_decide(dims[i].table, k->key[i].fp,
						 dims[i].cost, k->now, &d[i],
						 &k->decided[i]);
			if (rc != TKSHM_OK)
				return rc;
			denied |= !d[i].allowed;
		}
		if (denied)
			return TKSHM_OK;
		for (i = 0; i < n; i++) {
			int rc = tk_commit_dim(&dims[i], k, i, &d[i], true);
			if (rc != TKSHM_OK) {
				tk_give_back(dims, k, i);
				return rc;
			}
			if (!d[i].allowed)
				break;
		}
		if (i == n)
			return TKSHM_OK;
		tk_give_back(dims, k, i);
		if (round + 1 >= TK_MULTI_ROUNDS) {
			/* Keep deciding from this denial: d[i] denies, and the
			 * other dimensions hold what they decided. */
			return TKSHM_OK;
		}
	}
}

static int
tk_multi_any(const tkshm_dimension *dims, size_t n, struct tk_commits *k,
	     tkshm_decision *d)
{
	for (size_t i = 0; i < n; i++) {
		int rc = tk_commit_dim(&dims[i], k, i, &d[i], false);
		if (rc != TKSHM_OK) {
			/* The caller hears only the error: admit nothing. */
			tk_give_back(dims, k, i);
			return rc;
		}
	}
	return TKSHM_OK;
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

int
tkshm_check_multi_at(tkshm_multi_mode mode, const tkshm_dimension *dims,
		     size_t n, double now_ms, tkshm_decision *out,
		     tkshm_decision *each, size_t *binding)
{
	tkshm_decision d[TKSHM_MULTI_MAX];
	struct tk_commits k;
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
	for (size_t i = 0; i < n; i++) {
		if (tk_is_global(dims[i].table))
			return TKSHM_ENOTSUP; /* local and strict mixed */
		k.key[i] = tk_keyref_of(dims[i].table, dims[i].key,
					dims[i].key_len);
		k.made[i] = false;
	}
	k.now = now_ms;
	/* The coarse clock: a few ns instead of a fine read's twenty, and it
	 * lags the fine clock, so the time a give-back assumes has passed is
	 * never less than what has (tk_give_back: less given back, never
	 * more). */
	k.started = tk_mono_coarse_ms();
	rc = mode == TKSHM_MULTI_ALL ? tk_multi_all(dims, n, &k, d) :
				       tk_multi_any(dims, n, &k, d);
	if (rc != TKSHM_OK)
		return rc;
	b = tk_binding(mode, d, n);
	*out = d[b];
	if (mode == TKSHM_MULTI_ALL && !out->allowed) {
		/* `all` denied: per-dimension decisions that admitted were not
		 * consumed; the binding one says why. */
		for (size_t i = 0; i < n; i++)
			if (!d[i].allowed)
				tk_count(dims[i].table, TK_C_DENIED, 1);
	}
	if (each)
		memcpy(each, d, sizeof(tkshm_decision) * n);
	if (binding)
		*binding = b;
	return TKSHM_OK;
}

int
tkshm_check_multi(tkshm_multi_mode mode, const tkshm_dimension *dims, size_t n,
		  tkshm_decision *out, tkshm_decision *each, size_t *binding)
{
	return tkshm_check_multi_at(mode, dims, n, tkshm_now_ms(), out, each,
				    binding);
}
