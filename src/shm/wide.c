/*
 * wide.c - reading and changing states wider than one word (W1..W9).
 *
 * The protocol and its proof are in protocol.h.  In short: the slot's
 * control word names the active record and its generation; a reader takes
 * the active record when all its units carry that generation; an admission
 * claims the slot in the control word, writes the inactive record unit by
 * unit with a CAS that only ever raises a unit's generation, and publishes
 * by flipping the control word.  A claim left by a stopped or dead process
 * is stolen by the next writer of the key, and whatever the loser writes
 * later can no longer land on a record anybody reads.
 *
 * Every access here is a seq_cst load or CAS, like the slot protocol's:
 * the claim, the unit writes and the publish must be ordered in one total
 * order with the readers' loads, and on x86-64 such loads are plain MOVs.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "shm/atomic.h"
#include "shm/carry.h"
#include "shm/protocol.h"
#include "shm/wide.h"

/* How a writer that finds a claim waits for it to be published before it
 * steals it (W2).  A live claimant needs well under a microsecond, unless
 * the scheduler took its CPU: so the first waits spin, the rest give the
 * CPU away (sched_yield), which lets a preempted claimant finish instead of
 * being robbed.  A stopped or dead claimant costs the waiter about
 * TK_WIDE_PATIENCE yields, tens of microseconds on an idle machine. */
#define TK_WIDE_SPINS	 8
#define TK_WIDE_PATIENCE 64

/* True when the slot still holds {fp, ctl} after TK_WIDE_PATIENCE waits:
 * its claimant is stopped, dead or descheduled, and may be robbed. */
static bool
tk_wide_claim_stuck(const struct tk_slot *s, uint64_t fp, uint64_t ctl)
{
	for (unsigned waits = 1; waits <= TK_WIDE_PATIENCE; waits++) {
		uint64_t f, c;

		if (waits <= TK_WIDE_SPINS)
			tk_backoff(waits);
		else
			sched_yield();
		tk_slot_read(s, &f, &c);
		if (f != fp || c != ctl)
			return false;
	}
	return true;
}

/* After a torn read of slot `index` under control word `ctl`: true when
 * the slot still holds {fp, ctl}.  Then nothing was published during the
 * read (generations only grow, so a control word never comes back, W7),
 * and claims write only the inactive record (W5): the active record itself
 * contradicts its control word.  Only a scribbled segment does that, and
 * reading it again would spin until TK_WIDE_BUSY_MS for nothing. */
static bool
tk_wide_torn_for_good(const struct tkshm_table *t, uint64_t index, uint64_t fp,
		      uint64_t ctl)
{
	uint64_t f, c;

	tk_slot_read(tk_slot_at(t, index), &f, &c);
	return f == fp && c == ctl;
}

uint64_t
tk_wide_fresh(struct tkshm_table *t, uint64_t index)
{
	uint64_t *floor = tk_wide_floor(t, index);
	uint64_t m = 0, f, nf;

	/* M: the largest gen any unit of the slot carries (W6). */
	for (unsigned rec = 0; rec < 2; rec++) {
		const struct tk_unit *u = tk_wide_record(t, index, rec);
		for (uint32_t i = 0; i < t->wide_units; i++) {
			/* seq_cst: read after our placeholder claim. */
			uint64_t g = tk_load_seq_cst(&u[i].gen);
			if (g > m)
				m = g;
		}
	}
	/* seq_cst (and the CAS): an occupant's F is in the floor before its
	 * control word can be seen REAL. */
	f = tk_load_seq_cst(floor);
	do
		nf = (f > m ? f : m) + TK_WIDE_SPACING;
	while (!tk_cas64(floor, &f, nf));
	return tk_ctl_make(true, 0, 0, nf);
}

/* The full generation of a control word: the active record's gen, or for a
 * FRESH control the largest value up to the floor with its low bits. */
static uint64_t
tk_wide_full_gen(const struct tkshm_table *t, uint64_t index, uint64_t ctl,
		 uint64_t record_gen)
{
	uint64_t floor;

	if (!tk_ctl_fresh(ctl))
		return record_gen;
	/* seq_cst: the floor was raised before this control was made REAL. */
	floor = tk_load_seq_cst(tk_wide_floor(t, index));
	return floor - ((floor - tk_ctl_g40(ctl)) & TK_WIDE_G_MASK);
}

