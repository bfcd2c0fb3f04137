/*
 * soak_worker.c - one soak worker: attaches both tables by path (so that
 * every replacement of a killed worker attaches a table under load) and
 * checks random keys until told to stop or killed.
 *
 * A quarter of the checks go to SOAK_HOT_KEYS hot keys (always in debt:
 * their admissions are the ones the supervisor bounds), the rest to
 * sh->cold_keys cold keys, several times the slot count, so the table is
 * full all the time: inserts reclaim idle slots and evict live keys.
 *
 * Each call reads the epoch, then CLOCK_REALTIME, and checks at their sum;
 * after the call it reads the clock and the epoch again, which gives the
 * call's latency (how far its `now` may lag the others') and whether the
 * clock jumped while it ran.  For an admission of a hot key the span of
 * admitted nows and the allowance are recorded before the count, so a
 * worker killed in between can only loosen the bound, never tighten it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "mp_util.h"
#include "soak.h"

static void __attribute__((noreturn, format(printf, 2, 3)))
worker_fail(struct soak_shared *sh, const char *fmt, ...)
{
	if (__atomic_exchange_n(&sh->failed, 1, __ATOMIC_ACQ_REL) == 0) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(sh->fail_msg, sizeof sh->fail_msg, fmt, ap);
		va_end(ap);
	}
	_exit(3);
}

static tkshm_table *
attach(struct soak_shared *sh, const char *path)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	char err[256] = "";
	tkshm_table *t = NULL;
	int rc;

	o.flags = 0; /* attach only: the supervisor created it */
	o.errbuf = err;
	o.errbuf_len = sizeof err;
	rc = tkshm_open(path, &o, &t);
	if (rc != TKSHM_OK)
		worker_fail(sh, "attach %s: %s (%s)", path,
			    tkshm_error_name(rc), err);
	return t;
}

/* Records an admitted check of hot key k made at `now` in epoch e; `lat`
 * is the call's latency (from its clock read to its return) and `after`
 * the epoch read after it returned.  A restart made across jumps also
 * counts as a foreign restart in every later epoch up to `after`: its
 * fresh state may have replaced a TAT that those epochs' admissions set
 * (soak_bound.c). */
static void
record_hot(struct soak_shared *sh, int k, uint32_t e, uint32_t after,
	   double now, const tkshm_decision *d, double lat)
{
	struct soak_obs *o = &sh->obs[k][e];
	uint64_t us = (uint64_t)ceil(lat * 1000) + 1;

	mp_atomic_min_pos(&o->min_now, now);
	mp_atomic_max_pos(&o->max_now, now);
	/* From an absent state (the TAT at or before now).  A key restored
	 * from remembered debt is not one: it starts from at least the TAT it
	 * was evicted with (protocol.h I8), which the bound holds it to. */
	if (d->remaining == (int64_t)SOAK_BURST - 1 &&
	    !(d->flags & TKSHM_DECISION_DEBT_RESTORED)) {
		for (uint32_t f = e + 1; f <= after; f++) {
			struct soak_obs *n = &sh->obs[k][f];

			__atomic_fetch_add(&n->stale_us, us, __ATOMIC_RELAXED);
			__atomic_fetch_add(&n->foreign, 1, __ATOMIC_RELAXED);
		}
		__atomic_fetch_add(&o->stale_us, us, __ATOMIC_RELAXED);
		__atomic_fetch_add(&o->restarts, 1, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&o->count, 1, __ATOMIC_RELAXED);
}

void
soak_worker(struct soak_shared *sh, int pos)
{
	struct soak_cell *c = &sh->cell[pos];
	uint64_t rng = sh->seed ^ (uint64_t)getpid() << 24 ^ (uint64_t)pos;
	tkshm_table *t, *wide;
	uint64_t n = 0;

	/* Never outlive the supervisor. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
		_exit(2);
	t = attach(sh, sh->path);
	wide = attach(sh, sh->wide_path);

	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		uint32_t e = __atomic_load_n(&sh->epoch, __ATOMIC_ACQUIRE);
		double off = sh->offset_ms[e];
		bool hot = mp_rand_below(&rng, 4) == 0;
		uint64_t id = hot ? mp_rand_below(&rng, SOAK_HOT_KEYS) :
				    mp_rand_below(&rng, sh->cold_keys);
		char key[48];
		int len =
			snprintf(key, sizeof key, "%s-%llu",
				 hot ? "hot" : "cold", (unsigned long long)id);
		double real = tkshm_now_ms(), now = real + off, lat;
		tkshm_decision d;
		int rc = tkshm_check_at(t, key, (size_t)len, 1, now, &d);
		uint32_t after;

		lat = tkshm_now_ms() - real;
		after = __atomic_load_n(&sh->epoch, __ATOMIC_ACQUIRE);
		mp_atomic_max_pos(&c->max_lat_bits, lat > 0 ? lat : 0);
		if (after != e)
			__atomic_fetch_add(&c->straddles, 1, __ATOMIC_RELAXED);
		if (rc == TKSHM_EBUSY) {
			__atomic_fetch_add(&c->busy, 1, __ATOMIC_RELAXED);
		} else if (rc != TKSHM_OK) {
			worker_fail(sh, "check %s at %.3f: %s", key, now,
				    tkshm_error_name(rc));
		} else if (d.allowed) {
			if (hot)
				record_hot(sh, (int)id, e, after, now, &d, lat);
			__atomic_fetch_add(&c->admitted, 1, __ATOMIC_RELAXED);
		} else {
			__atomic_fetch_add(&c->denied, 1, __ATOMIC_RELAXED);
		}
		__atomic_fetch_add(&c->checks, 1, __ATOMIC_RELAXED);

		if (++n % SOAK_WIDE_EVERY != 0)
			continue;
		rc = tkshm_check_at(wide, key, (size_t)len, 1, now, &d);
		if (rc == TKSHM_EFULL)
			__atomic_fetch_add(&c->wide_full, 1, __ATOMIC_RELAXED);
		else if (rc == TKSHM_EBUSY)
			__atomic_fetch_add(&c->wide_busy, 1, __ATOMIC_RELAXED);
		else if (rc != TKSHM_OK)
			worker_fail(sh, "wide check %s at %.3f: %s", key, now,
				    tkshm_error_name(rc));
		else if (d.allowed)
			__atomic_fetch_add(&c->wide_admitted, 1,
					   __ATOMIC_RELAXED);
		__atomic_fetch_add(&c->wide_checks, 1, __ATOMIC_RELAXED);
	}
	tkshm_close(wide);
	tkshm_close(t);
	_exit(0);
}
