/*
 * ngx_http_tkshm_module.c - the module: its directives, the settings of
 * each level and how a level inherits them, the preaccess handler's
 * registration and the $tkshm_status variable.
 *
 * Tables are declared in http{} (tkshm_table) and opened by the master
 * once the configuration is read, before the workers are forked, so every
 * worker shares one mapping; limits (tkshm_limit) name them in http, server or
 * location.
 */
#include "ngx_http_tkshm.h"

static ngx_int_t ngx_http_tkshm_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_tkshm_init(ngx_conf_t *cf);
static void *ngx_http_tkshm_create_main_conf(ngx_conf_t *cf);
static void *ngx_http_tkshm_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_tkshm_merge_loc_conf(ngx_conf_t *cf, void *parent,
					   void *child);

static ngx_conf_enum_t ngx_http_tkshm_log_levels[] = {
	{ ngx_string("info"), NGX_LOG_INFO },
	{ ngx_string("notice"), NGX_LOG_NOTICE },
	{ ngx_string("warn"), NGX_LOG_WARN },
	{ ngx_string("error"), NGX_LOG_ERR },
	{ ngx_null_string, 0 }
};

/* The statuses a denial may answer with, as limit_req_status allows. */
static ngx_conf_num_bounds_t ngx_http_tkshm_status_bounds = {
	ngx_conf_check_num_bounds, 400, 599
};

static ngx_command_t ngx_http_tkshm_commands[] = {

	{ ngx_string("tkshm_table"), NGX_HTTP_MAIN_CONF | NGX_CONF_2MORE,
	  ngx_http_tkshm_table_directive, NGX_HTTP_MAIN_CONF_OFFSET, 0, NULL },

	{ ngx_string("tkshm_limit"),
	  NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF |
		  NGX_CONF_1MORE,
	  ngx_http_tkshm_limit_directive, NGX_HTTP_LOC_CONF_OFFSET, 0, NULL },

	{ ngx_string("tkshm_status"),
	  NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF |
		  NGX_CONF_TAKE1,
	  ngx_conf_set_num_slot, NGX_HTTP_LOC_CONF_OFFSET,
	  offsetof(ngx_http_tkshm_loc_conf_t, status),
	  &ngx_http_tkshm_status_bounds },

	{ ngx_string("tkshm_log_level"),
	  NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF |
		  NGX_CONF_TAKE1,
	  ngx_conf_set_enum_slot, NGX_HTTP_LOC_CONF_OFFSET,
	  offsetof(ngx_http_tkshm_loc_conf_t, log_level),
	  &ngx_http_tkshm_log_levels },

	{ ngx_string("tkshm_dry_run"),
	  NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF |
		  NGX_CONF_FLAG,
	  ngx_conf_set_flag_slot, NGX_HTTP_LOC_CONF_OFFSET,
	  offsetof(ngx_http_tkshm_loc_conf_t, dry_run), NULL },

	{ ngx_string("tkshm_headers"),
	  NGX_HTTP_MAIN_CONF | NGX_HTTP_SRV_CONF | NGX_HTTP_LOC_CONF |
		  NGX_CONF_TAKE1,
	  ngx_http_tkshm_headers_directive, NGX_HTTP_LOC_CONF_OFFSET, 0, NULL },

	{ ngx_string("tkshm_status_page"), NGX_HTTP_LOC_CONF | NGX_CONF_NOARGS,
	  ngx_http_tkshm_status_page_directive, 0, 0, NULL },

	ngx_null_command
};

static ngx_http_module_t ngx_http_tkshm_module_ctx = {
	ngx_http_tkshm_add_variables, /* preconfiguration */
	ngx_http_tkshm_init,	      /* postconfiguration */

	ngx_http_tkshm_create_main_conf, /* create main configuration */
	NULL,				 /* init main configuration */

	NULL, /* create server configuration */
	NULL, /* merge server configuration */

	ngx_http_tkshm_create_loc_conf, /* create location configuration */
	ngx_http_tkshm_merge_loc_conf	/* merge location configuration */
};

ngx_module_t ngx_http_tkshm_module = {
	NGX_MODULE_V1,
	&ngx_http_tkshm_module_ctx, /* module context */
	ngx_http_tkshm_commands,    /* module directives */
	NGX_HTTP_MODULE,	    /* module type */
	NULL,			    /* init master */
	NULL,			    /* init module */
	NULL,			    /* init process */
	NULL,			    /* init thread */
	NULL,			    /* exit thread */
#if (NGX_HTTP_TKSHM_TIMING)
	ngx_http_tkshm_timing_report, /* exit process */
#else
	NULL, /* exit process */
#endif
	NULL, /* exit master */
	NGX_MODULE_V1_PADDING
};