/* W3: writes `words` into record `rec` with generation g.  False when a
 * unit already carries g or more: our claim was superseded. */
static bool
tk_wide_write(struct tkshm_table *t, uint64_t index, unsigned rec, uint64_t g,
	      const uint64_t *words)
{
	struct tk_unit *u = tk_wide_record(t, index, rec);

	for (uint32_t i = 0; i < t->wide_units; i++) {
		for (;;) {
			uint64_t ug, uv;

			tk_unit_read(&u[i], &ug, &uv);
			if (ug >= g)
				return false;
			/* W1: from the exact pair read, so a rival's write in
			 * between makes us read again. */
			if (tk_cas128(&u[i], ug, uv, g, words[i]))
				break;
		}
	}
	return true;
}

/* A wide transition reads and writes a whole record, so a writer can lose
 * many races in a row to one that has the record in its cache (the one
 * that just published), not only to thousands of rivals.  It keeps trying,
 * yielding, for TK_WIDE_BUSY_MS after its TK_MAX_RETRIES-th loss, and only
 * then gives up with TKSHM_EBUSY.  *since is 0 until that loss. */
#define TK_WIDE_BUSY_MS 250

static bool
tk_wide_gave_up(double *since)
{
	double now = tk_mono_ms();

	if (*since == 0) {
		*since = now;
		return false;
	}
	return now - *since >= TK_WIDE_BUSY_MS;
}

int
tk_wide_transition(struct tkshm_table *t, const struct tk_where *w, int pos,
		   double now, tk_step_fn step, void *ctx,
		   struct tk_wide_done *done)
{
	uint64_t index = tk_window_index(w, (unsigned)pos);
	struct tk_slot *s = tk_slot_at(t, index);
	uint64_t cur[TK_ALGO_MAX_WORDS], next[TK_ALGO_MAX_WORDS];
	unsigned retries = 0;
	double since = 0;

	if (t->pairs)
		return tk_pair_transition(t, w, pos, now, step, ctx, done);
	done->wrote = false;
	for (;;) {
		uint64_t fp, ctl, gen = 0, claim, claimed, target, published;
		enum tk_wide_read r;
		enum tk_step what;
		bool present;

		tk_slot_read(s, &fp, &ctl);
		if (fp != w->fp || tk_st_is_special(ctl) || !tk_ctl_valid(ctl))
			return TK_WIDE_GONE;
		r = tk_wide_snapshot(t, index, ctl, cur, &gen);
		if (r == TK_WIDE_INVALID)
			return TKSHM_ECORRUPT;
		if (r == TK_WIDE_TORN) {
			if (tk_wide_torn_for_good(t, index, fp, ctl))
				return TKSHM_ECORRUPT;
			goto lost;
		}
		present = r == TK_WIDE_PRESENT;
		/* L5: a FRESH key of a table that drains its predecessor
		 * starts from its sealed state there; every writer of the
		 * key fetches the same one. */
		if (!present && __builtin_expect(t->pred != NULL, 0)) {
			int got = tk_carry_fetch(t, w->fp, now, cur);

			if (got < 0)
				return got;
			present = got > 0;
		}
		/* Decided from the published state: a claim in flight has not
		 * happened yet, so a denial never waits for it (W5, I7). */
		what = step(ctx, t, index, ctl, present, cur, next);
		if (what == TK_STEP_NONE)
			return TKSHM_OK;
		if (what == TK_STEP_ABSENT) {
			if (!tk_cas128(s, fp, ctl, fp, TK_ST_DEAD))
				goto lost;
			done->wrote = true;
			return TKSHM_OK;
		}
		claim = tk_ctl_claim(ctl);
		if (claim != 0) {
			/* W2: give the claimant time to publish (watching
			 * the slot word only), then steal. */
			if (!tk_wide_claim_stuck(s, fp, ctl))
				continue;
			if (claim == TK_WIDE_D_MAX)
				return TKSHM_EBUSY;
		}
		claimed = tk_ctl_make(tk_ctl_fresh(ctl), tk_ctl_active(ctl),
				      claim + 1, tk_ctl_g40(ctl));
		if (!tk_cas128(s, fp, ctl, fp, claimed))
			goto lost;
		if (claim != 0)
			tk_count(t, TK_C_CLAIMS_STOLEN, 1);
		target = tk_wide_full_gen(t, index, ctl, gen) + claim + 1;
		if (!tk_wide_write(t, index, 1 - tk_ctl_active(ctl), target,
				   next))
			goto lost;
		published =
			tk_ctl_make(false, 1 - tk_ctl_active(ctl), 0, target);
		if (!tk_cas128(s, fp, claimed, fp, published))
			goto lost; /* W4: our claim was stolen */
		done->wrote = true;
		done->prev_present = present;
		done->prev = ctl;
		done->next = published;
		return TKSHM_OK;
lost:
		if (++retries > TK_MAX_RETRIES && tk_wide_gave_up(&since))
			return TKSHM_EBUSY;
		tk_count(t, TK_C_CAS_RETRIES, 1);
		tk_backoff(retries);
	}
}

