/*
 * permit.c - concurrency limits across processes: acquire, release, reap.
 *
 * A key's permits are its wide state (src/algorithms/concurrency.h): one
 * cell per permit, holding the holder word of the process that took it.
 * Every change is one wide transition (protocol.h W2-W4), the pure step of
 * concurrency.h run by the store, so the limit holds whatever the
 * interleaving (C1) and a process killed at any instruction leaves either
 * its permit taken or not: nothing half-made, nobody waiting.
 *
 * Dead holders.  A process that dies holding permits never releases them.
 * A refused acquire (at most once per TKSHM_REAP_INTERVAL_MS per handle)
 * reads the key's holders, asks /proc about each (base/proc.c: gone, zombie,
 * or a pid now naming another process) and runs a reap transition that
 * frees the cells of the dead ones (C3), then tries again.  A stopped
 * holder is alive: it keeps its permits and blocks nobody, since nobody
 * waits for a holder, only for a free cell.
 */
#include <math.h>
#include <string.h>

#include "algorithms/concurrency.h"
#include "base/clock.h"
#include "base/proc.h"
#include "shaper/permit_local.h"
#include "shm/atomic.h"
#include "shm/table.h"
#include "shm/validate.h"
#include "shm/wide.h"
#include "tkshm.h"

/* tkshm_permit.state_ */
#define TK_PERMIT_HELD	   0x50455231u /* "PER1" */
#define TK_PERMIT_RELEASED 0x52454c44u /* "RELD" */

/* Serial numbers of this process's acquisitions (display and tests). */
static uint64_t tk_permit_serial; /* relaxed: only uniqueness matters */

static int
tk_check_conc_table(const tkshm_table *t)
{
	if (!tk_algo_is_concurrency(&t->algo))
		return TKSHM_ENOTSUP;
	if (t->readonly)
		return TKSHM_EREADONLY;
	return TKSHM_OK;
}

/* ------------------------------------------------------------------------
 * The steps (pure transitions of concurrency.h, run by the wide store)
 * ---------------------------------------------------------------------- */

struct tk_acquire_ctx {
	double now;
	uint64_t holder;
	uint32_t cell;
	bool granted;
	uint64_t index; /* the key's slot, when present */
	tkshm_decision d;
};

static enum tk_step
tk_acquire_step(void *ctx, const struct tkshm_table *t, uint64_t index,
		uint64_t ctl, bool present, const uint64_t *cur, uint64_t *next)
{
	struct tk_acquire_ctx *a = ctx;

	(void)ctl;
	a->index = present ? index : UINT64_MAX;
	a->granted = tk_conc_acquire(&t->algo.u.conc, present, cur, a->now,
				     a->holder, 0, next, &a->cell, &a->d);
	return a->granted ? TK_STEP_WRITE : TK_STEP_NONE;
}

struct tk_release_ctx {
	double now, rtt;
	uint64_t holder;
	uint32_t cell;
	bool sample, dropped;
	bool released;
};

static enum tk_step
tk_release_step(void *ctx, const struct tkshm_table *t, uint64_t index,
		uint64_t ctl, bool present, const uint64_t *cur, uint64_t *next)
{
	struct tk_release_ctx *r = ctx;

	(void)index;
	(void)ctl;
	r->released = tk_conc_release(&t->algo.u.conc, present, cur, r->now,
				      r->holder, r->cell, r->sample, r->rtt,
				      r->dropped, next);
	return r->released ? TK_STEP_WRITE : TK_STEP_NONE;
}

struct tk_reap_ctx {
	const uint64_t *dead;
	uint32_t ndead;
	uint32_t freed;
};

static enum tk_step
tk_reap_step(void *ctx, const struct tkshm_table *t, uint64_t index,
	     uint64_t ctl, bool present, const uint64_t *cur, uint64_t *next)
{
	struct tk_reap_ctx *r = ctx;

	(void)index;
	(void)ctl;
	r->freed = tk_conc_reap(&t->algo.u.conc, present, cur, r->dead,
				r->ndead, next);
	return r->freed ? TK_STEP_WRITE : TK_STEP_NONE;
}

