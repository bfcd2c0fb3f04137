/*
 * ngx_http_tkshm_handler.c - the preaccess check of a request: every
 * limit of its location gives a key (an empty key: that limit does not
 * apply, as with limit_req), all of them decide together (one check, or
 * tkshm_check_multi_at's `all`: nothing is consumed unless every limit
 * admits), and the binding decision becomes the RateLimit headers and,
 * when denied, the location's tkshm_status.
 */
#include "ngx_http_tkshm.h"

#include <ngx_sha1.h>
#include <math.h>

/* Keys longer than the table takes are checked by their SHA-1 digest
 * (the prefix, then 40 hex digits: Apache's mod_tkshm's form, so that both
 * count one long key alike), so a long key can neither escape its limit
 * nor be refused.  No header value holds the \x01. */
#define NGX_HTTP_TKSHM_LONG_PREFIX "\x01sha1:"
#define NGX_HTTP_TKSHM_LONG_LEN	   (sizeof(NGX_HTTP_TKSHM_LONG_PREFIX) - 1 + 40)

#define NGX_HTTP_TKSHM_HEADERS_BUF TKSHM_HTTP_BUF_SIZE(NGX_HTTP_TKSHM_NAME_MAX)

/* The request's outcome rides on a pool cleanup of the main request:
 * r->ctx is zeroed by an internal redirect (index, error_page), which
 * runs the preaccess phase again, and must not check the request twice. */
static void
ngx_http_tkshm_mark(void *data)
{
	(void)data;
}

static ngx_pool_cleanup_t *
ngx_http_tkshm_find_mark(ngx_http_request_t *r)
{
	ngx_pool_cleanup_t *c;

	for (c = r->main->pool->cleanup; c; c = c->next) {
		if (c->handler == ngx_http_tkshm_mark) {
			return c;
		}
	}
	return NULL;
}

ngx_http_tkshm_outcome_e
ngx_http_tkshm_outcome(ngx_http_request_t *r)
{
	ngx_pool_cleanup_t *c = ngx_http_tkshm_find_mark(r);

	return c ? (ngx_http_tkshm_outcome_e)(uintptr_t)c->data :
		   NGX_HTTP_TKSHM_NONE;
}

/* The key of one limit: key= evaluated, or the client's address (IPv6 by
 * its /64, so that one host's addresses count as one client).  NGX_DECLINED
 * for an empty key. */
static ngx_int_t
ngx_http_tkshm_key(ngx_http_request_t *r, ngx_http_tkshm_limit_t *lim,
		   ngx_str_t *key)
{
	int n;
	u_char *addr;
	ngx_sha1_t sha1;

	if (lim->key == NULL) {
		/* IPv4: nginx's text of the binary address is the key's form
         * already (a dotted quad), with no parsing or copy. */
		if (r->connection->sockaddr->sa_family == AF_INET) {
			*key = r->connection->addr_text;
			return key->len ? NGX_OK : NGX_DECLINED;
		}
		addr = ngx_pnalloc(r->pool, r->connection->addr_text.len + 1 +
						    TKSHM_HTTP_CLIENT_KEY_MAX);
		if (addr == NULL) {
			return NGX_ERROR;
		}
		ngx_cpystrn(addr, r->connection->addr_text.data,
			    r->connection->addr_text.len + 1);
		key->data = addr + r->connection->addr_text.len + 1;
		n = tkshm_http_client_key(
			(char *)addr, TKSHM_HTTP_V6_PREFIX_DEFAULT,
			(char *)key->data, TKSHM_HTTP_CLIENT_KEY_MAX);
		/* Not an IP address (a unix socket): the address text itself. */
		if (n < 0) {
			*key = r->connection->addr_text;
		} else {
			key->len = (size_t)n;
		}
		return key->len ? NGX_OK : NGX_DECLINED;
	}
	if (ngx_http_complex_value(r, lim->key, key) != NGX_OK) {
		return NGX_ERROR;
	}
	if (key->len == 0) {
		return NGX_DECLINED;
	}
	if (key->len > (lim->table->policy.global.mode == TKSHM_MODE_LEASE ?
				TKSHM_LEASE_KEY_MAX :
				TKSHM_KEY_MAX)) {
		u_char digest[20];
		u_char *d = ngx_pnalloc(r->pool, NGX_HTTP_TKSHM_LONG_LEN);

		if (d == NULL) {
			return NGX_ERROR;
		}
		ngx_sha1_init(&sha1);
		ngx_sha1_update(&sha1, key->data, key->len);
		ngx_sha1_final(digest, &sha1);
		ngx_memcpy(d, NGX_HTTP_TKSHM_LONG_PREFIX,
			   sizeof(NGX_HTTP_TKSHM_LONG_PREFIX) - 1);
		ngx_hex_dump(d + sizeof(NGX_HTTP_TKSHM_LONG_PREFIX) - 1, digest,
			     20);
		key->data = d;
		key->len = NGX_HTTP_TKSHM_LONG_LEN;
	}
	return NGX_OK;
}

