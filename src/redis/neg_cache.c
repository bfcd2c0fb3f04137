/*
 * neg_cache.c - strict mode's exact negative cache (neg_cache.h).
 */
#include <math.h>
#include <string.h>

#include "redis/neg_cache.h"
#include "redis/redis_handle.h"
#include "redis/state_codec.h"
#include "shm/wide.h"

double
tk_cache_now(const struct tkshm_table *t, double now)
{
	double off;

	if (!t->redis->server_time)
		return now;
	/* Relaxed: any offset a reply measured is an upper bound. */
	off = tk_word_f64(
		atomic_load_explicit(&t->global->offset, memory_order_relaxed));
	/* No reply yet (0), or a hostile value: no cached denial can be
	 * trusted without a bound, so the estimate is pushed past every
	 * state (the cache then admits nothing to deny). */
	if (off == 0 || !isfinite(off))
		return INFINITY;
	return tkshm_now_ms() + off;
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

bool
tk_cache_denies(struct tkshm_table *t, const void *key, size_t len, double cost,
		double rnow, tkshm_decision *d)
{
	uint64_t words[TK_ALGO_MAX_WORDS], next[TK_ALGO_MAX_WORDS];

	if (!isfinite(rnow) || !tk_cache_lookup(t, key, len, words))
		return false;
	if (tk_algo_check_w(&t->algo, true, words, rnow, cost, next, d))
		return false;
	d->flags |= TKSHM_DECISION_CACHED;
	return true;
}

void
tk_cache_store(struct tkshm_table *t, const void *key, size_t len,
	       const redisReply *reply, size_t first, double rnow, double sent)
{
	uint64_t words[TK_ALGO_MAX_WORDS];
	bool present = false;

	if (t->redis->server_time) {
		/* The script's now is floor()ed to the ms: +1 keeps
		 * local + offset at or above Redis's unfloored time. */
		double off = rnow - sent + 1;

		/* Relaxed: each measured offset is an upper bound on its
		 * own; the latest keeps up with clock drift. */
		if (isfinite(off) && off != 0)
			atomic_store_explicit(&t->global->offset,
					      tk_f64_word(off),
					      memory_order_relaxed);
	}
	if (reply->elements < first ||
	    tk_state_from_reply(
		    &t->algo, (const redisReply *const *)reply->element + first,
		    reply->elements - first, words, &present) != TKSHM_OK ||
	    !present)
		return;
	/* A full table or contention only loses a cache entry. */
	(void)tk_table_set(t, key, len, rnow, words);
}
