/*
 * test_table.c - counters, occupancy, tkshm_verify(), idle reclaim, and a
 * full window under both on_full policies.
 *
 * Corruption tests damage a file-backed table the way a foreign writer
 * would: with pwrite into the file at the slot's offset (buckets_off from
 * the header, 16 bytes per slot, src/shm/layout.h).  The handle's shared
 * mapping sees the bytes at once.  Keys' windows are found with the
 * table's own fingerprint function (src/shm/table.h), since the seed is
 * random per table.
 *
 * In a table of 8 slots there are two buckets, and every key's window is
 * both of them: all 8 slots.  That makes "the window is full" easy to
 * arrange.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_support.h"
#include "shm/layout.h"
#include "shm/protocol.h"
#include "shm/table.h"

#define SPEC "gcra:limit=10,periodMs=1000,burst=5" /* T 100, tau 500 */

static int
group_teardown(void **state)
{
	(void)state;
	tkt_cleanup();
	return 0;
}

static tkshm_decision
check(tkshm_table *t, const char *key, double cost, double now)
{
	tkshm_decision d;

	assert_rc(tkshm_check_at(t, key, strlen(key), cost, now, &d), TKSHM_OK);
	return d;
}

static tkshm_stats
stats(tkshm_table *t)
{
	tkshm_stats s;

	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	return s;
}

static tkshm_table *
open_with(const char *path, const char *spec, uint64_t slots,
	  tkshm_on_full on_full)
{
	tkshm_policy p = tkt_policy(spec);
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;

	o.policy = &p;
	o.slots = slots;
	o.on_full = on_full;
	assert_rc(tkshm_open(path, &o, &t), TKSHM_OK);
	return t;
}

/* ThrottleKit's GCRA for one key (docs/semantics.md, "GCRA"), to say what a
 * decision must be when the table keeps a key's state faithfully. */
struct model {
	double T, tau, burst;
	bool present;
	double tat;
};

static bool
model_check(struct model *m, double now, double cost, tkshm_decision *d)
{
	double tat = m->present ? m->tat : now;
	double tat_eff = tat > now ? tat : now;
	double new_tat = tat_eff + m->T * cost;
	double allow_at = new_tat - m->tau;
	double r;

	d->limit = (int64_t)m->burst;
	if (now < allow_at || cost > m->burst) {
		r = floor((m->tau - (tat_eff - now)) / m->T);
		d->allowed = false;
		d->remaining = r < 0 ? 0 : (int64_t)r;
		d->reset_at = (int64_t)ceil(tat_eff);
		d->retry_after_ms = (int64_t)ceil(allow_at - now);
		return false;
	}
	r = floor((m->tau - (new_tat - now)) / m->T);
	d->allowed = true;
	d->remaining = r < 0 ? 0 : (int64_t)r;
	d->reset_at = (int64_t)ceil(new_tat);
	d->retry_after_ms = 0;
	m->present = true;
	m->tat = new_tat;
	return true;
}

/* ------------------------------------------------------------------------
 * Counters and occupancy
 * ---------------------------------------------------------------------- */

/* Debt cells (I8) only where keys can be evicted: one per slot for the
 * one-word kinds, a single cell for the kinds that never evict (W9). */
