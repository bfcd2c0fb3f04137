/*
 * table.h - the process-local handle and the table's internal operations.
 *
 * A handle holds copies of the header's validated fields: after attach the
 * library never re-reads geometry or policy from the shared header, so a
 * process that scribbles on the header cannot make another one index out of
 * bounds (I10).
 */
#ifndef TKSHM_SHM_TABLE_H
#define TKSHM_SHM_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "algorithms/algorithm.h"
#include "shm/atomic.h"
#include "shm/layout.h"
#include "shm/protocol.h"
#include "shm/slot.h"
#include "tkshm.h"

struct tkshm_table {
	uint8_t *base;	 /* the mapping */
	size_t map_size; /* bytes mapped (== file_size) */
	bool readonly;
	bool anonymous;
	struct tk_bucket *buckets;
	struct tk_label *labels;
	uint32_t *denials; /* per slot, display only (tk_denial_note) */
	struct tk_shard *shards;
	uint64_t *debt;
	uint8_t *wide;	      /* wide area, NULL for one-word states */
	uint32_t wide_units;  /* state words per record (algo.words), or 0 */
	uint64_t wide_stride; /* bytes per slot in the wide area */
	bool pairs; /* the wide area holds pairs (protocol.h, P1-P9) */
	struct tk_global_shm *global; /* the cross-host region (one page) */
	struct tk_keyrec *keyrecs;    /* lease tables: whole keys, or NULL */
	uint64_t nbuckets, bucket_mask;
	uint64_t ndebt, debt_mask;
	uint32_t nshards;
	uint64_t seed;
	double created_ms;
	tkshm_on_full on_full;
	tkshm_policy policy;
	struct tk_algo algo;
	/* Strict tables: the Redis connection decisions go through
	 * (tkshm_redis_attach), or NULL. */
	struct tkshm_redis *redis;
	const struct tk_strict_ops *strict; /* its operations (route.h) */

	/* The lifecycle (protocol.h L1-L6, src/api/life_api.c). */
	struct tk_life *life;  /* in the header page */
	uint64_t life_word;    /* the live word this instance decides by */
	uint64_t table_id;     /* this segment's own id */
	uint64_t pred_id;      /* a replacement: its predecessor's id */
	uint64_t permit_epoch; /* see struct tk_header */
	double change_ms;      /* see struct tk_header */
	char pred_name[TK_PRED_NAME_MAX];
	/* While this table drains its predecessor (TK_LIFE_DRAINING): that
	 * table, whose keys are carried on demand (L5); else NULL. */
	struct tkshm_table *pred;
	/* The mapping, shared by the instances made from one attach. */
	struct tk_mapping *map;
	/* `follow`: what following a change needs (the handle only). */
	struct tk_follow *follow;
	bool created_now; /* this attach created the table */
	bool carry_copy;  /* carry from `pred` without sealing it (an
			    * anonymous replacement: pred stays live) */
	dev_t dev;	  /* the file's identity (0 for anonymous) */
	ino_t ino;

	/* Written by other threads once the instance is in use, so never
	 * copied with the rest (life_api.c, tk_instance_copy): */
	/* Concurrency tables: the monotonic ms before which this handle does
	 * not look for dead holders again (permit.c); relaxed atomics. */
	int64_t next_reap_ms;
	/* The handle a caller holds is an instance too, the first one: `cur`
	 * is the instance its calls go to (itself until it follows a
	 * change); NULL in other instances. */
	struct tkshm_table *cur;
};

/* The bytes of an instance that do not change once it is in use. */
#define TK_INSTANCE_FIXED offsetof(struct tkshm_table, next_reap_ms)

/* What a replacement inherits from the table it replaces (L2). */
struct tk_lineage {
	uint64_t seed, pred_id;
	/* The predecessor's permit epoch when its states are copied as
	 * they read (its permits stay valid), else 0 (a new epoch). */
	uint64_t permit_epoch;
	double change_ms; /* the change's now: its keys convert at it */
	char pred_name[TK_PRED_NAME_MAX];
	uid_t uid;
	gid_t gid;
};

/* A key's fingerprint and window (I3). */
struct tk_where {
	uint64_t fp;
	uint64_t b0, b1;
};

