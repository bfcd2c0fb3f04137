/*
 * wide_protocol.pml - a model of the wide-state protocol (src/shm/protocol.h,
 * W1-W9), checked exhaustively by spin (tests/model/run-model.sh).
 *
 * What is modelled, step for step as W1-W9 describe it (each atomic block
 * of proc() is one load or one CAS of shared memory, plus local work):
 *   - one slot {fp, st}, st a control word, a placeholder or DEAD, changed
 *     only by a CAS of the whole pair (I1); the control word is {FRESH, A,
 *     D, g40}, g40 being the gen modulo GMOD (2^40 scaled down);
 *   - the slot's wide area: the word `floor` and two records of U = 2 units
 *     {gen, value}, each unit changed only by a CAS of its pair;
 *   - the state of a key: a counter c kept in two words {c, c + 4 * w}, w
 *     naming the process that wrote it (like a token bucket's {tokens,
 *     last}), so a torn record, or one mixing two writers, is a state that
 *     was never published.  An admission is allowed iff c < LIMIT and
 *     moves c to c + 1; a denial writes nothing (I7);
 *   - writers of key 1 (W2-W5): load the control; FRESH reads as absent,
 *     the full gen rebuilt from `floor` and g40; otherwise read the active
 *     record unit by unit and accept it only if every gen is equal and has
 *     the low bits g40, else read again; claim (D 0 -> 1, target g + 1) or,
 *     finding a claim, wait (read again) or steal (D -> D + 1, target
 *     g + D + 1), EBUSY at D = D_MAX; write the inactive record unit by
 *     unit (load; superseded if gen >= G; else CAS to {G, value}, reload if
 *     the CAS fails); publish (CAS to {0, 1 - A, 0, G}); on any failure
 *     start over from a fresh read (at most ROUNDS reads a check: EBUSY);
 *   - a retirer: resets key 1 (REAL -> DEAD) at any moment, whatever claim
 *     is in flight, then reinserts key 1 or inserts key 2; or reclaims the
 *     slot for key 2 while key 1 is FRESH (W9); an insert (W6) claims a
 *     placeholder, reads M over the four units (one per step), raises
 *     floor := max(floor, M) + S by CAS, makes the placeholder REAL FRESH
 *     with g40 = F and either record active; then the retirer makes
 *     admissions of its own key.  (The reclaim of an idle published state,
 *     REAL -> PLACEHOLDER, leaves the wide area as reset + insert does.)
 *   - optionally a rival inserter of key 3 (takes a DEAD slot, any
 *     placeholder, another key's FRESH state): an inserter whose
 *     placeholder was taken keeps raising the floor under the next FRESH
 *     occupant, whose gen must then be rebuilt from a higher floor;
 *   - a crash (kill -9) before any shared-memory step, if CRASH: the
 *     process stops for good.  A stall needs no modelling: spin explores
 *     every interleaving, including those in which a claimant stops after
 *     any step and resumes after the slot was reset and reinserted (the
 *     stale claimant of W8).  (For safety a crash is a stall that never
 *     ends; CRASH adds the end states.)
 *
 * Scale: D_MAX (TK_WIDE_D_MAX, 2^21 - 1) is 3; the floor spacing (2^22) is
 * S = D_MAX + 1, so W7's argument holds as in wide.c (an occupant's targets
 * are at most g_last + D_MAX < F); 2^40 is GMOD = 32.  Gens are bytes,
 * asserted below GMAX.  The slot starts at F = floor = GMOD - 2 * S, so
 * gens cross a multiple of GMOD and the FRESH rebuild (the largest value
 * not above floor with the low bits g40) really uses the modulus.
 * Wherever g40 is relied on (a writer's CAS of the control, made with the
 * gen it rebuilt or read; a record accepted), the model asserts that it
 * named the full gen (a ghost): a wrap of g40 fails loudly instead of
 * passing unnoticed.  (With -DGMOD=16 -DINIT_F=4 and a
 * rival inserter, spin finds one: a writer loads FRESH {key 1, F = 4} and
 * stops; the two inserters, taking each other's placeholders, raise the
 * floor four times, and key 1 comes back with F = 20 = 4 mod 16; the
 * writer's claim CAS succeeds on a control it reads as F = 4.  In wide.c
 * that takes a writer stopped across >= 2^18 floor raises of its slot
 * that land exactly on its F modulo 2^40.)
 *
 * Properties (assertions in every reachable state):
 *   P1 (W5, W8)  a record a reader accepts is exactly the state published
 *                at that gen by the occupant whose control it loaded
 *                (ghost history hist[gen] = {occupant, values});
 *   P2           per occupant, the ghost count of publishes equals the
 *                published count and never exceeds LIMIT: no lost update,
 *                no over-admission;
 *   P3 (W1)      a unit CAS always raises the unit's gen;
 *   P4 (W8)      no unit CAS lands in the active record of a published
 *                control, a record is complete at its gen when published,
 *                and a read of the active record is rejected only if the
 *                control moved meanwhile (a key is never wedged);
 *   P5 (W7)      a gen is published at most once per slot;
 *   and spin's own check: no invalid end state (nobody waits for anybody).
 *
 * Seeded bugs show that the model can fail:
 *   -DBUG_FLOOR_NO_MAX      the inserter sets F = M + S, not max(floor, M)
 *                           + S (and floor to max(floor, F)): a stale
 *                           claimant of a FRESH occupant (claim stolen,
 *                           nothing written, so M is below its target)
 *                           lands a unit in the next occupant's active
 *                           record (P4);
 *   -DBUG_READ_ONE_GEN      a reader checks the gen of the first unit only
 *                           and accepts a torn record (P1);
 *   -DBUG_PUBLISH_ANY_CLAIM the publish CAS accepts any claim number: a
 *                           claimant whose claim was stolen publishes, and
 *                           the thief overwrites the active record (P4);
 *   -DBUG_SUPERSEDED_GT with -DBUG_STEAL_SAME_D  W3 checks gen > G, not
 *                           gen >= G, and a steal keeps D (so the target):
 *                           two claimants of one target write the same
 *                           unit (P3);
 *   -DSPACING=1             a floor spacing below D_MAX - 1 (P4).
 * Either of the last two alone is harmless, and spin proves it: targets are
 * unique (W7), so a unit never carries its loader's target and gen > G
 * decides as gen >= G does; and with gen >= G two claimants of one target
 * race for the first unit, whose loser stops before writing anything.  For
 * the same reason spin finds no violation with S = D_MAX - 1 either (an old
 * target can equal the new occupant's first gen, not exceed it); wide.c's
 * 2^22 against 2^21 leaves room to spare.
 */