static void
test_debt_cells_by_kind(void **state)
{
	static const struct {
		const char *spec;
		uint64_t cells;
	} kinds[] = {
		{ "gcra:limit=3,periodMs=1000", 64 },
		{ "leakyBucket:ratePerSec=2,maxQueueMs=1000", 64 },
		{ "tokenBucket:capacity=2,refillPerSec=1", 1 },
		{ "fixedWindow:limit=2,windowMs=1000", 1 },
		{ "slidingWindow:limit=3,windowMs=1000,buckets=4", 1 },
		{ "quota:limit=3,resetCadence=calendar-week", 1 },
		{ "tokenBudget:budget=3,windowMs=1000", 1 },
		{ "concurrency:limit=2", 1 },
		{ "gcra:limit=3,periodMs=1000;mode=lease,prefix=rl", 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		tkshm_table *t = tkt_anon(kinds[i].spec, 64);
		tkshm_stats s = stats(t);

		if (s.debt_cells != kinds[i].cells)
			fail_msg("%s: %llu debt cells, want %llu",
				 kinds[i].spec,
				 (unsigned long long)s.debt_cells,
				 (unsigned long long)kinds[i].cells);
		assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
		tkshm_close(t);
	}
}

static void
test_stats_counters(void **state)
{
	tkshm_table *t = tkt_anon(SPEC, 64);
	tkshm_stats s = stats(t);

	(void)state;
	assert_int_equal(s.allowed + s.denied + s.inserts + s.reclaims +
				 s.evictions + s.refusals + s.resets +
				 s.debt_restores + s.duplicates_killed,
			 0);
	assert_int_equal(s.slots, 64);
	assert_int_equal(s.buckets, 16);
	assert_true(s.debt_cells >= 1);
	assert_true(s.bytes_per_key == (double)s.file_bytes / 64);

	for (int i = 0; i < 5; i++)
		assert_true(check(t, "a", 1, 1000).allowed);
	assert_false(check(t, "a", 1, 1000).allowed);
	assert_false(check(t, "a", 1, 1000).allowed);
	s = stats(t);
	assert_int_equal(s.allowed, 5);
	assert_int_equal(s.denied, 2);
	assert_int_equal(s.inserts, 1); /* one key, inserted once */

	assert_true(check(t, "b", 2, 1000).allowed);
	s = stats(t);
	assert_int_equal(s.allowed, 6);
	assert_int_equal(s.inserts, 2);

	/* A request denied from cold claims no slot: no insert. */
	assert_false(check(t, "c", 6, 1000).allowed);
	s = stats(t);
	assert_int_equal(s.denied, 3);
	assert_int_equal(s.inserts, 2);

	/* Peeks count nothing. */
	{
		tkshm_decision d;
		assert_rc(tkshm_peek_at(t, "a", 1, 1000, &d), TKSHM_OK);
		assert_rc(tkshm_peek_at(t, "zz", 2, 1000, &d), TKSHM_OK);
	}
	/* A reset key is inserted again on its next admission. */
	assert_rc(tkshm_reset(t, "a", 1), TKSHM_OK);
	assert_true(check(t, "a", 1, 1000).allowed);
	s = stats(t);
	assert_int_equal(s.resets, 1);
	assert_int_equal(s.inserts, 3);
	assert_int_equal(s.allowed, 7);
	assert_int_equal(s.denied, 3);
	/* Nothing here needed room, nor raced. */
	assert_int_equal(s.evictions + s.refusals + s.cas_retries +
				 s.duplicates_killed,
			 0);
	tkshm_close(t);
}

static void
assert_usage(tkshm_table *t, double now, uint64_t live, uint64_t idle,
	     uint64_t empty)
{
	tkshm_usage u;
	uint64_t hist = 0;
	tkshm_stats s = stats(t);

	assert_rc(tkshm_usage_get(t, now, &u), TKSHM_OK);
	for (unsigned i = 0; i < TKSHM_WINDOW_SLOTS; i++)
		hist += u.probe_hist[i];
	if (u.live != live || u.idle != idle || u.empty != empty)
		fail_msg("usage at %g: live %llu idle %llu empty %llu, want "
			 "%llu %llu %llu",
			 now, (unsigned long long)u.live,
			 (unsigned long long)u.idle,
			 (unsigned long long)u.empty, (unsigned long long)live,
			 (unsigned long long)idle, (unsigned long long)empty);
	assert_int_equal(u.live + u.idle + u.empty + u.placeholders + u.dead,
			 s.slots);
	assert_int_equal(hist, u.live + u.idle);
	assert_int_equal(u.placeholders, 0);
}

/* A key is live while its TAT is after now, idle from its TAT on. */
static void
test_usage(void **state)
{
	tkshm_table *t = tkt_anon(SPEC, 64);

	(void)state;
	assert_usage(t, 0, 0, 0, 64);
	assert_true(check(t, "a", 1, 1000).allowed); /* TAT 1100 */
	assert_true(check(t, "b", 5, 1000).allowed); /* TAT 1500 */
	assert_true(check(t, "c", 2, 1000).allowed); /* TAT 1200 */
	assert_usage(t, 1000, 3, 0, 61);
	assert_usage(t, 1099, 3, 0, 61);
	assert_usage(t, 1100, 2, 1, 61); /* TAT == now decides as absent */
	assert_usage(t, 1150, 2, 1, 61);
	assert_usage(t, 1200, 1, 2, 61);
	assert_usage(t, 1500, 0, 3, 61);
	assert_usage(t, 1e6, 0, 3, 61);
	/* usage is a pure read: earlier instants still see the keys live. */
	assert_usage(t, 1000, 3, 0, 61);
	/* A reset key is neither live nor idle; its slot is not EMPTY. */
	assert_rc(tkshm_reset(t, "b", 1), TKSHM_OK);
	{
		tkshm_usage u;
		assert_rc(tkshm_usage_get(t, 1000, &u), TKSHM_OK);
		assert_int_equal(u.live, 2);
		assert_int_equal(u.idle, 0);
		assert_int_equal(u.empty, 61);
		assert_int_equal(u.dead, 1);
	}
	tkshm_close(t);
}

/* ------------------------------------------------------------------------
 * tkshm_verify
 * ---------------------------------------------------------------------- */

struct problems {
	unsigned n;
	char text[8][256];
};

static void
collect(void *ctx, const char *problem)
{
	struct problems *p = ctx;

	assert_non_null(problem);
	assert_true(problem[0] != '\0');
	if (p->n < 8)
		snprintf(p->text[p->n], sizeof p->text[0], "%s", problem);
	p->n++;
}

static bool
mentions(const struct problems *p, const char *tag)
{
	for (unsigned i = 0; i < p->n && i < 8; i++)
		if (strstr(p->text[i], tag))
			return true;
	return false;
}

static void
test_verify_used_table(void **state)
{
	tkshm_table *t = open_with(NULL, SPEC, 256, TKSHM_ON_FULL_EVICT);
	struct problems p = { 0 };
	uint64_t n = 99;
	double now = 1000;

	(void)state;
	assert_rc(tkshm_verify(t, collect, &p, &n), TKSHM_OK);
	assert_int_equal(n, 0);
	/* Enough keys to fill windows, evict, reclaim and reset. */
	for (int i = 0; i < 20000; i++) {
		char key[32];
		int len =
			snprintf(key, sizeof key, "key-%d", (i * 7919) % 1500);
		tkshm_decision d;

		now += (i % 17 == 0) ? 5 : 0.0625;
		assert_rc(
			tkshm_check_at(t, key, (size_t)len, 1 + i % 3, now, &d),
			TKSHM_OK);
		if (i % 101 == 0)
			assert_rc(tkshm_reset(t, key, (size_t)len), TKSHM_OK);
	}
	assert_true(stats(t).evictions > 0);
	assert_true(stats(t).reclaims > 0);
	assert_rc(tkshm_verify(t, collect, &p, &n), TKSHM_OK);
	assert_int_equal(n, 0);
	assert_int_equal(p.n, 0);
	/* NULL callback and count are fine. */
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(t);
}

/* A file table with `key` admitted once; returns the handle and fills in
 * the key's window and its REAL slot's global index. */
struct victim {
	const char *path;
	tkshm_table *t;
	struct tk_where w;
	uint64_t buckets_off;
	int pos;	/* window position of the REAL slot */
	uint64_t index; /* its global slot index */
};

static void
victim_make(struct victim *v, const char *name, const char *key)
{
	struct tk_header h;
	int fd;

	v->path = tkt_path(name);
	v->t = tkt_file(v->path, SPEC, 64);
	assert_true(check(v->t, key, 1, 1000).allowed);
	tk_where_of(v->t, tk_key_fp(v->t, key, strlen(key)), &v->w);
	v->pos = -1;
	for (unsigned i = 0; i < TK_WINDOW && v->pos < 0; i++) {
		const struct tk_slot *s =
			tk_slot_at(v->t, tk_window_index(&v->w, i));
		if (s->fp == v->w.fp && !tk_st_is_special(s->st)) {
			v->pos = (int)i;
			v->index = tk_window_index(&v->w, i);
		}
	}
	assert_true(v->pos >= 0);
	fd = open(v->path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof h, 0), sizeof h);
	close(fd);
	v->buckets_off = h.buckets_off;
}

