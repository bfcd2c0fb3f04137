/*
 * ngx_http_tkshm_directive.c - the arguments of tkshm_table, tkshm_limit
 * and tkshm_headers, checked at configuration time so that "nginx -t"
 * reports every mistake with a sentence.  Nothing here touches a table:
 * directive handlers also run in "nginx -t" and in the "-s reload"
 * signaller; tables are opened by the master (ngx_http_tkshm_tables.c).
 */
#include "ngx_http_tkshm.h"

/* A NUL-terminated copy, for the library's C strings. */
static u_char *
ngx_http_tkshm_pstrdup0(ngx_pool_t *pool, ngx_str_t *s)
{
	u_char *p = ngx_pnalloc(pool, s->len + 1);

	if (p != NULL) {
		ngx_cpystrn(p, s->data, s->len + 1);
	}
	return p;
}

/* The value after "name=" in arg, or NULL when arg is not that option. */
static ngx_str_t *
ngx_http_tkshm_option(ngx_str_t *arg, const char *name, ngx_str_t *value)
{
	size_t n = ngx_strlen(name);

	if (arg->len <= n || ngx_strncmp(arg->data, name, n) != 0 ||
	    arg->data[n] != '=') {
		return NULL;
	}
	value->data = arg->data + n + 1;
	value->len = arg->len - n - 1;
	return value;
}

/* A whole number in [min, max] written in base (10 or 8), nothing else. */
static ngx_int_t
ngx_http_tkshm_uint(ngx_str_t *s, uint64_t base, uint64_t min, uint64_t max,
		    uint64_t *out)
{
	size_t i;
	uint64_t v = 0;

	if (s->len == 0 || s->len > 20) {
		return NGX_ERROR;
	}
	for (i = 0; i < s->len; i++) {
		if (s->data[i] < '0' || s->data[i] >= (u_char)('0' + base)) {
			return NGX_ERROR;
		}
		if (v > (max - (s->data[i] - '0')) / base) {
			return NGX_ERROR;
		}
		v = v * base + (s->data[i] - '0');
	}
	if (v < min) {
		return NGX_ERROR;
	}
	*out = v;
	return NGX_OK;
}

static ngx_int_t
ngx_http_tkshm_name_ok(ngx_str_t *name)
{
	size_t i;

	if (name->len == 0 || name->len > NGX_HTTP_TKSHM_NAME_MAX) {
		return NGX_ERROR;
	}
	for (i = 0; i < name->len; i++) {
		u_char c = name->data[i];

		if (!(isalnum(c) || c == '_' || c == '.' || c == '-')) {
			return NGX_ERROR;
		}
	}
	return NGX_OK;
}

/* The record of table `name`, made by whichever directive names it first
 * (a tkshm_limit may come before its tkshm_table). */
static ngx_http_tkshm_table_t *
ngx_http_tkshm_table_named(ngx_conf_t *cf, ngx_http_tkshm_main_conf_t *mcf,
			   ngx_str_t *name)
{
	ngx_uint_t i;
	ngx_http_tkshm_table_t *t, **tables = mcf->tables.elts, **slot;

	for (i = 0; i < mcf->tables.nelts; i++) {
		if (tables[i]->name.len == name->len &&
		    ngx_strncmp(tables[i]->name.data, name->data, name->len) ==
			    0) {
			return tables[i];
		}
	}
	t = ngx_pcalloc(cf->pool, sizeof(ngx_http_tkshm_table_t));
	slot = ngx_array_push(&mcf->tables);
	if (t == NULL || slot == NULL) {
		return NULL;
	}
	t->name.data = ngx_http_tkshm_pstrdup0(cf->pool, name);
	t->name.len = name->len;
	if (t->name.data == NULL) {
		return NULL;
	}
	*slot = t;
	return t;
}

/* policy=: the library's policy or rate string and its sentence on
 * refusal; a strict table is refused here (see below). */