/* ------------------------------------------------------------------------
 * Reaping
 * ---------------------------------------------------------------------- */

/* The holders of `words` that /proc says are dead, at most one entry per
 * process, into dead[] (room for the table's cap).  Our own process is
 * alive without asking. */
static uint32_t
tk_dead_holders(const struct tkshm_table *t, const uint64_t *words,
		uint64_t *dead)
{
	const struct tk_conc *c = &t->algo.u.conc;
	uint64_t seen[TK_CONC_MAX_LIMIT], self = tk_holder_self();
	uint32_t nseen = 0, ndead = 0;

	if (words[TK_CONC_W_HOST] != c->host)
		return 0; /* another boot: every cell is free already */
	for (uint32_t i = 0; i < c->cap; i++) {
		uint64_t h = words[TK_CONC_HEAD + i];
		bool known = h == 0 || h == self;

		for (uint32_t k = 0; !known && k < nseen; k++)
			known = seen[k] == h;
		if (known)
			continue;
		seen[nseen++] = h;
		if (tk_holder_liveness(h) == TK_DEAD)
			dead[ndead++] = h;
	}
	return ndead;
}

/* Frees the cells of dead holders of the key whose REAL slot is at `pos`
 * with published control word `ctl`.  *freed receives how many. */
static int
tk_reap_slot(struct tkshm_table *t, const struct tk_where *w, int pos,
	     uint64_t ctl, uint32_t *freed)
{
	uint64_t words[TK_ALGO_MAX_WORDS], dead[TK_CONC_MAX_LIMIT], gen;
	struct tk_reap_ctx r = { dead, 0, 0 };
	struct tk_wide_done done;
	int rc;

	*freed = 0;
	switch (tk_wide_snapshot(t, tk_window_index(w, (unsigned)pos), ctl,
				 words, &gen)) {
	case TK_WIDE_PRESENT:
		break;
	case TK_WIDE_INVALID:
		return TKSHM_ECORRUPT;
	default:
		/* Absent, or a record moving under us: another writer is
		 * active, and the next refused acquire looks again. */
		return TKSHM_OK;
	}
	r.ndead = tk_dead_holders(t, words, dead);
	if (r.ndead == 0)
		return TKSHM_OK;
	/* A present key only: no carried state to convert, no time. */
	rc = tk_wide_transition(t, w, pos, 0, tk_reap_step, &r, &done);
	if (rc == TK_WIDE_GONE)
		return TKSHM_OK; /* reclaimed: it held no permit */
	if (rc != TKSHM_OK)
		return rc;
	if (done.wrote) {
		*freed = r.freed;
		tk_count(t, TK_C_REAPED, r.freed);
	}
	return TKSHM_OK;
}

/* True (once per interval per handle) when this handle may reap now. */
static bool
tk_reap_due(struct tkshm_table *t)
{
	int64_t now = (int64_t)tk_mono_ms();
	/* Relaxed: a rate limit; two threads reaping at once is harmless. */
	int64_t next = tk_priv_load_relaxed(&t->next_reap_ms);

	if (now < next)
		return false;
	/* Relaxed: as above; the CAS only picks one thread per interval. */
	return tk_priv_cas_relaxed(&t->next_reap_ms, &next,
				   now + TKSHM_REAP_INTERVAL_MS);
}

static int
tk_reap_key(struct tkshm_table *t, uint64_t fp, uint32_t *freed)
{
	struct tk_where w;
	uint64_t ctl;
	int pos;

	*freed = 0;
	tk_where_of(t, fp, &w);
	pos = tk_find_real(t, &w, &ctl);
	if (pos < 0 || !tk_ctl_valid(ctl))
		return TKSHM_OK;
	return tk_reap_slot(t, &w, pos, ctl, freed);
}

