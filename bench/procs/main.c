/*
 * main.c - tkshm_bench_procs: tkshm against the two designs it replaces,
 * with real fork()ed processes (scenarios.h lists what is measured).
 *
 *   tkshm_bench_procs [--quick] [--seconds S] [--procs LIST]
 *                     [--scenario NAME...] [--out FILE]
 *
 * Prints a table on stdout and writes one JSON object per case, one per
 * line, to FILE (default bench/results/procs.jsonl in the source tree; the
 * fields are listed in report.h).  Exit 0 when every case ran (skipped
 * cases included), 1 when one failed, 2 on a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "report.h"
#include "scenarios.h"
#include "tsc.h"

#ifndef TKSHM_PROCS_DEFAULT_OUT
#define TKSHM_PROCS_DEFAULT_OUT "bench/results/procs.jsonl"
#endif

static const struct {
	const char *name;
	int (*run)(struct bench *);
} scenarios[] = {
	{ "uniform100k", sc_uniform }, { "hotkey", sc_hotkey },
	{ "keys10M", sc_keys10m },     { "sigstop", sc_sigstop },
	{ "redis", sc_redis },
};
#define NSCENARIOS (sizeof scenarios / sizeof scenarios[0])

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: tkshm_bench_procs [--quick] [--seconds S] "
		"[--procs LIST] [--scenario NAME...] [--out FILE]\n"
		"  --quick         every case tiny (0.2 s, 1 and 2 processes, "
		"10k and 100k keys): a smoke test\n"
		"  --seconds S     timed seconds per case (default 1.5)\n"
		"  --procs LIST    process counts for uniform100k and hotkey "
		"(default 1,2,4,8,16,32)\n"
		"  --scenario NAME uniform100k, hotkey, keys10M, sigstop, "
		"redis or all; repeat it or give several names (default all)\n"
		"  --out FILE      JSON lines (default %s)\n",
		TKSHM_PROCS_DEFAULT_OUT);
}

static int
parse_procs(const char *s, struct bench *b)
{
	char *end;

	b->nprocs = 0;
	for (;;) {
		long v;

		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || end == s || v < 1 || v > DRV_MAX_PROCS ||
		    b->nprocs == (int)(sizeof b->procs / sizeof b->procs[0]))
			return -1;
		b->procs[b->nprocs++] = (int)v;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

/* Marks the scenarios named in `s` (a name, a comma list, or "all"). */
static int
select_scenarios(const char *s, bool *chosen)
{
	while (*s) {
		size_t n = strcspn(s, ",");
		bool found = false;

		for (size_t i = 0; i < NSCENARIOS; i++) {
			if ((strlen(scenarios[i].name) == n &&
			     strncmp(s, scenarios[i].name, n) == 0) ||
			    (n == 3 && strncmp(s, "all", 3) == 0)) {
				chosen[i] = true;
				found = true;
			}
		}
		if (!found) {
			fprintf(stderr,
				"tkshm_bench_procs: unknown scenario '%.*s'\n",
				(int)n, s);
			return -1;
		}
		s += n;
		if (*s == ',')
			s++;
	}
	return 0;
}

/* Other work on the machine moves every figure: say how busy it was. */
static void
print_load(void)
{
	double l1, l5;
	FILE *f = fopen("/proc/loadavg", "r");

	if (!f)
		return;
	if (fscanf(f, "%lf %lf", &l1, &l5) == 2)
		printf("# load average before the run: %.2f (1 min), %.2f "
		       "(5 min)\n",
		       l1, l5);
	fclose(f);
}

int
main(int argc, char **argv)
{
	struct bench b;
	bool chosen[NSCENARIOS] = { false }, any = false, procs_given = false;
	const char *out = TKSHM_PROCS_DEFAULT_OUT;
	double seconds = 0, t0;
	char err[256];
	int rc = 0;

	memset(&b, 0, sizeof b);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--quick") == 0) {
			b.quick = true;
		} else if (strcmp(a, "--seconds") == 0 && i + 1 < argc) {
			char *end;

			seconds = strtod(argv[++i], &end);
			if (*end || !(seconds > 0) || seconds > 3600) {
				fprintf(stderr, "tkshm_bench_procs: bad "
						"--seconds\n");
				return 2;
			}
		} else if (strcmp(a, "--procs") == 0 && i + 1 < argc) {
			if (parse_procs(argv[++i], &b) != 0) {
				fprintf(stderr,
					"tkshm_bench_procs: --procs wants "
					"numbers 1..%d separated by commas\n",
					DRV_MAX_PROCS);
				return 2;
			}
			procs_given = true;
		} else if (strcmp(a, "--scenario") == 0 && i + 1 < argc) {
			/* NAME...: every following word up to the next
			 * option. */
			do {
				if (select_scenarios(argv[++i], chosen) != 0)
					return 2;
			} while (i + 1 < argc && argv[i + 1][0] != '-');
			any = true;
		} else if (strcmp(a, "--out") == 0 && i + 1 < argc) {
			out = argv[++i];
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr,
				"tkshm_bench_procs: bad argument '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!any)
		for (size_t i = 0; i < NSCENARIOS; i++)
			chosen[i] = true;
	b.seconds = seconds > 0 ? seconds : b.quick ? 0.2 : 1.5;
	if (!procs_given) {
		static const int full[] = { 1, 2, 4, 8, 16, 32 };

		b.nprocs = b.quick ? 2 : 6;
		memcpy(b.procs, full, sizeof full);
	}
	b.uniform_keys = b.quick ? 10000 : 100000;
	b.big_keys = b.quick ? 100000 : 10000000;
	b.big_slots = b.quick ? (UINT64_C(1) << 18) : (UINT64_C(1) << 24);
	b.stop_procs = b.quick ? 2 : 4;
	b.stop_seconds = b.quick ? 0.2 : 1.0;
	/* A smoke test (ctest runs one) must not flip a machine-wide
	 * setting under other tests. */
	b.may_write_thp = !b.quick;
	if (tkshm_policy_parse(SC_POLICY, &b.policy, err, sizeof err) !=
	    TKSHM_OK) {
		fprintf(stderr, "tkshm_bench_procs: %s\n", err);
		return 1;
	}

	cleanup_install();
	b.json = fopen(out, "w");
	if (!b.json) {
		fprintf(stderr, "tkshm_bench_procs: %s: %s\n", out,
			strerror(errno));
		return 1;
	}
	b.ns_per_tick = tsc_calibrate(b.quick ? 30 : 300);
	printf("# tkshm_bench_procs: %.2f s per case, counter %.3f GHz, "
	       "policy %s\n",
	       b.seconds, 1 / b.ns_per_tick, SC_POLICY);
	print_load();
	report_header(stdout);
	t0 = mono_seconds();
	for (size_t i = 0; i < NSCENARIOS && rc == 0; i++)
		if (chosen[i] && scenarios[i].run(&b) != 0)
			rc = 1;
	cleanup_all();
	if (fclose(b.json) != 0) {
		fprintf(stderr, "tkshm_bench_procs: %s: %s\n", out,
			strerror(errno));
		rc = 1;
	}
	printf("# %s in %.1f s; JSON lines in %s\n",
	       rc == 0 ? "done" : "FAILED", mono_seconds() - t0, out);
	return rc;
}
