/*
 * pair_protocol.pml - a model of the pair states of src/shm/protocol.h
 * (P1-P9: a two-double state kept in one 16-byte pair per slot, tagged by
 * the slot's occupancy), checked exhaustively by spin
 * (tests/model/run-model.sh pair).
 *
 * What is modelled (every atomic block is one load or one CAS of shared
 * memory, with the local work around it; other processes interleave
 * between any two of them):
 *   - ONE slot {fp, st} of key K1: REAL with st = c, the occupancy tag, a
 *     placeholder PH(t), or sealed ({fp | SEAL, c}, L4), changed only by a
 *     CAS of the whole slot (I1); tags come from one counter, so none
 *     repeats (P1);
 *   - its pair {a, b}, changed only by a CAS of the whole pair from the
 *     exact bytes read (P1).  The masking is abstracted as P8 states it:
 *     an OPEN pair is {occupancy c, state X}, so a CAS whose expected bytes
 *     were read under another occupancy fails (the 2^-116 coincidence is
 *     left out); ABSENT(x), SEALED(c, X) and SEALED_ABSENT are values of
 *     their own;
 *   - the state X is a fixed window {w, n} (window start, count) with the
 *     limit LIMIT: a check from absent, or from a state of an older
 *     window, admits into {now, 1}; otherwise it admits iff n < LIMIT
 *     (into {w, n + 1}); a denial writes nothing (I7).  X is idle at now
 *     iff n == 0 or w < now.  Time is a clock of two windows, 0 and 1,
 *     advanced once by a clock process; a process reads it in the step
 *     that loads the pair (a now older than the state it judges is the
 *     clock skew every algorithm has, not the subject here);
 *   - writers of K1 (P3, P1): load the slot, the pair, the slot again;
 *     decode under c only if both slot loads saw {K1, c}; OPEN(X) ->
 *     OPEN(X'), ABSENT(c) from absent, ABSENT(x != c): adopt, pair first
 *     (CAS ABSENT(x) -> ABSENT(c2), c2 a new tag; then the slot {K1, c} ->
 *     {K1, c2}; then ABSENT(c2) -> OPEN(c2, X')); SEALED, or a slot that
 *     is not K1's unsealed REAL: the key left (L3: the call follows the
 *     path); any failed CAS starts over, at most ROUNDS times a check
 *     (EBUSY);
 *   - a reclaimer for key K2 (P4, then P5, then one check of K2): reads
 *     the slot and the pair as P1 says; only if the state is idle at its
 *     now (or ABSENT), CAS pair -> ABSENT(t), then CAS slot {K1, c} ->
 *     {K2, PH(t)}; then the insert: CAS the pair, whatever ABSENT it
 *     holds, to ABSENT(t); CAS the slot PH(t) -> {K2, REAL, t}; then it
 *     admits K2 with the writers' code, so a writer of K1 that decoded
 *     K2's pair would be seen (P1);
 *   - a resetter of K1 (P6): reads as P1 says; OPEN(X) -> ABSENT(c);
 *     an ABSENT pair, whatever its x, is absent already: nothing written;
 *   - fetchers of K1 (L5 + P7): seal the slot (or find it sealed), then
 *     freeze the pair (OPEN(X) -> SEALED(X), ABSENT(x) -> SEALED_ABSENT,
 *     repeated until it is frozen) and read the frozen state.  The first
 *     fetcher is the sealer; the others may find the slot sealed by one
 *     that died before freezing, so each freezes itself;
 *   - a crash (kill -9) before any shared-memory step of every process
 *     but the auditor: it stops for good (a stall is any interleaving);
 *   - the auditor: once every other process has finished, given up or
 *     died, one check of K1 (or, with fetchers, one fetch) that never
 *     crashes, with the same code: it must not give up (P9: nobody waits,
 *     whatever was left half done).
 *
 * Properties (assertions on every path; run-model.sh matches the text
 * spin prints, the expression in parentheses with macros expanded):
 *   LIMIT  (adm[nw] <= LIMIT): no over-admission: admissions of K1 whose
 *          CAS landed, counted by the window of the state they wrote,
 *          across occupancies (a reset forgets them, as it should);
 *   LIVE   (sst == lst): an admission's pair CAS lands while the slot
 *          still holds its occupancy {K1, c} (sealed or not): it is c's
 *          transition, never one left in a pair whose occupancy ended;
 *   IDLE   (gidle): an occupancy of K1 ends (the reclaim's slot CAS)
 *          only while K1's true state, all its landed admissions, is idle
 *          at the clock: what a later insert of K1 starts from (absent)
 *          equals it;
 *   P1     (ex == lst): nobody ever decodes a pair of another occupancy;
 *   P2     (p2): under a slot that is PH (not REAL) the pair is ABSENT or
 *          sealed, after every step that writes either;
 *   FROZEN (gfrozen): a freeze freezes K1's true state (every admission
 *          landed before it is in it), (nfetch == 0): no admission lands
 *          once a fetcher has read the state, and (fk == ek && ...):
 *          every fetcher reads the same state;
 *   P9     (!audit): the auditor never gives up; and spin's own check: no
 *          invalid end state (nobody waits for anybody).
 *
 * Seeded bugs (run-model.sh expects each to fail with its own property):
 *   -DBUG_SLOT_FIRST      the reclaim CASes the slot before freezing the
 *                         pair: an idle OPEN state is left under K2's
 *                         placeholder (P2); where idle means absent
 *                         (no clock, K1 starts ABSENT), a writer that
 *                         read the slot before lands its admission after
 *                         the slot CAS (LIVE);
 *   -DBUG_NO_ADOPT        a writer that finds ABSENT(x != c) writes
 *                         OPEN(c, X') without adopting: it lands after
 *                         the reclaim's slot CAS (LIVE);
 *   -DBUG_NO_RELOAD       a writer decodes without the second slot load:
 *                         it decodes K2's pair under K1's c (P1);
 *   -DBUG_NO_FREEZE       a fetcher reads the pair without freezing it: a
 *                         writer lands after the read (FROZEN);
 *   -DBUG_RECLAIM_BUSY    the reclaim ignores idleness: the next writer
 *                         adopts and admits again in the same window
 *                         (LIMIT); alone, the reclaim ends K1 busy (IDLE).
 *
 * The protocol as first written (protocol.h before this model), two
 * counterexamples that run-model.sh expects to fail:
 *   -DFLAW_ADOPT_SLOT_FIRST  the adoption CASes the slot {K1, c} ->
 *     {K1, c2} first, then the pair ABSENT(x) -> OPEN(c2, X').  K1 is idle
 *     (clock at window 1); a reclaim freezes the pair to ABSENT(t) and
 *     stops; writer A loads {K1, c1}, ABSENT(t), {K1, c1} and adopts
 *     (slot -> {K1, c3}); writer B loads {K1, c3} and ABSENT(t); A's pair
 *     CAS ABSENT(t) -> OPEN(c3, X') lands; B loads the slot again, still
 *     {K1, c3}, so P1 lets it decode: ABSENT(t != c3), and it adopts
 *     (slot -> {K1, c4}), which succeeds; B's pair CAS fails.  The slot
 *     now says c4 and the pair holds c3's bytes: every later reader
 *     decodes them with c4's mask, garbage (P1, found by the next check);
 *   -DFLAW_RESET_OVER_ABSENT  P6's reset writes ABSENT(c) over whatever
 *     the pair holds.  A reclaim freezes the idle pair to ABSENT(t); a
 *     reset loads {K1, c}, ABSENT(t), {K1, c} and CASes ABSENT(t) ->
 *     ABSENT(c), undoing the freeze (an ABA of c's bytes that P8 does not
 *     exclude); a writer loads {K1, c}, ABSENT(c), {K1, c}; the reclaim's
 *     slot CAS {K1, c} -> {K2, PH(t)} succeeds; the writer's CAS ABSENT(c)
 *     -> OPEN(c, X') succeeds: an admission returned to its caller and
 *     left in a pair whose occupancy ended (LIVE; P2 broken too).
 * Both come from one rule, which the model keeps and protocol.h now
 * states (P8): once the pair has left occupancy c's bytes for an
 * ABSENT(y), y != c, nobody writes c's bytes again, and the slot leaves
 * c only after the pair has left c's bytes (the reclaim's freeze, the
 * adoption's first CAS).
 */

