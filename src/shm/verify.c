/*
 * verify.c - checking the protocol's invariants on a live table, and the
 * occupancy scan.  Both only read, so they work on read-only mappings.
 *
 * What is checked (protocol.h):
 *   header  the shared header still validates and still says what this
 *           handle attached to (I10);
 *   I3      every key sits in its own window;
 *   I2      no key sits behind an EMPTY slot of its bucket;
 *   I4      EMPTY slots are {0,0}; every REAL state is valid;
 *   I5      no key has two REAL slots at one instant;
 *   I9      every debt cell is 0 or a valid state (wide tables: 0, W9);
 *   W5, W7  wide tables: every REAL control word's active record is
 *           consistent and valid, and no unit is beyond its claims;
 *   P1, P2  pair tables: every REAL slot's pair decodes to a valid state
 *           or to absent, and no slot that holds no key has a state.
 * A report made while others write is still real: I2 cannot be seen broken
 * transiently (EMPTY never comes back), and a suspected I5 violation is
 * confirmed by re-reading both slots, which shows them REAL together.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/atomic.h"
#include "shm/pair.h"
#include "shm/protocol.h"
#include "shm/table.h"
#include "shm/wide.h"

struct tk_report {
	tkshm_problem_fn fn;
	void *ctx;
	uint64_t n;
};

static void
tk_problem(struct tk_report *r, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	r->n++;
	if (!r->fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	r->fn(r->ctx, msg);
}

/* P2: under a slot that holds no key (EMPTY, DEAD, PLACEHOLDER), a pair
 * table's pair is absent or sealed, never a state.  Read under the slot
 * (P1): a slot that moved meanwhile is no finding. */
static void
tk_verify_no_pair_state(const struct tkshm_table *t, uint64_t i, uint64_t fp,
			uint64_t st, struct tk_report *r)
{
	uint64_t x[2], tag;
	struct tk_pair p;

	if (!t->pairs || !tk_pair_read_under(t, i, fp, st, &p))
		return;
	if (tk_pair_decode(t, 0, p, x, &tag) == TK_PAIR_OPEN)
		tk_problem(r,
			   "slot %llu: a state in the pair of a slot that "
			   "holds no key (P2)",
			   (unsigned long long)i);
}

int
tk_window_pos(const struct tkshm_table *t, uint64_t fp, uint64_t index)
{
	struct tk_where w;

	tk_where_of(t, fp, &w);
	for (unsigned i = 0; i < TK_WINDOW; i++)
		if (tk_window_index(&w, i) == index)
			return (int)i;
	return -1;
}

static void
tk_verify_header(const struct tkshm_table *t, struct tk_report *r)
{
	struct tk_header h;

	/* A plain copy: the header is immutable after publication (I10), so a
	 * byte that changed is itself the problem being looked for. */
	memcpy(&h, t->base, sizeof h);
	if (memcmp(h.magic, TK_MAGIC, TK_MAGIC_LEN) != 0)
		tk_problem(r, "header: magic was overwritten");
	if (XXH64(&h, offsetof(struct tk_header, checksum), 0) != h.checksum)
		tk_problem(r, "header: checksum no longer matches (I10)");
	if (h.nbuckets != t->nbuckets || h.ndebt != t->ndebt ||
	    h.file_size != t->map_size || h.seed != t->seed)
		tk_problem(r, "header: geometry or seed changed since attach "
			      "(I10)");
}

/* One REAL slot, remembered for the duplicate check. */
struct tk_real {
	uint64_t fp, index, st;
};

