/*
 * slot_protocol.pml - a model of the slot protocol of src/shm/table.c,
 * checked exhaustively by spin (tests/model/run-model.sh).
 *
 * What is modelled, step for step as table.c does it:
 *   - one bucket of NSLOTS slots {fp, kind, val}, changed only by a
 *     compare-and-swap of the whole slot (I1); a scan reads one slot per
 *     step, so other processes interleave between its reads;
 *   - check = lookup, update of the REAL slot, or insert: claim a tagged
 *     placeholder (PH), rescan, retire rival placeholders of the key, then
 *     turn the placeholder REAL (I6); victims are EMPTY, DEAD or idle slots
 *     first, then a rival placeholder of the key, then another key's
 *     placeholder, then eviction of the least-indebted REAL slot with its
 *     debt merged into the key's debt cell first (I8);
 *   - GCRA abstracted to a debt counter: a REAL value is the units the key
 *     owes; a check admits iff debt < LIMIT; a clock process lets time pass
 *     by decaying every copy of a key's debt at once (an idle REAL slot has
 *     debt 0 and may be reclaimed);
 *   - a crash (kill -9) before any shared-memory step: the process simply
 *     stops and leaves whatever it wrote (a crash between two steps is the
 *     same as a crash before the second); a worker that gives up after
 *     ROUNDS rounds leaves the same;
 *   - an auditor: once every worker has finished, given up or crashed and
 *     the clock has stopped, time passes until nobody owes anything, and
 *     one process that never crashes makes the checks of P4 or of P5 (a
 *     nondeterministic choice, so each audit meets every end state of the
 *     workers as they left it), one check at a time, with the same
 *     worker code as everybody else.
 *
 * Properties (assertions, so spin checks them on every path: P1-P3 at each
 * step, P4 and P5 at the end of each audit):
 *   P2  no over-admission: an admission happens only while the key's true
 *       debt (the ghost `owed`) is below LIMIT, whatever the interleaving,
 *       the duplicates, evictions and crashes;
 *   P4  no lost slot: after the workers, every slot can be taken again:
 *       the auditor inserts NSLOTS fresh keys (never used by a worker), and
 *       each of them ends up holding a REAL slot of its own, so that every
 *       slot is then a fresh key's.  Placeholders of dead or beaten
 *       processes, DEAD and idle slots, whatever the workers left, are all
 *       reusable by any key, without evicting anybody still in debt;
 *   P5  no stuck key: after the workers, a check of a key a worker used,
 *       whose true debt is 0, is decided within a few rounds (it does not
 *       give up, whatever placeholders or DEAD slots of the key are left)
 *       and admits;
 *   and two invariants of protocol.h that the others rely on:
 *   P1 (I5)  a key never has two REAL slots;
 *   P3 (I2)  no slot ever returns to EMPTY.
 * Seeded bugs show that each property can fail:
 *   -DBUG_NO_RETIRE drops step d of I6 (rival placeholders are not
 *     retired) and must violate P1;
 *   -DBUG_NO_DEBT_MEMORY evicts without remembering the debt and must
 *     violate P2;
 *   -DBUG_PH_NOT_STEALABLE never takes another key's placeholder as a
 *     victim, so the slot of a claimer that died stays lost to every other
 *     key: P4;
 *   -DBUG_RIVAL_NOT_STOLEN never takes a rival placeholder of the key
 *     itself as a victim, so a key whose window is full of placeholders its
 *     own dead claimers left can never be inserted again: P5.
 */

#ifndef NSLOTS
#define NSLOTS 2
#endif
#ifndef LIMIT
#define LIMIT 2
#endif
#ifndef DECAYS
#define DECAYS 1
#endif
/* Rounds of the retry loop before a worker gives up (TK_MAX_RETRIES made
 * small; giving up leaves what a crash leaves, which is also modelled). */
#ifndef ROUNDS
#define ROUNDS 4
#endif
/* Checks each worker of key 1 makes one after the other (others: one). */
#ifndef CHECKS
#define CHECKS 1
#endif
/* Workers per key (keys 1, 2, 3). */
#ifndef W1
#define W1 3
#endif
#ifndef W2
#define W2 1
#endif
#ifndef W3
#define W3 0
#endif

