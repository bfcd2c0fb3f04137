/*
 * table.c - probe, update, insert, reclaim and evict: the slot protocol.
 *
 * The invariants I1..I11 are stated and proved in protocol.h; this file cites
 * them where it relies on them.  In short: a key is looked up in its window
 * of eight slots; its unique REAL slot (I5) is updated by one 16-byte CAS; a
 * denial writes nothing (I7); an absent key is inserted by claiming a
 * placeholder, rescanning, retiring rival placeholders and only then making
 * the placeholder REAL (I6).
 *
 * Every load of a slot word here is sequentially consistent.  I6 needs the
 * rescan's loads ordered after the claim CAS and totally ordered with the
 * other inserters' CASes; on x86-64 a seq_cst load is a plain MOV, so the
 * check path pays nothing for using the same order everywhere.
 */
#include <errno.h>
#include <string.h>

#include "algorithms/forecast.h"
#include "shm/atomic.h"
#include "shm/protocol.h"
#include "shm/carry.h"
#include "shm/life.h"
#include "shm/table.h"
#include "shm/wide.h"

/* ------------------------------------------------------------------------
 * Counters (tags, shards and the backoff are slot.c's)
 * ---------------------------------------------------------------------- */

void
tk_counters_sum(const struct tkshm_table *t, uint64_t sum[TK_SHARD_COUNTERS])
{
	memset(sum, 0, sizeof(uint64_t) * TK_SHARD_COUNTERS);
	for (uint32_t s = 0; s < t->nshards; s++)
		for (unsigned c = 0; c < TK_SHARD_COUNTERS; c++)
			/* Relaxed: a snapshot of independent counters. */
			sum[c] += tk_load_relaxed(&t->shards[s].c[c]);
}

/* ------------------------------------------------------------------------
 * Scanning a window
 * ---------------------------------------------------------------------- */

enum tk_free_kind {
	TK_FREE_EMPTY,
	TK_FREE_DEAD,
	TK_FREE_IDLE
};

/* A slot an insert may take without evicting anybody. */
struct tk_free {
	int pos; /* window position, or -1 */
	enum tk_free_kind kind;
	uint64_t fp, st;
};

struct tk_scan {
	int real; /* position of the key's REAL slot, or -1 */
	uint64_t real_st;
	int mine;	  /* position of our own placeholder, or -1 */
	unsigned nrivals; /* the key's other placeholders */
	int rival[TK_WINDOW];
	uint64_t rival_st[TK_WINDOW];
	struct tk_free free[2]; /* first takeable slot of each bucket */
	unsigned avail[2]; /* takeable slots (EMPTY, DEAD, idle) per bucket */
	int ph;		   /* first placeholder of another key, or -1 */
	uint64_t ph_fp, ph_st;
	int evict; /* least-indebted live slot of another key */
	uint64_t evict_fp, evict_st;
	double evict_debt;
};

/* Scans the window of w at `now`, each bucket up to its first EMPTY slot
 * (I2), classifying every slot.  With stop_at_real, returns as soon as the
 * key's REAL slot is found (it is unique, I5). */
static void
tk_scan(const struct tkshm_table *t, const struct tk_where *w, double now,
	uint64_t mine_st, bool stop_at_real, struct tk_scan *sc)
{
	sc->real = sc->mine = sc->ph = sc->evict = -1;
	sc->free[0].pos = sc->free[1].pos = -1;
	sc->avail[0] = sc->avail[1] = 0;
	sc->nrivals = 0;
	sc->evict_debt = 0;
	for (unsigned i = 0; i < TK_WINDOW; i++) {
		const struct tk_slot *s = tk_slot_at(t, tk_window_index(w, i));
		unsigned b = i / TK_SLOTS_PER_BUCKET;
		enum tk_free_kind kind;
		uint64_t fp, st;

		tk_slot_read(s, &fp, &st);
		if (fp == 0) {
			/* I2: in a bucket, EMPTY slots only follow EMPTY ones
			 * and nothing of this key lies behind them. */
			unsigned left =
				TK_SLOTS_PER_BUCKET - i % TK_SLOTS_PER_BUCKET;
			if (sc->free[b].pos < 0) {
				sc->free[b].pos = (int)i;
				sc->free[b].kind = TK_FREE_EMPTY;
				sc->free[b].fp = 0;
				sc->free[b].st = 0;
			}
			sc->avail[b] += left;
			i += left - 1; /* on to the next bucket */
			continue;
		}
		if (fp == w->fp && !tk_st_is_special(st)) {
			sc->real = (int)i;
			sc->real_st = st;
			if (stop_at_real)
				return;
			continue;
		}
		if (fp == w->fp && mine_st != 0 && st == mine_st) {
			sc->mine = (int)i;
			continue;
		}
		if (fp == w->fp && tk_st_is_placeholder(st)) {
			sc->rival[sc->nrivals] = (int)i;
			sc->rival_st[sc->nrivals++] = st;
			continue;
		}
		if (tk_st_is_dead(st))
			kind = TK_FREE_DEAD;
		else if (!tk_st_is_special(st) &&
			 (t->wide ? tk_wide_is_idle(t, tk_window_index(w, i),
						    st, now) :
				    tk_algo_is_idle(&t->algo, st, now)))
			kind = TK_FREE_IDLE;
		else if (tk_st_is_placeholder(st)) {
			if (sc->ph < 0) {
				sc->ph = (int)i;
				sc->ph_fp = fp;
				sc->ph_st = st;
			}
			continue;
		} else if (t->wide) {
			/* W9: a live wide state is never evicted. */
			continue;
		} else {
			double debt = tk_algo_debt(&t->algo, st, now);
			if (sc->evict < 0 || debt < sc->evict_debt) {
				sc->evict = (int)i;
				sc->evict_fp = fp;
				sc->evict_st = st;
				sc->evict_debt = debt;
			}
			continue;
		}
		sc->avail[b]++;
		if (sc->free[b].pos < 0) {
			sc->free[b].pos = (int)i;
			sc->free[b].kind = kind;
			sc->free[b].fp = fp;
			sc->free[b].st = st;
		}
	}
}