/* Fingerprint of a key: XXH3 keyed with the segment's random seed, so
 * nobody who does not know the seed can aim keys at one window.  Never 0
 * (I3).  Inlined (XXH_INLINE_ALL) so short keys hash without a call. */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* A key's fingerprint has bit 63 clear: a slot whose fp has it set is a
 * sealed state of a replaced table (protocol.h, L4), no key's. */
#define TK_FP_SEAL (UINT64_C(1) << 63)

static inline uint64_t
tk_key_fp(const struct tkshm_table *t, const void *key, size_t len)
{
	uint64_t h = XXH3_64bits_withSeed(key, len, t->seed) & ~TK_FP_SEAL;
	return h ? h : 1;
}

/* Both buckets of a fingerprint's window, distinct (nbuckets >= 2). */
static inline void
tk_where_of(const struct tkshm_table *t, uint64_t fp, struct tk_where *w)
{
	uint64_t alt = ((fp >> 29) * UINT64_C(0x9E3779B97F4A7C15)) >> 17;

	alt &= t->bucket_mask;
	if (alt == 0)
		alt = 1;
	w->fp = fp;
	w->b0 = fp & t->bucket_mask;
	w->b1 = w->b0 ^ alt;
}

/* The slot at window position i (0..7) and its global index. */
static inline uint64_t
tk_window_index(const struct tk_where *w, unsigned i)
{
	uint64_t b = i < TK_SLOTS_PER_BUCKET ? w->b0 : w->b1;
	return b * TK_SLOTS_PER_BUCKET + (i % TK_SLOTS_PER_BUCKET);
}

static inline struct tk_slot *
tk_slot_at(const struct tkshm_table *t, uint64_t index)
{
	return &t->buckets[index / TK_SLOTS_PER_BUCKET]
			.s[index % TK_SLOTS_PER_BUCKET];
}

/* Reads one slot as a pair: fp, then st, then fp again.  If fp is unchanged,
 * st was written together with that fp, unless the slot went A -> B -> A
 * between the loads, in which case st may be B's state.  That is harmless:
 * a CAS built on the pair fails (the slot no longer holds {A, st}), and a
 * denial decided from it writes nothing, so the worst case is one spurious
 * decision, never an admission beyond the policy (I1, I7). */
static inline void
tk_slot_read(const struct tk_slot *s, uint64_t *fp, uint64_t *st)
{
	for (;;) {
		/* seq_cst: I6, the rescan is ordered after our claim. */
		uint64_t f = tk_load_seq_cst(&s->fp);
		uint64_t v = tk_load_seq_cst(&s->st);
		if (tk_load_seq_cst(&s->fp) == f) {
			*fp = f;
			*st = v;
			return;
		}
		tk_cpu_relax();
	}
}

/* tk_slot_at(t, tk_window_index(w, i)), without going through the global
 * index (fewer instructions on the check path). */
static inline struct tk_slot *
tk_window_slot(const struct tkshm_table *t, const struct tk_where *w, int i)
{
	uint64_t b = (unsigned)i < TK_SLOTS_PER_BUCKET ? w->b0 : w->b1;

	return &t->buckets[b].s[(unsigned)i % TK_SLOTS_PER_BUCKET];
}

/* The check path's lookup: the key's REAL slot, if any (unique, I5), as
 * its window position (0..7).  Each bucket is read up to its first EMPTY
 * slot (I2). */
static inline int
tk_find_real(const struct tkshm_table *t, const struct tk_where *w,
	     uint64_t *st_out)
{
	uint64_t b = w->b0;

	for (unsigned half = 0; half < 2; half++, b = w->b1) {
		const struct tk_slot *s = t->buckets[b].s;

		for (unsigned i = 0; i < TK_SLOTS_PER_BUCKET; i++) {
			uint64_t fp, st;

			tk_slot_read(&s[i], &fp, &st);
			if (fp == 0)
				break; /* I2: on to bucket b1, or done */
			if (fp == w->fp && !tk_st_is_special(st)) {
				*st_out = st;
				return (int)(half * TK_SLOTS_PER_BUCKET + i);
			}
		}
	}
	return -1;
}

/* Internal: the table was replaced under the call (protocol.h, L3); the
 * public call follows the path and runs again.  Never returned to users. */