int
tk_api_reap(tkshm_table *t, uint64_t *reaped)
{
	uint64_t total = 0, slots;
	int rc;

	if (!t)
		return TKSHM_ENULL;
	if ((rc = tk_check_conc_table(t)) != TKSHM_OK)
		return rc;
	slots = t->nbuckets * TK_SLOTS_PER_BUCKET;
	for (uint64_t i = 0; i < slots; i++) {
		uint64_t fp, ctl;
		struct tk_where w;
		uint32_t freed;
		int pos;

		tk_slot_read(tk_slot_at(t, i), &fp, &ctl);
		if (fp == 0 || tk_st_is_special(ctl) || !tk_ctl_valid(ctl))
			continue;
		pos = tk_window_pos(t, fp, i);
		if (pos < 0)
			continue; /* misplaced (corrupt): verify reports it */
		tk_where_of(t, fp, &w);
		rc = tk_reap_slot(t, &w, pos, ctl, &freed);
		if (rc != TKSHM_OK)
			return rc;
		total += freed;
	}
	if (reaped)
		*reaped = total;
	return TKSHM_OK;
}

/* ------------------------------------------------------------------------
 * Acquire and release
 * ---------------------------------------------------------------------- */

/* Frees `cell` of the key if `holder` still holds it (no sample). */
static void
tk_release_cell(struct tkshm_table *t, uint64_t fp, uint64_t holder,
		uint32_t cell, double now)
{
	struct tk_release_ctx r;
	struct tk_wide_op op = { tk_release_step, &r, 0 };
	struct tk_keyref k = { fp, NULL, 0 };

	memset(&r, 0, sizeof r);
	r.now = now;
	r.holder = holder;
	r.cell = cell;
	(void)tk_table_wide_op(t, &k, now, &op);
}

int
tk_api_acquire_at(tkshm_table *t, const void *key, size_t key_len,
		  double now_ms, tkshm_permit *permit, tkshm_decision *out)
{
	struct tk_acquire_ctx a;
	struct tk_wide_op op = { tk_acquire_step, &a, 0 };
	struct tk_keyref k;
	int rc;

	if (!t || !permit || !out)
		return TKSHM_ENULL;
	if ((rc = tk_check_key(key, key_len)) != TKSHM_OK ||
	    (rc = tk_check_now(now_ms)) != TKSHM_OK ||
	    (rc = tk_check_conc_table(t)) != TKSHM_OK)
		return rc;
	memset(&a, 0, sizeof a);
	a.now = now_ms;
	a.holder = tk_holder_self();
	if (a.holder == 0)
		return TKSHM_ESYSTEM;
	k = tk_keyref_of(t, key, key_len);
	for (unsigned attempt = 0;; attempt++) {
		uint32_t freed;

		rc = tk_table_wide_op(t, &k, now_ms, &op);
		if (rc != TKSHM_OK)
			return rc;
		if (a.granted || attempt > 0 || !tk_reap_due(t))
			break;
		/* Refused: take back the permits of dead holders first.  A
		 * reap that lost its races (EBUSY) leaves the refusal as it
		 * is, to be tried again next interval; a corrupt state is
		 * reported. */
		rc = tk_reap_key(t, k.fp, &freed);
		if (rc == TKSHM_ECORRUPT)
			return rc;
		if (rc != TKSHM_OK || freed == 0)
			break;
	}
	*out = a.d;
	if (!a.granted) {
		tk_count(t, TK_C_DENIED, 1); /* C4: nothing written */
		if (a.index != UINT64_MAX)
			tk_denial_note(t, a.index);
		return TKSHM_OK;
	}
	memset(permit, 0, sizeof *permit);
	permit->fp_ = k.fp;
	permit->seed_ = t->seed;
	permit->holder_ = a.holder;
	permit->epoch_ = t->permit_epoch;
	/* Relaxed: a per-process serial; only its uniqueness matters. */
	permit->serial_ = tk_priv_fetch_add_relaxed(&tk_permit_serial, 1) + 1;
	if (!tk_local_add(t->seed, k.fp, a.cell, permit->serial_)) {
		/* Without its record the permit could never be released:
		 * give it back now. */
		tk_release_cell(t, k.fp, a.holder, a.cell, now_ms);
		memset(permit, 0, sizeof *permit);
		return TKSHM_ENOMEM;
	}
	tk_count(t, TK_C_ALLOWED, 1);
	permit->acquired_ms_ = now_ms;
	permit->acquired_mono_ = tk_mono_ms();
	permit->cell_ = a.cell;
	permit->state_ = TK_PERMIT_HELD;
	return TKSHM_OK;
}