/* Two choices: the takeable slot of the bucket with more room (ties go to
 * b0), which keeps both buckets of every window evenly filled. */
static const struct tk_free *
tk_pick_free(const struct tk_scan *sc)
{
	if (sc->free[0].pos < 0)
		return sc->free[1].pos < 0 ? NULL : &sc->free[1];
	if (sc->free[1].pos < 0 || sc->avail[0] >= sc->avail[1])
		return &sc->free[0];
	return &sc->free[1];
}

/* I8: merge an evicted state into its debt cell before the eviction CAS. */
static void
tk_debt_remember(struct tkshm_table *t, uint64_t fp, uint64_t st)
{
	uint64_t *cell = tk_debt_cell(t, fp);
	/* seq_cst (inside tk_cas64): an inserter that sees the eviction must
	 * see this merge, which precedes the eviction CAS in the total order. */
	uint64_t cur = tk_load_seq_cst(cell);

	for (;;) {
		uint64_t merged =
			cur == 0 || !tk_algo_state_valid(&t->algo, cur) ?
				st :
				tk_algo_debt_merge(&t->algo, cur, st);
		if (merged == cur || tk_cas64(cell, &cur, merged))
			return;
	}
}

/* The state an absent key starts from: remembered debt if still owed. */
static bool
tk_debt_recall(const struct tkshm_table *t, uint64_t fp, double now,
	       uint64_t *st)
{
	uint64_t v;

	if (t->wide)
		return false; /* W9: wide tables never evict */
	/* seq_cst: pairs with tk_debt_remember (see there). */
	v = tk_load_seq_cst(tk_debt_cell(t, fp));
	if (v == 0 || !tk_algo_state_valid(&t->algo, v) ||
	    tk_algo_is_idle(&t->algo, v, now))
		return false;
	*st = v;
	return true;
}

/* Decides a check of a key that is absent, or present with the one-word
 * state `st`; fills *nst for a one-word table.  A wide table's absent key
 * is decided on scratch words (its state is written by tk_wide_apply). */
static bool
tk_decide(const struct tkshm_table *t, bool present, uint64_t st, double now,
	  double cost, uint64_t *nst, tkshm_decision *out)
{
	if (t->wide) {
		uint64_t scratch[TK_ALGO_MAX_WORDS];
		return tk_algo_check_w(&t->algo, false, NULL, now, cost,
				       scratch, out);
	}
	return tk_algo_check(&t->algo, present, st, now, cost, nst, out);
}

/* Retires our placeholder (CAS -> DEAD); losing the CAS means somebody
 * already retired or reclaimed it, which is just as good. */
static void
tk_retire(const struct tkshm_table *t, const struct tk_where *w, int pos,
	  uint64_t st)
{
	(void)tk_cas128(tk_window_slot(t, w, pos), w->fp, st, w->fp,
			TK_ST_DEAD);
}

/* ------------------------------------------------------------------------
 * Check
 * ---------------------------------------------------------------------- */

/* A wide key's transition: the check's (op NULL), or an operation's (a
 * permit's, a carry's). */
static int
tk_wide_run(struct tkshm_table *t, const struct tk_where *w, int pos,
	    double now, double cost, tkshm_decision *out,
	    struct tk_commit *commit, const struct tk_wide_op *op)
{
	struct tk_wide_done done;

	if (!op)
		return tk_wide_apply(t, w, pos, now, cost, out, commit);
	return tk_wide_transition(t, w, pos, tk_carry_at(op, now), op->step,
				  op->ctx, &done);
}

/* Whether a key that is absent would be written: the check's decision
 * from the absent state (tk_decide), or the operation's own step. */
static bool
tk_absent_writes(const struct tkshm_table *t, bool present, uint64_t st,
		 double now, double cost, uint64_t *nst, tkshm_decision *out,
		 const struct tk_wide_op *op)
{
	uint64_t scratch[TK_ALGO_MAX_WORDS];

	if (!op)
		return tk_decide(t, present, st, now, cost, nst, out);
	if (op->step(op->ctx, t, 0, 0, false, NULL, scratch) != TK_STEP_WRITE)
		return false;
	/* A one-word table's operation (a carry, drain.c) writes its word
	 * as the key's first state. */
	*nst = scratch[0];
	return true;
}

