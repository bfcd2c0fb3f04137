/*
 * test_redis_conformance.c - our Lua scripts decide exactly as tkshm's
 * shared-memory algorithms do.
 *
 * For every algorithm ThrottleKit runs on Redis, several policies each,
 * seeded timelines are driven through both paths at once (ThrottleKit's
 * conformance scheme, docs/semantics.md, "Seeded timelines"):
 * 40 timelines of 25 steps per policy, PRNG mulberry32(1000 + case*101 +
 * timeline), the clock starting at an epoch-sized now (1.7e12 + t*37, or
 * just before a period boundary for the calendar quotas) and moving by
 * floor(rng*900) ms per step, costs 1 + floor(rng*4) (and, for policies
 * that take them, fractional costs in about half the steps).  The last 8
 * timelines of each policy also jump backwards (deltas -900..899 ms), where
 * tkshm's clock-regression rules apply and the scripts follow them.
 *
 * After every step: the table's decision (tkshm_check_at, or
 * tkshm_reserve_at for the shaper) equals the script's field by field, the
 * script reports the integer now it decided at, and the state the script
 * lists, decoded by the state codec, is the table's state word for word.
 * Every fifth step, the state Redis holds is read back raw (GET, HMGET,
 * HGETALL, ZRANGE WITHSCORES) and through read.lua, both decode to the
 * table's state, and tkshm's peek formula (tk_algo_peek_w) on it equals the
 * table's tkshm_peek_at at a later time.  Multi all/any is compared with
 * tkshm_check_multi_at the same way; `now = 0` runs on the server's TIME.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_wire.h"

#define TIMELINES      40
#define JUMP_TIMELINES 8 /* the last ones also jump backwards */
#define STEPS	       25
#define PEEK_EVERY     5
#define EPOCH	       1.7e12

/* Where a case's timelines start. */
enum conf_base {
	BASE_EPOCH,    /* 1.7e12 + t*37 */
	BASE_BOUNDARY, /* 6 s before the end of the period holding 1.7e12 */
};

struct conf_case {
	const char *spec;
	bool frac; /* fractional costs in about half of the steps */
	enum conf_base base;
};

static const struct conf_case cases[] = {
	/* gcra: ThrottleKit's three, T = 1000/3, and fractional costs. */
	{ "gcra:limit=100,periodMs=60000,burst=20", false, BASE_EPOCH },
	{ "gcra:limit=2,periodMs=1000", false, BASE_EPOCH },
	{ "gcra:limit=1000,periodMs=60000,burst=100", false, BASE_EPOCH },
	{ "gcra:limit=3,periodMs=1000,burst=3", true, BASE_EPOCH },
	/* tokenBucket */
	{ "tokenBucket:capacity=50,refillPerSec=10", false, BASE_EPOCH },
	{ "tokenBucket:capacity=20,refillPerSec=3.5", false, BASE_EPOCH },
	{ "tokenBucket:capacity=7,refillPerSec=3", true, BASE_EPOCH },
	/* fixedWindow: fractional limit and window too */
	{ "fixedWindow:limit=50,windowMs=1000", false, BASE_EPOCH },
	{ "fixedWindow:limit=10,windowMs=250", false, BASE_EPOCH },
	{ "fixedWindow:limit=7.5,windowMs=333.3", true, BASE_EPOCH },
	/* slidingWindow: fractional w (1000/3), buckets = 1 */
	{ "slidingWindow:limit=50,windowMs=1000,buckets=10", false,
	  BASE_EPOCH },
	{ "slidingWindow:limit=20,windowMs=1000,buckets=3", true, BASE_EPOCH },
	{ "slidingWindow:limit=60,windowMs=60000,buckets=1", false,
	  BASE_EPOCH },
	{ "slidingWindow:limit=10,windowMs=1000,buckets=1", true, BASE_EPOCH },
	/* slidingWindowLog: a fractional cost counts ceil(cost) units */
	{ "slidingWindowLog:limit=5,windowMs=1000", false, BASE_EPOCH },
	{ "slidingWindowLog:limit=10,windowMs=500", true, BASE_EPOCH },
	{ "slidingWindowLog:limit=8,windowMs=1000", true, BASE_EPOCH },
	/* quota: every cadence, timelines across a period boundary */
	{ "quota:limit=30,resetCadence=calendar-month", false, BASE_BOUNDARY },
	{ "quota:limit=30,resetCadence=calendar-month,offsetMinutes=330", true,
	  BASE_BOUNDARY },
	{ "quota:limit=30,resetCadence=calendar-week", false, BASE_BOUNDARY },
	{ "quota:limit=30,resetCadence=calendar-week,weekStartsOn=0,"
	  "offsetMinutes=-300",
	  false, BASE_BOUNDARY },
	{ "quota:limit=30,resetCadence=calendar-day,offsetMinutes=-840", true,
	  BASE_BOUNDARY },
	{ "quota:limit=5,resetCadence=fixed,periodMs=1000,anchor=250", false,
	  BASE_EPOCH },
	{ "quota:limit=10,resetCadence=rolling,periodMs=1000", true,
	  BASE_EPOCH },
	/* leakyBucket, through reservations */
	{ "leakyBucket:ratePerSec=10,maxQueueMs=500", false, BASE_EPOCH },
	{ "leakyBucket:ratePerSec=3,maxQueueMs=2000", true, BASE_EPOCH },
	{ "leakyBucket:ratePerSec=50,maxQueueMs=0", false, BASE_EPOCH },
};
#define NCASES (sizeof cases / sizeof cases[0])

