/*
 * cluster.c - a Redis Cluster's client side (cluster.h, K1-K5).
 *
 * The slot map is one array of node indices, 16384 entries, asked with
 * CLUSTER SLOTS (which Redis 7.0 still answers; CLUSTER SHARDS had bugs
 * there).  Each node is a tk_node, so every exchange keeps conn.h's
 * deadline, fork and resend rules, and loads the scripts on the node it
 * connects to: a promoted replica, whose script cache is empty, answers
 * NOSCRIPT once and gets them (C2).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tkshm.h"
#include "base/clock.h"
#include "redis/cluster.h"
#include "redis/node.h"

/* After a refresh no node answered, the next waits this long. */
#define TK_CLUSTER_REFRESH_PAUSE_MS 100.0

struct tk_cnode {
	char host[256];
	int port;
	struct tk_node *node;
};

struct tk_cluster {
	struct tk_redis_conf conf; /* every node's, host and port aside */
	struct tk_redis_addr seeds[TK_REDIS_ADDRS_COUNT];
	int nseeds;
	struct tk_cnode nodes[TK_CLUSTER_NODES_MAX];
	int nnodes;
	int16_t owner[TK_CLUSTER_SLOTS]; /* index in nodes, -1: unknown */
	bool stale;			 /* ask the map before the next call */
	double retry_at; /* monotonic ms: no refresh before, after a failed one */
	char err[256];	 /* why the last call failed */
};

/* ------------------------------------------------------------------------
 * Slots (K1)
 * ---------------------------------------------------------------------- */

static uint16_t
tk_crc16(const char *s, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)((unsigned char)s[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 :
							crc << 1);
	}
	return crc;
}

unsigned
tk_cluster_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len);

	if (open) {
		size_t from = (size_t)(open - key) + 1;
		const char *close = memchr(key + from, '}', len - from);

		if (close && close > key + from)
			return tk_crc16(key + from,
					(size_t)(close - (key + from))) &
			       (TK_CLUSTER_SLOTS - 1);
	}
	return tk_crc16(key, len) & (TK_CLUSTER_SLOTS - 1);
}

static size_t
tk_arg_len(const struct tk_args *a, int i)
{
	return a->len ? a->len[i] : strlen(a->v[i]);
}

/* The slot every key of `keys` hashes to (0 when there are none), or
 * TKSHM_ECROSSSLOT with two keys named in cl->err. */
static int
tk_keys_slot(struct tk_cluster *cl, const struct tk_args *keys, unsigned *slot)
{
	*slot = 0;
	if (!keys || keys->n == 0)
		return TKSHM_OK;
	*slot = tk_cluster_slot(keys->v[0], tk_arg_len(keys, 0));
	for (int i = 1; i < keys->n; i++) {
		unsigned s = tk_cluster_slot(keys->v[i], tk_arg_len(keys, i));

		if (s != *slot) {
			snprintf(cl->err, sizeof cl->err,
				 "keys \"%.*s\" (slot %u) and \"%.*s\" (slot "
				 "%u) are in different cluster slots: give "
				 "them one hash tag",
				 (int)(tk_arg_len(keys, 0) > 60 ?
					       60 :
					       tk_arg_len(keys, 0)),
				 keys->v[0], *slot,
				 (int)(tk_arg_len(keys, i) > 60 ?
					       60 :
					       tk_arg_len(keys, i)),
				 keys->v[i], s);
			return TKSHM_ECROSSSLOT;
		}
	}
	return TKSHM_OK;
}

/* ------------------------------------------------------------------------
 * Nodes and the slot map (K2)
 * ---------------------------------------------------------------------- */

/* The index of node host:port, made if new; -1 when the table of nodes
 * is full or out of memory. */
