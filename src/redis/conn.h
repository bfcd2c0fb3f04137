/*
 * conn.h - one process's connection to Redis (hiredis 0.14, sync API): a
 * single server, a primary named by Sentinels, or a Redis Cluster, whose
 * calls go to the node of their keys' slot (cluster.h).
 *
 * C1  A connection belongs to the process that made it: every call checks
 *     getpid(), and a context inherited through fork() is dropped (its
 *     socket closed in this process only) and a new one made, so two
 *     processes never share one socket.
 * C2  Scripts go by EVALSHA.  Their sha1 is what SCRIPT LOAD answered on
 *     this connection; on a NOSCRIPT reply (the script was not run) the
 *     script is loaded again and the command resent once.
 * C3  A command that timed out or lost its connection is never resent: it
 *     may have run.  The context is freed (hiredis poisons it after a
 *     timeout) and the next call reconnects.
 * C4  A call ends within its command timeout once connected, whatever the
 *     server sends (a trickle of bytes, a reply that never ends): the
 *     command, a NOSCRIPT reload and its resend share one deadline.
 *     Connecting (TCP, AUTH, SELECT, SCRIPT LOAD) ends within the connect
 *     timeout, so a call that has to connect first adds at most that.
 *     One reply may hold a bounded number of elements and bytes
 *     (conn.c); a larger one fails the exchange (C3).
 * C5  Nothing here prints, aborts or exits; replies are returned to the
 *     caller, who frees them with freeReplyObject().
 * C6  Sentinel: the primary's address is asked of the sentinels (in their
 *     order) before connecting, again after a failed exchange or a
 *     READONLY reply (a demoted primary), and at least once a second; a
 *     server that does not say ROLE master is not used.  Cluster: cluster.h's K1-K5.
 */
#ifndef TKSHM_REDIS_CONN_H
#define TKSHM_REDIS_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "redis/addrs.h"
#include "redis/scripts.h"

struct tk_redis_conf {
	char host[256];		   /* default "127.0.0.1" */
	int port;		   /* default 6379 */
	char unix_path[108];	   /* when not empty: a unix socket instead */
	char username[128];	   /* AUTH username password (ACL), if both */
	char password[256];	   /* AUTH password, when not empty */
	int db;			   /* SELECT db, when not 0 */
	double connect_timeout_ms; /* default 200 */
	double command_timeout_ms; /* default 100 */
	/* A Redis Cluster: seed nodes "host:port[,host:port...]", or "".
	 * host, port and unix_path then name nothing. */
	char cluster[TK_REDIS_ADDRS_MAX];
	/* Sentinels "host:port[,...]" and the primary's name they monitor,
	 * or "" (both or neither). */
	char sentinels[TK_REDIS_ADDRS_MAX];
	char sentinel_master[128];
	/* No SCRIPT LOAD at connect: a Sentinel, which knows no scripts. */
	bool plain;
};

/* Counters of one connection (process-local), for stats. */
struct tk_conn_stats {
	uint64_t calls;	 /* commands sent */
	uint64_t errors; /* failed: unavailable or error reply */
	uint64_t noscript_reloads;
	uint64_t connects; /* successful (re)connections */
};

struct tk_conn;

/* One argument vector: n strings with their lengths. */
struct tk_args {
	int n;
	const char *const *v;
	const size_t *len;
};

/* Fills `c` with the defaults above. */
void tk_redis_conf_init(struct tk_redis_conf *c);

/* A connection that is not connected yet (it connects on first use, in
 * the using process).  TKSHM_OK, TKSHM_ENULL, TKSHM_EINVAL, TKSHM_ENOMEM. */
int tk_conn_new(const struct tk_redis_conf *conf, struct tk_conn **out);
void tk_conn_free(struct tk_conn *c);

/* Connects (and AUTH, SELECT, SCRIPT LOAD of every script) unless this
 * process is already connected.  TKSHM_OK; TKSHM_EUNAVAILABLE (refused,
 * timed out); TKSHM_EREDIS (AUTH or SELECT refused, a script refused). */
int tk_conn_ready(struct tk_conn *c);

/* EVALSHA of script `id` with `keys` and `args` (C2, C3).  On TKSHM_OK,
 * *reply is the script's reply (never an error reply); TKSHM_EREDIS: Redis
 * answered with an error (*reply NULL; errbuf, if given, gets its text);
 * TKSHM_EUNAVAILABLE: no answer (the script may or may not have run), or
 * a cluster that cannot serve the slot now (TRYAGAIN, CLUSTERDOWN, too
 * many redirections); TKSHM_ECROSSSLOT: on a cluster, keys of different
 * slots (nothing sent; errbuf names two of them). */
int tk_conn_eval(struct tk_conn *c, enum tk_script_id id,
		 const struct tk_args *keys, const struct tk_args *args,
		 redisReply **reply, char *errbuf, size_t errlen);

/* n EVALSHAs of script `id` pipelined in one write (C2 per command: only
 * the commands answered NOSCRIPT are resent, after one reload).  replies[i]
 * is the reply of command i, or NULL when it got an error reply.
 * TKSHM_OK when every command got an answer; TKSHM_EUNAVAILABLE when the
 * connection failed part way (replies[] then holds what arrived, the rest
 * NULL; none is resent). */
int tk_conn_eval_many(struct tk_conn *c, enum tk_script_id id, size_t n,
		      const struct tk_args *keys, const struct tk_args *args,
		      redisReply **replies);

/* A plain command (argv form, binary-safe).  Errors as tk_conn_eval; an
 * error reply is returned as TKSHM_EREDIS with its text in errbuf. */
int tk_conn_command(struct tk_conn *c, const struct tk_args *argv,
		    redisReply **reply, char *errbuf, size_t errlen);

/* Why this process's last call failed, or had an error reply (the
 * reply's text, the I/O failure); "" when it did not. */
void tk_conn_last_error(const struct tk_conn *c, char *buf, size_t len);

/* This connection's counters. */
void tk_conn_stats_get(const struct tk_conn *c, struct tk_conn_stats *out);

#endif /* TKSHM_REDIS_CONN_H */
