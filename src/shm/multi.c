/*
 * multi.c - the shared-memory `all` and `any` of several dimensions (keys
 * of one or more tables), tkshm_check_multi_at's local path (its
 * arguments' checks, strict dimensions and the binding decision are
 * src/api/multi.c's), and strict mode's local decision of dimensions
 * Redis did not answer (src/redis/strict.c).
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
#include <stdbool.h>
#include <string.h>

#include "base/clock.h"
#include "shm/multi.h"
#include "shm/table.h"
#include "tkshm.h"

/* Rounds of decide-then-commit before `all` settles for the latest denial. */
#define TK_MULTI_ROUNDS 64

/* One request's keys and commits, and when (in its callers' time) the
 * commits were made. */
struct tk_commits {
	struct tk_keyref key[TKSHM_MULTI_MAX]; /* each hashed once */
	bool repeats; /* some key is named by more than one dimension */
	struct tk_decided decided[TKSHM_MULTI_MAX]; /* `all`: this round's */
	struct tk_commit c[TKSHM_MULTI_MAX];
	bool made[TKSHM_MULTI_MAX];
	double now;	/* the request's now_ms */
	double started; /* tk_mono_coarse_ms() when the call began */
};

/* Whether dimensions i and j name one key: one fingerprint in one table. */
static bool
tk_same_key(const tkshm_dimension *dims, const struct tk_commits *k, size_t i,
	    size_t j)
{
	return k->key[i].fp == k->key[j].fp &&
	       tk_table_same(dims[i].table, dims[j].table);
}

/* Whether some key is named by more than one dimension. */
static bool
tk_has_repeats(const tkshm_dimension *dims, const struct tk_commits *k,
	       size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = 0; j < i; j++)
			if (tk_same_key(dims, k, i, j))
				return true;
	return false;
}

/* Commits dimension i, remembering what it changed: straight from what
 * `all` decided if the key's slot has not changed since (d already holds
 * that decision), otherwise by checking it again.  The decision is not
 * counted here: the caller counts it once it stands. */