#ifndef LIMIT
#define LIMIT 1
#endif
/* Starts over (failed CAS, slot moved) per check before EBUSY. */
#ifndef ROUNDS
#define ROUNDS 3
#endif
/* The mix: NW writers of K1 (WCHECKS checks each), RECLAIMER
 * reclaimers, RESETTER (0/1), NF fetchers; TICK (0/1): the clock moves
 * once. */
#ifndef NW
#define NW 2
#endif
#ifndef WCHECKS
#define WCHECKS 1
#endif
#ifndef RECLAIMER
#define RECLAIMER 1
#endif
#ifndef RESETTER
#define RESETTER 0
#endif
#ifndef NF
#define NF 0
#endif
#ifndef TICK
#define TICK 1
#endif
/* K1's state at the start: ABSENT(c1) if INIT_ABSENT, else OPEN(c1,
 * {0, INIT_N}). */
#ifndef INIT_ABSENT
#define INIT_ABSENT 0
#endif
#ifndef INIT_N
#define INIT_N 1
#endif
#ifndef CRASH
#define CRASH 1
#endif

#define K1 1
#define K2 2

#define R_WRITER 0
#define R_RECLAIMER 1
#define R_RESETTER 2
#define R_FETCHER 3

mtype = { REAL, PH, OPEN, ABSENT, SEALED, SABSENT };

