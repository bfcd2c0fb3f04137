/*
 * scenarios.c - building the tables, filling them and running the cases
 * of every scenario (scenarios.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline_mutex.h"
#include "baseline_redis.h"
#include "keys.h"
#include "report.h"
#include "scenarios.h"
#include "thp.h"
#include "tsc.h"

static const char *const sc_impl_name[] = {
	[IMPL_TKSHM] = "tkshm",
	[IMPL_MUTEX] = "mutex",
	[IMPL_REDIS] = "redis-strict",
};

static int
sc_open_tkshm(struct bench *b, uint64_t slots, bool hugepages,
	      tkshm_table **out)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	char err[256] = "";
	int rc;

	o.policy = &b->policy;
	o.slots = slots;
	o.flags = TKSHM_O_CREATE | (hugepages ? TKSHM_O_HUGEPAGES : 0);
	o.errbuf = err;
	o.errbuf_len = sizeof err;
	/* NULL path: an anonymous MAP_SHARED table, inherited by the
	 * workers forked later (the prefork pattern). */
	rc = tkshm_open(NULL, &o, out);
	if (rc != TKSHM_OK) {
		fprintf(stderr, "tkshm_bench_procs: tkshm_open: %s %s\n",
			tkshm_error_name(rc), err);
		return -1;
	}
	return 0;
}

static int
sc_open_mutex(struct bench *b, uint64_t slots, struct mtx_table **out)
{
	char err[256] = "";
	int rc = mtx_create(slots, &b->policy, out, err, sizeof err);

	if (rc != TKSHM_OK) {
		fprintf(stderr, "tkshm_bench_procs: mtx_create: %s %s\n",
			tkshm_error_name(rc), err);
		return -1;
	}
	return 0;
}

/* Inserts every key of the set (one admitted check each, all at one
 * `now`) and returns the seconds it took, or -1 on an error. */
static double
sc_fill(tkshm_table *tk, struct mtx_table *mtx, size_t n)
{
	double now = tkshm_now_ms(), t0 = mono_seconds();
	struct keywalk walk;
	tkshm_decision d;

	if (keys_walk_init(&walk, n, 0) != 0) {
		fprintf(stderr, "tkshm_bench_procs: no key set of %zu keys\n",
			n);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char key[KEYS_MAX_LEN];
		size_t len = keys_walk_next(&walk, key);
		int rc = tk ? tkshm_check_at(tk, key, len, 1, now, &d) :
			      mtx_check_at(mtx, key, len, 1, now, &d);

		if (rc != TKSHM_OK || !d.allowed) {
			fprintf(stderr,
				"tkshm_bench_procs: filling key %.*s: %s%s\n",
				(int)len, key, tkshm_error_name(rc),
				rc == TKSHM_OK ? " (denied)" : "");
			return -1;
		}
	}
	return mono_seconds() - t0;
}

/* Runs one case and reports it.  0 or -1 (printed). */
static int
sc_run(struct bench *b, struct row *w, struct pcase *c)
{
	struct presult r;

	c->ns_per_tick = b->ns_per_tick;
	if (c->seconds <= 0)
		c->seconds = b->seconds;
	if (driver_run(c, &r) != 0) {
		fprintf(stderr,
			"tkshm_bench_procs: %s/%s with %d processes: "
			"%s\n",
			w->scenario, w->impl, c->procs, r.error);
		return -1;
	}
	w->r = &r;
	report_row(stdout, b->json, w);
	w->r = NULL;
	return 0;
}

/* uniform100k and hotkey: both implementations side by side for every N,
 * each on its own warm table (tkshm and mutex alternate so that both see
 * the machine in the same state). */
static int
sc_by_procs(struct bench *b, const char *scenario, size_t keys)
{
	tkshm_table *tk = NULL;
	struct mtx_table *mtx = NULL;
	int rc = -1;

	if (sc_open_tkshm(b, SC_SLOTS, false, &tk) != 0 ||
	    sc_open_mutex(b, SC_SLOTS, &mtx) != 0)
		goto out;
	if (sc_fill(tk, NULL, keys) < 0 || sc_fill(NULL, mtx, keys) < 0)
		goto out;
	for (int i = 0; i < b->nprocs; i++) {
		for (int impl = IMPL_TKSHM; impl <= IMPL_MUTEX; impl++) {
			struct pcase c = { 0 };
			struct row w;

			c.impl = (enum impl)impl;
			c.tk = tk;
			c.mtx = mtx;
			c.procs = b->procs[i];
			c.keys = keys;
			row_init(&w, scenario, sc_impl_name[impl], c.procs,
				 keys);
			if (sc_run(b, &w, &c) != 0)
				goto out;
		}
	}
	rc = 0;
out:
	tkshm_close(tk);
	mtx_destroy(mtx);
	return rc;
}

int
sc_uniform(struct bench *b)
{
	return sc_by_procs(b, "uniform100k", b->uniform_keys);
}

int
sc_hotkey(struct bench *b)
{
	return sc_by_procs(b, "hotkey", 1);
}

/* keys10M's batched case: requests per tkshm_check_many_at. */
#define SC_BATCH 16u

