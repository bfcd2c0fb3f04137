/*
 * redis_server.h - a private redis-server for one test.
 *
 * tkt_redis_start() runs TKSHM_REDIS_SERVER on 127.0.0.1 and a port no
 * other test uses, in a private directory (mkdtemp under /tmp), with no
 * persistence (--save "" --appendonly no), in the foreground
 * (--daemonize no), also listening on a unix socket in that directory,
 * and with DEBUG allowed from local clients (--enable-debug-command
 * local: DEBUG SLEEP makes a slow server).  The server gets SIGKILL when
 * the thread that started it exits (PR_SET_PDEATHSIG), so a test that
 * crashes leaves no server behind: start servers from the main thread.
 * The server inherits none of the test's descriptors (its output goes
 * to redis.log in its directory), so a restart in the middle of a test
 * never holds a pipe of the test's open.
 * The directory names its test process (a file `owner`); a start removes
 * the directories of test processes that no longer exist (killed by a
 * ctest timeout before their teardown).  The servers of a set (a Redis
 * Cluster, a Sentinel set: redis_cluster.h) have their directories in
 * the set's, which names its owner in the same way (tkt_redis_mkdir).
 *
 * Ports: a random port below the kernel's ephemeral range (so no client
 * socket of any test holds it), checked free with bind(), then taken by
 * redis-server; when another test took it first, the server exits and
 * the start is retried on another port.  A cluster node also needs its
 * bus port, port + 10000, free and below 65536: node ports stay below
 * 45536.  The server is known up when it answers PING on its unix socket,
 * which only this server can have made.
 *
 * Every helper fails the running cmocka test (fail_msg) instead of
 * returning an error, like test_support.h's; so none of them may be
 * called in a forked child.  Only the process that started a server
 * stops, kills or restarts it.
 */
#ifndef TKSHM_TEST_REDIS_SERVER_H
#define TKSHM_TEST_REDIS_SERVER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "redis/conn.h"

struct tkt_redis {
	pid_t pid;		 /* the redis-server; 0 when not running */
	pid_t owner;		 /* the process that started it */
	int port;		 /* its TCP port on 127.0.0.1 */
	char dir[64];		 /* its private directory (redis.log) */
	char unix_path[108];	 /* its unix socket, in dir */
	const char *const *args; /* extra server arguments, or NULL */
	/* Set between tkt_redis_init and tkt_redis_run (0 otherwise): */
	const char *conf; /* a file in dir given before the options (a
			   * sentinel's configuration), or NULL */
	bool cluster;	  /* a cluster node: --cluster-enabled yes, a new
			   * nodes.conf at each start, its bus port free */
};

/* Starts a server; fails the test unless it answers PING within 10 s. */
void tkt_redis_start(struct tkt_redis *r);
/* The same with extra server arguments: a NULL-terminated list, e.g.
 * { "--maxmemory", "1mb", NULL }.  The list must outlive the server
 * (tkt_redis_restart passes it again). */
void tkt_redis_start_args(struct tkt_redis *r, const char *const *args);
/* SIGCONT (in case it is stopped), SIGTERM, a wait of up to 5 s (then
 * SIGKILL), and the directory removed.  Does nothing when not started, or
 * when called by a process that did not start it. */
void tkt_redis_stop(struct tkt_redis *r);
/* The same for the `n` servers of an array at once (a stop is the slowest
 * part of a short test): SIGTERM to all, then up to 5 s for them all. */
void tkt_redis_stop_all(struct tkt_redis *rs, int n);

/* tkt_redis_start_args in two steps, for the servers of a set.
 * tkt_redis_init makes the server's directory: in `parent` (made by
 * tkt_redis_mkdir, removed by its maker) or, when NULL, its own in /tmp.
 * The caller may then set `conf` and `cluster` and write files there.
 * tkt_redis_run starts it on a free port; false when it would not start,
 * so that the caller can stop what else it started before it fails the
 * test (tkt_redis_show_log explains; tkt_redis_stop removes the
 * directory). */
void tkt_redis_init(struct tkt_redis *r, const char *parent,
		    const char *const *args);
bool tkt_redis_run(struct tkt_redis *r);
/* A private directory /tmp/<prefix>XXXXXX naming this process in a file
 * `owner`, after removing those of dead processes; the prefix is one a
 * start sweeps: "tkt-redis-", "tkt-cluster-" or "tkt-sentinel-". */
void tkt_redis_mkdir(char *dir, size_t size, const char *prefix);
/* Removes a directory and everything in it. */
void tkt_redis_rmdir(const char *dir);
/* Runs argv[0] (a path) as the servers are run: in `dir`, its output
 * appended to `log`, with none of the test's descriptors, and killed when
 * the thread that started it exits.  Returns its pid. */