/* The decision's RateLimit headers (and Retry-After when denied) on the
 * response, error pages included. */
static void
ngx_http_tkshm_set_headers(ngx_http_request_t *r,
			   ngx_http_tkshm_loc_conf_t *lcf,
			   ngx_http_tkshm_table_t *t, const tkshm_decision *d,
			   double now_ms)
{
	int i, n;
	char *buf;
	ngx_table_elt_t *h;
	tkshm_http_header hh[TKSHM_HTTP_HEADERS_MAX];

	buf = ngx_pnalloc(r->pool, NGX_HTTP_TKSHM_HEADERS_BUF);
	if (buf == NULL) {
		return;
	}
	n = tkshm_http_headers(d, (tkshm_http_style)lcf->headers,
			       (char *)t->name.data, -1, now_ms, hh, buf,
			       NGX_HTTP_TKSHM_HEADERS_BUF);
	if (n < 0) {
		/* Not reachable with a checked name and a sized buffer; the
         * response is still right without them. */
		ngx_log_error(NGX_LOG_ERR, r->connection->log, 0,
			      "tkshm: RateLimit headers of table %V: %s",
			      &t->name, tkshm_strerror(n));
		return;
	}
	for (i = 0; i < n; i++) {
		h = ngx_list_push(&r->headers_out.headers);
		if (h == NULL) {
			return;
		}
		h->hash = 1;
		h->key.data = (u_char *)hh[i].name;
		h->key.len = ngx_strlen(hh[i].name);
		h->value.data = (u_char *)hh[i].value;
		h->value.len = ngx_strlen(hh[i].value);
	}
}

/* Retry-After of a rejected reservation, in whole seconds rounded up (a
 * client retrying sooner would be rejected again). */
static void
ngx_http_tkshm_retry_after(ngx_http_request_t *r, int64_t ms)
{
	u_char *p;
	ngx_table_elt_t *h;

	p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
	h = ngx_list_push(&r->headers_out.headers);
	if (p == NULL || h == NULL) {
		return;
	}
	h->hash = 1;
	ngx_str_set(&h->key, "Retry-After");
	h->value.data = p;
	h->value.len = ngx_sprintf(p, "%L", (ms + 999) / 1000) - p;
}

/* The write event handler of a request parked by a reservation: nginx's
 * request handler clears wev->delayed when the timer fires; an earlier
 * write event (the socket became writable) only re-arms the event.  Then
 * the phases run again from the preaccess handler, which finds the mark
 * and lets the request through. */
static void
ngx_http_tkshm_delay(ngx_http_request_t *r)
{
	ngx_event_t *wev = r->connection->write;

	if (wev->delayed) {
		if (ngx_handle_write_event(wev, 0) != NGX_OK) {
			ngx_http_finalize_request(
				r, NGX_HTTP_INTERNAL_SERVER_ERROR);
		}
		return;
	}
	if (ngx_handle_read_event(r->connection->read, 0) != NGX_OK) {
		ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
		return;
	}
	r->read_event_handler = ngx_http_block_reading;
	r->write_event_handler = ngx_http_core_run_phases;
	ngx_http_core_run_phases(r);
}