#ifndef D_MAX
#define D_MAX 3
#endif
/* The floor spacing (2^22 in wide.c); W7 takes it above D_MAX. */
#ifndef SPACING
#define SPACING (D_MAX + 1)
#endif
/* The control keeps g modulo GMOD (2^40 in wide.c). */
#ifndef GMOD
#define GMOD 32
#endif
/* The slot starts as a FRESH key 1 with F = floor = INIT_F, just below a
 * multiple of GMOD, so that the gens of every run cross one and the FRESH
 * rebuild (largest value <= floor with the low bits g40) really uses the
 * modulus. */
#ifndef INIT_F
#define INIT_F (GMOD - 2 * SPACING)
#endif
/* The claim number of the initial control: 1 if a claimant died right
 * after its claim, before writing anything (saves a process). */
#ifndef INIT_D
#define INIT_D 0
#endif
#ifndef LIMIT
#define LIMIT 2
#endif
/* Reads per check before a process gives up (EBUSY). */
#ifndef ROUNDS
#define ROUNDS 3
#endif
/* Process mix: NW writers of key 1 with WADM checks each; RETIRER (0/1)
 * with RADM checks of its new key; INSERTER (0/1), key 3, IADM checks. */
#ifndef NW
#define NW 2
#endif
#ifndef WADM
#define WADM 1
#endif
#ifndef RETIRER
#define RETIRER 1
#endif
#ifndef RADM
#define RADM 1
#endif
#ifndef INSERTER
#define INSERTER 0
#endif
#ifndef IADM
#define IADM 0
#endif
#ifndef CRASH
#define CRASH 1
#endif

#define GMAX 64		/* gens stay below (asserted) */
#define NINC 5		/* occupants: 1 initial + at most 3 inserts (asserted) */

#define K1 1
#define K2 2
#define K3 3

#define R_WRITER 0
#define R_RETIRER 1
#define R_INSERTER 2

mtype = { REAL, PH, DEAD };