/* The state an absent key starts from (I8, L5): its remembered debt, and
 * while this table drains a predecessor, its state there (sealed there by
 * the fetch, converted as it stands at tk_carry_at(op, now)).  1: *st is a state; 0: the key starts absent; TKSHM_EBUSY:
 * its state in the predecessor could not be read (nothing may be
 * decided).  *restored: the debt was used. */
static int
tk_absent_state(struct tkshm_table *t, uint64_t fp, double now,
		const struct tk_wide_op *op, uint64_t *st, bool *restored)
{
	bool present = tk_debt_recall(t, fp, now, st);
	uint64_t carried;
	int got;

	*restored = present;
	if (__builtin_expect(t->pred == NULL, 1) || t->wide)
		return present;
	got = tk_carry_fetch(t, fp, tk_carry_at(op, now), &carried);
	if (got < 0)
		return got;
	if (got > 0) {
		*st = present ? tk_algo_debt_merge(&t->algo, *st, carried) :
				carried;
		present = true;
	}
	return present;
}

static enum tk_step tk_carry_step(void *ctx, const struct tkshm_table *t,
				  uint64_t index, uint64_t ctl, bool present,
				  const uint64_t *cur, uint64_t *next);

/* Key fp of wide table t carried in from t's predecessor now (L5), its
 * state converted at convert_at: fetched (sealed there) and inserted
 * unless t has it already.  TKSHM_OK or an error of the fetch or the
 * insert (a full window included). */
static int
tk_carry_in(struct tkshm_table *t, const struct tk_keyref *k, uint64_t fp,
	    double convert_at)
{
	uint64_t words[TK_ALGO_MAX_WORDS];
	int got = tk_carry_fetch(t, fp, convert_at, words);

	if (got <= 0)
		return got;
	return tk_carry_insert(t, fp, words, k->label, k->label ? k->len : 0,
			       TK_DRAIN_NOW, convert_at);
}

/* ------------------------------------------------------------------------
 * The insert protocol (I6) around one transition
 * ---------------------------------------------------------------------- */

/* What the steps of tk_table_apply answer besides the call's own answer
 * (a TKSHM_* code or TK_EMOVED). */
enum {
	TK_REAL = -32100, /* the key's REAL slot is known: run the transition */
	TK_RESCAN,	  /* scan the window again (I6 b, or after a carry) */
	TK_LOST		  /* a race lost: count it, back off, scan again */
};

/* One call of tk_table_apply: its arguments and what its passes carry. */
struct tk_apply {
	struct tkshm_table *t;
	const struct tk_keyref *k;
	struct tk_where w;
	double cost, now;
	tkshm_decision *out;
	struct tk_commit *commit;
	const struct tk_wide_op *op; /* NULL: a check */
	unsigned retries;	     /* races lost */
	unsigned claims;	     /* placeholders claimed (I6 a) */
	uint64_t mine_st; /* our placeholder's state word, 0 = none */
	int mine_pos;	  /* its window position */
	uint32_t flags;	  /* decision flags met on the way (an eviction) */
	bool carried;	  /* carried in from the predecessor (L5) */
};

/* The key's REAL slot: its window position and the state read there. */
struct tk_real {
	int pos;
	uint64_t st;
};

/* The transition on the key's REAL slot (unique, I5), shared by checks and
 * operations: a wide key's (W2-W4, the check's or the operation's), a
 * one-word key's check (tk_check_present, the fast path's own); an
 * operation on a one-word table (a carry) finds the state it would have
 * written and leaves it.  TK_LOST when the slot stopped being the key's
 * or moved under the CAS; otherwise the call's answer. */
static int
tk_apply_on_real(struct tk_apply *a, const struct tk_real *real)
{
	if (a->t->wide) {
		int rc = tk_wide_run(a->t, &a->w, real->pos, a->now, a->cost,
				     a->out, a->commit, a->op);
		return rc == TK_WIDE_GONE ? TK_LOST : rc;
	}
	if (a->op)
		return TKSHM_OK; /* a carry finds a state */
	if (tk_check_present(a->t, &a->w, real->pos, real->st, a->cost, a->now,
			     a->flags, a->out, a->commit))
		return TKSHM_OK;
	return TK_LOST;
}

/* The decision from the absent state (I7). */
struct tk_absent {
	bool present;  /* the key starts from init_st, not from nothing */
	bool restored; /* init_st is its remembered debt (I8) */
	uint64_t init_st;
	uint64_t nst; /* what a one-word key's placeholder becomes */
};

/* Decides the call from the state the absent key starts from: 1 when it
 * would write something (*ab filled), 0 when it would not (a check's
 * denial, an operation with nothing to do), or an error of reading that
 * state (nothing may be decided).  Claims nothing in this table (reading
 * a predecessor's state seals the key there, L5). */