/* Writes slot `index` of the file as {fp, st}, bypassing the library. */
static void
poke_slot(const struct victim *v, uint64_t index, uint64_t fp, uint64_t st)
{
	uint64_t pair[2] = { fp, st };
	int fd = open(v->path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, pair, sizeof pair,
				(off_t)(v->buckets_off +
					index * sizeof(struct tk_slot))),
			 sizeof pair);
	close(fd);
}

static uint64_t
double_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof u);
	return u;
}

/* The first window position after `from` whose slot is EMPTY. */
static int
empty_pos_after(const struct victim *v, int from)
{
	for (unsigned i = (unsigned)from + 1; i < TK_WINDOW; i++) {
		const struct tk_slot *s =
			tk_slot_at(v->t, tk_window_index(&v->w, i));
		if (s->fp == 0 && s->st == 0)
			return (int)i;
	}
	return -1;
}

/* verify reports the damage as ECORRUPT with a sentence naming `tag`, also
 * through a second, read-only handle. */
static void
assert_verify_finds(const struct victim *v, const char *tag)
{
	struct problems p = { 0 };
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *ro = NULL;
	uint64_t n = 0;

	assert_rc(tkshm_verify(v->t, collect, &p, &n), TKSHM_ECORRUPT);
	assert_true(n >= 1);
	assert_int_equal(p.n, n);
	if (!mentions(&p, tag))
		fail_msg("no problem names %s; first: \"%s\"", tag, p.text[0]);
	/* The count alone, without a callback. */
	n = 0;
	assert_rc(tkshm_verify(v->t, NULL, NULL, &n), TKSHM_ECORRUPT);
	assert_true(n >= 1);
	o.flags = TKSHM_O_RDONLY;
	assert_rc(tkshm_open(v->path, &o, &ro), TKSHM_OK);
	memset(&p, 0, sizeof p);
	assert_rc(tkshm_verify(ro, collect, &p, NULL), TKSHM_ECORRUPT);
	assert_true(mentions(&p, tag));
	tkshm_close(ro);
}

