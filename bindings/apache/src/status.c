/*
 * status.c - the tkshm-status handler, in the spirit of mod_status: every
 * declared table with its definition and its counters.
 *
 *   <Location /tkshm-status>
 *       SetHandler tkshm-status
 *   </Location>
 *
 * Plain text by default, "?auto" for `Key: value` lines (each table's
 * lines follow its "Table:" line), "?json" for one JSON object,
 * "?prometheus" for Prometheus's text format (status_prom.c).  It only
 * reads (tkshm_stats_get): a status request changes no table.
 */
#include <string.h>

#include "mod_tkshm.h"

#include "http_protocol.h"
#include "http_request.h"
#include "apr_strings.h"

/* One line of a table's status: a name, its value, and whether JSON
 * takes the value as a number (else a string). */
typedef struct tkap_field {
	const char *key;
	const char *value;
	bool number;
} tkap_field;

enum tkap_format {
	TKAP_TEXT,
	TKAP_AUTO,
	TKAP_JSON,
	TKAP_PROMETHEUS
};

static void
tkap_add(apr_array_header_t *f, const char *key, const char *value, bool number)
{
	tkap_field *x = apr_array_push(f);

	x->key = key;
	x->value = value;
	x->number = number;
}

static void
tkap_add_u64(apr_pool_t *p, apr_array_header_t *f, const char *key, uint64_t v)
{
	tkap_add(f, key, apr_psprintf(p, "%" APR_UINT64_T_FMT, (apr_uint64_t)v),
		 true);
}

/* The fields of one table; the cross-host tier's only for the tables that
 * have one. */
static apr_array_header_t *
tkap_table_fields(apr_pool_t *p, const tkap_table *t)
{
	apr_array_header_t *f = apr_array_make(p, 40, sizeof(tkap_field));
	char policy[TKSHM_POLICY_MAX];
	tkshm_stats st;

	tkap_add(f, "Table", t->name, false);
	tkap_add(f, "File", t->path ? t->path : "anonymous", false);
	if (tkshm_policy_format(&t->policy, policy, sizeof(policy)) < 0)
		policy[0] = '\0'; /* not reached: the policy was parsed */
	tkap_add(f, "Policy", apr_pstrdup(p, policy), false);
	if (!t->handle || tkshm_stats_get(t->handle, &st) != TKSHM_OK) {
		tkap_add(f, "Error", "not open", false);
		return f;
	}
	tkap_add_u64(p, f, "Slots", st.slots);
	tkap_add_u64(p, f, "FileBytes", st.file_bytes);
	tkap_add(f, "OnFull",
		 st.on_full == TKSHM_ON_FULL_REFUSE ? "refuse" : "evict",
		 false);
	tkap_add_u64(p, f, "Allowed", st.allowed);
	tkap_add_u64(p, f, "Denied", st.denied);
	tkap_add_u64(p, f, "Inserts", st.inserts);
	tkap_add_u64(p, f, "Reclaims", st.reclaims);
	tkap_add_u64(p, f, "Evictions", st.evictions);
	tkap_add_u64(p, f, "EvictionsInDebt", st.evictions_in_debt);
	tkap_add_u64(p, f, "DebtRestores", st.debt_restores);
	tkap_add_u64(p, f, "Refusals", st.refusals);
	tkap_add_u64(p, f, "CasRetries", st.cas_retries);
	tkap_add_u64(p, f, "DuplicatesKilled", st.duplicates_killed);
	tkap_add_u64(p, f, "Resets", st.resets);
	tkap_add_u64(p, f, "MultiRollbacks", st.multi_rollbacks);
	tkap_add_u64(p, f, "ClaimsStolen", st.claims_stolen);
	if (t->policy.global.mode == TKSHM_MODE_LOCAL)
		return f;
	tkap_add(f, "GlobalMode",
		 t->policy.global.mode == TKSHM_MODE_STRICT ? "strict" :
							      "lease",
		 false);
	tkap_add_u64(p, f, "GlobalRedisCalls", st.global.redis_calls);
	tkap_add_u64(p, f, "GlobalRedisErrors", st.global.redis_errors);
	tkap_add_u64(p, f, "GlobalNoscriptReloads", st.global.noscript_reloads);
	tkap_add_u64(p, f, "GlobalBreakerOpens", st.global.breaker_opens);
	tkap_add_u64(p, f, "GlobalCacheDenials", st.global.cache_denials);
	tkap_add_u64(p, f, "GlobalFallbackAllowed", st.global.fallback_allowed);
	tkap_add_u64(p, f, "GlobalFallbackDenied", st.global.fallback_denied);
	tkap_add_u64(p, f, "GlobalNoLease", st.global.no_lease);
	tkap_add_u64(p, f, "GlobalLeases", st.global.leases);
	tkap_add_u64(p, f, "GlobalLeaseUnits", st.global.lease_units);
	tkap_add_u64(p, f, "GlobalLeaseRoundTrips",
		     st.global.lease_round_trips);
	tkap_add_u64(p, f, "GlobalLeaseUnitsExpired",
		     st.global.lease_units_expired);
	tkap_add_u64(p, f, "GlobalHosts", st.global.hosts);
	tkap_add(f, "GlobalRedisUp", st.global.redis_up ? "true" : "false",
		 true);
	tkap_add(f, "GlobalAgentPid",
		 apr_psprintf(p, "%" APR_INT64_T_FMT,
			      (apr_int64_t)st.global.agent_pid),
		 true);
	return f;
}

