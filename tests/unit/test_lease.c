/*
 * test_lease.c - lease states (src/algorithms/lease.h) and lease tables,
 * without Redis: ThrottleKit's window-coupled lease vectors replayed
 * through the pure transitions, the lot rules (L2, L3), the failure
 * policies, and the cross-host part of policy strings.
 */
#include <math.h>
#include <string.h>

#include "algorithms/lease.h"
#include "base/clock.h"
#include "global/lease_check.h"
#include "shm/atomic.h"
#include "test_support.h"

static struct tk_lease
lease_of(double limit, double window_ms)
{
	struct tk_lease l;

	memset(&l, 0, sizeof l);
	l.base = TKSHM_KIND_FIXED_WINDOW;
	l.fixed_window.limit = limit;
	l.fixed_window.window_ms = window_ms;
	l.capacity = limit;
	return l;
}

static const struct tk_lease_env up = { false, TKSHM_FAILURE_SAFE_SHARE, 1, 1,
					0 };

/* ThrottleKit's LeaseSpender vectors, window-coupled suites: credits are
 * spent while they cover the cost, a lease ends at its expiresAt, and
 * "needsRefresh" is a denial for want of credit.  (The one suite that is
 * not window-coupled lets credits outlive their lease, which tkshm never
 * does (L3); it is skipped.) */
static void
test_golden_lease_vectors(void **state)
{
	cJSON *root = tkt_golden(), *suite;
	int replayed = 0, suites = 0;

	(void)state;
	cJSON_ArrayForEach(suite, tkt_json_item(root, "suites"))
	{
		const cJSON *ev;
		struct tk_lease l;
		uint64_t st[TK_LEASE_WORDS], next[TK_LEASE_WORDS];
		bool present = false;

		if (strcmp(tkt_str_at(suite, "primitive"), "lease") != 0 ||
		    !tkt_bool_at(suite, "windowCoupled"))
			continue;
		suites++;
		l = lease_of(tkt_num_at(suite, "limit"),
			     tkt_num_at(suite, "ttlMs"));
		cJSON_ArrayForEach(ev, tkt_json_item(suite, "events"))
		{
			const char *op = tkt_str_at(ev, "op");

			if (strcmp(op, "grant") == 0) {
				struct tk_lease_grant g = {
					tkt_num_at(ev, "capacity"),
					tkt_num_at(ev, "expiresAt")
				};
				/* A grant is applied before the next spend's
				 * time; the lots then age at the spends. */
				tk_lease_apply(&l, present, st, 0, &g, next);
			} else {
				const cJSON *x = tkt_json_item(ev, "expect");
				tkshm_decision d;
				enum tk_lease_how how;

				tk_lease_spend(&l, present, st,
					       tkt_num_at(ev, "now"),
					       tkt_num_at(ev, "cost"), &up,
					       next, &d, &how);
				assert_int_equal(
					how == TK_LEASE_NO_CREDIT,
					tkt_bool_at(x, "needsRefresh"));
				if (!tkt_bool_at(x, "needsRefresh")) {
					const cJSON *e =
						tkt_json_item(x, "decision");

					assert_true(d.allowed);
					tkt_expect_num(e, "limit",
						       (double)d.limit,
						       "limit");
					tkt_expect_num(e, "remaining",
						       (double)d.remaining,
						       "remaining");
					tkt_expect_num(e, "resetAt",
						       (double)d.reset_at,
						       "resetAt");
					tkt_expect_num(e, "retryAfterMs",
						       (double)d.retry_after_ms,
						       "retryAfterMs");
				}
				replayed++;
			}
			memcpy(st, next, sizeof st);
			present = true;
			assert_true(tk_lease_state_valid(&l, st));
		}
	}
	assert_int_equal(suites, 5);
	assert_true(replayed >= 25);
	cJSON_Delete(root);
}

