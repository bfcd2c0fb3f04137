/*
 * redis_handle.h - what a tkshm_redis handle holds (tkshm_redis.h), shared
 * by the strict path's files.
 */
#ifndef TKSHM_REDIS_REDIS_HANDLE_H
#define TKSHM_REDIS_REDIS_HANDLE_H

#include <stdbool.h>

#include "redis/conn.h"
#include "shm/table.h"
#include "tkshm_redis.h"

struct tkshm_redis {
	struct tk_conn *conn;
	struct tk_redis_conf conf;
	bool server_time;
	unsigned breaker_failures;
	double breaker_open_ms;
	char host_id[128];
};

/* The Redis key of a table's key: "prefix:key", or the key alone.
 * Returns the length, or 0 when it does not fit `cap`. */
size_t tk_redis_key_of(const struct tkshm_table *t, const void *key, size_t len,
		       char *buf, size_t cap);

/* A multi-dimensional key: "prefix:{key}" (ThrottleKit's
 * "name:rawKey" with the raw key as its own hash tag, so the dimensions
 * of one raw key share a Cluster slot); a key that already holds a tag
 * ("{...}") is used as it is.  Returns the length or 0. */
size_t tk_redis_multi_key_of(const struct tkshm_table *t, const void *key,
			     size_t len, char *buf, size_t cap);

/* True when `reply` is a valid answer of the script the caller sent for
 * table `t` (what it needs may be decoded into ctx on the way). */
typedef bool (*tk_reply_valid_fn)(const struct tkshm_table *t,
				  const redisReply *reply, void *ctx);

/* One exchange with Redis for table `t`, guarded by the table's shared
 * circuit breaker, with the table's counters kept.  TKSHM_OK: *reply is
 * set and `valid` (NULL: any reply that is not an error) accepted it.
 * Anything else is a Redis fault, counted as a failure by the breaker
 * and in the table's redis_errors: TKSHM_EUNAVAILABLE (no call made
 * because the circuit is open, or no answer in time), TKSHM_EREDIS (an
 * error reply, or a reply `valid` refused), TKSHM_ENOMEM. */
int tk_redis_call(struct tkshm_table *t, enum tk_script_id id,
		  const struct tk_args *keys, const struct tk_args *args,
		  tk_reply_valid_fn valid, void *ctx, redisReply **reply);

/* hosts.lua's call for table t (the set "tkshm:hosts:<prefix>", shared
 * by strict workers and lease agents of one limit): KEYS and ARGV point
 * into the struct, so it is filled in place and never copied. */
struct tk_hosts_req {
	char key[TKSHM_PREFIX_MAX + 16], now_s[40], ttl_s[40];
	const char *kv[1], *av[3];
	size_t kl[1], al[3];
	struct tk_args keys, args;
};
void tk_hosts_req_init(struct tk_hosts_req *q, const struct tkshm_table *t,
		       const char *host_id, double now, double ttl_ms);

/* True when `y` is hosts.lua's answer: an array whose first element is
 * the live host count, 1..1000000. */
bool tk_hosts_valid(const struct tkshm_table *t, const redisReply *y,
		    void *unused);

/* Stores the live host count of a valid hosts.lua reply in the table. */
void tk_hosts_store(struct tkshm_table *t, const redisReply *y);

/* Registers this host for the table's limit at most once a second per
 * host (the first worker past the deadline does it) and stores the live
 * host count in the table for safe-share. */
void tk_redis_hosts_tick(struct tkshm_table *t);

#endif /* TKSHM_REDIS_REDIS_HANDLE_H */
