/*
 * wide.h - states wider than one word: control words, records and units.
 *
 * The protocol (W1..W9) is written in protocol.h beside the slot protocol;
 * this header only encodes it.  A wide table's REAL st is a control word;
 * the state itself is in the slot's wide area (layout.h), read and written
 * by wide.c (transitions) and wide_read.c (published records).
 */
#ifndef TKSHM_SHM_WIDE_H
#define TKSHM_SHM_WIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/table.h"

#define TK_WIDE_FRESH	(UINT64_C(1) << 62)
#define TK_WIDE_ACTIVE	(UINT64_C(1) << 61)
#define TK_WIDE_D_SHIFT 40
#define TK_WIDE_D_MAX	((UINT64_C(1) << 21) - 1)
#define TK_WIDE_G_MASK	((UINT64_C(1) << 40) - 1)
/* W6: the gap between one occupant's floor and the next one's F; above
 * every claim number, so no past occupant's target reaches F (W7). */
#define TK_WIDE_SPACING (UINT64_C(1) << 22)
_Static_assert(TK_WIDE_SPACING > TK_WIDE_D_MAX + 1, "W7 needs the gap");

static inline bool
tk_ctl_fresh(uint64_t c)
{
	return (c & TK_WIDE_FRESH) != 0;
}

static inline unsigned
tk_ctl_active(uint64_t c)
{
	return (c & TK_WIDE_ACTIVE) ? 1u : 0u;
}

static inline uint64_t
tk_ctl_claim(uint64_t c)
{
	return (c >> TK_WIDE_D_SHIFT) & TK_WIDE_D_MAX;
}

static inline uint64_t
tk_ctl_g40(uint64_t c)
{
	return c & TK_WIDE_G_MASK;
}

static inline uint64_t
tk_ctl_make(bool fresh, unsigned active, uint64_t claim, uint64_t gen)
{
	return (fresh ? TK_WIDE_FRESH : 0) | (active ? TK_WIDE_ACTIVE : 0) |
	       (claim & TK_WIDE_D_MAX) << TK_WIDE_D_SHIFT |
	       (gen & TK_WIDE_G_MASK);
}

/* A word that may be a control word: bit 63 clear (so never special, I4). */
static inline bool
tk_ctl_valid(uint64_t c)
{
	return (c >> 63) == 0;
}

/* The units of record `rec` (0 or 1) of slot `index`, and its floor.  The
 * index is a slot index of this table (< nbuckets * 4), so both lie inside
 * the wide area the header validated (I10). */
static inline struct tk_unit *
tk_wide_record(const struct tkshm_table *t, uint64_t index, unsigned rec)
{
	uint8_t *area = t->wide + index * t->wide_stride;
	return (struct tk_unit *)(area + sizeof(struct tk_wide_head)) +
	       (uint64_t)rec * t->wide_units;
}

static inline uint64_t *
tk_wide_floor(const struct tkshm_table *t, uint64_t index)
{
	return &((struct tk_wide_head *)(t->wide + index * t->wide_stride))
			->floor;
}

/* Reads one unit whole: gen, value, gen again.  Equal gens mean the value
 * is the one written with that gen: each claimant writes a unit once and
 * gens only grow (W1), so a gen never comes back. */
static inline void
tk_unit_read(const struct tk_unit *u, uint64_t *gen, uint64_t *val)
{
	for (;;) {
		/* seq_cst: the value load stays between the two gen loads
		 * (a plain MOV each on x86-64). */
		uint64_t g = tk_load_seq_cst(&u->gen);
		uint64_t v = tk_load_seq_cst(&u->val);
		if (tk_load_seq_cst(&u->gen) == g) {
			*gen = g;
			*val = v;
			return;
		}
		tk_cpu_relax();
	}
}

/* What a read of a slot's published state found (W5; wide_read.c). */
enum tk_wide_read {
	TK_WIDE_ABSENT,	 /* FRESH: the state equals absent */
	TK_WIDE_PRESENT, /* words[] hold the state of generation *gen */
	TK_WIDE_TORN,	 /* the record moved under us: read again */
	TK_WIDE_INVALID	 /* consistent but not a valid state: corrupt */
};

enum tk_wide_read tk_wide_snapshot(const struct tkshm_table *t, uint64_t index,
				   uint64_t ctl, uint64_t *words,
				   uint64_t *gen);

/* True when the published state of slot `index` (control `ctl`) is idle at
 * `now` or FRESH (W9); a torn or invalid read is not idle. */
bool tk_wide_is_idle(const struct tkshm_table *t, uint64_t index, uint64_t ctl,
		     double now);

/* W6: raises the slot's floor and returns the FRESH control word an insert
 * makes REAL.  Call only while holding a placeholder in the slot. */
uint64_t tk_wide_fresh(struct tkshm_table *t, uint64_t index);

/* tk_wide_apply's answer when the slot no longer holds the key. */
#define TK_WIDE_GONE 1

/* One transition of a wide key (W2-W4), generic over what it computes:
 * `step` sees the published state (`present` false: FRESH, i.e. absent)
 * and says what to do with it.  It may be called several times (after a
 * lost race); the last call's answer is the one that took effect. */
enum tk_step {
	TK_STEP_NONE,	/* write nothing: done */
	TK_STEP_WRITE,	/* publish the words it filled */
	TK_STEP_ABSENT, /* make the key absent (DEAD, I4) */
};
typedef enum tk_step (*tk_step_fn)(void *ctx, const struct tkshm_table *t,
				   uint64_t index, uint64_t ctl, bool present,
				   const uint64_t *cur, uint64_t *next);