/* L3: a grant never extends the life of older credit. */
static void
test_lots_keep_their_expiry(void **state)
{
	struct tk_lease l = lease_of(100, 1000);
	uint64_t a[TK_LEASE_WORDS], b[TK_LEASE_WORDS], c[TK_LEASE_WORDS];
	struct tk_lease_grant g1 = { 10, 1000 }, g2 = { 10, 1500 },
			      g3 = { 10, 2000 };
	tkshm_decision d;
	enum tk_lease_how how;

	(void)state;
	tk_lease_apply(&l, false, NULL, 0, &g1, a);
	tk_lease_apply(&l, true, a, 100, &g2, b);
	assert_true(tk_lease_credits(b, 999) == 20);
	/* At 1000 the first lot ends: 10 left. */
	assert_true(tk_lease_credits(b, 1000) == 10);
	/* A third grant while the first two are live: the second joins the
	 * first under the first's (earlier) expiry. */
	tk_lease_apply(&l, true, b, 200, &g3, c);
	assert_true(tk_lease_credits(c, 999) == 30);
	assert_true(tk_lease_credits(c, 1000) == 10);
	/* Spending takes the lot that ends first. */
	tk_lease_spend(&l, true, c, 300, 15, &up, a, &d, &how);
	assert_true(d.allowed);
	assert_true(tk_word_f64(a[TK_LEASE_PREV]) == 5);
	assert_true(tk_word_f64(a[TK_LEASE_CUR]) == 10);
	/* Expired credit is discarded and counted (L2). */
	tk_lease_spend(&l, true, a, 1200, 1, &up, b, &d, &how);
	assert_true(tk_word_f64(b[TK_LEASE_EXPIRED]) == 5);
	assert_true(tk_word_f64(b[TK_LEASE_CUR]) == 9);
	assert_true(tk_word_f64(b[TK_LEASE_ASKED]) == 16);
	assert_true(tk_word_f64(b[TK_LEASE_SPENT]) == 16);
}

/* Without credit: denied while Redis is up (the agent will lease), the
 * failure policy while it is down: the safe share from the window after
 * the one Redis was found gone in (L5). */
static void
test_failure_policies(void **state)
{
	struct tk_lease l = lease_of(12, 60000);
	uint64_t st[TK_LEASE_WORDS], next[TK_LEASE_WORDS];
	struct tk_lease_env down = { true, TKSHM_FAILURE_SAFE_SHARE, 3, 1, 0 };
	tkshm_decision d;
	enum tk_lease_how how;
	bool present = false;
	int admitted = 0, first = 0;

	(void)state;
	tk_lease_spend(&l, false, NULL, 1000, 1, &up, st, &d, &how);
	assert_false(d.allowed);
	assert_int_equal(how, TK_LEASE_NO_CREDIT);
	assert_true(d.flags & TKSHM_DECISION_NO_LEASE);
	assert_int_equal(d.retry_after_ms, 1);
	present = true;
	for (int i = 0; i < 20; i++) {
		/* Ten checks in the window it fell in, ten in the next. */
		double now = (i < 10 ? 1000 : 60000) + i;

		tk_lease_spend(&l, present, st, now, 1, &down, next, &d, &how);
		assert_int_equal(how, TK_LEASE_SAFE_SHARE);
		assert_true(d.flags & TKSHM_DECISION_FALLBACK);
		if (i < 10)
			first += d.allowed;
		else
			admitted += d.allowed;
		memcpy(st, next, sizeof st);
	}
	assert_int_equal(first, 0);
	assert_int_equal(admitted, 4); /* 12 / 3 hosts */
	down.failure = TKSHM_FAILURE_OPEN;
	tk_lease_spend(&l, true, st, 2000, 1, &down, next, &d, &how);
	assert_true(d.allowed && how == TK_LEASE_FAIL_OPEN);
	down.failure = TKSHM_FAILURE_CLOSED;
	tk_lease_spend(&l, true, st, 2000, 1, &down, next, &d, &how);
	assert_true(!d.allowed && how == TK_LEASE_FAIL_CLOSED);
}

