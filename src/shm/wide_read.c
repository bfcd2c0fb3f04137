/*
 * wide_read.c - reading a wide state's published record (protocol.h, W5).
 *
 * Both the transitions (wide.c) and the fetch of a key from a replaced
 * table (carry.c) read records, and wide.c calls carry.c: the reads sit
 * below both.  Every load is seq_cst, as in wide.c.
 */
#include <string.h>

#include "shm/protocol.h"
#include "shm/wide.h"

enum tk_wide_read
tk_wide_snapshot(const struct tkshm_table *t, uint64_t index, uint64_t ctl,
		 uint64_t *words, uint64_t *gen)
{
	const struct tk_unit *u;
	uint64_t g0 = 0;

	if (t->pairs) {
		*gen = 0;
		return tk_pair_snapshot(t, index, ctl, words);
	}
	if (tk_ctl_fresh(ctl))
		return TK_WIDE_ABSENT;
#ifdef __clang_analyzer__
	/* For clang's static analyzer only (scripts/lint.sh): it cannot know
	 * that wide_units is the kind's word count (segment.c checks it at
	 * attach), so it takes the words past a short record that
	 * tk_algo_state_valid_w reads for garbage.  Every caller's array
	 * holds TK_ALGO_MAX_WORDS words. */
	memset(words, 0, sizeof(uint64_t) * TK_ALGO_MAX_WORDS);
#endif
	u = tk_wide_record(t, index, tk_ctl_active(ctl));
	for (uint32_t i = 0; i < t->wide_units; i++) {
		uint64_t g, v;

		tk_unit_read(&u[i], &g, &v);
		if (i == 0) {
			if ((g & TK_WIDE_G_MASK) != tk_ctl_g40(ctl))
				return TK_WIDE_TORN;
			g0 = g;
		} else if (g != g0) {
			return TK_WIDE_TORN; /* W5: a newer claim got here */
		}
		words[i] = v;
	}
	*gen = g0;
	/* A segment somebody scribbled on must not steer the algorithm
	 * outside its state (the log's count indexes its stamps). */
	if (!tk_algo_state_valid_w(&t->algo, words))
		return TK_WIDE_INVALID;
	return TK_WIDE_PRESENT;
}

bool
tk_wide_is_idle(const struct tkshm_table *t, uint64_t index, uint64_t ctl,
		double now)
{
	uint64_t words[TK_ALGO_MAX_WORDS], gen;

	switch (tk_wide_snapshot(t, index, ctl, words, &gen)) {
	case TK_WIDE_ABSENT:
		return true;
	case TK_WIDE_PRESENT:
		return tk_algo_is_idle_w(&t->algo, words, now);
	case TK_WIDE_TORN:
	case TK_WIDE_INVALID:
		break;
	}
	return false;
}