/* What a transition replaced and wrote, for a give-back (tk_commit). */
struct tk_wide_done {
	bool wrote;
	bool prev_present;
	uint64_t prev, next; /* control words (a pair's: its occupancy) */
	struct tk_pair pair_prev, pair_next; /* a pair's bytes (P6) */
};

/* Runs `step` on the key whose REAL slot is at window position `pos`;
 * a FRESH key of a draining table starts from its state in the
 * predecessor, converted as it stands at `now` (L5).
 * TKSHM_OK (done->wrote says whether it published), TK_WIDE_GONE,
 * TKSHM_EBUSY or TKSHM_ECORRUPT. */
int tk_wide_transition(struct tkshm_table *t, const struct tk_where *w, int pos,
		       double now, tk_step_fn step, void *ctx,
		       struct tk_wide_done *done);

/* A transition other than a check (permits, src/shaper/permit.c), for
 * tk_table_wide_op. */
struct tk_wide_op {
	tk_step_fn step;
	void *ctx;
	/* The time a state carried from a predecessor converts at (L5),
	 * for an operation whose `now` is not the key's time (a drain's
	 * insert); 0: the operation's now. */
	double convert_at;
};

/* The time a carried state converts at, for operation op (or a check,
 * op NULL) at `now`. */
static inline double
tk_carry_at(const struct tk_wide_op *op, double now)
{
	return op && op->convert_at > 0 ? op->convert_at : now;
}

/* One check of the key whose REAL slot is at window position `pos`: W2-W4.
 * Returns TKSHM_OK with *out decided (and counted), TK_WIDE_GONE when the
 * slot stopped being the key's (look it up again), TKSHM_EBUSY or
 * TKSHM_ECORRUPT. */
int tk_wide_apply(struct tkshm_table *t, const struct tk_where *w, int pos,
		  double now, double cost, tkshm_decision *out,
		  struct tk_commit *commit);

/* Gives back an admission of `cost` recorded in *c, for the key whose
 * REAL slot is at `pos` (tk_table_refund has checked the reset epoch). */
int tk_wide_refund(struct tkshm_table *t, const struct tk_where *w, int pos,
		   const struct tk_commit *c, double cost);

/* Publishes `words` as the state of the key whose REAL slot is at `pos`,
 * whatever it was (an operator's set).  TKSHM_OK, TK_WIDE_GONE, or an
 * error as tk_wide_apply. */
int tk_wide_replace(struct tkshm_table *t, const struct tk_where *w, int pos,
		    const uint64_t *words);

/* The key's published state (W5): 1 with words[] filled, 0 absent, or a
 * negative error (TKSHM_EBUSY, TKSHM_ECORRUPT). */
int tk_wide_lookup(const struct tkshm_table *t, const struct tk_where *w,
		   uint64_t *words);

/* tkshm_verify's checks of one REAL wide slot {fp, ctl}: the control word is one,
 * its active record is consistent and valid (W5), and no unit carries a
 * generation beyond the claims the control allows (W2, W7).  0 when fine,
 * else 1 with a sentence in why. */
int tk_wide_verify_slot(const struct tkshm_table *t, uint64_t index,
			uint64_t fp, uint64_t ctl, char *why, size_t len);

/* Pair tables (pair.c, protocol.h P1-P9): the entry points above hand
 * them to these. */
enum tk_wide_read tk_pair_snapshot(const struct tkshm_table *t, uint64_t index,
				   uint64_t ctl, uint64_t *words);

/* P1: loads the pair of slot `index` into *p while the slot holds
 * {fp, c}: false when the slot changed around the load (read again). */
bool tk_pair_read_under(const struct tkshm_table *t, uint64_t index,
			uint64_t fp, uint64_t c, struct tk_pair *p);

/* The state words of pair p read under occupancy c: TK_WIDE_PRESENT,
 * TK_WIDE_ABSENT, or TK_WIDE_INVALID (no valid state; a sealed pair under
 * a slot that is not sealed). */
enum tk_wide_read tk_pair_words(const struct tkshm_table *t, uint64_t c,
				struct tk_pair p, bool sealed_slot,
				uint64_t *words);
int tk_pair_transition(struct tkshm_table *t, const struct tk_where *w, int pos,
		       double now, tk_step_fn step, void *ctx,
		       struct tk_wide_done *done);
int tk_pair_refund(struct tkshm_table *t, const struct tk_where *w, int pos,
		   const struct tk_commit *c, double cost);

/* P5: the pair of slot `index`, which holds our placeholder {fp,
 * mine_st}, made ABSENT(tag of mine_st): the key's state once the
 * placeholder becomes REAL with st = that tag.  TKSHM_OK, TK_WIDE_GONE
 * (the placeholder is no longer ours), TKSHM_ECORRUPT (an OPEN pair under
 * our placeholder, P2) or TKSHM_EBUSY. */
int tk_pair_fresh(struct tkshm_table *t, uint64_t index, uint64_t fp,
		  uint64_t mine_st);

/* P4: freezes the pair of slot {fp, c} to ABSENT(tag) if it is idle at
 * `now`; the caller's slot CAS to PLACEHOLDER(tag) comes next. */
bool tk_pair_reclaim(struct tkshm_table *t, uint64_t index, uint64_t fp,
		     uint64_t c, double now, uint64_t tag);

/* P6: the key at slot {fp, c} made absent.  TKSHM_OK, TK_WIDE_GONE (the
 * slot changed: look again) or TKSHM_ECORRUPT. */
int tk_pair_reset(struct tkshm_table *t, uint64_t index, uint64_t fp,
		  uint64_t c);

/* P7: the state of the sealed slot `index`, frozen first.  False when
 * absent or unreadable. */
bool tk_pair_sealed_words(struct tkshm_table *p, uint64_t index,
			  uint64_t *words);

#endif /* TKSHM_SHM_WIDE_H */
