/*
 * baseline_redis.h - redis-strict: every decision is one synchronous
 * EVALSHA round trip to a local redis-server running a GCRA Lua script with
 * ThrottleKit's arithmetic (the script is in baseline_redis.c).
 *
 * The driver starts its own redis-server on 127.0.0.1, on a free port, in a
 * temporary directory, with persistence off, and stops it at the end (and
 * on every error path; cleanup.c on a signal).  Built without hiredis, or
 * run where redis-server is absent, the case is skipped with a reason.
 */
#ifndef TKSHM_BENCH_PROCS_BASELINE_REDIS_H
#define TKSHM_BENCH_PROCS_BASELINE_REDIS_H

#include <stddef.h>
#include <sys/types.h>

#include "tkshm.h"

struct redis_server {
	pid_t pid; /* 0: not running */
	int port;
	char dir[64]; /* its temporary directory, "" when none */
};

/* Starts redis-server and waits until it answers PING.  Returns 0 when it
 * runs, 1 when the case must be skipped (no hiredis in this build, no
 * redis-server on PATH), -1 on an error; `why` gets a sentence for 1 and
 * -1. */
int redis_server_start(struct redis_server *s, char *why, size_t why_len);

/* Stops the server (SIGTERM, then SIGKILL after 2 s) and removes its
 * directory.  Harmless on a server that never started. */
void redis_server_stop(struct redis_server *s);

struct redis_client;

/* Connects to the server on `port` and loads the script for `policy`
 * (GCRA only).  Returns TKSHM_OK or TKSHM_ESYSTEM with a sentence. */
int redis_client_open(int port, const tkshm_policy *policy,
		      struct redis_client **out, char *err, size_t err_len);

/* One decision at `now_ms`.  Returns TKSHM_OK, or TKSHM_ESYSTEM with the
 * reason in redis_client_error().  Reloads the script on NOSCRIPT. */
int redis_client_check(struct redis_client *c, const void *key, size_t key_len,
		       double cost, double now_ms, tkshm_decision *out);

const char *redis_client_error(const struct redis_client *c);

void redis_client_close(struct redis_client *c);

#endif /* TKSHM_BENCH_PROCS_BASELINE_REDIS_H */