/* I5: two REAL slots of one key. */
static void
test_verify_duplicate_real(void **state)
{
	struct victim v;
	const struct tk_slot *s;
	int dup;

	(void)state;
	victim_make(&v, "dup.tk", "dup");
	assert_rc(tkshm_verify(v.t, NULL, NULL, NULL), TKSHM_OK);
	dup = empty_pos_after(&v, v.pos);
	assert_true(dup > v.pos);
	s = tk_slot_at(v.t, v.index);
	poke_slot(&v, tk_window_index(&v.w, (unsigned)dup), s->fp, s->st);
	assert_verify_finds(&v, "I5");
	tkshm_close(v.t);
}

/* I4: an EMPTY fingerprint with a state. */
static void
test_verify_empty_with_state(void **state)
{
	struct victim v;
	int e;

	(void)state;
	victim_make(&v, "emptyst.tk", "k");
	e = empty_pos_after(&v, v.pos);
	assert_true(e > 0);
	poke_slot(&v, tk_window_index(&v.w, (unsigned)e), 0, 12345);
	assert_verify_finds(&v, "I4");
	tkshm_close(v.t);
}

/* I4: REAL states that no GCRA state can be (negative, infinite, NaN that
 * is not one of the special words). */
static void
test_verify_invalid_state(void **state)
{
	static const double bad[] = { -5.0, INFINITY, -INFINITY };
	static const uint64_t bad_bits[] = {
		UINT64_C(0x7FF8000000000001), /* positive quiet NaN */
		UINT64_C(0x7FF0000000000001), /* signalling NaN */
	};

	(void)state;
	for (size_t i = 0; i < 5; i++) {
		struct victim v;
		char name[32];
		uint64_t st = i < 3 ? double_bits(bad[i]) : bad_bits[i - 3];

		snprintf(name, sizeof name, "badst-%zu.tk", i);
		victim_make(&v, name, "k");
		poke_slot(&v, v.index, v.w.fp, st);
		assert_verify_finds(&v, "I4");
		tkshm_close(v.t);
	}
}