/* Runs `n` safe-share checks of cost 1 from `from`, `step` ms apart;
 * returns how many were admitted. */
static int
share_run(const struct tk_lease *l, uint64_t *st,
	  const struct tk_lease_env *env, double from, double step, int n)
{
	uint64_t next[TK_LEASE_WORDS];
	tkshm_decision d;
	enum tk_lease_how how;
	int admitted = 0;

	for (int i = 0; i < n; i++) {
		tk_lease_spend(l, true, st, from + step * i, 1, env, next, &d,
			       &how);
		assert_int_equal(how, TK_LEASE_SAFE_SHARE);
		admitted += d.allowed;
		memcpy(st, next, sizeof next);
		assert_true(tk_lease_state_valid(l, st));
	}
	return admitted;
}

/* L5: each outage's share starts spent; a share used in one outage is
 * not started again in the same outage, and is in the next one (the
 * agent answered in between: up_at moved past the key's fall). */
static void
test_share_starts_spent(void **state)
{
	struct tk_lease w = lease_of(12, 1000), g;
	struct tk_lease_env down = { true, TKSHM_FAILURE_SAFE_SHARE, 3, 1,
				     500 };
	uint64_t st[TK_LEASE_WORDS];
	struct tk_lease_grant gr = { 12, 1000 };
	tkshm_decision d;
	enum tk_lease_how how;

	(void)state;
	/* A fixed window: all 12 leased and spent in window 0, then Redis
	 * gone at 600: nothing more in window 0, 4 in window 1. */
	tk_lease_apply(&w, false, NULL, 100, &gr, st);
	for (int i = 0; i < 12; i++) {
		uint64_t next[TK_LEASE_WORDS];

		assert_true(tk_lease_spend(&w, true, st, 200 + i, 1, &up, next,
					   &d, &how));
		memcpy(st, next, sizeof next);
	}
	assert_int_equal(share_run(&w, st, &down, 600, 1, 50), 0);
	assert_true(tk_word_f64(st[TK_LEASE_FELL]) == 600);
	assert_int_equal(share_run(&w, st, &down, 1000, 1, 50), 4);
	/* The same outage: window 2 has its 4. */
	assert_int_equal(share_run(&w, st, &down, 2000, 1, 50), 4);
	/* Redis answered at 2500, gone again: window 2 is spent. */
	down.up_at = 2500;
	assert_int_equal(share_run(&w, st, &down, 2600, 1, 50), 0);
	assert_int_equal(share_run(&w, st, &down, 3000, 1, 50), 4);

	/* A GCRA (12 per 1200 ms, burst 12: T = 100 ms): the share owes its
	 * burst, so it admits one per T * 3 hosts from the fall, not 4 at
	 * once. */
	memset(&g, 0, sizeof g);
	g.base = TKSHM_KIND_GCRA;
	assert_rc(tk_gcra_init(&g.gcra, 12, 1200, 12, NULL, 0), TKSHM_OK);
	g.capacity = 12;
	down.up_at = 0;
	tk_lease_apply(&g, false, NULL, 0, &gr, st);
	assert_int_equal(share_run(&g, st, &down, 1000, 1, 300), 0);
	assert_int_equal(share_run(&g, st, &down, 1300, 1, 1), 1);
	/* 3 s later, the same outage: the share has refilled (4). */
	assert_int_equal(share_run(&g, st, &down, 5000, 0, 10), 4);
	/* Another outage: spent again. */
	down.up_at = 6000;
	assert_int_equal(share_run(&g, st, &down, 9000, 0, 10), 0);
}

