/*
 * test_demo.c - runs the built tkshm-demo (TKSHM_DEMO_BIN): it must exit 0,
 * list every client in its final summary and end with "demo: ok"; its
 * table files are removed unless --keep, and a kept table's counters
 * (read with tkshm-inspect stats, TKSHM_INSPECT_BIN) match the summary.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_support.h"

#ifndef TKSHM_DEMO_BIN
#error "TKSHM_DEMO_BIN must name the tkshm-demo binary"
#endif

#define NCLIENTS 6

static void
expect_ok(const struct tkt_proc *p, const char *what)
{
	static const char tail[] = "demo: ok\n";
	size_t n = strlen(p->out);

	if (p->status != 0)
		fail_msg("%s: exit status %d\nstdout:\n%s\nstderr:\n%s", what,
			 p->status, p->out, p->err);
	if (n < sizeof tail - 1 ||
	    strcmp(p->out + n - (sizeof tail - 1), tail) != 0)
		fail_msg("%s: output does not end with 'demo: ok':\n%s", what,
			 p->out);
}

/* The final summary line of client:c; fills its api admitted count and
 * checks every route's counts against that route's bound, independently of
 * the demo's own verdict.  The attacker (client:4) floods every route, so
 * it must have been denied on each. */
static void
client_line(const char *out, int c, unsigned long long *admitted)
{
	char prefix[32];
	const char *l;
	unsigned long long v[9];

	snprintf(prefix, sizeof prefix, "\nclient:%d admitted=", c);
	l = strstr(out, prefix);
	if (!l)
		fail_msg("no summary line for client:%d in:\n%s", c, out);
	if (sscanf(l + 1 + strlen("client:0"),
		   " admitted=%llu denied=%llu max=%llu login_admitted=%llu "
		   "login_denied=%llu login_max=%llu search_admitted=%llu "
		   "search_denied=%llu search_max=%llu",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
		   &v[8]) != 9)
		fail_msg("bad summary line for client:%d", c);
	for (int r = 0; r < 3; r++) {
		if (v[3 * r] > v[3 * r + 2])
			fail_msg("client:%d route %d: %llu admitted > max %llu",
				 c, r, v[3 * r], v[3 * r + 2]);
		if (c == 4 && v[3 * r + 1] == 0)
			fail_msg("the attacker was never denied on route %d",
				 r);
	}
	*admitted = v[0];
}

/* The word after `label` on its line, into buf. */
static const char *
word_after(const char *out, const char *label, char *buf, size_t len)
{
	const char *l = strstr(out, label);
	size_t n;

	if (!l)
		fail_msg("\"%s\" not found in:\n%s", label, out);
	l += strlen(label);
	n = strcspn(l, " ,\n");
	if (n >= len)
		fail_msg("word after %s too long", label);
	memcpy(buf, l, n);
	buf[n] = '\0';
	return buf;
}

static void
test_demo_default(void **state)
{
	struct tkt_proc p;
	unsigned long long admitted;
	char path[4096];
	struct stat sb;

	(void)state;
	tkt_run(&p,
		(const char *const[]){ TKSHM_DEMO_BIN, "--seconds", "2", NULL },
		NULL);
	expect_ok(&p, "tkshm-demo --seconds 2");
	for (int c = 0; c < NCLIENTS; c++)
		client_line(p.out, c, &admitted);
	word_after(p.out, "  tkshm-inspect top ", path, sizeof path);
	assert_true(strncmp(path, TKSHM_DEFAULT_DIR "/",
			    strlen(TKSHM_DEFAULT_DIR "/")) == 0);
	/* Removed at exit. */
	assert_int_equal(stat(path, &sb), -1);
	tkt_proc_free(&p);
}

static void
test_demo_anonymous(void **state)
{
	struct tkt_proc p;
	unsigned long long admitted;

	(void)state;
	tkt_run(&p,
		(const char *const[]){ TKSHM_DEMO_BIN, "--anonymous",
				       "--seconds", "1", "--workers", "3",
				       NULL },
		NULL);
	expect_ok(&p, "tkshm-demo --anonymous");
	for (int c = 0; c < NCLIENTS; c++)
		client_line(p.out, c, &admitted);
	tkt_proc_free(&p);
}