/* A check: the algorithm's transition. */
struct tk_check_ctx {
	double now, cost;
	tkshm_decision *out;
};

static enum tk_step
tk_check_step(void *ctx, const struct tkshm_table *t, uint64_t index,
	      uint64_t ctl, bool present, const uint64_t *cur, uint64_t *next)
{
	struct tk_check_ctx *c = ctx;

	(void)index;
	(void)ctl;
	return tk_algo_check_w(&t->algo, present, cur, c->now, c->cost, next,
			       c->out) ?
		       TK_STEP_WRITE :
		       TK_STEP_NONE;
}

int
tk_wide_apply(struct tkshm_table *t, const struct tk_where *w, int pos,
	      double now, double cost, tkshm_decision *out,
	      struct tk_commit *commit)
{
	struct tk_check_ctx c = { now, cost, out };
	struct tk_wide_done done;
	int rc = tk_wide_transition(t, w, pos, now, tk_check_step, &c, &done);

	if (rc != TKSHM_OK)
		return rc;
	if (!done.wrote) {
		tk_count_decision(t, commit, false); /* I7 */
		tk_denial_note(t, tk_window_index(w, (unsigned)pos));
		return TKSHM_OK;
	}
	if (commit) {
		commit->fp = w->fp;
		commit->prev_present = done.prev_present;
		commit->prev = done.prev;
		commit->next = done.next;
		commit->pair_prev = done.pair_prev;
		commit->pair_next = done.pair_next;
	}
	tk_count_decision(t, commit, true);
	return TKSHM_OK;
}

/* An operator's set (set.c): the published state becomes `words`. */
static enum tk_step
tk_replace_step(void *ctx, const struct tkshm_table *t, uint64_t index,
		uint64_t ctl, bool present, const uint64_t *cur, uint64_t *next)
{
	(void)index;
	(void)ctl;
	(void)present;
	(void)cur;
	memcpy(next, ctx, t->algo.words * sizeof *next);
	return TK_STEP_WRITE;
}

int
tk_wide_replace(struct tkshm_table *t, const struct tk_where *w, int pos,
		const uint64_t *words)
{
	struct tk_wide_done done;

	/* The step writes `words` whatever the key held: no time. */
	return tk_wide_transition(t, w, pos, 0, tk_replace_step, (void *)words,
				  &done);
}

/* A give-back (multi.c): exact while nobody has written the key since the
 * commit (the control word is still the one it published, so the record it
 * replaced is intact), otherwise what the algorithm says is still owed. */
struct tk_refund_ctx {
	const struct tk_commit *c;
	double cost;
};

static enum tk_step
tk_refund_step(void *ctx, const struct tkshm_table *t, uint64_t index,
	       uint64_t ctl, bool present, const uint64_t *cur, uint64_t *next)
{
	struct tk_refund_ctx *r = ctx;
	uint64_t gen;

	if (!present)
		return TK_STEP_NONE; /* nothing is owed by an absent key */
	if (ctl == r->c->next) {
		if (!r->c->prev_present)
			return TK_STEP_ABSENT;
		if (tk_wide_snapshot(t, index, r->c->prev, next, &gen) ==
		    TK_WIDE_PRESENT)
			return TK_STEP_WRITE;
	}
	memcpy(next, cur, sizeof(uint64_t) * t->wide_units);
	return tk_algo_refund_w(&t->algo, next, r->cost, r->c->now) ?
		       TK_STEP_WRITE :
		       TK_STEP_NONE;
}

