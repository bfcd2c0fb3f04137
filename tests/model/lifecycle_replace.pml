/*
 * lifecycle_replace.pml - a model of the replacement of a table by another
 * (src/shm/protocol.h L2-L6; life.c, carry.c, table.c), checked
 * exhaustively by spin (tests/model/run-model.sh lifecycle).  The in-place
 * policy change (L1) is lifecycle_policy.pml.
 *
 * What is modelled (every atomic block is one load or one CAS of shared
 * memory, with the local work around it; other processes interleave
 * between any two):
 *   - the old table O (NO slots) and the new one N (NN slots), one window
 *     each (every slot of a table is in every key's window), slots {fp,
 *     kind, val} changed only by a CAS of the whole slot (I1).  The same
 *     hash seed: a key has the same fp in both.  A state is a count of
 *     admissions (LIMIT L, no time passing): a check admits iff the count
 *     is below L; a denial writes nothing (I7);
 *   - a seal (L4) is the CAS {fp, st} -> {fp | SEAL, st}: the sealed slot
 *     keeps its st, readable, but is nobody's REAL slot (lookups compare
 *     whole fps), so it is no victim either (no eviction, no reclaim: see
 *     below);
 *   - O's live word: REPLACED (set by an atomic OR, never cleared); N's
 *     live word: DRAINING (set while N is built privately, cleared by the
 *     drain); `path`, the name processes open (O, then N: L2); O's writer
 *     word, held by the replacer from the start (it took it to plan the
 *     change), taken over from a dead holder only (L1);
 *   - checks (table.c tk_table_apply with the victim order EMPTY or DEAD,
 *     then any placeholder: I2, I6, I8 without eviction or reclaim):
 *       an O-worker loads O's live word at the start of each check and
 *       follows the path when REPLACED is set (L3); an update is read
 *       slot, decide, CAS {fp, st} -> {fp, st + 1}, re-read on failure;
 *       an insert claims a placeholder, re-loads O's live word (seq_cst,
 *       after the claim) and, REPLACED set, retires the placeholder and
 *       follows the path: the same check goes on in N (L3);
 *       an N-worker loads N's live word at the start of each check (its
 *       instance has a predecessor iff DRAINING, life_api.c) and, with a
 *       predecessor, fetches the key's state from O (L5) at I6 e, just
 *       before making its placeholder REAL with the fetched state + 1 (or
 *       retiring it and denying when the fetched state is at L);
 *   - the fetch (L5, carry.c tk_carry_fetch): OR REPLACED into O's live
 *     word, then scan k's window of O one slot per step: retire every
 *     placeholder of k (CAS -> DEAD) and note k's REAL slot; a failed CAS
 *     scans again; after a pass without a failure, seal the REAL slot
 *     noted (CAS; a failure scans again); the state is that of k's sealed
 *     slot, else absent (0);
 *   - the replacer (L2): N is built privately with DRAINING (init); it
 *     publishes N (path := N), sets REPLACED in O, drains (L6): REPLACED
 *     again (tk_carry_drain starts with it), then every O slot in turn:
 *     a REAL slot, sealed or not, is fetched (L5 for its fp) and carried
 *     into N by an insert-if-absent (I6 in N writing the sealed state, no
 *     admission; a key N already holds is left alone); a placeholder is
 *     retired (the fix below); then DRAINING is cleared and the writer
 *     word released.  A taker (tk_drain_orphan: a process opening N and
 *     finding it DRAINING) takes O's writer word from a dead holder, with
 *     no wait, and runs the same drain;
 *   - a crash (kill -9) before any shared-memory step of any process but
 *     the auditor: it stops for good, and is dead for the writer word's
 *     take-over (a ghost: what tk_holder_liveness reads).  A worker that
 *     runs out of rounds (EBUSY) leaves the same as a crash;
 *   - the auditor: once every process has finished, given up or died,
 *     it inspects the tables (P4) and then checks each key once as a
 *     fresh N-worker that never crashes (P3), with the same code.
 *
 * Properties (assertions on every path):
 *   P1 no over-admission, in the exact form: an admitting CAS (in O or in
 *      N, its caller alive or not) starts from the key's true count of
 *      admissions so far, made in O and N together (the ghost adm[k]), and
 *      that count is below L.  So no admission is lost, none is counted
 *      twice, and together they never exceed L;
 *   P2 (I5) at most one REAL slot per key in each table (sealed slots are
 *      no key's), checked at every CAS;
 *   P3 no stuck key: after every process, a fresh worker on N admits k iff
 *      fewer than L admissions of k were made;
 *   P4 after a drain completed (DRAINING cleared): every key admitted at
 *      least once has its REAL slot in N holding exactly its count, and no
 *      unsealed REAL slot in O (whoever still holds O finds it absent and
 *      follows);
 *   and L2 itself: a worker that follows REPLACED finds the path naming N.
 *
 * What maps to what: L2 the replacer's publish then OR; L3 the O-worker's
 * live-word load at each check and its re-load after each claim; L4 the
 * seal CAS and the OR before every scan of the fetch; L5 the fetch at I6 e
 * of an N-insert while the instance has a predecessor; L6 the drain.
 *
 * Abstractions.  The window is the whole table (2-3 slots).  No eviction
 * and no reclaim (no time passes): a sealed slot stays in O, and a full
 * window refuses (the model asserts a carry never finds N full).  The fetch
 * the real code also makes at the absent-key decision (before the claim)
 * is not modelled: its effects (OR, retires, seal) are a subset of the
 * fetch at I6 e, which decides the state written.  The carry's insert
 * writes the state its fetch read (tk_carry_step) and skips the refetch
 * tk_absent_state makes: the sealed state is final, so both read the same.
 *
 * The fix the model carries (found by this model): the drain retires every
 * placeholder it meets in O.  As L6 was first written (the drain skips
 * non-REAL slots, carry.c tk_drain_slot), an O-insert that re-loaded the
 * live word just before REPLACED was set keeps its placeholder through the
 * whole drain and makes it REAL after DRAINING is cleared: an admission
 * in O that N never sees (-DDRAIN_SKIPS_PH shows it, P4).  And the fetch
 * that runs out of rounds fails the check or the drain (EBUSY); reading it
 * as "absent", as tk_seal_key's -1 does, carries nothing while O still
 * holds the key (-DFETCH_GIVES_ABSENT shows it, P1).  And the fetch seals
 * k's REAL slot only at the end of a pass that retired every placeholder
 * of k in the window: sealing it as the pass meets it (-DSEAL_IN_PASS, as
 * carry.c tk_seal_key does) lets an O-insert of k that re-loaded the live
 * word before REPLACED, and whose placeholder lies further on in the
 * window, rescan after the seal, find no REAL slot (the sealed one is
 * nobody's) and make its placeholder REAL from 0 before the pass reaches
 * it: an admission that does not count the sealed ones (P1; two O-workers,
 * mix race).  Retiring first, sealing last closes it: an O-insert that
 * missed REPLACED claimed before REPLACED, so before the pass, which then
 * retires its placeholder (its make-REAL fails) or finds it REAL already,
 * and then (I5, no seal yet) it is the only REAL slot, the one sealed.
 *
 * Scale.  Tags are the process's id and the parity of its claims (one
 * attempt at a time per process).  Rounds of a check (ROUNDS) are 3 in the
 * small mixes and 2 in the larger ones: a check that runs out gives up
 * (EBUSY), which leaves what a crash leaves.
 *
 * Seeded bugs, each must violate its property:
 *   -DBUG_NO_RECHECK         the O-insert does not re-load O's live word
 *                            after its claim (L3): P1;
 *   -DBUG_SEAL_FIRST         the fetch sets REPLACED after its scan, not
 *                            before (L4): P1;
 *   -DBUG_KEEP_O_PH          the fetch does not retire O placeholders of
 *                            the key (L5): P1;
 *   -DBUG_DRAIN_SKIPS_SEALED the drain skips slots already sealed (L6): a
 *                            fetcher that sealed and died before inserting
 *                            into N loses the key: P4.
 */

