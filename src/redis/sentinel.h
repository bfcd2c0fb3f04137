/*
 * sentinel.h - the primary of a Sentinel-managed Redis (conn.h, C6).
 */
#ifndef TKSHM_REDIS_SENTINEL_H
#define TKSHM_REDIS_SENTINEL_H

#include <stddef.h>

#include "redis/conn.h"
#include "redis/node.h"

struct tk_sentinel;

/* The sentinels of conf->sentinels, asked for conf->sentinel_master.
 * Connects nothing yet.  TKSHM_OK, TKSHM_ENULL, TKSHM_EINVAL (no
 * sentinel, a bad address, no name), TKSHM_ENOMEM. */
int tk_sentinel_new(const struct tk_redis_conf *conf,
		    struct tk_sentinel **out);
void tk_sentinel_free(struct tk_sentinel *s);

/* Asks the sentinels in order for the primary's address, points `node`
 * at the first one named, and checks that it says ROLE master.
 * TKSHM_OK; TKSHM_EUNAVAILABLE (no sentinel answered, or the server
 * named is not a primary yet: a failover in progress), with the reason
 * in why. */
int tk_sentinel_resolve(struct tk_sentinel *s, struct tk_node *node,
			char *why, size_t len);

#endif /* TKSHM_REDIS_SENTINEL_H */