static int
tk_cnode_at(struct tk_cluster *cl, const char *host, size_t hlen, int port)
{
	struct tk_redis_conf conf = cl->conf;
	struct tk_cnode *n;

	if (hlen == 0 || hlen >= sizeof n->host || port < 1 || port > 65535)
		return -1;
	for (int i = 0; i < cl->nnodes; i++)
		if (cl->nodes[i].port == port &&
		    strncmp(cl->nodes[i].host, host, hlen) == 0 &&
		    cl->nodes[i].host[hlen] == '\0')
			return i;
	if (cl->nnodes == TK_CLUSTER_NODES_MAX)
		return -1;
	n = &cl->nodes[cl->nnodes];
	memcpy(n->host, host, hlen);
	n->host[hlen] = '\0';
	n->port = port;
	memcpy(conf.host, n->host, hlen + 1);
	conf.port = port;
	if (tk_node_new(&conf, &n->node) != TKSHM_OK)
		return -1;
	return cl->nnodes++;
}

static bool
tk_is_int(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_INTEGER;
}

/* One range of a CLUSTER SLOTS reply asked of node `from` into owner[]:
 * [start, end, [ip, port, ...], replicas...].  False when malformed. */
static bool
tk_take_range(struct tk_cluster *cl, int from, const redisReply *e,
	      int16_t *owner)
{
	const redisReply *m;
	const char *host;
	size_t hlen;
	int at;

	if (!e || e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
	    !tk_is_int(e->element[0]) || !tk_is_int(e->element[1]))
		return false;
	m = e->element[2];
	if (!m || m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
	    m->element[0]->type != REDIS_REPLY_STRING ||
	    !tk_is_int(m->element[1]))
		return false;
	if (e->element[0]->integer < 0 ||
	    e->element[1]->integer >= TK_CLUSTER_SLOTS ||
	    e->element[0]->integer > e->element[1]->integer ||
	    m->element[1]->integer < 1 || m->element[1]->integer > 65535)
		return false;
	/* An empty address: the node asked, at that port. */
	host = m->element[0]->len ? m->element[0]->str : cl->nodes[from].host;
	hlen = m->element[0]->len ? m->element[0]->len : strlen(host);
	at = tk_cnode_at(cl, host, hlen, (int)m->element[1]->integer);
	if (at < 0)
		return false;
	for (long long s = e->element[0]->integer; s <= e->element[1]->integer;
	     s++)
		owner[s] = (int16_t)at;
	return true;
}

/* CLUSTER SLOTS asked of node i; the map replaced when it answers. */
static bool
tk_ask_slots(struct tk_cluster *cl, int i)
{
	static const char *v[2] = { "CLUSTER", "SLOTS" };
	const struct tk_args argv = { 2, v, NULL };
	int16_t owner[TK_CLUSTER_SLOTS];
	redisReply *r = NULL;
	bool ok;

	if (tk_node_command(cl->nodes[i].node, &argv, &r, NULL, 0) != TKSHM_OK)
		return false;
	ok = r->type == REDIS_REPLY_ARRAY && r->elements > 0;
	memset(owner, 0xff, sizeof owner); /* -1 everywhere */
	for (size_t k = 0; ok && k < r->elements; k++)
		ok = tk_take_range(cl, i, r->element[k], owner);
	freeReplyObject(r);
	if (ok) {
		memcpy(cl->owner, owner, sizeof owner);
		cl->stale = false;
	}
	return ok;
}

/* K2: the nodes known first, then the seeds. */
static int
tk_refresh(struct tk_cluster *cl)
{
	int known = cl->nnodes;

	for (int i = 0; i < known; i++)
		if (tk_ask_slots(cl, i))
			return TKSHM_OK;
	for (int k = 0; k < cl->nseeds; k++) {
		const struct tk_redis_addr *s = &cl->seeds[k];
		int i = tk_cnode_at(cl, s->host, strlen(s->host), s->port);

		if (i >= known && tk_ask_slots(cl, i))
			return TKSHM_OK;
	}
	snprintf(cl->err, sizeof cl->err,
		 "no node of the cluster answered CLUSTER SLOTS");
	/* Every node tried costs up to a connect timeout: not again on
	 * every call while the cluster is away. */
	cl->retry_at = tk_mono_ms() + TK_CLUSTER_REFRESH_PAUSE_MS;
	return TKSHM_EUNAVAILABLE;
}

