/*
 * conn.c - which Redis server a call goes to (conn.h): the one configured
 * (node.c), the primary the sentinels name (sentinel.c, C6), or the
 * cluster's node of the call's keys (cluster.c).  Strict decisions, the
 * lease agent and host registration call this file only, the same way in
 * every deployment.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tkshm.h"
#include "base/clock.h"
#include "redis/cluster.h"
#include "redis/conn.h"
#include "redis/node.h"
#include "redis/sentinel.h"

/* How long a primary the sentinels named is used before they are asked
 * again.  A failover the sentinels make leaves the old primary writable
 * until they convert it (about 10 s in Redis 7.0), answering every
 * script: without asking, a host would go on counting there, in counts
 * the new primary never sees. */
#define TK_SENTINEL_RECHECK_MS 1000.0

struct tk_conn {
	struct tk_node *node;	    /* one server, or the sentinels' primary */
	struct tk_cluster *cluster; /* or a cluster */
	struct tk_sentinel *sentinel; /* with node: who names the primary */
	bool resolved;	    /* node names the primary the sentinels named */
	double resolved_at; /* monotonic ms of that answer */
	char err[256];	    /* a resolution's failure, else "" */
};

int
tk_conn_new(const struct tk_redis_conf *conf, struct tk_conn **out)
{
	struct tk_conn *c;
	int rc;

	if (out == NULL)
		return TKSHM_ENULL;
	*out = NULL;
	if (conf == NULL)
		return TKSHM_ENULL;
	if (memchr(conf->cluster, '\0', sizeof conf->cluster) == NULL ||
	    memchr(conf->sentinels, '\0', sizeof conf->sentinels) == NULL ||
	    memchr(conf->sentinel_master, '\0', sizeof conf->sentinel_master) ==
		    NULL)
		return TKSHM_EINVAL;
	/* One of: a server, sentinels with a name, a cluster. */
	if ((conf->cluster[0] && conf->sentinels[0]) ||
	    (!conf->sentinels[0] != !conf->sentinel_master[0]))
		return TKSHM_EINVAL;
	if ((c = calloc(1, sizeof *c)) == NULL)
		return TKSHM_ENOMEM;
	if (conf->cluster[0]) {
		rc = tk_cluster_new(conf, &c->cluster);
	} else {
		rc = tk_node_new(conf, &c->node);
		if (rc == TKSHM_OK && conf->sentinels[0])
			rc = tk_sentinel_new(conf, &c->sentinel);
	}
	if (rc != TKSHM_OK) {
		tk_conn_free(c);
		return rc;
	}
	*out = c;
	return TKSHM_OK;
}

void
tk_conn_free(struct tk_conn *c)
{
	if (c == NULL)
		return;
	tk_node_free(c->node);
	tk_cluster_free(c->cluster);
	tk_sentinel_free(c->sentinel);
	free(c);
}

/* C6: the node names the primary before a call goes to it. */
static int
tk_primary(struct tk_conn *c)
{
	int rc;

	c->err[0] = '\0';
	if (!c->sentinel || (c->resolved && tk_mono_ms() - c->resolved_at <
						    TK_SENTINEL_RECHECK_MS))
		return TKSHM_OK;
	rc = tk_sentinel_resolve(c->sentinel, c->node, c->err, sizeof c->err);
	c->resolved = rc == TKSHM_OK;
	c->resolved_at = tk_mono_ms();
	return rc;
}

/* C6: after a failed exchange, or a write refused by a replica (the
 * primary demoted under us), the sentinels are asked again. */
static int
tk_after(struct tk_conn *c, int rc, const char *text)
{
	if (!c->sentinel)
		return rc;
	if (rc == TKSHM_EUNAVAILABLE)
		c->resolved = false;
	if (rc == TKSHM_EREDIS && strncmp(text, "READONLY", 8) == 0) {
		c->resolved = false;
		tk_node_drop(c->node);
		rc = TKSHM_EUNAVAILABLE; /* the primary is elsewhere now */
	}
	return rc;
}