static struct conf_redis redis;

/* What the run compared, for the summary line. */
static struct {
	unsigned timelines, steps, peeks;
	double seconds;
} total;

static int
group_setup(void **state)
{
	(void)state;
	conf_redis_up(&redis);
	redis.persist = true;
	return 0;
}

static int
group_teardown(void **state)
{
	(void)state;
	conf_redis_down(&redis);
	printf("[ conformance ] %u timelines, %u decisions compared "
	       "(decision fields and state words), %u peeks, %.2f s\n",
	       total.timelines, total.steps, total.peeks, total.seconds);
	tkt_cleanup();
	return 0;
}

/* The first now of a case's timelines (before t*37). */
static double
case_base(const struct conf_case *c, const tkshm_table *t)
{
	double start, reset;

	if (c->base == BASE_EPOCH)
		return EPOCH;
	assert_int_equal(t->algo.kind, TKSHM_KIND_QUOTA);
	tk_calendar_period(&t->algo.u.quota.cal, EPOCH, &start, &reset);
	return reset - 6000;
}

/* One step's cost: 1..4, or for `frac` cases a multiple of 0.25 in
 * 0.25..3.75 about half the time. */
static double
step_cost(struct conf_rng *rng, bool frac)
{
	if (frac && conf_rng_next(rng) < 0.5)
		return 0.25 * (1 + floor(conf_rng_next(rng) * 15));
	return 1 + floor(conf_rng_next(rng) * 4);
}

/* The raw state and read.lua's agree with the table's, and tkshm's peek
 * formula on Redis's state equals the table's peek at `at`. */
static void
check_peek(tkshm_table *t, const char *key, const struct conf_state *shm,
	   double at, const char *what)
{
	struct conf_state raw, rd;
	tkshm_decision want, got;
	int64_t now_ms;

	conf_redis_raw_state(&redis, t, key, &raw);
	conf_assert_state(what, t, &raw, shm);
	conf_redis_read_state(&redis, t, key, at, &now_ms, &rd);
	conf_assert_state(what, t, &rd, &raw);
	assert_int_equal(now_ms, (int64_t)floor(at));
	assert_rc(tkshm_peek_at(t, key, strlen(key), at, &want), TKSHM_OK);
	tk_algo_peek_w(&t->algo, raw.present, raw.w, at, &got);
	tkt_assert_decision(what, &got, &want);
	total.peeks++;
}

/* One step of a limiter: the decision and the state after.  Returns
 * whether it admitted. */
static bool
step_check(tkshm_table *t, const char *key, double now, double cost,
	   const char *what)
{
	tkshm_decision want, got;
	struct conf_state shm, rst;
	int64_t now_ms;

	assert_rc(tkshm_check_at(t, key, strlen(key), cost, now, &want),
		  TKSHM_OK);
	conf_redis_check(&redis, t, key, now, cost, &got, &now_ms, &rst);
	tkt_assert_decision(what, &got, &want);
	assert_int_equal(now_ms, (int64_t)floor(now));
	conf_shm_state(t, key, &shm);
	conf_log_pruned(t, now, &shm);
	conf_assert_state(what, t, &rst, &shm);
	return want.allowed;
}

/* One step of the shaper: the reservation and the state after.  Returns
 * whether it accepted. */
