/*
 * carry.c - moving one key from a replaced table into its replacement
 * (protocol.h, L4, L5; the drain of them all, L6, is drain.c).
 *
 * A key leaves the old table O by a seal: one CAS of its REAL slot from
 * {fp, st} to {fp | TK_FP_SEAL, st}.  The sealed slot is no key's (lookups
 * compare whole fingerprints), so every later write of O to that key fails
 * its CAS and finds the key absent, and an insert into O re-checks the
 * live word and follows the path instead (L3).  The sealed state stays
 * readable, so every process of the new table N that fetches the key reads
 * the same final state, however many fetch it at once.
 */
#include <string.h>

#include "algorithms/convert.h"
#include "shm/carry.h"
#include "shm/life.h"
#include "shm/table.h"
#include "shm/wide.h"

/* The state of the sealed slot at `index` of table p (or, `sealed` false,
 * of the REAL slot an anonymous copy reads): one word, a pair's state
 * (frozen first when sealed, P7), or the words of its published record.  False: nothing to carry (a FRESH
 * wide state, or one that will not read whole). */
static bool
tk_sealed_words(struct tkshm_table *p, uint64_t index, uint64_t st, bool sealed,
		uint64_t *words)
{
	uint64_t gen;

	if (!p->wide) {
		words[0] = st;
		return tk_algo_state_valid(&p->algo, st);
	}
	if (p->pairs && sealed)
		return tk_pair_sealed_words(p, index, words);
	/* The control word of a sealed slot never changes again: a claim in
	 * flight can no longer publish (W4 compares the whole slot), so a
	 * snapshot that reads torn was torn by a claimant and reads whole
	 * on a retry.  A bounded number of tries. */
	for (int tries = 0; tries < 64; tries++) {
		switch (tk_wide_snapshot(p, index, st, words, &gen)) {
		case TK_WIDE_PRESENT:
			return true;
		case TK_WIDE_ABSENT:
		case TK_WIDE_INVALID:
			return false;
		case TK_WIDE_TORN:
			break;
		}
	}
	return false;
}

/* What tk_seal_key found when contention did not settle: the key's
 * state in p is unknown, which is neither "absent" nor a state (reading it
 * as absent would carry nothing while p still holds the key). */
#define TK_SEAL_GAVE_UP (-2)

/* One pass of L5 over the window of fp in table p: retires the key's
 * placeholders (when it seals) and notes its sealed slot (*sealed) and its REAL slot
 * (*real), with their states.  False when a CAS failed (the window
 * changed under the pass: scan again). */
static bool
tk_seal_pass(struct tkshm_table *p, const struct tk_where *w, uint64_t fp,
	     bool seal, int *sealed, uint64_t *sealed_st, int *real,
	     uint64_t *real_st)
{
	for (int i = 0; i < (int)TK_WINDOW; i++) {
		struct tk_slot *s = tk_window_slot(p, w, i);
		uint64_t f, st;

		tk_slot_read(s, &f, &st);
		if (tk_st_is_special(st) && !tk_st_is_placeholder(st))
			continue;
		if (f == (fp | TK_FP_SEAL) && !tk_st_is_placeholder(st)) {
			*sealed = i;
			*sealed_st = st;
		} else if (f == fp && tk_st_is_placeholder(st)) {
			/* An insert into p that has not yet seen REPLACED:
			 * retired, it re-checks (L3).  A copy leaves p as
			 * it is. */
			if (seal && !tk_cas128(s, fp, st, fp, TK_ST_DEAD))
				return false;
		} else if (f == fp) {
			*real = i;
			*real_st = st;
		}
	}
	return true;
}

/* L5 on table p for fingerprint fp: retires the key's placeholders, then
 * seals its REAL slot, and finds its sealed slot.  The seal comes only
 * after a pass that retired every placeholder without meeting a change:
 * sealed earlier, an insert whose placeholder lies further on could find
 * no REAL slot and make its own REAL from nothing before the pass
 * reaches it (tests/model/lifecycle_replace.pml, -DSEAL_IN_PASS).  With
 * seal false (a copy for an anonymous replacement) the REAL slot is read,
 * not sealed.  Returns the slot's window position (its state in *st_out),
 * -1 when the key has no state in p, or TK_SEAL_GAVE_UP. */
static int
tk_seal_key(struct tkshm_table *p, uint64_t fp, bool seal, uint64_t *st_out)
{
	struct tk_where w;

	tk_where_of(p, fp, &w);
	for (unsigned retries = 0; retries <= TK_MAX_RETRIES; retries++) {
		int sealed = -1, real = -1;
		uint64_t sealed_st = 0, real_st = 0;

		if (retries > 0)
			tk_backoff(retries - 1);
		if (!tk_seal_pass(p, &w, fp, seal, &sealed, &sealed_st, &real,
				  &real_st))
			continue;
		if (real < 0) {
			*st_out = sealed_st;
			return sealed;
		}
		if (!seal) {
			*st_out = real_st;
			return real;
		}
		if (tk_cas128(tk_window_slot(p, &w, real), fp, real_st,
			      fp | TK_FP_SEAL, real_st)) {
			*st_out = real_st;
			return real;
		}
	}
	return TK_SEAL_GAVE_UP;
}

/* Converts a state of table p's algorithm into one of table n's (L5,
 * src/algorithms/convert.h).  False when the kinds' states do not
 * convert: the key starts absent. */
static bool
tk_state_convert(const struct tkshm_table *p, const uint64_t *from,
		 const struct tkshm_table *n, double now, uint64_t *to)
{
	return tk_algo_convert(&p->algo, from, &n->algo, now, to);
}

bool
tk_carry_converts(const struct tkshm_table *p, const struct tkshm_table *n)
{
	return tk_algo_converts(&p->algo, &n->algo);
}

int
tk_carry_fetch(struct tkshm_table *n, uint64_t fp, double now, uint64_t *words)
{
	struct tkshm_table *p = n->pred;
	uint64_t st = 0, from[TK_ALGO_MAX_WORDS];
	bool have;
	int pos;

	if (!p)
		return 0;
	/* L4: no seal before REPLACED is in p's live word. */
	if (!n->carry_copy)
		(void)tk_life_or(p, TK_LIFE_REPLACED);
	pos = tk_seal_key(p, fp, !n->carry_copy, &st);
	if (pos == TK_SEAL_GAVE_UP)
		return TKSHM_EBUSY;
	have = false;
	if (pos >= 0) {
		struct tk_where w;

		tk_where_of(p, fp, &w);
		have = tk_sealed_words(p, tk_window_index(&w, (unsigned)pos),
				       st, !n->carry_copy, from);
	}
	if (!p->wide) {
		/* A key evicted from p left its debt in p's cell (I8). */
		uint64_t d = tk_load_seq_cst(tk_debt_cell(p, fp));

		if (d != 0 && tk_algo_state_valid(&p->algo, d)) {
			from[0] = have ? tk_algo_debt_merge(&p->algo, from[0],
							    d) :
					 d;
			have = true;
		}
	}
	return have && tk_state_convert(p, from, n, now, words) ? 1 : 0;
}
