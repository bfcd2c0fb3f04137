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
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "algorithms/forecast.h"
#include "shm/atomic.h"
#include "shm/protocol.h"
#include "shm/carry.h"
#include "shm/life.h"
#include "shm/table.h"
#include "shm/wide.h"

/* ------------------------------------------------------------------------
 * Placeholder tags: unique per insert attempt (I6 relies on it).
 * A tag is a 22-bit random process id and a 29-bit per-process counter.
 * ---------------------------------------------------------------------- */

static uint64_t tk_proc_id;	/* 0 = not drawn yet in this process */
static uint64_t tk_tag_counter; /* per process */

static void tk_after_fork_child(void);

__attribute__((constructor)) static void
tk_table_init_once(void)
{
	/* A child must draw a new process id, or its tags would repeat its
	 * parent's.  pthread_atfork cannot fail here except for ENOMEM; the
	 * fallback is the pid mixed in below. */
	(void)pthread_atfork(NULL, NULL, tk_after_fork_child);
}

static uint64_t
tk_draw_proc_id(void)
{
	uint64_t r = 0;

	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
		r = (uint64_t)getpid() * UINT64_C(0x9E3779B97F4A7C15);
	r ^= (uint64_t)getpid() << 7;
	r &= (UINT64_C(1) << 22) - 1;
	return r ? r : 1;
}

static uint64_t
tk_new_tag(void)
{
	/* Relaxed: the id only needs to be some value drawn in this process;
	 * a race between threads drawing it twice is harmless. */
	uint64_t id = tk_priv_load_relaxed(&tk_proc_id);
	uint64_t n;

	if (id == 0) {
		id = tk_draw_proc_id();
		tk_priv_store_relaxed(&tk_proc_id, id);
	}
	/* Relaxed: uniqueness comes from the atomicity of the add alone. */
	n = tk_priv_fetch_add_relaxed(&tk_tag_counter, 1);
	return id << 29 | (n & ((UINT64_C(1) << 29) - 1));
}

/* Counter shards: one per thread, drawn lazily (I11). */
_Thread_local uint32_t tk_tls_shard;

static void
tk_after_fork_child(void)
{
	/* Relaxed: the child is single-threaded here. */
	tk_priv_store_relaxed(&tk_proc_id, 0);
	tk_tls_shard = 0;
}

uint32_t
tk_shard_draw(void)
{
	uint32_t r = 0;

	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
		r = (uint32_t)getpid() * 2654435761u;
	/* The last shard holds the reset epoch (layout.h). */
	tk_tls_shard = r % (TK_SHARDS - 1) + 1;
	return tk_tls_shard;
}

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

