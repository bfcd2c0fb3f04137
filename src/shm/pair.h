/*
 * pair.h - two-word states kept in one 16-byte pair per slot.
 *
 * The protocol (P1-P9) is written in protocol.h; this header encodes a
 * pair's bytes and pair.c runs the transitions.  A pair table is a wide
 * table (t->wide, wide_units 2) whose wide area holds struct tk_pair
 * instead of records, so the wide entry points (wide.h) hand pair tables
 * to the functions below.
 *
 * Encoding of {a, b} under the occupancy tag c (the slot's REAL st):
 *   b == 0                         ABSENT(0): a pair never written
 *   b in [1, 2^63 - 2^52]          OPEN: x1 = (b - 1) ^ Kb, x0 = a ^ Ka
 *   b == 0x7FF8.. | x, x != 0      ABSENT(x)
 *   b with bit 63 set              sealed (P7): OPEN's bytes with the bit,
 *                                  or TK_PAIR_B_SEALED_ABSENT
 * OPEN's b never reaches the NaN range: x1 is a finite double >= +0, the
 * mask Kb touches its mantissa only, and the + 1 keeps 0 for ABSENT(0),
 * so a table's zero-filled wide area needs no writing at build.
 */
#ifndef TKSHM_SHM_PAIR_H
#define TKSHM_SHM_PAIR_H

#include <stdbool.h>
#include <stdint.h>

#include "shm/protocol.h"
#include "shm/table.h"

#define TK_PAIR_SEALED_BIT	(UINT64_C(1) << 63)
#define TK_PAIR_OPEN_MAX	UINT64_C(0x7FF0000000000000)
#define TK_PAIR_ABSENT_BASE	UINT64_C(0x7FF8000000000000)
#define TK_PAIR_B_SEALED_ABSENT UINT64_C(0xFFF8000000000000)
#define TK_PAIR_MANTISSA	((UINT64_C(1) << 52) - 1)

/* What a pair holds (the top of this file). */
enum tk_pair_kind {
	TK_PAIR_OPEN,
	TK_PAIR_ABSENT,
	TK_PAIR_SEALED,
	TK_PAIR_SEALED_ABSENT,
	TK_PAIR_BAD /* no encoding: a segment somebody scribbled on */
};

/* The occupancy's masks (P8): a keyed mix of c and the table's secret
 * seed, so that equal states of two occupancies have different bytes. */
struct tk_pair_mask {
	uint64_t a, b;
};

static inline struct tk_pair_mask
tk_pair_mask_of(const struct tkshm_table *t, uint64_t c)
{
	uint64_t h = (c ^ t->seed) * UINT64_C(0x9E3779B97F4A7C15);

	h ^= h >> 31;
	h *= UINT64_C(0xD6E8FEB86659FD93);
	h ^= h >> 29;
	return (struct tk_pair_mask){
		h, ((h >> 7) * UINT64_C(0xBF58476D1CE4E5B9)) & TK_PAIR_MANTISSA
	};
}

static inline struct tk_pair
tk_pair_absent(uint64_t tag)
{
	return (struct tk_pair){ 0,
				 TK_PAIR_ABSENT_BASE | (tag & TK_ST_TAG_MASK) };
}

/* Decodes pair p under occupancy c: the state into x[0..1] (OPEN, SEALED),
 * the tag into *tag (ABSENT). */
static inline enum tk_pair_kind
tk_pair_decode(const struct tkshm_table *t, uint64_t c, struct tk_pair p,
	       uint64_t *x, uint64_t *tag)
{
	uint64_t v = p.b & ~TK_PAIR_SEALED_BIT;
	bool sealed = (p.b & TK_PAIR_SEALED_BIT) != 0;
	struct tk_pair_mask m;

	if (p.b == 0) {
		*tag = 0;
		return TK_PAIR_ABSENT;
	}
	if (v > TK_PAIR_OPEN_MAX) {
		if (sealed)
			return p.b == TK_PAIR_B_SEALED_ABSENT ?
				       TK_PAIR_SEALED_ABSENT :
				       TK_PAIR_BAD;
		if ((v & ~TK_ST_TAG_MASK) != TK_PAIR_ABSENT_BASE ||
		    (v & TK_ST_TAG_MASK) == 0)
			return TK_PAIR_BAD;
		*tag = v & TK_ST_TAG_MASK;
		return TK_PAIR_ABSENT;
	}
	if (v == 0)
		return TK_PAIR_BAD;
	m = tk_pair_mask_of(t, c);
	x[0] = p.a ^ m.a;
	x[1] = (v - 1) ^ m.b;
	return sealed ? TK_PAIR_SEALED : TK_PAIR_OPEN;
}

/* Encodes state x as OPEN under occupancy c.  False when x[1] is not a
 * finite double >= 0 (no state of a pair kind is such). */
static inline bool
tk_pair_encode(const struct tkshm_table *t, uint64_t c, const uint64_t *x,
	       struct tk_pair *p)
{
	/* -0 is stored as +0: equal as a number, and the sign bit is the
	 * seal's (P7). */
	uint64_t x1 = x[1] == TK_PAIR_SEALED_BIT ? 0 : x[1];
	struct tk_pair_mask m;

	if (x1 >= TK_PAIR_OPEN_MAX)
		return false; /* negative, infinite or NaN */
	m = tk_pair_mask_of(t, c);
	p->a = x[0] ^ m.a;
	p->b = (x1 ^ m.b) + 1;
	return true;
}

static inline struct tk_pair *
tk_pair_at(const struct tkshm_table *t, uint64_t index)
{
	return (struct tk_pair *)(t->wide + index * sizeof(struct tk_pair));
}

/* P1: the pair of slot `index`, loaded whole. */
static inline struct tk_pair
tk_pair_load(const struct tkshm_table *t, uint64_t index)
{
	struct tk_pair p;

	tk_load128(tk_pair_at(t, index), !t->readonly, &p.a, &p.b);
	return p;
}

static inline bool
tk_pair_cas(struct tkshm_table *t, uint64_t index, struct tk_pair old,
	    struct tk_pair nw)
{
	return tk_cas128(tk_pair_at(t, index), old.a, old.b, nw.a, nw.b);
}

#endif /* TKSHM_SHM_PAIR_H */
