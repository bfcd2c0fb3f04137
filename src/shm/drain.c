/*
 * drain.c - carrying every key of a replaced table into its replacement
 * (protocol.h, L6).
 *
 * Above both halves it joins: the fetch of one key from the predecessor
 * (carry.c, L5) and the insert of its state into the new table (table.c).
 */
#include "algorithms/algorithm.h"
#include "shm/atomic.h"
#include "shm/carry.h"
#include "shm/drain.h"
#include "shm/life.h"
#include "shm/table.h"

/* The key bytes p keeps for slot `index` of key fp: the whole key of a
 * lease table, else its label's prefix.  Display and Redis naming only. */
static size_t
tk_drain_label(const struct tkshm_table *p, uint64_t index, uint64_t fp,
	       unsigned char *out)
{
	unsigned len = 0;
	size_t whole = 0;

	if (p->keyrecs && tk_keyrec_read(p, index, fp, out, &whole))
		return whole;
	if (!tk_label_read(p, index, fp, out, &len))
		return 0;
	return len < TK_LABEL_PREFIX ? len : TK_LABEL_PREFIX;
}

/* Drain step for one slot of p (L6). */
static int
tk_drain_slot(struct tkshm_table *n, uint64_t index, double now)
{
	struct tkshm_table *p = n->pred;
	uint64_t f, st, fp, words[TK_ALGO_MAX_WORDS];
	unsigned char label[TKSHM_LEASE_KEY_MAX];
	size_t len;
	int rc;

	tk_slot_read(tk_slot_at(p, index), &f, &st);
	if (f == 0 || tk_st_is_dead(st))
		return TKSHM_OK;
	if (tk_st_is_placeholder(st)) {
		/* L6: an insert into p that re-loaded p's live word before
		 * REPLACED would make its placeholder REAL after the drain, an
		 * admission the new table never sees.  Retired, its CAS to
		 * REAL fails and it follows the path (L3).  Found by the
		 * model (tests/model/lifecycle_replace.pml). */
		(void)tk_cas128(tk_slot_at(p, index), f, st, f, TK_ST_DEAD);
		return TKSHM_OK;
	}
	fp = f & ~TK_FP_SEAL;
	/* Read before the seal: a label is checked against the slot's fp. */
	len = tk_drain_label(p, index, fp, label);
	/* Sealed already or not, the key goes through L5 like any fetch,
	 * and into n only if n has no state of it (idempotent). */
	rc = tk_carry_fetch(n, fp, now, words);
	if (rc <= 0)
		return rc;
	return tk_carry_insert(n, fp, words, label, len, TK_DRAIN_NOW, now);
}

/* Debt cells of a one-word p merged into n's (I8, I9): a key evicted
 * from p restarts in n from its debt too.  The two tables may have
 * different numbers of cells (another size; a table that never evicts
 * has one): a fingerprint's cell is the same hash under each table's mask
 * (tk_debt_cell), so walking the larger count and masking for each table
 * merges every cell of p into the cell of n its keys map to. */
static void
tk_drain_debt(struct tkshm_table *n)
{
	struct tkshm_table *p = n->pred;
	uint64_t cells = p->ndebt > n->ndebt ? p->ndebt : n->ndebt;

	if (p->wide || n->wide || !tk_carry_converts(p, n))
		return;
	for (uint64_t i = 0; i < cells; i++) {
		uint64_t *cell = &n->debt[i & n->debt_mask];
		uint64_t d = tk_load_seq_cst(&p->debt[i & p->debt_mask]);
		uint64_t cur = tk_load_seq_cst(cell);

		if (d == 0 || !tk_algo_state_valid(&p->algo, d))
			continue;
		while (!tk_cas64(cell, &cur,
				 cur ? tk_algo_debt_merge(&n->algo, cur, d) :
				       d))
			;
	}
}

int
tk_carry_drain(struct tkshm_table *n, double now)
{
	struct tkshm_table *p = n->pred;
	uint64_t slots;

	if (!p)
		return TKSHM_OK;
	if (!n->carry_copy)
		(void)tk_life_or(p, TK_LIFE_REPLACED);
	slots = p->nbuckets * TK_SLOTS_PER_BUCKET;
	for (uint64_t i = 0; i < slots; i++) {
		int rc = tk_drain_slot(n, i, now);

		if (rc != TKSHM_OK && rc != TKSHM_EFULL)
			return rc;
	}
	/* After the walk: a key p evicted while it was walked left its
	 * debt in p's cell. */
	tk_drain_debt(n);
	return TKSHM_OK;
}