/* The slot {fp, st}: st is a control {sfresh, sact, sd, sg} (REAL), a
 * placeholder tag (PH) or DEAD; unused fields are 0. */
byte sfp;
mtype skind;
bit sfresh;
bit sact;
byte sd;
byte sg;		/* g40: the gen modulo GMOD */
byte stag;
/* The wide area. */
byte floor;
byte ugen[4];		/* unit u of record r is index 2 * r + u */
byte uval[4];

/* Ghosts: the full gen of the control (F when FRESH), the occupant number
 * of the REAL state (0 otherwise), the published states by gen (0: never;
 * else occupant * 32 + value of unit 1), admissions per occupant. */
byte sgfull;
byte sinc;
byte hist[GMAX];
byte adm[NINC];
byte next_inc;

#if CRASH
#define MAYBE_CRASH if :: goto crashed :: skip fi
#else
#define MAYBE_CRASH skip
#endif

#ifdef BUG_READ_ONE_GEN
#define READ_OK (x0 % GMOD == lg)
#else
#define READ_OK (x0 == x1 && x0 % GMOD == lg)
#endif

#ifdef BUG_SUPERSEDED_GT
#define SUPERSEDED (x > G)
#else
#define SUPERSEDED (x >= G)
#endif

#ifdef BUG_PUBLISH_ANY_CLAIM
#define HOLDS_CLAIM (sd > 0)
#else
#define HOLDS_CLAIM (sd == myd)
#endif

/* The slot still holds what was loaded. */
#define SLOT_SAME (sfp == lfp && skind == lk && sfresh == lfr && sact == la && \
		   sd == ld && sg == lg && stag == lt)

/* The control names the same state as when loaded (claims aside). */
#define STATE_SAME (sfp == lfp && skind == REAL && sinc == linc && \
		    sfresh == lfr && sact == la && sgfull == lgf)

inline load_slot()
{
	atomic {
		lfp = sfp; lk = skind; lfr = sfresh; la = sact; ld = sd;
		lg = sg; lt = stag; lgf = sgfull; linc = sinc
	}
}

/* States that differ only in stale temporaries are the same state. */
inline forget()
{
	lfp = 0; lk = DEAD; lfr = 0; la = 0; ld = 0; lg = 0; lt = 0;
	lgf = 0; linc = 0; g = 0; G = 0; c = 0; myd = 0; r = 0; u = 0;
	x = 0; xv = 0; nv = 0; x0 = 0; x1 = 0; v0 = 0; v1 = 0; e = 0;
	m = 0; f = 0; nf = 0
}

/*
 * One process: a writer of key k, a retirer or an inserter (role).  Every
 * atomic block below makes exactly one access to shared memory (a load or
 * a CAS of one slot, unit or floor word), together with the local
 * computation around it, which no other process can observe: so each block
 * is one step of the real code, and other processes interleave between
 * any two of them.  (Assertions and ghosts look at anything: they observe,
 * they are not steps.)
 */
proctype proc(byte k; byte id; byte nchecks; byte role)
{
	mtype lk = DEAD;
	byte lfp, ld, lg, lt, lgf, linc;
	bit lfr, la;
	byte g, G, c, myd, r, u, x, xv, nv, x0, x1, v0, v1, e;
	byte m, f, nf;
	byte rounds = 0, checks = 0;

	if
	:: role == R_WRITER -> goto check
	:: role == R_RETIRER ->
		if
		:: goto retire
		:: k = K2; goto insert /* reclaim key 1 if FRESH (W9) */
		fi
	:: role == R_INSERTER -> goto insert
	fi;

	/* ---- reset of key 1 (I7): REAL -> DEAD, whatever is in flight ---- */
retire:
	atomic {
		MAYBE_CRASH;
		load_slot();
		if
		:: lfp == K1 && lk == REAL -> skip
		:: else -> goto reinsert
		fi
	};
	atomic {
		MAYBE_CRASH;
		if
		:: SLOT_SAME ->
			printf("P%d reset key 1 (occupant %d)\n", id, sinc);
			skind = DEAD; sfresh = 0; sact = 0; sd = 0;
			sg = 0; sgfull = 0; sinc = 0
		:: else -> goto retire
		fi
	};
reinsert:
	atomic {
		forget();
		if
		:: k = K1
		:: k = K2
		fi
	};

	/* ---- insert (I6 with one slot; W6) ---- */
insert:
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
		:: lk == REAL && lfp == k -> goto check /* present (I6 c) */
		:: lk == REAL && lfp != k && !lfr -> goto finish /* EFULL */
		:: else -> skip /* DEAD, a placeholder, another key's FRESH */
		fi
	};
	/* Claim a placeholder (I6 a).  A process has one insert attempt at a
	 * time, so its id is a tag unique to the attempt. */
	atomic {
		MAYBE_CRASH;
		if
		:: SLOT_SAME ->
			printf("P%d placeholder for key %d\n", id, k);
			sfp = k; skind = PH; sfresh = 0; sact = 0; sd = 0;
			sg = 0; stag = id; sgfull = 0; sinc = 0
		:: else -> goto insert
		fi;
		forget()
	};
	/* W6: M, the largest unit gen of both records, one unit per step. */
