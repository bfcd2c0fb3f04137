/*
 * hook_bench.c - the CPU time of mod_tkshm's request hook, outside httpd.
 *
 * Through a whole server, a few hundred nanoseconds in a request of tens
 * of microseconds drown in what the machine's other work does to wrk and
 * httpd.  Here the module's own tkap_limit_request() (limit.c, compiled
 * in as is) runs on requests shaped as httpd gives them (a pool, the notes
 * and error-headers tables, the client's address, the section's merged
 * configuration), all admitted, so that what the hook adds to a request is
 * measured by itself:
 *
 *   hot   one client address, one key: the check, the RateLimit headers;
 *   ips   100,000 client addresses (one key each) in a 262,144-slot table;
 *   v6    100,000 IPv6 clients, keyed by their /64.
 *
 *   tkshm_bench_apache_hook [--quick]
 *
 * Prints one JSON line per case: the median over 5 runs of the CPU time
 * (CLOCK_PROCESS_CPUTIME_ID) per call, in ns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mod_tkshm.h"

#include "http_log.h"
#include "apr_pools.h"
#include "apr_strings.h"

/* limit.c's module symbol; the hook reads only its index. */
module AP_MODULE_DECLARE_DATA tkshm_module = {
	STANDARD20_MODULE_STUFF, NULL, NULL, NULL, NULL, NULL, NULL,
	AP_MODULE_FLAG_NONE,
};

/* httpd's functions that limit.c calls on paths this benchmark does not
 * take (a key expression, a failed check, a denial): reaching one means
 * the measurement is not what it says. */
void
ap_log_rerror_(const char *file, int line, int module_index, int level,
	       apr_status_t status, const request_rec *r, const char *fmt, ...)
{
	(void)line;
	(void)module_index;
	(void)level;
	(void)status;
	(void)r;
	fprintf(stderr,
		"hook_bench: the hook logged (%s: %s): not the "
		"admitted path\n",
		file, fmt);
	exit(1);
}

const char *
ap_expr_str_exec(request_rec *r, const ap_expr_info_t *expr, const char **err)
{
	(void)r;
	(void)expr;
	(void)err;
	fprintf(stderr, "hook_bench: a key expression was evaluated\n");
	exit(1);
}

#define CLIENTS 100000
#define RUNS	5

static double
cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A section with one TkshmLimit on a new anonymous table of `slots`,
 * keyed by the client's address. */
static tkap_dir_conf *
section(apr_pool_t *p, const char *name, uint64_t slots)
{
	/* zeros: every setting at its default (limit.c) */
	tkap_dir_conf *c = apr_pcalloc(p, sizeof(*c));
	tkap_table *t = apr_pcalloc(p, sizeof(*t));
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkap_limit *lim;

	t->name = name;
	/* admits everything wrk could send (the finest rate the parser
	 * accepts, 64,000/s, with a burst of 1e9) */
	tkshm_policy_gcra(&t->policy, 64000, 1000, 1e9);
	o.policy = &t->policy;
	o.slots = slots;
	if (tkshm_open(NULL, &o, &t->handle) != TKSHM_OK) {
		fprintf(stderr, "hook_bench: cannot open a table\n");
		exit(1);
	}
	c->limits = apr_array_make(p, 1, sizeof(tkap_limit));
	lim = apr_array_push(c->limits);
	lim->table = t;
	lim->key = NULL;
	lim->cost = 1;
	return c;
}

