/*
 * layout.h - the bytes of a table segment: an ABI between processes.
 *
 * Segment, in order (every region starts on a 4 KiB boundary):
 *
 *   header   one page: the header, immutable after the segment is
 *            published (I10), then at TK_LIFE_OFF the table's life
 *            (struct tk_life: the live word, the writer word and the
 *            in-place policy records, protocol.h L1-L6)
 *   shards   TK_SHARDS counter shards, 128 bytes each (I11)
 *   buckets  nbuckets cache lines of 4 slots {fp, st}
 *   labels   one 24-byte label per slot: a bounded key prefix for operators
 *   denials  one 32-bit denial tally per slot, for operators (display only)
 *   debt     ndebt 8-byte cells remembering the debt of evicted keys (I8):
 *            one per slot in tables that can evict, a single cell in
 *            tables that never do (wide kinds, lease tables: W9)
 *   wide     wide tables only: per slot, a 16-byte head and two records of
 *            wide_units 16-byte units (protocol.h, W1-W9), or for a pair
 *            table (TK_HDR_PAIRS) one 16-byte pair (P1-P9)
 *   global   one page: the cross-host tier's shared region
 *            (layout_global.h; its accessors: src/global/global_shm.h)
 *   keys     lease tables only: per slot, the whole key (a tk_keyrec), so
 *            the sync agent can name the key in Redis
 *
 * The header stores the geometry (nbuckets, ndebt, nshards) and every offset;
 * attach recomputes the offsets from the geometry with overflow checks and
 * refuses a header whose offsets or file size differ (segment.c).  Nothing
 * here is a pointer.
 */
#ifndef TKSHM_SHM_LAYOUT_H
#define TKSHM_SHM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "shm/layout_global.h"
#include "tkshm.h"

/* Bumped whenever any byte of the segment changes meaning. */
#define TK_LAYOUT_VERSION 9u

/* "TKSHM", NUL, CR, LF: the CR LF catches text-mode mangling. */
#define TK_MAGIC     "TKSHM\0\r\n"
#define TK_MAGIC_LEN 8

/* Written as a native integer: a segment from a machine of the other byte
 * order reads back as 0x04030201 and is refused. */
#define TK_BYTE_ORDER_MARK 0x01020304u

#define TK_PAGE		    4096u
#define TK_SLOTS_PER_BUCKET 4u
#define TK_WINDOW	    (2u * TK_SLOTS_PER_BUCKET)
#define TK_SHARDS	    64u
#define TK_SHARD_COUNTERS   16u
#define TK_LABEL_PREFIX	    19u
#define TK_MIN_SLOTS	    8u
#define TK_MAX_SLOTS	    TKSHM_MAX_SLOTS
#define TK_POLICY_PARAMS    16u

/* I1: written only whole, by tk_cas128; read as two 8-byte halves. */
struct tk_slot {
	_Alignas(16) uint64_t fp;
	uint64_t st;
};

/* One cache line: the unit a probe reads. */
struct tk_bucket {
	_Alignas(64) struct tk_slot s[TK_SLOTS_PER_BUCKET];
};

/* Wide tables (protocol.h, W1-W9).  A unit is one state word with the
 * generation of the claim that wrote it; written only whole, by tk_cas128
 * (W1), and read as gen, value, gen (wide.c). */
struct tk_unit {
	_Alignas(16) uint64_t gen;
	uint64_t val;
};

/* The first 16 bytes of a slot's wide area: `floor` (W6) bounds every
 * generation a past occupant of the slot may still target. */
struct tk_wide_head {
	_Alignas(16) uint64_t floor;
	uint64_t reserved;
};

/* A pair table's wide area: one 16-byte pair per slot (protocol.h,
 * P1-P9), written only whole by tk_cas128, read whole by tk_load128. */
struct tk_pair {
	_Alignas(16) uint64_t a;
	uint64_t b;
};

/* The largest wide_units: tk_algo's TK_ALGO_MAX_WORDS (a concurrency
 * limit of 256 permits). */
#define TK_WIDE_MAX_UNITS 262u

/* Bytes of one slot's wide area: the head, then record 0, then record 1. */
static inline uint64_t
tk_wide_stride(uint64_t units)
{
	return sizeof(struct tk_wide_head) + 2 * units * sizeof(struct tk_unit);
}

/* Bytes of one slot's wide area in a table of `units` state words: a
 * pair's, or the head and two records of units. */
static inline uint64_t
tk_wide_area_stride(uint64_t units, uint64_t pairs)
{
	return pairs ? sizeof(struct tk_pair) : tk_wide_stride(units);
}