#ifndef NO
#define NO 2		/* slots of O */
#endif
#ifndef NN
#define NN 2		/* slots of N */
#endif
#ifndef LIMIT
#define LIMIT 2
#endif
#ifndef ROUNDS
#define ROUNDS 3	/* scans per check before EBUSY */
#endif
#ifndef FROUNDS
#define FROUNDS 2	/* scans of O per fetch before EBUSY */
#endif
#ifndef AUDIT_ROUNDS
#define AUDIT_ROUNDS 4
#endif
/* Initial states of keys 1 and 2 in O (0: absent; else a REAL slot with
 * that count, adm[] starting at it).  Slots 0, 1 in that order. */
#ifndef INIT1
#define INIT1 0
#endif
#ifndef INIT2
#define INIT2 0
#endif
/* The process mix: O-workers of key 1 (OW1, checks OC1 each) and key 2
 * (OW2, one check each), N-workers of key 1 (NW1) and key 2 (NW2), one
 * check each; REPL: the replacer (1) or, 0, a replacer that died after
 * publishing N and before setting REPLACED (the initial state has path N,
 * DRAINING, O's writer word held by the dead); TAKER (0/1). */
#ifndef OW1
#define OW1 1
#endif
#ifndef OC1
#define OC1 1
#endif
#ifndef OW2
#define OW2 0
#endif
#ifndef NW1
#define NW1 1
#endif
#ifndef NW2
#define NW2 0
#endif
#ifndef REPL
#define REPL 1
#endif
#ifndef TAKER
#define TAKER 0
#endif

