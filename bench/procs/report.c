/*
 * report.c - the table line and the JSON line of a case (report.h).
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "report.h"

void
row_init(struct row *w, const char *scenario, const char *impl, int procs,
	 size_t keys)
{
	memset(w, 0, sizeof *w);
	w->scenario = scenario;
	w->impl = impl;
	w->procs = procs;
	w->keys = keys;
	w->fill_seconds = -1;
	w->shmem_huge_kb = -1;
}

/* JSON has no NaN or infinity: a number that is not finite is written 0
 * (no field here can legitimately be one). */
static void
json_num(FILE *f, const char *name, double v, int decimals)
{
	fprintf(f, ",\"%s\":%.*f", name, decimals, isfinite(v) ? v : 0.0);
}

/* Strings here are our own words and error sentences: escape what JSON
 * requires and drop other control bytes. */
static void
json_str(FILE *f, const char *name, const char *s)
{
	fprintf(f, ",\"%s\":\"", name);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch >= 0x20)
			fputc(ch, f);
	}
	fputc('"', f);
}

static void
report_json(FILE *f, const struct row *w)
{
	const struct presult *r = w->r;

	fprintf(f, "{\"suite\":\"procs\"");
	json_str(f, "scenario", w->scenario);
	json_str(f, "impl", w->impl);
	fprintf(f, ",\"procs\":%d,\"keys\":%zu,\"hugepages\":%s", w->procs,
		w->keys, w->hugepages ? "true" : "false");
	if (w->variant)
		json_str(f, "variant", w->variant);
	if (w->batch > 1)
		fprintf(f, ",\"batch\":%u", w->batch);
	if (w->skipped || !r) {
		json_str(f, "skipped", w->skipped ? w->skipped : "no result");
		fprintf(f, "}\n");
		return;
	}
	json_num(f, "seconds", r->seconds, 3);
	fprintf(f, ",\"decisions\":%" PRIu64, r->decisions);
	json_num(f, "decisions_per_sec", r->per_sec, 1);
	fprintf(f, ",\"allowed\":%" PRIu64 ",\"samples\":%" PRIu64, r->allowed,
		r->samples);
	json_num(f, "p50_ns", r->p50_ns, 1);
	json_num(f, "p99_ns", r->p99_ns, 1);
	json_num(f, "p999_ns", r->p999_ns, 1);
	json_num(f, "p9999_ns", r->p9999_ns, 1);
	json_num(f, "max_ns", r->max_ns, 1);
	json_num(f, "cpu_cores", r->cpu_cores, 2);
	if (w->variant) {
		json_num(f, "per_sec_before", r->per_sec_before, 1);
		json_num(f, "per_sec_during", r->per_sec_during, 1);
		json_num(f, "per_sec_after", r->per_sec_after, 1);
		json_num(f, "stopped_ms", r->stopped_ms, 1);
	}
	if (w->fill_seconds >= 0)
		json_num(f, "fill_seconds", w->fill_seconds, 3);
	if (w->shmem_huge_kb >= 0) {
		fprintf(f, ",\"shmem_huge_kb\":%ld,\"hugepages_used\":%s",
			w->shmem_huge_kb,
			w->shmem_huge_kb > 0 ? "true" : "false");
	}
	if (w->thp)
		json_str(f, "thp_shmem_enabled", w->thp);
	if (strcmp(w->scenario, "redis") == 0)
		json_num(f, "per_client_per_sec", r->per_sec / w->procs, 1);
	fprintf(f, "}\n");
	fflush(f);
}

void
report_header(FILE *f)
{
	fprintf(f, "%-11s %-12s %5s %8s %2s %12s %8s %6s %7s %8s %9s %9s  %s\n",
		"scenario", "impl", "procs", "keys", "hp", "decisions/s",
		"allowed%", "cores", "p50 ns", "p99 ns", "p99.9 ns", "max ns",
		"notes");
}

/* 1234567 -> "1.23M": the table stays narrow; the JSON keeps the digits. */
static const char *
report_si(char *buf, size_t len, double v)
{
	if (v >= 1e9)
		snprintf(buf, len, "%.2fG", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, len, "%.2fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else
		snprintf(buf, len, "%.0f", v);
	return buf;
}

static void
report_human(FILE *f, const struct row *w)
{
	const struct presult *r = w->r;
	char a[16], b[16], c[16], d[16], e[16], notes[256] = "";
	size_t n = 0;

	if (w->skipped || !r) {
		fprintf(f, "%-11s %-12s %5d %8zu %2s  skipped: %s\n",
			w->scenario, w->impl, w->procs, w->keys,
			w->hugepages ? "y" : "n",
			w->skipped ? w->skipped : "no result");
		return;
	}
	if (w->variant)
		n += (size_t)snprintf(notes + n, sizeof notes - n,
				      "%s: others %s/s before, %s/s during "
				      "(%.0f ms stop), %s/s after ",
				      w->variant,
				      report_si(a, sizeof a, r->per_sec_before),
				      report_si(b, sizeof b, r->per_sec_during),
				      r->stopped_ms,
				      report_si(c, sizeof c, r->per_sec_after));
	if (w->batch > 1 && n < sizeof notes)
		n += (size_t)snprintf(notes + n, sizeof notes - n,
				      "tkshm_check_many_at of %u ", w->batch);
	if (w->fill_seconds >= 0 && n < sizeof notes)
		n += (size_t)snprintf(notes + n, sizeof notes - n,
				      "fill %.2f s ", w->fill_seconds);
	if (w->shmem_huge_kb >= 0 && n < sizeof notes)
		n += (size_t)snprintf(notes + n, sizeof notes - n,
				      "ShmemHugePages +%ld kB (thp %s) ",
				      w->shmem_huge_kb, w->thp ? w->thp : "?");
	if (strcmp(w->scenario, "redis") == 0 && n < sizeof notes)
		snprintf(notes + n, sizeof notes - n, "%s/s per client",
			 report_si(a, sizeof a, r->per_sec / w->procs));
	fprintf(f,
		"%-11s %-12s %5d %8zu %2s %12s %7.2f%% %6.2f %7.0f %8.0f %9.0f "
		"%9s  %s\n",
		w->scenario, w->impl, w->procs, w->keys,
		w->hugepages ? "y" : "n", report_si(d, sizeof d, r->per_sec),
		r->decisions ?
			100.0 * (double)r->allowed / (double)r->decisions :
			0.0,
		r->cpu_cores, r->p50_ns, r->p99_ns, r->p999_ns,
		report_si(e, sizeof e, r->max_ns), notes);
	fflush(f);
}

void
report_row(FILE *human, FILE *json, const struct row *w)
{
	if (human)
		report_human(human, w);
	if (json)
		report_json(json, w);
}
