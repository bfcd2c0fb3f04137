/*
 * carry.h - carrying one key from a replaced table into its replacement
 * (protocol.h, L4, L5; carry.c), and the insert of its state (table.c).
 */
#ifndef TKSHM_SHM_CARRY_H
#define TKSHM_SHM_CARRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tkshm_table;

/* L5: table n drains n->pred.  Seals key fp in the predecessor and
 * returns 1 with its state there converted to n's algorithm as the key
 * stands at `now` (words, n's word count); 0 when the key has no state to carry (absent, or of a kind
 * that does not convert); TKSHM_EBUSY when contention on the key's window
 * did not settle (its state is unknown: nothing may be decided). */
int tk_carry_fetch(struct tkshm_table *n, uint64_t fp, double now,
		   uint64_t *words);

/* Inserts key fp into n with state `words`, unless n has a state of it
 * already (table.c); `label` (len bytes) becomes its label (and its key
 * record in a lease table); it is inserted at `now`, and a state of it
 * fetched meanwhile converts at convert_at.  TKSHM_OK, TKSHM_EFULL,
 * TKSHM_EBUSY. */
int tk_carry_insert(struct tkshm_table *n, uint64_t fp, const uint64_t *words,
		    const void *label, size_t len, double now,
		    double convert_at);

/* The time a drain inserts at: 0, before every state, so that no carried
 * key counts as idle and none is reclaimed by another carried key. */
#define TK_DRAIN_NOW 0.0

/* True when p's states convert into n's (states are kept). */
bool tk_carry_converts(const struct tkshm_table *p,
		       const struct tkshm_table *n);

#endif /* TKSHM_SHM_CARRY_H */