/* How long an accepted reservation waits, in whole ms (0: it goes at
 * once).  delay=N lets the first N units of a burst go at once, as
 * limit_req's delay= does: the wait is the departure's less N units'
 * spacing.  The departure itself stays reserved, so the queue still
 * bounds the burst. */
static ngx_msec_t
ngx_http_tkshm_wait(ngx_http_tkshm_limit_t *lim, const tkshm_reservation *res)
{
	double wait = res->wait_ms;

	if (lim->delay_free != 0) {
		wait -= (double)lim->delay_free * 1000.0 /
			lim->table->policy.u.leaky_bucket.rate_per_sec;
	}
	return wait <= 0 ? 0 : (ngx_msec_t)ceil(wait);
}

/* A leakyBucket limit (its level's only one): a reservation.  Accepted
 * with a wait: the request is parked on a timer for it (a worker never
 * sleeps; ngx_http_test_reading finalizes it if the client goes away),
 * unless nodelay; rejected: beyond the queue, denied at once. */
static ngx_int_t
ngx_http_tkshm_shape(ngx_http_request_t *r, ngx_http_tkshm_loc_conf_t *lcf,
		     ngx_http_tkshm_limit_t *lim, ngx_pool_cleanup_t *mark)
{
	int rc;
	ngx_str_t key;
	ngx_int_t k;
	tkshm_reservation res;
	ngx_msec_t wait;

	k = ngx_http_tkshm_key(r, lim, &key);
	if (k == NGX_DECLINED) {
		mark->data = (void *)(uintptr_t)NGX_HTTP_TKSHM_NONE;
		return NGX_DECLINED;
	}
	if (k != NGX_OK) {
		return NGX_DECLINED;
	}
	rc = tkshm_reserve_at(lim->table->handle, key.data, key.len, lim->cost,
			      tkshm_now_ms(), &res);
	if (rc != TKSHM_OK) {
		/* As a failed check: let the request through. */
		ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
			      "tkshm: reservation in table %V failed: %s (%s)",
			      &lim->table->name, tkshm_strerror(rc),
			      tkshm_error_name(rc));
		return NGX_DECLINED;
	}
	if (res.accepted) {
		mark->data = (void *)(uintptr_t)NGX_HTTP_TKSHM_ALLOWED;
		wait = ngx_http_tkshm_wait(lim, &res);
		if (wait == 0 || lim->nodelay || lcf->dry_run) {
			return NGX_DECLINED;
		}
		r->read_event_handler = ngx_http_test_reading;
		r->write_event_handler = ngx_http_tkshm_delay;
		r->connection->write->delayed = 1;
		ngx_add_timer(r->connection->write, wait);
		return NGX_AGAIN;
	}
	ngx_log_error(lcf->log_level, r->connection->log, 0,
		      "tkshm: table %V %s the request, retry after %L ms",
		      &lim->table->name, lcf->dry_run ? "would deny" : "denies",
		      res.retry_after_ms);
	if (lcf->dry_run) {
		mark->data = (void *)(uintptr_t)NGX_HTTP_TKSHM_DRY_RUN;
		return NGX_DECLINED;
	}
	mark->data = (void *)(uintptr_t)NGX_HTTP_TKSHM_DENIED;
	ngx_http_tkshm_retry_after(r, res.retry_after_ms);
	return lcf->status;
}