static int
tk_decide_absent(struct tk_apply *a, struct tk_absent *ab)
{
	int got = tk_absent_state(a->t, a->w.fp, a->now, a->op, &ab->init_st,
				  &ab->restored);

	if (got < 0)
		return got;
	ab->present = got > 0;
	return tk_absent_writes(a->t, ab->present, ab->init_st, a->now, a->cost,
				&ab->nst, a->out, a->op);
}

/* Ends a call whose absent key would not be written, holding no
 * placeholder for it (I7): a check's denial is counted, with the call's
 * flags (a restored debt's included); an operation has nothing to do. */
static int
tk_absent_declined(struct tk_apply *a, const struct tk_absent *ab)
{
	if (a->op)
		return TKSHM_OK; /* nothing to write */
	a->out->flags |=
		a->flags | (ab->restored ? TKSHM_DECISION_DEBT_RESTORED : 0);
	tk_count_decision(a->t, a->commit, false);
	return TKSHM_OK;
}

/* A slot to claim (I6 a): what it holds, and the counter taking it bumps
 * (TK_C_COUNT: none). */
struct tk_victim {
	int pos;
	uint64_t fp, st;
	enum tk_counter taken;
};

/* The victim of I6 a, in the order of I2 and I8: the takeable slot of the
 * emptier bucket (EMPTY, DEAD, or idle: a reclaim), a rival placeholder of
 * the key (stealing it retires it and claims in one CAS), another key's
 * placeholder, or, in a one-word table that evicts, the least-indebted
 * key, its debt remembered first (I8).  TKSHM_OK, TKSHM_EFULL (counted),
 * or TK_LOST when every slot changed class under the scan. */
static int
tk_pick_victim(struct tkshm_table *t, const struct tk_scan *sc, uint64_t fp,
	       struct tk_victim *v)
{
	const struct tk_free *f = tk_pick_free(sc);

	v->taken = TK_C_COUNT;
	if (f) {
		v->pos = f->pos;
		v->fp = f->fp;
		v->st = f->st;
		if (f->kind == TK_FREE_IDLE)
			v->taken = TK_C_RECLAIMS;
	} else if (sc->nrivals > 0) {
		v->pos = sc->rival[0];
		v->fp = fp;
		v->st = sc->rival_st[0];
	} else if (sc->ph >= 0) {
		v->pos = sc->ph;
		v->fp = sc->ph_fp;
		v->st = sc->ph_st;
	} else if (t->on_full == TKSHM_ON_FULL_REFUSE || t->wide) {
		/* W9: wide tables refuse instead of evicting. */
		tk_count(t, TK_C_REFUSALS, 1);
		return TKSHM_EFULL;
	} else if (sc->evict >= 0) {
		v->pos = sc->evict;
		v->fp = sc->evict_fp;
		v->st = sc->evict_st;
		v->taken = TK_C_EVICTIONS;
		/* I8: remember the debt before taking the slot. */
		tk_debt_remember(t, v->fp, v->st);
	} else {
		return TK_LOST; /* every slot changed class under us */
	}
	return TKSHM_OK;
}

/* I6 a: claims a victim slot as our placeholder {fp, PLACEHOLDER(tag)}.
 * TK_RESCAN once claimed (I6 b follows: the claim CAS is a full barrier,
 * so the rescan is ordered after it), TK_LOST when the CAS lost, or the
 * call's answer (TKSHM_EFULL; TK_EMOVED, L3, and TKSHM_EBUSY with the
 * placeholder retired). */
static int
tk_claim(struct tk_apply *a, const struct tk_scan *sc)
{
	struct tkshm_table *t = a->t;
	struct tk_victim v;
	uint64_t tag_st;
	int rc = tk_pick_victim(t, sc, a->w.fp, &v);

	if (rc != TKSHM_OK)
		return rc;
	tag_st = tk_st_placeholder(tk_new_tag());
	/* P4: a pair slot taken as idle is frozen ABSENT first, so that no
	 * admission lands in it after the idleness was read. */
	if (t->pairs && v.taken == TK_C_RECLAIMS &&
	    !tk_pair_reclaim(t, tk_window_index(&a->w, (unsigned)v.pos), v.fp,
			     v.st, a->now, tag_st & TK_ST_TAG_MASK))
		return TK_LOST;
	if (!tk_cas128(tk_window_slot(t, &a->w, v.pos), v.fp, v.st, a->w.fp,
		       tag_st))
		return TK_LOST;
	a->mine_st = tag_st;
	a->mine_pos = v.pos;
	/* L3: a table replaced since this call began takes no new key;
	 * seq_cst, after the claim (a full barrier), so a sealer's scan that
	 * follows REPLACED sees our placeholder and retires it if we miss
	 * REPLACED. */
	if (tk_load_seq_cst(&t->life->word) & TK_LIFE_REPLACED) {
		tk_retire(t, &a->w, a->mine_pos, a->mine_st);
		return TK_EMOVED;
	}
	if (++a->claims > TK_MAX_RETRIES) {
		/* Our placeholders keep being taken: bounded. */
		tk_retire(t, &a->w, a->mine_pos, a->mine_st);
		return TKSHM_EBUSY;
	}
	if (v.taken != TK_C_COUNT)
		tk_count(t, v.taken, 1);
	if (v.taken == TK_C_EVICTIONS && sc->evict_debt > 0) {
		tk_count(t, TK_C_EVICTIONS_IN_DEBT, 1);
		a->flags |= TKSHM_DECISION_EVICTED_DEBTOR;
	}
	return TK_RESCAN;
}