static bool
step_reserve(tkshm_table *t, const char *key, double now, double cost,
	     const char *what)
{
	tkshm_reservation want, got;
	struct conf_state shm, rst;
	int64_t now_ms;

	assert_rc(tkshm_reserve_at(t, key, strlen(key), cost, now, &want),
		  TKSHM_OK);
	conf_redis_reserve(&redis, t, key, now, cost, &got, &now_ms, &rst);
	if (got.accepted != want.accepted || got.delay_ms != want.delay_ms ||
	    got.retry_after_ms != want.retry_after_ms ||
	    got.wait_ms != want.wait_ms)
		fail_msg("%s: got {accepted %d, delay %lld, retry %lld, wait "
			 "%.17g}, want {%d, %lld, %lld, %.17g}",
			 what, got.accepted, (long long)got.delay_ms,
			 (long long)got.retry_after_ms, got.wait_ms,
			 want.accepted, (long long)want.delay_ms,
			 (long long)want.retry_after_ms, want.wait_ms);
	assert_int_equal(now_ms, (int64_t)floor(now));
	conf_shm_state(t, key, &shm);
	conf_assert_state(what, t, &rst, &shm);
	return want.accepted;
}

static void
run_case(unsigned ci)
{
	const struct conf_case *c = &cases[ci];
	tkshm_table *t = tkt_anon(c->spec, 256);
	bool shaper = t->algo.kind == TKSHM_KIND_LEAKY_BUCKET;
	double base = case_base(c, t), t0 = tkt_seconds();
	unsigned admitted = 0, steps = 0;

	for (unsigned tl = 0; tl < TIMELINES; tl++) {
		struct conf_rng rng = { 1000u + ci * 101u + tl };
		bool jumps = tl >= TIMELINES - JUMP_TIMELINES;
		double now = base + tl * 37.0;
		char key[64];

		snprintf(key, sizeof key, "conf:%u:%u", ci, tl);
		for (unsigned s = 0; s < STEPS; s++) {
			double delta =
				jumps ? floor(conf_rng_next(&rng) * 1800) -
						900 :
					floor(conf_rng_next(&rng) * 900);
			double cost = step_cost(&rng, c->frac);
			char what[256];

			now += delta;
			snprintf(what, sizeof what,
				 "%s, timeline %u step %u (now %.17g, cost %g)",
				 c->spec, tl, s, now, cost);
			if (shaper ? step_reserve(t, key, now, cost, what) :
				     step_check(t, key, now, cost, what))
				admitted++;
			steps++;
			total.steps++;
			if (s % PEEK_EVERY == PEEK_EVERY - 1) {
				struct conf_state shm;

				conf_shm_state(t, key, &shm);
				conf_log_pruned(t, now, &shm);
				check_peek(
					t, key, &shm,
					now + floor(conf_rng_next(&rng) * 900),
					what);
			}
		}
		total.timelines++;
	}
	/* Both outcomes occurred, so both branches were compared. */
	if (admitted == 0 || admitted == steps)
		fail_msg("%s: %u of %u steps admitted", c->spec, admitted,
			 steps);
	total.seconds += tkt_seconds() - t0;
	tkshm_close(t);
}

static void
test_timelines(void **state)
{
	(void)state;
	for (unsigned ci = 0; ci < NCASES; ci++)
		run_case(ci);
	assert_int_equal(total.timelines, NCASES * TIMELINES);
}

/* ------------------------------------------------------------------------
 * Multi all/any against tkshm_check_multi_at
 * ---------------------------------------------------------------------- */

#define MULTI_DIMS_MAX 4

/* Appends one dimension's ARGV (type, cost, p1, p2, p3). */
static void
multi_dim_args(struct conf_args *a, const tkshm_policy *p, double cost)
{
	switch (p->kind) {
	case TKSHM_KIND_GCRA:
		conf_args_f64(a, 1);
		conf_args_f64(a, cost);
		conf_args_f64(a, p->u.gcra.period_ms);
		conf_args_f64(a, p->u.gcra.limit);
		conf_args_f64(a, p->u.gcra.burst);
		return;
	case TKSHM_KIND_TOKEN_BUCKET:
		conf_args_f64(a, 2);
		conf_args_f64(a, cost);
		conf_args_f64(a, p->u.token_bucket.capacity);
		conf_args_f64(a, p->u.token_bucket.refill_per_sec);
		conf_args_f64(a, 0);
		return;
	case TKSHM_KIND_FIXED_WINDOW:
		conf_args_f64(a, 3);
		conf_args_f64(a, cost);
		conf_args_f64(a, p->u.fixed_window.limit);
		conf_args_f64(a, p->u.fixed_window.window_ms);
		conf_args_f64(a, 0);
		return;
	default:
		fail_msg("multi: kind %d is not a multi dimension",
			 (int)p->kind);
	}
}