#define NKEYS 2
#define SEAL 8		/* fp | SEAL: a sealed slot (TK_FP_SEAL) */
#define NS (NO + NN)
#define NONE 255
#define TO 0		/* table O: slots 0 .. NO - 1 */
#define TN 1		/* table N: slots NO .. NO + NN - 1 */
#define BASE(t) ((t) == TO -> 0 : NO)
#define END(t) ((t) == TO -> NO : NS)
#define TABLE(i) ((i) < NO -> TO : TN)

#define R_OW 0		/* O-worker */
#define R_NW 1		/* N-worker */
#define R_REPL 2	/* replacer */
#define R_TAKER 3	/* taker of a dead replacer's drain */
#define R_AUDIT 4	/* the auditor's checks */
#define ID_REPL 1	/* the replacer's identity (writer word) */
#define NIDS 10

#define M_CHECK 0	/* an insert that admits */
#define M_CARRY 1	/* the drain's insert-if-absent of a sealed state */

mtype = { EMPTY, REAL, PH, DEAD };

byte fp[NS];
mtype kd[NS];
byte val[NS];		/* REAL: count; PH: tag; else 0 */
bit replaced;		/* O's live word: REPLACED */
bit draining;		/* N's live word: DRAINING */
bit path;		/* 0: the path names O; 1: N */
byte owriter;		/* O's writer word: 0 or a holder's identity */
bit dead[NIDS];		/* ghost: the process is dead (liveness) */
bit repl_over;		/* ghost: the replacer finished or died */
byte adm[NKEYS + 1];	/* ghost: admissions of each key, O and N */

/* P2 (I5): key c has at most one REAL slot in table tt. */
inline assert_unique(tt, c)
{
	n_ = 0;
	s_ = BASE(tt);
	do
	:: s_ < END(tt) ->
		if
		:: fp[s_] == c && kd[s_] == REAL -> n_++
		:: else -> skip
		fi;
		s_++
	:: else -> break
	od;
	assert(n_ <= 1); /* P2 */
	n_ = 0;
	s_ = 0
}

/* The 16-byte CAS of one slot. */
inline cas(i, efp, ek, ev, nfp, nk, nv, ok)
{
	atomic {
		if
		:: fp[i] == efp && kd[i] == ek && val[i] == ev ->
			fp[i] = nfp;
			kd[i] = nk;
			val[i] = nv;
			ok = true;
			printf("P%d CAS %c%d {%d,%e,%d} -> {%d,%e,%d}\n", id,
			       (i < NO -> 'O' : 'N'), (i < NO -> i : i - NO),
			       efp, ek, ev, nfp, nk, nv);
			if
			:: nk == REAL && nfp < SEAL -> assert_unique(TABLE(i), nfp)
			:: else -> skip
			fi
		:: else -> ok = false
		fi
	}
}