pid_t tkt_redis_exec(const char *const *argv, const char *dir, const char *log);
/* The last lines of the server's redis.log (of a file) on stderr, each
 * after "port N: " (`label: `), to explain a failure. */
void tkt_redis_show_log(const struct tkt_redis *r);
void tkt_redis_show_file(const char *path, const char *label);
/* kill -9 and reap; the port and directory are kept for a restart. */
void tkt_redis_kill(struct tkt_redis *r);
/* Starts the server again on the same port (after tkt_redis_kill), with
 * an empty dataset and script cache; fails the test if it cannot within
 * 10 s. */
void tkt_redis_restart(struct tkt_redis *r);
/* SIGSTOP, returning once the server is stopped; SIGCONT, returning once
 * it runs again.  A stopped server still completes TCP handshakes (the
 * kernel does) but answers nothing. */
void tkt_redis_sigstop(struct tkt_redis *r);
void tkt_redis_sigcont(struct tkt_redis *r);
/* CLIENT PAUSE ms ALL: every client's commands wait `ms` milliseconds. */
void tkt_redis_pause(struct tkt_redis *r, long ms);

/* One command, each argument a NUL-terminated string, the list ended by
 * NULL: tkt_redis_cmd(r, "CLIENT", "PAUSE", "500", NULL).  It goes over
 * a new connection (unix socket, 5 s timeout) closed afterwards, so it
 * works across restarts.  Returns the reply (an error reply too), which
 * the caller frees with freeReplyObject(); fails the test when the
 * server does not answer. */
redisReply *tkt_redis_cmd(const struct tkt_redis *r, const char *arg, ...);
/* The same with hiredis's printf-style redisCommand format:
 * tkt_redis_cmdf(r, "HGET %s c", key). */
redisReply *tkt_redis_cmdf(const struct tkt_redis *r, const char *fmt, ...);
redisReply *tkt_redis_vcmdf(const struct tkt_redis *r, const char *fmt,
			    va_list ap);
/* The same with binary-safe arguments (lens may be NULL: strings). */
redisReply *tkt_redis_argv(const struct tkt_redis *r, int argc,
			   const char **argv, const size_t *lens);
/* tkt_redis_cmdf that returns NULL instead of failing when the server is
 * not running or does not answer within timeout_ms: for polls that go on
 * across a server's death. */
redisReply *tkt_redis_try(const struct tkt_redis *r, long timeout_ms,
			  const char *fmt, ...);
/* tkt_redis_cmd for an integer: an integer reply, or a string reply
 * holding one (GET, HGET); a nil reply is 0.  Fails the test otherwise. */
long long tkt_redis_int(struct tkt_redis *r, const char *arg, ...);

/* FLUSHALL: every key gone. */
void tkt_redis_flushall(struct tkt_redis *r);
/* Removes every key's TTL (one Lua call: no key names to build).  On an
 * explicit (simulated) clock Redis's TTLs still run on real time: a state
 * a few simulated ms from idle could expire between two steps. */
void tkt_redis_persist_all(struct tkt_redis *r);

/* A tkshm_redis connection to the server on `port` for strict tables:
 * the given clock and timeouts, a breaker that opens after 2 failures for
 * 300 ms. */
struct tkshm_redis;
struct tkshm_redis *tkt_strict_connect(int port, bool server_time,
				       double timeout_ms);
/* An anonymous table of `spec` (its ";mode=strict,..." included, 1024
 * slots) attached to the connection. */
struct tkshm_table;
struct tkshm_table *tkt_strict_table(const char *spec, struct tkshm_redis *r);

/* A new TCP connection to the server (5 s timeout) for a test that
 * drives hiredis itself; the caller redisFree()s it. */
redisContext *tkt_redis_connect(struct tkt_redis *r);

/* A tk_redis_conf for this server over TCP: the defaults of
 * tk_redis_conf_init with its host and port. */
void tkt_redis_conf(const struct tkt_redis *r, struct tk_redis_conf *conf);

/* A cmocka group fixture for a test file whose tests share one server,
 * tkt_srv: the setup starts it (tkt_redis_start), the teardown stops it
 * and removes the test's table directory (tkt_teardown).
 *   cmocka_run_group_tests(tests, tkt_redis_group_setup,
 *                          tkt_redis_group_teardown); */
extern struct tkt_redis tkt_srv;
int tkt_redis_group_setup(void **state);
int tkt_redis_group_teardown(void **state);

/* A TCP port on 127.0.0.1 that refuses connections: a socket bound to it
 * and not listening, kept open in *holder so no one else can take the
 * port; close(*holder) when done. */
int tkt_redis_refusing_port(int *holder);

#endif