/* Rounds of an auditor's check before it gives up: alone, a check takes
 * two (claim; rescan, retire rivals, turn REAL), so giving up means stuck. */
#ifndef AUDIT_ROUNDS
#define AUDIT_ROUNDS 4
#endif

#define NKEYS 3  /* the workers' keys 1..3; fp 0 means EMPTY */
/* P4's fresh keys: NKEYS + 1 .. NKEYS + NSLOTS, used by the auditor only. */
#define NFP (NKEYS + NSLOTS)
#define NONE 255

/* The victim order of I8, and the seeded bugs that break it. */
#ifdef BUG_RIVAL_NOT_STOLEN
#define RIVALS 0
#else
#define RIVALS nriv
#endif

mtype = { EMPTY, REAL, PH, DEAD };

byte fp[NSLOTS];
mtype kind[NSLOTS];
byte val[NSLOTS];	/* REAL: debt; PH: tag; else 0 */
byte cell[NFP + 1];	/* remembered debt of evicted keys (max) */
byte owed[NFP + 1];	/* ghost: what each key truly owes */
byte next_tag = 1;
byte decays = 0;

/* Forget every temporary: states that differ only in stale locals are the
 * same state, which keeps the search small. */
inline forget()
{
	real = 0; rv = 0; i = 0; nriv = 0; cur = 0; tag = 0; mine = 0;
	rival[0] = 0; rivv[0] = 0; rival[1] = 0; rivv[1] = 0;
	fr = 0; ffp = 0; fv = 0; fk = EMPTY; ph = 0; phfp = 0; phv = 0;
	phk = EMPTY; ev = 0; evfp = 0; evv = 0; sfp = 0; sv = 0; sk = EMPTY;
	v = 0; vfp = 0; vv = 0; vk = EMPTY; ok = false; allok = false;
	n_ = 0; s_ = 0
}

/* P1: count the REAL slots of key k. */
inline assert_unique(k)
{
	n_ = 0;
	s_ = 0;
	do
	:: s_ < NSLOTS ->
		if
		:: fp[s_] == k && kind[s_] == REAL -> n_++
		:: else -> skip
		fi;
		s_++
	:: else -> break
	od;
	assert(n_ <= 1)
}

/* The 16-byte CAS of one slot; P1 and P3 checked on every success. */
inline cas(i, efp, ek, ev, nfp, nk, nv, ok)
{
	atomic {
		if
		:: fp[i] == efp && kind[i] == ek && val[i] == ev ->
			assert(nfp != 0); /* P3 */
			fp[i] = nfp;
			kind[i] = nk;
			val[i] = nv;
			ok = true;
			assert_unique(nfp)
		:: else -> ok = false
		fi
	}
}

/* A kill -9 may strike any worker before any shared-memory step; the
 * auditor never crashes.  (`audit` is a local, so that the choice stays a
 * local step for the partial order reduction.) */
#define MAYBE_CRASH if :: !audit -> goto crashed :: skip fi