/* An admitting CAS: P1 checked on success. */
inline cas_admit(i, efp, ek, ev, cnt, ok)
{
	atomic {
		cas(i, efp, ek, ev, efp, REAL, cnt + 1, ok);
		if
		:: ok ->
			assert(cnt == adm[efp] && cnt < LIMIT); /* P1 */
			adm[efp]++
		:: else -> skip
		fi
	}
}

/* A crash (kill -9) before the step that follows, in the same atomic
 * block: the process stops for good.  The auditor never crashes. */
#define MAYBE_CRASH if :: role != R_AUDIT -> goto crashed :: skip fi

/* Forget every temporary: states that differ only in stale locals are the
 * same state. */
inline forget()
{
	real = NONE; rv = 0; mine = NONE; nriv = 0; rival[0] = 0; rivv[0] = 0;
	rival[1] = 0; rivv[1] = 0; fr = NONE; ph = NONE; phfp = 0; phv = 0;
	i = 0; sfp = 0; sk = EMPTY; sv = 0; ok = false; allok = false;
	f = 0; fround = 0; retry = false; tag = 0; v = 0; vfp = 0; vk = EMPTY;
	vv = 0
}

/*
 * One process: an O-worker, an N-worker, the replacer, a taker or the
 * auditor (role).  Every atomic block makes one access to shared memory
 * (a load or a CAS of one slot or word), with the local work around it,
 * which nobody else observes: so each block is one step of the real code.
 * (Assertions and ghosts look at anything: they observe, they are not
 * steps.)
 */