/* The key has no REAL slot and we hold no placeholder (ours, if we had
 * one, was retired or reclaimed): decide from the absent state, and claim
 * (I6 a) only if that writes something (a denial claims nothing, I7). */
static int
tk_insert_absent(struct tk_apply *a, const struct tk_scan *sc)
{
	struct tk_absent ab = { 0 };
	int rc;

	/* In a table replaced meanwhile, the key was sealed (L4): the call
	 * runs again on the replacement (L3), whatever it is (a permit's
	 * release must find its cell). */
	if (__builtin_expect((tk_life_load(a->t) & TK_LIFE_REPLACED) != 0, 0))
		return TK_EMOVED;
	if (__builtin_expect(a->t->pred != NULL, 0) && a->t->wide && a->op &&
	    a->op->step != tk_carry_step && !a->carried) {
		/* An operation that writes nothing from the absent state (a
		 * release, a reap) would miss the key's state still in the
		 * predecessor: carried in first (L5), then looked up again. */
		rc = tk_carry_in(a->t, a->k, a->w.fp,
				 tk_carry_at(a->op, a->now));
		if (rc != TKSHM_OK)
			return rc;
		a->carried = true;
		return TK_RESCAN;
	}
	/* Decide first: a request that would be denied even from the absent
	 * state claims nothing (I7). */
	rc = tk_decide_absent(a, &ab);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return tk_absent_declined(a, &ab);
	return tk_claim(a, sc);
}

/* I6 d: retires every rival placeholder of the key (CAS -> DEAD).  False
 * when one of those CASes failed (back to I6 b). */
static bool
tk_retire_rivals(struct tkshm_table *t, const struct tk_where *w,
		 const struct tk_scan *sc)
{
	bool all = true;

	for (unsigned r = 0; r < sc->nrivals; r++) {
		if (tk_cas128(tk_window_slot(t, w, sc->rival[r]), w->fp,
			      sc->rival_st[r], w->fp, TK_ST_DEAD))
			tk_count(t, TK_C_DUPLICATES_KILLED, 1);
		else
			all = false;
	}
	return all;
}

/* I6 e: makes our placeholder at window position `mine` REAL: a one-word
 * key with the state its check (or carry) writes, decided from the absent
 * state (so the insert and the transition are one CAS), a wide key FRESH.
 * TKSHM_OK (a one-word key: decided and counted), TK_REAL with *real (a
 * wide key: its transition comes next), or TK_LOST (somebody retired our
 * placeholder). */
static int
tk_make_real(struct tk_apply *a, int mine, struct tk_absent *ab,
	     struct tk_real *real)
{
	struct tkshm_table *t = a->t;
	uint64_t index = tk_window_index(&a->w, (unsigned)mine);
	uint64_t mine_st = a->mine_st;

	if (t->pairs) {
		/* P5: the key enters ABSENT under st = its tag. */
		int rc = tk_pair_fresh(t, index, a->w.fp, mine_st);

		if (rc != TKSHM_OK) {
			a->mine_st = 0;
			if (rc == TK_WIDE_GONE)
				return TK_LOST; /* a rival took it over */
			tk_retire(t, &a->w, mine, mine_st);
			return rc;
		}
		ab->nst = mine_st & TK_ST_TAG_MASK;
	} else if (t->wide) {
		/* W6: the key enters FRESH; its first transition is an
		 * ordinary claim. */
		ab->nst = tk_wide_fresh(t, index);
	}
	a->mine_st = 0; /* REAL after the CAS, or retired by somebody */
	if (!tk_cas128(tk_window_slot(t, &a->w, mine), a->w.fp, mine_st,
		       a->w.fp, ab->nst))
		return TK_LOST;
	tk_label_write(t, index, a->w.fp, a->k->label, a->k->len);
	if (t->wide) {
		tk_count(t, TK_C_INSERTS, 1);
		real->pos = mine;
		real->st = ab->nst;
		return TK_REAL;
	}
	/* The state decided from: the remembered debt when the key restarted
	 * from it, so a reservation's wait (src/shaper/reserve.c) and a
	 * give-back start there. */
	tk_commit_note(a->commit, a->w.fp, ab->present, ab->init_st, ab->nst);
	a->out->flags |=
		a->flags | (ab->restored ? TKSHM_DECISION_DEBT_RESTORED : 0);
	tk_count(t, TK_C_INSERTS, 1);
	if (ab->restored)
		tk_count(t, TK_C_DEBT_RESTORES, 1);
	tk_count_decision(t, a->commit, true);
	return TKSHM_OK;
}

/* We hold a placeholder of the key and the rescan (I6 b) found no REAL
 * slot: I6 d, then I6 e after deciding again from the absent state (it
 * may have changed since the claim: a debt remembered, a state carried);
 * a decision that now writes nothing retires the placeholder (I7). */