static char *
ngx_http_tkshm_table_policy(ngx_conf_t *cf, ngx_http_tkshm_table_t *t,
			    ngx_str_t *v)
{
	char why[256];
	u_char *spec;

	spec = ngx_http_tkshm_pstrdup0(cf->pool, v);
	if (spec == NULL) {
		return NGX_CONF_ERROR;
	}
	if (tkshm_policy_parse((char *)spec, &t->policy, why, sizeof(why)) !=
	    TKSHM_OK) {
		ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
				   "tkshm_table %V: invalid policy \"%V\": %s",
				   &t->name, v, why);
		return NGX_CONF_ERROR;
	}
	/* The concurrency kinds have calls of their own (a check of them is
     * refused, TKSHM_ENOTSUP) and hold a permit across the response; the
     * shaper (leakyBucket) is served by a reservation and a delay. */
	if (t->policy.kind == TKSHM_KIND_CONCURRENCY ||
	    t->policy.kind == TKSHM_KIND_ADAPTIVE_CONCURRENCY) {
		ngx_conf_log_error(
			NGX_LOG_EMERG, cf, 0,
			"tkshm_table %V: policy \"%V\" cannot limit "
			"requests (use gcra, tokenBucket, fixedWindow, "
			"slidingWindow, slidingWindowLog, quota, "
			"tokenBudget or leakyBucket, or a rate such as "
			"10/second)",
			&t->name, v);
		return NGX_CONF_ERROR;
	}
	/* A strict table asks Redis on every check: a worker would wait on the
     * network with all its connections stalled. */
	if (t->policy.global.mode == TKSHM_MODE_STRICT) {
		ngx_conf_log_error(
			NGX_LOG_EMERG, cf, 0,
			"tkshm_table %V: strict tables are not supported "
			"by nginx: a strict check waits for Redis, and an "
			"nginx worker must never block; use a lease table "
			"(\";mode=lease\") kept in budget by tkshm-syncd",
			&t->name);
		return NGX_CONF_ERROR;
	}
	t->policy_text.data = spec;
	t->policy_text.len = v->len;
	return NGX_CONF_OK;
}

/* owner=USER or group=NAME: resolved now, as nginx resolves "user", so
 * that nginx -t refuses a name the system does not know. */
static char *
ngx_http_tkshm_table_owner(ngx_conf_t *cf, ngx_http_tkshm_table_t *t,
			   ngx_str_t *arg, ngx_str_t *v)
{
	u_char *name;
	struct group *gr;
	struct passwd *pw;
	ngx_uint_t is_owner = arg->data[0] == 'o';

	name = ngx_http_tkshm_pstrdup0(cf->pool, v);
	if (name == NULL) {
		return NGX_CONF_ERROR;
	}
	if (is_owner) {
		pw = v->len ? getpwnam((char *)name) : NULL;
		t->uid = pw ? (ngx_int_t)pw->pw_uid : -2;
	} else {
		gr = v->len ? getgrnam((char *)name) : NULL;
		t->gid = gr ? (ngx_int_t)gr->gr_gid : -2;
	}
	if ((is_owner ? t->uid : t->gid) == -2) {
		ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
				   "tkshm_table %V: %s=%V: no such %s",
				   &t->name, is_owner ? "owner" : "group", v,
				   is_owner ? "user" : "group");
		return NGX_CONF_ERROR;
	}
	return NGX_CONF_OK;
}