#ifdef TKSHM_INSPECT_BIN
static void
test_demo_keep_matches_stats(void **state)
{
	struct tkt_proc p, s;
	unsigned long long admitted, total = 0;
	char api[4096], login[4096], search[4096];
	const cJSON *counters;
	cJSON *j;

	(void)state;
	tkt_run(&p,
		(const char *const[]){ TKSHM_DEMO_BIN, "--keep", "--dir",
				       tkt_tmpdir(), "--seconds", "1",
				       "--workers", "2", NULL },
		NULL);
	expect_ok(&p, "tkshm-demo --keep");
	for (int c = 0; c < NCLIENTS; c++) {
		client_line(p.out, c, &admitted);
		total += admitted;
	}
	word_after(p.out, "\nkept: ", api, sizeof api);
	word_after(strstr(p.out, "\nkept: ") + 7 + strlen(api), " ", login,
		   sizeof login);
	word_after(strstr(strstr(p.out, "\nkept: "), login) + strlen(login),
		   " ", search, sizeof search);

	tkt_run(&s,
		(const char *const[]){ TKSHM_INSPECT_BIN, "stats", "--json",
				       api, NULL },
		NULL);
	if (s.status != 0)
		fail_msg("stats %s: %s", api, s.err);
	j = cJSON_Parse(s.out);
	assert_non_null(j);
	counters = cJSON_GetObjectItemCaseSensitive(j, "counters");
	assert_non_null(counters);
	assert_int_equal(
		(unsigned long long)cJSON_GetObjectItem(counters, "allowed")
			->valuedouble,
		total);
	assert_string_equal(cJSON_GetObjectItem(j, "policy")->valuestring,
			    "gcra:limit=20,periodMs=1000,burst=10");
	cJSON_Delete(j);
	tkt_proc_free(&s);

	tkt_run(&s,
		(const char *const[]){ TKSHM_INSPECT_BIN, "verify", login,
				       NULL },
		NULL);
	if (s.status != 0)
		fail_msg("verify %s: %s%s", login, s.out, s.err);
	tkt_proc_free(&s);

	/* The token-bucket table is a wide one: verify reads its records. */
	tkt_run(&s,
		(const char *const[]){ TKSHM_INSPECT_BIN, "verify", search,
				       NULL },
		NULL);
	if (s.status != 0)
		fail_msg("verify %s: %s%s", search, s.out, s.err);
	tkt_proc_free(&s);
	tkt_proc_free(&p);
}

/* docs/operations.md's promise: while the demo runs, `tkshm-inspect list` shows its
 * clients.  The table path is known from the demo's pid. */
static void
test_demo_listed_while_running(void **state)
{
	struct tkt_proc demo, l;
	char api[4096];
	const cJSON *keys, *k;
	cJSON *j;
	struct stat sb;
	bool seen[NCLIENTS] = { false };
	unsigned long long admitted;

	(void)state;
	tkt_proc_start(&demo,
		       (const char *const[]){ TKSHM_DEMO_BIN, "--dir",
					      tkt_tmpdir(), "--seconds", "3",
					      NULL },
		       NULL);
	snprintf(api, sizeof api, "%s/tkshm-demo.%d.api", tkt_tmpdir(),
		 demo.pid);
	for (int i = 0; i < 200 && stat(api, &sb) != 0; i++)
		usleep(10000);
	assert_int_equal(stat(api, &sb), 0);
	usleep(1000000); /* a second of traffic */
	tkt_run(&l,
		(const char *const[]){ TKSHM_INSPECT_BIN, "list", api, "--idle",
				       "--json", NULL },
		NULL);
	if (l.status != 0)
		fail_msg("list %s: %s", api, l.err);
	j = cJSON_Parse(l.out);
	assert_non_null(j);
	keys = cJSON_GetObjectItem(j, "keys");
	assert_true(cJSON_IsArray(keys));
	cJSON_ArrayForEach(k, keys)
	{
		const cJSON *name = cJSON_GetObjectItem(k, "key");
		int c;

		assert_true(cJSON_IsString(name));
		assert_int_equal(sscanf(name->valuestring, "client:%d", &c), 1);
		assert_in_range(c, 0, NCLIENTS - 1);
		seen[c] = true;
		assert_int_equal(
			(int)cJSON_GetObjectItem(k, "limit")->valuedouble, 10);
	}
	/* Every client sends api traffic in its first second. */
	for (int c = 0; c < NCLIENTS; c++)
		if (!seen[c])
			fail_msg("client:%d not listed in:\n%s", c, l.out);
	cJSON_Delete(j);
	tkt_proc_free(&l);

	tkt_proc_finish(&demo, 1);
	expect_ok(&demo, "tkshm-demo while listed");
	for (int c = 0; c < NCLIENTS; c++)
		client_line(demo.out, c, &admitted);
	tkt_proc_free(&demo);
}
#endif

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demo_default),
		cmocka_unit_test(test_demo_anonymous),
#ifdef TKSHM_INSPECT_BIN
		cmocka_unit_test(test_demo_keep_matches_stats),
		cmocka_unit_test(test_demo_listed_while_running),
#endif
	};
	return cmocka_run_group_tests_name("tool_demo", tests, NULL,
					   tkt_teardown);
}
