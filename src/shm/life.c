/*
 * life.c - the table's live word, its writer word and its in-place policy
 * records (protocol.h, L1).
 *
 * Every call of every process loads the live word once (tk_life_load) and
 * compares it with the word its handle decided by; only a change writes it.
 * A policy changed in place is written whole into the record its new
 * generation names, by the one process holding the writer word, before the
 * live word names that generation; a reader accepts a record only if it
 * carries the generation it looks for and its checksum holds.
 */
#include <string.h>
#include <time.h>

#include "algorithms/algorithm.h"
#include "algorithms/convert.h"
#include "base/proc.h"
#include "shm/life.h"
#include "shm/policy_wire.h"
#include "shm/table.h"

static uint64_t
tk_rec_checksum(const struct tk_policy_rec *r)
{
	return XXH64(r, offsetof(struct tk_policy_rec, checksum), 0);
}

/* Copies a shared record word by word: a writer may be rewriting it
 * (a reader two generations behind), which the checksum then catches. */
static void
tk_rec_copy_in(struct tk_policy_rec *dst, const struct tk_policy_rec *src)
{
	const uint64_t *s = (const uint64_t *)src;
	uint64_t *d = (uint64_t *)dst;

	_Static_assert(sizeof *src % 8 == 0, "a record is whole words");
	for (size_t i = 0; i < sizeof *src / 8; i++)
		/* Relaxed: the acquire load of the live word ordered the
		 * record's publication before us; a torn copy fails its
		 * checksum. */
		d[i] = tk_load_relaxed(&s[i]);
}

static void
tk_rec_copy_out(struct tk_policy_rec *dst, const struct tk_policy_rec *src)
{
	const uint64_t *s = (const uint64_t *)src;
	uint64_t *d = (uint64_t *)dst;

	for (size_t i = 0; i < sizeof *src / 8; i++)
		/* Relaxed: the record is published by the release store of
		 * the live word that follows (L1). */
		tk_store_relaxed(&d[i], s[i]);
}

bool
tk_algo_same_shape(const struct tk_algo *a, const tkshm_policy *pa,
		   const struct tk_algo *b, const tkshm_policy *pb)
{
	/* A sliding window's state counts in ticks of its sub-bucket width:
	 * read under another width, its ticks would name other times (a
	 * replacement converts them through the times they stand for). */
	return tk_algo_is_wide(a) == tk_algo_is_wide(b) &&
	       tk_algo_is_pair(a) == tk_algo_is_pair(b) &&
	       pa->global.mode == pb->global.mode && tk_algo_same_reading(a, b);
}

int
tk_life_read_policy(const struct tkshm_table *t, uint64_t gen, tkshm_policy *p,
		    struct tk_algo *algo)
{
	struct tk_policy_rec r;
	char why[160];

	tk_rec_copy_in(&r, &t->life->rec[gen & 1]);
	if (r.gen != gen || tk_rec_checksum(&r) != r.checksum)
		return TKSHM_EBUSY;
	tk_policy_unwire(&r.policy, &r.global, p);
	/* A record is validated like a header's policy (I10): a scribbled
	 * segment never steers a reader outside a valid algorithm. */
	if (tk_algo_init(algo, p, why, sizeof why) != TKSHM_OK ||
	    !tk_algo_same_shape(algo, p, &t->algo, &t->policy))
		return TKSHM_ECORRUPT;
	return TKSHM_OK;
}

int
tk_life_adopt(struct tkshm_table *t)
{
	for (int tries = 0; tries < 64; tries++) {
		uint64_t w = tk_life_load(t), gen = w & TK_LIFE_GEN_MASK;
		tkshm_policy p;
		struct tk_algo algo;
		int rc;

		if (gen == 0) {
			t->life_word = w;
			return TKSHM_OK;
		}
		rc = tk_life_read_policy(t, gen, &p, &algo);
		if (rc == TKSHM_OK) {
			uint64_t host = t->algo.u.conc.host;
			bool conc = tk_algo_is_concurrency(&t->algo);

			t->policy = p;
			t->algo = algo;
			if (conc)
				t->algo.u.conc.host = host;
			t->life_word = w;
			return TKSHM_OK;
		}
		if (rc != TKSHM_EBUSY)
			return rc;
	}
	return TKSHM_ECORRUPT;
}

static void
tk_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int
tk_writer_take(struct tkshm_table *t, long wait_ms)
{
	uint64_t self = tk_holder_self();

	if (self == 0)
		return TKSHM_ESYSTEM;
	for (long waited = 0;; waited++) {
		uint64_t cur = 0;

		if (tk_cas64(&t->life->writer, &cur, self))
			return TKSHM_OK;
		if (cur == self)
			return TKSHM_OK; /* a thread of ours died holding it */
		/* A writer killed at any step leaves the word to the next
		 * one (L1): it is taken over from a dead process only, so a
		 * stopped writer cannot be overtaken and resume later. */
		if (tk_holder_liveness(cur) == TK_DEAD &&
		    tk_cas64(&t->life->writer, &cur, self))
			return TKSHM_OK;
		if (waited >= wait_ms)
			return TKSHM_EBUSY;
		tk_sleep_ms(1);
	}
}

void
tk_writer_release(struct tkshm_table *t)
{
	uint64_t self = tk_holder_self();

	(void)tk_cas64(&t->life->writer, &self, 0);
}

uint64_t
tk_life_or(struct tkshm_table *t, uint64_t flags)
{
	uint64_t w = tk_load_seq_cst(&t->life->word);

	/* seq_cst: REPLACED orders before every seal and every O-insert's
	 * re-check (L3, L4). */
	while ((w & flags) != flags && !tk_cas64(&t->life->word, &w, w | flags))
		;
	return w | flags;
}

void
tk_life_clear(struct tkshm_table *t, uint64_t flags)
{
	uint64_t w = tk_load_seq_cst(&t->life->word);

	while ((w & flags) != 0 && !tk_cas64(&t->life->word, &w, w & ~flags))
		;
}

int
tk_life_publish(struct tkshm_table *t, const tkshm_policy *p)
{
	struct tk_policy_rec r;
	uint64_t w = tk_load_seq_cst(&t->life->word), gen;

	gen = (w & TK_LIFE_GEN_MASK) + 1;
	if (gen > TK_LIFE_GEN_MASK)
		return TKSHM_EBUSY; /* 2^48 changes of one table */
	memset(&r, 0, sizeof r);
	r.gen = gen;
	tk_policy_wire_of(p, &r.policy, &r.global);
	r.checksum = tk_rec_checksum(&r);
	/* Record g+1 is not the one the live word names: no reader accepts
	 * it before the CAS below, and only the writer-word holder writes. */
	tk_rec_copy_out(&t->life->rec[gen & 1], &r);
	/* A CAS, not a store: a sealer may set REPLACED meanwhile (L4). */
	while (!tk_cas64(&t->life->word, &w, (w & ~TK_LIFE_GEN_MASK) | gen))
		;
	return TKSHM_OK;
}
