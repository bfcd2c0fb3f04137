/*
 * redis_api.c - the tkshm_redis handle (tkshm_redis.h): options, attach
 * and the Redis name of a key; the exchanges themselves are exchange.c's
 * and strict.c's.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "redis/redis_handle.h"
#include "redis/strict.h"

static bool
tk_copy_opt(char *dst, size_t cap, const char *src)
{
	size_t n;

	if (!src)
		return true;
	n = strlen(src);
	if (n >= cap)
		return false;
	memcpy(dst, src, n + 1);
	return true;
}

/* A duration option: 0 (the default) or 1 ms to 1 hour.  A time below a
 * millisecond (1e-300) would time every exchange out before Redis could
 * answer, leaving every decision to the failure policy. */
static bool
tk_duration_ok(double ms)
{
	return ms == 0 || (ms >= 1 && ms <= 3600000);
}

int
tkshm_redis_open(const tkshm_redis_options *o, tkshm_redis **out)
{
	struct tkshm_redis *r;
	int rc;

	if (!o || !out)
		return TKSHM_ENULL;
	if (o->size != sizeof *o || o->port < 0 || o->port > 65535 ||
	    o->db < 0 || !tk_duration_ok(o->connect_timeout_ms) ||
	    !tk_duration_ok(o->command_timeout_ms) ||
	    !tk_duration_ok(o->breaker_open_ms))
		return TKSHM_EINVAL;
	r = calloc(1, sizeof *r);
	if (!r)
		return TKSHM_ENOMEM;
	tk_redis_conf_init(&r->conf);
	if (!tk_copy_opt(r->conf.host, sizeof r->conf.host, o->host) ||
	    !tk_copy_opt(r->conf.unix_path, sizeof r->conf.unix_path,
			 o->unix_path) ||
	    !tk_copy_opt(r->conf.username, sizeof r->conf.username,
			 o->username) ||
	    !tk_copy_opt(r->conf.password, sizeof r->conf.password,
			 o->password) ||
	    !tk_copy_opt(r->conf.cluster, sizeof r->conf.cluster, o->cluster) ||
	    !tk_copy_opt(r->conf.sentinels, sizeof r->conf.sentinels,
			 o->sentinels) ||
	    !tk_copy_opt(r->conf.sentinel_master,
			 sizeof r->conf.sentinel_master, o->sentinel_master)) {
		free(r);
		return TKSHM_EINVAL;
	}
	if (o->port)
		r->conf.port = o->port;
	r->conf.db = o->db;
	if (o->connect_timeout_ms > 0)
		r->conf.connect_timeout_ms = o->connect_timeout_ms;
	if (o->command_timeout_ms > 0)
		r->conf.command_timeout_ms = o->command_timeout_ms;
	r->server_time = o->server_time;
	r->breaker_failures = o->breaker_failures ? o->breaker_failures : 3;
	r->breaker_open_ms = o->breaker_open_ms > 0 ? o->breaker_open_ms : 1000;
	if (gethostname(r->host_id, sizeof r->host_id - 1) != 0)
		strcpy(r->host_id, "localhost");
	r->host_id[sizeof r->host_id - 1] = '\0';
	rc = tk_conn_new(&r->conf, &r->conn);
	if (rc != TKSHM_OK) {
		free(r);
		return rc;
	}
	*out = r;
	return TKSHM_OK;
}

void
tkshm_redis_close(tkshm_redis *r)
{
	if (!r)
		return;
	tk_conn_free(r->conn);
	free(r);
}

int
tkshm_redis_last_error(const tkshm_redis *r, char *buf, size_t len)
{
	if (!r || !buf)
		return TKSHM_ENULL;
	if (len > 0)
		tk_conn_last_error(r->conn, buf, len);
	return TKSHM_OK;
}

int
tk_api_redis_attach(tkshm_table *t, tkshm_redis *r)
{
	if (!t)
		return TKSHM_ENULL;
	/* Detaching always works: the table's policy may have changed
	 * away from strict since it was attached (tkshm_apply). */
	if (r && t->policy.global.mode != TKSHM_MODE_STRICT)
		return TKSHM_ENOTSUP;
	t->redis = r;
	t->strict = r ? &tk_strict_ops : NULL;
	return TKSHM_OK;
}

int
tk_api_redis_key(const tkshm_table *t, const void *key, size_t key_len,
		 char *buf, size_t len)
{
	size_t n;

	if (!t || !key || !buf)
		return TKSHM_ENULL;
	if (key_len == 0 || key_len > TKSHM_KEY_MAX)
		return key_len ? TKSHM_EKEYLONG : TKSHM_EKEYEMPTY;
	n = tk_redis_key_of(t, key, key_len, buf, len);
	return n ? (int)n : TKSHM_EINVAL;
}