max:
	atomic {
		MAYBE_CRASH;
		if
		:: ugen[u] > m -> m = ugen[u]
		:: else -> skip
		fi;
		u++;
		if
		:: u < 4 -> goto max
		:: else -> u = 0
		fi
	};
	/* floor := max(floor, M) + S by CAS. */
raise:
	atomic {
		MAYBE_CRASH;
		f = floor;
#ifdef BUG_FLOOR_NO_MAX
		nf = m + SPACING; /* (the floor itself still only grows) */
#else
		nf = (f > m -> f : m) + SPACING;
#endif
		assert(nf < GMAX)
	};
	atomic {
		MAYBE_CRASH;
		if
		:: floor == f ->
#ifdef BUG_FLOOR_NO_MAX
			floor = (nf > f -> nf : f);
#else
			floor = nf;
#endif
			printf("P%d floor %d -> %d (M %d)\n", id, f, floor, m)
		:: else -> goto raise
		fi;
		f = 0;
		m = 0
	};
	/* The placeholder becomes REAL and FRESH with g40 = F (either record
	 * may be called active: none holds anything of the key). */
	atomic {
		MAYBE_CRASH;
		if
		:: sfp == k && skind == PH && stag == id ->
			skind = REAL; stag = 0; sfresh = 1; sd = 0;
			sg = nf % GMOD;
			if
			:: sact = 0
			:: sact = 1
			fi;
			sgfull = nf;
			assert(next_inc < NINC);
			sinc = next_inc;
			next_inc++;
			printf("P%d key %d REAL FRESH F=%d A=%d (occupant %d)\n",
			       id, k, nf, sact, sinc)
		:: else -> goto insert /* our placeholder was taken */
		fi;
		nf = 0
	};

	/* ---- checks of key k (W2-W5) ---- */
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
		:: rounds > ROUNDS -> goto check /* EBUSY */
		:: else -> skip
		fi;
		MAYBE_CRASH;
		load_slot();
		if
		:: lfp != k || lk != REAL -> goto finish /* the key is gone */
		:: else -> skip
		fi
	};
	if
	:: lfr ->
		/* W5: FRESH reads as absent; its full gen is the largest value
		 * not above floor with the low bits g40. */
		atomic {
			MAYBE_CRASH;
			f = floor;
			g = f - (f + GMOD - lg) % GMOD;
			c = 0;
			f = 0; lgf = 0; linc = 0
		}
	:: else ->
		/* W5: the active record, one unit per step; accepted only if
		 * every gen is equal and has the low bits g40. */
		atomic {
			MAYBE_CRASH;
			r = la;
			x0 = ugen[2 * r];
			v0 = uval[2 * r]
		};
		atomic {
			MAYBE_CRASH;
			x1 = ugen[2 * r + 1];
			v1 = uval[2 * r + 1];
			if
			:: READ_OK -> skip
			:: else ->
				/* P4: rejected only if the control moved. */
				assert(!STATE_SAME);
				goto again /* read again */
			fi;
			g = x0;
			/* P1: the state published at g by this occupant. */
			assert(g == lgf); /* g40 named the full gen */
			e = hist[g];
			assert(e != 0 && e / 32 == linc && v1 == e % 32 &&
			       v0 == v1 % 4);
			c = v0;
			x0 = 0; x1 = 0; v0 = 0; v1 = 0; e = 0; r = 0;
			lgf = 0; linc = 0
		}
	fi;

	/* W2: decide (a denial writes nothing, I7); claim, or wait or steal. */
	atomic {
		if
		:: c >= LIMIT -> goto check /* denied */
		:: else -> skip
		fi;
		if
		:: ld == 0 -> myd = 1
		:: ld > 0 && ld < D_MAX ->
			if
			:: goto again /* wait: read again */
			:: myd = ld + 1 /* steal */
			fi
		:: ld >= D_MAX ->
			if
			:: goto again /* wait: read again */
			:: goto check /* EBUSY */
			fi
		fi;
#ifdef BUG_STEAL_SAME_D
		if
		:: ld > 0 -> myd = ld
		:: else -> skip
		fi;
#endif
		G = g + myd;
		assert(G < GMAX);
		MAYBE_CRASH;
		if
		:: SLOT_SAME ->
			assert(g == sgfull); /* g40 named the full gen */
			printf("P%d claim D=%d G=%d record %d (occupant %d)\n",
			       id, myd, G, 1 - la, sinc);
			sd = myd
		:: else -> goto again
		fi;
		ld = 0;
		r = 1 - la;
		u = 0
	};

	/* W3: write record 1 - A unit by unit: load; superseded if its gen
	 * is >= G; else CAS to {G, value}, reloading if the CAS fails. */