/* The node serving `slot`, the map asked first if stale; -1 if none. */
static int
tk_route(struct tk_cluster *cl, unsigned slot)
{
	if (cl->stale && tk_mono_ms() >= cl->retry_at)
		(void)tk_refresh(cl);
	if (cl->owner[slot] < 0) {
		cl->stale = true;
		if (cl->err[0] == '\0')
			snprintf(cl->err, sizeof cl->err,
				 "no node of the cluster serves slot %u", slot);
		return -1;
	}
	return cl->owner[slot];
}

/* ------------------------------------------------------------------------
 * Redirections (K3, K4)
 * ---------------------------------------------------------------------- */

/* "MOVED 3999 127.0.0.1:6381" or "ASK ...": the slot and the node. */
static bool
tk_redirect(const char *text, bool *ask, unsigned *slot, const char **host,
	    size_t *hlen, int *port)
{
	const char *p, *colon;
	char *end;
	unsigned long s;
	long pt;

	if (strncmp(text, "MOVED ", 6) == 0)
		*ask = false, p = text + 6;
	else if (strncmp(text, "ASK ", 4) == 0)
		*ask = true, p = text + 4;
	else
		return false;
	s = strtoul(p, &end, 10);
	if (end == p || *end != ' ' || s >= TK_CLUSTER_SLOTS)
		return false;
	*host = end + 1;
	colon = strrchr(*host, ':');
	if (!colon)
		return false;
	pt = strtol(colon + 1, &end, 10);
	if (end == colon + 1 || *end != '\0' || pt < 1 || pt > 65535)
		return false;
	*slot = (unsigned)s;
	*hlen = (size_t)(colon - *host);
	*port = (int)pt;
	return true;
}

/* One exchange on node `node` (with ASKING first when `ask`), its error
 * reply's text in text. */
typedef int (*tk_cluster_send_fn)(struct tk_node *node, bool ask, void *ctx,
				  char *text, size_t len);

/* K3-K4 around `send`, for a command of `slot`. */
static int
tk_cluster_run(struct tk_cluster *cl, unsigned slot, tk_cluster_send_fn send,
	       void *ctx)
{
	double start = tk_mono_ms();
	char text[TK_NODE_ERR_LEN * 2];
	bool ask = false;
	int i = tk_route(cl, slot);

	for (int redirects = 0; i >= 0; redirects++) {
		const char *host;
		size_t hlen;
		unsigned s;
		int port, rc;
		bool is_ask;

		text[0] = '\0';
		rc = send(cl->nodes[i].node, ask, ctx, text, sizeof text);
		snprintf(cl->err, sizeof cl->err, "%s", text);
		if (rc == TKSHM_EUNAVAILABLE)
			cl->stale = true; /* a node down: failing over? */
		if (rc != TKSHM_EREDIS)
			return rc;
		if (strncmp(text, "CLUSTERDOWN", 11) == 0) {
			cl->stale = true;
			return TKSHM_EUNAVAILABLE;
		}
		if (strncmp(text, "TRYAGAIN", 8) == 0)
			return TKSHM_EUNAVAILABLE;
		if (!tk_redirect(text, &is_ask, &s, &host, &hlen, &port))
			return TKSHM_EREDIS;
		if (redirects == TK_CLUSTER_REDIRECTS ||
		    tk_mono_ms() - start >= cl->conf.command_timeout_ms) {
			snprintf(cl->err, sizeof cl->err,
				 "too many redirections, the last: %s", text);
			return TKSHM_EUNAVAILABLE;
		}
		if ((i = tk_cnode_at(cl, host, hlen, port)) < 0)
			break;
		if (!is_ask)
			cl->owner[s] = (int16_t)i;
		ask = is_ask;
	}
	return TKSHM_EUNAVAILABLE;
}

/* ------------------------------------------------------------------------
 * The interface
 * ---------------------------------------------------------------------- */