/* One "name=value" argument of tkshm_table after NAME. */
static char *
ngx_http_tkshm_table_option(ngx_conf_t *cf, ngx_http_tkshm_table_t *t,
			    ngx_str_t *arg, ngx_uint_t *have)
{
	uint64_t n;
	ngx_str_t v;

	if (arg->len == 9 && ngx_strncmp(arg->data, "anonymous", 9) == 0) {
		*have |= 1;
		ngx_str_null(&t->path);
		return NGX_CONF_OK;
	}
	if (ngx_http_tkshm_option(arg, "file", &v)) {
		*have |= 1;
		t->path.data = ngx_http_tkshm_pstrdup0(cf->pool, &v);
		t->path.len = v.len;
		return t->path.data ? NGX_CONF_OK : NGX_CONF_ERROR;
	}
	if (ngx_http_tkshm_option(arg, "policy", &v)) {
		*have |= 2;
		return ngx_http_tkshm_table_policy(cf, t, &v);
	}
	if (ngx_http_tkshm_option(arg, "slots", &v)) {
		if (ngx_http_tkshm_uint(&v, 10, 8, TKSHM_MAX_SLOTS,
					&t->slots) != NGX_OK) {
			ngx_conf_log_error(
				NGX_LOG_EMERG, cf, 0,
				"tkshm_table %V: invalid slots \"%V\": a whole "
				"number from 8 to %uL is expected",
				&t->name, &v, TKSHM_MAX_SLOTS);
			return NGX_CONF_ERROR;
		}
		return NGX_CONF_OK;
	}
	if (ngx_http_tkshm_option(arg, "on_full", &v)) {
		if (v.len == 5 && ngx_strncmp(v.data, "evict", 5) == 0) {
			t->on_full = TKSHM_ON_FULL_EVICT;
		} else if (v.len == 6 &&
			   ngx_strncmp(v.data, "refuse", 6) == 0) {
			t->on_full = TKSHM_ON_FULL_REFUSE;
		} else {
			ngx_conf_log_error(
				NGX_LOG_EMERG, cf, 0,
				"tkshm_table %V: invalid on_full \"%V\": "
				"use evict or refuse",
				&t->name, &v);
			return NGX_CONF_ERROR;
		}
		return NGX_CONF_OK;
	}
	if (ngx_http_tkshm_option(arg, "mode", &v)) {
		if (ngx_http_tkshm_uint(&v, 8, 1, 0777, &n) != NGX_OK) {
			ngx_conf_log_error(
				NGX_LOG_EMERG, cf, 0,
				"tkshm_table %V: invalid mode \"%V\": octal "
				"permission bits from 1 to 0777 are expected "
				"(as 0600)",
				&t->name, &v);
			return NGX_CONF_ERROR;
		}
		t->mode = (uint32_t)n;
		return NGX_CONF_OK;
	}
	if (ngx_http_tkshm_option(arg, "owner", &v) ||
	    ngx_http_tkshm_option(arg, "group", &v)) {
		return ngx_http_tkshm_table_owner(cf, t, arg, &v);
	}
	ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
			   "tkshm_table %V: unknown argument \"%V\": expected "
			   "file=PATH or anonymous, policy=POLICY, slots=N, "
			   "on_full=evict|refuse, mode=0600, owner=USER or "
			   "group=NAME",
			   &t->name, arg);
	return NGX_CONF_ERROR;
}

/* tkshm_table NAME file=PATH|anonymous policy=POLICY [slots=N]
 *             [on_full=evict|refuse] [mode=0600] [owner=USER]
 *             [group=NAME] */
char *
ngx_http_tkshm_table_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
	ngx_http_tkshm_main_conf_t *mcf = conf;
	ngx_str_t *value = cf->args->elts;
	ngx_http_tkshm_table_t *t;
	ngx_uint_t i, have = 0;

	(void)cmd;
	if (ngx_http_tkshm_name_ok(&value[1]) != NGX_OK) {
		ngx_conf_log_error(
			NGX_LOG_EMERG, cf, 0,
			"tkshm_table: invalid name \"%V\": 1 to %d letters, "
			"digits, '_', '.' or '-' are expected",
			&value[1], NGX_HTTP_TKSHM_NAME_MAX);
		return NGX_CONF_ERROR;
	}
	t = ngx_http_tkshm_table_named(cf, mcf, &value[1]);
	if (t == NULL) {
		return NGX_CONF_ERROR;
	}
	if (t->line != 0) {
		ngx_conf_log_error(
			NGX_LOG_EMERG, cf, 0,
			"tkshm_table \"%V\" is already declared in %V:%ui",
			&value[1], &t->file, t->line);
		return NGX_CONF_ERROR;
	}
	t->mode = 0600;
	t->uid = -1;
	t->gid = -1;
	t->on_full = TKSHM_ON_FULL_EVICT;
	for (i = 2; i < cf->args->nelts; i++) {
		if (ngx_http_tkshm_table_option(cf, t, &value[i], &have) !=
		    NGX_CONF_OK) {
			return NGX_CONF_ERROR;
		}
	}
	if ((have & 3) != 3) {
		ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
				   "tkshm_table %V: %s is missing", &t->name,
				   (have & 1) ? "policy=POLICY" :
						"file=PATH (or anonymous)");
		return NGX_CONF_ERROR;
	}
	if (t->path.len == 0 && (t->uid != -1 || t->gid != -1)) {
		ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
				   "tkshm_table %V: an anonymous table has no "
				   "file: owner= and group= do not apply",
				   &t->name);
		return NGX_CONF_ERROR;
	}
	t->file = cf->conf_file->file.name;
	t->line = cf->conf_file->line;
	return NGX_CONF_OK;
}

