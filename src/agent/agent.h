/*
 * agent.h - the lease agent's engine: what tkshm-syncd runs in its loop.
 * A client of the public API (it opens, follows and closes tables like any
 * program), so it is the layer above src/api/, built with the Redis tier.
 *
 * One agent per host attaches the host's lease tables (policy mode
 * "lease"), and in each round, for every table:
 *   1. scans the table's keys and their lease states (src/global/lease.h),
 *      estimating each key's local rate from the units its workers asked
 *      for since the last round;
 *   2. for every key whose spendable credit is at or below its low-water
 *      mark, leases budget from Redis (lease_gcra.lua / lease_window.lua,
 *      pipelined, at most one outstanding lease per key: a round waits for
 *      its replies), sized from the observed rate and capped at the
 *      limit's share of the last known number of hosts;
 *   3. writes each grant into the key's state with one table transition;
 *   4. every heartbeat period, registers the host (hosts.lua) and stores
 *      the live host count in the table for safe-share;
 *   5. publishes its pid, a heartbeat and whether Redis answered in the
 *      table's shared region (src/shm/layout_global.h), which is how
 *      workers know to apply the failure policy.
 * The agent never blocks a worker: workers only read what it wrote.
 */
#ifndef TKSHM_AGENT_AGENT_H
#define TKSHM_AGENT_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redis/conn.h"

struct tk_agent_conf {
	struct tk_redis_conf redis;
	double poll_ms;		   /* between rounds (default 1) */
	double horizon_ms;	   /* a lease covers this much of the local rate
				(default 100) */
	double heartbeat_ms;	   /* host registration period (default 1000) */
	unsigned breaker_failures; /* failures that open the circuit (3) */
	double breaker_open_ms;	   /* how long it stays open (500) */
	bool server_time;	   /* leases on Redis TIME (default true) */
	char host_id[128];	   /* this host's name in Redis (default: the
				hostname) */
};

/* What one round did (and the agent's totals, in tk_agent_totals). */
struct tk_agent_round {
	uint64_t keys_scanned;
	uint64_t leases_asked;	 /* commands sent */
	uint64_t leases_granted; /* replies with units > 0 */
	uint64_t units_granted;
	uint64_t round_trips;  /* pipelined exchanges with Redis */
	uint64_t redis_errors; /* exchanges that failed, and replies that
				  were not answers (error replies, wrong
				  types, fields out of range) */
	bool redis_up;	       /* Redis answered (or nothing was needed) */
};

struct tk_agent;

/* Fills `c` with the defaults above. */
void tk_agent_conf_init(struct tk_agent_conf *c);

/* TKSHM_OK, TKSHM_ENULL, TKSHM_EINVAL (a bad value, named in err),
 * TKSHM_ENOMEM. */
int tk_agent_new(const struct tk_agent_conf *c, struct tk_agent **out,
		 char *err, size_t err_len);

/* Applies c's periods and breaker settings (poll_ms, horizon_ms,
 * heartbeat_ms, breaker_failures, breaker_open_ms) to a running agent,
 * keeping its connection, tables, leases and rate estimates; the rest of
 * c is ignored.  TKSHM_OK, TKSHM_ENULL, TKSHM_EINVAL (a value out of
 * tk_agent_new's ranges, named in err; nothing changed). */
int tk_agent_tune(struct tk_agent *a, const struct tk_agent_conf *c, char *err,
		  size_t err_len);

/* Attaches the lease table at `path` (it must exist).  TKSHM_OK, the
 * errors of tkshm_open, TKSHM_ENOTSUP when the table is not in lease
 * mode, or TKSHM_EBUSY when another live agent serves it (named in
 * err). */
int tk_agent_add_table(struct tk_agent *a, const char *path, char *err,
		       size_t err_len);

/* One round over every table at `now_ms` (epoch ms, the clock the
 * workers pass).  Never fails: Redis being down is reported in *out and
 * in the tables. */
void tk_agent_round(struct tk_agent *a, double now_ms,
		    struct tk_agent_round *out);

/* Totals since tk_agent_new. */
void tk_agent_totals(const struct tk_agent *a, struct tk_agent_round *out);

/* Why the latest fault happened (the error reply's text, the I/O
 * failure...), "" when none did; for the daemon's log. */
void tk_agent_last_error(const struct tk_agent *a, char *buf, size_t len);

/* Detaches every table (clearing the agent's pid from them) and frees. */
void tk_agent_free(struct tk_agent *a);

#endif /* TKSHM_AGENT_AGENT_H */
