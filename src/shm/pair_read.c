/*
 * pair_read.c - reading a pair (protocol.h, P1), and the seal's freeze
 * (P7) that makes a sealed pair read the same for good.
 *
 * Below wide_read.c, which hands pair tables here, and carry.c, which
 * fetches sealed pairs; the transitions (pair.c) sit above carry.c.  Slot
 * loads are seq_cst (tk_slot_read), the pair load one 16-byte load
 * (tk_load128): the pair load stays between the two slot loads around it.
 */
#include "shm/atomic.h"
#include "shm/pair.h"
#include "shm/protocol.h"
#include "shm/wide.h"

/* P1: the pair of slot `index` while the slot holds {fp, c}.  False when
 * the slot changed around the load (the caller reads again). */
bool
tk_pair_read_under(const struct tkshm_table *t, uint64_t index, uint64_t fp,
		   uint64_t c, struct tk_pair *p)
{
	uint64_t f, st;

	*p = tk_pair_load(t, index);
	tk_slot_read(tk_slot_at(t, index), &f, &st);
	return f == fp && st == c;
}

/* The state words of a decoded pair: TK_WIDE_PRESENT with words[] set, or
 * ABSENT, or INVALID (a pair no valid state encodes to). */
enum tk_wide_read
tk_pair_words(const struct tkshm_table *t, uint64_t c, struct tk_pair p,
	      bool sealed_slot, uint64_t *words)
{
	uint64_t tag;

	switch (tk_pair_decode(t, c, p, words, &tag)) {
	case TK_PAIR_ABSENT:
		return TK_WIDE_ABSENT;
	case TK_PAIR_SEALED_ABSENT:
		/* P7: frozen only after the slot's seal. */
		return sealed_slot ? TK_WIDE_ABSENT : TK_WIDE_INVALID;
	case TK_PAIR_SEALED:
		if (!sealed_slot)
			return TK_WIDE_INVALID;
		break;
	case TK_PAIR_OPEN:
		break;
	case TK_PAIR_BAD:
		return TK_WIDE_INVALID;
	}
	return tk_algo_state_valid_pair(&t->algo, words) ? TK_WIDE_PRESENT :
							   TK_WIDE_INVALID;
}

enum tk_wide_read
tk_pair_snapshot(const struct tkshm_table *t, uint64_t index, uint64_t ctl,
		 uint64_t *words)
{
	struct tk_pair p;
	uint64_t fp, st;

	tk_slot_read(tk_slot_at(t, index), &fp, &st);
	if (st != ctl || !tk_pair_read_under(t, index, fp, st, &p))
		return TK_WIDE_TORN; /* the slot moved: the caller decides */
	return tk_pair_words(t, ctl, p, (fp & TK_FP_SEAL) != 0, words);
}

bool
tk_pair_sealed_words(struct tkshm_table *p, uint64_t index, uint64_t *words)
{
	/* P7: freeze, then read what every fetcher reads.  The slot is
	 * sealed (its st never changes again), so only stale writes race. */
	for (unsigned tries = 0; tries < TK_MAX_RETRIES; tries++) {
		uint64_t fp, c, tag;
		struct tk_pair cur, frozen;

		tk_slot_read(tk_slot_at(p, index), &fp, &c);
		if (!(fp & TK_FP_SEAL) || tk_st_is_special(c))
			return false;
		cur = tk_pair_load(p, index);
		switch (tk_pair_decode(p, c, cur, words, &tag)) {
		case TK_PAIR_SEALED:
			return tk_algo_state_valid_pair(&p->algo, words);
		case TK_PAIR_SEALED_ABSENT:
		case TK_PAIR_BAD:
			return false;
		case TK_PAIR_OPEN:
			frozen = (struct tk_pair){ cur.a,
						   cur.b | TK_PAIR_SEALED_BIT };
			break;
		case TK_PAIR_ABSENT:
			frozen = (struct tk_pair){ 0, TK_PAIR_B_SEALED_ABSENT };
			break;
		}
		(void)tk_pair_cas(p, index, cur, frozen);
	}
	return false;
}