static int
tk_real_cmp(const void *a, const void *b)
{
	const struct tk_real *x = a, *y = b;

	if (x->fp != y->fp)
		return x->fp < y->fp ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

int
tk_api_verify(tkshm_table *t, tkshm_problem_fn fn, void *ctx,
	      uint64_t *problems)
{
	struct tk_report r = { fn, ctx, 0 };
	uint64_t nslots, nreal = 0;
	struct tk_real *reals;

	if (!t)
		return TKSHM_ENULL;
	nslots = t->nbuckets * TK_SLOTS_PER_BUCKET;
	tk_verify_header(t, &r);
	reals = malloc(sizeof *reals * (size_t)nslots);
	if (!reals)
		return TKSHM_ENOMEM;

	for (uint64_t i = 0; i < nslots; i++) {
		uint64_t fp, st;
		int pos;

		tk_slot_read(tk_slot_at(t, i), &fp, &st);
		if (fp == 0 || tk_st_is_special(st))
			tk_verify_no_pair_state(t, i, fp, st, &r);
		if (fp == 0) {
			if (st != 0)
				tk_problem(&r,
					   "slot %llu: EMPTY fingerprint with "
					   "state %#llx (I4)",
					   (unsigned long long)i,
					   (unsigned long long)st);
			continue;
		}
		pos = tk_window_pos(t, fp, i);
		if (pos < 0) {
			tk_problem(&r,
				   "slot %llu: key %016llx is outside its "
				   "window (I3)",
				   (unsigned long long)i,
				   (unsigned long long)fp);
			continue;
		}
		if (t->wide && !tk_st_is_special(st)) {
			char why[200];
			if (tk_wide_verify_slot(t, i, fp, st, why, sizeof why))
				tk_problem(&r, "slot %llu: key %016llx: %s",
					   (unsigned long long)i,
					   (unsigned long long)fp, why);
		} else if (!tk_st_is_special(st) &&
			   !tk_algo_state_valid(&t->algo, st))
			tk_problem(&r,
				   "slot %llu: key %016llx has an invalid "
				   "state %#llx (I4)",
				   (unsigned long long)i,
				   (unsigned long long)fp,
				   (unsigned long long)st);
		{
			struct tk_where w;
			tk_where_of(t, fp, &w);
			/* I2 holds per bucket: look from the start of the
			 * slot's own bucket. */
			int first = pos < (int)TK_SLOTS_PER_BUCKET ?
					    0 :
					    (int)TK_SLOTS_PER_BUCKET;
			for (int p = first; p < pos; p++) {
				uint64_t f2, s2;
				tk_slot_read(
					tk_slot_at(t, tk_window_index(
							      &w, (unsigned)p)),
					&f2, &s2);
				if (f2 == 0) {
					tk_problem(&r,
						   "slot %llu: key %016llx "
						   "lies behind an EMPTY slot "
						   "of its bucket (I2)",
						   (unsigned long long)i,
						   (unsigned long long)fp);
					break;
				}
			}
		}
		if (!tk_st_is_special(st)) {
			reals[nreal].fp = fp;
			reals[nreal].index = i;
			reals[nreal].st = st;
			nreal++;
		}
	}

	qsort(reals, (size_t)nreal, sizeof *reals, tk_real_cmp);
	for (uint64_t i = 1; i < nreal; i++) {
		struct tk_real *a = &reals[i - 1], *b = &reals[i];
		uint64_t fa, sa, fb, sb;

		if (a->fp != b->fp)
			continue;
		/* Confirm: b still as seen, then a still as seen, so both were
		 * REAL together when b was re-read. */
		tk_slot_read(tk_slot_at(t, b->index), &fb, &sb);
		tk_slot_read(tk_slot_at(t, a->index), &fa, &sa);
		if (fa == a->fp && sa == a->st && fb == b->fp && sb == b->st)
			tk_problem(&r,
				   "key %016llx has two REAL slots, %llu and "
				   "%llu (I5)",
				   (unsigned long long)a->fp,
				   (unsigned long long)a->index,
				   (unsigned long long)b->index);
	}
	free(reals);

	for (uint64_t i = 0; i < t->ndebt; i++) {
		/* Relaxed: each cell is checked on its own. */
		uint64_t v = tk_load_relaxed(&t->debt[i]);
		if (v != 0 && t->wide)
			tk_problem(
				&r,
				"debt cell %llu is set in a table that never "
				"evicts (W9)",
				(unsigned long long)i);
		else if (v != 0 && !tk_algo_state_valid(&t->algo, v))
			tk_problem(&r,
				   "debt cell %llu holds an invalid state "
				   "%#llx (I9)",
				   (unsigned long long)i,
				   (unsigned long long)v);
	}

	if (problems)
		*problems = r.n;
	return r.n ? TKSHM_ECORRUPT : TKSHM_OK;
}

int
tk_api_usage_get(tkshm_table *t, double now_ms, tkshm_usage *out)
{
	uint64_t nslots;

	if (!t || !out)
		return TKSHM_ENULL;
	if (!(now_ms >= 0 && now_ms <= TKSHM_NOW_MAX))
		return TKSHM_ENOW;
	memset(out, 0, sizeof *out);
	nslots = t->nbuckets * TK_SLOTS_PER_BUCKET;
	for (uint64_t i = 0; i < nslots; i++) {
		uint64_t fp, st;
		int pos;

		tk_slot_read(tk_slot_at(t, i), &fp, &st);
		if (fp == 0) {
			out->empty++;
			continue;
		}
		if (tk_st_is_dead(st)) {
			out->dead++;
			continue;
		}
		if (tk_st_is_placeholder(st)) {
			out->placeholders++;
			continue;
		}
		if (t->wide ? tk_wide_is_idle(t, i, st, now_ms) :
			      tk_algo_is_idle(&t->algo, st, now_ms))
			out->idle++;
		else
			out->live++;
		pos = tk_window_pos(t, fp, i);
		if (pos >= 0)
			out->probe_hist[pos]++;
	}
	return TKSHM_OK;
}
