/*
 * reload.h - SIGHUP: the configuration file read again, applied to the
 * running agent without dropping its leases.
 *
 * L1  A reload may change poll_ms, horizon_ms, heartbeat_ms,
 *     breaker_failures and breaker_open_ms (applied to the running agent,
 *     which keeps its connection, its leases and its measured rates), and
 *     add tables (each checked as --check does, then attached).
 * L2  It refuses, naming each key in a LOG_ERR line, a change to what the
 *     leases and the tables' registration were made with or what was set
 *     up at start: the Redis connection (redis_*, connect_timeout_ms,
 *     command_timeout_ms), host_id, server_time, pidfile and log, and a
 *     table dropped from the list.  A restart applies those.  The
 *     password is not compared (the daemon keeps no copy of it once the
 *     connection has it): a changed password needs a restart too.
 * L3  A file that does not load (a syntax error, a bad value, a new table
 *     that fails its check) or a refused change leaves the running
 *     configuration as it was, logged as "reload failed: ... keeping the
 *     running configuration".  Nothing is applied unless everything may
 *     be (a table that passes its check and then cannot be attached aside:
 *     that is logged, and the tables attached before it stay).
 * L4  The service manager hears RELOADING=1 first and READY=1 last
 *     (service.h S2), applied or not.
 */
#ifndef TKSHM_SYNCD_RELOAD_H
#define TKSHM_SYNCD_RELOAD_H

#include <stdbool.h>

#include "agent/agent.h"
#include "config.h"

/* Reloads cur->file into the running agent `a` and *cur (L1-L4); true when
 * the new configuration is in force.  redis_up: what the last round saw,
 * for the STATUS= line. */
bool sd_reload(struct sd_conf *cur, struct tk_agent *a, bool redis_up);

/* The STATUS= line of a running daemon: "serving N table(s), Redis at
 * ADDR up|down" into buf. */
void sd_status_line(const struct sd_conf *c, bool redis_up, char *buf,
		    size_t len);

#endif /* TKSHM_SYNCD_RELOAD_H */