int
tk_cluster_new(const struct tk_redis_conf *conf, struct tk_cluster **out)
{
	struct tk_cluster *cl;
	char why[128];
	int n;

	if (!conf || !out)
		return TKSHM_ENULL;
	*out = NULL;
	if ((cl = calloc(1, sizeof *cl)) == NULL)
		return TKSHM_ENOMEM;
	n = tk_redis_addrs_parse(conf->cluster, cl->seeds, why, sizeof why);
	if (n <= 0) {
		free(cl);
		return TKSHM_EINVAL;
	}
	cl->nseeds = n;
	cl->conf = *conf;
	cl->conf.unix_path[0] = '\0';
	cl->conf.cluster[0] = '\0';
	cl->conf.db = 0; /* a cluster has database 0 only */
	memset(cl->owner, 0xff, sizeof cl->owner);
	cl->stale = true;
	*out = cl;
	return TKSHM_OK;
}

void
tk_cluster_free(struct tk_cluster *cl)
{
	if (!cl)
		return;
	for (int i = 0; i < cl->nnodes; i++)
		tk_node_free(cl->nodes[i].node);
	free(cl);
}

int
tk_cluster_ready(struct tk_cluster *cl)
{
	if (!cl)
		return TKSHM_ENULL;
	return cl->stale ? tk_refresh(cl) : TKSHM_OK;
}

struct tk_eval_ctx {
	enum tk_script_id id;
	const struct tk_args *keys, *args;
	redisReply **reply;
};

static int
tk_send_eval(struct tk_node *node, bool ask, void *ctx, char *text, size_t len)
{
	struct tk_eval_ctx *e = ctx;

	return tk_node_eval(node, e->id, e->keys, e->args, ask, e->reply, text,
			    len);
}

int
tk_cluster_eval(struct tk_cluster *cl, enum tk_script_id id,
		const struct tk_args *keys, const struct tk_args *args,
		redisReply **reply, char *errbuf, size_t errlen)
{
	struct tk_eval_ctx e = { id, keys, args, reply };
	unsigned slot;
	int rc;

	if (reply)
		*reply = NULL;
	if (!cl || !reply)
		return TKSHM_ENULL;
	cl->err[0] = '\0';
	rc = tk_keys_slot(cl, keys, &slot);
	if (rc == TKSHM_OK)
		rc = tk_cluster_run(cl, slot, tk_send_eval, &e);
	if (rc != TKSHM_OK && errbuf && errlen)
		snprintf(errbuf, errlen, "%s", cl->err);
	return rc;
}

struct tk_command_ctx {
	const struct tk_args *argv;
	redisReply **reply;
};

static int
tk_send_command(struct tk_node *node, bool ask, void *ctx, char *text,
		size_t len)
{
	static const char *v[1] = { "ASKING" };
	const struct tk_args asking = { 1, v, NULL };
	struct tk_command_ctx *c = ctx;
	redisReply *r = NULL;
	int rc;

	if (ask) {
		rc = tk_node_command(node, &asking, &r, text, len);
		if (rc != TKSHM_OK)
			return rc;
		freeReplyObject(r);
	}
	return tk_node_command(node, c->argv, c->reply, text, len);
}

int
tk_cluster_command(struct tk_cluster *cl, const struct tk_args *argv,
		   redisReply **reply, char *errbuf, size_t errlen)
{
	struct tk_command_ctx c = { argv, reply };
	unsigned slot = 0;
	int rc;

	if (reply)
		*reply = NULL;
	if (!cl || !argv || !reply)
		return TKSHM_ENULL;
	if (argv->n < 1)
		return TKSHM_EINVAL;
	cl->err[0] = '\0';
	if (argv->n > 1)
		slot = tk_cluster_slot(argv->v[1], tk_arg_len(argv, 1));
	rc = tk_cluster_run(cl, slot, tk_send_command, &c);
	if (rc != TKSHM_OK && errbuf && errlen)
		snprintf(errbuf, errlen, "%s", cl->err);
	return rc;
}

/* The commands of tk_cluster_eval_many that go to node `node`, sent in
 * one pipeline; an error reply that redirects (it did not run) is sent
 * again on its own through tk_cluster_run. */
