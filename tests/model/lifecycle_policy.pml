/*
 * lifecycle_policy.pml - a model of the in-place policy change (protocol.h
 * L1; src/shm/life.c), checked exhaustively by spin (tests/model/
 * run-model.sh policy).  The replacement (L2-L6) is lifecycle_replace.pml.
 *
 * What is modelled (each atomic block is one load, store or CAS of shared
 * memory; other processes interleave between any two):
 *   - the live word's generation g (its flags play no part here), two
 *     policy records rec[0], rec[1] of {gen, half A, half B}: a record is
 *     written one word at a time (tk_rec_copy_out, relaxed stores, gen
 *     first), its checksum (XXH64 over gen and policy) abstracted as: each
 *     half carries the gen and payload it was written with (8 * gen + p),
 *     and the record checks iff both halves agree with each other and with
 *     the gen read;
 *   - the writer word: 0, or the identity of its holder, taken by CAS from
 *     0 or from a holder that is dead (tk_writer_take: never from a live
 *     one, stopped or not), released by CAS from its own identity;
 *   - writers W1, W2: take the writer word (bounded tries), read g, write
 *     rec[(g+1) & 1] = {g+1, p, p} (p = the writer's payload), move the
 *     live word g -> g+1 (CAS; only the holder moves it here), release;
 *   - readers R1, R2: load g, read rec[g & 1] word by word, accept it iff
 *     its gen is g and both halves agree, else reload (bounded tries, then
 *     keep the policy they had: accept nothing);
 *   - a crash (kill -9) before any step of any writer or reader: it stops
 *     for good and is dead for the writer word's take-over.
 *
 * Properties:
 *   Q1 a reader accepts only what one writer published whole for that
 *      generation (ghost pub[g]: the payload whose CAS moved the live word
 *      to g);
 *   Q2 the live word never goes backwards, and moves by one;
 *   Q3 no stuck writer word: after every process, a fresh writer takes it
 *      (from 0, or from a dead holder) and publishes.
 *
 * Seeded bugs, each must violate its property:
 *   -DBUG_CHECKSUM_NO_GEN  the checksum covers the policy but not the gen:
 *                          a reader of g that read the gen before a writer
 *                          of g+2 rewrote the record accepts g+2's policy
 *                          as g's: Q1 (why tk_rec_checksum covers gen);
 *   -DBUG_NO_GEN_CHECK     the reader does not compare the record's gen
 *                          with the one it loaded: Q1;
 *   -DBUG_NO_TAKEOVER      a dead holder's writer word is never taken: Q3.
 * Writing the next generation into the other record (rec[(g+1) & 1]) is
 * what lets readers of g go on reading theirs while a change is written;
 * the checksum alone keeps a torn record from being accepted.
 */

#ifndef WRITERS
#define WRITERS 2
#endif
#ifndef READERS
#define READERS 2
#endif
#ifndef TRIES
#define TRIES 2
#endif
#define NIDS 8
#define MAXG 4

byte live;		/* the live word's generation */
byte rgen[2];		/* rec[i].gen */
byte ra[2];		/* rec[i] half A */
byte rb[2];		/* rec[i] half B */
byte writer;		/* the writer word: 0 or a holder's identity */
bit dead[NIDS];		/* ghost: the process is dead */
byte pub[MAXG + 1];	/* ghost: the payload published as generation g */

/* A crash before the next step: the process stops for good. */
#define STEP(id) if :: skip :: atomic { dead[id] = 1; goto gone } fi

/* Takes the writer word: from 0, or from a dead holder (L1). */
inline take(id, got)
{
	got = 0;
	atomic {
		if
		:: writer == 0 -> writer = id; got = 1
#ifndef BUG_NO_TAKEOVER
		:: writer != 0 && dead[writer] -> writer = id; got = 1
#endif
		:: else -> skip
		fi
	}
}

proctype W(byte id; byte p)
{
	byte g, r, tries, got;

	tries = 0;
	do
	:: tries < TRIES ->
		STEP(id);
		take(id, got);
		if
		:: got -> break
		:: else -> tries++
		fi
	:: else -> goto gone /* TKSHM_EBUSY: nothing changed */
	od;
	STEP(id);
	g = live;
	assert(g < MAXG);
	r = (g + 1) % 2;
	STEP(id);
	rgen[r] = g + 1;
#ifdef BUG_CHECKSUM_NO_GEN
#define SUM(g, p) (p)
#else
#define SUM(g, p) (8 * (g) + (p))
#endif
	STEP(id);
	ra[r] = SUM(g + 1, p);
	STEP(id);
	rb[r] = SUM(g + 1, p);
	STEP(id);
	atomic {
		assert(live == g); /* Q2: only the holder moves it */
		live = g + 1;
		pub[g + 1] = p
	};
	STEP(id);
	atomic {
		if
		:: writer == id -> writer = 0
		:: else -> skip
		fi
	};
gone:
	skip
}

proctype R(byte id)
{
	byte g, r, gn, a, b, tries;

	tries = 0;
	do
	:: tries < TRIES ->
		STEP(id);
		g = live;
		r = g % 2;
		STEP(id);
		gn = rgen[r];
		STEP(id);
		a = ra[r];
		STEP(id);
		b = rb[r];
		if
#if defined(BUG_CHECKSUM_NO_GEN)
		:: g > 0 && gn == g && a == b ->
#elif defined(BUG_NO_GEN_CHECK)
		:: g > 0 && a == b ->
#else
		:: g > 0 && gn == g && a == b && a / 8 == g ->
#endif
			assert(pub[g] == a % 8); /* Q1 */
			break
		:: g == 0 -> break /* the header's policy: nothing to read */
		:: else -> tries++
		fi
	:: else -> break /* keeps the policy it had */
	od;
gone:
	skip
}

init
{
	byte i, got, before;

	atomic {
		i = 0;
		do
		:: i < WRITERS -> run W(i + 1, i + 1); i++
		:: else -> break
		od;
		i = 0;
		do
		:: i < READERS -> run R(WRITERS + 1 + i); i++
		:: else -> break
		od
	};
	(_nr_pr == 1);
	/* Q3: a fresh writer takes the word and publishes. */
	before = live;
	take(NIDS - 1, got);
	assert(got); /* Q3 */
	assert(before <= WRITERS) /* Q2: one generation per publish */
}