#define TK_EMOVED (-31999)

/* After this many lost CASes in one call, give up with TKSHM_EBUSY.  Each
 * lost CAS means another writer made progress, so this takes thousands of
 * colliding writers on one window. */
#define TK_MAX_RETRIES 4096

/* The debt cell of a fingerprint (I8). */
static inline uint64_t *
tk_debt_cell(const struct tkshm_table *t, uint64_t fp)
{
	return &t->debt[((fp * UINT64_C(0xC2B2AE3D27D4EB4F)) >> 24) &
			t->debt_mask];
}

/* Segment (segment.c). */
int tk_segment_open(const char *path, const tkshm_options *o,
		    struct tkshm_table *t);
void tk_segment_close(struct tkshm_table *t);
/* Builds a table of o->policy and `slots` at the new name `tmp` (unlinked
 * again on failure), or in anonymous memory when tmp is NULL; `lin` (may
 * be NULL) makes it the replacement of another (L2). */
int tk_segment_build(const char *tmp, const tkshm_options *o, uint64_t slots,
		     const struct tk_lineage *lin, struct tkshm_table *t);
/* The table's slots, and the slots a request for `slots` gets. */
uint64_t tk_segment_slots(const struct tkshm_table *t);
uint64_t tk_slots_rounded(uint64_t slots);

/* The live word (life.c): the policy in force, REPLACED, DRAINING. */
static inline uint64_t
tk_life_load(const struct tkshm_table *t)
{
	/* Acquire: a generation's policy record was written before the word
	 * named it (L1). */
	return tk_load_acquire(&t->life->word);
}
/* After attach: the policy in force is the live word's generation (L1):
 * the instance takes it.  TKSHM_ECORRUPT for a record that does not
 * validate or does not fit the table's shape. */
int tk_life_adopt(struct tkshm_table *t);

/* What an admitted check changed, so that it can be undone (multi.c). */
struct tk_commit {
	uint64_t fp;
	bool prev_present; /* false: the key was absent before */
	uint64_t prev;	   /* the state before, when present */
	uint64_t next;	   /* the state the check wrote */
	uint64_t epoch;	   /* the table's reset epoch before the check */
	double now;	   /* the check's now (what a give-back looks for) */
	/* A pair table's write (P6): the bytes it replaced and wrote, under
	 * occupancy `next`. */
	struct tk_pair pair_prev, pair_next;
	/* Set by the caller before the check: it counts the decision itself
	 * once the decision stands (multi.c: an `all` commit may be given
	 * back, and `allowed` counts admissions, not attempts). */
	bool uncounted;
};

/* A key as the table sees it: its fingerprint, and the bytes its label
 * keeps (the first min(len, TK_LABEL_PREFIX) of `label` are read). */
struct tk_keyref {
	uint64_t fp;
	const void *label;
	size_t len;
};

/* Operations (table.c).  Arguments are validated by the caller (api/). */

/* The reset epoch (read before a check whose commit may be given back). */
uint64_t tk_table_epoch(const struct tkshm_table *t);

int tk_table_peek(struct tkshm_table *t, const void *key, size_t len,
		  double now, tkshm_decision *out);
/* The key's forecast (src/algorithms/forecast.h), writing nothing. */
int tk_table_forecast(struct tkshm_table *t, const void *key, size_t len,
		      double cost, double now, tkshm_forecast *out);
int tk_table_reset(struct tkshm_table *t, const void *key, size_t len);
/* Makes `target` (algo.words words, a valid state) the key's state,
 * inserting the key if absent (set.c). */
int tk_table_set(struct tkshm_table *t, const void *key, size_t len, double now,
		 const uint64_t *target);

/* The next REAL slot at or after *cursor, as an operator sees it
 * (entry.c); TKSHM_ENOENT at the end.  tk_entry_get: the key's. */
int tk_entry_next(const struct tkshm_table *t, uint64_t *cursor, double now,
		  tkshm_entry *out);
int tk_entry_get(const struct tkshm_table *t, const void *key, size_t len,
		 double now, tkshm_entry *out);

/* The next REAL slot at or after *cursor with an intact state: its index,
 * fingerprint and state words (*present false: an absent wide state).
 * TKSHM_ENOENT at the end.  For the lease agent's scans (entry.c). */
