/*
 * protocol.h - the slot protocol of the shared table, written once.
 *
 * Code that relies on an invariant cites it by number ("I5").  The tests in
 * tests/ and tkshm_verify() (src/shm/verify.c) check the ones that can be
 * observed in a table at rest; the proofs below cover the rest, and spin
 * checks a model of this protocol (tests/model/slot_protocol.pml) in every
 * interleaving of small process mixes, with a crash possible at any step:
 * I5 and "no admission beyond the limit" hold in all of them.
 *
 * Vocabulary
 * ----------
 * A table is an array of buckets; a bucket is one 64-byte cache line of four
 * 16-byte slots.  A slot is the pair {fp, st}: fp is a 64-bit keyed XXH3 hash
 * of the key (the fingerprint), st is a 64-bit state word.  A key's window is
 * the four slots of bucket b0(fp) followed by the four of bucket b1(fp); both
 * bucket indexes are derived from fp alone (table.h), so anybody holding a
 * slot can tell which window it belongs to.  "Two choices": a new key goes
 * to the emptier of its two buckets, which keeps the table usable to high
 * occupancy without moving anybody.
 *
 * A state word is one of:
 *   REAL           an algorithm's state (e.g. GCRA's TAT as IEEE-754 bits).
 *                  No REAL state matches TK_ST_SPECIAL_MASK below.
 *   PLACEHOLDER(t) an insert in progress, with a tag t unique to that insert
 *                  attempt.  Equivalent to "key absent".
 *   DEAD           a retired placeholder, a reset key, or an insert that
 *                  a multi-dimension check gave back.  Equivalent to "key
 *                  absent".
 * A slot is EMPTY when it is {0, 0}.  A REAL state is *idle* at time `now`
 * when it decides exactly as an absent key would (GCRA: TAT <= now).
 *
 * Invariants
 * ----------
 * I1  A slot's {fp, st} pair is written only by one 16-byte compare-and-swap
 *     from a complete valid pair to another complete valid pair.  There is
 *     no locked, constructing or half-written slot state, so a process killed
 *     at any instruction leaves every slot valid and nobody waiting.
 *
 * I2  A slot, once claimed, never returns to EMPTY, and a key is never
 *     claimed into a slot that lies behind an EMPTY slot of the same bucket
 *     (an insert takes the first EMPTY, DEAD or idle slot of one of its two
 *     buckets, choosing the bucket with more such slots, and the first EMPTY
 *     slot of a bucket ends the search in that bucket).  Hence in every
 *     bucket the EMPTY slots form a suffix, no key sits behind an EMPTY slot
 *     of its own bucket, and a lookup may leave a bucket at its first EMPTY.
 *
 * I3  fp != 0 for every key (a hash of 0 becomes 1), and a key's slots lie in
 *     its window only.
 *
 * I4  An EMPTY slot has st == 0; a claimed slot's st is REAL, PLACEHOLDER or
 *     DEAD, and a REAL st is valid for the table's algorithm (GCRA: a finite,
 *     non-negative double).
 *
 * I5  At any instant a key has at most one REAL slot in its window.  All
 *     consumption of a key therefore lands on one state: two processes
 *     inserting one new key at the same moment never split its budget.
 *
 * I6  Insert protocol (table.c, tk_table_apply):
 *       a. claim a victim slot of the window with CAS -> {fp, PLACEHOLDER(t)};
 *       b. rescan the whole window with sequentially consistent loads (the
 *          claim CAS is a full barrier, so the rescan is ordered after it);
 *       c. if a REAL slot of the key is seen, retire our placeholder
 *          (CAS -> {fp, DEAD}) and update the REAL slot instead;
 *       d. otherwise retire every *other* placeholder of the key by CAS ->
 *          {fp, DEAD}; if one of those CAS fails, go back to b;
 *       e. turn our placeholder REAL by CAS {fp, PLACEHOLDER(t)} -> {fp, s'};
 *          if it fails (somebody retired it), start again.
 *     Only the claimer of a placeholder ever makes it REAL.
 *
 *     Proof of I5.  Let X make slot i REAL (step e, event Fx) and later Y
 *     make slot j REAL (event Fy), with i's REAL still there at Fy.  All the
 *     claims, rescan loads and CASes are sequentially consistent, so they
 *     lie in one total order S.  Y's rescan read slot i at some point Ry(i):
 *       - after Fx: Y saw a REAL copy and took step c, so no Fy: impossible;
 *       - before Fx, seeing PLACEHOLDER(ti): Y retired it (step d) before Fy.
 *         Retiring succeeded only if it preceded Fx, but then Fx (which
 *         expects PLACEHOLDER(ti)) failed: impossible;  if the retire failed,
 *         Y rescanned and, Fx being earlier, saw the REAL copy: impossible;
 *       - before Fx, seeing no copy of the key: X's claim Cx of slot i comes
 *         after Ry(i) in S, hence after Y's claim Cy of slot j.  X's rescan
 *         follows Cx, so it read slot j after Cy and saw PLACEHOLDER(tj)
 *         (retired by X before Fx, so Fy fails: impossible), or saw it gone
 *         already (then Fy fails too, tags being unique: impossible).
 *     A rescan that leaves a bucket at an EMPTY slot in front of slot i
 *     read that EMPTY before it was claimed, which (I2) precedes Cx: that
 *     is the last case.  Every case contradicts, so two REAL slots of one
 *     key never coexist.
 *
 *     Progress.  No step waits for another process.  A placeholder left by a
 *     dead or stopped process is retired by the next inserter of that key
 *     (step d) or reclaimed as idle by any other key.  Two inserters can
 *     retire each other's placeholders and both retry; retries are bounded
 *     and back off, and the first one to finish steps b-e ends the race.
 *
 * I7  A denial writes nothing, and neither does a peek.  Besides checks,
 *     a REAL state changes only by reset (-> DEAD, after the table's reset
 *     epoch is bumped) and by a multi-dimension give-back (multi.c), which
 *     restores the state its own commit replaced, or gives back only what
 *     is still owed of it, so it never frees more than it took.  A hot key that is
 *     being denied keeps its cache line shared instead of bouncing it.
 *
 * I8  A REAL slot is handed to another key only (a) when it is idle at the
 *     taker's `now` (reclaim: equivalent to absent), or (b) by eviction of
 *     the window's least-indebted key when the window holds no EMPTY, DEAD,
 *     PLACEHOLDER or idle slot.  Before an eviction's CAS, the victim's state
 *     is merged into the debt cell of its hash by an atomic maximum, and a
 *     key that is inserted starts from the debt cell when it is still in
 *     debt.  Evicting never resets a key in debt (it can only make another
 *     key sharing the cell start with more debt: conservative).
 *
 * I9  Debt cells change only by atomic maximum (eviction) and by reset,
 *     which clears them.  A debt cell is 0 or a REAL state.
 *
 * I10 The segment holds no pointers: only offsets, counts and indexes, each
 *     checked against the mapped size before use (segment.c).  The header is
 *     immutable after the segment is published and carries a checksum.
 *
 * I11 Counters live in per-shard cache lines; a thread adds to the shard it
 *     was given, so the check path never writes a line every process shares.
 *     A counter sum is a snapshot, not an atomic one.
 *
 * Crashes.  A process killed anywhere leaves: at most one PLACEHOLDER of its
 * own (absent-equivalent, retired or reclaimed by others), possibly a debt
 * cell raised for an eviction that did not happen (conservative), possibly
 * an admission recorded in a REAL slot that its caller never heard of, and
 * possibly a key label half rewritten (labels are display only, validated
 * against fp before use).  Nothing to repair, nobody to wait for.
 */
#ifndef TKSHM_SHM_PROTOCOL_H
#define TKSHM_SHM_PROTOCOL_H

#include <stdbool.h>
#include <stdint.h>

/* I4: the special state words are negative quiet NaNs, which no REAL state
 * ever is: GCRA's REAL states are finite doubles. */
#define TK_ST_SPECIAL_MASK UINT64_C(0xFFF8000000000000)
#define TK_ST_DEAD	   TK_ST_SPECIAL_MASK
#define TK_ST_TAG_MASK	   UINT64_C(0x0007FFFFFFFFFFFF)

static inline bool
tk_st_is_special(uint64_t st)
{
	return (st & TK_ST_SPECIAL_MASK) == TK_ST_SPECIAL_MASK;
}

static inline bool
tk_st_is_placeholder(uint64_t st)
{
	return tk_st_is_special(st) && (st & TK_ST_TAG_MASK) != 0;
}

static inline bool
tk_st_is_dead(uint64_t st)
{
	return st == TK_ST_DEAD;
}

static inline uint64_t
tk_st_placeholder(uint64_t tag)
{
	return TK_ST_SPECIAL_MASK | (tag & TK_ST_TAG_MASK);
}

#endif /* TKSHM_SHM_PROTOCOL_H */