/* I3: a key outside its own window. */
static void
test_verify_outside_window(void **state)
{
	struct victim v;
	uint64_t index;
	bool in_window;

	(void)state;
	victim_make(&v, "outside.tk", "k");
	/* A slot of neither bucket of the key's window, at position 0 of its
	 * bucket so that it is not behind an EMPTY slot of anything. */
	for (index = 0; index < 64; index += TK_SLOTS_PER_BUCKET) {
		in_window = false;
		for (unsigned i = 0; i < TK_WINDOW; i++)
			if (tk_window_index(&v.w, i) == index)
				in_window = true;
		if (!in_window && tk_slot_at(v.t, index)->fp == 0)
			break;
	}
	assert_true(index < 64);
	poke_slot(&v, index, v.w.fp, double_bits(1100));
	assert_verify_finds(&v, "I3");
	tkshm_close(v.t);
}

/* I2: a key behind an EMPTY slot of its window. */
static void
test_verify_behind_empty(void **state)
{
	struct victim v;
	int e, later;
	const struct tk_slot *s;

	(void)state;
	victim_make(&v, "behind.tk", "k");
	/* Move the key two EMPTY slots further on: it now lies behind an
	 * EMPTY slot (and its old slot is EMPTY again). */
	e = empty_pos_after(&v, v.pos);
	assert_true(e > 0);
	later = empty_pos_after(&v, e);
	assert_true(later > e);
	s = tk_slot_at(v.t, v.index);
	poke_slot(&v, tk_window_index(&v.w, (unsigned)later), s->fp, s->st);
	poke_slot(&v, v.index, 0, 0);
	assert_verify_finds(&v, "I2");
	tkshm_close(v.t);
}

/* I9: a debt cell holding something that is no state. */
static void
test_verify_bad_debt_cell(void **state)
{
	struct victim v;
	struct tk_header h;
	uint64_t bits = double_bits(-1.0);
	int fd;

	(void)state;
	victim_make(&v, "debt.tk", "k");
	fd = open(v.path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &h, sizeof h, 0), sizeof h);
	assert_int_equal(pwrite(fd, &bits, sizeof bits, (off_t)h.debt_off),
			 sizeof bits);
	close(fd);
	assert_verify_finds(&v, "I9");
	tkshm_close(v.t);
}

/* I10: the header changed after the table was published. */
static void
test_verify_header_changed(void **state)
{
	struct victim v;
	uint32_t pid = 0xDEADBEEF;

	(void)state;
	victim_make(&v, "hdr.tk", "k");
	{
		int fd = open(v.path, O_WRONLY);
		assert_true(fd >= 0);
		assert_int_equal(
			pwrite(fd, &pid, sizeof pid,
			       offsetof(struct tk_header, creator_pid)),
			sizeof pid);
		close(fd);
	}
	{
		struct problems p = { 0 };
		assert_rc(tkshm_verify(v.t, collect, &p, NULL), TKSHM_ECORRUPT);
		assert_true(mentions(&p, "I10") || mentions(&p, "header"));
	}
	tkshm_close(v.t);
}