proctype proc(byte role; byte k0; byte nchecks; byte id)
{
	byte k = k0;		/* the key of the check or of the carry */
	bit t = TO;		/* the table the process is on */
	bit haspred = 0;	/* its N instance has a predecessor */
	byte mode = M_CHECK;
	byte cst = 0;		/* the carried state (M_CARRY) */
	byte mytag = 0, real, rv, mine, nriv, rival[2], rivv[2];
	byte fr, ph, phfp, phv, i, sfp, sv, f, fround, tag, v, vfp, vv;
	mtype sk, vk;
	bool ok, allok, retry;
	byte ret = 0;		/* where a fetch returns to */
	byte di = 0;		/* the drain's position in O */
	byte rounds = 0, checks = 0;
	bit tagbit = 0;
	byte n_, s_;

	atomic {
		forget();
		if
		:: role == R_OW -> t = TO; goto check
		:: role == R_AUDIT -> t = TN; goto check
		:: role == R_NW -> t = TN
		:: role == R_REPL -> goto replace
		:: role == R_TAKER -> goto take
		fi
	};
	/* An N-worker opens the path once it names N (never, if the
	 * replacer died before publishing N). */
	atomic {
		(path == 1 || repl_over);
		if
		:: path == 0 -> goto finish
		:: else -> goto check
		fi
	};

	/* ---------------- checks ---------------- */
check:
	atomic {
		forget();
		mytag = 0;
		if
		:: checks >= nchecks -> goto finish
		:: else -> skip
		fi;
		checks++;
		rounds = 0;
		if
		:: t == TN -> goto on_n
		:: else -> skip
		fi;
		/* L3: O's live word at the start of each check. */
		MAYBE_CRASH;
		if
		:: replaced -> skip /* follow */
		:: else -> goto again
		fi
	};
follow:
	atomic {
		/* L2, L3: REPLACED is set only once the path names N. */
		assert(path == 1);
		t = TN;
		rounds = 0
	};
on_n:
	/* N's live word at the start of the call: a predecessor iff
	 * DRAINING. */
	atomic {
		MAYBE_CRASH;
		haspred = draining
	};

again:
	atomic {
		forget();
		rounds++;
		if
		:: mode == M_CHECK && role != R_AUDIT && rounds > ROUNDS ->
			goto check /* EBUSY */
		:: mode == M_CHECK && role == R_AUDIT && rounds > AUDIT_ROUNDS ->
			goto check
		:: mode == M_CARRY && rounds > ROUNDS ->
			goto drain_failed /* EBUSY: the drain fails */
		:: else -> skip
		fi;
		i = BASE(t)
	};
	/* Scan the window one slot per step. */
scan:
	atomic {
		MAYBE_CRASH;
		sfp = fp[i]; sk = kd[i]; sv = val[i];
		i++;
		if
		:: sk == EMPTY ->
			if
			:: fr == NONE -> fr = i - 1; vfp = 0; vk = EMPTY; vv = 0
			:: else -> skip
			fi;
			i = END(t) /* I2: nothing of the key lies behind it */
		:: sfp == k && sk == REAL ->
			real = i - 1; rv = sv
		:: sfp == k && sk == PH && mytag != 0 && sv == mytag ->
			mine = i - 1
		:: sfp == k && sk == PH && !(mytag != 0 && sv == mytag) ->
			rival[nriv] = i - 1; rivv[nriv] = sv; nriv++
		:: sk == DEAD ->
			if
			:: fr == NONE -> fr = i - 1; vfp = sfp; vk = DEAD; vv = 0
			:: else -> skip
			fi
		:: sfp != k && sk == PH ->
			if
			:: ph == NONE -> ph = i - 1; phfp = sfp; phv = sv
			:: else -> skip
			fi
		:: sfp != k && sk == REAL -> skip /* another key, sealed or not */
		fi;
		sfp = 0; sk = EMPTY; sv = 0;
		if
		:: i < END(t) -> goto scan
		:: else -> i = 0
		fi;

		/* Decide (local), up to the next step. */
		if
		:: real != NONE -> goto present
		:: real == NONE && mytag != 0 && mine != NONE -> allok = true;
			goto retire_rivals
		:: else -> goto absent
		fi
	};

present:
	/* I6 c: the key is present: retire our placeholder, update. */
	atomic {
		if
		:: mytag != 0 && mine != NONE ->
			MAYBE_CRASH;
			cas(mine, k, PH, mytag, k, DEAD, 0, ok)
		:: else -> skip
		fi;
		mytag = 0;
		if
		:: mode == M_CARRY -> goto carried /* N has it: leave it */
		:: rv >= LIMIT -> goto check /* denied: writes nothing */
		:: else -> skip
		fi
	};
	atomic {
		MAYBE_CRASH;
		cas_admit(real, k, REAL, rv, rv, ok);
		if
		:: ok -> goto check
		:: else -> goto again
		fi
	};

retire_rivals:
	/* I6 d: retire every rival placeholder of the key. */
	atomic {
		if
		:: i < nriv ->
			MAYBE_CRASH;
			cas(rival[i], k, PH, rivv[i], k, DEAD, 0, ok);
			if
			:: !ok -> allok = false
			:: else -> skip
			fi;
			i++;
			goto retire_rivals
		:: else -> i = 0
		fi;
		if
		:: !allok -> goto again
		:: else -> skip
		fi;
		/* I6 e: the state the key starts from. */
		if
		:: mode == M_CARRY -> f = cst
		:: mode == M_CHECK && t == TN && haspred -> ret = 1; goto fetch /* L5 */
		:: else -> f = 0
		fi
	};
fetched1:
	atomic {
		MAYBE_CRASH;
		if
		:: mode == M_CARRY ->
			cas(mine, k, PH, mytag, k, REAL, f, ok)
		:: mode == M_CHECK && f >= LIMIT ->
			/* denied from the fetched state: the slot goes back */
			cas(mine, k, PH, mytag, k, DEAD, 0, ok);
			goto check
		:: else ->
			cas_admit(mine, k, PH, mytag, f, ok)
		fi;
		if
		:: ok && mode == M_CARRY -> goto carried
		:: ok -> goto check
		:: else -> mytag = 0; goto again /* our placeholder was taken */
		fi
	};

absent:
	/* Absent: claim a victim (I2, I8: EMPTY or DEAD first, then any
	 * placeholder; no eviction, no reclaim). */
	atomic {
		mytag = 0;
		if
		:: fr != NONE -> v = fr
		:: fr == NONE && nriv > 0 ->
			v = rival[0]; vfp = k; vk = PH; vv = rivv[0]
		:: fr == NONE && nriv == 0 && ph != NONE ->
			v = ph; vfp = phfp; vk = PH; vv = phv
		:: else ->
			/* Full of REAL slots (sealed or other keys'). */
			assert(mode == M_CHECK); /* a carry always finds room */
			goto check /* EFULL */
		fi;
		/* A tag unique to the attempt: the process's id and the
		 * parity of its claims (a process has one attempt at a time;
		 * a placeholder a rival read stays distinguishable from the
		 * process's next one). */
		tagbit = 1 - tagbit;
		tag = id + 16 * tagbit;
		MAYBE_CRASH;
		cas(v, vfp, vk, vv, k, PH, tag, ok);
		if
		:: ok -> mytag = tag
		:: else -> goto again
		fi;
#ifndef BUG_NO_RECHECK
		if
		:: t == TO -> skip
		:: else -> goto again
		fi
#else
		goto again
#endif
	};
	/* L3: O's live word again, after the claim (seq_cst): replaced, the
	 * placeholder is retired and the check follows the path. */
	atomic {
		MAYBE_CRASH;
		if
		:: replaced ->
			printf("P%d O-insert: REPLACED, follows\n", id)
		:: else ->
			printf("P%d O-insert: not REPLACED\n", id);
			goto again
		fi
	};
	atomic {
		MAYBE_CRASH;
		cas(v, k, PH, mytag, k, DEAD, 0, ok);
		mytag = 0;
		goto follow
	};

	/* ---------------- L5: fetch key k's state from O ---------------- */
fetch:
	atomic {
		fround++;
		if
		:: fround > FROUNDS ->
#ifdef FETCH_GIVES_ABSENT
			f = 0; goto fetch_done /* tk_seal_key's -1 */
#else
			if
			:: mode == M_CARRY -> goto drain_failed
			:: else -> goto check /* EBUSY */
			fi
#endif
		:: else -> skip
		fi;
		f = 0; retry = false; i = 0;
#ifndef BUG_SEAL_FIRST
		/* L4: no seal before REPLACED is in O's live word. */
		MAYBE_CRASH;
		replaced = 1;
		printf("P%d fetch %d: OR REPLACED\n", id, k)
#endif
	};
fetch_slot:
	atomic {
		MAYBE_CRASH;
		sfp = fp[i]; sk = kd[i]; sv = val[i];
		if
		:: sfp == k + SEAL && sk == REAL -> f = sv
		:: sfp == k && sk == REAL ->
			/* The key's REAL slot: sealed once the whole window has
			 * been passed (the fix below). */
			real = i; rv = sv;
#ifdef SEAL_IN_PASS
			goto fetch_cas
#else
			skip
#endif
		:: sfp == k && sk == PH -> goto fetch_cas
		:: else -> skip
		fi;
		goto fetch_next
	};
fetch_cas:
	atomic {
		MAYBE_CRASH;
		if
		:: sk == PH ->
#ifndef BUG_KEEP_O_PH
			cas(i, k, PH, sv, k, DEAD, 0, ok);
			if
			:: !ok -> retry = true
			:: else -> skip
			fi
#else
			skip
#endif
		:: else ->
			cas(i, k, REAL, sv, k + SEAL, REAL, sv, ok);
			if
			:: ok -> f = sv; real = NONE; rv = 0
			:: else -> retry = true
			fi
		fi
	};
fetch_next:
	atomic {
		sfp = 0; sk = EMPTY; sv = 0;
		i++;
		if
		:: i < NO && !retry -> goto fetch_slot
		:: else -> i = 0
		fi;
		if
		:: retry -> real = NONE; rv = 0; goto fetch
		:: !retry && real != NONE -> goto fetch_seal
#ifdef BUG_SEAL_FIRST
		:: else -> goto fetch_late_or
#else
		:: else -> goto fetch_done
#endif
		fi
	};
fetch_seal:
	/* The fix: the seal comes after every placeholder of the key in the
	 * window was retired, in a pass that met no change. */
	atomic {
		MAYBE_CRASH;
		cas(real, k, REAL, rv, k + SEAL, REAL, rv, ok);
		if
		:: ok -> f = rv; real = NONE; rv = 0
		:: else -> real = NONE; rv = 0; goto fetch
		fi;
#ifdef BUG_SEAL_FIRST
		goto fetch_late_or
#else
		goto fetch_done
#endif
	};
#ifdef BUG_SEAL_FIRST
fetch_late_or:
	atomic {
		MAYBE_CRASH;
		replaced = 1;
		printf("P%d fetch %d: OR REPLACED (late)\n", id, k)
	};
#endif
fetch_done:
	atomic {
		fround = 0; retry = false;
		if
		:: ret == 1 -> ret = 0; goto fetched1
		:: ret == 2 -> ret = 0; goto fetched2
		fi
	};

	/* ---------------- L2: the replacer ---------------- */
replace:
	/* N was built privately, DRAINING (init).  Publish it. */
	atomic {
		MAYBE_CRASH;
		path = 1;
		printf("P%d path := N\n", id)
	};
	atomic {
		MAYBE_CRASH;
		replaced = 1;
		printf("P%d OR REPLACED\n", id);
		goto drain
	};

	/* ---------------- a taker of a dead replacer's drain ------------- */
take:
	/* A process that opens N once the replacer is over. */
	atomic {
		(repl_over);
		MAYBE_CRASH;
		if
		:: !draining -> goto finish /* no predecessor: nothing to do */
		:: else -> skip
		fi
	};
	atomic {
		MAYBE_CRASH;
		v = owriter;
		if
		:: v != 0 && !dead[v] -> goto finish /* held: no wait */
		:: else -> skip
		fi
	};
	atomic {
		MAYBE_CRASH;
		if
		:: owriter == v -> owriter = id
		:: else -> goto finish
		fi;
		v = 0
	};

	/* ---------------- L6: the drain ---------------- */
drain:
	atomic {
		MAYBE_CRASH;
		replaced = 1;
		printf("P%d drain: OR REPLACED\n", id);
		di = 0
	};
drain_slot:
	atomic {
		if
		:: di >= NO -> goto drain_done
		:: else -> skip
		fi;
		MAYBE_CRASH;
		forget();
		mode = M_CARRY; mytag = 0; rounds = 0;
		sfp = fp[di]; sk = kd[di]; sv = val[di];
		if
		:: sk == REAL ->
#ifdef BUG_DRAIN_SKIPS_SEALED
			if
			:: sfp >= SEAL -> goto drain_next
			:: else -> skip
			fi;
#endif
			/* Sealed or not, the key goes through L5, then into N
			 * if N has no state of it. */
			k = (sfp >= SEAL -> sfp - SEAL : sfp);
			ret = 2;
			goto fetch
		:: sk == PH ->
#ifndef DRAIN_SKIPS_PH
			skip
#else
			goto drain_next
#endif
		:: else -> goto drain_next
		fi
	};
	/* The fix: the drain retires a placeholder, so that an O-insert that
	 * missed REPLACED cannot make it REAL after the drain. */
	atomic {
		MAYBE_CRASH;
		cas(di, sfp, PH, sv, sfp, DEAD, 0, ok);
		if
		:: ok -> goto drain_next
		:: else -> goto drain_slot /* read it again */
		fi
	};
fetched2:
	/* Carry: insert-if-absent into N with the sealed state (I6). */
	atomic {
		cst = f;
		t = TN;
		rounds = 0;
		goto again
	};
carried:
	atomic {
		t = TO; k = 0; cst = 0; mytag = 0; rounds = 0;
		forget();
		goto drain_next
	};
drain_next:
	atomic {
		di++;
		goto drain_slot
	};
drain_done:
	atomic {
		MAYBE_CRASH;
		draining = 0;
		printf("P%d drain done: DRAINING cleared\n", id)
	};
drain_failed:
	/* The writer word is released, done or not (a failed drain leaves
	 * DRAINING for the next taker). */
	atomic {
		MAYBE_CRASH;
		if
		:: owriter == id -> owriter = 0
		:: else -> skip
		fi;
		goto finish
	};

crashed:
	/* Liveness matters for the writer word only (whoever else dies
	 * leaves what a finished process leaves). */
	if
	:: role == R_REPL || role == R_TAKER -> dead[id] = 1
	:: else -> skip
	fi;
finish:
	atomic {
		if
		:: role == R_REPL -> repl_over = 1
		:: else -> skip
		fi;
		forget();
		k = 0; t = 0; haspred = 0; mode = 0; cst = 0; mytag = 0; tagbit = 0;
		ret = 0; di = 0; rounds = 0; checks = 0
	}
}

