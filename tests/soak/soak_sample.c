/*
 * soak_sample.c - what the supervisor looks at once a second: tkshm_verify
 * on both tables, the memory and descriptors of every process and the
 * files' sizes (kept as maxima over the first and the last minute), and
 * the table's occupancy; and at the end, whether memory stayed flat.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "soak_run.h"

static void
print_problem(void *ctx, const char *problem)
{
	printf("VIOLATION: verify %s: %s\n", (const char *)ctx, problem);
}

void
soak_verify(struct soak_run *r)
{
	tkshm_table *ts[2] = { r->t, r->wide };
	const char *names[2] = { "gcra", "tokenBucket" };

	for (int i = 0; i < 2; i++) {
		uint64_t problems = 0;
		int rc = tkshm_verify(ts[i], print_problem, (void *)names[i],
				      &problems);

		r->verifies++;
		if (rc != TKSHM_OK || problems != 0) {
			r->problems += problems ? problems : 1;
			r->violations++;
			printf("VIOLATION: verify %s: %s, %llu problems\n",
			       names[i], tkshm_error_name(rc),
			       (unsigned long long)problems);
		}
	}
}

static void
mem_max(struct soak_mem *into, const struct soak_mem *m)
{
	if (m->rss_kib > into->rss_kib)
		into->rss_kib = m->rss_kib;
	if (m->anon_kib > into->anon_kib)
		into->anon_kib = m->anon_kib;
	if (m->fds > into->fds)
		into->fds = m->fds;
}

void
soak_sample_memory(struct soak_run *r, double t)
{
	double win = r->o.seconds / 4 < 60 ? r->o.seconds / 4 : 60;
	struct soak_window *w[2] = { NULL, NULL };
	struct soak_mem m;
	struct stat st;

	/* From the first second on (the workers have attached and warmed
	 * up), and at least once however late a loaded machine runs us. */
	if (t >= 1 && (t < 1 + win || r->first.samples == 0))
		w[0] = &r->first;
	if (t >= r->o.seconds - win)
		w[1] = &r->last;
	for (int i = 0; i < 2; i++) {
		if (!w[i])
			continue;
		w[i]->samples++;
		if (soak_mem_of(getpid(), &m))
			mem_max(&w[i]->sup, &m);
		for (int p = 0; p < r->o.procs; p++)
			if (soak_mem_of(r->sh->cell[p].pid, &m))
				mem_max(p < r->keep ? &w[i]->kept :
						      &w[i]->replaced,
					&m);
	}
	if (stat(r->sh->path, &st) != 0 || st.st_size != r->size ||
	    stat(r->sh->wide_path, &st) != 0 || st.st_size != r->wide_size) {
		r->size_changes++;
		r->violations++;
		printf("VIOLATION: a table file changed size or vanished\n");
	}
}

void
soak_sample_occupancy(struct soak_run *r)
{
	uint32_t e = __atomic_load_n(&r->sh->epoch, __ATOMIC_ACQUIRE);
	tkshm_usage u;
	double occ;

	if (tkshm_usage_get(r->t, tkshm_now_ms() + r->sh->offset_ms[e], &u) !=
	    TKSHM_OK)
		return;
	occ = (double)(u.live + u.placeholders) / (double)r->o.slots;
	if (r->occ_samples == 0 || occ < r->occ_min)
		r->occ_min = occ;
	if (occ > r->occ_max)
		r->occ_max = occ;
	r->occ_sum += occ;
	r->occ_samples++;
}

/* AddressSanitizer keeps freed blocks in a quarantine (256 MiB) instead of
 * reusing them, so under it private memory grows with every fopen of
 * /proc by design: memory is then reported, not judged. */
#if defined(__SANITIZE_ADDRESS__)
#define SOAK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SOAK_ASAN 1
#endif
#endif
#ifndef SOAK_ASAN
#define SOAK_ASAN 0
#endif

/* Memory is flat: private memory of the long-lived processes grew by at
 * most the slack, the supervisor holds no more descriptors. */
void
soak_check_memory(struct soak_run *r)
{
	const struct soak_mem *sa = &r->first.sup, *sb = &r->last.sup;
	const struct soak_mem *ka = &r->first.kept, *kb = &r->last.kept;

	if (SOAK_ASAN) {
		printf("soak: AddressSanitizer build: memory reported, not "
		       "judged (its quarantine grows by design)\n");
		return;
	}
	if (r->first.samples == 0 || r->last.samples == 0) {
		r->violations++;
		printf("VIOLATION: no memory sample in a window\n");
		return;
	}
	if (sb->anon_kib > sa->anon_kib + r->o.anon_slack ||
	    kb->anon_kib > ka->anon_kib + r->o.anon_slack ||
	    sb->fds > sa->fds) {
		r->violations++;
		printf("VIOLATION: memory or descriptors grew (slack %llu "
		       "KiB)\n",
		       (unsigned long long)r->o.anon_slack);
	}
}