unit:
	atomic {
		MAYBE_CRASH;
		x = ugen[2 * r + u];
		xv = uval[2 * r + u];
		if
		:: SUPERSEDED -> goto again
		:: else -> skip
		fi;
		nv = (u == 0 -> c + 1 : c + 1 + 4 * id)
	};
	atomic {
		MAYBE_CRASH;
		if
		:: ugen[2 * r + u] == x && uval[2 * r + u] == xv ->
			assert(x < G); /* P3 (W1) */
			/* P4: never into a published active record */
			assert(!(skind == REAL && !sfresh && sact == r));
			printf("P%d unit %d of record %d: gen %d -> %d\n",
			       id, u, r, x, G);
			ugen[2 * r + u] = G;
			uval[2 * r + u] = nv;
			u++
		:: else -> skip /* reload it */
		fi;
		x = 0; xv = 0; nv = 0;
		if
		:: u < 2 -> goto unit
		:: else -> u = 0
		fi
	};

	/* W4: publish; only the holder of the current claim succeeds. */
	atomic {
		MAYBE_CRASH;
		if
		:: sfp == k && skind == REAL && sfresh == lfr && sact == la &&
		   sg == lg && HOLDS_CLAIM ->
			assert(g == sgfull); /* g40 named the full gen */
			/* P4: the record published is complete at G. */
			assert(ugen[2 * r] == G && ugen[2 * r + 1] == G &&
			       uval[2 * r] == c + 1 &&
			       uval[2 * r + 1] == c + 1 + 4 * id);
			assert(hist[G] == 0); /* P5 */
			hist[G] = sinc * 32 + c + 1 + 4 * id;
			adm[sinc]++;
			assert(adm[sinc] == c + 1 && adm[sinc] <= LIMIT); /* P2 */
			printf("P%d publish G=%d record %d count %d (occupant %d)\n",
			       id, G, r, c + 1, sinc);
			sfresh = 0; sact = r; sd = 0; sg = G % GMOD; sgfull = G
		:: else -> goto again /* lost the claim: start over */
		fi;
		goto check
	};

finish:
crashed:
	atomic {
		forget();
		rounds = 0;
		checks = 0
	}
}

init
{
	byte i;
	atomic {
		/* Values {c, c + 4 * w} and hist[] need c <= 3, w <= 7. */
		assert(LIMIT <= 3 && NW + 2 <= 7 && INIT_F + SPACING < GMAX);
		/* Key 1 was just inserted: FRESH, F = floor = INIT_F. */
		sfp = K1; skind = REAL; sfresh = 1; sact = 0; sd = INIT_D;
		sg = INIT_F % GMOD; stag = 0;
		floor = INIT_F; sgfull = INIT_F; sinc = 1;
		next_inc = 2;
		i = 0;
		do
		:: i < NW -> run proc(K1, i + 1, WADM, R_WRITER); i++
		:: else -> break
		od;
		if
		:: RETIRER -> run proc(K2, NW + 1, RADM, R_RETIRER)
		:: else -> skip
		fi;
		if
		:: INSERTER -> run proc(K3, NW + 2, IADM, R_INSERTER)
		:: else -> skip
		fi;
		i = 0
	}
}
