/*
 * test_multi_mp.c - multi-dimension checks raced by real processes.
 *
 * 8 worker processes share three anonymous tables (per-user, tenant and
 * global limits, nothing refills, fixed now) and hammer overlapping
 * three-dimension requests: the workload and every assertion are described
 * in multi_workload.h.
 *
 * all_workload  TKSHM_MULTI_ALL: no key over its burst, the consumption
 *               every table holds matches what was admitted (exactly half a
 *               unit later; at now, conservative give-backs may hide one
 *               unit), allowed - multi_rollbacks == dimensions admitted.
 *               The number of rollbacks is printed, not required.
 * any_workload  TKSHM_MULTI_ANY: no key over its burst, consumption equals
 *               what each dimension admitted, no rollback.
 * tkshm_verify is clean on every table after each.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "multi_workload.h"

#define NPROC	  8
#define ROUNDS	  1000
#define PER_ROUND 40

struct child_arg {
	struct mw_shared *sh;
	int worker;
};

static int
worker_child(void *p)
{
	struct child_arg *a = p;

	mw_worker(a->sh, a->worker);
	return 0;
}

static void
run(tkshm_multi_mode mode, const char *what)
{
	struct mw_shared *sh = tkt_shared(sizeof *sh);
	struct child_arg args[NPROC];
	double t0 = tkt_seconds();

	mw_open(sh, mode, ROUNDS, PER_ROUND, NPROC);
	for (int i = 0; i < NPROC; i++) {
		args[i] = (struct child_arg){ sh, i };
		mp_spawn(worker_child, &args[i]);
	}
	mp_wait_all(200);
	mw_check(sh, what, tkt_seconds() - t0);
	mw_close(sh);
	tkt_shared_free(sh, sizeof *sh);
}

static void
all_workload(void **state)
{
	(void)state;
	run(TKSHM_MULTI_ALL, "all, 8 processes");
}

static void
any_workload(void **state)
{
	(void)state;
	run(TKSHM_MULTI_ANY, "any, 8 processes");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(all_workload, mp_teardown),
		cmocka_unit_test_teardown(any_workload, mp_teardown),
	};

	return cmocka_run_group_tests(tests, mp_setup, NULL);
}
