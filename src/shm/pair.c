/*
 * pair.c - reading and changing two-word states kept in pairs (P1-P9).
 *
 * The protocol and its argument are in protocol.h; the encoding in
 * pair.h.  In short: the slot's REAL st is the occupancy's tag c, the pair
 * holds the state masked by c, and an admission is one CAS of the pair
 * from the bytes it read, between two loads of the slot that saw {fp, c}.
 * An occupancy ends only after its pair reads ABSENT (a reclaim) or is
 * frozen (a seal), so a write that read under c lands under c or not at
 * all.
 *
 * The reads are pair_read.c's (below carry.c, which fetches sealed pairs);
 * every write here is a 16-byte CAS, a full barrier.
 */
#include "shm/atomic.h"
#include "shm/carry.h"
#include "shm/pair.h"
#include "shm/protocol.h"
#include "shm/wide.h"

/* A lost race (somebody else's write landed): count, back off, or give
 * up past TK_MAX_RETRIES. */
static bool
tk_pair_lost(struct tkshm_table *t, unsigned *retries)
{
	if (++*retries > TK_MAX_RETRIES)
		return false;
	tk_count(t, TK_C_CAS_RETRIES, 1);
	tk_backoff(*retries);
	return true;
}

/* What a step asked for, as the pair to write under occupancy c. */
static int
tk_pair_target(struct tkshm_table *t, uint64_t c, enum tk_step what,
	       const uint64_t *next, struct tk_pair *nw)
{
	if (what == TK_STEP_ABSENT) {
		*nw = tk_pair_absent(c); /* P2, P6: never DEAD from REAL */
		return TKSHM_OK;
	}
	return tk_pair_encode(t, c, next, nw) ? TKSHM_OK : TKSHM_ECORRUPT;
}

/* The state a write starts from: the pair's, or for an ABSENT key of a
 * table that drains its predecessor, its sealed state there (L5). */
static int
tk_pair_start(struct tkshm_table *t, const struct tk_where *w, uint64_t c,
	      struct tk_pair p, double now, uint64_t *cur, bool *present,
	      uint64_t *tag)
{
	enum tk_pair_kind kind = tk_pair_decode(t, c, p, cur, tag);

	*present = false;
	if (kind == TK_PAIR_OPEN) {
		if (!tk_algo_state_valid_pair(&t->algo, cur))
			return TKSHM_ECORRUPT;
		*present = true;
		return TKSHM_OK;
	}
	/* Sealed pairs lie under sealed slots only (P7), which are no key's:
	 * under the key's REAL slot one is a scribble. */
	if (kind != TK_PAIR_ABSENT)
		return TKSHM_ECORRUPT;
	if (__builtin_expect(t->pred != NULL, 0)) {
		int got = tk_carry_fetch(t, w->fp, now, cur);

		if (got < 0)
			return got;
		*present = got > 0;
	}
	return TKSHM_OK;
}

int
tk_pair_transition(struct tkshm_table *t, const struct tk_where *w, int pos,
		   double now, tk_step_fn step, void *ctx,
		   struct tk_wide_done *done)
{
	uint64_t index = tk_window_index(w, (unsigned)pos);
	struct tk_slot *s = tk_slot_at(t, index);
	uint64_t cur[TK_ALGO_MAX_WORDS], next[TK_ALGO_MAX_WORDS];
	unsigned retries = 0;

	done->wrote = false;
	for (;;) {
		uint64_t fp, c, tag = 0;
		struct tk_pair p, nw;
		enum tk_step what;
		bool present;
		int rc;

		tk_slot_read(s, &fp, &c);
		if (fp != w->fp || tk_st_is_special(c) || !tk_ctl_valid(c))
			return TK_WIDE_GONE;
		if (!tk_pair_read_under(t, index, fp, c, &p))
			goto lost;
		rc = tk_pair_start(t, w, c, p, now, cur, &present, &tag);
		if (rc != TKSHM_OK)
			return rc;
		/* Decided from the pair as read: a denial writes nothing
		 * (I7) and waits for nobody. */
		what = step(ctx, t, index, c, present, cur, next);
		if (what == TK_STEP_NONE)
			return TKSHM_OK;
		if (!present && what == TK_STEP_ABSENT)
			return TKSHM_OK; /* absent already (P6) */
		if (!present && tag != c) {
			/* P3: adopt, pair first, so that a reclaim that froze
			 * this pair under c fails its slot CAS (P4), and no
			 * reader sees the new tag in the slot while the pair
			 * still shows another's ABSENT (it would adopt over
			 * our write). */
			uint64_t c2 = tk_new_tag();
			struct tk_pair mark = tk_pair_absent(c2);

			if (!tk_pair_cas(t, index, p, mark))
				goto lost;
			if (!tk_cas128(s, fp, c, fp, c2))
				goto lost;
			p = mark;
			c = c2;
		}
		rc = tk_pair_target(t, c, what, next, &nw);
		if (rc != TKSHM_OK)
			return rc;
		if (!tk_pair_cas(t, index, p, nw))
			goto lost;
		done->wrote = true;
		done->prev_present = present;
		done->prev = c; /* the occupancy the write landed under */
		done->next = c;
		/* What a give-back restores (P6): the state written over, as
		 * this occupancy stores it.  For an OPEN pair that is the
		 * bytes read; for a state carried in (L5) over an ABSENT pair,
		 * the carried state, not the ABSENT it replaced. */
		done->pair_prev = p;
		if (present && !tk_pair_encode(t, c, cur, &done->pair_prev))
			done->next = 0; /* no tag: no exact give-back */
		done->pair_next = nw;
		return TKSHM_OK;
lost:
		if (!tk_pair_lost(t, &retries))
			return TKSHM_EBUSY;
	}
}

