/*
 * strict.h - strict mode: one atomic Lua script per decision.
 *
 * A check of a strict table:
 *   1. asks the table's negative cache (neg_cache.h): if the state Redis
 *      last returned for the key still denies this cost at an upper
 *      bound of Redis's time, the check is denied here, without a round
 *      trip (exact: it never denies what Redis would admit, never
 *      admits; its fields are bounds never earlier than Redis's);
 *   2. otherwise runs the algorithm's script (EVALSHA, through the
 *      table's shared circuit breaker), returns its decision unchanged
 *      and caches the state it returned;
 *   3. when Redis does not answer (or the circuit is open), decides by
 *      the table's failure policy: fail-open admits, fail-closed denies,
 *      safe-share runs the algorithm locally on this host's share
 *      (limit / hosts), under a key of its own in the same table.
 */
#ifndef TKSHM_REDIS_STRICT_H
#define TKSHM_REDIS_STRICT_H

#include "global/route.h"

extern const struct tk_strict_ops tk_strict_ops;

#endif /* TKSHM_REDIS_STRICT_H */