/* When the agent may lease again after a handover settled at `s`. */
static void
test_resume_at(void **state)
{
	struct tk_lease w = lease_of(12, 1000), g;

	(void)state;
	assert_true(tk_lease_resume_at(&w, 1000, 1000, 1e9) == 1000);
	assert_true(tk_lease_resume_at(&w, 1000, 1000.5, 1e9) == 2000);
	assert_true(tk_lease_resume_at(&w, 1000, 2999, 0) == 3000);
	memset(&g, 0, sizeof g);
	g.base = TKSHM_KIND_GCRA;
	assert_rc(tk_gcra_init(&g.gcra, 12, 1200, 12, NULL, 0), TKSHM_OK);
	/* tau = 1200: 200 ms more than leases of 1000 ms live, after an
	 * outage long enough for the shares to refill; less after a short
	 * one. */
	assert_true(tk_lease_resume_at(&g, 1000, 5000, 1e9) == 5200);
	assert_true(tk_lease_resume_at(&g, 1000, 5000, 1100) == 5100);
	assert_true(tk_lease_resume_at(&g, 1000, 5000, 500) == 5000);
	assert_true(tk_lease_resume_at(&g, 2000, 5000, 1e9) == 5000);
}

/* A lease table end to end in shared memory: no agent yet means Redis is
 * unreachable (the failure policy); grants written by the agent's
 * transition are spent by checks; the whole key is kept for the agent. */
static void
test_lease_table(void **state)
{
	tkshm_table *t = tkt_anon("fixedWindow:limit=9,windowMs=60000;"
				  "mode=lease,failure=fail-closed,prefix=lt",
				  64);
	const char *key = "tenant-with-a-key-longer-than-a-label-42";
	struct tk_lease_grant g = { 3, tkshm_now_ms() + 50000 };
	tkshm_decision d;
	tkshm_stats s;
	unsigned char got[TKSHM_LEASE_KEY_MAX];
	uint64_t cursor = 0, index, fp, words[TK_ALGO_MAX_WORDS];
	size_t len = 0;
	bool present;

	(void)state;
	assert_rc(tkshm_check(t, key, strlen(key), 1, &d), TKSHM_OK);
	assert_false(d.allowed);
	assert_true(d.flags & TKSHM_DECISION_FALLBACK);
	/* An agent publishes Redis as up: the next check waits for credit. */
	tk_store_seq_cst(&t->global->agent_pid, 1);
	tk_store_seq_cst(&t->global->redis_up, 1);
	tk_store_seq_cst(&t->global->agent_beat, tk_f64_word(tk_mono_ms()));
	assert_rc(tkshm_check(t, key, strlen(key), 1, &d), TKSHM_OK);
	assert_false(d.allowed);
	assert_true(d.flags & TKSHM_DECISION_NO_LEASE);
	assert_rc(tk_lease_grant(t, key, strlen(key), tkshm_now_ms(), &g),
		  TKSHM_OK);
	for (int i = 0; i < 3; i++) {
		assert_rc(tkshm_check(t, key, strlen(key), 1, &d), TKSHM_OK);
		assert_true(d.allowed);
		assert_int_equal(d.remaining, 2 - i);
	}
	assert_rc(tkshm_check(t, key, strlen(key), 1, &d), TKSHM_OK);
	assert_false(d.allowed);
	assert_rc(tk_state_next(t, &cursor, &index, &fp, words, &present),
		  TKSHM_OK);
	assert_true(tk_keyrec_read(t, index, fp, got, &len));
	assert_int_equal(len, strlen(key));
	assert_memory_equal(got, key, len);
	assert_true(tk_word_f64(words[TK_LEASE_ASKED]) == 6);
	assert_rc(tkshm_stats_get(t, &s), TKSHM_OK);
	assert_int_equal(s.allowed, 3);
	assert_int_equal(s.global.leases, 1);
	assert_int_equal(s.global.lease_units, 3);
	assert_int_equal(s.global.no_lease, 2);
	assert_int_equal(s.global.fallback_denied, 1);
	/* Keys a lease table cannot name in Redis are refused. */
	{
		char big[TKSHM_LEASE_KEY_MAX + 1];

		memset(big, 'k', sizeof big);
		assert_rc(tkshm_check(t, big, sizeof big, 1, &d),
			  TKSHM_EKEYLONG);
	}
	tkshm_close(t);
}