/* key= and cost= of tkshm_limit. */
static char *
ngx_http_tkshm_limit_option(ngx_conf_t *cf, ngx_http_tkshm_limit_t *lim,
			    ngx_str_t *arg)
{
	uint64_t n;
	ngx_str_t v;
	ngx_http_compile_complex_value_t ccv;

	if (ngx_http_tkshm_option(arg, "key", &v)) {
		lim->key =
			ngx_palloc(cf->pool, sizeof(ngx_http_complex_value_t));
		if (lim->key == NULL) {
			return NGX_CONF_ERROR;
		}
		ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));
		ccv.cf = cf;
		ccv.value = &v;
		ccv.complex_value = lim->key;
		/* nginx logs why a key does not compile (unknown variable). */
		return ngx_http_compile_complex_value(&ccv) == NGX_OK ?
			       NGX_CONF_OK :
			       NGX_CONF_ERROR;
	}
	if (ngx_http_tkshm_option(arg, "cost", &v)) {
		if (ngx_http_tkshm_uint(&v, 10, 1, (uint64_t)TKSHM_COST_MAX,
					&n) != NGX_OK) {
			ngx_conf_log_error(
				NGX_LOG_EMERG, cf, 0,
				"tkshm_limit: invalid cost \"%V\": a whole "
				"number of at least 1 is expected",
				&v);
			return NGX_CONF_ERROR;
		}
		lim->cost = (double)n;
		return NGX_CONF_OK;
	}
	if (ngx_http_tkshm_option(arg, "delay", &v)) {
		if (lim->nodelay || lim->delay_free != 0 ||
		    ngx_http_tkshm_uint(&v, 10, 1, (uint64_t)TKSHM_COST_MAX,
					&n) != NGX_OK) {
			ngx_conf_log_error(
				NGX_LOG_EMERG, cf, 0,
				"tkshm_limit: invalid \"%V\": delay= is a "
				"whole number of at least 1, given once and "
				"not with nodelay",
				arg);
			return NGX_CONF_ERROR;
		}
		lim->delay_free = n;
		lim->table->delay_use = 1;
		return NGX_CONF_OK;
	}
	if (arg->len == 7 && ngx_strncmp(arg->data, "nodelay", 7) == 0) {
		if (lim->delay_free != 0) {
			ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
					   "tkshm_limit: nodelay and delay= "
					   "exclude each other");
			return NGX_CONF_ERROR;
		}
		lim->nodelay = 1;
		lim->table->delay_use = 1;
		return NGX_CONF_OK;
	}
	ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
			   "tkshm_limit: unknown argument \"%V\": expected "
			   "key=VALUE, cost=N, delay=N or nodelay",
			   arg);
	return NGX_CONF_ERROR;
}

/* tkshm_limit NAME [key=VALUE] [cost=N] [delay=N|nodelay]: several at one level
 * are decided as one (nothing is consumed unless every limit admits). */
char *
ngx_http_tkshm_limit_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
	ngx_http_tkshm_loc_conf_t *lcf = conf;
	ngx_http_tkshm_main_conf_t *mcf;
	ngx_http_tkshm_limit_t *lim;
	ngx_str_t *value = cf->args->elts;
	ngx_uint_t i;

	(void)cmd;
	if (ngx_http_tkshm_name_ok(&value[1]) != NGX_OK) {
		ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
				   "tkshm_limit: invalid table name \"%V\"",
				   &value[1]);
		return NGX_CONF_ERROR;
	}
	if (lcf->limits == NGX_CONF_UNSET_PTR) {
		lcf->limits = ngx_array_create(cf->pool, 2,
					       sizeof(ngx_http_tkshm_limit_t));
		if (lcf->limits == NULL) {
			return NGX_CONF_ERROR;
		}
	}
	if (lcf->limits->nelts >= TKSHM_MULTI_MAX) {
		ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
				   "tkshm_limit: at most %d limits per level",
				   TKSHM_MULTI_MAX);
		return NGX_CONF_ERROR;
	}
	mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_tkshm_module);
	lim = ngx_array_push(lcf->limits);
	if (lim == NULL) {
		return NGX_CONF_ERROR;
	}
	ngx_memzero(lim, sizeof(ngx_http_tkshm_limit_t));
	lim->cost = 1;
	lim->table = ngx_http_tkshm_table_named(cf, mcf, &value[1]);
	if (lim->table == NULL) {
		return NGX_CONF_ERROR;
	}
	for (i = 2; i < cf->args->nelts; i++) {
		if (ngx_http_tkshm_limit_option(cf, lim, &value[i]) !=
		    NGX_CONF_OK) {
			return NGX_CONF_ERROR;
		}
	}
	if (lim->table->use_line == 0) {
		lim->table->use_file = cf->conf_file->file.name;
		lim->table->use_line = cf->conf_file->line;
	}
	for (i = 0; lcf->limits->nelts > 1 && i < lcf->limits->nelts; i++) {
		((ngx_http_tkshm_limit_t *)lcf->limits->elts)[i]
			.table->multi_use = 1;
	}
	return NGX_CONF_OK;
}

