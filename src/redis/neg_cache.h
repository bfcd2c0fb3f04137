/*
 * neg_cache.h - strict mode's exact negative cache.
 *
 * The table of a strict limit keeps, per key, the state the key's last
 * Redis reply returned (in the algorithm's own words), and the table's
 * shared region keeps `offset`: Redis's clock minus this host's, measured
 * as (the script's now) - (this host's clock just before sending).  The
 * script ran after the send, so offset is an upper bound of the true one,
 * and local time + offset an upper bound of Redis's time.
 *
 * A check is denied from the cache when the algorithm, run on the cached
 * state at that upper bound, denies it.  Exactness: Redis's true state
 * holds everything the cached one does and more (consumption only adds;
 * the windowed kinds forget only by time), and every algorithm denies
 * less with less consumed and with more time passed, so whatever the
 * cache denies Redis denies too.  The cache only ever denies; anything
 * else goes to Redis.
 */
#ifndef TKSHM_REDIS_NEG_CACHE_H
#define TKSHM_REDIS_NEG_CACHE_H

#include <stdbool.h>

#include "redis/conn.h"
#include "shm/table.h"

/* Redis's time as the cache estimates it now (server_time), or the
 * caller's `now` (explicit timelines). */
double tk_cache_now(const struct tkshm_table *t, double now);

/* True (with *d filled, flagged TKSHM_DECISION_CACHED) when the cached
 * state denies `cost` at `rnow`, Redis's time estimated by tk_cache_now. */
bool tk_cache_denies(struct tkshm_table *t, const void *key, size_t len,
		     double cost, double rnow, tkshm_decision *d);

/* Stores the state a reply returned (elements [first, n) of `reply`) for
 * the key, and the clock offset it shows: Redis decided at `rnow`; this
 * host sent at local `sent` (server_time only). */
void tk_cache_store(struct tkshm_table *t, const void *key, size_t len,
		    const redisReply *reply, size_t first, double rnow,
		    double sent);

#endif /* TKSHM_REDIS_NEG_CACHE_H */
