/*
 * route.h - where a check of a non-local table goes.
 *
 * The public calls (src/api/) route a table whose policy mode is not
 * local here after validating their arguments: a lease table to its lease
 * state (lease_check.h), a strict table to the Redis connection attached
 * to it (tkshm_redis_attach, src/redis/strict.c), whose operations the
 * handle reaches through `struct tk_strict_ops` (so the core never links
 * a Redis client itself).
 */
#ifndef TKSHM_GLOBAL_ROUTE_H
#define TKSHM_GLOBAL_ROUTE_H

#include "shm/table.h"
#include "tkshm.h"

struct tk_strict_ops {
	int (*check)(struct tkshm_table *t, const void *key, size_t len,
		     double cost, double now, tkshm_decision *out);
	int (*peek)(struct tkshm_table *t, const void *key, size_t len,
		    double now, tkshm_decision *out);
	int (*reserve)(struct tkshm_table *t, const void *key, size_t len,
		       double cost, double now, tkshm_reservation *out);
	/* Every dimension strict with this connection; fills each[]. */
	int (*multi)(tkshm_multi_mode mode, const tkshm_dimension *dims,
		     size_t n, double now, tkshm_decision *each);
};

static inline bool
tk_is_global(const struct tkshm_table *t)
{
	return t->policy.global.mode != TKSHM_MODE_LOCAL;
}

/* The check, peek and reservation of a non-local table. */
int tk_global_check(struct tkshm_table *t, const void *key, size_t len,
		    double cost, double now, tkshm_decision *out);
int tk_global_peek(struct tkshm_table *t, const void *key, size_t len,
		   double now, tkshm_decision *out);
int tk_global_reserve(struct tkshm_table *t, const void *key, size_t len,
		      double cost, double now, tkshm_reservation *out);

#endif /* TKSHM_GLOBAL_ROUTE_H */