int tk_state_next(const struct tkshm_table *t, uint64_t *cursor,
		  uint64_t *index, uint64_t *fp, uint64_t *words,
		  bool *present);

/* The position (0..7) of slot `index` in the window of `fp`, or -1. */
int tk_window_pos(const struct tkshm_table *t, uint64_t fp, uint64_t index);

/* Counters (table.c): each thread adds to its own shard (I11), drawn on
 * its first count (tk_tls_shard, tk_shard_draw: slot.h). */

static inline void
tk_count(struct tkshm_table *t, enum tk_counter c, uint64_t n)
{
	uint32_t s = tk_tls_shard;

	if (t->readonly)
		return;
	if (__builtin_expect(s == 0, 0))
		s = tk_shard_draw();
	/* Relaxed: a counter orders nothing; the handle's nshards was checked
	 * at attach to equal TK_SHARDS (I10). */
	tk_fetch_add_relaxed(&t->shards[s - 1].c[c], n);
}
void tk_counters_sum(const struct tkshm_table *t,
		     uint64_t sum[TK_SHARD_COUNTERS]);

/* Labels (label.c): written on insert, display only.  Writing a label also
 * zeroes the slot's denial tally: the tally belongs to the new key. */
void tk_label_write(struct tkshm_table *t, uint64_t index, uint64_t fp,
		    const void *key, size_t len);

/* Lease tables: the whole key of slot `index` if its record is intact and
 * names `fp` (copied to out, TKSHM_LEASE_KEY_MAX bytes); false otherwise. */
bool tk_keyrec_read(const struct tkshm_table *t, uint64_t index, uint64_t fp,
		    unsigned char *out, size_t *len);
/* Copies the label of slot `index` if it was written for `fp` and is not
 * torn: *key_len is the key's length (255: 255 or more), the first
 * min(*key_len, TK_LABEL_PREFIX) bytes go to out[].  Returns false when
 * the slot has no intact label for fp. */
bool tk_label_read(const struct tkshm_table *t, uint64_t index, uint64_t fp,
		   unsigned char out[TK_LABEL_PREFIX], unsigned *key_len);

/* Counts a denial of the key in slot `index` for operators (tkshm-inspect
 * top).  Not a read-modify-write: two processes denying one key at the same
 * instant may count once, which keeps a denial free of a locked
 * instruction.  Saturates instead of wrapping. */
static inline void
tk_denial_note(struct tkshm_table *t, uint64_t index)
{
	uint32_t *c = &t->denials[index];
	/* Relaxed: a display-only tally; nothing is ordered by it. */
	uint32_t v = tk_load32_relaxed(c);

	if (v != UINT32_MAX)
		/* Relaxed: as above. */
		tk_store32_relaxed(c, v + 1);
}

/* The denial tally of slot `index`. */
static inline uint32_t
tk_denials_of(const struct tkshm_table *t, uint64_t index)
{
	/* Relaxed: a display-only tally. */
	return tk_load32_relaxed(&t->denials[index]);
}

/* Counts a check's decision in `allowed` or `denied`, unless its caller
 * counts it (commit->uncounted). */
static inline void
tk_count_decision(struct tkshm_table *t, const struct tk_commit *commit,
		  bool allowed)
{
	if (!commit || !commit->uncounted)
		tk_count(t, allowed ? TK_C_ALLOWED : TK_C_DENIED, 1);
}

/* Records in *c (if not NULL) what an admitted check changed. */
static inline void
tk_commit_note(struct tk_commit *c, uint64_t fp, bool prev_present,
	       uint64_t prev, uint64_t next)
{
	if (!c)
		return;
	/* c->epoch was read when the check began (tk_table_check_ref). */
	c->fp = fp;
	c->prev_present = prev_present;
	c->prev = prev;
	c->next = next;
}

/* Every check that the fast path below does not finish: wide keys, absent
 * keys (insert, I6), lost CASes (`retries` already lost), in table.c. */
int tk_table_check_slow(struct tkshm_table *t, const struct tk_keyref *k,
			const struct tk_where *w, double cost, double now,
			tkshm_decision *out, struct tk_commit *commit,
			unsigned retries);

