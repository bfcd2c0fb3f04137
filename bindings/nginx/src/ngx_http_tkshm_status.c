/*
 * ngx_http_tkshm_status.c - tkshm_status_page: a location answering with
 * the counters of every table (tkshm_stats_get), as stub_status does for
 * nginx's connections.  Plain text by default ("NAME.counter value"
 * lines), one JSON object for "?json", Prometheus's text exposition
 * format for "?prometheus" (ngx_http_tkshm_prom.c).
 */
#include "ngx_http_tkshm.h"

/* The counters shown, in the order shown. */
#define NGX_HTTP_TKSHM_COUNTERS(X)                                    \
	X(allowed)                                                    \
	X(denied)                                                     \
	X(inserts) X(reclaims) X(evictions) X(evictions_in_debt)      \
		X(debt_restores) X(cas_retries) X(refusals) X(resets) \
			X(multi_rollbacks) X(slots) X(file_bytes)

#define NGX_HTTP_TKSHM_COUNTER_MAX (sizeof("evictions_in_debt") + 24)
#define NGX_HTTP_TKSHM_COUNTERS_N  13

/* The most bytes one table's entry takes, its escaped path aside. */
#define NGX_HTTP_TKSHM_TABLE_MAX                                   \
	(3 * NGX_HTTP_TKSHM_NAME_MAX + TKSHM_POLICY_MAX * 2 + 64 + \
	 NGX_HTTP_TKSHM_COUNTERS_N *                               \
		 (NGX_HTTP_TKSHM_COUNTER_MAX + NGX_HTTP_TKSHM_NAME_MAX + 8))

/* One table's entry; a table whose stats cannot be read says why. */
static u_char *
ngx_http_tkshm_status_table(u_char *p, ngx_http_tkshm_table_t *t,
			    ngx_uint_t json, ngx_uint_t first)
{
	static ngx_str_t anonymous = ngx_string("anonymous");
	int rc;
	char policy[TKSHM_POLICY_MAX];
	tkshm_stats st;

	rc = tkshm_stats_get(t->handle, &st);
	if (rc == TKSHM_OK) {
		rc = tkshm_policy_format(&st.policy, policy, sizeof(policy));
	}
	if (rc < 0) {
		return json ? ngx_sprintf(p, "%s\"%V\":{\"error\":\"%s\"}",
					  first ? "" : ",", &t->name,
					  tkshm_error_name(rc)) :
			      ngx_sprintf(p, "%V.error %s\n", &t->name,
					  tkshm_error_name(rc));
	}
	if (json) {
		p = ngx_sprintf(p, "%s\"%V\":{\"policy\":\"", first ? "" : ",",
				&t->name);
		p = (u_char *)ngx_escape_json(p, (u_char *)policy,
					      ngx_strlen(policy));
		p = ngx_sprintf(p, "\",\"file\":\"");
		p = (u_char *)ngx_escape_json(p, t->path.data, t->path.len);
		p = ngx_sprintf(p, "\"");
#define X(f) p = ngx_sprintf(p, ",\"" #f "\":%uL", (uint64_t)st.f);
		NGX_HTTP_TKSHM_COUNTERS(X)
#undef X
		return ngx_sprintf(p, "}");
	}
	p = ngx_sprintf(p, "%V.policy %s\n%V.file %V\n", &t->name, policy,
			&t->name, t->path.len ? &t->path : &anonymous);
#define X(f) p = ngx_sprintf(p, "%V." #f " %uL\n", &t->name, (uint64_t)st.f);
	NGX_HTTP_TKSHM_COUNTERS(X)
#undef X
	return p;
}

static ngx_int_t
ngx_http_tkshm_status_handler(ngx_http_request_t *r)
{
	size_t size = 4;
	u_char *p;
	ngx_int_t rc;
	ngx_buf_t *b;
	ngx_uint_t i, json, prometheus;
	ngx_chain_t out;
	ngx_http_tkshm_table_t **tables;
	ngx_http_tkshm_main_conf_t *mcf;

	if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) {
		return NGX_HTTP_NOT_ALLOWED;
	}
	rc = ngx_http_discard_request_body(r);
	if (rc != NGX_OK) {
		return rc;
	}
	json = r->args.len == 4 && ngx_strncmp(r->args.data, "json", 4) == 0;
	prometheus = r->args.len == 10 &&
		     ngx_strncmp(r->args.data, "prometheus", 10) == 0;
	mcf = ngx_http_get_module_main_conf(r, ngx_http_tkshm_module);
	tables = mcf->tables.elts;
	for (i = 0; i < mcf->tables.nelts; i++) {
		size += NGX_HTTP_TKSHM_TABLE_MAX +
			ngx_escape_json(NULL, tables[i]->path.data,
					tables[i]->path.len) +
			2 * tables[i]->path.len;
	}
	if (prometheus) {
		size += ngx_http_tkshm_prom_size(mcf->tables.nelts);
	}
	b = ngx_create_temp_buf(r->pool, size);
	if (b == NULL) {
		return NGX_HTTP_INTERNAL_SERVER_ERROR;
	}
	p = b->last;
	if (prometheus) {
		p = ngx_http_tkshm_status_prometheus(r, p, tables,
						     mcf->tables.nelts);
		if (p == NULL) {
			return NGX_HTTP_INTERNAL_SERVER_ERROR;
		}
	}
	if (json) {
		*p++ = '{';
	}
	for (i = 0; !prometheus && i < mcf->tables.nelts; i++) {
		p = ngx_http_tkshm_status_table(p, tables[i], json, i == 0);
	}
	if (json) {
		*p++ = '}';
		*p++ = '\n';
	}
	b->last = p;
	b->last_buf = (r == r->main) ? 1 : 0;
	b->last_in_chain = 1;

	r->headers_out.status = NGX_HTTP_OK;
	r->headers_out.content_length_n = b->last - b->pos;
	if (json) {
		ngx_str_set(&r->headers_out.content_type, "application/json");
	} else if (prometheus) {
		/* The version of the text exposition format. */
		ngx_str_set(&r->headers_out.content_type,
			    "text/plain; version=0.0.4");
	} else {
		ngx_str_set(&r->headers_out.content_type, "text/plain");
	}
	r->headers_out.content_type_len = r->headers_out.content_type.len;
	rc = ngx_http_send_header(r);
	if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
		return rc;
	}
	out.buf = b;
	out.next = NULL;
	return ngx_http_output_filter(r, &out);
}

/* tkshm_status_page: this location answers with the tables' counters. */
char *
ngx_http_tkshm_status_page_directive(ngx_conf_t *cf, ngx_command_t *cmd,
				     void *conf)
{
	ngx_http_core_loc_conf_t *clcf;

	(void)cmd;
	(void)conf;
	clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
	clcf->handler = ngx_http_tkshm_status_handler;
	return NGX_CONF_OK;
}
