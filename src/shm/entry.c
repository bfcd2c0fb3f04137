/*
 * entry.c - one key of a table as an operator sees it (tkshm_entry_*).
 *
 * Reads only, takes no lock and never waits for a writer: a slot is read as
 * a pair (tk_slot_read), a wide record as a snapshot (W5) retried a bounded
 * number of times while publishes overtake it, and the label seqlock-style
 * (label.c).  Whatever the segment holds, every index used is computed from
 * the handle's validated geometry, never read from shared memory, and a
 * state the algorithm does not accept is reported as such, not decoded.
 *
 * Concurrency kinds also show who holds the key's permits: the holder words
 * of its cells (src/algorithms/concurrency.h), grouped by process.  A holder
 * word names one process (pid and start time, src/base/proc.h), so two
 * words with one pid (a dead holder and a newer process that reused its
 * pid) are two processes.  Nothing here asks /proc whether they still run:
 * the entry shows the table as it stands, and reaping is the writers' job.
 */
#include <stdlib.h>
#include <string.h>

#include "algorithms/forecast.h"
#include "base/proc.h"
#include "shm/table.h"
#include "shm/wide.h"

/* Snapshot attempts before a wide slot that keeps moving is skipped. */
#define TK_ENTRY_TRIES 64

enum tk_entry_read {
	TK_ENTRY_GONE,
	TK_ENTRY_OK,
	TK_ENTRY_INVALID
};

/* The state of the REAL slot `index` {fp, st} into words[]; *present is
 * false for a FRESH wide key. */
static enum tk_entry_read
tk_entry_state(const struct tkshm_table *t, uint64_t index, uint64_t fp,
	       uint64_t st, uint64_t *words, bool *present)
{
	*present = true;
	if (!t->wide) {
		words[0] = st;
		return tk_algo_state_valid(&t->algo, st) ? TK_ENTRY_OK :
							   TK_ENTRY_INVALID;
	}
	for (unsigned tries = 0; tries < TK_ENTRY_TRIES; tries++) {
		uint64_t gen, again_fp, again_st;

		if (!tk_ctl_valid(st))
			return TK_ENTRY_INVALID;
		switch (tk_wide_snapshot(t, index, st, words, &gen)) {
		case TK_WIDE_ABSENT:
			*present = false;
			return TK_ENTRY_OK;
		case TK_WIDE_PRESENT:
			return TK_ENTRY_OK;
		case TK_WIDE_INVALID:
			return TK_ENTRY_INVALID;
		case TK_WIDE_TORN:
			break;
		}
		tk_slot_read(tk_slot_at(t, index), &again_fp, &again_st);
		if (again_fp != fp || tk_st_is_special(again_st))
			return TK_ENTRY_GONE;
		/* Torn under a control word that did not move: nothing was
		 * published during the read (W7) and claims write only the
		 * inactive record (W5), so the active record contradicts
		 * its control word for good.  Corrupt, as a check finds it
		 * (tk_wide_torn_for_good), not a busy key to skip. */
		if (again_st == st)
			return TK_ENTRY_INVALID;
		st = again_st;
		tk_cpu_relax();
	}
	return TK_ENTRY_GONE; /* kept moving: a busy key, seen next time */
}

/* Orders holder words by pid, then by the rest of the word (start time),
 * so one process's cells are adjacent and holders[] goes up by pid. */
static int
tk_holder_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	pid_t px = tk_holder_pid(x), py = tk_holder_pid(y);

	if (px != py)
		return px < py ? -1 : 1;
	return x < y ? -1 : (x > y ? 1 : 0);
}

/* The permit fields of *out for a concurrency kind, from the published
 * state `words` (`present` false: FRESH, i.e. absent).  The state is read
 * as an acquire would read it (tk_conc_load): an absent key has its fresh
 * state, and cells written in another boot hold nobody. */
static void
tk_entry_permits(const struct tkshm_table *t, bool present,
		 const uint64_t *words, tkshm_entry *out)
{
	const struct tk_conc *c = &t->algo.u.conc;
	uint64_t w[TK_CONC_MAX_WORDS], held[TK_CONC_MAX_LIMIT];
	uint32_t n = 0;

	tk_conc_load(c, present, words, w);
	for (uint32_t i = 0; i < c->cap; i++)
		if (w[TK_CONC_HEAD + i] != 0)
			held[n++] = w[TK_CONC_HEAD + i];
	out->permits_held = n;
	/* cppcheck-suppress uninitvar ; held[0 .. n) is written, n may be 0 */
	qsort(held, n, sizeof held[0], tk_holder_cmp);
	for (uint32_t i = 0; i < n;) {
		uint32_t j = i;

		while (j < n && held[j] == held[i])
			j++;
		if (out->holders_n < TKSHM_ENTRY_HOLDERS) {
			out->holders[out->holders_n].pid =
				(int32_t)tk_holder_pid(held[i]);
			out->holders[out->holders_n].permits = j - i;
		}
		out->holders_n++;
		i = j;
	}
	if (c->adaptive) {
		double prev = tk_word_f64(w[TK_CONC_W_PREV_MIN]);
		double cur = tk_word_f64(w[TK_CONC_W_CUR_MIN]);

		out->adaptive_limit = tk_word_f64(w[TK_CONC_W_LIMIT]);
		/* The least latency of the two windows; 0 (none) is not a
		 * latency (the state is valid: both are finite, >= 0). */
		if (prev > 0 && (cur <= 0 || prev < cur))
			out->rtt_noload_ms = prev;
		else if (cur > 0)
			out->rtt_noload_ms = cur;
	}
}

