/*
 * ngx_http_tkshm_prom.c - "?prometheus" of tkshm_status_page: the tables'
 * metrics in Prometheus's text exposition format (0.0.4), with the names,
 * types and labels of `tkshm-inspect metrics` and Apache's status page
 * (bindings/common/tkshm_prom.h), each table labelled table="NAME", its
 * tkshm_table name.
 *
 * Every table is read first (tkshm_stats_get, and tkshm_usage_get's scan
 * of its slots for the keys by state and the occupancy: O(slots), a
 * millisecond or so per million slots, in the worker answering the
 * scrape), then each metric is written with its HELP and TYPE lines and
 * one sample per table that has it.  A table that could not be read has
 * no samples; tkshm_status_errors, last, counts them.
 */
/* nginx's headers first (ngx_config.h before any system header); they
 * bring <stdio.h> for snprintf. */
#include "ngx_http_tkshm.h"
#include "tkshm_prom.h"

/* The most bytes a metric's HELP and TYPE lines take, and one sample:
 * the metric, the table (NGX_HTTP_TKSHM_NAME_MAX), a second label, a
 * value. */
#define NGX_HTTP_TKSHM_PROM_HEAD   320
#define NGX_HTTP_TKSHM_PROM_SAMPLE (64 + NGX_HTTP_TKSHM_NAME_MAX + 48 + 32)
/* The most series one table has across every metric. */
#define NGX_HTTP_TKSHM_PROM_SERIES (TKPROM_N * 5)

size_t
ngx_http_tkshm_prom_size(ngx_uint_t ntables)
{
	return TKPROM_N * NGX_HTTP_TKSHM_PROM_HEAD + 200 +
	       ntables * NGX_HTTP_TKSHM_PROM_SERIES *
		       NGX_HTTP_TKSHM_PROM_SAMPLE;
}

/* Integers as integers, other values with round-trip precision
 * (ngx_sprintf has no %g). */
static u_char *
ngx_http_tkshm_prom_number(u_char *p, double v)
{
	char buf[40];
	int n;

	if (v > -9007199254740992.0 && v < 9007199254740992.0 &&
	    v == (double)(int64_t)v) {
		return ngx_sprintf(p, "%L", (int64_t)v);
	}
	n = snprintf(buf, sizeof(buf), "%.17g", v);
	return ngx_cpymem(p, buf, n > 0 ? (size_t)n : 0);
}

static u_char *
ngx_http_tkshm_prom_metric(u_char *p, size_t m, const tkprom_sample *s,
			   ngx_uint_t n)
{
	const tkprom_metric *mt = &tkprom_metrics[m];
	size_t i, nseries = tkprom_nseries(mt);
	ngx_uint_t k, any = 0;

	for (k = 0; k < n && !any; k++) {
		any = s[k].ok && tkprom_has(mt, &s[k]);
	}
	if (!any) {
		return p;
	}
	p = ngx_sprintf(p, "# HELP %s %s\n# TYPE %s %s\n", mt->name, mt->help,
			mt->name, mt->type);
	for (k = 0; k < n; k++) {
		if (!s[k].ok || !tkprom_has(mt, &s[k])) {
			continue;
		}
		for (i = 0; i < nseries; i++) {
			/* Table names are [A-Za-z0-9_.-]: nothing to
			 * escape. */
			p = ngx_sprintf(p, "%s{table=\"%s\"", mt->name,
					s[k].name);
			if (mt->label) {
				p = ngx_sprintf(p, ",%s=\"%s\"", mt->label,
						mt->values[i]);
			}
			p = ngx_sprintf(p, "} ");
			p = ngx_http_tkshm_prom_number(
				p, tkprom_value(m, i, &s[k]));
			*p++ = '\n';
		}
	}
	return p;
}

u_char *
ngx_http_tkshm_status_prometheus(ngx_http_request_t *r, u_char *p,
				 ngx_http_tkshm_table_t **tables, ngx_uint_t n)
{
	double now = tkshm_now_ms();
	ngx_uint_t i, errors = 0;
	tkprom_sample *s;
	size_t m;

	s = ngx_pcalloc(r->pool, (n + 1) * sizeof(tkprom_sample));
	if (s == NULL) {
		return NULL;
	}
	for (i = 0; i < n; i++) {
		/* NUL-terminated (ngx_http_tkshm.h). */
		s[i].name = (const char *)tables[i]->name.data;
		s[i].ok = tkshm_stats_get(tables[i]->handle, &s[i].st) ==
				  TKSHM_OK &&
			  tkshm_usage_get(tables[i]->handle, now, &s[i].u) ==
				  TKSHM_OK;
		errors += !s[i].ok;
	}
	for (m = 0; m < TKPROM_N; m++) {
		p = ngx_http_tkshm_prom_metric(p, m, s, n);
	}
	return ngx_sprintf(p,
			   "# HELP tkshm_status_errors Tables named that "
			   "could not be read.\n"
			   "# TYPE tkshm_status_errors gauge\n"
			   "tkshm_status_errors %ui\n",
			   errors);
}