/* The slot {fp, st}: fp sfp (with the seal bit sseal), st REAL c or PH t. */
byte sfp;
bit sseal;
mtype skind;
byte sst;
/* The pair: kind, tag (OPEN, SEALED: occupancy; ABSENT: x), state {w, n}. */
mtype pk;
byte px;
bit pw;
byte pn;

bit clock;
byte next_tag;

/* Ghosts: K1's landed admissions by window; K1's true state (gabs: absent,
 * else {gw, gn}); the fetches. */
byte adm[2];
bit gabs;
bit gw;
byte gn;
byte nfetch;
mtype fk;
bit fw;
byte fn;

#if CRASH
#define MAYBE_CRASH if :: !audit -> goto crashed :: skip fi
#else
#define MAYBE_CRASH skip
#endif

/* P2, after every step that writes the slot or the pair. */
#define p2 (skind == REAL || pk == ABSENT || pk == SEALED || pk == SABSENT)

/* The slot still holds K1's (or K2's) unsealed REAL {k, lst}. */
#define SLOT_SAME (sfp == lfp && !sseal && skind == REAL && sst == lst)

/* K1's true state is idle at the clock (absent equals idle). */
#define gidle (gabs || gn == 0 || gw < clock)

/* The pair frozen equals K1's true state. */
#define gfrozen ((pk == SEALED && !gabs && pw == gw && pn == gn) || \
		 (pk == SABSENT && gidle))

inline load_slot()
{
	atomic {
		lfp = sfp; ls = sseal; lk = skind; lst = sst
	}
}

inline load_pair()
{
	ek = pk; ex = px; ew = pw; en = pn; lnow = clock
}

#define PAIR_SAME (pk == ek && px == ex && pw == ew && pn == en)

/* States that differ only in stale temporaries are the same state. */
inline forget()
{
	lfp = 0; ls = 0; lk = PH; lst = 0; ek = OPEN; ex = 0; ew = 0; en = 0;
	lnow = 0; nw = 0; nn = 0; adopt = 0; idle = 0
}

