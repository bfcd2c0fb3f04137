/*
 * protocol.h - the slot protocol of the shared table, written once.
 *
 * Code that relies on an invariant cites it by number ("I5").  The tests in
 * tests/ and tkshm_verify() (src/shm/verify.c) check the ones that can be
 * observed in a table at rest; the proofs below cover the rest, and spin
 * checks a model of this protocol (tests/model/slot_protocol.pml) in every
 * interleaving of small process mixes, with a crash possible at any step:
 * I5 and "no admission beyond the limit" hold in all of them, and once the
 * processes are gone every slot they left can be taken again (no lost
 * slot) and a key that owes nothing is admitted (no stuck key).
 * tests/model/pair_protocol.pml checks the pair states (P1-P9) the same
 * way: no admission beyond the limit or left in an ended occupancy, no
 * pair decoded under another occupancy, one frozen state for every
 * fetcher, nobody waiting.
 * tests/crash/ kills a real process at each of its shared-memory writes.
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
 * I7  A denial writes nothing to the slot, and neither does a peek.
 *     Besides checks, a REAL state changes only by reset (-> DEAD, after
 *     the table's reset epoch is bumped), by a multi-dimension give-back
 *     (multi.c), which restores the state its own commit replaced, or gives
 *     back only what is still owed of it, so it never frees more than it
 *     took, and by an operator's override (set.c: one CAS or one wide
 *     transition to a valid state, like a check's).  A hot key that is
 *     being denied keeps its slot's cache line shared instead of bouncing
 *     it; a denial only bumps the key's display tally, in the separate
 *     denials area, with a plain relaxed store (no locked instruction).
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
 * Wide states (src/shm/wide.c)
 * ----------------------------
 * Every algorithm but GCRA keeps more than one 64-bit word per key (token
 * bucket 2, sliding window buckets + 2, log 1 + limit, ...).  In a
 * wide table the REAL st of a slot is a *control word*, and the state lives
 * in the slot's wide area: a 64-bit `floor` and two *records* of U *units*,
 * one unit per state word.  A unit is the 16-byte pair {gen, value}.
 *
 *   control word (bit 63 is 0, so it is never special, I4):
 *     bit 62      FRESH: the key's state equals absent (its records hold
 *                 nothing of it)
 *     bit 61      A: the active record
 *     bits 40-60  D: the claim number, 0 = no claim (TK_WIDE_D_MAX at most)
 *     bits 0-39   g40: the low 40 bits of the generation g (FRESH: of F)
 *
 * The full 64-bit generation of a non-FRESH control is the gen its active
 * record's units carry; that of a FRESH control is the largest value not
 * above `floor` with those low 40 bits.
 *
 * W1  A unit is written only by a 16-byte CAS from {x, v} to {G, v'} with
 *     x < G, by the claimant of target generation G.  Unit gens only grow.
 *
 * W2  Claim: an admission (never a denial or a peek, I7) CASes the slot
 *     {fp, (A, D = 0, g)} -> {fp, (A, 1, g)} and targets G = g + 1 in record
 *     1 - A.  A writer that finds a claim waits (backs off) and, if the
 *     control word has not moved, steals it: {fp, (A, D, g)} ->
 *     {fp, (A, D + 1, g)}, targeting G = g + D + 1.  At D = TK_WIDE_D_MAX
 *     there is no steal: the call returns TKSHM_EBUSY (it takes 2^21
 *     abandoned claims of one key in a row).
 *
 * W3  Write: for each unit of record 1 - A, load it; if its gen >= G the
 *     claim was superseded (stop and start over), otherwise CAS it to
 *     {G, new value}.
 *
 * W4  Publish: CAS {fp, (FRESH?, A, D, g)} -> {fp, (0, 1 - A, 0, G)}.  Only
 *     the holder of the current claim can succeed; one that lost its claim
 *     starts over from a fresh read.
 *
 * W5  Read: load {fp, control}; FRESH reads as absent; otherwise read the
 *     active record's units and accept them only if every gen is equal and
 *     has the low 40 bits g40, else read again.  A reader never waits for a
 *     claimant: claims write only the inactive record.
 *
 * W6  Insert: after its placeholder claim (I6 a), the inserter raises
 *     floor := max(floor, M) + 2^22 by CAS, M being the largest unit gen in
 *     both records, and makes the placeholder REAL as FRESH with g40 = F,
 *     the floor it wrote.  An inserter writes no unit.
 *
 * W7  Uniqueness.  Every target generation of a slot is unique and larger
 *     than every generation published in that slot before its claim.
 *     Within one occupant, targets g + D grow with D while g is fixed, and
 *     a publish sets g to the current claim's target, above all earlier
 *     ones.  Across occupants, an earlier occupant's targets are below
 *     g_last + 2^21, where g_last <= M (non-FRESH: its active record carries
 *     g_last) or g_last = F_prev <= floor (FRESH), hence below F (W6).
 *
 * W8  Consequence: a superseded claimant (stopped, then resumed) can never
 *     change a unit a reader may accept.  Every record published after the
 *     supersession carries a gen above its target, and W1 forbids it to
 *     lower one; what it leaves in an inactive record is overwritten in
 *     full by the next claimant (W3) before any publish.  Units of gen g
 *     were all written by g's unique claimant before its publish, so a
 *     snapshot accepted by W5 is exactly the state published at g.
 *
 * W9  Wide slots are reclaimed (I8 a) when their published state is idle or
 *     FRESH, whatever claim is in flight (the claim's publish then fails and
 *     its admission never happened).  Wide tables never evict: a full window
 *     refuses (TKSHM_EFULL), since a wide state has no one-word debt.
 *
 * Pair states (src/shm/pair.c)
 * ----------------------------
 * The four kinds whose state is two doubles (token bucket, fixed window,
 * calendar quota, token budget; not leased) keep it in a *pair*: one
 * 16-byte cell {a, b} per slot, in the wide area, read whole and written
 * only by a 16-byte CAS.  An admission is one CAS on the pair, like GCRA's
 * one CAS on the slot.  The slot's REAL st is the pair's *occupancy tag*
 * c: a tag drawn like a placeholder's (never 0, bit 63 clear, unique to
 * one occupancy of one slot), so no REAL st of the slot ever repeats.
 *
 * A pair {a, b} is one of (the bytes: src/shm/pair.h):
 *   OPEN(X)        a state X = {x0, x1} stored *masked* by its occupancy:
 *                  a = x0 ^ Ka(c), b = (x1 ^ Kb(c)) + 1, Ka and Kb a
 *                  keyed mix of c and the table's secret seed, Kb touching
 *                  mantissa bits only.  Every kind's x1 is a finite double
 *                  >= +0 (-0 is stored as +0), so b lies in [1, 2^63 -
 *                  2^52]: sign bit clear, below the NaNs, never 0.
 *   ABSENT(x)      b = 0x7FF8000000000000 | x (a positive quiet NaN whose
 *                  payload is a tag), a = 0, or b = 0 for ABSENT(0): the
 *                  key's state equals absent.  x = c: absent under this
 *                  occupancy; x != c: a reclaim of the slot may be under
 *                  way (P4).
 *   SEALED(X)      OPEN(X) with the sign bit of b set: frozen by a seal
 *                  (L4), never written again.
 *   SEALED_ABSENT  b = TK_PAIR_B_SEALED_ABSENT (a negative NaN).
 * A table is built with every pair ABSENT(0): its zero-filled bytes.
 *
 * P1  A pair is written only by a 16-byte CAS from the exact 16 bytes the
 *     writer read to a complete valid pair, and read whole (one 16-byte
 *     load, src/shm/atomic.h).  A pair is decoded with c only when it was
 *     loaded between two loads of the slot that both saw {fp, c}: no REAL
 *     st repeats, so the slot held {fp, c} all along, and (P2, P5, P8)
 *     the pair then held occupancy c's bytes or an ABSENT(x).
 *
 * P2  Under a slot that is not REAL (EMPTY, DEAD, PLACEHOLDER), the pair is
 *     ABSENT(x) for some x, or sealed.  An occupancy therefore begins on an
 *     ABSENT pair: it never reads a past occupant's OPEN state (which its
 *     mask would decode to garbage).  Occupancies end only by the P4
 *     reclaim (pair ABSENT first) and the L4 seal (the state stays,
 *     frozen); a pair slot is never made DEAD from REAL (reset and the
 *     give-back of an insert write ABSENT(c) instead, P6).
 *
 * P3  Write (a check, a set, a give-back, a carried state): read the slot
 *     {fp, c} (REAL) and the pair as P1 says, and decode it.  OPEN(X):
 *     compute X' and CAS OPEN(X) -> OPEN(X').  ABSENT(c): the same from
 *     absent.  ABSENT(x), x != c: first *adopt*, pair first: CAS the pair
 *     ABSENT(x) -> ABSENT(c2) (c2 a new tag), then the slot {fp, c} ->
 *     {fp, c2}, which makes the slot CAS of any reclaim read under c fail
 *     (P4), then CAS ABSENT(c2) -> OPEN(X') under c2; a failed CAS starts
 *     over.  (Slot first is wrong: a second writer that read {fp, c2} and
 *     ABSENT(x) before the first one's pair CAS adopts again, {fp, c2} ->
 *     {fp, c3}, over the OPEN pair of c2 that then lands; every reader
 *     decodes it with c3's mask.  The model found it.)
 *     SEALED: the table is being replaced (L3).  A successful pair CAS
 *     found occupancy c's bytes (P8), so it is c's transition: the slot
 *     may have been sealed since (the seal keeps c), and then the freeze
 *     (P7) comes after it and keeps it.  A denial is the same read and no
 *     write (I7).  An admission costs one locked instruction (three when
 *     it adopts).
 *
 * P4  Reclaim (I8 a) of a pair slot {fp, c} by key k' at `now`: read the
 *     pair; only if it decodes to a state idle at now (or ABSENT), CAS it
 *     to ABSENT(t), t the tag of k''s placeholder; then CAS the slot
 *     {fp, c} -> {k', PLACEHOLDER(t)}.  If the slot CAS fails the reclaim
 *     has failed; the pair is ABSENT(t), which equals the idle state it
 *     replaced.  A writer that admits between the two CASes finds
 *     ABSENT(t != c) and adopts (P3), so the slot CAS fails: no admission
 *     is ever left in a pair whose occupancy ended.
 *
 * P5  Insert: after its placeholder claim (I6 a), the inserter CASes the
 *     pair, whatever ABSENT(x) it holds (P2), to ABSENT(t), and makes the
 *     placeholder REAL with st = t (I6 e), so the key starts ABSENT(c).
 *     It reads the pair under its placeholder (P1): a rival inserter of
 *     the key may have taken the placeholder over (I6 a takes a rival's
 *     placeholder as a victim), made it REAL and written, and then the
 *     slot is no longer ours to mark.  An OPEN pair under our own
 *     placeholder (a hostile segment) fails the call (TKSHM_ECORRUPT).
 *     A stale mark lands on nothing but the ABSENT(x) it read, which no
 *     later occupancy shows before its own P5 (tags are unique).
 *
 * P6  Reset CASes the key's OPEN pair to ABSENT(c) (read as P3, without
 *     adopting: absent needs no reclaim stopped); an ABSENT(x) pair,
 *     whatever x, is absent already and the reset writes nothing.  (Writing
 *     ABSENT(c) over a reclaim's ABSENT(t) would undo its freeze: a writer
 *     holding ABSENT(c) read before the freeze would land after the
 *     reclaim's slot CAS, an admission lost.  The model found it.)  A
 *     give-back (I7) writes what its commit replaced if the pair still
 *     holds exactly what the commit wrote under the same c, else the
 *     algorithm's refund; the give-back of an insert writes ABSENT(c) the
 *     same way, over c's OPEN pair only.
 *
 * P7  Seal (L4): after the slot's seal CAS, the sealer freezes the pair:
 *     OPEN(X) -> SEALED(X), ABSENT(x) -> SEALED_ABSENT (repeated until the
 *     pair is sealed).  Every fetcher reads the same frozen state.  A write
 *     that read the pair before the freeze either landed before it (and is
 *     in the frozen state) or fails its CAS and, reading SEALED, follows
 *     the replacement (L3): never lost, never counted twice.
 *
 * P8  No ABA across occupancies.  A stale CAS (its expected bytes read
 *     under occupancy c) can land under a later occupancy c' only if the
 *     pair holds those bytes again.  An OPEN pair of c' equals one of c
 *     only if X ^ K(c) = X' ^ K(c'), a 116-bit coincidence of a keyed mix
 *     that no caller can aim (the seed is secret).  ABSENT(c) is written
 *     before the slot holds c (P5's insert, P3's adoption) and, while it
 *     holds c, only over c's OPEN pair (P6).  Once the pair has left c's
 *     bytes (OPEN(c, X), ABSENT(c)) for an ABSENT(y), y != c (P4's
 *     freeze, P3's adoption), nobody writes c's bytes again: writers of c
 *     write only from c's bytes, an adopter writes its new tag first, a
 *     reset writes nothing.  The slot leaves c only after the pair left
 *     c's bytes (P4, P3) or keeps c sealed (P7).  So a CAS of c lands only
 *     while the slot holds c: nothing is written into an occupancy that
 *     ended.  Within one occupancy the same bytes mean the same state, and
 *     every transition is a function of the state: a CAS that lands on a
 *     state equal to the one it read is that state's transition.
 *
 * P9  Crashes.  A process killed anywhere leaves a valid pair: an ABSENT(t)
 *     of a reclaim whose slot CAS never came (equal to the idle state it
 *     replaced; the next writer adopts), an adoption's ABSENT(c2) whose
 *     slot CAS never came or an adopted slot whose pair is still
 *     ABSENT(c2) (absent either way), or a write that its caller never
 *     heard of.
 *     Nobody waits: no step of P3-P7 waits for another process.
 *
 * Permits (concurrency tables) are wide states like any other: a key's
 * cells, one per permit, change only by W2-W4 transitions (acquire,
 * release, reap), so their invariants C1-C4 (src/algorithms/concurrency.h)
 * are properties of single transitions: the permits held never exceed the
 * limit in force, a release frees only its own cell, a reap only the cells
 * of processes found dead.  Concurrency tables never evict (W9) and their
 * keys are idle, hence reclaimable, only with no permit held.
 *
 * Wrap.  floor - F stays below 2^40 as long as fewer than 2^17 inserters of
 * one slot are stopped between their placeholder claim and their CAS to
 * REAL; g40 therefore identifies F.  Unit gens are 64-bit and never wrap.
 * The claim and publish CASes compare the 40-bit control word, so they
 * also rely on g40 not repeating for one key while a writer is stopped
 * between its read and its CAS: that takes 2^40 generations of the key
 * (or 2^18 floor raises landing on its F modulo 2^40) during the stop.
 * The spin model finds exactly this ABA when its modulus is scaled down
 * far enough, and none at the scale it checks.
 *
 * Crashes.  A process killed anywhere leaves: at most one PLACEHOLDER of its
 * own (absent-equivalent, retired or reclaimed by others), at most one
 * claim on a wide slot (stolen by the next writer of that key, W2) and
 * units of an inactive record (rewritten by the next claimant, W3), possibly a debt
 * cell raised for an eviction that did not happen (conservative), possibly
 * an admission recorded in a REAL slot that its caller never heard of, and
 * possibly a key label half rewritten (labels are display only, validated
 * against fp before use).  Nothing to repair, nobody to wait for.
 */