/* The decision at reply[from .. from+4]. */
static void
multi_decision(const redisReply *r, size_t from, tkshm_decision *d)
{
	for (size_t i = from; i < from + 5; i++)
		assert_int_equal(r->element[i]->type, REDIS_REPLY_INTEGER);
	assert_true(r->element[from]->integer == 0 ||
		    r->element[from]->integer == 1);
	d->allowed = r->element[from]->integer == 1;
	d->limit = r->element[from + 1]->integer;
	d->remaining = r->element[from + 2]->integer;
	d->reset_at = r->element[from + 3]->integer;
	d->retry_after_ms = r->element[from + 4]->integer;
	d->flags = 0;
}

/* Dimension i names the key of dimension at[i] (<= i; at NULL: its own),
 * in that dimension's table of policy specs[at[i]]: a key named twice is
 * one key, in shared memory as in the script. */
static void
run_multi(unsigned mi, tkshm_multi_mode mode, const char *const *specs,
	  const unsigned *at, size_t n)
{
	tkshm_table *t[MULTI_DIMS_MAX];
	double t0 = tkt_seconds();
	unsigned allowed = 0, denied = 0;

	assert_true(n <= MULTI_DIMS_MAX);
	for (size_t i = 0; i < n; i++) {
		size_t owner = at ? at[i] : i;

		assert_true(owner <= i);
		t[i] = owner < i ? t[owner] : tkt_anon(specs[i], 256);
	}
	for (unsigned tl = 0; tl < TIMELINES; tl++) {
		struct conf_rng rng = { 5000u + mi * 101u + tl };
		double now = EPOCH + tl * 37.0;
		char keys[MULTI_DIMS_MAX][64];
		const char *kv[MULTI_DIMS_MAX];

		/* One hash tag per timeline: the keys share a slot. */
		for (size_t i = 0; i < n; i++) {
			snprintf(keys[i], sizeof keys[i], "{multi:%u:%u}:d%u",
				 mi, tl, at ? at[i] : (unsigned)i);
			kv[i] = keys[i];
		}
		for (unsigned s = 0; s < STEPS; s++) {
			tkshm_dimension dims[MULTI_DIMS_MAX];
			tkshm_decision out, each[MULTI_DIMS_MAX], got;
			struct conf_args a;
			redisReply *r;
			size_t binding;
			char what[256];

			now += floor(conf_rng_next(&rng) * 900);
			conf_args_init(&a);
			conf_args_f64(&a, now);
			conf_args_f64(&a, mode == TKSHM_MULTI_ALL ? 1 : 0);
			conf_args_f64(&a, (double)n);
			for (size_t i = 0; i < n; i++) {
				double cost =
					1 + floor(conf_rng_next(&rng) * 3);

				dims[i].table = t[i];
				dims[i].key = keys[i];
				dims[i].key_len = strlen(keys[i]);
				dims[i].cost = cost;
				multi_dim_args(&a, &t[i]->policy, cost);
			}
			snprintf(
				what, sizeof what,
				"multi %s #%u, timeline %u step %u (now %.17g)",
				mode == TKSHM_MULTI_ALL ? "all" : "any", mi, tl,
				s, now);
			assert_rc(tkshm_check_multi_at(mode, dims, n, now, &out,
						       each, &binding),
				  TKSHM_OK);
			r = conf_eval(&redis, TK_SCRIPT_MULTI, kv, (int)n, &a);
			assert_int_equal(r->type, REDIS_REPLY_ARRAY);
			assert_int_equal(r->elements, 6 + 5 * n);
			multi_decision(r, 0, &got);
			tkt_assert_decision(what, &got, &out);
			assert_int_equal(r->element[5]->integer,
					 (int64_t)floor(now));
			for (size_t i = 0; i < n; i++) {
				struct conf_state shm, raw;

				multi_decision(r, 6 + 5 * i, &got);
				tkt_assert_decision(what, &got, &each[i]);
				conf_shm_state(t[i], keys[i], &shm);
				conf_redis_raw_state(&redis, t[i], keys[i],
						     &raw);
				conf_assert_state(what, t[i], &raw, &shm);
			}
			freeReplyObject(r);
			if (out.allowed)
				allowed++;
			else
				denied++;
			total.steps++;
		}
		total.timelines++;
	}
	/* Both outcomes occurred, so both combination paths were compared. */
	assert_true(allowed > 0 && denied > 0);
	total.seconds += tkt_seconds() - t0;
	for (size_t i = 0; i < n; i++)
		if (!at || at[i] == i)
			tkshm_close(t[i]);
}