/* ------------------------------------------------------------------------
 * Idle reclaim, full windows
 * ---------------------------------------------------------------------- */

/* Keys whose state went idle are reclaimed by new keys, and every decision
 * stays what the key's own history says (an idle state decides as an
 * absent one, so reclaiming it loses nothing). */
static void
test_idle_reclaim(void **state)
{
	enum {
		KEYS = 40
	};
	tkshm_table *t = open_with(NULL, "gcra:limit=1,periodMs=10,burst=2", 8,
				   TKSHM_ON_FULL_REFUSE); /* T 10, tau 20 */
	struct model m[KEYS];
	double now = 1000;
	unsigned refused = 0, decided = 0;
	uint64_t rng = 88172645463325252u;

	(void)state;
	for (int k = 0; k < KEYS; k++)
		m[k] = (struct model){ 10, 20, 2, false, 0 };
	/* Eight keys fill the table; at now+20 they are all idle. */
	for (int k = 0; k < 8; k++) {
		char key[16];
		tkshm_decision d, e;
		snprintf(key, sizeof key, "key-%d", k);
		d = check(t, key, 2, now);
		model_check(&m[k], now, 2, &e);
		tkt_assert_decision(key, &d, &e);
	}
	assert_int_equal(stats(t).reclaims, 0);
	for (int k = 8; k < 16; k++) {
		char key[16];
		tkshm_decision d, e;
		snprintf(key, sizeof key, "key-%d", k);
		d = check(t, key, 1, now + 20);
		model_check(&m[k], now + 20, 1, &e);
		tkt_assert_decision(key, &d, &e);
	}
	assert_int_equal(stats(t).reclaims, 8);
	now += 20;

	/* Then a long random run over 40 keys in 8 slots.  With REFUSE
	 * nothing is ever evicted, so a key's state is either its own or
	 * absent-equivalent, and the model is exact; a refusal decides
	 * nothing. */
	for (int i = 0; i < 20000; i++) {
		int k;
		char key[16];
		double cost;
		tkshm_decision d, e;
		int rc;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		k = (int)(rng % KEYS);
		cost = 1 + (double)((rng >> 8) % 2);
		now += (double)((rng >> 16) % 4);
		snprintf(key, sizeof key, "key-%d", k);
		rc = tkshm_check_at(t, key, strlen(key), cost, now, &d);
		if (rc == TKSHM_EFULL) {
			refused++;
			continue;
		}
		assert_rc(rc, TKSHM_OK);
		model_check(&m[k], now, cost, &e);
		{
			char what[48];
			snprintf(what, sizeof what, "step %d key %d", i, k);
			tkt_assert_decision(what, &d, &e);
		}
		decided++;
	}
	{
		tkshm_stats s = stats(t);
		assert_true(s.reclaims > 1000);
		assert_int_equal(s.evictions, 0);
		assert_int_equal(s.refusals, refused);
		assert_int_equal(s.allowed + s.denied, decided + 16);
	}
	assert_true(decided > 10000);
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(t);
}

/* REFUSE: when every slot of the window is live, a new key gets EFULL,
 * counted, with nothing changed; old keys keep deciding; once they go
 * idle the new key gets in. */