/* Checks the request's limits; *binding names the deciding dimension. */
static ngx_int_t
ngx_http_tkshm_decide(ngx_http_request_t *r, ngx_http_tkshm_loc_conf_t *lcf,
		      ngx_http_tkshm_table_t **tables, size_t *n, double now_ms,
		      tkshm_decision *d, size_t *binding)
{
	int rc;
	ngx_str_t key;
	ngx_uint_t i;
	ngx_int_t k;
	ngx_http_tkshm_limit_t *lim = lcf->limits->elts;
	tkshm_dimension dims[TKSHM_MULTI_MAX];

	*n = 0;
	for (i = 0; i < lcf->limits->nelts; i++) {
		k = ngx_http_tkshm_key(r, &lim[i], &key);
		if (k == NGX_DECLINED) {
			continue;
		}
		if (k != NGX_OK) {
			return NGX_ERROR;
		}
		dims[*n].table = lim[i].table->handle;
		dims[*n].key = key.data;
		dims[*n].key_len = key.len;
		dims[*n].cost = lim[i].cost;
		tables[(*n)++] = lim[i].table;
	}
	if (*n == 0) {
		return NGX_DECLINED;
	}
	*binding = 0;
	rc = *n == 1 ?
		     tkshm_check_at(dims[0].table, dims[0].key, dims[0].key_len,
				    dims[0].cost, now_ms, d) :
		     tkshm_check_multi_at(TKSHM_MULTI_ALL, dims, *n, now_ms, d,
					  NULL, binding);
	if (rc != TKSHM_OK) {
		/* Let the request through: a table that cannot decide (full and
         * refusing to evict, contention that did not settle) must not
         * take the site down. */
		ngx_log_error(NGX_LOG_WARN, r->connection->log, 0,
			      "tkshm: check of table %V%s failed: %s (%s)",
			      &tables[0]->name, *n > 1 ? " and others" : "",
			      tkshm_strerror(rc), tkshm_error_name(rc));
		return NGX_ERROR;
	}
	return NGX_OK;
}

ngx_int_t
ngx_http_tkshm_handler(ngx_http_request_t *r)
{
	double now_ms;
	size_t n, binding;
	ngx_int_t rc;
	tkshm_decision d;
	ngx_pool_cleanup_t *mark;
	ngx_http_tkshm_limit_t *lim;
	ngx_http_tkshm_table_t *tables[TKSHM_MULTI_MAX];
	ngx_http_tkshm_loc_conf_t *lcf;

	lcf = ngx_http_get_module_loc_conf(r, ngx_http_tkshm_module);
	if (lcf->limits == NULL || r != r->main ||
	    ngx_http_tkshm_find_mark(r) != NULL) {
		return NGX_DECLINED;
	}
	mark = ngx_pool_cleanup_add(r->pool, 0);
	if (mark == NULL) {
		return NGX_HTTP_INTERNAL_SERVER_ERROR;
	}
	mark->handler = ngx_http_tkshm_mark;
	mark->data = (void *)(uintptr_t)NGX_HTTP_TKSHM_ERROR;
	lim = lcf->limits->elts;
	if (lim[0].table->policy.kind == TKSHM_KIND_LEAKY_BUCKET) {
		/* The only limit of its level (checked at configuration). */
		return ngx_http_tkshm_shape(r, lcf, &lim[0], mark);
	}

	/* One clock read for the check and the headers' reset times. */
	now_ms = tkshm_now_ms();
	rc = ngx_http_tkshm_decide(r, lcf, tables, &n, now_ms, &d, &binding);
	if (rc == NGX_DECLINED) {
		mark->data = (void *)(uintptr_t)NGX_HTTP_TKSHM_NONE;
		return NGX_DECLINED;
	}
	if (rc != NGX_OK) {
		return NGX_DECLINED;
	}
	if (d.allowed) {
		mark->data = (void *)(uintptr_t)NGX_HTTP_TKSHM_ALLOWED;
		if (!lcf->dry_run) {
			ngx_http_tkshm_set_headers(r, lcf, tables[binding], &d,
						   now_ms);
		}
		return NGX_DECLINED;
	}
	ngx_log_error(lcf->log_level, r->connection->log, 0,
		      "tkshm: table %V %s the request, retry after %L ms",
		      &tables[binding]->name,
		      lcf->dry_run ? "would deny" : "denies",
		      (int64_t)d.retry_after_ms);
	if (lcf->dry_run) {
		/* Counted and logged; the response is the one without the
         * module. */
		mark->data = (void *)(uintptr_t)NGX_HTTP_TKSHM_DRY_RUN;
		return NGX_DECLINED;
	}
	mark->data = (void *)(uintptr_t)NGX_HTTP_TKSHM_DENIED;
	ngx_http_tkshm_set_headers(r, lcf, tables[binding], &d, now_ms);
	return lcf->status;
}