/* tkshm_headers draft|legacy|none: the words of every binding
 * (docs/http-headers.md). */
char *
ngx_http_tkshm_headers_directive(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
	static const char *words[] = { "draft", "legacy", "none" };
	ngx_http_tkshm_loc_conf_t *lcf = conf;
	ngx_str_t *value = cf->args->elts;
	ngx_uint_t i;

	(void)cmd;
	if (lcf->headers != NGX_CONF_UNSET_UINT) {
		return "is duplicate";
	}
	for (i = 0; i < 3; i++) {
		if (value[1].len == ngx_strlen(words[i]) &&
		    ngx_strncmp(value[1].data, words[i], value[1].len) == 0) {
			/* draft, legacy, none are TKSHM_HTTP_DRAFT, _LEGACY, _NONE */
			lcf->headers = i;
			return NGX_CONF_OK;
		}
	}
	ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
			   "tkshm_headers: invalid value \"%V\": use draft, "
			   "legacy or none",
			   &value[1]);
	return NGX_CONF_ERROR;
}

/* What only the whole http{} shows: every table used is declared, and a
 * lease table is the only limit where it is used (a multi check cannot
 * give back budget a lease table spent), and so is a leakyBucket table (a
 * reservation is not a check: it cannot join one all-or-nothing); only a
 * leakyBucket table has a queue for nodelay and delay= to act on. */
ngx_int_t
ngx_http_tkshm_check_tables(ngx_conf_t *cf, ngx_http_tkshm_main_conf_t *mcf)
{
	ngx_uint_t i;
	ngx_http_tkshm_table_t **tables = mcf->tables.elts;

	for (i = 0; i < mcf->tables.nelts; i++) {
		if (tables[i]->line == 0) {
			ngx_log_error(
				NGX_LOG_EMERG, cf->log, 0,
				"tkshm_limit in %V:%ui uses table \"%V\", which no "
				"tkshm_table declares",
				&tables[i]->use_file, tables[i]->use_line,
				&tables[i]->name);
			return NGX_ERROR;
		}
		if (tables[i]->multi_use &&
		    tables[i]->policy.global.mode == TKSHM_MODE_LEASE) {
			ngx_log_error(
				NGX_LOG_EMERG, cf->log, 0,
				"tkshm_table %V (%V:%ui) is a lease table: it must "
				"be the only tkshm_limit of a level",
				&tables[i]->name, &tables[i]->file,
				tables[i]->line);
			return NGX_ERROR;
		}
		if (tables[i]->delay_use &&
		    tables[i]->policy.kind != TKSHM_KIND_LEAKY_BUCKET) {
			ngx_log_error(
				NGX_LOG_EMERG, cf->log, 0,
				"tkshm_table %V (%V:%ui) is not a leakyBucket "
				"table: nodelay and delay= apply to a queue, "
				"and its limit has none",
				&tables[i]->name, &tables[i]->file,
				tables[i]->line);
			return NGX_ERROR;
		}
		if (tables[i]->multi_use &&
		    tables[i]->policy.kind == TKSHM_KIND_LEAKY_BUCKET) {
			ngx_log_error(
				NGX_LOG_EMERG, cf->log, 0,
				"tkshm_table %V (%V:%ui) is a leakyBucket table: it "
				"must be the only tkshm_limit of a level",
				&tables[i]->name, &tables[i]->file,
				tables[i]->line);
			return NGX_ERROR;
		}
	}
	return NGX_OK;
}