/* Fills *out from the REAL slot `index` {fp, st}.  False when the slot
 * stopped being that key's while it was read. */
static bool
tk_entry_fill(const struct tkshm_table *t, uint64_t index, uint64_t fp,
	      uint64_t st, double now, tkshm_entry *out)
{
	uint64_t words[TK_ALGO_MAX_WORDS];
	unsigned key_len;
	bool present;
	int pos;
	enum tk_entry_read r =
		tk_entry_state(t, index, fp, st, words, &present);

	if (r == TK_ENTRY_GONE)
		return false;
	memset(out, 0, sizeof *out);
	out->slot = index;
	out->fingerprint = fp;
	pos = tk_window_pos(t, fp, index);
	out->probe = pos < 0 ? 0 : (uint32_t)pos;
	out->misplaced = pos < 0;
	out->denials = tk_denials_of(t, index);
	if (tk_label_read(t, index, fp, out->label, &key_len)) {
		out->key_len = key_len;
		out->label_len =
			key_len < TKSHM_LABEL_MAX ? key_len : TKSHM_LABEL_MAX;
	}
	if (r == TK_ENTRY_INVALID) {
		out->state_valid = false;
		return true;
	}
	out->state_valid = true;
	out->idle = !present || tk_algo_is_idle_w(&t->algo, words, now);
	if (!out->idle)
		out->debt_ms = tk_algo_debt_w(&t->algo, words, now);
	tk_algo_peek_w(&t->algo, present, words, now, &out->peek);
	{
		struct tk_forecast f;

		tk_algo_forecast(&t->algo, present, words, now, 1.0, &f);
		out->forecast.spendable_now = f.spendable_now;
		out->forecast.next_replenish_at = f.next_replenish_at;
		out->forecast.full_at = f.full_at;
	}
	if (tk_algo_is_concurrency(&t->algo))
		tk_entry_permits(t, present, words, out);
	return true;
}

int
tk_entry_next(const struct tkshm_table *t, uint64_t *cursor, double now,
	      tkshm_entry *out)
{
	uint64_t nslots = t->nbuckets * TK_SLOTS_PER_BUCKET;

	for (uint64_t i = *cursor; i < nslots; i++) {
		uint64_t fp, st;

		tk_slot_read(tk_slot_at(t, i), &fp, &st);
		if (fp == 0 || tk_st_is_special(st))
			continue;
		if (tk_entry_fill(t, i, fp, st, now, out)) {
			*cursor = i + 1;
			return TKSHM_OK;
		}
	}
	*cursor = nslots;
	return TKSHM_ENOENT;
}

int
tk_state_next(const struct tkshm_table *t, uint64_t *cursor, uint64_t *index,
	      uint64_t *fp_out, uint64_t *words, bool *present)
{
	uint64_t nslots = t->nbuckets * TK_SLOTS_PER_BUCKET;

	for (uint64_t i = *cursor; i < nslots; i++) {
		uint64_t fp, st;

		tk_slot_read(tk_slot_at(t, i), &fp, &st);
		if (fp == 0 || tk_st_is_special(st))
			continue;
		if (tk_entry_state(t, i, fp, st, words, present) ==
		    TK_ENTRY_OK) {
			*cursor = i + 1;
			*index = i;
			*fp_out = fp;
			return TKSHM_OK;
		}
	}
	*cursor = nslots;
	return TKSHM_ENOENT;
}

int
tk_entry_get(const struct tkshm_table *t, const void *key, size_t len,
	     double now, tkshm_entry *out)
{
	struct tk_where w;

	tk_where_of(t, tk_key_fp(t, key, len), &w);
	for (unsigned tries = 0; tries < TK_ENTRY_TRIES; tries++) {
		uint64_t st;
		int pos = tk_find_real(t, &w, &st);

		if (pos < 0)
			return TKSHM_ENOENT;
		if (tk_entry_fill(t, tk_window_index(&w, (unsigned)pos), w.fp,
				  st, now, out))
			return out->state_valid ? TKSHM_OK : TKSHM_ECORRUPT;
	}
	return TKSHM_EBUSY;
}
