/*
 * reload.c - SIGHUP's reload (reload.h, L1-L4).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "reload.h"
#include "service.h"
#include "tables.h"
#include "tkshm.h"

void
sd_status_line(const struct sd_conf *c, bool redis_up, char *buf, size_t len)
{
	char addr[400];

	sd_conf_redis_addr(c, addr, sizeof addr);
	snprintf(buf, len, "serving %zu table%s, Redis at %s %s", c->ntables,
		 c->ntables == 1 ? "" : "s", addr,
		 redis_up ? "up" :
			    "down (the tables apply their failure policy)");
}

/* One key a reload refuses to change (L2), logged when it differs. */
static bool
sd_refuse(const struct sd_conf *n, const char *key, bool changed)
{
	if (changed)
		sd_log(LOG_ERR,
		       "reload: %s changes %s, which only a restart applies",
		       n->file, key);
	return changed;
}

/* Whether `n` changes anything a reload refuses (each one logged). */
static bool
sd_refusals(const struct sd_conf *c, const struct sd_conf *n)
{
	const struct tk_redis_conf *r = &c->agent.redis, *s = &n->agent.redis;
	bool any = false;

	any |= sd_refuse(n, "redis_host", strcmp(r->host, s->host) != 0);
	any |= sd_refuse(n, "redis_port", r->port != s->port);
	any |= sd_refuse(n, "redis_unix",
			 strcmp(r->unix_path, s->unix_path) != 0);
	any |= sd_refuse(n, "redis_username",
			 strcmp(r->username, s->username) != 0);
	any |= sd_refuse(n, "redis_db", r->db != s->db);
	any |= sd_refuse(n, "redis_cluster",
			 strcmp(r->cluster, s->cluster) != 0);
	any |= sd_refuse(n, "redis_sentinels",
			 strcmp(r->sentinels, s->sentinels) != 0);
	any |= sd_refuse(n, "redis_sentinel_master",
			 strcmp(r->sentinel_master, s->sentinel_master) != 0);
	any |= sd_refuse(n, "connect_timeout_ms",
			 r->connect_timeout_ms != s->connect_timeout_ms);
	any |= sd_refuse(n, "command_timeout_ms",
			 r->command_timeout_ms != s->command_timeout_ms);
	any |= sd_refuse(n, "host_id",
			 strcmp(c->agent.host_id, n->agent.host_id) != 0);
	any |= sd_refuse(n, "server_time",
			 c->agent.server_time != n->agent.server_time);
	any |= sd_refuse(n, "pidfile",
			 strcmp(c->file_pidfile, n->file_pidfile) != 0);
	any |= sd_refuse(n, "log",
			 c->log_set != n->log_set ||
				 (n->log_set && c->log != n->log));
	any |= sd_tables_removed(c, n);
	return any;
}

/* The checks of L3 that come before anything is applied. */
static bool
sd_reload_allowed(const struct sd_conf *c, const struct sd_conf *n,
		  struct tk_agent *a)
{
	char err[256] = "";
	int rc;

	if (sd_refusals(c, n) || !sd_tables_check_new(c, n))
		return false;
	/* The engine's ranges, checked (and applied) before any table is
	 * attached: a value it refuses changes nothing. */
	if ((rc = tk_agent_tune(a, &n->agent, err, sizeof err)) != TKSHM_OK) {
		sd_log(LOG_ERR, "reload: %s: %s", n->file,
		       err[0] ? err : tkshm_strerror(rc));
		return false;
	}
	return true;
}

/* *c takes n's tunables and table list (its file, connection, pid file and
 * log stay). */
static void
sd_adopt(struct sd_conf *c, struct sd_conf *n)
{
	struct sd_table *old = c->tables;

	c->agent.poll_ms = n->agent.poll_ms;
	c->agent.horizon_ms = n->agent.horizon_ms;
	c->agent.heartbeat_ms = n->agent.heartbeat_ms;
	c->agent.breaker_failures = n->agent.breaker_failures;
	c->agent.breaker_open_ms = n->agent.breaker_open_ms;
	c->tables = n->tables;
	c->ntables = n->ntables;
	n->tables = old;
}

bool
sd_reload(struct sd_conf *cur, struct tk_agent *a, bool redis_up)
{
	struct sd_conf next;
	size_t added = 0;
	bool ok;
	char status[512];

	sd_svc_reloading();
	sd_log(LOG_NOTICE, "SIGHUP: reading %s again", cur->file);
	ok = sd_conf_load(&next, cur->file) && sd_reload_allowed(cur, &next, a);
	if (ok) {
		/* L3: a table that fails here leaves those before it
		 * attached, and next's list says so. */
		added = sd_tables_attach_new(cur, &next, a, &ok);
		sd_adopt(cur, &next);
	}
	if (ok)
		sd_log(LOG_NOTICE,
		       "reloaded: %zu table%s (%zu added), a round every %g "
		       "ms, horizon %g ms, heartbeat %g ms",
		       cur->ntables, cur->ntables == 1 ? "" : "s", added,
		       cur->agent.poll_ms, cur->agent.horizon_ms,
		       cur->agent.heartbeat_ms);
	else
		sd_log(LOG_ERR, "reload failed: keeping the running "
				"configuration");
	sd_conf_free(&next);
	sd_status_line(cur, redis_up, status, sizeof status);
	if (!ok)
		snprintf(status + strlen(status),
			 sizeof status - strlen(status),
			 "; the last reload failed, see the log");
	sd_svc_ready(status);
	return ok;
}