/* Display-only key prefix of the slot with the same index, in three words.
 * w[0] holds, from its low bits up, a 32-bit check of the fingerprint the
 * label was written for (tk_label_check: its low 32 bits, never 0, so 0
 * means "no label"), the key length byte (255 meaning 255 or more) and the
 * key's first 3 bytes; w[1] and w[2] hold its next 16 bytes.  Written
 * seqlock-style after an insert (label.c, tk_label_write): w[0] = 0, the
 * other words, then w[0]; a reader accepts the label only if w[0] named
 * the slot's fp and did not change around its copy of the others. */
struct tk_label {
	_Alignas(8) uint64_t w[3];
};

/* Lease tables: the whole key of the slot with the same index, written
 * seqlock-style after an insert (label.c, with the label): `seq` is odd
 * while the record is written; a reader accepts the key only if seq was
 * even and unchanged around its copy and `fp` matches the slot's. */
struct tk_keyrec {
	_Alignas(64) uint64_t seq;
	uint64_t fp;
	uint64_t len; /* <= TKSHM_LEASE_KEY_MAX */
	uint64_t reserved;
	unsigned char key[TKSHM_LEASE_KEY_MAX];
};

/* Per-shard counters, indexed by enum tk_counter.  The last shard is not
 * given to threads: its last word is the table's reset epoch, bumped by
 * every reset before it clears the key, so that a multi-dimension give-back
 * can tell that a key it committed to was reset meanwhile (multi.c). */
#define TK_EPOCH_SHARD (TK_SHARDS - 1)
#define TK_EPOCH_WORD  (TK_SHARD_COUNTERS - 1)
struct tk_shard {
	_Alignas(64) uint64_t c[TK_SHARD_COUNTERS];
};

enum tk_counter {
	TK_C_ALLOWED,
	TK_C_DENIED,
	TK_C_INSERTS,
	TK_C_RECLAIMS,
	TK_C_EVICTIONS,
	TK_C_EVICTIONS_IN_DEBT,
	TK_C_DEBT_RESTORES,
	TK_C_CAS_RETRIES,
	TK_C_REFUSALS,
	TK_C_DUPLICATES_KILLED,
	TK_C_RESETS,
	TK_C_MULTI_ROLLBACKS, /* give-backs of a multi-dimension check */
	TK_C_CLAIMS_STOLEN,
	TK_C_RELEASES, /* permits given back by their holders */
	TK_C_REAPED,   /* permits taken back from dead holders */
	TK_C_COUNT
};

/* The policy as stored: a kind and its parameters in ThrottleKit's order. */
struct tk_policy_wire {
	uint32_t kind;
	uint32_t reserved;
	double p[TK_POLICY_PARAMS];
};

/* The cross-host part of the policy as stored (tkshm_global). */
struct tk_global_wire {
	uint32_t mode;
	uint32_t failure;
	double hosts;
	double lease_ms;
	char prefix[TKSHM_PREFIX_MAX + 1];
};

#define TK_HDR_ANONYMOUS 0x1u
/* The wide area holds one pair per slot (protocol.h, P1-P9). */
#define TK_HDR_PAIRS 0x2u

/* The longest file name (no directory) of a predecessor, with its NUL. */
#define TK_PRED_NAME_MAX 96u

struct tk_header {
	char magic[TK_MAGIC_LEN];
	uint32_t layout_version;
	uint32_t byte_order;
	uint32_t header_size; /* sizeof(struct tk_header) */
	uint32_t abi;	      /* tk_layout_abi(): sizes of the structs */
	uint64_t file_size;   /* bytes of the whole segment */
	uint64_t seed;	      /* XXH3 seed, from getrandom() */
	double created_ms;    /* epoch ms */
	uint32_t creator_pid;
	uint32_t flags;	  /* TK_HDR_* */
	uint32_t on_full; /* tkshm_on_full */
	uint32_t nshards;
	uint64_t nbuckets; /* power of two, >= 2 */
	uint64_t ndebt;	   /* power of two, >= 1 */
	uint64_t shards_off;
	uint64_t buckets_off;
	uint64_t labels_off;
	uint64_t denials_off;
	uint64_t debt_off;
	uint64_t wide_off;    /* 0 when wide_units is 0 */
	uint32_t wide_units;  /* state words per record; 0: one-word states */
	uint32_t key_records; /* 1: a keys region (lease tables), else 0 */
	uint64_t global_off;  /* the cross-host region's page */
	uint64_t keys_off;    /* 0 when key_records is 0 */
	struct tk_policy_wire policy;
	struct tk_global_wire global;
	/* Distinct for every segment; the seed is inherited by a replacement
	 * (L2), so a key keeps its fingerprint and window geometry. */
	uint64_t table_id;
	/* A replacement: the table it replaced (0: none), and that table's
	 * file name in this file's directory while it is drained (L6). */
	uint64_t pred_id;
	char pred_name[TK_PRED_NAME_MAX];
	/* The table whose permits this one's states hold: its own id, or
	 * its predecessor's epoch when every state was copied as it reads
	 * (a permit is released only in a table of its epoch). */
	uint64_t permit_epoch;
	/* A replacement: the time (in its checks' time base) its keys are
	 * converted at, by whoever drains them (L6). */
	double change_ms;
	uint64_t checksum; /* XXH64 of every byte before this field */
};

