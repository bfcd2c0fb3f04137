/*
 * limit.c - the check of one request against the limits of its section:
 * every key is computed, all the limits decide together (one check, or
 * tkshm_check_multi_at's `all`: nothing is consumed unless every limit
 * admits), and the decision becomes response headers and, when denied,
 * the section's deny status.
 */
#include <string.h>

#include "mod_tkshm.h"

#include "http_log.h"
#include "http_protocol.h"
#include "apr_sha1.h"

APLOG_USE_MODULE(tkshm);

/* The value r->notes "tkshm" takes, for LogFormat's %{tkshm}n. */
#define TKAP_NOTE "tkshm"

/* Buffer for the header values of any decision of any table. */
#define TKAP_HEADERS_BUF TKSHM_HTTP_BUF_SIZE(TKAP_TABLE_NAME_MAX)

/* The settings of a section, defaults filled in where no section set
 * one. */
static int
tkap_headers_style(const tkap_dir_conf *c)
{
	return c->headers >= 0 ? c->headers : TKSHM_HTTP_DRAFT;
}

static unsigned
tkap_v6_prefix(const tkap_dir_conf *c)
{
	return c->v6_prefix > 0 ? (unsigned)c->v6_prefix :
				  TKSHM_HTTP_V6_PREFIX_DEFAULT;
}

static int
tkap_deny_status(const tkap_dir_conf *c)
{
	return c->deny_status > 0 ? c->deny_status : HTTP_TOO_MANY_REQUESTS;
}

static bool
tkap_dry_run(const tkap_dir_conf *c)
{
	return c->dry_run == 1;
}

/* A check that could not decide: let the request through, or answer 503,
 * as TkshmOnError says (a dry run never denies). */
static int
tkap_undecided(request_rec *r, const tkap_dir_conf *c)
{
	apr_table_setn(r->notes, TKAP_NOTE, "error");
	if (c->on_error == TKAP_ON_ERROR_DENY && !tkap_dry_run(c))
		return HTTP_SERVICE_UNAVAILABLE;
	return DECLINED;
}

/* A check of these tables failed: the library could not decide at all
 * (it decides every Redis fault by the table's failure policy itself).
 * TkshmOnError allow must still not admit where a table fails closed:
 * its policy denies whenever it cannot decide. */
static int
tkap_check_failed(request_rec *r, const tkap_dir_conf *c,
		  const tkap_table *const *tables, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const tkshm_global *g = &tables[i]->policy.global;

		if (g->mode != TKSHM_MODE_LOCAL &&
		    g->failure == TKSHM_FAILURE_CLOSED && !tkap_dry_run(c)) {
			apr_table_setn(r->notes, TKAP_NOTE, "error");
			return HTTP_SERVICE_UNAVAILABLE;
		}
	}
	return tkap_undecided(r, c);
}

/* Adds the decision's headers to every response of the request (error
 * responses included: err_headers_out). */
static void
tkap_set_headers(request_rec *r, const tkap_dir_conf *c, const tkap_table *t,
		 const tkshm_decision *d, double now_ms)
{
	tkshm_http_header h[TKSHM_HTTP_HEADERS_MAX];
	char *buf = apr_palloc(r->pool, TKAP_HEADERS_BUF);
	int n = tkshm_http_headers(d, (tkshm_http_style)tkap_headers_style(c),
				   t->name, -1, now_ms, h, buf,
				   TKAP_HEADERS_BUF);

	if (n < 0) {
		/* Not reachable with a checked name and a sized buffer; a
		 * response without the headers is still right. */
		ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r,
			      "tkshm: RateLimit headers of table %s: %s",
			      t->name, tkshm_strerror(n));
		return;
	}
	for (int i = 0; i < n; i++)
		apr_table_setn(r->err_headers_out, h[i].name, h[i].value);
}

/* Denials are routine: logged at TkshmLogLevel (info by default, so that
 * LogLevel tkshm:info shows them). */
static void
tkap_log_denial(request_rec *r, const tkap_dir_conf *c, const char *verb,
		const tkap_table *t, const tkshm_dimension *dim,
		const tkshm_decision *d)
{
	int level = c->log_level >= 0 ? c->log_level : APLOG_INFO;
	/* A digest of a long key is binary-prefixed: logged as its hex. */
	int shown = dim->key_len > 0 && ((const char *)dim->key)[0] == '\x01' ?
			    (int)dim->key_len - 1 :
			    (int)dim->key_len;
	const char *key = (const char *)dim->key + (dim->key_len - shown);

	ap_log_rerror(
		APLOG_MARK, level, 0, r,
		"tkshm: table %s %s %.*s (retry after %" APR_INT64_T_FMT " ms)",
		t->name, verb, shown, key, (apr_int64_t)d->retry_after_ms);
}

/* A key longer than its table takes would fail the check, and TkshmOnError
 * allow would then let the request through: a client could skip the limit
 * with a long header.  Such a key is replaced by its SHA-1, so that each
 * long key keeps a bucket of its own; the \x01 prefix keeps digests apart
 * from every key a client can send as is (no header holds a \x01). */