static void
test_policy_strings(void **state)
{
	static const char *bad[] = {
		"gcra:limit=5,periodMs=1000;mode=remote",
		"gcra:limit=5,periodMs=1000;mode=lease,failure=maybe",
		"gcra:limit=5,periodMs=1000;mode=lease,hosts=0",
		"gcra:limit=5,periodMs=1000;mode=lease,hosts=2.5",
		"gcra:limit=5,periodMs=1000;mode=lease,leaseMs=0",
		"gcra:limit=5,periodMs=1000;mode=strict,prefix=a b",
		"gcra:limit=5,periodMs=1000;mode=strict,mode=lease",
		"gcra:limit=5,periodMs=1000;mode=strict,color=red",
		"tokenBucket:capacity=5,refillPerSec=1;mode=lease",
		"tokenBudget:budget=100,windowMs=1000;mode=strict",
		"concurrency:limit=4;mode=strict",
	};
	tkshm_policy p, q;
	char buf[TKSHM_POLICY_MAX], err[200];

	(void)state;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (tkshm_policy_parse(bad[i], &p, err, sizeof err) !=
		    TKSHM_EPOLICY)
			fail_msg("accepted \"%s\"", bad[i]);
	assert_rc(tkshm_policy_parse("fixedWindow:limit=5,windowMs=1000;"
				     "mode=lease,failure=fail-open,hosts=3,"
				     "prefix={t1}",
				     &p, err, sizeof err),
		  TKSHM_OK);
	assert_int_equal(p.global.mode, TKSHM_MODE_LEASE);
	assert_int_equal(p.global.failure, TKSHM_FAILURE_OPEN);
	assert_true(p.global.hosts == 3);
	assert_string_equal(p.global.prefix, "{t1}");
	assert_true(tkshm_policy_format(&p, buf, sizeof buf) > 0);
	assert_string_equal(buf, "fixedWindow:limit=5,windowMs=1000;"
				 "mode=lease,failure=fail-open,hosts=3,"
				 "leaseMs=1000,prefix={t1}");
	assert_rc(tkshm_policy_parse(buf, &q, NULL, 0), TKSHM_OK);
	assert_true(tkshm_policy_equal(&p, &q));
	q.global.hosts = 4;
	assert_false(tkshm_policy_equal(&p, &q));
	/* Local policies format as before and ignore the rest. */
	assert_rc(tkshm_policy_parse("gcra:limit=5,periodMs=1000;mode=local,"
				     "hosts=7",
				     &p, NULL, 0),
		  TKSHM_OK);
	assert_true(tkshm_policy_format(&p, buf, sizeof buf) > 0);
	assert_string_equal(buf, "gcra:limit=5,periodMs=1000,burst=5");
	/* A table remembers its cross-host part: another one mismatches. */
	{
		tkshm_table *t = tkt_file(tkt_path("lease.tk"),
					  "gcra:limit=5,periodMs=1000;"
					  "mode=lease",
					  64);
		tkshm_options o = TKSHM_OPTIONS_INIT;
		tkshm_table *u;

		assert_rc(tkshm_policy_parse("gcra:limit=5,periodMs=1000;"
					     "mode=strict",
					     &p, NULL, 0),
			  TKSHM_OK);
		o.policy = &p;
		o.flags = TKSHM_O_KEEP;
		assert_rc(tkshm_open(tkt_path("lease.tk"), &o, &u),
			  TKSHM_EMISMATCH);
		tkshm_close(t);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_lease_vectors),
		cmocka_unit_test(test_lots_keep_their_expiry),
		cmocka_unit_test(test_failure_policies),
		cmocka_unit_test(test_share_starts_spent),
		cmocka_unit_test(test_resume_at),
		cmocka_unit_test(test_lease_table),
		cmocka_unit_test(test_policy_strings),
	};

	return cmocka_run_group_tests(tests, NULL, tkt_teardown);
}