/* The live word (protocol.h, L1-L3): the policy generation in force in
 * its low bits, and two flags. */
#define TK_LIFE_REPLACED (UINT64_C(1) << 63) /* follow the path (L3) */
#define TK_LIFE_DRAINING (UINT64_C(1) << 62) /* consult pred_name (L5) */
#define TK_LIFE_GEN_MASK ((UINT64_C(1) << 48) - 1)

/* An in-place policy, written whole by the writer-word holder before the
 * live word names its generation (L1). */
struct tk_policy_rec {
	uint64_t gen;
	struct tk_policy_wire policy;
	struct tk_global_wire global;
	uint64_t checksum; /* XXH64 of every byte before this field */
};

/* The mutable part of the header page.  `word` is read by every call of
 * every process: it sits alone on its cache line, which only a change
 * writes, so it stays shared in every core's cache. */
#define TK_LIFE_OFF 2048u
struct tk_life {
	_Alignas(64) uint64_t word;
	uint64_t pad0[7];
	/* The holder word (base/proc.h) of the process changing the
	 * table, 0 when nobody is. */
	_Alignas(64) uint64_t writer;
	uint64_t pad1[7];
	struct tk_policy_rec rec[2]; /* generation g lives in rec[g & 1] */
};
_Static_assert(TK_LIFE_OFF + sizeof(struct tk_life) <= TK_PAGE,
	       "the life fits the header page");

_Static_assert(sizeof(struct tk_slot) == 16, "slot is 16 bytes");
_Static_assert(sizeof(struct tk_bucket) == 64, "bucket is one cache line");
_Static_assert(sizeof(struct tk_label) == 24, "label is 24 bytes");
_Static_assert(TK_LABEL_PREFIX == 3 + 2 * 8,
	       "a label's prefix fills its words");
_Static_assert(sizeof(struct tk_shard) == 128, "shard is two cache lines");
_Static_assert(sizeof(struct tk_unit) == 16, "unit is 16 bytes");
_Static_assert(sizeof(struct tk_wide_head) == 16, "wide head is 16 bytes");
_Static_assert(sizeof(struct tk_pair) == 16, "pair is 16 bytes");
_Static_assert(sizeof(struct tk_keyrec) == 256, "key record is 256 bytes");
_Static_assert(TK_C_COUNT <= TK_SHARD_COUNTERS, "counters fit a shard");
_Static_assert(TK_C_COUNT <= TK_EPOCH_WORD, "the epoch is no counter");
_Static_assert(sizeof(struct tk_header) <= TK_LIFE_OFF,
	       "header ends before the life");
_Static_assert(offsetof(struct tk_header, magic) == 0, "magic first");
_Static_assert(offsetof(struct tk_header, checksum) ==
		       sizeof(struct tk_header) - 8,
	       "checksum last");
_Static_assert(sizeof(double) == 8, "IEEE-754 binary64");

/* A fingerprint of the struct sizes, so builds that disagree refuse each
 * other's segments (TKSHM_EVERSION). */
static inline uint32_t
tk_layout_abi(void)
{
	return (uint32_t)(sizeof(struct tk_slot) |
			  sizeof(struct tk_bucket) << 6 |
			  sizeof(struct tk_label) << 14 |
			  sizeof(struct tk_shard) << 20 |
			  sizeof(struct tk_unit) << 26) ^
	       (uint32_t)sizeof(struct tk_header) << 8 ^
	       (uint32_t)sizeof(struct tk_keyrec) << 16;
}

/* The offsets and size a geometry implies. */
struct tk_geometry {
	uint64_t nbuckets, ndebt, nshards, wide_units, key_records;
	uint64_t pairs; /* 1: the wide area holds pairs (TK_HDR_PAIRS) */
	uint64_t shards_off, buckets_off, labels_off, denials_off, debt_off;
	uint64_t wide_off, global_off, keys_off;
	uint64_t file_size;
};

/* Fills the offsets of g from its counts.  Returns 0, or -1 when a count is
 * out of range or a size would overflow. */
int tk_geometry_compute(struct tk_geometry *g);

#endif /* TKSHM_SHM_LAYOUT_H */