/* A JSON string: a file name may hold any byte but NUL. */
static void
tkap_json_string(request_rec *r, const char *s)
{
	ap_rputc('"', r);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			ap_rprintf(r, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			ap_rprintf(r, "\\u%04x", c);
		else
			ap_rputc(c, r);
	}
	ap_rputc('"', r);
}

static void
tkap_emit(request_rec *r, enum tkap_format fmt, int index,
	  const apr_array_header_t *f)
{
	const tkap_field *x = (const tkap_field *)f->elts;

	for (int i = 0; i < f->nelts; i++) {
		switch (fmt) {
		case TKAP_AUTO:
			ap_rprintf(r, "%s: %s\n", x[i].key, x[i].value);
			break;
		case TKAP_TEXT:
			if (i == 0)
				ap_rprintf(r, "%stable %s\n", index ? "\n" : "",
					   x[i].value);
			else
				ap_rprintf(r, "  %-24s %s\n", x[i].key,
					   x[i].value);
			break;
		case TKAP_JSON:
			ap_rputs(i == 0 ? (index ? ",{" : "{") : ",", r);
			tkap_json_string(r, x[i].key);
			ap_rputc(':', r);
			if (x[i].number)
				ap_rputs(x[i].value, r);
			else
				tkap_json_string(r, x[i].value);
			break;
		case TKAP_PROMETHEUS: /* not reached: status_prom.c's */
			break;
		}
	}
	if (fmt == TKAP_JSON)
		ap_rputc('}', r);
}

int
tkap_status_handler(request_rec *r)
{
	enum tkap_format fmt = TKAP_TEXT;
	apr_array_header_t *tables;

	if (!r->handler || strcmp(r->handler, "tkshm-status") != 0)
		return DECLINED;
	/* The Allow header of a 405 is made of allowed_methods. */
	r->allowed = AP_METHOD_BIT << M_GET;
	ap_allow_methods(r, REPLACE_ALLOW, "GET", NULL);
	if (r->method_number != M_GET) /* HEAD is a GET without the body */
		return HTTP_METHOD_NOT_ALLOWED;
	if (r->args && strcmp(r->args, "auto") == 0)
		fmt = TKAP_AUTO;
	else if (r->args && strcmp(r->args, "json") == 0)
		fmt = TKAP_JSON;
	else if (r->args && strcmp(r->args, "prometheus") == 0)
		fmt = TKAP_PROMETHEUS;
	ap_set_content_type(r, fmt == TKAP_JSON ? "application/json" :
			       fmt == TKAP_PROMETHEUS ?
						  "text/plain; version=0.0.4; "
						  "charset=utf-8" :
						  "text/plain; charset=utf-8");
	/* Counters change with every request: never from a cache. */
	apr_table_setn(r->headers_out, "Cache-Control", "no-store");
	if (r->header_only)
		return OK;
	tables = tkap_tables_list(r->pool);
	if (fmt == TKAP_PROMETHEUS) {
		tkap_status_prometheus(r, tables);
		return OK;
	}
	if (fmt == TKAP_JSON)
		ap_rputs("{\"tables\":[", r);
	else if (fmt == TKAP_AUTO)
		ap_rprintf(r, "Tables: %d\n", tables->nelts);
	for (int i = 0; i < tables->nelts; i++)
		tkap_emit(r, fmt, i,
			  tkap_table_fields(r->pool,
					    ((tkap_table **)tables->elts)[i]));
	if (fmt == TKAP_JSON)
		ap_rputs("]}\n", r);
	return OK;
}