/* ns of CPU per hook call over `calls` requests from clients[i % n]. */
static double
run(tkap_dir_conf *c, char **clients, size_t n, long calls)
{
	void *per_dir[1] = { c };
	apr_pool_t *pool;
	request_rec r;
	double t0;

	apr_pool_create(&pool, NULL);
	t0 = cpu_ns();
	for (long i = 0; i < calls; i++) {
		/* a request of its own, as httpd makes one per request */
		if (i % 1024 == 0)
			apr_pool_clear(pool);
		memset(&r, 0, sizeof(r));
		r.pool = pool;
		r.per_dir_config = (ap_conf_vector_t *)per_dir;
		r.notes = apr_table_make(pool, 4);
		r.err_headers_out = apr_table_make(pool, 4);
		r.useragent_ip = clients[(size_t)i % n];
		if (tkap_limit_request(&r) != DECLINED ||
		    (i == 0 &&
		     !apr_table_get(r.err_headers_out, "RateLimit"))) {
			fprintf(stderr, "hook_bench: a request was not "
					"admitted with its headers\n");
			exit(1);
		}
	}
	t0 = cpu_ns() - t0;
	apr_pool_destroy(pool);
	return t0 / calls;
}

/* The same request without the hook: what building it costs, taken off
 * the hook's figure. */
static double
run_empty(long calls)
{
	apr_pool_t *pool;
	request_rec r;
	double t0;

	apr_pool_create(&pool, NULL);
	t0 = cpu_ns();
	for (long i = 0; i < calls; i++) {
		if (i % 1024 == 0)
			apr_pool_clear(pool);
		memset(&r, 0, sizeof(r));
		r.pool = pool;
		r.notes = apr_table_make(pool, 4);
		r.err_headers_out = apr_table_make(pool, 4);
		__asm__ volatile("" : : "r"(&r) : "memory");
	}
	t0 = cpu_ns() - t0;
	apr_pool_destroy(pool);
	return t0 / calls;
}

static double
median_ns(tkap_dir_conf *c, char **clients, size_t n, long calls)
{
	double v[RUNS];

	run(c, clients, n, calls); /* warm: every key inserted */
	for (int k = 0; k < RUNS; k++)
		v[k] = run(c, clients, n, calls) - run_empty(calls);
	qsort(v, RUNS, sizeof(v[0]), cmp_double);
	return v[RUNS / 2];
}

int
main(int argc, char **argv)
{
	long calls =
		argc > 1 && strcmp(argv[1], "--quick") == 0 ? 200000 : 2000000;
	apr_pool_t *p;
	char **v4, **v6, *hot[1] = { "127.0.0.1" };
	struct {
		const char *name;
		char **clients;
		size_t n;
		uint64_t slots;
	} cases[3];

	apr_initialize();
	apr_pool_create(&p, NULL);
	tkshm_module.module_index = 0;
	v4 = apr_palloc(p, CLIENTS * sizeof(char *));
	v6 = apr_palloc(p, CLIENTS * sizeof(char *));
	for (int i = 0; i < CLIENTS; i++) {
		v4[i] = apr_psprintf(p, "10.%d.%d.%d", i >> 16, (i >> 8) & 255,
				     i & 255);
		/* a new /64 each, and a host part that the key drops */
		v6[i] = apr_psprintf(p, "2001:db8:%x:%x::%x", i >> 16,
				     i & 0xffff, (i * 7) & 0xffff);
	}
	cases[0].name = "hot";
	cases[0].clients = hot;
	cases[0].n = 1;
	cases[0].slots = 1024;
	cases[1].name = "ips";
	cases[1].clients = v4;
	cases[1].n = CLIENTS;
	cases[1].slots = 262144;
	cases[2].name = "v6";
	cases[2].clients = v6;
	cases[2].n = CLIENTS;
	cases[2].slots = 262144;
	for (int i = 0; i < 3; i++) {
		tkap_dir_conf *c = section(p, cases[i].name, cases[i].slots);
		double ns = median_ns(c, cases[i].clients, cases[i].n, calls);
		tkap_limit *lim = (tkap_limit *)c->limits->elts;

		tkshm_close(lim->table->handle);

		printf("{\"suite\": \"apache\", \"record\": \"hook\", "
		       "\"case\": \"%s\", \"clients\": %zu, \"calls\": %ld, "
		       "\"runs\": %d, \"ns_per_request\": %.1f}\n",
		       cases[i].name, cases[i].n, calls, RUNS, ns);
	}
	apr_terminate();
	return 0;
}