/*
 * The table's life (src/shm/life.c, carry.c, drain.c, src/api/life_api.c)
 * ----------------------------------------------------------------
 * A table's policy can change while processes use it, and a table can be
 * replaced by another under the same path (another kind, another state
 * shape, more slots), with no lock on the check path and any process
 * killable at any instruction.  The header page holds, after the immutable
 * header, the table's *live word* {REPLACED, DRAINING, g}: every call of
 * every process loads it once and compares it with the word its handle
 * decided by; and a *writer word*, the holder word (base/proc.h) of the
 * process changing the table.  Notation: O is a table being replaced, N
 * its replacement.
 *
 * L1  In place.  The writer-word holder writes policy record rec[(g+1) & 1]
 *     whole (generation, policy, checksum), then moves the live word from
 *     g to g+1 by CAS (a sealer may set REPLACED meanwhile).  A reader that
 *     loads g (acquire) reads rec[g & 1] and accepts it only if it carries
 *     generation g, its checksum holds and it validates with the table's
 *     shape; otherwise it reloads (a record two generations back is being
 *     rewritten).  The writer word is taken by CAS from 0, or from a holder
 *     that /proc says is dead; never from a live one, even stopped, so a
 *     writer never resumes into another's change.  A state written under
 *     one generation is read under the next as it is: a check is decided
 *     under the policy in force when its call loaded the live word.  The
 *     checksum covers the generation too: a reader of g that read the gen
 *     word before a writer of g+2 rewrote the record cannot accept g+2's
 *     policy as g's (tests/model/lifecycle_policy.pml checks L1 with
 *     crashes at every step).
 *
 * L2  Replacement.  The writer-word holder of O builds N under a private
 *     name with O's seed (so every key keeps its fingerprint) and DRAINING
 *     set, N naming O (its id, and O's file name in the same directory:
 *     the side name); links O at the side name; renames N over the path;
 *     then sets REPLACED in O's live word (seq_cst).
 *
 * L3  A write to O that claims a slot (I6 a: inserts, reclaims, evictions)
 *     reloads O's live word (seq_cst) right after its claim CAS; with
 *     REPLACED set it retires its placeholder and returns TK_EMOVED: its
 *     call follows the path and runs again on N.  A call that sees
 *     REPLACED when it begins follows first.
 *
 * L4  Seal.  A key leaves O by one CAS of its REAL slot {fp, st} ->
 *     {fp | TK_FP_SEAL, st} (key fingerprints have bit 63 clear).  A sealed
 *     slot is no key's REAL slot: every later write of O to the key fails
 *     its CAS (I1) and finds the key absent, which leads to L3.  Its state
 *     stays readable and never changes again.  Before sealing anything, a
 *     sealer makes sure REPLACED is set in O.
 *
 * L5  Carry.  While N is DRAINING, a process of N that inserts key k
 *     (one-word: the state its placeholder becomes REAL with; wide: the
 *     first write of a FRESH state) first fetches k from O: it retires k's
 *     placeholders in O in a pass over k's window, and only after a pass
 *     that met no change (no failed CAS) seals k's REAL slot (a failed
 *     seal passes again); then it reads k's sealed state (with O's debt
 *     cell for k, I8), converted to N's algorithm as k stands at the
 *     fetch's now (src/algorithms/convert.h).  Every process that fetches
 *     k reads the same sealed state, so I6 in N keeps one REAL slot with
 *     it.  Sealing as the pass met the REAL slot would let an insert of k
 *     into O whose placeholder lies further on find no REAL slot after the
 *     seal and make its own REAL from nothing before the pass retired it.
 *
 * L6  Drain.  The replacer walks every slot of O, retiring each placeholder
 *     (an insert into O that re-loaded the live word just before REPLACED
 *     would otherwise make it REAL after the drain: an admission N never
 *     sees) and fetching each key as L5 does, inserting it into N only
 *     where N has no state of it; then merges O's debt cells into N's,
 *     unlinks the side name, clears DRAINING and releases O's writer word.
 *     A fetch whose scan of O's window does not settle fails its call
 *     (TKSHM_EBUSY) instead of reading the key as absent.  A replacer
 *     killed before the end leaves N DRAINING with a dead writer: the next
 *     process that opens N, or that would replace N, takes O's writer word
 *     over and drains (idempotent: sealed slots are carried again only
 *     where N has no state).  N is never replaced while DRAINING: its
 *     replacer first waits for N's drain or finishes it, or the keys still
 *     only in O would be lost.  A replacer killed after publishing N and
 *     before setting REPLACED in O leaves it to whoever finds the path
 *     naming N (pred_id = O's id): any process may set it (L4).
 *
 *     No admission lost or made.  An admission of k in O is a CAS on k's
 *     REAL slot of O.  If it precedes k's seal in the total order of
 *     seq_cst operations, the seal read its result (the seal CAS compares
 *     the whole slot), so the sealed state holds it; if it follows, it
 *     fails (L4).  A new REAL slot of k in O after REPLACED cannot appear:
 *     its claim precedes its reload of the live word (L3); if that reload
 *     missed REPLACED, the claim precedes REPLACED, which precedes every
 *     sealer's scan of k's window and the drain's walk, which retire the
 *     placeholder (L5, L6), and the later CAS to REAL fails (I6 e).  The
 *     model tests/model/lifecycle_replace.pml checks L2-L6 with crashes
 *     at every step; it found the two cases of L6 written above and the
 *     seal's order in L5.  In N, k starts from
 *     its sealed state, the same for every fetcher.  So k's admissions in
 *     O and N are those of one state, under the old policy until the seal
 *     and the new one after.
 *
 * Inside one process, a handle moves to a new instance (a new mapping, or
 * the same one with a new policy) with read-copy-update: the instance a
 * call runs on stays valid until every call that could see it has ended
 * (src/api/handle.h).  An anonymous table has no path: replacing it makes
 * a copy for the calling process only, sealing nothing.
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
