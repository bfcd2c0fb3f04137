/*
 * node.h - one process's connection to one Redis server (node.c).  The
 * contract of conn.h (C1-C5) holds for each node; conn.c and cluster.c
 * decide which node a call goes to.
 */
#ifndef TKSHM_REDIS_NODE_H
#define TKSHM_REDIS_NODE_H

#include <stdbool.h>

#include "redis/conn.h"

/* Room for the text of one error reply of a pipeline (a redirection's
 * "MOVED 3999 127.0.0.1:30002" fits). */
#define TK_NODE_ERR_LEN 96

struct tk_node;

/* A connection to conf's host:port (or unix_path), not connected yet.
 * Errors as tk_conn_new. */
int tk_node_new(const struct tk_redis_conf *conf, struct tk_node **out);
void tk_node_free(struct tk_node *n);
int tk_node_ready(struct tk_node *n);
/* tk_conn_eval on this node; `ask` sends ASKING before the EVALSHA (and
 * before its resend after a NOSCRIPT reload). */
int tk_node_eval(struct tk_node *n, enum tk_script_id id,
		 const struct tk_args *keys, const struct tk_args *args,
		 bool ask, redisReply **reply, char *errbuf, size_t errlen);
/* tk_conn_eval_many on this node; errs (may be NULL) gets each command's
 * error reply text, "" for the others. */
int tk_node_eval_many(struct tk_node *c, enum tk_script_id id, size_t n,
		      const struct tk_args *keys, const struct tk_args *args,
		      redisReply **replies, char (*errs)[TK_NODE_ERR_LEN]);
int tk_node_command(struct tk_node *n, const struct tk_args *argv,
		    redisReply **reply, char *errbuf, size_t errlen);
void tk_node_last_error(const struct tk_node *n, char *buf, size_t len);
void tk_node_stats_get(const struct tk_node *n, struct tk_conn_stats *out);
/* Points the node at host:port; an open connection elsewhere is closed.
 * TKSHM_OK, TKSHM_ENULL, TKSHM_EINVAL. */
int tk_node_retarget(struct tk_node *n, const char *host, int port);
/* Closes this process's connection (the next call connects again). */
void tk_node_drop(struct tk_node *n);

#endif /* TKSHM_REDIS_NODE_H */
