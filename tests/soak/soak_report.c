/*
 * soak_report.c - the soak's figures: the workers' counters summed, a
 * progress line every --progress seconds and the summary at the end.
 */
#include <stdio.h>
#include <unistd.h>

#include "mp_util.h"
#include "soak_run.h"

struct soak_totals
soak_sum_cells(const struct soak_run *r)
{
	struct soak_totals s = { 0 };

	for (int i = 0; i < r->o.procs; i++) {
		const struct soak_cell *c = &r->sh->cell[i];
		double lat = mp_bits_double(
			__atomic_load_n(&c->max_lat_bits, __ATOMIC_RELAXED));

		s.checks += __atomic_load_n(&c->checks, __ATOMIC_RELAXED);
		s.admitted += __atomic_load_n(&c->admitted, __ATOMIC_RELAXED);
		s.denied += __atomic_load_n(&c->denied, __ATOMIC_RELAXED);
		s.busy += __atomic_load_n(&c->busy, __ATOMIC_RELAXED);
		s.straddles += __atomic_load_n(&c->straddles, __ATOMIC_RELAXED);
		s.wide_checks += c->wide_checks;
		s.wide_admitted += c->wide_admitted;
		s.wide_full += c->wide_full;
		s.wide_busy += c->wide_busy;
		s.spawns += c->spawns;
		if (lat > s.max_lat)
			s.max_lat = lat;
	}
	return s;
}

void
soak_progress(struct soak_run *r, double t)
{
	struct soak_totals s = soak_sum_cells(r);
	struct soak_mem m;

	soak_mem_of(getpid(), &m);
	printf("soak: t=%.0f s decisions %llu (%.0f/s) kills %llu jumps %llu "
	       "verify %llu problems %llu violations %llu (+ %llu provisional "
	       "bound) supervisor rss "
	       "%llu KiB anon %llu KiB\n",
	       t, (unsigned long long)s.checks, (double)s.checks / t,
	       (unsigned long long)r->kills, (unsigned long long)r->jumps,
	       (unsigned long long)r->verifies, (unsigned long long)r->problems,
	       (unsigned long long)r->violations,
	       (unsigned long long)r->bound_live, (unsigned long long)m.rss_kib,
	       (unsigned long long)m.anon_kib);
	fflush(stdout);
}

static void
print_mem(const char *who, const struct soak_mem *a, const struct soak_mem *b)
{
	printf("  %-26s rss %6llu -> %6llu KiB, anon %6llu -> %6llu KiB, "
	       "fds %llu -> %llu\n",
	       who, (unsigned long long)a->rss_kib,
	       (unsigned long long)b->rss_kib, (unsigned long long)a->anon_kib,
	       (unsigned long long)b->anon_kib, (unsigned long long)a->fds,
	       (unsigned long long)b->fds);
}

void
soak_summary(struct soak_run *r, double dur, const struct soak_bound_stats *b,
	     uint64_t bound_violations)
{
	struct soak_totals s = soak_sum_cells(r);
	tkshm_stats st, wst;
	double win = r->o.seconds / 4 < 60 ? r->o.seconds / 4 : 60;

	tkshm_stats_get(r->t, &st);
	tkshm_stats_get(r->wide, &wst);
	printf("\n===== tkshm soak summary =====\n");
	printf("duration %.1f s, %d worker processes (%d never killed), "
	       "seed %#llx\n",
	       dur, r->o.procs, r->keep, (unsigned long long)r->o.seed);
	printf("tables: gcra limit=%g periodMs=%g burst=%g, %llu slots, "
	       "%llu cold keys + %d hot, evict (%lld bytes); %s, %llu slots, "
	       "refuse (%lld bytes)\n",
	       SOAK_LIMIT, SOAK_PERIOD_MS, SOAK_BURST,
	       (unsigned long long)r->o.slots,
	       (unsigned long long)r->sh->cold_keys, SOAK_HOT_KEYS,
	       (long long)r->size, SOAK_WIDE_POLICY,
	       (unsigned long long)r->o.slots / 2, (long long)r->wide_size);
	printf("decisions: %llu (%.0f/s): admitted %llu, denied %llu, "
	       "busy %llu\n",
	       (unsigned long long)s.checks, (double)s.checks / dur,
	       (unsigned long long)s.admitted, (unsigned long long)s.denied,
	       (unsigned long long)s.busy);
	printf("wide decisions: %llu: admitted %llu, full (refused) %llu, "
	       "busy %llu, claims stolen %llu\n",
	       (unsigned long long)s.wide_checks,
	       (unsigned long long)s.wide_admitted,
	       (unsigned long long)s.wide_full, (unsigned long long)s.wide_busy,
	       (unsigned long long)wst.claims_stolen);
	printf("table: occupancy (live/slots) min %.2f mean %.2f max %.2f; "
	       "inserts %llu, reclaims %llu, evictions %llu (in debt %llu), "
	       "debt restores %llu, duplicates killed %llu\n",
	       r->occ_min, r->occ_samples ? r->occ_sum / r->occ_samples : 0,
	       r->occ_max, (unsigned long long)st.inserts,
	       (unsigned long long)st.reclaims,
	       (unsigned long long)st.evictions,
	       (unsigned long long)st.evictions_in_debt,
	       (unsigned long long)st.debt_restores,
	       (unsigned long long)st.duplicates_killed);
	printf("kills: %llu SIGKILLs, %llu processes forked in all\n",
	       (unsigned long long)r->kills, (unsigned long long)s.spawns);
	printf("clock: %llu jumps (%llu forward +1 h, %llu backward 0.5-5 s), "
	       "%llu calls straddled a jump, longest call %.3f ms\n",
	       (unsigned long long)r->jumps, (unsigned long long)r->forward,
	       (unsigned long long)r->backward, (unsigned long long)s.straddles,
	       s.max_lat);
	printf("verify: %llu runs, %llu problems\n",
	       (unsigned long long)r->verifies,
	       (unsigned long long)r->problems);
	printf("bound: %llu hot admissions in %llu (key, epoch) pairs; %llu "
	       "pairs exactly at the exact GCRA bound, max fill %.3f; %llu "
	       "restarts (+ %llu across a jump), %llu admissions above exact "
	       "within their allowance; violations %llu\n",
	       (unsigned long long)b->admissions, (unsigned long long)b->cells,
	       (unsigned long long)b->at_exact, b->max_fill,
	       (unsigned long long)b->restarts, (unsigned long long)b->foreign,
	       (unsigned long long)b->over_exact,
	       (unsigned long long)bound_violations);
	printf("memory, max over the first -> last %.0f s (%llu -> %llu "
	       "samples):\n",
	       win, (unsigned long long)r->first.samples,
	       (unsigned long long)r->last.samples);
	print_mem("supervisor", &r->first.sup, &r->last.sup);
	print_mem("never-killed workers", &r->first.kept, &r->last.kept);
	print_mem("replaced workers", &r->first.replaced, &r->last.replaced);
	printf("table files: %lld and %lld bytes, %llu size changes\n",
	       (long long)r->size, (long long)r->wide_size,
	       (unsigned long long)r->size_changes);
	printf("result: %s (%llu violations)\n",
	       r->violations ? "FAIL" : "PASS",
	       (unsigned long long)r->violations);
}