proctype proc(byte k; byte role; byte id; byte nchecks; bool audit)
{
	byte lfp, lst, ex, en, nn;
	bit ls, ew, lnow, nw, adopt, idle;
	mtype lk = PH, ek = OPEN;
	byte t = 0, rounds = 0, checks = 0;

	if
	:: role == R_WRITER -> goto check
	:: role == R_RECLAIMER -> goto reclaim
	:: role == R_RESETTER -> goto reset
	:: role == R_FETCHER -> goto fetch
	fi;

	/* ---------------- P4: reclaim K1's slot for K2 ---------------- */
reclaim:
	atomic {
		forget();
		rounds++;
		if
		:: rounds > ROUNDS -> goto finish
		:: else -> skip
		fi;
		MAYBE_CRASH;
		load_slot();
		if
		:: lfp == K1 && !ls && lk == REAL -> skip
		:: else -> goto finish /* nothing of K1 to reclaim */
		fi
	};
	atomic {
		MAYBE_CRASH;
		load_pair()
	};
	atomic {
		MAYBE_CRASH;
		if
		:: SLOT_SAME -> skip
		:: else -> goto reclaim
		fi;
		if
		:: ek == OPEN ->
			assert(ex == lst); /* P1 */
			idle = (en == 0 || ew < lnow)
		:: ek == ABSENT -> idle = 1
		:: else -> goto finish /* sealed: O is being replaced */
		fi;
#ifdef BUG_RECLAIM_BUSY
		idle = 1;
#endif
		if
		:: !idle -> goto finish /* not reclaimable (EFULL) */
		:: else -> skip
		fi;
		/* K2's placeholder tag: unique to this attempt. */
		t = next_tag;
		next_tag++
	};
#ifdef BUG_SLOT_FIRST
	/* The slot first, then the pair made ABSENT(t) whatever it holds. */
	atomic {
		MAYBE_CRASH;
		if
		:: SLOT_SAME ->
			assert(gidle); /* IDLE */
			printf("P%d reclaim: slot -> K2 PH(%d)\n", id, t);
			sfp = K2; skind = PH; sst = t;
			assert(p2)
		:: else -> goto reclaim
		fi
	};
freeze_after:
	atomic {
		MAYBE_CRASH;
		load_pair()
	};
	atomic {
		MAYBE_CRASH;
		if
		:: PAIR_SAME ->
			pk = ABSENT; px = t; pw = 0; pn = 0;
			assert(p2)
		:: else -> goto freeze_after
		fi
	};
#else
	atomic {
		MAYBE_CRASH;
		if
		:: PAIR_SAME ->
			printf("P%d reclaim: pair -> ABSENT(%d)\n", id, t);
			pk = ABSENT; px = t; pw = 0; pn = 0;
			assert(p2)
		:: else -> goto reclaim
		fi
	};
	atomic {
		MAYBE_CRASH;
		if
		:: SLOT_SAME ->
			assert(gidle); /* IDLE */
			printf("P%d reclaim: slot -> K2 PH(%d)\n", id, t);
			sfp = K2; skind = PH; sst = t;
			assert(p2)
		:: else -> goto reclaim /* the reclaim failed */
		fi
	};
#endif

	/* ---------------- P5: insert K2 ---------------- */
insert:
	atomic {
		forget();
		rounds++;
		if
		:: rounds > ROUNDS -> goto finish
		:: else -> skip
		fi;
		MAYBE_CRASH;
		load_pair();
		if
		:: ek == ABSENT -> skip
		:: else -> goto finish /* OPEN: ECORRUPT (P2 says never) */
		fi
	};
	atomic {
		MAYBE_CRASH;
		if
		:: PAIR_SAME ->
			pk = ABSENT; px = t; pw = 0; pn = 0;
			assert(p2)
		:: else -> goto insert
		fi
	};
	atomic {
		MAYBE_CRASH;
		if
		:: sfp == K2 && !sseal && skind == PH && sst == t ->
			printf("P%d insert: K2 REAL c=%d\n", id, t);
			skind = REAL;
			assert(p2)
		:: else -> goto finish /* our placeholder was taken */
		fi
	};
	atomic {
		k = K2;
		nchecks = 1;
		rounds = 0
	};
	goto check;

	/* ---------------- P6: reset K1 ---------------- */
reset:
	atomic {
		forget();
		rounds++;
		if
		:: rounds > ROUNDS -> goto finish
		:: else -> skip
		fi;
		MAYBE_CRASH;
		load_slot();
		if
		:: lfp == K1 && !ls && lk == REAL -> skip
		:: else -> goto finish /* K1 absent (or sealed: follows) */
		fi
	};
	atomic {
		MAYBE_CRASH;
		load_pair();
#ifndef FLAW_RESET_OVER_ABSENT
		/* ABSENT(x), whatever x: the key is absent already, and the
		 * reset takes effect at this load (it writes nothing). */
		if
		:: ek == ABSENT ->
			adm[0] = 0; adm[1] = 0; gabs = 1; gw = 0; gn = 0;
			goto finish
		:: else -> skip
		fi
#endif
	};
	atomic {
		MAYBE_CRASH;
		if
		:: SLOT_SAME -> skip
		:: else -> goto reset
		fi;
		if
		:: ek == OPEN -> assert(ex == lst) /* P1 */
		:: ek == SEALED || ek == SABSENT -> goto finish
		:: else -> skip
		fi
	};
	atomic {
		MAYBE_CRASH;
		if
		:: PAIR_SAME ->
			printf("P%d reset: pair -> ABSENT(%d)\n", id, lst);
			pk = ABSENT; px = lst; pw = 0; pn = 0;
			adm[0] = 0; adm[1] = 0; gabs = 1; gw = 0; gn = 0;
			assert(p2)
		:: else -> goto reset
		fi;
		goto finish
	};

	/* ---------------- L5 + P7: fetch K1 (seal, freeze, read) ---------- */
fetch:
	atomic {
		forget();
		rounds++;
		if
		:: rounds > ROUNDS -> assert(!audit); goto finish /* P9 */
		:: else -> skip
		fi;
		MAYBE_CRASH;
		load_slot();
		if
		:: lfp == K1 && lk == REAL -> skip
		:: else -> goto finish /* K1 absent from O */
		fi
	};
	if
	:: !ls ->
		atomic {
			MAYBE_CRASH;
			if
			:: SLOT_SAME ->
				printf("P%d seal: slot {K1|SEAL, %d}\n", id, lst);
				sseal = 1;
				assert(p2)
			:: else -> goto fetch
			fi
		}
	:: else -> skip
	fi;
freeze:
	atomic {
		forget();
		rounds++;
		if
		:: rounds > ROUNDS -> assert(!audit); goto finish /* P9 */
		:: else -> skip
		fi;
		MAYBE_CRASH;
		load_pair();
		lst = sst;  /* the sealed slot's c, which never changes again */
		if
		:: ek == SEALED || ek == SABSENT -> goto fetched
		:: else -> skip
		fi;
#ifdef BUG_NO_FREEZE
		goto fetched
#endif
	};
	atomic {
		MAYBE_CRASH;
		if
		:: PAIR_SAME ->
			if
			:: ek == OPEN -> pk = SEALED
			:: else -> pk = SABSENT; px = 0
			fi;
			printf("P%d freeze: pair %e\n", id, pk);
			assert(gfrozen); /* FROZEN */
			assert(p2)
		:: else -> skip
		fi;
		goto freeze
	};
fetched:
	atomic {
		if
		:: ek == OPEN || ek == SEALED -> assert(ex == lst) /* P1 */
		:: else -> skip
		fi;
		/* The state read: {w, n}, or absent (fk ABSENT). */
		if
		:: ek == ABSENT || ek == SABSENT -> ek = ABSENT; ew = 0; en = 0
		:: else -> ek = OPEN
		fi;
		if
		:: nfetch == 0 -> fk = ek; fw = ew; fn = en
		:: else ->
			/* FROZEN: every fetcher reads the same state. */
			assert(fk == ek && fw == ew && fn == en)
		fi;
		nfetch++;
		printf("P%d fetched %e {%d, %d}\n", id, ek, ew, en);
		goto finish
	};

	/* ---------------- P3: checks of key k ---------------- */
check:
	atomic {
		forget();
		if
		:: checks >= nchecks -> goto finish
		:: else -> skip
		fi;
		checks++;
		rounds = 0
	};
again:
	atomic {
		forget();
		rounds++;
		if
		:: rounds > ROUNDS -> assert(!audit); goto check /* EBUSY, P9 */
		:: else -> skip
		fi;
		MAYBE_CRASH;
		load_slot();
		if
		:: lfp == k && !ls && lk == REAL -> skip
		:: else -> goto check /* absent, or sealed: L3 follows */
		fi
	};
	atomic {
		MAYBE_CRASH;
		load_pair()
	};
#ifndef BUG_NO_RELOAD
	atomic {
		MAYBE_CRASH;
		if
		:: SLOT_SAME -> skip
		:: else -> goto again
		fi
	};
#endif
	/* Decode under c = lst and decide (local work). */
	atomic {
		if
		:: ek == OPEN -> assert(ex == lst) /* P1 */
		:: ek == ABSENT -> adopt = (ex != lst)
		:: else -> goto check /* SEALED: L3 follows */
		fi;
		if
		:: ek == ABSENT || ew < lnow -> nw = lnow; nn = 1
		:: else ->
			nw = ew;
			if
			:: en < LIMIT -> nn = en + 1
			:: else -> goto check /* denied: nothing written */
			fi
		fi
	};
#ifndef BUG_NO_ADOPT
	if
	:: adopt ->
#ifdef FLAW_ADOPT_SLOT_FIRST
		/* As first written: the slot {K1, c} -> {K1, c2}, then the
		 * pair ABSENT(x) -> OPEN(c2, X') below. */
		atomic {
			MAYBE_CRASH;
			if
			:: SLOT_SAME ->
				printf("P%d adopt: slot c %d -> %d\n", id, lst,
				       next_tag);
				sst = next_tag;
				lst = next_tag;
				next_tag++;
				assert(p2)
			:: else -> goto again
			fi
		}
#else
		/* The pair first: ABSENT(x) -> ABSENT(c2), c2 a new tag, so
		 * that c's bytes are gone from the pair for good before the
		 * slot leaves c; then the slot {K1, c} -> {K1, c2}; then the
		 * write below, from ABSENT(c2). */
		atomic {
			MAYBE_CRASH;
			if
			:: PAIR_SAME ->
				printf("P%d adopt: pair ABSENT(%d) -> ABSENT(%d)\n",
				       id, ex, next_tag);
				pk = ABSENT; px = next_tag;
				ex = next_tag;
				next_tag++;
				assert(p2)
			:: else -> goto again
			fi
		};
		atomic {
			MAYBE_CRASH;
			if
			:: SLOT_SAME ->
				printf("P%d adopt: slot c %d -> %d\n", id, lst, ex);
				sst = ex;
				lst = ex;
				assert(p2)
			:: else -> goto again
			fi
		}
#endif
	:: else -> skip
	fi;
#endif
	atomic {
		MAYBE_CRASH;
		if
		:: PAIR_SAME ->
			printf("P%d admit K%d: pair OPEN(%d, {%d, %d})\n", id, k,
			       lst, nw, nn);
			pk = OPEN; px = lst; pw = nw; pn = nn;
			if
			:: k == K1 ->
				/* LIVE: the occupancy read is the slot's. */
				assert(sfp == K1 && skind == REAL && sst == lst);
				adm[nw]++;
				assert(adm[nw] <= LIMIT); /* LIMIT */
				assert(nfetch == 0); /* FROZEN */
				gabs = 0; gw = nw; gn = nn
			:: else -> skip
			fi;
			assert(p2)
		:: else -> goto again
		fi
	};
	goto check;

finish:
crashed:
	atomic {
		forget();
		rounds = 0;
		checks = 0;
		t = 0
	}
}