static void
test_multi(void **state)
{
	static const char *const three[] = {
		"gcra:limit=10,periodMs=1000,burst=5",
		"tokenBucket:capacity=8,refillPerSec=4",
		"fixedWindow:limit=6,windowMs=1000",
	};
	static const char *const two[] = {
		"gcra:limit=3,periodMs=1000,burst=3",
		"fixedWindow:limit=12,windowMs=2000",
	};

	/* Keys named more than once: two interleaved pairs, and one key three
	 * times (each repeat decided on what the earlier ones left). */
	static const char *const pairs[] = {
		"gcra:limit=10,periodMs=1000,burst=5",
		"fixedWindow:limit=6,windowMs=1000",
		NULL,
		NULL,
	};
	static const unsigned pairs_at[] = { 0, 1, 0, 1 };
	static const char *const thrice[] = {
		"tokenBucket:capacity=8,refillPerSec=4",
		NULL,
		NULL,
	};
	static const unsigned thrice_at[] = { 0, 0, 0 };

	(void)state;
	run_multi(0, TKSHM_MULTI_ALL, three, NULL, 3);
	run_multi(1, TKSHM_MULTI_ANY, three, NULL, 3);
	run_multi(2, TKSHM_MULTI_ALL, two, NULL, 2);
	run_multi(3, TKSHM_MULTI_ANY, two, NULL, 2);
	run_multi(4, TKSHM_MULTI_ALL, pairs, pairs_at, 4);
	run_multi(5, TKSHM_MULTI_ANY, pairs, pairs_at, 4);
	run_multi(6, TKSHM_MULTI_ALL, thrice, thrice_at, 3);
	run_multi(7, TKSHM_MULTI_ANY, thrice, thrice_at, 3);
	for (unsigned k = 0; k < 3; k++) {
		/* A fixed window named three times, each kind. */
		static const char *const win[] = {
			"fixedWindow:limit=5,windowMs=1000",
			"gcra:limit=5,periodMs=1000,burst=5",
			"tokenBucket:capacity=5,refillPerSec=5",
		};
		const char *one[] = { win[k], NULL, NULL };

		run_multi(8 + k, TKSHM_MULTI_ALL, one, thrice_at, 3);
	}
}

/* ------------------------------------------------------------------------
 * now = 0: the server's TIME
 * ---------------------------------------------------------------------- */

static void
test_server_time(void **state)
{
	(void)state;
	for (unsigned ci = 0; ci < NCASES; ci++) {
		tkshm_table *t = tkt_anon(cases[ci].spec, 64);
		struct conf_state rst, shm;
		double before = tkshm_now_ms(), after;
		int64_t now_ms;
		char key[64];

		snprintf(key, sizeof key, "time:%u", ci);
		if (t->algo.kind == TKSHM_KIND_LEAKY_BUCKET) {
			tkshm_reservation got, want;

			conf_redis_reserve(&redis, t, key, 0, 1, &got, &now_ms,
					   &rst);
			assert_true(got.accepted);
			assert_rc(tkshm_reserve_at(t, key, strlen(key), 1,
						   (double)now_ms, &want),
				  TKSHM_OK);
			assert_true(want.accepted);
			assert_int_equal(got.delay_ms, want.delay_ms);
			assert_true(got.wait_ms == want.wait_ms);
		} else {
			tkshm_decision got, want;

			conf_redis_check(&redis, t, key, 0, 1, &got, &now_ms,
					 &rst);
			assert_true(got.allowed);
			/* The script decided at the integer now it reports:
			 * the table decides the same there. */
			assert_rc(tkshm_check_at(t, key, strlen(key), 1,
						 (double)now_ms, &want),
				  TKSHM_OK);
			tkt_assert_decision(cases[ci].spec, &got, &want);
		}
		after = tkshm_now_ms();
		/* The server runs on this host's clock. */
		if (!((double)now_ms >= before - 5000 &&
		      (double)now_ms <= after + 5000))
			fail_msg("%s: server now %lld, local clock %.0f..%.0f",
				 cases[ci].spec, (long long)now_ms, before,
				 after);
		conf_shm_state(t, key, &shm);
		conf_assert_state(cases[ci].spec, t, &rst, &shm);
		tkshm_close(t);
	}
}

/* ------------------------------------------------------------------------
 * The state codec on listings no script writes
 * ---------------------------------------------------------------------- */