static int
tk_insert_finish(struct tk_apply *a, const struct tk_scan *sc,
		 struct tk_real *real)
{
	struct tk_absent ab = { 0 };
	int rc;

	if (!tk_retire_rivals(a->t, &a->w, sc))
		return TK_LOST;
	rc = tk_decide_absent(a, &ab);
	if (rc <= 0) {
		tk_retire(a->t, &a->w, sc->mine, a->mine_st);
		return rc < 0 ? rc : tk_absent_declined(a, &ab);
	}
	return tk_make_real(a, sc->mine, &ab, real);
}

/* One pass of the insert protocol (I6) over the key's window: TK_REAL with
 * the key's REAL slot in *real, found (the key is present, or another
 * insert of it won, I6 c: our placeholder is retired) or made (a wide key,
 * FRESH), or what the insert's next step answers (I6 a, or d-e). */
static int
tk_find_or_insert(struct tk_apply *a, struct tk_real *real)
{
	struct tk_scan sc;

	tk_scan(a->t, &a->w, a->now, a->mine_st, a->mine_st == 0, &sc);
	if (sc.real >= 0) {
		/* I5: this is the key's only REAL slot. */
		if (a->mine_st != 0 && sc.mine >= 0)
			tk_retire(a->t, &a->w, sc.mine, a->mine_st);
		a->mine_st = 0;
		real->pos = sc.real;
		real->st = sc.real_st;
		return TK_REAL;
	}
	if (a->mine_st != 0 && sc.mine >= 0)
		return tk_insert_finish(a, &sc, real);
	a->mine_st = 0; /* ours, if we had one, was retired or reclaimed */
	return tk_insert_absent(a, &sc);
}

/* After a lost race (another writer made progress): counts it and backs
 * off, or past TK_MAX_RETRIES gives up, retiring our placeholder if we
 * still hold one.  TKSHM_OK: scan again. */
static int
tk_apply_lost(struct tk_apply *a)
{
	if (++a->retries > TK_MAX_RETRIES) {
		if (a->mine_st != 0 && a->mine_pos >= 0)
			tk_retire(a->t, &a->w, a->mine_pos, a->mine_st);
		return TKSHM_EBUSY;
	}
	tk_count(a->t, TK_C_CAS_RETRIES, 1);
	tk_backoff(a->retries);
	return TKSHM_OK;
}

/* The insert protocol (I6) around one transition: the check's (op NULL)
 * or a wide table's operation (a permit's, a carry's).  Each pass finds
 * the key's REAL slot and runs the transition on it, or takes its insert
 * one step further; a key that is absent is inserted only when the
 * transition would write something from the absent state (a denial claims
 * nothing, I7).  `retries`: the races the caller already lost. */
static int
tk_table_apply(struct tkshm_table *t, const struct tk_keyref *k,
	       const struct tk_where *wp, double cost, double now,
	       tkshm_decision *out, struct tk_commit *commit, unsigned retries,
	       const struct tk_wide_op *op)
{
	struct tk_apply a = { .t = t,
			      .k = k,
			      .w = *wp,
			      .cost = cost,
			      .now = now,
			      .out = out,
			      .commit = commit,
			      .op = op,
			      .retries = retries,
			      .mine_pos = -1 };
	struct tk_real real = { -1, 0 }; /* filled with every TK_REAL */
	int rc;

	if (retries == 0 && t->wide) {
		/* A wide key's first try, as the one-word fast path's
		 * (table.h): its REAL slot looked up without a full scan.
		 * Losing it counts as a lost race, with no back-off. */
		real.pos = tk_find_real(t, &a.w, &real.st);
		if (real.pos >= 0) {
			rc = tk_apply_on_real(&a, &real);
			if (rc != TK_LOST)
				return rc;
			a.retries = 1;
		}
	}
	for (;;) {
		rc = tk_find_or_insert(&a, &real);
		if (rc == TK_REAL)
			rc = tk_apply_on_real(&a, &real);
		if (rc == TK_RESCAN)
			continue;
		if (rc != TK_LOST)
			return rc;
		rc = tk_apply_lost(&a);
		if (rc != TKSHM_OK)
			return rc;
	}
}

/* Everything but the uncontended update of a present one-word key: wide
 * keys, absent keys (insert, I6), lost CASes.  `retries` counts the CASes
 * the fast path already lost.  Kept out of line so that the fast path
 * compiles to a small leaf-like function. */
__attribute__((noinline)) int
tk_table_check_slow(struct tkshm_table *t, const struct tk_keyref *k,
		    const struct tk_where *wp, double cost, double now,
		    tkshm_decision *out, struct tk_commit *commit,
		    unsigned retries)
{
	return tk_table_apply(t, k, wp, cost, now, out, commit, retries, NULL);
}

int
tk_table_wide_op(struct tkshm_table *t, const struct tk_keyref *k, double now,
		 const struct tk_wide_op *op)
{
	struct tk_where w;
	tkshm_decision scratch = { 0 };

	tk_where_of(t, k->fp, &w);
	return tk_table_apply(t, k, &w, 1, now, &scratch, NULL, 0, op);
}