/* Runs a wide table's operation other than a check (a permit's acquire,
 * release or reap, src/shaper/permit.c) on key k at `now`, inserting the
 * key when the operation writes from the absent state.  TKSHM_OK, or
 * TKSHM_EFULL, TKSHM_EBUSY, TKSHM_ECORRUPT; what the operation did is in
 * its own context. */
struct tk_wide_op;
int tk_table_wide_op(struct tkshm_table *t, const struct tk_keyref *k,
		     double now, const struct tk_wide_op *op);

/* One check of key k (window w) of a pair table: a present key's pair
 * read, decided and written by one CAS (P1, P3) when nothing is in the
 * way, else tk_table_check_slow (src/shm/pair_check.c). */
int tk_pair_check(struct tkshm_table *t, const struct tk_keyref *k,
		  const struct tk_where *w, double cost, double now,
		  tkshm_decision *out, struct tk_commit *commit);

/* The writing half of a present one-word key's check, on its REAL slot,
 * window position `pos` of w, holding st (unique, I5), once the pure
 * transition has decided (`allowed`; nst the state an admission writes):
 * a denial writes nothing to the slot (I7: a counter and the display
 * tally) and an admission is one CAS.  `flags` is added to the decision's
 * (0 on the fast path).  True when decided (and counted); false when the
 * CAS lost (the slot moved: look the key up again).  Callers that know the
 * table's algorithm (src/api/check_fast.h) decide without the switch on
 * its kind, and write through this. */
static inline __attribute__((always_inline)) bool
tk_present_write(struct tkshm_table *t, const struct tk_where *w, int pos,
		 uint64_t st, bool allowed, uint64_t nst, uint32_t flags,
		 tkshm_decision *out, struct tk_commit *commit)
{
	if (!allowed) {
		out->flags |= flags;
		tk_count_decision(t, commit, false); /* I7: nothing written */
		tk_denial_note(t, tk_window_index(w, (unsigned)pos));
		return true;
	}
	if (tk_cas128(tk_window_slot(t, w, pos), w->fp, st, w->fp, nst)) {
		tk_commit_note(commit, w->fp, true, st, nst);
		out->flags |= flags;
		tk_count_decision(t, commit, true);
		return true;
	}
	return false;
}

/* The check of a present one-word key on its REAL slot (as above): the
 * pure transition, then tk_present_write.  Shared by the fast path below
 * and the insert protocol's loop (table.c, tk_table_apply), so both write
 * alike. */
static inline __attribute__((always_inline)) bool
tk_check_present(struct tkshm_table *t, const struct tk_where *w, int pos,
		 uint64_t st, double cost, double now, uint32_t flags,
		 tkshm_decision *out, struct tk_commit *commit)
{
	uint64_t nst = 0;
	bool allowed = tk_algo_check(&t->algo, true, st, now, cost, &nst, out);

	return tk_present_write(t, w, pos, st, allowed, nst, flags, out,
				commit);
}

/* One check of key k at `now`; fills *commit (if not NULL) when it admits.
 * Inline: the common case (a present one-word key, an uncontended CAS) is
 * a lookup, the pure transition and one CAS, and compiles into the public
 * call without a frame of its own. */
static inline __attribute__((always_inline)) int
tk_table_check_ref(struct tkshm_table *t, const struct tk_keyref *k,
		   double cost, double now, tkshm_decision *out,
		   struct tk_commit *commit)
{
	struct tk_where w;
	uint64_t st;
	int pos;

	if (commit) {
		/* Before anything is written: see tk_table_refund. */
		commit->epoch = tk_table_epoch(t);
		commit->now = now;
	}
	tk_where_of(t, k->fp, &w);
	/* The key is in b0 or b1 (two-choice inserts split keys between
	 * them): start fetching b1 while b0 is read. */
	__builtin_prefetch(&t->buckets[w.b1], 1, 3);
	if (t->wide)
		return t->pairs ?
			       tk_pair_check(t, k, &w, cost, now, out, commit) :
			       tk_table_check_slow(t, k, &w, cost, now, out,
						   commit, 0);
	pos = tk_find_real(t, &w, &st);
	if (pos < 0)
		return tk_table_check_slow(t, k, &w, cost, now, out, commit, 0);
	if (tk_check_present(t, &w, pos, st, cost, now, 0, out, commit))
		return TKSHM_OK;
	tk_count(t, TK_C_CAS_RETRIES, 1);
	return tk_table_check_slow(t, k, &w, cost, now, out, commit, 1);
}

