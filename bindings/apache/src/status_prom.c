/*
 * status_prom.c - tkshm-status?prometheus: the declared tables' counters
 * in Prometheus's text exposition format (0.0.4), with the metric names,
 * types and labels of `tkshm-inspect metrics` and nginx's status page, so
 * that one dashboard and one set of alerting rules (contrib/) serve all
 * three.  Each table is labelled table="NAME", its TkshmTable name.
 *
 * The tables are read first (tkshm_stats_get, and a scan of the slots,
 * tkshm_usage_get, for the keys by state and the occupancy), then each
 * metric is written with its HELP and TYPE lines and one sample per table
 * that has it, as the format wants a metric's samples together.  A table
 * that could not be read has no samples; tkshm_status_errors, last,
 * counts them.
 */
#include <math.h>
#include <string.h>

#include "mod_tkshm.h"

#include "http_protocol.h"
#include "apr_strings.h"

#include "tkshm_prom.h"

/* Integers as integers, other values with round-trip precision. */
static void
tkap_prom_number(request_rec *r, double v)
{
	if (v > -9007199254740992.0 && v < 9007199254740992.0 && v == floor(v))
		ap_rprintf(r, "%" APR_INT64_T_FMT, (apr_int64_t)v);
	else
		ap_rprintf(r, "%.17g", v);
}

static void
tkap_prom_metric_out(request_rec *r, size_t m, const tkprom_sample *s, int n)
{
	const tkprom_metric *mt = &tkprom_metrics[m];
	size_t nseries = tkprom_nseries(mt);
	bool any = false;

	for (int k = 0; k < n && !any; k++)
		any = s[k].ok && tkprom_has(mt, &s[k]);
	if (!any)
		return;
	ap_rprintf(r, "# HELP %s %s\n# TYPE %s %s\n", mt->name, mt->help,
		   mt->name, mt->type);
	for (int k = 0; k < n; k++) {
		if (!s[k].ok || !tkprom_has(mt, &s[k]))
			continue;
		for (size_t i = 0; i < nseries; i++) {
			/* Table names are [A-Za-z0-9_.-] (config.c): nothing
			 * to escape. */
			ap_rprintf(r, "%s{table=\"%s\"", mt->name, s[k].name);
			if (mt->label)
				ap_rprintf(r, ",%s=\"%s\"", mt->label,
					   mt->values[i]);
			ap_rputs("} ", r);
			tkap_prom_number(r, tkprom_value(m, i, &s[k]));
			ap_rputc('\n', r);
		}
	}
}

void
tkap_status_prometheus(request_rec *r, const apr_array_header_t *tables)
{
	tkprom_sample *s =
		apr_pcalloc(r->pool, sizeof(*s) * (size_t)(tables->nelts + 1));
	double now = tkshm_now_ms();
	int errors = 0;

	for (int k = 0; k < tables->nelts; k++) {
		const tkap_table *t = ((tkap_table **)tables->elts)[k];

		s[k].name = t->name;
		s[k].ok = t->handle &&
			  tkshm_stats_get(t->handle, &s[k].st) == TKSHM_OK &&
			  tkshm_usage_get(t->handle, now, &s[k].u) == TKSHM_OK;
		errors += !s[k].ok;
	}
	for (size_t m = 0; m < TKPROM_N; m++)
		tkap_prom_metric_out(r, m, s, tables->nelts);
	ap_rprintf(r,
		   "# HELP tkshm_status_errors Tables named that could not "
		   "be read.\n"
		   "# TYPE tkshm_status_errors gauge\n"
		   "tkshm_status_errors %d\n",
		   errors);
}