/* One keys10M case: a fresh table, filled, then 2 workers; batch as
 * in struct pcase. */
static int
sc_big_case(struct bench *b, enum impl impl, bool hugepages, unsigned batch,
	    const struct thp_state *thp)
{
	tkshm_table *tk = NULL;
	struct mtx_table *mtx = NULL;
	long before = meminfo_kb("ShmemHugePages"), after;
	struct pcase c = { 0 };
	struct row w;
	int rc = -1;

	row_init(&w, "keys10M", sc_impl_name[impl], 2, b->big_keys);
	w.hugepages = hugepages;
	w.batch = batch;
	w.thp = thp->current[0] ? thp->current : NULL;
	if (impl == IMPL_TKSHM ?
		    sc_open_tkshm(b, b->big_slots, hugepages, &tk) :
		    sc_open_mutex(b, b->big_slots, &mtx))
		goto out;
	w.fill_seconds = sc_fill(tk, mtx, b->big_keys);
	if (w.fill_seconds < 0)
		goto out;
	/* Read while the filled table is mapped: what its pages are. */
	after = meminfo_kb("ShmemHugePages");
	if (before >= 0 && after >= 0)
		w.shmem_huge_kb = after > before ? after - before : 0;
	c.impl = impl;
	c.tk = tk;
	c.mtx = mtx;
	c.procs = 2;
	c.keys = b->big_keys;
	c.batch = batch;
	rc = sc_run(b, &w, &c);
out:
	tkshm_close(tk);
	mtx_destroy(mtx);
	return rc;
}

int
sc_keys10m(struct bench *b)
{
	struct thp_state thp;
	int rc;

	thp_prepare(&thp, b->may_write_thp);
	if (thp.changed)
		printf("# shmem_enabled: '%s' -> '%s' for this scenario\n",
		       thp.original, thp.current);
	rc = sc_big_case(b, IMPL_TKSHM, false, 0, &thp);
	if (rc == 0)
		rc = sc_big_case(b, IMPL_TKSHM, true, 0, &thp);
	/* One check at a time, each check's cache miss follows the last
	 * one's (the locked CAS and the clock's rdtscp keep the CPU from
	 * running ahead); a batch is hashed and prefetched first, so its
	 * misses overlap. */
	if (rc == 0)
		rc = sc_big_case(b, IMPL_TKSHM, true, SC_BATCH, &thp);
	if (rc == 0)
		rc = sc_big_case(b, IMPL_MUTEX, false, 0, &thp);
	thp_restore(&thp);
	return rc;
}

int
sc_sigstop(struct bench *b)
{
	static const enum stop_variant variants[] = { STOP_ANYWHERE,
						      STOP_IN_CS };
	static const char *const variant_name[] = {
		[STOP_ANYWHERE] = "anywhere",
		[STOP_IN_CS] = "in_critical_section",
	};
	tkshm_table *tk = NULL;
	struct mtx_table *mtx = NULL;
	int rc = -1;

	if (sc_open_tkshm(b, SC_SLOTS, false, &tk) != 0 ||
	    sc_open_mutex(b, SC_SLOTS, &mtx) != 0)
		goto out;
	if (sc_fill(tk, NULL, b->uniform_keys) < 0 ||
	    sc_fill(NULL, mtx, b->uniform_keys) < 0)
		goto out;
	for (int impl = IMPL_TKSHM; impl <= IMPL_MUTEX; impl++) {
		for (size_t v = 0; v < 2; v++) {
			struct pcase c = { 0 };
			struct row w;

			c.impl = (enum impl)impl;
			c.tk = tk;
			c.mtx = mtx;
			c.procs = b->stop_procs;
			c.keys = b->uniform_keys;
			c.stop = variants[v];
			c.stop_seconds = b->stop_seconds;
			row_init(&w, "sigstop", sc_impl_name[impl], c.procs,
				 c.keys);
			w.variant = variant_name[variants[v]];
			if (sc_run(b, &w, &c) != 0)
				goto out;
		}
	}
	rc = 0;
out:
	tkshm_close(tk);
	mtx_destroy(mtx);
	return rc;
}

int
sc_redis(struct bench *b)
{
	static const int clients[] = { 1, 2 };
	struct redis_server srv;
	char why[256] = "";
	int rc, started = redis_server_start(&srv, why, sizeof why);

	if (started < 0) {
		fprintf(stderr, "tkshm_bench_procs: redis-server: %s\n", why);
		return -1;
	}
	rc = 0;
	for (size_t i = 0; i < 2 && rc == 0; i++) {
		struct pcase c = { 0 };
		struct row w;

		row_init(&w, "redis", sc_impl_name[IMPL_REDIS], clients[i],
			 b->uniform_keys);
		if (started == 1) {
			w.skipped = why;
			report_row(stdout, b->json, &w);
			continue;
		}
		c.impl = IMPL_REDIS;
		c.redis_port = srv.port;
		c.policy = &b->policy;
		c.procs = clients[i];
		c.keys = b->uniform_keys;
		rc = sc_run(b, &w, &c);
	}
	redis_server_stop(&srv);
	return rc;
}
