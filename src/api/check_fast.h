/*
 * check_fast.h - the common check, compiled into tkshm_check_at itself.
 *
 * Most checks are of a handle that has not followed a change, with valid
 * arguments, on a local, writable GCRA table (a one-word state) or pair
 * table (token bucket, fixed window, calendar quota, token budget).
 * That case needs none of the full call's branches on the table's kind,
 * scope and mode, nor a second function's frame: handle_calls.c runs it
 * inline, and anything else (an argument to refuse, another kind of table,
 * a table that changed) goes through the full call, which checks every
 * argument again in its contract's order and so returns the same error.
 */
#ifndef TKSHM_API_CHECK_FAST_H
#define TKSHM_API_CHECK_FAST_H

#include "global/route.h"
#include "shm/table.h"
#include "shm/validate.h"
#include "tkshm.h"

/* Internal: the fast path does not apply, nothing was done; the full call
 * decides.  Never returned to users (nor is TK_EMOVED). */
#define TK_NOT_FAST (-31998)

/* True when a check on instance t may take the fast path: GCRA (one
 * word) or a pair table (P1-P9), on this host's table, written in
 * place. */
static inline bool
tk_fast_table(const struct tkshm_table *t)
{
	return ((t->algo.kind == TKSHM_KIND_GCRA && !t->wide) || t->pairs) &&
	       !t->readonly && !tk_is_global(t);
}

/* What the fast path hands on to the table's full check (an absent key to
 * insert, a CAS lost to a rival): the key's window is made again from its
 * fingerprint here, out of line, so that the fast path keeps its own in
 * registers. */
static __attribute__((noinline, cold)) int
tk_check_fast_handoff(struct tkshm_table *t, const void *key, size_t key_len,
		      uint64_t fp, double cost, double now, tkshm_decision *out,
		      unsigned retries)
{
	struct tk_keyref k = { fp, key, key_len };
	struct tk_where w;

	tk_where_of(t, fp, &w);
	return tk_table_check_slow(t, &k, &w, cost, now, out, NULL, retries);
}

/* tk_table_check (table.h) on a table tk_fast_table accepts, of the key
 * whose window w is: GCRA's transition called directly, not through the
 * switch on the kind. */
static inline __attribute__((always_inline)) int
tk_check_gcra_fast(struct tkshm_table *t, const void *key, size_t key_len,
		   const struct tk_where *w, double cost, double now,
		   tkshm_decision *out)
{
	uint64_t st, nst = 0;
	bool allowed;
	int pos = tk_find_real(t, w, &st);

	if (__builtin_expect(pos < 0, 0))
		return tk_check_fast_handoff(t, key, key_len, w->fp, cost, now,
					     out, 0);
	allowed =
		tk_gcra_check(&t->algo.u.gcra, true, st, now, cost, &nst, out);
	if (tk_present_write(t, w, pos, st, allowed, nst, 0, out, NULL))
		return TKSHM_OK;
	tk_count(t, TK_C_CAS_RETRIES, 1);
	return tk_check_fast_handoff(t, key, key_len, w->fp, cost, now, out, 1);
}

/* A pair table's check of the key whose window w is (src/shm/pair_check.c:
 * one load of the key's pair, one CAS). */
static inline __attribute__((always_inline)) int
tk_check_pair_fast(struct tkshm_table *t, const void *key, size_t key_len,
		   const struct tk_where *w, double cost, double now,
		   tkshm_decision *out)
{
	struct tk_keyref k = { w->fp, key, key_len };

	return tk_pair_check(t, &k, w, cost, now, out, NULL);
}

/* The argument checks both fast paths make, each one the full call makes
 * (table_api.c, validate.h): the clock's `now` is checked once read. */
static inline bool
tk_fast_args(const struct tkshm_table *t, const void *key, size_t key_len,
	     double cost, const tkshm_decision *out)
{
	return out && tk_check_key(key, key_len) == TKSHM_OK &&
	       tk_check_cost(t, cost) == TKSHM_OK && tk_fast_table(t);
}

/* tk_api_check_at when every argument is valid and t may take the fast
 * path, else TK_NOT_FAST with nothing done. */
static inline __attribute__((always_inline)) int
tk_check_at_fast(struct tkshm_table *t, const void *key, size_t key_len,
		 double cost, double now_ms, tkshm_decision *out)
{
	struct tk_where w;

	if (!tk_fast_args(t, key, key_len, cost, out) ||
	    tk_check_now(now_ms) != TKSHM_OK)
		return TK_NOT_FAST;
	tk_where_of(t, tk_key_fp(t, key, key_len), &w);
	/* As tk_table_check_ref: b1 is fetched while b0 is read. */
	__builtin_prefetch(&t->buckets[w.b1], 1, 3);
	if (t->pairs)
		return tk_check_pair_fast(t, key, key_len, &w, cost, now_ms,
					  out);
	return tk_check_gcra_fast(t, key, key_len, &w, cost, now_ms, out);
}

/* tk_api_check likewise: both buckets of the key's window are fetched
 * before the clock is read, which hides their cache misses behind it (as
 * the full call does).  A clock out of range (TK_NOT_FAST) is read again
 * by the full call, which refuses it. */
static inline __attribute__((always_inline)) int
tk_check_fast(struct tkshm_table *t, const void *key, size_t key_len,
	      double cost, tkshm_decision *out)
{
	struct tk_where w;
	double now;

	if (!tk_fast_args(t, key, key_len, cost, out))
		return TK_NOT_FAST;
	tk_where_of(t, tk_key_fp(t, key, key_len), &w);
	tk_prefetch_where(t, &w);
	now = tkshm_now_ms();
	if (tk_check_now(now) != TKSHM_OK)
		return TK_NOT_FAST;
	if (t->pairs)
		return tk_check_pair_fast(t, key, key_len, &w, cost, now, out);
	return tk_check_gcra_fast(t, key, key_len, &w, cost, now, out);
}

#endif /* TKSHM_API_CHECK_FAST_H */