static void
tk_say(const struct tk_conn *c, char *errbuf, size_t errlen)
{
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", c->err);
}

int
tk_conn_ready(struct tk_conn *c)
{
	int rc;

	if (c == NULL)
		return TKSHM_ENULL;
	if (c->cluster)
		return tk_cluster_ready(c->cluster);
	if ((rc = tk_primary(c)) != TKSHM_OK)
		return rc;
	return tk_after(c, tk_node_ready(c->node), "");
}

int
tk_conn_eval(struct tk_conn *c, enum tk_script_id id,
	     const struct tk_args *keys, const struct tk_args *args,
	     redisReply **reply, char *errbuf, size_t errlen)
{
	char text[TK_NODE_ERR_LEN];
	int rc;

	if (reply != NULL)
		*reply = NULL;
	if (c == NULL || reply == NULL)
		return TKSHM_ENULL;
	if (c->cluster)
		return tk_cluster_eval(c->cluster, id, keys, args, reply,
				       errbuf, errlen);
	if ((rc = tk_primary(c)) != TKSHM_OK) {
		tk_say(c, errbuf, errlen);
		return rc;
	}
	text[0] = '\0';
	rc = tk_node_eval(c->node, id, keys, args, false, reply, text,
			  sizeof text);
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", text);
	return tk_after(c, rc, text);
}

int
tk_conn_eval_many(struct tk_conn *c, enum tk_script_id id, size_t n,
		  const struct tk_args *keys, const struct tk_args *args,
		  redisReply **replies)
{
	char(*errs)[TK_NODE_ERR_LEN] = NULL;
	int rc;

	if (c == NULL || (replies == NULL && n > 0))
		return TKSHM_ENULL;
	if (c->cluster)
		return tk_cluster_eval_many(c->cluster, id, n, keys, args,
					    replies);
	if ((rc = tk_primary(c)) != TKSHM_OK) {
		for (size_t i = 0; i < n; i++)
			replies[i] = NULL;
		return rc;
	}
	if (c->sentinel && n > 0 && (errs = calloc(n, TK_NODE_ERR_LEN)) == NULL)
		return TKSHM_ENOMEM;
	rc = tk_node_eval_many(c->node, id, n, keys, args, replies, errs);
	for (size_t i = 0; errs && i < n; i++)
		if (tk_after(c, TKSHM_EREDIS, errs[i]) == TKSHM_EUNAVAILABLE)
			rc = TKSHM_EUNAVAILABLE;
	free(errs);
	return tk_after(c, rc, "");
}

int
tk_conn_command(struct tk_conn *c, const struct tk_args *argv,
		redisReply **reply, char *errbuf, size_t errlen)
{
	char text[TK_NODE_ERR_LEN];
	int rc;

	if (reply != NULL)
		*reply = NULL;
	if (c == NULL || argv == NULL || reply == NULL)
		return TKSHM_ENULL;
	if (c->cluster)
		return tk_cluster_command(c->cluster, argv, reply, errbuf,
					  errlen);
	if ((rc = tk_primary(c)) != TKSHM_OK) {
		tk_say(c, errbuf, errlen);
		return rc;
	}
	text[0] = '\0';
	rc = tk_node_command(c->node, argv, reply, text, sizeof text);
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", text);
	return tk_after(c, rc, text);
}

void
tk_conn_last_error(const struct tk_conn *c, char *buf, size_t len)
{
	if (c == NULL) {
		if (buf && len)
			buf[0] = '\0';
	} else if (c->cluster) {
		tk_cluster_last_error(c->cluster, buf, len);
	} else if (c->err[0]) {
		snprintf(buf, len, "%s", c->err);
	} else {
		tk_node_last_error(c->node, buf, len);
	}
}

void
tk_conn_stats_get(const struct tk_conn *c, struct tk_conn_stats *out)
{
	if (out == NULL)
		return;
	if (c && c->cluster)
		tk_cluster_stats_get(c->cluster, out);
	else if (c)
		tk_node_stats_get(c->node, out);
	else
		memset(out, 0, sizeof *out);
}
