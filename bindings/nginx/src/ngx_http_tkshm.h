/*
 * ngx_http_tkshm.h - the records shared by the files of
 * ngx_http_tkshm_module: tables declared by tkshm_table (http{}), limits
 * of a location (tkshm_limit), and the settings of a location.
 *
 * Files: ngx_http_tkshm_module.c (the module, its contexts and variable),
 * ngx_http_tkshm_directive.c (directive arguments), ngx_http_tkshm_tables.c
 * (opening tables in the master), ngx_http_tkshm_handler.c (the request),
 * ngx_http_tkshm_status.c (tkshm_status_page), ngx_http_tkshm_timing.c (the
 * handler timed, in benchmark builds).
 */
#ifndef NGX_HTTP_TKSHM_H_INCLUDED
#define NGX_HTTP_TKSHM_H_INCLUDED

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <tkshm.h>
#include <tkshm_http.h>

/* Table names are also RateLimit policy names and appear in logs. */
#define NGX_HTTP_TKSHM_NAME_MAX 64

typedef struct {
	ngx_str_t name; /* NUL-terminated */
	ngx_str_t path; /* NUL-terminated; empty: anonymous */
	tkshm_policy policy;
	ngx_str_t policy_text;
	uint64_t slots; /* 0: the library's default */
	uint32_t mode;
	/* owner= and group=: who a file the root master makes is given to
     * (-1: the workers' user and group). */
	ngx_int_t uid;
	ngx_int_t gid;
	tkshm_on_full on_full;
	/* Where tkshm_table declared it (line 0: not declared, only used),
     * and where a tkshm_limit first used it. */
	ngx_str_t file;
	ngx_uint_t line;
	ngx_str_t use_file;
	ngx_uint_t use_line;
	ngx_uint_t multi_use; /* used in a location with others */
	ngx_uint_t delay_use; /* used with nodelay or delay= */
	/* The master's handle, opened once http{} is read; workers inherit the
     * mapping by fork. */
	tkshm_table *handle;
} ngx_http_tkshm_table_t;

typedef struct {
	ngx_array_t tables; /* ngx_http_tkshm_table_t * */
	ngx_cycle_t *cycle; /* the cycle they are opened for */
} ngx_http_tkshm_main_conf_t;

typedef struct {
	ngx_http_tkshm_table_t *table;
	ngx_http_complex_value_t *key; /* NULL: the client's address */
	double cost;
	ngx_uint_t nodelay; /* leakyBucket: admit at once */
	/* leakyBucket: this many units of a burst go at once, the rest wait
     * for their departure less these units' time (limit_req's delay=). */
	uint64_t delay_free;
} ngx_http_tkshm_limit_t;

typedef struct {
	ngx_array_t *limits; /* ngx_http_tkshm_limit_t */
	ngx_uint_t status;
	ngx_uint_t log_level;
	ngx_flag_t dry_run;
	ngx_uint_t headers; /* tkshm_http_style */
} ngx_http_tkshm_loc_conf_t;

/* What the request's check decided, for $tkshm_status. */
typedef enum {
	NGX_HTTP_TKSHM_NONE = 0,
	NGX_HTTP_TKSHM_ALLOWED,
	NGX_HTTP_TKSHM_DENIED,
	NGX_HTTP_TKSHM_DRY_RUN,
	NGX_HTTP_TKSHM_ERROR
} ngx_http_tkshm_outcome_e;

extern ngx_module_t ngx_http_tkshm_module;

/* ngx_http_tkshm_directive.c */
char *ngx_http_tkshm_table_directive(ngx_conf_t *cf, ngx_command_t *cmd,
				     void *conf);
char *ngx_http_tkshm_limit_directive(ngx_conf_t *cf, ngx_command_t *cmd,
				     void *conf);
char *ngx_http_tkshm_headers_directive(ngx_conf_t *cf, ngx_command_t *cmd,
				       void *conf);
ngx_int_t ngx_http_tkshm_check_tables(ngx_conf_t *cf,
				      ngx_http_tkshm_main_conf_t *mcf);

/* ngx_http_tkshm_prom.c: "?prometheus", into a buffer of at least
 * ngx_http_tkshm_prom_size(n) bytes; NULL when out of memory. */
size_t ngx_http_tkshm_prom_size(ngx_uint_t ntables);
u_char *ngx_http_tkshm_status_prometheus(ngx_http_request_t *r, u_char *p,
					 ngx_http_tkshm_table_t **tables,
					 ngx_uint_t n);

/* ngx_http_tkshm_status.c */
char *ngx_http_tkshm_status_page_directive(ngx_conf_t *cf, ngx_command_t *cmd,
					   void *conf);

/* ngx_http_tkshm_tables.c */
ngx_int_t ngx_http_tkshm_open_tables(ngx_conf_t *cf,
				     ngx_http_tkshm_main_conf_t *mcf);

/* ngx_http_tkshm_handler.c */
ngx_int_t ngx_http_tkshm_handler(ngx_http_request_t *r);
ngx_http_tkshm_outcome_e ngx_http_tkshm_outcome(ngx_http_request_t *r);

#if (NGX_HTTP_TKSHM_TIMING)
/* ngx_http_tkshm_timing.c (benchmark builds only) */
ngx_int_t ngx_http_tkshm_timed_handler(ngx_http_request_t *r);
void ngx_http_tkshm_timing_report(ngx_cycle_t *cycle);
#endif

#endif /* NGX_HTTP_TKSHM_H_INCLUDED */