proctype worker(byte k; byte nchecks; bool audit)
{
	byte mytag = 0, mine, real, rv, i, nriv, cur, tag;
	byte rival[NSLOTS], rivv[NSLOTS];
	byte fr, ffp, fv, ph, phfp, phv, ev, evfp, evv;
	mtype fk, phk, sk;
	byte sfp, sv, v, vfp, vv;
	mtype vk;
	bool ok, allok;
	byte n_, s_; /* assert_unique's counters */
	byte rounds = 0, checks = 0;

again:
	forget();
	rounds++;
	if
	:: !audit && rounds > ROUNDS -> goto done /* TKSHM_EBUSY */
	:: audit && rounds > AUDIT_ROUNDS -> goto done
	:: else -> skip
	fi;
	/* Scan the window one slot per step (tk_scan). */
	real = NONE; mine = NONE; nriv = 0; fr = NONE; ph = NONE; ev = NONE;
	i = 0;
	do
	:: i < NSLOTS ->
		MAYBE_CRASH;
		atomic { sfp = fp[i]; sk = kind[i]; sv = val[i] };
		/* (sfp, sk, sv) are consumed below and forgotten at the next
		 * round.) */
		if
		:: sfp == 0 ->
			/* I2: nothing of this key lies behind an EMPTY slot. */
			if
			:: fr == NONE -> fr = i; ffp = 0; fk = EMPTY; fv = 0
			:: else -> skip
			fi;
			break
		:: sfp == k && sk == REAL ->
			real = i; rv = sv;
			if
			:: mytag == 0 -> break
			:: else -> skip
			fi
		:: sfp == k && sk == PH && mytag != 0 && sv == mytag ->
			mine = i
		:: sfp == k && sk == PH && !(mytag != 0 && sv == mytag) ->
			rival[nriv] = i; rivv[nriv] = sv; nriv++
		:: sk == DEAD || (sfp != k && sk == REAL && sv == 0) ->
			if
			:: fr == NONE -> fr = i; ffp = sfp; fk = sk; fv = sv
			:: else -> skip
			fi
		:: sfp != k && sk == PH ->
#ifndef BUG_PH_NOT_STEALABLE
			if
			:: ph == NONE -> ph = i; phfp = sfp; phk = sk; phv = sv
			:: else -> skip
			fi
#else
			skip
#endif
		:: sfp != k && sk == REAL && sv > 0 ->
			if
			:: ev == NONE || sv < evv -> ev = i; evfp = sfp; evv = sv
			:: else -> skip
			fi
		fi;
		i++
	:: else -> break
	od;

	if
	:: real != NONE ->
		/* The key's REAL slot (unique, I5): retire our placeholder
		 * if we had one, then update. */
		if
		:: mytag != 0 && mine != NONE ->
			MAYBE_CRASH;
			cas(mine, k, PH, mytag, k, DEAD, 0, ok)
		:: else -> skip
		fi;
		mytag = 0;
		if
		:: rv >= LIMIT -> goto done /* denied: writes nothing (I7) */
		:: else -> skip
		fi;
		MAYBE_CRASH;
		atomic {
			cas(real, k, REAL, rv, k, REAL, rv + 1, ok);
			if
			:: ok -> assert(owed[k] < LIMIT); owed[k]++ /* P2 */
			:: else -> skip
			fi
		};
		if
		:: ok -> goto done
		:: else -> goto again
		fi
	:: real == NONE && mytag != 0 && mine != NONE ->
		/* I6 d: retire every rival placeholder of the key. */
		allok = true;
#ifndef BUG_NO_RETIRE
		i = 0;
		do
		:: i < nriv ->
			MAYBE_CRASH;
			cas(rival[i], k, PH, rivv[i], k, DEAD, 0, ok);
			if
			:: !ok -> allok = false
			:: else -> skip
			fi;
			i++
		:: else -> break
		od;
#endif
		if
		:: !allok -> goto again
		:: else -> skip
		fi;
		/* I6 e: start from the remembered debt, make it REAL. */
		cur = cell[k];
		if
		:: cur >= LIMIT ->
			MAYBE_CRASH;
			cas(mine, k, PH, mytag, k, DEAD, 0, ok);
			goto done
		:: else -> skip
		fi;
		MAYBE_CRASH;
		atomic {
			cas(mine, k, PH, mytag, k, REAL, cur + 1, ok);
			if
			:: ok -> assert(owed[k] < LIMIT); owed[k]++ /* P2 */
			:: else -> skip
			fi
		};
		if
		:: ok -> goto done
		:: else -> mytag = 0; goto again
		fi
	:: else ->
		/* Absent: decide first (a denial claims nothing), then claim a
		 * victim in the order of I2 and I8. */
		mytag = 0;
		if
		:: cell[k] >= LIMIT -> goto done
		:: else -> skip
		fi;
		if
		:: fr != NONE -> v = fr; vfp = ffp; vk = fk; vv = fv
		:: fr == NONE && RIVALS > 0 ->
			v = rival[0]; vfp = k; vk = PH; vv = rivv[0]
		:: fr == NONE && RIVALS == 0 && ph != NONE ->
			v = ph; vfp = phfp; vk = phk; vv = phv
		:: fr == NONE && RIVALS == 0 && ph == NONE && ev != NONE ->
			v = ev; vfp = evfp; vk = REAL; vv = evv;
			/* I8: remember the debt before taking the slot. */
			MAYBE_CRASH;
#ifndef BUG_NO_DEBT_MEMORY
			atomic {
				if
				:: cell[vfp] < vv -> cell[vfp] = vv
				:: else -> skip
				fi
			}
#endif
		:: else -> goto again /* every slot changed under us */
		fi;
		atomic { tag = next_tag; next_tag++ };
		MAYBE_CRASH;
		cas(v, vfp, vk, vv, k, PH, tag, ok);
		if
		:: ok -> mytag = tag
		:: else -> skip
		fi;
		goto again
	fi;
done:
	/* The check is over (decided or given up): on to the next one. */
	forget();
	mytag = 0;
	rounds = 0;
	checks++;
	if
	:: checks < nchecks -> goto again
	:: else -> skip
	fi;
crashed:
	forget();
	mytag = 0;
	rounds = 0;
	checks = 0
}