static int
tk_commit_dim(const tkshm_dimension *dim, struct tk_commits *k, size_t i,
	      tkshm_decision *d, bool decided)
{
	int rc;

	k->c[i].uncounted = true;
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

/* `all`'s first look: every dimension decided on the stored states as if
 * it were alone.  *denied when one denies. */
static int
tk_decide_each(const tkshm_dimension *dims, size_t n, struct tk_commits *k,
	       tkshm_decision *d, bool *denied)
{
	*denied = false;
	for (size_t i = 0; i < n; i++) {
		int rc = tk_table_decide(dims[i].table, k->key[i].fp, k->now,
					 &dims[i].cost, 1, &d[i],
					 &k->decided[i]);
		if (rc != TKSHM_OK)
			return rc;
		*denied |= !d[i].allowed;
	}
	return TKSHM_OK;
}

/* `all`'s second look, when a key is named more than once: the dimensions
 * of each such key decided again in order, each on the state the earlier
 * ones would leave, as the commits would find them.  *denier is the first
 * dimension that then denies (n: none).  Every dimension before it, and
 * the denier, take their decision in that order (and its tk_decided);
 * those after it keep their first one. */
static int
tk_decide_in_order(const tkshm_dimension *dims, size_t n, struct tk_commits *k,
		   tkshm_decision *d, size_t *denier)
{
	tkshm_decision seq[TKSHM_MULTI_MAX];
	struct tk_decided seq_dd[TKSHM_MULTI_MAX];
	bool have[TKSHM_MULTI_MAX] = { false };

	*denier = n;
	for (size_t g = 0; g < n; g++) {
		tkshm_decision out[TKSHM_MULTI_MAX];
		struct tk_decided dd[TKSHM_MULTI_MAX];
		double cost[TKSHM_MULTI_MAX];
		size_t idx[TKSHM_MULTI_MAX], m = 0;
		bool first = true;
		int rc;

		for (size_t j = 0; j < g && first; j++)
			first = !tk_same_key(dims, k, g, j);
		if (!first)
			continue; /* decided with the key's first dimension */
		for (size_t i = g; i < n; i++)
			if (i == g || tk_same_key(dims, k, i, g)) {
				idx[m] = i;
				cost[m++] = dims[i].cost;
			}
		if (m < 2)
			continue; /* named once: its first look stands */
		rc = tk_table_decide(dims[g].table, k->key[g].fp, k->now, cost,
				     m, out, dd);
		if (rc != TKSHM_OK)
			return rc;
		for (size_t j = 0; j < m; j++) {
			seq[idx[j]] = out[j];
			seq_dd[idx[j]] = dd[j];
			have[idx[j]] = true;
			if (!out[j].allowed) {
				/* The key's sequence stops here. */
				if (idx[j] < *denier)
					*denier = idx[j];
				break;
			}
		}
	}
	for (size_t i = 0; i < n && i <= *denier; i++)
		if (have[i]) {
			d[i] = seq[i];
			k->decided[i] = seq_dd[i];
		}
	return TKSHM_OK;
}

void
tk_multi_count(tkshm_multi_mode mode, const tkshm_dimension *dims, size_t n,
	       const tkshm_decision *d)
{
	bool admitted = true;

	for (size_t i = 0; i < n; i++)
		admitted = admitted && d[i].allowed;
	for (size_t i = 0; i < n; i++) {
		if (!d[i].allowed)
			tk_count(dims[i].table, TK_C_DENIED, 1);
		else if (mode == TKSHM_MULTI_ANY || admitted)
			tk_count(dims[i].table, TK_C_ALLOWED, 1);
	}
}

/* `all`'s common case: one-word GCRA dimensions of present keys, each
 * decided on its slot as read, then each slot replaced by one CAS from
 * what was read (what tk_table_decide and tk_table_commit do, without
 * their records of a wider state).  TKSHM_OK when decided, the decisions
 * counted (a denial wrote nothing); TK_MULTI_GENERAL when the general
 * path must decide: a key absent (an insert, a debt to recall) or a CAS
 * lost, the commits before it given back. */
static int
tk_multi_all_gcra(const tkshm_dimension *dims, size_t n, struct tk_commits *k,
		  tkshm_decision *d)
{
	struct tk_where w[TKSHM_MULTI_MAX];
	uint64_t st[TKSHM_MULTI_MAX], nst[TKSHM_MULTI_MAX];
	int pos[TKSHM_MULTI_MAX];
	bool admits = true;

	for (size_t i = 0; i < n; i++) {
		struct tkshm_table *t = dims[i].table;

		tk_where_of(t, k->key[i].fp, &w[i]);
		pos[i] = tk_find_real(t, &w[i], &st[i]);
		if (pos[i] < 0)
			return TK_MULTI_GENERAL;
		admits &= tk_gcra_check(&t->algo.u.gcra, true, st[i], k->now,
					dims[i].cost, &nst[i], &d[i]);
	}
	if (!admits) {
		tk_multi_count(TKSHM_MULTI_ALL, dims, n, d);
		return TKSHM_OK;
	}
	for (size_t i = 0; i < n; i++) {
		struct tkshm_table *t = dims[i].table;

		/* Before anything is written: see tk_table_refund. */
		k->c[i].epoch = tk_table_epoch(t);
		if (!tk_cas128(tk_window_slot(t, &w[i], pos[i]), w[i].fp, st[i],
			       w[i].fp, nst[i])) {
			tk_count(t, TK_C_CAS_RETRIES, 1);
			tk_give_back(dims, k, i);
			return TK_MULTI_GENERAL;
		}
		tk_commit_note(&k->c[i], w[i].fp, true, st[i], nst[i]);
		k->c[i].now = k->now;
		k->made[i] = true;
	}
	/* Every dimension admitted, and it stands. */
	for (size_t i = 0; i < n; i++)
		tk_count(dims[i].table, TK_C_ALLOWED, 1);
	return TKSHM_OK;
}

static int
tk_multi_all(const tkshm_dimension *dims, size_t n, struct tk_commits *k,
	     tkshm_decision *d)
{
	for (unsigned round = 0;; round++) {
		size_t i;
		bool denied;
		int rc = tk_decide_each(dims, n, k, d, &denied);

		if (rc != TKSHM_OK || denied)
			return rc;
		if (k->repeats) {
			rc = tk_decide_in_order(dims, n, k, d, &i);
			if (rc != TKSHM_OK || i < n)
				return rc; /* the repeats deny together */
		}
		for (i = 0; i < n; i++) {
			rc = tk_commit_dim(&dims[i], k, i, &d[i], true);
			if (rc != TKSHM_OK) {
				tk_give_back(dims, k, i);
				return rc;
			}
			if (!d[i].allowed)
				break;
		}
		if (i == n)
			return TKSHM_OK;
		/* Another process took what dimension i needed. */
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

/* The request's keys hashed (each window fetched: with keys beyond the
 * cache, the dimensions' misses overlap instead of adding up), whether
 * one is named twice, and when the call began. */
static void
tk_commits_init(const tkshm_dimension *dims, size_t n, double now_ms,
		struct tk_commits *k)
{
	for (size_t i = 0; i < n; i++) {
		k->key[i] = tk_keyref_of(dims[i].table, dims[i].key,
					 dims[i].key_len);
		k->made[i] = false;
		tk_prefetch_key(dims[i].table, k->key[i].fp);
	}
	k->repeats = tk_has_repeats(dims, k, n);
	k->now = now_ms;
	/* The coarse clock: a few ns instead of a fine read's twenty, and it
	 * lags the fine clock, so the time a give-back assumes has passed is
	 * never less than what has (tk_give_back: less given back, never
	 * more). */
	k->started = tk_mono_coarse_ms();
}

int
tk_multi_all_one_word(const tkshm_dimension *dims, size_t n, double now_ms,
		      tkshm_decision *d)
{
	struct tk_commits k;

	tk_commits_init(dims, n, now_ms, &k);
	if (k.repeats)
		return TK_MULTI_GENERAL;
	return tk_multi_all_gcra(dims, n, &k, d);
}

int
tk_multi_local(tkshm_multi_mode mode, const tkshm_dimension *dims, size_t n,
	       double now_ms, tkshm_decision *d)
{
	struct tk_commits k;
	int rc;

	tk_commits_init(dims, n, now_ms, &k);
	rc = mode == TKSHM_MULTI_ALL ? tk_multi_all(dims, n, &k, d) :
				       tk_multi_any(dims, n, &k, d);
	if (rc == TKSHM_OK)
		tk_multi_count(mode, dims, n, d);
	return rc;
}