void
tk_backoff(unsigned retries)
{
	if (retries > 64) {
		sched_yield();
		return;
	}
	for (unsigned i = 0; i < (1u << (retries < 8 ? retries : 8)); i++)
		tk_cpu_relax();
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

/* Everything but the uncontended update of a present one-word key: wide
 * keys, absent keys (insert, I6), lost CASes.  `retries` counts the CASes
 * the fast path already lost.  Kept out of line so that the fast path
 * compiles to a small leaf-like function. */
/* A wide key's transition: the check's, or a permit operation's. */
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
	/* A one-word table's operation (a carry, carry.c) writes its word
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

static int tk_table_apply(struct tkshm_table *t, const struct tk_keyref *k,
			  const struct tk_where *wp, double cost, double now,
			  tkshm_decision *out, struct tk_commit *commit,
			  unsigned retries, const struct tk_wide_op *op);

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

/* The insert protocol (I6) around one transition: the check's (op NULL)
 * or a wide table's permit operation.  A key that is absent is inserted
 * only when the transition would write something from the absent state
 * (a denial claims nothing, I7). */
static int
tk_table_apply(struct tkshm_table *t, const struct tk_keyref *k,
	       const struct tk_where *wp, double cost, double now,
	       tkshm_decision *out, struct tk_commit *commit, unsigned retries,
	       const struct tk_wide_op *op)
{
	const struct tk_where w = *wp;
	const void *key = k->label;
	size_t len = k->len;
	struct tk_scan sc;
	uint64_t mine_st = 0; /* our placeholder's state word, 0 = none */
	int mine_pos = -1;
	uint32_t flags = 0;
	unsigned claims = 0;
	bool carried = false; /* carried in from the predecessor (L5) */

	if (retries == 0 && t->wide) {
		uint64_t ctl;
		int pos = tk_find_real(t, &w, &ctl);

		if (pos >= 0) {
			int rc = tk_wide_run(t, &w, pos, now, cost, out, commit,
					     op);
			if (rc != TK_WIDE_GONE)
				return rc;
			retries = 1;
		}
	}

	for (;;) {
		uint64_t nst, init_st = 0, mine_index;
		bool present, restored;
		int got;

		tk_scan(t, &w, now, mine_st, mine_st == 0, &sc);

		if (sc.real >= 0) {
			/* I5: this is the key's only REAL slot. */
			if (mine_st != 0 && sc.mine >= 0)
				tk_retire(t, &w, sc.mine, mine_st);
			mine_st = 0;
			if (t->wide) {
				int rc = tk_wide_run(t, &w, sc.real, now, cost,
						     out, commit, op);
				if (rc != TK_WIDE_GONE)
					return rc;
				goto lost;
			}
			if (op)
				return TKSHM_OK; /* a carry finds a state */
			if (!tk_algo_check(&t->algo, true, sc.real_st, now,
					   cost, &nst, out)) {
				/* I7: a denial writes nothing. */
				out->flags |= flags;
				tk_count_decision(t, commit, false);
				tk_denial_note(
					t,
					tk_window_index(&w, (unsigned)sc.real));
				return TKSHM_OK;
			}
			if (tk_cas128(tk_window_slot(t, &w, sc.real), w.fp,
				      sc.real_st, w.fp, nst)) {
				tk_commit_note(commit, w.fp, true, sc.real_st,
					       nst);
				out->flags |= flags;
				tk_count_decision(t, commit, true);
				return TKSHM_OK;
			}
			goto lost;
		}

		if (mine_st != 0 && sc.mine >= 0) {
			/* I6 d: retire every rival placeholder of this key. */
			bool all = true;
			for (unsigned r = 0; r < sc.nrivals; r++) {
				if (tk_cas128(
					    tk_window_slot(t, &w, sc.rival[r]),
					    w.fp, sc.rival_st[r], w.fp,
					    TK_ST_DEAD))
					tk_count(t, TK_C_DUPLICATES_KILLED, 1);
				else
					all = false;
			}
			if (!all)
				goto lost;
			/* I6 e: make our placeholder REAL. */
			got = tk_absent_state(t, w.fp, now, op, &init_st,
					      &restored);
			if (got < 0) {
				tk_retire(t, &w, sc.mine, mine_st);
				return got;
			}
			present = got > 0;
			if (!tk_absent_writes(t, present, init_st, now, cost,
					      &nst, out, op)) {
				tk_retire(t, &w, sc.mine, mine_st);
				if (op)
					return TKSHM_OK;
				out->flags |=
					flags |
					(restored ?
						 TKSHM_DECISION_DEBT_RESTORED :
						 0);
				tk_count_decision(t, commit, false);
				return TKSHM_OK;
			}
			mine_index = tk_window_index(&w, (unsigned)sc.mine);
			if (t->wide)
				/* W6: the key enters FRESH; its first
				 * transition is an ordinary claim. */
				nst = tk_wide_fresh(t, mine_index);
			if (tk_cas128(tk_window_slot(t, &w, sc.mine), w.fp,
				      mine_st, w.fp, nst)) {
				tk_label_write(t, mine_index, w.fp, key, len);
				if (t->wide) {
					int rc;

					tk_count(t, TK_C_INSERTS, 1);
					mine_st = 0;
					rc = tk_wide_run(t, &w, sc.mine, now,
							 cost, out, commit, op);
					if (rc != TK_WIDE_GONE)
						return rc;
					goto lost;
				}
				/* The state decided from: the remembered
				 * debt when the key restarted from it, so
				 * a reservation's wait (src/shaper/
				 * reserve.c) and a give-back start there. */
				tk_commit_note(commit, w.fp, present, init_st,
					       nst);
				out->flags |=
					flags |
					(restored ?
						 TKSHM_DECISION_DEBT_RESTORED :
						 0);
				tk_count(t, TK_C_INSERTS, 1);
				if (restored)
					tk_count(t, TK_C_DEBT_RESTORES, 1);
				tk_count_decision(t, commit, true);
				return TKSHM_OK;
			}
			mine_st = 0;
			goto lost;
		}
		/* Our placeholder, if we had one, was retired or reclaimed. */
		mine_st = 0;

		/* The key is absent.  In a table replaced meanwhile, it was
		 * sealed (L4): the call runs again on the replacement (L3),
		 * whatever it is (a permit's release must find its cell). */
		if (__builtin_expect((tk_life_load(t) & TK_LIFE_REPLACED) != 0,
				     0))
			return TK_EMOVED;
		if (__builtin_expect(t->pred != NULL, 0) && t->wide && op &&
		    op->step != tk_carry_step && !carried) {
			/* An operation that writes nothing from the absent
			 * state (a release, a reap) would miss the key's
			 * state still in the predecessor: carried in first
			 * (L5), then looked up again. */
			int rc = tk_carry_in(t, k, w.fp, tk_carry_at(op, now));

			if (rc != TKSHM_OK)
				return rc;
			carried = true;
			continue;
		}
		/* Decide first: a request that would be denied even from the
		 * absent state claims nothing (I7). */
		got = tk_absent_state(t, w.fp, now, op, &init_st, &restored);
		if (got < 0)
			return got;
		present = got > 0;
		if (!tk_absent_writes(t, present, init_st, now, cost, &nst, out,
				      op)) {
			if (op)
				return TKSHM_OK; /* nothing to write */
			out->flags |=
				flags |
				(restored ? TKSHM_DECISION_DEBT_RESTORED : 0);
			tk_count_decision(t, commit, false);
			return TKSHM_OK;
		}

		/* I6 a: claim a victim, in the order of I2 and I8. */
		{
			uint64_t vfp, vst, tag_st;
			int v;
			enum tk_counter taken = TK_C_COUNT;

			const struct tk_free *f = tk_pick_free(&sc);

			if (f) {
				v = f->pos;
				vfp = f->fp;
				vst = f->st;
				if (f->kind == TK_FREE_IDLE)
					taken = TK_C_RECLAIMS;
			} else if (sc.nrivals > 0) {
				/* Stealing a rival placeholder of our own key
				 * retires it and claims in one CAS. */
				v = sc.rival[0];
				vfp = w.fp;
				vst = sc.rival_st[0];
			} else if (sc.ph >= 0) {
				v = sc.ph;
				vfp = sc.ph_fp;
				vst = sc.ph_st;
			} else if (t->on_full == TKSHM_ON_FULL_REFUSE ||
				   t->wide) {
				/* W9: wide tables refuse instead of evicting. */
				tk_count(t, TK_C_REFUSALS, 1);
				return TKSHM_EFULL;
			} else if (sc.evict >= 0) {
				v = sc.evict;
				vfp = sc.evict_fp;
				vst = sc.evict_st;
				taken = TK_C_EVICTIONS;
				/* I8: remember the debt before taking the slot. */
				tk_debt_remember(t, vfp, vst);
			} else {
				/* Every slot changed class under us. */
				goto lost;
			}
			tag_st = tk_st_placeholder(tk_new_tag());
			if (!tk_cas128(tk_window_slot(t, &w, v), vfp, vst, w.fp,
				       tag_st))
				goto lost;
			mine_st = tag_st;
			mine_pos = v;
			/* L3: a table replaced since this call began takes no
			 * new key; seq_cst, after the claim (a full barrier),
			 * so a sealer's scan that follows REPLACED sees our
			 * placeholder and retires it if we miss REPLACED. */
			if (tk_load_seq_cst(&t->life->word) &
			    TK_LIFE_REPLACED) {
				tk_retire(t, &w, mine_pos, mine_st);
				return TK_EMOVED;
			}
			if (++claims > TK_MAX_RETRIES) {
				/* Our placeholders keep being taken: bounded. */
				tk_retire(t, &w, mine_pos, mine_st);
				return TKSHM_EBUSY;
			}
			if (taken != TK_C_COUNT)
				tk_count(t, taken, 1);
			if (taken == TK_C_EVICTIONS && sc.evict_debt > 0) {
				tk_count(t, TK_C_EVICTIONS_IN_DEBT, 1);
				flags |= TKSHM_DECISION_EVICTED_DEBTOR;
			}
			/* I6 b: rescan (the claim CAS was a full barrier). */
			continue;
		}
lost:
		if (++retries > TK_MAX_RETRIES) {
			if (mine_st != 0 && mine_pos >= 0)
				tk_retire(t, &w, mine_pos, mine_st);
			return TKSHM_EBUSY;
		}
		tk_count(t, TK_C_CAS_RETRIES, 1);
		tk_backoff(retries);
	}
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
			tk_count(t, TK_C_REFUNDS, 1);
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
		/* I4: DEAD is equivalent to absent, so the key starts fresh. */
		if (tk_cas128(tk_window_slot(t, &w, pos), w.fp, st, w.fp,
			      TK_ST_DEAD))
			break;
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
 * Carrying a replaced table's key in (carry.c, protocol.h L6)
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