/* P4: after a completed drain, each key admitted at least once has its REAL
 * slot in N with exactly its count, and no unsealed REAL slot in O. */
inline audit_drained()
{
	c = 1;
	do
	:: c <= NKEYS ->
		n = 0; s = 0;
		do
		:: s < NS ->
			if
			:: s < NO && fp[s] == c && kd[s] == REAL -> n = 9
			:: s >= NO && fp[s] == c && kd[s] == REAL && val[s] == adm[c] ->
				n++
			:: else -> skip
			fi;
			s++
		:: else -> break
		od;
		assert(adm[c] == 0 || n == 1); /* P4 */
		c++
	:: else -> break
	od;
	n = 0; s = 0; c = 0
}

init
{
	byte s, c, n, id = 2;
	atomic {
		assert(INIT1 <= LIMIT && INIT2 <= LIMIT && NN >= NKEYS);
		s = 0;
		do
		:: s < NS -> kd[s] = EMPTY; s++
		:: else -> break
		od;
		s = 0;
		if
		:: INIT1 > 0 -> fp[s] = 1; kd[s] = REAL; val[s] = INIT1; s++
		:: else -> skip
		fi;
		if
		:: INIT2 > 0 -> fp[s] = 2; kd[s] = REAL; val[s] = INIT2; s++
		:: else -> skip
		fi;
		adm[1] = INIT1;
		adm[2] = INIT2;
		/* N is built (empty) with DRAINING; O's writer word is the
		 * replacer's.  Without a live replacer, it died after
		 * publishing N and before setting REPLACED. */
		draining = 1;
		owriter = ID_REPL;
		if
		:: REPL -> run proc(R_REPL, 0, 0, ID_REPL)
		:: else -> path = 1; dead[ID_REPL] = 1; repl_over = 1
		fi;
		s = 0;
		do
		:: s < OW1 -> run proc(R_OW, 1, OC1, id); id++; s++
		:: else -> break
		od;
		s = 0;
		do
		:: s < OW2 -> run proc(R_OW, 2, 1, id); id++; s++
		:: else -> break
		od;
		s = 0;
		do
		:: s < NW1 -> run proc(R_NW, 1, 1, id); id++; s++
		:: else -> break
		od;
		s = 0;
		do
		:: s < NW2 -> run proc(R_NW, 2, 1, id); id++; s++
		:: else -> break
		od;
		if
		:: TAKER -> run proc(R_TAKER, 0, 0, id); id++
		:: else -> skip
		fi;
		assert(id <= NIDS);
		s = 0
	};

	/* The audit, once every process has finished, given up or died. */
	(_nr_pr == 1);
	atomic {
		if
		:: !draining -> audit_drained()
		:: else -> skip
		fi
	};
	/* P3: each key, checked once by a fresh N-worker, is admitted iff
	 * fewer than LIMIT admissions of it were made. */
	c = 1;
	do
	:: c <= NKEYS ->
		if
		:: (c == 1 && (OW1 + NW1 > 0 || INIT1 > 0)) ||
		   (c == 2 && (OW2 + NW2 > 0 || INIT2 > 0)) ->
			n = adm[c];
			run proc(R_AUDIT, c, 1, 0);
			(_nr_pr == 1);
			assert((adm[c] == n + 1) == (n < LIMIT)) /* P3 */
		:: else -> skip
		fi;
		c++
	:: else -> break
	od
}