static void
test_full_refuse(void **state)
{
	tkshm_table *t = open_with(NULL, "gcra:limit=1,periodMs=10000,burst=1",
				   8, TKSHM_ON_FULL_REFUSE); /* T 10000 */
	tkshm_decision d;
	tkshm_usage u0, u1;

	(void)state;
	for (int k = 0; k < 8; k++) {
		char key[16];
		snprintf(key, sizeof key, "live-%d", k);
		assert_true(check(t, key, 1, 1000).allowed); /* TAT 11000 */
	}
	assert_rc(tkshm_usage_get(t, 1000, &u0), TKSHM_OK);
	assert_int_equal(u0.live, 8);
	for (int i = 1; i <= 3; i++) {
		assert_rc(tkshm_check_at(t, "newcomer", 8, 1, 1000 + i, &d),
			  TKSHM_EFULL);
		assert_int_equal(stats(t).refusals, (uint64_t)i);
	}
	assert_rc(tkshm_usage_get(t, 1000, &u1), TKSHM_OK);
	assert_memory_equal(&u0, &u1, sizeof u0);
	assert_int_equal(stats(t).inserts, 8);
	/* A peek needs no slot. */
	assert_rc(tkshm_peek_at(t, "newcomer", 8, 1000, &d), TKSHM_OK);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 1);
	/* Old keys still decide (denied: in debt until 11000). */
	d = check(t, "live-3", 1, 2000);
	assert_false(d.allowed);
	assert_int_equal(d.retry_after_ms, 9000);
	/* A denial from cold needs no slot either: cost above burst. */
	d = check(t, "newcomer", 2, 2000);
	assert_false(d.allowed);
	/* In a batch: the requests before the refused one stand. */
	{
		tkshm_request reqs[3] = { { "live-1", 6, 1 },
					  { "newcomer", 8, 1 },
					  { "live-2", 6, 1 } };
		tkshm_decision out[3];
		size_t done = 9;

		assert_rc(tkshm_check_many_at(t, reqs, 3, 2000, out, &done),
			  TKSHM_EFULL);
		assert_int_equal(done, 1);
		assert_false(out[0].allowed);
	}
	/* At 11000 every TAT is reached: all idle, the newcomer reclaims. */
	d = check(t, "newcomer", 1, 11000);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 0);
	assert_int_equal(stats(t).reclaims, 1);
	assert_int_equal(stats(t).refusals, 4);
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(t);
}

/* The debt cell a key's remembered debt goes to. */
static uint64_t
cell_of(tkshm_table *t, const char *key)
{
	return (uint64_t)(tk_debt_cell(t, tk_key_fp(t, key, strlen(key))) -
			  t->debt);
}

/*
 * EVICT: the newcomer takes the slot of the least-indebted key, which is in
 * debt; the evicted key's debt is remembered, so when it comes back it does
 * not start fresh.  Policy: 1 per 10 s, burst 2 (T 10000, tau 20000).
 */