/* A listing of up to CODEC_MAX hand-made elements. */
#define CODEC_MAX 300
struct listing {
	size_t n;
	redisReply e[CODEC_MAX];
	const redisReply *p[CODEC_MAX];
	char text[CODEC_MAX][80];
};

static void
listing_init(struct listing *l)
{
	memset(l, 0, sizeof *l);
}

/* Appends a bulk string of `len` bytes (it may hold NULs). */
static void
listing_bytes(struct listing *l, const char *s, size_t len)
{
	redisReply *r = &l->e[l->n];

	assert_true(l->n < CODEC_MAX && len < sizeof l->text[0]);
	memcpy(l->text[l->n], s, len);
	r->type = REDIS_REPLY_STRING;
	r->str = l->text[l->n];
	r->len = len;
	l->p[l->n] = r;
	l->n++;
}

static void
listing_str(struct listing *l, const char *s)
{
	listing_bytes(l, s, strlen(s));
}

static void
listing_type(struct listing *l, int type)
{
	redisReply *r = &l->e[l->n];

	assert_true(l->n < CODEC_MAX);
	r->type = type;
	l->p[l->n] = r;
	l->n++;
}

static int
decode(const tkshm_table *t, const struct listing *l, struct conf_state *st)
{
	memset(st, 0, sizeof *st);
	return tk_state_from_reply(&t->algo, l->p, l->n, st->w, &st->present);
}

/* The listing decodes to an absent key. */
static void
expect_absent(const tkshm_table *t, const struct listing *l, const char *what)
{
	struct conf_state st;
	int rc = decode(t, l, &st);

	if (rc != TKSHM_OK || st.present)
		fail_msg("%s: %s, %s; want absent", what, tkshm_error_name(rc),
			 st.present ? "present" : "absent");
}

/* A state over the policy's limit is one: another service's larger limit,
 * or a policy edited since it was written (docs/lifecycle.md). */
static void
expect_present(const tkshm_table *t, const struct listing *l, const char *what)
{
	struct conf_state st;
	int rc = decode(t, l, &st);

	if (rc != TKSHM_OK || !st.present)
		fail_msg("%s: %s, %s; want present", what, tkshm_error_name(rc),
			 st.present ? "present" : "absent");
}

static void
expect_refused(const tkshm_table *t, const struct listing *l, const char *what)
{
	struct conf_state st;
	int rc = decode(t, l, &st);

	if (rc != TKSHM_EREDIS)
		fail_msg("%s: %s, want TKSHM_EREDIS", what,
			 tkshm_error_name(rc));
}

/* What Lua's tonumber makes of a number string (strtod, as the codec's
 * contract says), for the expected words. */
static uint64_t
lua_word(const char *s)
{
	return tk_f64_word(strtod(s, NULL));
}