static int
tk_eval_group(struct tk_cluster *cl, int node, enum tk_script_id id, size_t n,
	      const struct tk_args *keys, const struct tk_args *args,
	      const unsigned *slot, redisReply **replies, bool *sent,
	      size_t *pick)
{
	struct tk_args *k = calloc(n, sizeof *k), *a = calloc(n, sizeof *a);
	char(*errs)[TK_NODE_ERR_LEN] = calloc(n, TK_NODE_ERR_LEN);
	redisReply **got = calloc(n, sizeof(redisReply *));
	size_t m = 0;
	int rc = TKSHM_ENOMEM;

	for (size_t i = 0; i < n && k && a && errs && got; i++) {
		if (cl->owner[slot[i]] != node || sent[i])
			continue;
		sent[i] = true; /* once: a reply lost is never resent (C3) */
		pick[m] = i;
		k[m] = keys ? keys[i] : (struct tk_args){ 0, NULL, NULL };
		a[m] = args ? args[i] : (struct tk_args){ 0, NULL, NULL };
		m++;
	}
	if (k && a && errs && got)
		rc = tk_node_eval_many(cl->nodes[node].node, id, m, k, a, got,
				       errs);
	for (size_t j = 0; rc != TKSHM_ENOMEM && j < m; j++) {
		size_t i = pick[j];
		struct tk_eval_ctx e = { id, keys ? &keys[i] : NULL,
					 args ? &args[i] : NULL, &replies[i] };

		replies[i] = got[j];
		if (!got[j] && (strncmp(errs[j], "MOVED ", 6) == 0 ||
				strncmp(errs[j], "ASK ", 4) == 0)) {
			int one = tk_cluster_run(cl, slot[i], tk_send_eval, &e);

			if (one == TKSHM_EUNAVAILABLE)
				rc = one;
		}
	}
	if (rc == TKSHM_EUNAVAILABLE)
		cl->stale = true;
	free(k);
	free(a);
	free(errs);
	free(got);
	return rc;
}

int
tk_cluster_eval_many(struct tk_cluster *cl, enum tk_script_id id, size_t n,
		     const struct tk_args *keys, const struct tk_args *args,
		     redisReply **replies)
{
	unsigned *slot;
	size_t *pick;
	bool *sent;
	int rc = TKSHM_OK;

	if (!cl || (!replies && n > 0))
		return TKSHM_ENULL;
	for (size_t i = 0; i < n; i++)
		replies[i] = NULL;
	if (n == 0)
		return TKSHM_OK;
	cl->err[0] = '\0';
	slot = calloc(n, sizeof *slot);
	pick = calloc(n, sizeof *pick);
	sent = calloc(n, sizeof *sent);
	if (!slot || !pick || !sent)
		rc = TKSHM_ENOMEM;
	for (size_t i = 0; rc == TKSHM_OK && i < n; i++)
		rc = tk_keys_slot(cl, keys ? &keys[i] : NULL, &slot[i]);
	if (rc == TKSHM_OK && cl->stale && tk_mono_ms() >= cl->retry_at)
		(void)tk_refresh(cl);
	for (size_t i = 0;
	     (rc == TKSHM_OK || rc == TKSHM_EUNAVAILABLE) && i < n; i++) {
		int node = cl->owner[slot[i]], one;

		if (sent[i])
			continue;
		if (node < 0) {
			/* No node known for it: the failure policy's. */
			sent[i] = true;
			cl->stale = true;
			rc = TKSHM_EUNAVAILABLE;
			continue;
		}
		one = tk_eval_group(cl, node, id, n, keys, args, slot, replies,
				    sent, pick);
		if (one != TKSHM_OK)
			rc = one;
	}
	free(slot);
	free(pick);
	free(sent);
	return rc;
}

void
tk_cluster_stats_get(const struct tk_cluster *cl, struct tk_conn_stats *out)
{
	memset(out, 0, sizeof *out);
	if (!cl)
		return;
	for (int i = 0; i < cl->nnodes; i++) {
		struct tk_conn_stats s;

		tk_node_stats_get(cl->nodes[i].node, &s);
		out->calls += s.calls;
		out->errors += s.errors;
		out->noscript_reloads += s.noscript_reloads;
		out->connects += s.connects;
	}
}

void
tk_cluster_last_error(const struct tk_cluster *cl, char *buf, size_t len)
{
	if (buf && len)
		snprintf(buf, len, "%s", cl ? cl->err : "");
}