static const char *
tkap_long_key(request_rec *r, const char *key, size_t *len)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char digest[APR_SHA1_DIGESTSIZE];
	apr_sha1_ctx_t ctx;
	char *out, *p;

	apr_sha1_init(&ctx);
	/* apr_sha1_update takes an unsigned length: in pieces. */
	for (size_t off = 0; off < *len;) {
		size_t n = *len - off > (1u << 30) ? (1u << 30) : *len - off;

		apr_sha1_update_binary(&ctx, (const unsigned char *)key + off,
				       (unsigned int)n);
		off += n;
	}
	apr_sha1_final(digest, &ctx);
	out = apr_palloc(r->pool, TKAP_LONG_KEY_LEN + 1);
	memcpy(out, TKAP_LONG_KEY_PREFIX, sizeof(TKAP_LONG_KEY_PREFIX) - 1);
	p = out + sizeof(TKAP_LONG_KEY_PREFIX) - 1;
	for (size_t i = 0; i < sizeof(digest); i++) {
		*p++ = hex[digest[i] >> 4];
		*p++ = hex[digest[i] & 15];
	}
	*p = '\0';
	*len = TKAP_LONG_KEY_LEN;
	return out;
}

int
tkap_limit_request(request_rec *r)
{
	const tkap_dir_conf *c =
		ap_get_module_config(r->per_dir_config, &tkshm_module);
	tkshm_dimension dims[TKSHM_MULTI_MAX];
	const tkap_table *tables[TKSHM_MULTI_MAX];
	char client[TKSHM_HTTP_CLIENT_KEY_MAX];
	int client_len = 0; /* 0: not computed yet */
	const tkap_limit *lim;
	tkshm_decision d;
	size_t n = 0, binding = 0;
	double now_ms;
	int rc;

	if (!c->limits || c->limits->nelts == 0)
		return DECLINED;
	/* httpd runs this hook for the client's request only, not for its
	 * subrequests; an internal redirect (ErrorDocument, DirectoryIndex,
	 * a rewrite) is the same request again, already counted. */
	if (r->prev)
		return DECLINED;

	lim = (const tkap_limit *)c->limits->elts;
	for (int i = 0; i < c->limits->nelts; i++) {
		const char *key;
		size_t len;

		if (lim[i].key) {
			const char *why = NULL;

			key = ap_expr_str_exec(r, lim[i].key, &why);
			if (why) {
				ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
					      "tkshm: key of table %s: %s",
					      lim[i].table->name, why);
				return tkap_undecided(r, c);
			}
			len = strlen(key);
			if (len == 0)
				continue; /* no key: the limit does not apply */
			if (len > (lim[i].table->policy.global.mode ==
						   TKSHM_MODE_LEASE ?
					   TKSHM_LEASE_KEY_MAX :
					   TKSHM_KEY_MAX))
				key = tkap_long_key(r, key, &len);
		} else {
			if (client_len == 0) {
				client_len = tkshm_http_client_key(
					r->useragent_ip, tkap_v6_prefix(c),
					client, sizeof(client));
				if (client_len <= 0) {
					ap_log_rerror(
						APLOG_MARK, APLOG_WARNING, 0, r,
						"tkshm: client address "
						"'%s': %s",
						r->useragent_ip,
						tkshm_strerror(client_len));
					return tkap_undecided(r, c);
				}
			}
			key = client;
			len = (size_t)client_len;
		}
		dims[n].table = lim[i].table->handle;
		dims[n].key = key;
		dims[n].key_len = len;
		dims[n].cost = lim[i].cost;
		tables[n] = lim[i].table;
		n++;
	}
	if (n == 0)
		return DECLINED;

	/* One clock read for the check and the headers' reset times. */
	now_ms = tkshm_now_ms();
	if (n == 1)
		/* The only form a lease table takes (tables.c). */
		rc = tkshm_check_at(dims[0].table, dims[0].key, dims[0].key_len,
				    dims[0].cost, now_ms, &d);
	else
		rc = tkshm_check_multi_at(TKSHM_MULTI_ALL, dims, n, now_ms, &d,
					  NULL, &binding);
	if (rc != TKSHM_OK) {
		ap_log_rerror(APLOG_MARK, APLOG_WARNING, 0, r,
			      "tkshm: check of table %s%s failed: %s (%s)",
			      tables[0]->name, n > 1 ? " and others" : "",
			      tkshm_strerror(rc), tkshm_error_name(rc));
		return tkap_check_failed(r, c, tables, n);
	}

	if (!d.allowed)
		tkap_log_denial(r, c, tkap_dry_run(c) ? "would deny" : "denies",
				tables[binding], &dims[binding], &d);
	if (tkap_dry_run(c)) {
		/* Counted, logged and noted; the response is the one without
		 * the module. */
		apr_table_setn(r->notes, TKAP_NOTE,
			       d.allowed ? "allowed" : "dry-run");
		return DECLINED;
	}
	tkap_set_headers(r, c, tables[binding], &d, now_ms);
	apr_table_setn(r->notes, TKAP_NOTE, d.allowed ? "allowed" : "denied");
	return d.allowed ? DECLINED : tkap_deny_status(c);
}