int
tk_pair_fresh(struct tkshm_table *t, uint64_t index, uint64_t fp,
	      uint64_t mine_st)
{
	struct tk_pair want = tk_pair_absent(mine_st & TK_ST_TAG_MASK);

	/* P5: only stale writes of past occupancies (one CAS each, failing
	 * or harmless: ABSENT to ABSENT) race with this loop while the
	 * placeholder is ours.  Once it is not (a rival inserter took it
	 * over, I6), the slot may hold another occupancy: nothing to do. */
	for (unsigned retries = 0;; retries++) {
		uint64_t x[2], seen;
		struct tk_pair p;

		if (!tk_pair_read_under(t, index, fp, mine_st, &p))
			return TK_WIDE_GONE;
		if (p.a == want.a && p.b == want.b)
			return TKSHM_OK;
		if (tk_pair_decode(t, 0, p, x, &seen) != TK_PAIR_ABSENT)
			return TKSHM_ECORRUPT; /* P2 does not hold */
		if (tk_pair_cas(t, index, p, want))
			return TKSHM_OK;
		if (retries >= TK_MAX_RETRIES)
			return TKSHM_EBUSY;
		tk_backoff(retries + 1);
	}
}

bool
tk_pair_reclaim(struct tkshm_table *t, uint64_t index, uint64_t fp, uint64_t c,
		double now, uint64_t tag)
{
	uint64_t words[TK_ALGO_MAX_WORDS];
	struct tk_pair p;

	/* P4: freeze an idle pair to ABSENT(tag) before the slot CAS. */
	if (!tk_pair_read_under(t, index, fp, c, &p))
		return false;
	switch (tk_pair_words(t, c, p, (fp & TK_FP_SEAL) != 0, words)) {
	case TK_WIDE_ABSENT:
		break;
	case TK_WIDE_PRESENT:
		if (!tk_algo_is_idle_w(&t->algo, words, now))
			return false;
		break;
	default:
		return false;
	}
	return tk_pair_cas(t, index, p, tk_pair_absent(tag));
}

int
tk_pair_reset(struct tkshm_table *t, uint64_t index, uint64_t fp, uint64_t c)
{
	struct tk_pair p, want = tk_pair_absent(c);
	uint64_t words[TK_ALGO_MAX_WORDS], tag;

	/* P6: ABSENT(c) over whatever the key holds; TK_WIDE_GONE when the
	 * slot changed (the caller looks the key up again). */
	if (!tk_pair_read_under(t, index, fp, c, &p))
		return TK_WIDE_GONE;
	/* Absent already: done.  An ABSENT(x != c) stays as it is: making
	 * it ABSENT(c) would let a writer skip the adoption that stops a
	 * reclaim under way (P3, P4).  Anything else, a scribble included,
	 * becomes ABSENT(c): a reset gives a key back. */
	if (tk_pair_decode(t, c, p, words, &tag) == TK_PAIR_ABSENT)
		return TKSHM_OK;
	return tk_pair_cas(t, index, p, want) ? TKSHM_OK : TK_WIDE_GONE;
}

int
tk_pair_refund(struct tkshm_table *t, const struct tk_where *w, int pos,
	       const struct tk_commit *cm, double cost)
{
	uint64_t index = tk_window_index(w, (unsigned)pos);
	uint64_t words[TK_ALGO_MAX_WORDS];
	unsigned retries = 0;

	for (;;) {
		uint64_t fp, c;
		struct tk_pair p, nw;

		tk_slot_read(tk_slot_at(t, index), &fp, &c);
		if (fp != w->fp || tk_st_is_special(c))
			return TKSHM_OK; /* reclaimed or sealed since */
		if (!tk_pair_read_under(t, index, fp, c, &p))
			goto lost;
		if (c == cm->next && p.a == cm->pair_next.a &&
		    p.b == cm->pair_next.b) {
			/* P6: nobody wrote since the commit: what it
			 * replaced, exactly (an absent key stays in its
			 * slot, ABSENT under this occupancy). */
			nw = cm->prev_present ? cm->pair_prev :
						tk_pair_absent(c);
		} else {
			if (tk_pair_words(t, c, p, false, words) !=
			    TK_WIDE_PRESENT)
				return TKSHM_OK; /* nothing owed */
			if (!tk_algo_refund_w(&t->algo, words, cost, cm->now))
				return TKSHM_OK;
			if (!tk_pair_encode(t, c, words, &nw))
				return TKSHM_ECORRUPT;
		}
		if (tk_pair_cas(t, index, p, nw)) {
			tk_count(t, TK_C_MULTI_ROLLBACKS, 1);
			return TKSHM_OK;
		}
lost:
		if (!tk_pair_lost(t, &retries))
			return TKSHM_EBUSY;
	}
}