/* Time passes for every process at once: each copy of a key's debt (REAL
 * slots, its debt cell, the ghost) goes down by one, so a drained REAL slot
 * becomes idle and reclaimable.  (Uses the caller's locals k and s.) */
inline tick()
{
	k = 1;
	do
	:: k <= NFP ->
		if
		:: owed[k] > 0 -> owed[k]--
		:: else -> skip
		fi;
		if
		:: cell[k] > 0 -> cell[k]--
		:: else -> skip
		fi;
		k++
	:: else -> break
	od;
	s = 0;
	do
	:: s < NSLOTS ->
		if
		:: kind[s] == REAL && val[s] > 0 -> val[s]--
		:: else -> skip
		fi;
		s++
	:: else -> break
	od;
	k = 0;
	s = 0
}

proctype clock()
{
	byte k, s;
	do
	:: decays < DECAYS -> atomic { decays++; tick() }
	:: else -> break
	od
}

/* Runs one check of key c by the auditor and waits until it is over. */
inline audit_check(c)
{
	run worker(c, 1, true);
	(_nr_pr == 1)
}

init
{
	byte s = 0, k = 0, n = 0;
	do
	:: s < NSLOTS -> kind[s] = EMPTY; s++
	:: else -> break
	od;
	atomic {
		s = 0;
		do
		:: s < W1 -> run worker(1, CHECKS, false); s++
		:: else -> break
		od;
		s = 0;
		do
		:: s < W2 -> run worker(2, 1, false); s++
		:: else -> break
		od;
		s = 0;
		do
		:: s < W3 -> run worker(3, 1, false); s++
		:: else -> break
		od;
		run clock()
	};

	/* The audit.  Every worker has finished, given up or crashed, and the
	 * clock has stopped (a terminated process is removed only once those
	 * started after it are, so only init is left).  Then time passes until
	 * nobody owes anything: a REAL slot still in debt may rightly be kept
	 * from another key, so P4 and P5 are stated with every debt paid. */
	(_nr_pr == 1);
	atomic {
		n = 0;
		do
		:: n < LIMIT -> tick(); n++ /* a debt never exceeds LIMIT (P2) */
		:: else -> break
		od;
		n = 0
	};
	if
	:: /* P5: each key a worker used, its true debt 0, is checked once
	    * and must be admitted: only an admission raises owed[k] (to 1). */
		k = 1;
		do
		:: k <= NKEYS ->
			if
			:: (k == 1 && W1 > 0) || (k == 2 && W2 > 0) ||
			   (k == 3 && W3 > 0) ->
				assert(owed[k] == 0);
				audit_check(k);
				assert(owed[k] == 1) /* P5 */
			:: else -> skip
			fi;
			k++
		:: else -> break
		od
	:: /* P4: NSLOTS fresh keys are inserted one after the other; each
	    * insert takes a slot nobody in debt holds before it would evict,
	    * so all of them hold a REAL slot in the end only if every slot the
	    * workers left could be taken. */
		k = NKEYS + 1;
		do
		:: k <= NFP -> audit_check(k); k++
		:: else -> break
		od;
		n = 0;
		s = 0;
		do
		:: s < NSLOTS ->
			if
			:: kind[s] == REAL && fp[s] > NKEYS -> n++
			:: else -> skip
			fi;
			s++
		:: else -> break
		od;
		assert(n == NSLOTS) /* P4 (fresh keys, one REAL slot each: P1) */
	fi
}