static ngx_str_t ngx_http_tkshm_outcomes[] = {
	ngx_null_string, ngx_string("ALLOWED"), ngx_string("DENIED"),
	ngx_string("DENIED_DRY_RUN"), ngx_string("ERROR")
};

/* $tkshm_status: what the request's check decided (empty: not checked),
 * for log_format, as $limit_req_status is for limit_req. */
static ngx_int_t
ngx_http_tkshm_status_variable(ngx_http_request_t *r,
			       ngx_http_variable_value_t *v, uintptr_t data)
{
	ngx_http_tkshm_outcome_e o;

	(void)data;
	o = ngx_http_tkshm_outcome(r);
	if (o == NGX_HTTP_TKSHM_NONE) {
		v->not_found = 1;
		return NGX_OK;
	}
	v->len = ngx_http_tkshm_outcomes[o].len;
	v->valid = 1;
	v->no_cacheable = 0;
	v->not_found = 0;
	v->data = ngx_http_tkshm_outcomes[o].data;
	return NGX_OK;
}

static ngx_int_t
ngx_http_tkshm_add_variables(ngx_conf_t *cf)
{
	static ngx_str_t name = ngx_string("tkshm_status");
	ngx_http_variable_t *var;

	var = ngx_http_add_variable(cf, &name, NGX_HTTP_VAR_NOCACHEABLE);
	if (var == NULL) {
		return NGX_ERROR;
	}
	var->get_handler = ngx_http_tkshm_status_variable;
	return NGX_OK;
}

static void *
ngx_http_tkshm_create_main_conf(ngx_conf_t *cf)
{
	ngx_http_tkshm_main_conf_t *mcf;

	mcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_tkshm_main_conf_t));
	if (mcf == NULL) {
		return NULL;
	}
	if (ngx_array_init(&mcf->tables, cf->pool, 4,
			   sizeof(ngx_http_tkshm_table_t *)) != NGX_OK) {
		return NULL;
	}
	return mcf;
}

static void *
ngx_http_tkshm_create_loc_conf(ngx_conf_t *cf)
{
	ngx_http_tkshm_loc_conf_t *conf;

	conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_tkshm_loc_conf_t));
	if (conf == NULL) {
		return NULL;
	}
	conf->limits = NGX_CONF_UNSET_PTR;
	conf->status = NGX_CONF_UNSET_UINT;
	conf->log_level = NGX_CONF_UNSET_UINT;
	conf->dry_run = NGX_CONF_UNSET;
	conf->headers = NGX_CONF_UNSET_UINT;
	return conf;
}

/* Limits are inherited only by a level that has none, as limit_req's. */
static char *
ngx_http_tkshm_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
	ngx_http_tkshm_loc_conf_t *prev = parent;
	ngx_http_tkshm_loc_conf_t *conf = child;

	(void)cf;
	ngx_conf_merge_ptr_value(conf->limits, prev->limits, NULL);
	ngx_conf_merge_uint_value(conf->status, prev->status,
				  NGX_HTTP_TOO_MANY_REQUESTS);
	ngx_conf_merge_uint_value(conf->log_level, prev->log_level,
				  NGX_LOG_ERR);
	ngx_conf_merge_value(conf->dry_run, prev->dry_run, 0);
	ngx_conf_merge_uint_value(conf->headers, prev->headers,
				  TKSHM_HTTP_DRAFT);
	return NGX_CONF_OK;
}

/* After the whole http{} is read: every table used is declared, the
 * tables get their opening hook (ngx_http_tkshm_tables.c), and the handler
 * joins the preaccess phase, where limit_req runs too. */
static ngx_int_t
ngx_http_tkshm_init(ngx_conf_t *cf)
{
	ngx_http_handler_pt *h;
	ngx_http_core_main_conf_t *cmcf;
	ngx_http_tkshm_main_conf_t *mcf;

	mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_tkshm_module);
	if (ngx_http_tkshm_check_tables(cf, mcf) != NGX_OK) {
		return NGX_ERROR;
	}
	if (mcf->tables.nelts == 0) {
		return NGX_OK;
	}
	if (ngx_http_tkshm_open_tables(cf, mcf) != NGX_OK) {
		return NGX_ERROR;
	}

	cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
	h = ngx_array_push(&cmcf->phases[NGX_HTTP_PREACCESS_PHASE].handlers);
	if (h == NULL) {
		return NGX_ERROR;
	}
#if (NGX_HTTP_TKSHM_TIMING)
	*h = ngx_http_tkshm_timed_handler;
#else
	*h = ngx_http_tkshm_handler;
#endif
	return NGX_OK;
}
