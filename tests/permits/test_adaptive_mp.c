/*
 * test_adaptive_mp.c - one adaptive limit shared by the processes of a host,
 * against a synthetic backend whose latency rises with load.
 *
 * The backend: a call takes BASE_MS while at most `knee` calls are in
 * flight, and BASE_MS * inflight / knee beyond (a queue in front of `knee`
 * servers).  Twelve worker processes call it as fast as their permits allow
 * and report every latency on release, so all of them feed one limit.
 * They start one after another (50 ms apart), so the first calls meet an
 * idle backend: rttNoLoad is a windowed minimum, and a window (here longer
 * than the test) must hold some calls made at low load to know what
 * "no load" costs.
 *
 *   phase 1: knee 4.  gradient2 (tolerance 1.5) settles where the queueing
 *            it tolerates balances its sqrt(limit) probe: near the knee,
 *            well below the 12 callers and the initial limit of 20.
 *   phase 2: the backend gets fast (no queueing at any load).  The limit
 *            recovers: it grows past the callers' own concurrency.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mp_util.h"
#include "test_support.h"

#define KEY	"backend"
#define KEY_LEN 7
#define BASE_MS 2.0
#define WORKERS 12

struct shared {
	struct mp_barrier start;
	uint32_t inflight;
	uint32_t knee;
	uint32_t stop;
	uint64_t calls;
};

static struct shared *sh;
static tkshm_table *tbl;

static int
caller(void *arg)
{
	if (!mp_barrier_wait(&sh->start))
		return 1;
	mp_sleep_us((uint64_t)(uintptr_t)arg * 50000);
	/* Relaxed: a stop flag polled in a loop. */
	while (!__atomic_load_n(&sh->stop, __ATOMIC_RELAXED)) {
		tkshm_permit p;
		tkshm_decision d;
		uint32_t n, knee;
		double ms;
		int rc = tkshm_acquire(tbl, KEY, KEY_LEN, &p, &d);

		MP_REQUIRE(rc == TKSHM_OK, "acquire: %s", tkshm_error_name(rc));
		if (!d.allowed) {
			mp_sleep_us(500);
			continue;
		}
		/* seq_cst: the backend's own count of calls in flight. */
		n = __atomic_add_fetch(&sh->inflight, 1, __ATOMIC_SEQ_CST);
		/* Relaxed: the parent switches the backend's speed. */
		knee = __atomic_load_n(&sh->knee, __ATOMIC_RELAXED);
		ms = n <= knee ? BASE_MS : BASE_MS * n / knee;
		mp_sleep_us((uint64_t)(ms * 1000));
		/* seq_cst: as above. */
		__atomic_sub_fetch(&sh->inflight, 1, __ATOMIC_SEQ_CST);
		rc = tkshm_release(tbl, &p, TKSHM_OUTCOME_SUCCESS);
		MP_REQUIRE(rc == TKSHM_OK, "release: %s", tkshm_error_name(rc));
		/* Relaxed: a tally. */
		__atomic_add_fetch(&sh->calls, 1, __ATOMIC_RELAXED);
	}
	return 0;
}

/* The limit in force, observed every 50 ms for `seconds`: its mean over the
 * second half and its last value. */
static void
watch(double seconds, double *mean_late, int64_t *last)
{
	double t0 = tkt_seconds(), sum = 0;
	unsigned n = 0;

	while (tkt_seconds() - t0 < seconds && !mp_failed()) {
		tkshm_decision d;

		mp_sleep_us(50000);
		assert_rc(tkshm_peek(tbl, KEY, KEY_LEN, &d), TKSHM_OK);
		*last = d.limit;
		if (tkt_seconds() - t0 >= seconds / 2) {
			sum += (double)d.limit;
			n++;
		}
	}
	*mean_late = n ? sum / n : 0;
}

static void
test_settles_at_knee_and_recovers(void **state)
{
	double slow_mean, fast_mean;
	int64_t slow_last = 0, fast_last = 0;

	(void)state;
	sh = tkt_shared(sizeof *sh);
	sh->start.n = WORKERS + 1;
	sh->knee = 4;
	tbl = tkt_anon("adaptiveConcurrency:initialLimit=20,maxLimit=48,"
		       "rttWindowMs=60000",
		       64);
	for (uintptr_t i = 0; i < WORKERS; i++)
		mp_spawn(caller, (void *)i);
	assert_true(mp_barrier_wait(&sh->start));
	watch(4.0, &slow_mean, &slow_last);
	/* Relaxed: the callers read it per call. */
	__atomic_store_n(&sh->knee, 1000, __ATOMIC_RELAXED);
	watch(3.0, &fast_mean, &fast_last);
	/* Relaxed: the callers poll it. */
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	mp_wait_all(60);
	print_message("knee 4: limit %.1f (last %lld); fast backend: limit "
		      "%.1f (last %lld); %llu calls\n",
		      slow_mean, (long long)slow_last, fast_mean,
		      (long long)fast_last, (unsigned long long)sh->calls);
	/* Near the knee: from 20 down to between the knee and 3 knees
	 * (gradient2 tolerates 50% queueing plus its sqrt probe). */
	assert_true(slow_mean >= 4 && slow_mean <= 12);
	assert_true(slow_last >= 4 && slow_last <= 12);
	/* Recovered: above what the 12 callers can use at once. */
	assert_true(fast_mean > slow_mean);
	assert_true(fast_last > WORKERS);
	mp_verify(tbl, "after the adaptive run");
	tkshm_close(tbl);
	tkt_shared_free(sh, sizeof *sh);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_settles_at_knee_and_recovers,
					  mp_teardown),
	};

	return cmocka_run_group_tests(tests, mp_setup, tkt_teardown);
}