static void
test_evict_remembers_debt(void **state)
{
	tkshm_table *t = open_with(NULL, "gcra:limit=1,periodMs=10000,burst=2",
				   8, TKSHM_ON_FULL_EVICT);
	struct model debtor = { 10000, 20000, 2, false, 0 };
	char newcomer[32] = "", filler[7][16];
	tkshm_decision d, e;
	tkshm_stats s;

	(void)state;
	/* The debtor uses its whole burst at 900 (TAT 20900); seven others
	 * do at 1000 (TAT 21000).  At 1000 the debtor owes least: 19900. */
	d = check(t, "debtor", 2, 900);
	model_check(&debtor, 900, 2, &e);
	tkt_assert_decision("debtor", &d, &e);
	for (int k = 0, n = 0; k < 7; n++) {
		snprintf(filler[k], sizeof filler[k], "f-%d", n);
		/* Fillers away from the debtor's debt cell, so the cell
		 * holds the debtor's debt alone. */
		if (cell_of(t, filler[k]) == cell_of(t, "debtor"))
			continue;
		assert_true(check(t, filler[k], 2, 1000).allowed);
		k++;
	}
	/* A newcomer whose cell is not the debtor's: it starts fresh. */
	for (int n = 0; newcomer[0] == '\0'; n++) {
		char name[32];
		snprintf(name, sizeof name, "newcomer-%d", n);
		if (cell_of(t, name) != cell_of(t, "debtor"))
			snprintf(newcomer, sizeof newcomer, "%s", name);
	}
	assert_int_equal(stats(t).evictions, 0);

	d = check(t, newcomer, 1, 1000);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 1); /* a fresh key */
	assert_true(d.flags & TKSHM_DECISION_EVICTED_DEBTOR);
	assert_false(d.flags & TKSHM_DECISION_DEBT_RESTORED);
	s = stats(t);
	assert_int_equal(s.evictions, 1);
	assert_int_equal(s.evictions_in_debt, 1);

	/* The debtor is gone from the slots, but a peek sees its debt. */
	assert_rc(tkshm_peek_at(t, "debtor", 6, 1000, &d), TKSHM_OK);
	assert_false(d.allowed);
	assert_int_equal(d.reset_at, 20900);
	assert_true(d.flags & TKSHM_DECISION_DEBT_RESTORED);

	/* Coming back at 1000: still denied, exactly as its history says
	 * (a fresh key would be admitted with remaining 1). */
	d = check(t, "debtor", 1, 1000);
	model_check(&debtor, 1000, 1, &e);
	tkt_assert_decision("debtor back at 1000", &d, &e);
	assert_false(d.allowed);
	assert_true(d.flags & TKSHM_DECISION_DEBT_RESTORED);
	/* A denial evicts nobody. */
	assert_int_equal(stats(t).evictions, 1);

	/* At 11000 it is admitted from its remembered TAT (remaining 0, not
	 * a fresh 1), taking the newcomer's slot, idle since 11000. */
	d = check(t, "debtor", 1, 11000);
	model_check(&debtor, 11000, 1, &e);
	tkt_assert_decision("debtor back at 11000", &d, &e);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 0);
	assert_true(d.flags & TKSHM_DECISION_DEBT_RESTORED);
	assert_false(d.flags & TKSHM_DECISION_EVICTED_DEBTOR);
	s = stats(t);
	assert_int_equal(s.debt_restores, 1);
	assert_int_equal(s.reclaims, 1);
	assert_int_equal(s.evictions, 1);

	/* Once in a slot again, it decides from its slot like any key. */
	d = check(t, "debtor", 1, 11000);
	model_check(&debtor, 11000, 1, &e);
	tkt_assert_decision("debtor in its slot", &d, &e);
	assert_false(d.flags & TKSHM_DECISION_DEBT_RESTORED);

	/* A reset forgives it: fresh, and its cell is cleared. */
	assert_rc(tkshm_reset(t, "debtor", 6), TKSHM_OK);
	d = check(t, "debtor", 1, 11000);
	assert_true(d.allowed);
	assert_int_equal(d.remaining, 1);
	assert_false(d.flags & TKSHM_DECISION_DEBT_RESTORED);
	assert_rc(tkshm_verify(t, NULL, NULL, NULL), TKSHM_OK);
	tkshm_close(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats_counters),
		cmocka_unit_test(test_debt_cells_by_kind),
		cmocka_unit_test(test_usage),
		cmocka_unit_test(test_verify_used_table),
		cmocka_unit_test(test_verify_duplicate_real),
		cmocka_unit_test(test_verify_empty_with_state),
		cmocka_unit_test(test_verify_invalid_state),
		cmocka_unit_test(test_verify_outside_window),
		cmocka_unit_test(test_verify_behind_empty),
		cmocka_unit_test(test_verify_bad_debt_cell),
		cmocka_unit_test(test_verify_header_changed),
		cmocka_unit_test(test_idle_reclaim),
		cmocka_unit_test(test_full_refuse),
		cmocka_unit_test(test_evict_remembers_debt),
	};

	return cmocka_run_group_tests(tests, NULL, group_teardown);
}
