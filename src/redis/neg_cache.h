/*
 * neg_cache.h - strict mode's exact negative cache.
 *
 * The table of a strict limit keeps, per key, the state the key's last
 * Redis reply returned (in the algorithm's own words), and the table's
 * shared region keeps two measures of Redis's clock minus this host's:
 * `offset`, (the script's now) - (this host's clock just before sending),
 * an upper bound (the script ran after the send), and `offset_low`, (the
 * script's now) - (this host's clock after the reply), a lower bound.
 * Redis's time now is within [local + offset_low, local + offset].
 *
 * A check is denied from the cache when the algorithm, run on the cached
 * state at the upper bound, denies it.  Exactness: Redis's true state
 * holds everything the cached one does and more (consumption only adds;
 * the windowed kinds forget only by time), and every algorithm denies
 * less with less consumed and with more time passed, so whatever the
 * cache denies Redis denies too.  The cache only ever denies; anything
 * else goes to Redis.
 *
 * The denial's fields are bounds, not the cached state's own (which other
 * hosts' consumption makes early): those of the worst state Redis can
 * hold (algorithms/deny_bound.h), at every whole ms Redis's clock can
 * read (server_time) or at the caller's now, the latest of them.  So
 * retryAfterMs and resetAt are never earlier than Redis's, and remaining
 * is 0.
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
 * state denies `cost` at Redis's time as tk_cache_now estimates it from
 * the caller's `now`; *d then holds the bounded fields (above). */
bool tk_cache_denies(struct tkshm_table *t, const void *key, size_t len,
		     double cost, double now, tkshm_decision *d);

/* Stores the state a reply returned (elements [first, n) of `reply`) for
 * the key, and the clock offsets it shows: Redis decided at `rnow`; this
 * host sent at local `sent` and reads its clock again on receipt
 * (server_time only). */
void tk_cache_store(struct tkshm_table *t, const void *key, size_t len,
		    const redisReply *reply, size_t first, double rnow,
		    double sent);

#endif /* TKSHM_REDIS_NEG_CACHE_H */
