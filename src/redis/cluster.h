/*
 * cluster.h - a Redis Cluster's client side over tk_node connections
 * (Debian's hiredis 0.14 has none): key slots, the slot map, redirections.
 * Used through conn.h, whose C1-C5 hold for every node.
 *
 * K1  A key's slot is CRC16 (XMODEM) of the key mod 16384, or of its hash
 *     tag: the bytes between its first '{' and the first '}' after it,
 *     when there is at least one.  A call's keys must share one slot:
 *     otherwise TKSHM_ECROSSSLOT, nothing sent.
 * K2  The slot map comes from CLUSTER SLOTS, asked of the nodes known then
 *     of the seeds, in order, until one answers.  It is asked again before
 *     the next call after a MOVED, a failed exchange, a CLUSTERDOWN or a
 *     slot nobody serves.  A connection per node, made on first use.
 * K3  MOVED slot host:port: the slot's entry is updated and the command
 *     sent there; ASK slot host:port: sent there once after ASKING, the map
 *     unchanged.  An error reply means the script did not run, so it may be
 *     sent again; a lost reply never is (C3).  At most
 *     TK_CLUSTER_REDIRECTS redirections, and none once the call's command
 *     timeout has passed: then TKSHM_EUNAVAILABLE.
 * K4  TRYAGAIN (a multi-key command while its slot moves) and CLUSTERDOWN
 *     (a failover): no retry within the call, which fails with
 *     TKSHM_EUNAVAILABLE, so the failure policy decides meanwhile.
 * K5  Not thread-safe, as a tk_node: one per thread.
 */
#ifndef TKSHM_REDIS_CLUSTER_H
#define TKSHM_REDIS_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "redis/conn.h"

#define TK_CLUSTER_SLOTS     16384
#define TK_CLUSTER_REDIRECTS 5
/* The most nodes one client knows (masters and the nodes redirections
 * named). */
#define TK_CLUSTER_NODES_MAX 64

struct tk_cluster;

/* K1: the slot of a key. */
unsigned tk_cluster_slot(const char *key, size_t len);

/* A cluster client for conf (conf->cluster holds the seeds; AUTH and the
 * timeouts apply to every node).  Connects nothing yet.  TKSHM_OK,
 * TKSHM_ENULL, TKSHM_EINVAL (no seed, a bad address), TKSHM_ENOMEM. */
int tk_cluster_new(const struct tk_redis_conf *conf, struct tk_cluster **out);
void tk_cluster_free(struct tk_cluster *cl);

/* The slot map, asked now if it is stale.  TKSHM_OK or
 * TKSHM_EUNAVAILABLE (no node answered). */
int tk_cluster_ready(struct tk_cluster *cl);

/* tk_conn_eval, tk_conn_eval_many and tk_conn_command on the node of the
 * keys' slot (a command's slot is that of its second argument, or any
 * node's when it has none). */
int tk_cluster_eval(struct tk_cluster *cl, enum tk_script_id id,
		    const struct tk_args *keys, const struct tk_args *args,
		    redisReply **reply, char *errbuf, size_t errlen);
int tk_cluster_eval_many(struct tk_cluster *cl, enum tk_script_id id,
			 size_t n, const struct tk_args *keys,
			 const struct tk_args *args, redisReply **replies);
int tk_cluster_command(struct tk_cluster *cl, const struct tk_args *argv,
		       redisReply **reply, char *errbuf, size_t errlen);

/* The sum of the nodes' counters, and the last failure's text. */
void tk_cluster_stats_get(const struct tk_cluster *cl,
			  struct tk_conn_stats *out);
void tk_cluster_last_error(const struct tk_cluster *cl, char *buf,
			   size_t len);

#endif /* TKSHM_REDIS_CLUSTER_H */