/* ------------------------------------------------------------------------
 * Peek and reset
 * ---------------------------------------------------------------------- */

int
tk_table_peek(struct tkshm_table *t, const void *key, size_t len, double now,
	      tkshm_decision *out)
{
	struct tk_where w;
	uint64_t st = 0;
	bool present;

	tk_where_of(t, tk_key_fp(t, key, len), &w);
	if (t->wide) {
		uint64_t words[TK_ALGO_MAX_WORDS];
		int rc = tk_wide_lookup(t, &w, words);

		if (rc < 0)
			return rc;
		tk_algo_peek_w(&t->algo, rc == 1, words, now, out);
		return TKSHM_OK;
	}
	if (tk_find_real(t, &w, &st) >= 0) {
		tk_algo_peek(&t->algo, true, st, now, out);
		return TKSHM_OK;
	}
	present = tk_debt_recall(t, w.fp, now, &st);
	tk_algo_peek(&t->algo, present, st, now, out);
	if (present)
		out->flags |= TKSHM_DECISION_DEBT_RESTORED;
	return TKSHM_OK;
}

/* tk_table_decide of a wide key: a check commits it (dd[i].found false). */
static int
tk_table_decide_wide(struct tkshm_table *t, const struct tk_where *w,
		     double now, const double *cost, size_t m,
		     tkshm_decision *out, struct tk_decided *dd)
{
	uint64_t a[TK_ALGO_MAX_WORDS], b[TK_ALGO_MAX_WORDS];
	uint64_t *cur = a, *next = b, *swap;
	int rc = tk_wide_lookup(t, w, cur);
	bool present = rc == 1;

	if (rc < 0)
		return rc;
	for (size_t i = 0; i < m; i++) {
		dd[i].found = false;
		if (!tk_algo_check_w(&t->algo, present, cur, now, cost[i], next,
				     &out[i]))
			break;
		/* The next check is decided on what this one would leave. */
		swap = cur;
		cur = next;
		next = swap;
		present = true;
	}
	return TKSHM_OK;
}

int
tk_table_decide(struct tkshm_table *t, uint64_t fp, double now,
		const double *cost, size_t m, tkshm_decision *out,
		struct tk_decided *dd)
{
	struct tk_where w;
	uint64_t st = 0, nst = 0;
	bool present, restored = false;
	int pos;

	tk_where_of(t, fp, &w);
	if (t->wide)
		return tk_table_decide_wide(t, &w, now, cost, m, out, dd);
	pos = tk_find_real(t, &w, &st);
	present = pos >= 0;
	if (!present)
		present = restored = tk_debt_recall(t, w.fp, now, &st);
	for (size_t i = 0; i < m; i++) {
		bool admits = tk_algo_check(&t->algo, present, st, now, cost[i],
					    &nst, &out[i]);

		if (restored && i == 0)
			out[i].flags |= TKSHM_DECISION_DEBT_RESTORED;
		/* The transition is pure: while the slot still holds {fp, st},
		 * a check would write exactly nst (tk_table_commit). */
		dd[i].found = admits && pos >= 0;
		if (!admits)
			break;
		if (pos >= 0) {
			dd[i].index = tk_window_index(&w, (unsigned)pos);
			dd[i].st = st;
			dd[i].nst = nst;
		}
		/* The next check is decided on what this one would leave. */
		st = nst;
		present = true;
	}
	return TKSHM_OK;
}

bool
tk_table_commit(struct tkshm_table *t, uint64_t fp, const struct tk_decided *dd,
		struct tk_commit *commit)
{
	if (!dd->found)
		return false;
	/* Before anything is written: see tk_table_refund. */
	commit->epoch = tk_table_epoch(t);
	if (!tk_cas128(tk_slot_at(t, dd->index), fp, dd->st, fp, dd->nst))
		return false;
	tk_commit_note(commit, fp, true, dd->st, dd->nst);
	tk_count_decision(t, commit, true);
	return true;
}

int
tk_table_forecast(struct tkshm_table *t, const void *key, size_t len,
		  double cost, double now, tkshm_forecast *out)
{
	struct tk_where w;
	uint64_t words[TK_ALGO_MAX_WORDS];
	struct tk_forecast f;
	bool present;

	tk_where_of(t, tk_key_fp(t, key, len), &w);
	if (t->wide) {
		int rc = tk_wide_lookup(t, &w, words);

		if (rc < 0)
			return rc;
		present = rc == 1;
	} else {
		present = tk_find_real(t, &w, &words[0]) >= 0 ||
			  tk_debt_recall(t, w.fp, now, &words[0]);
	}
	tk_algo_forecast(&t->algo, present, words, now, cost, &f);
	out->spendable_now = f.spendable_now;
	out->next_replenish_at = f.next_replenish_at;
	out->full_at = f.full_at;
	return TKSHM_OK;
}

uint64_t
tk_table_epoch(const struct tkshm_table *t)
{
	/* seq_cst: pairs with the increment in tk_table_reset (see there). */
	return tk_load_seq_cst(&t->shards[TK_EPOCH_SHARD].c[TK_EPOCH_WORD]);
}

