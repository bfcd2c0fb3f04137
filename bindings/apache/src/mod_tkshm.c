/*
 * mod_tkshm.c - the module: its hooks and the symbol httpd loads.
 *
 *   LoadModule tkshm_module modules/mod_tkshm.so
 *   TkshmTable api /dev/shm/api gcra:limit=20,periodMs=1000,burst=10
 *   <Location /api>
 *       TkshmLimit api
 *   </Location>
 *
 * Directives: config.c; tables: tables.c; strict tables' Redis: redis.c;
 * the check: limit.c; the tkshm-status handler: status.c.
 */
#include "mod_tkshm.h"

#include "http_request.h"

/* What needs the whole configuration is checked when it is read, so that
 * `apachectl configtest` reports it too, and configtest says what a start
 * would do to each table (httpd -t never runs post_config). */
static int
tkap_check_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
		  server_rec *s)
{
	int rc = tkap_tables_check(pconf, s);

	(void)plog;
	return rc == OK ? tkap_tables_plan(ptemp, s) : rc;
}

/* The tables are opened in the parent, once the whole configuration is
 * read and before the children are forked: they inherit the mapping. */
static int
tkap_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp,
		 server_rec *s)
{
	(void)plog;
	(void)ptemp;
	return tkap_tables_open(pconf, s);
}

static void
tkap_register_hooks(apr_pool_t *p)
{
	(void)p;
	ap_hook_check_config(tkap_check_config, NULL, NULL, APR_HOOK_MIDDLE);
	ap_hook_post_config(tkap_post_config, NULL, NULL, APR_HOOK_MIDDLE);
	ap_hook_pre_mpm(tkap_tables_forking, NULL, NULL, APR_HOOK_MIDDLE);
	/* header_parser: the request's per-directory configuration is known,
	 * and it runs before access control and authentication, always (an
	 * access checker is skipped under "Satisfy Any").  Last among
	 * header parsers, so that a key expression sees what mod_setenvif
	 * set; mod_remoteip has set the client address before. */
	ap_hook_header_parser(tkap_limit_request, NULL, NULL, APR_HOOK_LAST);
	ap_hook_handler(tkap_status_handler, NULL, NULL, APR_HOOK_MIDDLE);
}

AP_DECLARE_MODULE(tkshm) = {
	STANDARD20_MODULE_STUFF,
	tkap_dir_conf_create,
	tkap_dir_conf_merge,
	NULL, /* no server configuration of its own */
	NULL,
	tkap_commands,
	tkap_register_hooks,
	AP_MODULE_FLAG_NONE,
};