int
tk_wide_refund(struct tkshm_table *t, const struct tk_where *w, int pos,
	       const struct tk_commit *c, double cost)
{
	struct tk_refund_ctx r = { c, cost };
	struct tk_wide_done done;
	int rc;

	if (t->pairs) {
		rc = tk_pair_refund(t, w, pos, c, cost);
		return rc == TK_WIDE_GONE ? TKSHM_OK : rc;
	}
	rc = tk_wide_transition(t, w, pos, c->now, tk_refund_step, &r, &done);

	if (rc == TKSHM_OK && done.wrote)
		tk_count(t, TK_C_MULTI_ROLLBACKS, 1);
	return rc == TK_WIDE_GONE ? TKSHM_OK : rc;
}

int
tk_wide_lookup(const struct tkshm_table *t, const struct tk_where *w,
	       uint64_t *words)
{
	double since = 0;

	for (unsigned retries = 1;; retries++) {
		uint64_t ctl, gen, index;
		int pos = tk_find_real(t, w, &ctl);

		if (pos < 0 || !tk_ctl_valid(ctl))
			return 0;
		index = tk_window_index(w, (unsigned)pos);
		switch (tk_wide_snapshot(t, index, ctl, words, &gen)) {
		case TK_WIDE_ABSENT:
			return 0;
		case TK_WIDE_PRESENT:
			return 1;
		case TK_WIDE_INVALID:
			return TKSHM_ECORRUPT;
		case TK_WIDE_TORN:
			if (tk_wide_torn_for_good(t, index, w->fp, ctl))
				return TKSHM_ECORRUPT;
			break; /* two publishes overtook our read: again */
		}
		if (retries > TK_MAX_RETRIES && tk_wide_gave_up(&since))
			return TKSHM_EBUSY;
		tk_backoff(retries);
	}
}

int
tk_wide_verify_slot(const struct tkshm_table *t, uint64_t index, uint64_t fp,
		    uint64_t ctl, char *why, size_t len)
{
	uint64_t words[TK_ALGO_MAX_WORDS], gen = 0, full, highest = 0;
	enum tk_wide_read r;

	if (!tk_ctl_valid(ctl)) {
		snprintf(why, len, "control word %#llx has bit 63 set (W5)",
			 (unsigned long long)ctl);
		return 1;
	}
	if (t->pairs) {
		/* P1, P2: a REAL slot's pair decodes to a valid state or to
		 * ABSENT (a slot that moved meanwhile is no finding). */
		if (tk_pair_snapshot(t, index, ctl, words) != TK_WIDE_INVALID)
			return 0;
		snprintf(why, len,
			 "pair holds no valid state of occupancy %#llx (P1)",
			 (unsigned long long)ctl);
		return 1;
	}
	r = tk_wide_snapshot(t, index, ctl, words, &gen);
	if (r == TK_WIDE_TORN) {
		/* A publish overtook the read: this report would be stale.
		 * Under the same slot, reading again would tear again. */
		if (!tk_wide_torn_for_good(t, index, fp, ctl))
			return 0;
		snprintf(why, len,
			 "active record %u does not all carry generation "
			 "low bits %#llx (W5)",
			 tk_ctl_active(ctl),
			 (unsigned long long)tk_ctl_g40(ctl));
		return 1;
	}
	if (r == TK_WIDE_INVALID) {
		snprintf(why, len, "active record holds an invalid state (W5)");
		return 1;
	}
	full = tk_wide_full_gen(t, index, ctl, gen);
	for (unsigned rec = 0; rec < 2; rec++) {
		const struct tk_unit *u = tk_wide_record(t, index, rec);
		for (uint32_t i = 0; i < t->wide_units; i++) {
			/* seq_cst, like every wide load. */
			uint64_t g = tk_load_seq_cst(&u[i].gen);
			if (g > highest)
				highest = g;
		}
	}
	/* The slot may have changed hands while we scanned: a new occupant's
	 * first claim writes far above the old generation (W6).  Only a
	 * control word still in place makes the scan a finding. */
	{
		uint64_t fp_now, ctl_now;

		tk_slot_read(tk_slot_at(t, index), &fp_now, &ctl_now);
		if (fp_now != fp || ctl_now != ctl)
			return 0;
	}
	if (highest > full + TK_WIDE_D_MAX) {
		snprintf(why, len,
			 "a unit carries generation %llu, beyond any claim on "
			 "generation %llu (W2, W7)",
			 (unsigned long long)highest, (unsigned long long)full);
		return 1;
	}
	return 0;
}