int
tk_table_refund(struct tkshm_table *t, const struct tk_commit *c, double cost,
		double now_r)
{
	struct tk_where w;
	unsigned retries = 0;

	tk_where_of(t, c->fp, &w);
	for (;;) {
		uint64_t st, back;
		int pos = tk_find_real(t, &w, &st);

		if (pos < 0)
			return TKSHM_OK; /* reclaimed, evicted or reset since */
		/* Read after the slot: a reset bumps the epoch before it
		 * clears the key, so a state written after a reset is seen
		 * together with the new epoch.  The reset forgave everything:
		 * there is nothing of ours left to give back. */
		if (tk_table_epoch(t) != c->epoch)
			return TKSHM_OK;
		if (t->wide)
			return tk_wide_refund(t, &w, pos, c, cost);
		if (st == c->next)
			/* Nobody moved it: restore exactly (DEAD = absent). */
			back = c->prev_present ? c->prev : TK_ST_DEAD;
		else
			back = tk_algo_refund(&t->algo, st, c->next, cost,
					      now_r);
		if (back == st)
			return TKSHM_OK; /* nothing of ours is still owed */
		if (tk_cas128(tk_window_slot(t, &w, pos), w.fp, st, w.fp,
			      back)) {
			tk_count(t, TK_C_MULTI_ROLLBACKS, 1);
			return TKSHM_OK;
		}
		if (++retries > TK_MAX_RETRIES)
			return TKSHM_EBUSY;
		tk_count(t, TK_C_CAS_RETRIES, 1);
		tk_backoff(retries);
	}
}

int
tk_table_reset(struct tkshm_table *t, const void *key, size_t len)
{
	struct tk_where w;
	unsigned retries = 0;

	tk_where_of(t, tk_key_fp(t, key, len), &w);
	/* seq_cst, and before the key is cleared: a give-back that sees a
	 * state written after this reset also sees the new epoch. */
	(void)tk_fetch_add_seq_cst(&t->shards[TK_EPOCH_SHARD].c[TK_EPOCH_WORD],
				   1);
	for (;;) {
		uint64_t st;
		int pos = tk_find_real(t, &w, &st);

		if (pos < 0)
			break;
		if (t->pairs) {
			/* P6: the pair ABSENT, the slot the key's still. */
			int rc = tk_pair_reset(
				t, tk_window_index(&w, (unsigned)pos), w.fp,
				st);

			if (rc == TKSHM_OK)
				break;
			if (rc != TK_WIDE_GONE)
				return rc;
		} else if (tk_cas128(tk_window_slot(t, &w, pos), w.fp, st, w.fp,
				     TK_ST_DEAD)) {
			/* I4: DEAD is equivalent to absent: the key starts
			 * fresh. */
			break;
		}
		if (++retries > TK_MAX_RETRIES)
			return TKSHM_EBUSY;
		tk_count(t, TK_C_CAS_RETRIES, 1);
		tk_backoff(retries);
	}
	/* I9: reset is the one writer that lowers a debt cell.  seq_cst so an
	 * inserter that sees the reset slot also sees the cleared cell. */
	tk_store_seq_cst(tk_debt_cell(t, w.fp), 0);
	tk_count(t, TK_C_RESETS, 1);
	return TKSHM_OK;
}

/* ------------------------------------------------------------------------
 * Inserting a carried key's state (protocol.h L5, L6: drain.c and the
 * wide keys above)
 * ---------------------------------------------------------------------- */

struct tk_carry_ctx {
	const uint64_t *words;
	unsigned n;
};

/* Writes the carried words where the key has no state; a wide key that
 * has one (its own, or fetched from the predecessor, which is the same
 * sealed state) is republished unchanged, which admits nothing. */
static enum tk_step
tk_carry_step(void *ctx, const struct tkshm_table *t, uint64_t index,
	      uint64_t ctl, bool present, const uint64_t *cur, uint64_t *next)
{
	const struct tk_carry_ctx *c = ctx;

	(void)t;
	(void)index;
	(void)ctl;
	memcpy(next, present ? cur : c->words, sizeof(uint64_t) * c->n);
	return TK_STEP_WRITE;
}

int
tk_carry_insert(struct tkshm_table *n, uint64_t fp, const uint64_t *words,
		const void *label, size_t len, double now, double convert_at)
{
	struct tk_carry_ctx c = { words, n->algo.words };
	struct tk_wide_op op = { tk_carry_step, &c, convert_at };
	struct tk_keyref k = { fp, label, len };
	struct tk_where w;
	tkshm_decision scratch = { 0 };

	int rc;

	tk_where_of(n, fp, &w);
	rc = tk_table_apply(n, &k, &w, 1, now, &scratch, NULL, 0, &op);
	if (rc == TKSHM_EFULL && !n->wide) {
		/* No room in its window: remembered as an evicted key's
		 * debt is (I8), so the key does not start afresh. */
		tk_debt_remember(n, fp, words[0]);
		rc = TKSHM_OK;
	}
	return rc;
}