/* A release at `now` whose latency sample is `rtt`. */
static int
tk_release(tkshm_table *t, tkshm_permit *permit, double now, double rtt,
	   tkshm_outcome outcome)
{
	struct tk_release_ctx r;
	struct tk_wide_op op = { tk_release_step, &r, 0 };
	struct tk_keyref k = { 0, NULL, 0 };
	int rc;

	if ((rc = tk_check_conc_table(t)) != TKSHM_OK)
		return rc;
	if (outcome != TKSHM_OUTCOME_SUCCESS &&
	    outcome != TKSHM_OUTCOME_DROPPED && outcome != TKSHM_OUTCOME_IGNORE)
		return TKSHM_EINVAL;
	if (permit->state_ != TK_PERMIT_HELD)
		return TKSHM_ENOTHELD;
	if (permit->seed_ != t->seed)
		return TKSHM_EINVAL; /* another table's permit */
	if (permit->holder_ != tk_holder_self())
		return TKSHM_ENOTHELD; /* acquired by another process */
	/* One release per acquisition, whichever copy or thread asks. */
	if (!tk_local_take(permit->seed_, permit->fp_, permit->cell_,
			   permit->serial_)) {
		permit->state_ = TK_PERMIT_RELEASED;
		return TKSHM_ENOTHELD;
	}
	if (permit->epoch_ != t->permit_epoch) {
		/* The table was replaced by one that did not carry the
		 * permits (a new limit): this one is held nowhere now, and
		 * its cell may be another acquisition's. */
		permit->state_ = TK_PERMIT_RELEASED;
		return TKSHM_ENOTHELD;
	}
	memset(&r, 0, sizeof r);
	r.now = now;
	r.rtt = rtt;
	r.holder = permit->holder_;
	r.cell = permit->cell_;
	r.sample = outcome != TKSHM_OUTCOME_IGNORE;
	r.dropped = outcome == TKSHM_OUTCOME_DROPPED;
	k.fp = permit->fp_;
	/* A release never inserts: from the absent state it writes nothing. */
	rc = tk_table_wide_op(t, &k, now, &op);
	if (rc != TKSHM_OK) {
		/* Still held: the caller may release again.  Putting the
		 * record back cannot fail: the array never shrinks. */
		(void)tk_local_add(permit->seed_, permit->fp_, permit->cell_,
				   permit->serial_);
		return rc;
	}
	permit->state_ = TK_PERMIT_RELEASED;
	if (!r.released)
		return TKSHM_ENOTHELD;
	tk_count(t, TK_C_RELEASES, 1);
	return TKSHM_OK;
}

int
tk_api_release_at(tkshm_table *t, tkshm_permit *permit, double now_ms,
		  tkshm_outcome outcome)
{
	int rc;

	if (!t || !permit)
		return TKSHM_ENULL;
	if ((rc = tk_check_now(now_ms)) != TKSHM_OK)
		return rc;
	return tk_release(t, permit, now_ms, now_ms - permit->acquired_ms_,
			  outcome);
}

int
tk_api_release(tkshm_table *t, tkshm_permit *permit, tkshm_outcome outcome)
{
	if (!t || !permit)
		return TKSHM_ENULL;
	return tk_release(t, permit, tkshm_now_ms(),
			  tk_mono_ms() - permit->acquired_mono_, outcome);
}