static void
test_codec_edges(void **state)
{
	tkshm_table *g = tkt_anon("gcra:limit=10,periodMs=1000,burst=5", 64);
	tkshm_table *tb = tkt_anon("tokenBucket:capacity=5,refillPerSec=1", 64);
	tkshm_table *fw = tkt_anon("fixedWindow:limit=5,windowMs=1000", 64);
	tkshm_table *sw =
		tkt_anon("slidingWindow:limit=10,windowMs=1000,buckets=10", 64);
	tkshm_table *sl =
		tkt_anon("slidingWindowLog:limit=3,windowMs=1000", 64);
	tkshm_table *tbud = tkt_anon("tokenBudget:budget=10,windowMs=1000", 64);
	struct listing *l = test_malloc(sizeof *l);
	struct conf_state st;

	(void)state;
	/* One value: as Lua's tonumber reads it, padding and an embedded
	 * NUL included; a non-number is an absent key. */
	listing_init(l);
	listing_str(l, " 1700000000123.5 \t");
	assert_rc(decode(g, l, &st), TKSHM_OK);
	assert_true(st.present);
	assert_true(st.w[0] == lua_word("1700000000123.5"));
	listing_init(l);
	listing_bytes(l, "1700000000123\0junk", 18);
	assert_rc(decode(g, l, &st), TKSHM_OK);
	assert_true(st.present && st.w[0] == lua_word("1700000000123"));
	listing_init(l);
	listing_str(l, "12abc");
	expect_absent(g, l, "gcra: not a number");
	listing_init(l);
	listing_type(l, REDIS_REPLY_NIL);
	expect_absent(g, l, "gcra: GET nil");
	listing_init(l);
	listing_str(l, "1e400");
	expect_refused(g, l, "gcra: an infinite TAT");
	listing_init(l);
	listing_str(l, "-5");
	expect_refused(g, l, "gcra: a negative TAT");
	listing_init(l);
	listing_type(l, REDIS_REPLY_INTEGER);
	expect_refused(g, l, "gcra: an integer element");
	listing_init(l);
	listing_str(l, "1");
	listing_str(l, "2");
	expect_refused(g, l, "gcra: two values");

	/* Two fields: both or nothing; a count beyond the limit or tokens
	 * beyond capacity are states (a policy edited since). */
	listing_init(l);
	listing_str(l, "3");
	listing_type(l, REDIS_REPLY_NIL);
	expect_absent(tb, l, "tokenBucket: t without l");
	listing_init(l);
	listing_str(l, "6");
	listing_str(l, "1700000000000");
	expect_present(tb, l, "tokenBucket: tokens > capacity");
	listing_init(l);
	listing_str(l, "1700000000000");
	listing_str(l, "6");
	expect_present(fw, l, "fixedWindow: count > limit");
	listing_init(l);
	listing_str(l, "1700000000000");
	listing_str(l, "2");
	listing_str(l, "3");
	expect_refused(fw, l, "fixedWindow: three fields");
	listing_init(l);
	listing_type(l, REDIS_REPLY_STATUS);
	listing_str(l, "2");
	expect_refused(fw, l, "fixedWindow: a status element");

	/* A ring: entries that do not parse or do not belong to their field
	 * read as empty (the script never matches them); a field listed
	 * twice, or an odd listing, is malformed. */
	listing_init(l);
	listing_str(l, "3");
	listing_str(l, "14:2"); /* 14 mod 11 = 3 */
	listing_str(l, "4");
	listing_str(l, "14:1"); /* 14 does not belong to field 4 */
	listing_str(l, "11");
	listing_str(l, "11:1"); /* no field 11 with 10 buckets */
	listing_str(l, "5");
	listing_str(l, "16"); /* no colon */
	assert_rc(decode(sw, l, &st), TKSHM_OK);
	assert_true(st.present);
	/* tkshm's state: the newest tick + 1, then a count per field. */
	assert_true(st.w[0] == 15u);
	for (unsigned p = 0; p + 1 < sw->algo.words; p++)
		assert_true(st.w[1 + p] == (p == 3 ? lua_word("2") : 0u));
	/* An entry older than the window (tick 2 < 14 - 10) is one no
	 * decision reads: dropped; tick 5 is kept. */
	listing_init(l);
	listing_str(l, "2");
	listing_str(l, "2:1");
	listing_str(l, "3");
	listing_str(l, "14:2");
	listing_str(l, "5");
	listing_str(l, "5:1");
	assert_rc(decode(sw, l, &st), TKSHM_OK);
	assert_true(st.present);
	assert_true(st.w[0] == 15u);
	for (unsigned p = 0; p + 1 < sw->algo.words; p++)
		assert_true(st.w[1 + p] == (p == 3 ? lua_word("2") :
					    p == 5 ? lua_word("1") :
						     0u));
	listing_init(l);
	listing_str(l, "3");
	listing_str(l, "14:0");
	expect_refused(sw, l, "slidingWindow: a count of 0");
	listing_init(l);
	listing_str(l, "2");
	listing_str(l, "2:-1");
	listing_str(l, "3");
	listing_str(l, "14:2");
	expect_refused(sw, l, "slidingWindow: an old entry's negative count");
	listing_init(l);
	listing_str(l, "4");
	listing_str(l, "14:1");
	expect_absent(sw, l, "slidingWindow: only a stray entry");
	listing_init(l);
	listing_str(l, "3");
	listing_str(l, "14:2");
	listing_str(l, "3.0");
	listing_str(l, "3:1");
	expect_refused(sw, l, "slidingWindow: field 3 twice");
	listing_init(l);
	listing_str(l, "3");
	expect_refused(sw, l, "slidingWindow: an odd listing");
	listing_init(l);
	listing_str(l, "3");
	listing_str(l, "14:20");
	expect_present(sw, l, "slidingWindow: a count beyond the limit");

	/* A log: at most floor(limit) ascending stamps. */
	listing_init(l);
	for (int i = 0; i < 4; i++) {
		listing_str(l, "m");
		listing_str(l, "1700000000000");
	}
	expect_refused(sl, l, "slidingWindowLog: 4 stamps, limit 3");
	listing_init(l);
	listing_str(l, "a");
	listing_str(l, "1700000000002");
	listing_str(l, "b");
	listing_str(l, "1700000000001");
	expect_refused(sl, l, "slidingWindowLog: descending stamps");
	listing_init(l);
	listing_str(l, "a");
	listing_str(l, "soon");
	expect_refused(sl, l, "slidingWindowLog: a score not a number");
	listing_init(l);
	expect_absent(sl, l, "slidingWindowLog: an empty ZSET");

	/* No Redis encoding; NULL arguments. */
	listing_init(l);
	assert_rc(decode(tbud, l, &st), TKSHM_ENOTSUP);
	assert_rc(tk_state_from_reply(&g->algo, NULL, 1, st.w, &st.present),
		  TKSHM_ENULL);
	test_free(l);
	tkshm_close(g);
	tkshm_close(tb);
	tkshm_close(fw);
	tkshm_close(sw);
	tkshm_close(sl);
	tkshm_close(tbud);
}