proctype ticker()
{
	clock = 1
}

init
{
	byte i;
	atomic {
		assert(INIT_N <= LIMIT);
		sfp = K1; sseal = 0; skind = REAL; sst = 1;
		next_tag = 2;
#if INIT_ABSENT
		pk = ABSENT; px = 1; pw = 0; pn = 0;
		gabs = 1; gw = 0; gn = 0;
#else
		pk = OPEN; px = 1; pw = 0; pn = INIT_N;
		gabs = 0; gw = 0; gn = INIT_N; adm[0] = INIT_N;
#endif
		i = 0;
		do
		:: i < NW -> run proc(K1, R_WRITER, i + 1, WCHECKS, false); i++
		:: else -> break
		od;
		i = 0;
		do
		:: i < RECLAIMER ->
			run proc(K2, R_RECLAIMER, NW + 4 + NF + i, 0, false); i++
		:: else -> break
		od;
		if
		:: RESETTER -> run proc(K1, R_RESETTER, NW + 1, 0, false)
		:: else -> skip
		fi;
		i = 0;
		do
		:: i < NF -> run proc(K1, R_FETCHER, NW + 2 + i, 0, false); i++
		:: else -> break
		od;
		if
		:: TICK -> run ticker()
		:: else -> skip
		fi;
		i = 0
	};
	/* The audit: every process has finished, given up or died. */
	(_nr_pr == 1);
	if
	:: NF > 0 -> run proc(K1, R_FETCHER, 9, 0, true)
	:: else -> run proc(K1, R_WRITER, 9, 1, true)
	fi;
	(_nr_pr == 1)
}
