/*
 * make_seeds.c - writes the seed tables of fuzz_table: small tables (8
 * slots) made by the library itself, one per algorithm and mode, each
 * with a few keys checked at TKF_T0_MS so their slots, labels and wide
 * records hold real states.  Run by hand when the layout changes:
 *
 *     make_seeds DIR     (DIR is tests/fuzz/corpus/fuzz_table)
 *
 * The fuzz build also runs it into its work directory before the smoke
 * test of fuzz_table, so the smoke starts from current tables even when
 * the committed ones are stale.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "tkshm.h"

static const struct {
	const char *name;
	const char *policy;
	tkshm_on_full on_full;
} seeds[] = {
	{ "gcra", "gcra:limit=3,periodMs=1000,burst=2", TKSHM_ON_FULL_EVICT },
	{ "gcra-refuse", "gcra:limit=3,periodMs=1000", TKSHM_ON_FULL_REFUSE },
	{ "token-bucket", "tokenBucket:capacity=2,refillPerSec=1",
	  TKSHM_ON_FULL_EVICT },
	{ "fixed-window", "fixedWindow:limit=2,windowMs=1000",
	  TKSHM_ON_FULL_EVICT },
	{ "sliding-window", "slidingWindow:limit=3,windowMs=1000,buckets=4",
	  TKSHM_ON_FULL_EVICT },
	{ "sliding-log", "slidingWindowLog:limit=3,windowMs=1000",
	  TKSHM_ON_FULL_EVICT },
	{ "quota-week",
	  "quota:limit=3,resetCadence=calendar-week,offsetMinutes=60",
	  TKSHM_ON_FULL_EVICT },
	{ "quota-rolling",
	  "quota:limit=3,resetCadence=rolling,periodMs=1000,buckets=4",
	  TKSHM_ON_FULL_EVICT },
	{ "token-budget", "tokenBudget:budget=3,windowMs=1000",
	  TKSHM_ON_FULL_EVICT },
	{ "leaky-bucket", "leakyBucket:ratePerSec=2,maxQueueMs=1000",
	  TKSHM_ON_FULL_EVICT },
	{ "concurrency", "concurrency:limit=2", TKSHM_ON_FULL_EVICT },
	{ "adaptive",
	  "adaptiveConcurrency:algorithm=aimd,maxLimit=4,"
	  "initialLimit=2",
	  TKSHM_ON_FULL_EVICT },
	{ "lease", "gcra:limit=3,periodMs=1000;mode=lease,prefix=rl",
	  TKSHM_ON_FULL_EVICT },
	{ "strict", "fixedWindow:limit=2,windowMs=1000;mode=strict",
	  TKSHM_ON_FULL_EVICT },
};

/* Fills the table as a worker would: each key used at T0 and a little
 * after (more keys than slots, so some are evicted with their debt). */
static int
fill(tkshm_table *t, tkshm_kind kind)
{
	tkshm_decision d;
	tkshm_reservation r;
	tkshm_permit p;
	char key[32];

	for (unsigned i = 0; i < 12; i++) {
		const char *k = i < TKF_NKEYS ? tkf_keys[i] : key;
		double now = TKF_T0_MS + 10.0 * i;
		int rc;

		snprintf(key, sizeof key, "user-%u", i);
		if (kind == TKSHM_KIND_LEAKY_BUCKET)
			rc = tkshm_reserve_at(t, k, strlen(k), 1, now, &r);
		else if (kind == TKSHM_KIND_CONCURRENCY ||
			 kind == TKSHM_KIND_ADAPTIVE_CONCURRENCY)
			/* Held by this process, which then exits: a
			 * reader sees a dead holder. */
			rc = tkshm_acquire_at(t, k, strlen(k), now, &p, &d);
		else
			rc = tkshm_check_at(t, k, strlen(k), 1, now, &d);
		/* A strict table without Redis decides nothing. */
		if (rc != TKSHM_OK && rc != TKSHM_EFULL &&
		    rc != TKSHM_ENOREDIS) {
			fprintf(stderr, "make_seeds: %s\n", tkshm_strerror(rc));
			return -1;
		}
	}
	return 0;
}

int
main(int argc, char **argv)
{
	char path[4096];

	if (argc != 2) {
		fprintf(stderr, "usage: make_seeds DIR\n");
		return 2;
	}
	if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) {
		perror(argv[1]);
		return 1;
	}
	for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
		tkshm_options o = TKSHM_OPTIONS_INIT;
		tkshm_policy p;
		tkshm_table *t;
		char why[256];
		int rc;

		rc = tkshm_policy_parse(seeds[i].policy, &p, why, sizeof why);
		if (rc != TKSHM_OK) {
			fprintf(stderr, "make_seeds: %s: %s\n", seeds[i].policy,
				why);
			return 1;
		}
		snprintf(path, sizeof path, "%s/%s", argv[1], seeds[i].name);
		if (unlink(path) != 0 && errno != ENOENT) {
			perror(path);
			return 1;
		}
		o.policy = &p;
		o.slots = 8;
		o.on_full = seeds[i].on_full;
		o.flags = TKSHM_O_CREATE | TKSHM_O_EXCL;
		rc = tkshm_open(path, &o, &t);
		if (rc != TKSHM_OK) {
			fprintf(stderr, "make_seeds: %s: %s\n", path,
				tkshm_strerror(rc));
			return 1;
		}
		rc = fill(t, p.kind);
		tkshm_close(t);
		if (rc != 0)
			return 1;
	}
	return 0;
}
