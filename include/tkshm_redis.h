/*
 * tkshm_redis.h - the Redis tier's public calls: a connection for strict
 * tables.
 *
 * A table whose policy says `mode=strict` decides every check with one
 * atomic Lua script on Redis, wire-compatible with ThrottleKit (same keys,
 * state encodings and arguments), so tkshm hosts and ThrottleKit services
 * share one limit.  Its checks go through the connection attached here;
 * the table itself keeps an exact negative cache (denied states, so that
 * repeated checks of a denied key are answered locally, with fields that
 * are bounds never earlier than Redis's: TKSHM_DECISION_CACHED) and the
 * failure policy's safe share.
 *
 * Lease tables (`mode=lease`) need no connection in the workers: the
 * host's tkshm-syncd leases budget for them.
 *
 * Available when the library was built with hiredis (libhiredis-dev).
 * Every call follows tkshm.h's conventions: negative tkshm_error codes,
 * nothing printed, nothing aborted.
 */
#ifndef TKSHM_REDIS_H
#define TKSHM_REDIS_H

#include <stdbool.h>

#include "tkshm.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A process's connection settings for strict tables.  Opaque. */
typedef struct tkshm_redis tkshm_redis;

/** Options for tkshm_redis_open().  Initialise with
 *  TKSHM_REDIS_OPTIONS_INIT. */
typedef struct tkshm_redis_options {
	size_t size;		   /**< sizeof(tkshm_redis_options) */
	const char *host;	   /**< NULL: "127.0.0.1" */
	int port;		   /**< 0: 6379 */
	const char *unix_path;	   /**< a unix socket instead of host:port */
	const char *username;	   /**< ACL user (with password), or NULL */
	const char *password;	   /**< AUTH password, or NULL */
	int db;			   /**< SELECT this database when not 0 */
	double connect_timeout_ms; /**< the TCP connect and the handshake
				      (AUTH, SELECT, SCRIPT LOAD); 0: 200.
				      Each duration here is 0 or 1 ms to 1
				      hour (3600000), else TKSHM_EINVAL. */
	/** Deadline of one check's exchange with Redis once connected
	 *  (the script, a NOSCRIPT reload and its resend), whatever the
	 *  server sends; 0: 100.  A command that times out is never resent
	 *  (it may have run): the check gets the failure policy's
	 *  decision, as it does for any reply that is not a valid answer
	 *  (an error reply, a wrong type, a field out of range). */
	double command_timeout_ms;
	/** Consecutive failures that open the circuit breaker (shared by
	 *  the host's processes through each table); 0: 3. */
	unsigned breaker_failures;
	/** How long an open circuit keeps workers away from Redis before
	 *  one probe; 0: 1000. */
	double breaker_open_ms;
	/** true: scripts run on the Redis server's TIME (ThrottleKit's
	 *  `now = 0`), so every host shares one clock; the `now` a caller
	 *  passes only ages the negative cache.  false: the caller's `now`
	 *  is sent (deterministic timelines; every host must pass the same
	 *  clock).  Default true. */
	bool server_time;
	/** A Redis Cluster instead of one server: some of its nodes,
	 *  "host:port[,host:port...]" (at most 16; "[::1]:7000" for IPv6).
	 *  The slot map is asked of them; every call goes to the node of its
	 *  key's slot, following MOVED and ASK.  host, port, unix_path and db
	 *  are then ignored; AUTH and the timeouts apply to every node.  A
	 *  multi-dimensional check's keys must share a hash tag
	 *  ("{user42}:minute"), else TKSHM_ECROSSSLOT.  NULL: no cluster. */
	const char *cluster;
	/** A primary managed by Redis Sentinel: the sentinels,
	 *  "host:port[,...]", asked in order for the address of the primary
	 *  named sentinel_master, before connecting and again after a
	 *  failure or a demotion (a READONLY reply).  host and port are then
	 *  ignored; AUTH and SELECT apply to the primary.  Both or neither;
	 *  not with cluster. */
	const char *sentinels;
	const char *sentinel_master;
} tkshm_redis_options;

#define TKSHM_REDIS_OPTIONS_INIT                                              \
	{                                                                     \
		sizeof(tkshm_redis_options), NULL, 0, NULL, NULL, NULL, 0, 0, \
			0, 0, 0, true, NULL, NULL, NULL                       \
	}

/** Makes a connection handle.  It connects on first use, in the process
 *  that uses it, and never shares a socket across fork(): a child that
 *  uses its parent's handle gets its own connection.
 *  @return TKSHM_OK; TKSHM_ENULL; TKSHM_EINVAL (a bad option: a negative
 *  timeout, a host or path too long, an address list that does not
 *  parse, cluster with sentinels, sentinels without sentinel_master);
 *  TKSHM_ENOMEM.
 *  Threads: a handle is used by one thread at a time. */
TKSHM_API int tkshm_redis_open(const tkshm_redis_options *opts,
			       tkshm_redis **out);

/** Closes this process's connection and frees the handle.  Tables it is
 *  attached to must be detached (tkshm_redis_attach(t, NULL)) or closed
 *  first.  NULL is ignored. */
TKSHM_API void tkshm_redis_close(tkshm_redis *r);

/** Attaches `r` to the strict table `t`: its checks, peeks, reservations
 *  and multi-dimensional checks go to Redis through `r`.  NULL detaches.
 *  Several tables may share one handle.  Detaching always succeeds.
 *  @return TKSHM_OK; TKSHM_ENULL; TKSHM_ENOTSUP (attaching to a table
 *  that is not strict). */
TKSHM_API int tkshm_redis_attach(tkshm_table *t, tkshm_redis *r);

/** Why this process's last exchange through `r` failed, in words: the
 *  error reply's text, the I/O failure, or for TKSHM_ECROSSSLOT the two
 *  keys and their slots.  Writes at most `len` bytes (NUL included); ""
 *  when the last exchange worked.
 *  @return TKSHM_OK; TKSHM_ENULL.  Threads: as the handle. */
TKSHM_API int tkshm_redis_last_error(const tkshm_redis *r, char *buf,
				     size_t len);

/** How a strict key is named in Redis: "prefix:key" (or the key itself
 *  when the table has no prefix), ThrottleKit's limiter key.  Writes at
 *  most `len` bytes (NUL included).
 *  @return the length (without NUL), TKSHM_ENULL, or TKSHM_EINVAL when
 *  it does not fit. */
TKSHM_API int tkshm_redis_key(const tkshm_table *t, const void *key,
			      size_t key_len, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* TKSHM_REDIS_H */