/* Random listings of random elements, for every encoding: the decoder
 * answers TKSHM_OK or TKSHM_EREDIS, never reads or writes out of bounds
 * (the sanitizer builds run this), and what it accepts as present is a
 * state tkshm accepts. */
static void
test_codec_random(void **state)
{
	static const char *const specs[] = {
		"gcra:limit=10,periodMs=1000,burst=5",
		"leakyBucket:ratePerSec=10,maxQueueMs=500",
		"tokenBucket:capacity=5,refillPerSec=1",
		"fixedWindow:limit=5,windowMs=1000",
		"quota:limit=5,resetCadence=calendar-day",
		"slidingWindow:limit=10,windowMs=1000,buckets=3",
		"quota:limit=10,resetCadence=rolling,periodMs=1000,buckets=64",
		"slidingWindowLog:limit=4,windowMs=1000",
	};
	static const char alphabet[] = "0123456789:.-+eE x\t";
	enum {
		NSPECS = sizeof specs / sizeof specs[0],
		ROUNDS = 20000
	};
	tkshm_table *t[NSPECS];
	struct listing *l = test_malloc(sizeof *l);
	struct conf_rng rng = { 77 };
	unsigned accepted = 0, refused = 0;

	(void)state;
	for (unsigned i = 0; i < NSPECS; i++)
		t[i] = tkt_anon(specs[i], 64);
	for (unsigned round = 0; round < ROUNDS; round++) {
		tkshm_table *tt = t[round % NSPECS];
		size_t n = (size_t)floor(conf_rng_next(&rng) *
					 (2 * tt->algo.words + 4));
		struct conf_state st;
		int rc;

		listing_init(l);
		for (size_t i = 0; i < n && i < CODEC_MAX; i++) {
			double k = conf_rng_next(&rng);
			char buf[80];
			size_t len;

			if (k < 0.05) {
				listing_type(l, REDIS_REPLY_NIL);
				continue;
			}
			if (k < 0.08) {
				listing_type(l, k < 0.065 ?
							REDIS_REPLY_INTEGER :
							REDIS_REPLY_ARRAY);
				continue;
			}
			if (k < 0.6) {
				/* A plausible number or ring entry. */
				len = (size_t)snprintf(
					buf, sizeof buf,
					k < 0.3 ? "%.0f" : "%.0f:%.0f",
					floor(conf_rng_next(&rng) * 70),
					floor(conf_rng_next(&rng) * 12));
			} else {
				len = (size_t)floor(conf_rng_next(&rng) * 70);
				for (size_t j = 0; j < len; j++)
					buf[j] = alphabet[(size_t)floor(
						conf_rng_next(&rng) *
						(sizeof alphabet - 1))];
				if (len > 0 && conf_rng_next(&rng) < 0.1)
					buf[len / 2] = '\0';
			}
			listing_bytes(l, buf, len);
		}
		rc = decode(tt, l, &st);
		if (rc == TKSHM_OK) {
			if (st.present &&
			    !tk_algo_state_valid_w(&tt->algo, st.w))
				fail_msg("%s: round %u accepted an invalid "
					 "state",
					 specs[round % NSPECS], round);
			accepted++;
		} else if (rc == TKSHM_EREDIS) {
			refused++;
		} else {
			fail_msg("%s: round %u: %s", specs[round % NSPECS],
				 round, tkshm_error_name(rc));
		}
	}
	/* Both answers occurred. */
	assert_true(accepted > 0 && refused > 0);
	test_free(l);
	for (unsigned i = 0; i < NSPECS; i++)
		tkshm_close(t[i]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timelines),
		cmocka_unit_test(test_multi),
		cmocka_unit_test(test_server_time),
		cmocka_unit_test(test_codec_edges),
		cmocka_unit_test(test_codec_random),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
