/*
 * json_out.c - JSON output: string escaping, numbers, ThrottleKit decision
 * objects, and a small writer that places commas in nested values.
 *
 * Why not cJSON (libcjson-dev, which the tests use to read this output):
 * measured with Debian 12's cJSON 1.7.15, its printer would change bytes
 * users and tests see, and some values:
 * - numbers are doubles, so a 64-bit counter past 2^53 is not exact:
 *   9007199254740993 prints as 9.00719925474099e+15 (here: "%" PRIu64);
 * - a double is printed with "%1.15g" whenever that reads back within a
 *   relative DBL_EPSILON, which is not the same double: now =
 *   1795948515069.0498 prints as 1795948515069.05 (here: the shortest of
 *   15, 16, 17 digits that strtod() reads back exactly); and when 15 do not
 *   do, it jumps to 17: 1/3 prints as 0.33333333333333331, not
 *   0.3333333333333333;
 * - strings: 0x7f and invalid UTF-8 go out raw (invalid JSON), where this
 *   writes \u007f and \ufffd;
 * - layout: cJSON_Print indents with tabs and writes "key":<tab>value;
 *   the documented output is two spaces, "key": value, and one key a line
 *   in list's array (rows), which neither cJSON printer gives.
 * Keeping the exact numbers and the layout would mean printing every value
 * ourselves anyway, so the writer stays (about 150 lines).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t
ti_utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

void
ti_json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		size_t n;

		switch (*s) {
		case '"':
			fputs("\\\"", f);
			s++;
			continue;
		case '\\':
			fputs("\\\\", f);
			s++;
			continue;
		case '\n':
			fputs("\\n", f);
			s++;
			continue;
		case '\r':
			fputs("\\r", f);
			s++;
			continue;
		case '\t':
			fputs("\\t", f);
			s++;
			continue;
		}
		if (*s < 0x20 || *s == 0x7F) {
			fprintf(f, "\\u%04x", *s);
			s++;
			continue;
		}
		n = ti_utf8_len(s);
		if (n == 0) {
			fputs("\\ufffd", f);
			s++;
			continue;
		}
		fwrite(s, 1, n, f);
		s += n;
	}
	fputc('"', f);
}

void
ti_json_double(FILE *f, double v)
{
	char buf[40];

	if (!isfinite(v)) {
		fputs("null", f);
		return;
	}
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		fprintf(f, "%.0f", v);
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, f);
}

void
ti_json_decision(FILE *f, const tkshm_decision *d)
{
	fprintf(f,
		"{\"allowed\":%s,\"limit\":%" PRId64 ",\"remaining\":%" PRId64
		",\"resetAt\":%" PRId64 ",\"retryAfterMs\":%" PRId64 "}\n",
		d->allowed ? "true" : "false", d->limit, d->remaining,
		d->reset_at, d->retry_after_ms);
}

/* --- the writer ---------------------------------------------------------- */

void
ti_json_init(struct ti_json *j, FILE *f, bool pretty)
{
	memset(j, 0, sizeof *j);
	j->f = f;
	j->pretty = pretty;
	j->first[0] = true;
}

static void
ti_json_indent(struct ti_json *j)
{
	if (!j->pretty)
		return;
	fputc('\n', j->f);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

/* Starts a member or element: the comma, the indent and the key.  The
 * elements of an array are kept on one line ("flat"). */
static void
ti_json_member(struct ti_json *j, const char *key)
{
	bool first = j->first[j->depth];

	if (!first)
		fputc(',', j->f);
	j->first[j->depth] = false;
	if (j->depth > 0 && !j->flat[j->depth])
		ti_json_indent(j);
	else if (j->depth > 0 && j->pretty && !first)
		fputc(' ', j->f);
	if (key) {
		ti_json_str(j->f, key);
		fputs(j->pretty ? ": " : ":", j->f);
	}
}

static void
ti_json_open(struct ti_json *j, const char *key, char c, bool flat)
{
	ti_json_member(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < TI_JSON_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
	j->flat[j->depth] = flat;
}

static void
ti_json_close(struct ti_json *j, char c)
{
	bool empty = j->first[j->depth], flat = j->flat[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (!empty && !flat)
		ti_json_indent(j);
	fputc(c, j->f);
	if (j->depth == 0)
		fputc('\n', j->f);
}

void
ti_json_begin_obj(struct ti_json *j, const char *key)
{
	ti_json_open(j, key, '{', false);
}

void
ti_json_end_obj(struct ti_json *j)
{
	ti_json_close(j, '}');
}

void
ti_json_begin_row(struct ti_json *j, const char *key)
{
	ti_json_open(j, key, '{', true);
}

void
ti_json_begin_arr(struct ti_json *j, const char *key)
{
	ti_json_open(j, key, '[', true);
}

void
ti_json_begin_list(struct ti_json *j, const char *key)
{
	ti_json_open(j, key, '[', false);
}

void
ti_json_end_arr(struct ti_json *j)
{
	ti_json_close(j, ']');
}

void
ti_json_u64(struct ti_json *j, const char *key, uint64_t v)
{
	ti_json_member(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

void
ti_json_num(struct ti_json *j, const char *key, double v)
{
	ti_json_member(j, key);
	ti_json_double(j->f, v);
}

void
ti_json_bool(struct ti_json *j, const char *key, bool v)
{
	ti_json_member(j, key);
	fputs(v ? "true" : "false", j->f);
}

void
ti_json_i64(struct ti_json *j, const char *key, int64_t v)
{
	ti_json_member(j, key);
	fprintf(j->f, "%" PRId64, v);
}

void
ti_json_string(struct ti_json *j, const char *key, const char *v)
{
	ti_json_member(j, key);
	if (v)
		ti_json_str(j->f, v);
	else
		fputs("null", j->f);
}

void
ti_json_null(struct ti_json *j, const char *key)
{
	ti_json_member(j, key);
	fputs("null", j->f);
}
