/*
 * pair_check.c - the check of a present pair key, the common case: a
 * lookup, one 16-byte load of its pair between two loads of its slot (P1),
 * the pure transition and one CAS (P3).
 *
 * Above table.c: everything else (an absent key's insert, an ABSENT pair
 * that needs adopting or a carried state, a lost CAS, a scribbled pair)
 * goes to table.c's general path, which runs the same transition through
 * the wide entry points (pair.c).
 */
#include "shm/atomic.h"
#include "shm/pair.h"
#include "shm/protocol.h"
#include "shm/table.h"
#include "shm/wide.h"

/* The fast path's try: TKSHM_OK when decided (and counted), else 1 (the
 * general path decides: the slot moved, the pair is not an OPEN state of
 * this occupancy, or the CAS lost). */
static int
tk_pair_check_present(struct tkshm_table *t, const struct tk_where *w, int pos,
		      uint64_t c, double cost, double now, tkshm_decision *out,
		      struct tk_commit *commit)
{
	uint64_t index = tk_window_index(w, (unsigned)pos);
	uint64_t cur[2], next[2], tag;
	struct tk_pair p, nw;

	if (!tk_pair_read_under(t, index, w->fp, c, &p) ||
	    tk_pair_decode(t, c, p, cur, &tag) != TK_PAIR_OPEN ||
	    !tk_algo_state_valid_pair(&t->algo, cur))
		return 1;
	if (!tk_algo_check_pair(&t->algo, cur, now, cost, next, out)) {
		tk_count_decision(t, commit, false); /* I7: nothing written */
		tk_denial_note(t, index);
		return TKSHM_OK;
	}
	if (!tk_pair_encode(t, c, next, &nw) || !tk_pair_cas(t, index, p, nw))
		return 1;
	tk_commit_note(commit, w->fp, true, c, c);
	if (commit) {
		commit->pair_prev = p;
		commit->pair_next = nw;
	}
	tk_count_decision(t, commit, true);
	return TKSHM_OK;
}

int
tk_pair_check(struct tkshm_table *t, const struct tk_keyref *k,
	      const struct tk_where *w, double cost, double now,
	      tkshm_decision *out, struct tk_commit *commit)
{
	uint64_t c;
	unsigned retries = 0;
	int pos;

	/* The window's pair lines fetched while its slots are read (the
	 * callers have started on the buckets). */
	tk_prefetch_pairs(t, w);
	pos = tk_find_real(t, w, &c);

	if (pos >= 0 && !tk_st_is_special(c)) {
		if (tk_pair_check_present(t, w, pos, c, cost, now, out,
					  commit) == TKSHM_OK)
			return TKSHM_OK;
		retries = 1;
	}
	return tk_table_check_slow(t, k, w, cost, now, out, commit, retries);
}
