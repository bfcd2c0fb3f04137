/*
 * sentinel.c - asking Sentinels for the primary (conn.h, C6).
 *
 * Each sentinel is a tk_node without scripts, so its exchanges keep the
 * connect and command deadlines of every other Redis call.  A sentinel
 * that does not answer, or knows no such primary, passes the question to
 * the next.  The address named is used only once the server there says
 * ROLE master: during a failover a sentinel may name the old primary
 * (now a replica) for a moment.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tkshm.h"
#include "redis/sentinel.h"

struct tk_sentinel {
	struct tk_redis_addr addr[TK_REDIS_ADDRS_COUNT];
	struct tk_node *node[TK_REDIS_ADDRS_COUNT];
	int n;
	char master[128];
};

int
tk_sentinel_new(const struct tk_redis_conf *conf, struct tk_sentinel **out)
{
	struct tk_redis_conf sc;
	struct tk_sentinel *s;
	char why[128];
	int n;

	if (!conf || !out)
		return TKSHM_ENULL;
	*out = NULL;
	if (conf->sentinel_master[0] == '\0' ||
	    strlen(conf->sentinel_master) >= sizeof s->master)
		return TKSHM_EINVAL;
	if ((s = calloc(1, sizeof *s)) == NULL)
		return TKSHM_ENOMEM;
	n = tk_redis_addrs_parse(conf->sentinels, s->addr, why, sizeof why);
	if (n <= 0) {
		free(s);
		return TKSHM_EINVAL;
	}
	/* Sentinels take no AUTH of the data nodes' and no SELECT. */
	tk_redis_conf_init(&sc);
	sc.connect_timeout_ms = conf->connect_timeout_ms;
	sc.command_timeout_ms = conf->command_timeout_ms;
	sc.plain = true;
	for (int i = 0; i < n; i++) {
		snprintf(sc.host, sizeof sc.host, "%s", s->addr[i].host);
		sc.port = s->addr[i].port;
		if (tk_node_new(&sc, &s->node[i]) != TKSHM_OK) {
			s->n = i;
			tk_sentinel_free(s);
			return TKSHM_ENOMEM;
		}
	}
	s->n = n;
	snprintf(s->master, sizeof s->master, "%s", conf->sentinel_master);
	*out = s;
	return TKSHM_OK;
}

void
tk_sentinel_free(struct tk_sentinel *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n; i++)
		tk_node_free(s->node[i]);
	free(s);
}

/* SENTINEL get-master-addr-by-name of sentinel i: the primary's address,
 * or false (no answer, or no such primary: a nil reply). */
static bool
tk_ask_one(struct tk_sentinel *s, int i, struct tk_redis_addr *out)
{
	const char *v[3] = { "SENTINEL", "get-master-addr-by-name", s->master };
	const struct tk_args argv = { 3, v, NULL };
	redisReply *r = NULL;
	bool ok = false;

	if (tk_node_command(s->node[i], &argv, &r, NULL, 0) != TKSHM_OK)
		return false;
	if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[0]->type == REDIS_REPLY_STRING &&
	    r->element[1]->type == REDIS_REPLY_STRING &&
	    r->element[0]->len > 0 && r->element[0]->len < sizeof out->host) {
		char *end;
		long port = strtol(r->element[1]->str, &end, 10);

		if (end != r->element[1]->str && *end == '\0' && port >= 1 &&
		    port <= 65535) {
			memcpy(out->host, r->element[0]->str,
			       r->element[0]->len);
			out->host[r->element[0]->len] = '\0';
			out->port = (int)port;
			ok = true;
		}
	}
	freeReplyObject(r);
	return ok;
}

/* ROLE of the server `node` names: true when it says master. */
static bool
tk_is_primary(struct tk_node *node)
{
	static const char *v[1] = { "ROLE" };
	const struct tk_args argv = { 1, v, NULL };
	redisReply *r = NULL;
	bool yes;

	if (tk_node_command(node, &argv, &r, NULL, 0) != TKSHM_OK)
		return false;
	yes = r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
	      r->element[0]->type == REDIS_REPLY_STRING &&
	      strcmp(r->element[0]->str, "master") == 0;
	freeReplyObject(r);
	return yes;
}

int
tk_sentinel_resolve(struct tk_sentinel *s, struct tk_node *node, char *why,
		    size_t len)
{
	struct tk_redis_addr a;

	for (int i = 0; i < s->n; i++) {
		if (!tk_ask_one(s, i, &a))
			continue;
		if (tk_node_retarget(node, a.host, a.port) != TKSHM_OK)
			continue;
		if (tk_is_primary(node))
			return TKSHM_OK;
		tk_node_drop(node);
		snprintf(why, len,
			 "sentinel %s:%d names %s:%d for \"%s\", which is not "
			 "a primary (yet)",
			 s->addr[i].host, s->addr[i].port, a.host, a.port,
			 s->master);
		return TKSHM_EUNAVAILABLE;
	}
	snprintf(why, len, "no sentinel named a primary for \"%s\"",
		 s->master);
	return TKSHM_EUNAVAILABLE;
}