/* A pair table: starts fetching the pairs of window w's two buckets (the
 * four pairs of a bucket are one line). */
static inline void
tk_prefetch_pairs(const struct tkshm_table *t, const struct tk_where *w)
{
	const uint64_t line = TK_SLOTS_PER_BUCKET * sizeof(struct tk_pair);

	__builtin_prefetch(t->wide + w->b0 * line, 1, 3);
	__builtin_prefetch(t->wide + w->b1 * line, 1, 3);
}

/* Starts fetching the cache lines a check of window w reads: both of its
 * buckets and, in a pair table, their pairs. */
static inline void
tk_prefetch_where(const struct tkshm_table *t, const struct tk_where *w)
{
	__builtin_prefetch(&t->buckets[w->b0], 1, 3);
	__builtin_prefetch(&t->buckets[w->b1], 1, 3);
	if (t->pairs)
		tk_prefetch_pairs(t, w);
}

/* tk_prefetch_where of fingerprint fp's window. */
static inline void
tk_prefetch_key(const struct tkshm_table *t, uint64_t fp)
{
	struct tk_where w;

	tk_where_of(t, fp, &w);
	tk_prefetch_where(t, &w);
}

/* True when two handles are of one table: the same handle, or one
 * segment attached twice (its random seed names it; a copy of a table file
 * counts as the table it was copied from). */
static inline bool
tk_table_same(const struct tkshm_table *a, const struct tkshm_table *b)
{
	return a == b || a->seed == b->seed;
}

/* The reference of a key's bytes in table t. */
static inline struct tk_keyref
tk_keyref_of(const struct tkshm_table *t, const void *key, size_t len)
{
	struct tk_keyref k = { tk_key_fp(t, key, len), key, len };

	return k;
}

/* tk_table_check_ref() of the key's bytes. */
static inline __attribute__((always_inline)) int
tk_table_check(struct tkshm_table *t, const void *key, size_t len, double cost,
	       double now, tkshm_decision *out, struct tk_commit *commit)
{
	struct tk_keyref k = tk_keyref_of(t, key, len);

	return tk_table_check_ref(t, &k, cost, now, out, commit);
}
/* What tk_table_decide found for a present one-word key it would admit:
 * its slot, the state the check would be decided on and the state it
 * would write (`found` false otherwise). */
struct tk_decided {
	bool found;
	uint64_t index; /* slot index, < nbuckets * 4 */
	uint64_t st, nst;
};
/* The decisions m (>= 1) checks of one key would make one after another at
 * `now`, of costs cost[0..m-1], each on the state the ones before it would
 * leave, from one read of the key's state; writing nothing.  It stops
 * after the first denial (out[] and dd[] past it are left as they were).
 * dd[i] says how check i would write (tk_table_commit).  TKSHM_OK, or
 * TKSHM_EBUSY or TKSHM_ECORRUPT from reading a wide state. */
int tk_table_decide(struct tkshm_table *t, uint64_t fp, double now,
		    const double *cost, size_t m, tkshm_decision *out,
		    struct tk_decided *dd);
/* Writes what tk_table_decide decided, if the slot still holds the state
 * it decided from: one CAS, counted as an admission, *commit filled (its
 * `now` is the caller's to set).  False when there is nothing to write
 * that way (the caller checks the key again). */
bool tk_table_commit(struct tkshm_table *t, uint64_t fp,
		     const struct tk_decided *dd, struct tk_commit *commit);
/* Gives back the consumption of an admitted check: exactly, if the key
 * still holds the state that check wrote; otherwise the part of it that is
 * still owed at `now_r` (no later than any admission made since, in the
 * callers' time).  Nothing to do if the key has left the table or the table
 * was reset since the check. */
int tk_table_refund(struct tkshm_table *t, const struct tk_commit *commit,
		    double cost, double now_r);
#endif /* TKSHM_SHM_TABLE_H */
