/*
 * neg_cache.c - strict mode's exact negative cache (neg_cache.h).
 */
#include <math.h>
#include <string.h>

#include "algorithms/deny_bound.h"
#include "base/clock.h"
#include "redis/neg_cache.h"
#include "redis/redis_handle.h"
#include "redis/state_codec.h"
#include "shm/atomic.h"
#include "shm/wide.h"

/* The most whole ms a cached denial's fields are bounded over: Redis's
 * clock is known to within a round trip and 1 ms, so this is a round trip
 * of about a quarter second; a wider span (a hostile offset, a clock
 * step) leaves the check to Redis. */
#define TK_CACHE_SPAN_MAX_MS 256.0

/* Redis's time now, as [*low, *high]: the clock offsets measured from the
 * replies (server_time), or the caller's `now` (explicit timelines).
 * False when no bound is known. */
static bool
tk_cache_span(const struct tkshm_table *t, double now, double *low,
	      double *high)
{
	double off, off_low, local;

	if (!t->redis->server_time) {
		*low = *high = now;
		return true;
	}
	/* Relaxed: each offset any reply measured is a bound on its own, so
	 * the two need not come from the same reply. */
	off = tk_word_f64(tk_load_relaxed(&t->global->offset));
	off_low = tk_word_f64(tk_load_relaxed(&t->global->offset_low));
	/* No reply yet (0), or hostile values: no bound. */
	if (off == 0 || off_low == 0 || !isfinite(off) || !isfinite(off_low) ||
	    off_low > off)
		return false;
	local = tkshm_now_ms();
	*low = local + off_low;
	*high = local + off;
	return true;
}

double
tk_cache_now(const struct tkshm_table *t, double now)
{
	double low, high;

	/* Without a bound the estimate is pushed past every state (the
	 * cache then admits nothing to deny). */
	return tk_cache_span(t, now, &low, &high) ? high : INFINITY;
}

/* The key's cached state; false when the table holds none. */
static bool
tk_cache_lookup(struct tkshm_table *t, const void *key, size_t len,
		uint64_t *words)
{
	struct tk_where w;

	tk_where_of(t, tk_key_fp(t, key, len), &w);
	if (t->wide)
		return tk_wide_lookup(t, &w, words) == 1;
	return tk_find_real(t, &w, &words[0]) >= 0;
}

/* The bounded fields of the denial (deny_bound.h), the latest over every
 * time Redis can decide at: on its own clock a whole ms (the scripts floor
 * TIME) from floor(low) to floor(high); else the caller's now. */
static bool
tk_cache_fields(const struct tkshm_table *t, const uint64_t *words, double cost,
		double low, double high, tkshm_decision *d)
{
	double first = t->redis->server_time ? floor(low) : low;
	double last = t->redis->server_time ? floor(high) : high;
	tkshm_decision at;
	int span;

	if (!(last - first <= TK_CACHE_SPAN_MAX_MS) ||
	    !tk_algo_deny_bound_w(&t->algo, words, first, cost, d))
		return false;
	span = (int)(last - first); /* whole ms, at most the maximum */
	for (int i = 1; i <= span; i++) {
		if (!tk_algo_deny_bound_w(&t->algo, words, first + i, cost,
					  &at))
			return false;
		if (at.retry_after_ms > d->retry_after_ms)
			d->retry_after_ms = at.retry_after_ms;
		if (at.reset_at > d->reset_at)
			d->reset_at = at.reset_at;
	}
	return true;
}

bool
tk_cache_denies(struct tkshm_table *t, const void *key, size_t len, double cost,
		double now, tkshm_decision *d)
{
	uint64_t words[TK_ALGO_MAX_WORDS], next[TK_ALGO_MAX_WORDS];
	double low, high;

	if (!tk_cache_span(t, now, &low, &high) ||
	    !tk_cache_lookup(t, key, len, words))
		return false;
	/* The decision at the upper bound: Redis, at most that late, denies
	 * too (exactness, neg_cache.h). */
	if (tk_algo_check_w(&t->algo, true, words, high, cost, next, d) ||
	    !tk_cache_fields(t, words, cost, low, high, d))
		return false;
	d->flags |= TKSHM_DECISION_CACHED;
	return true;
}

/* Records the clock offsets a reply shows (server_time). */
static void
tk_cache_store_offsets(struct tkshm_table *t, double rnow, double sent)
{
	/* The script's now is floor()ed to the ms: +1 keeps local + offset
	 * at or above Redis's unfloored time.  The script ran before this
	 * host's clock reads `got`, so Redis's clock was at least rnow then:
	 * local + (rnow - got) stays at or below Redis's time. */
	double off = rnow - sent + 1;
	double off_low = rnow - tkshm_now_ms();

	/* Relaxed: each measured offset is a bound on its own; the latest
	 * keeps up with clock drift. */
	if (isfinite(off) && off != 0)
		tk_store_relaxed(&t->global->offset, tk_f64_word(off));
	if (isfinite(off_low) && off_low != 0)
		tk_store_relaxed(&t->global->offset_low, tk_f64_word(off_low));
}

void
tk_cache_store(struct tkshm_table *t, const void *key, size_t len,
	       const redisReply *reply, size_t first, double rnow, double sent)
{
	uint64_t words[TK_ALGO_MAX_WORDS];
	bool present = false;

	if (t->redis->server_time)
		tk_cache_store_offsets(t, rnow, sent);
	if (reply->elements < first ||
	    tk_state_from_reply(
		    &t->algo, (const redisReply *const *)reply->element + first,
		    reply->elements - first, words, &present) != TKSHM_OK ||
	    !present)
		return;
	/* A full table or contention only loses a cache entry. */
	(void)tk_table_set(t, key, len, rnow, words);
}
