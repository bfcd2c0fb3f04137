/*
 * test_support.c - see test_support.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_support.h"

static char tkt_dir[256];

const char *
tkt_tmpdir(void)
{
	if (tkt_dir[0] == '\0') {
		snprintf(tkt_dir, sizeof tkt_dir, "/tmp/tkshm-test-XXXXXX");
		if (!mkdtemp(tkt_dir))
			fail_msg("mkdtemp: %s", strerror(errno));
	}
	return tkt_dir;
}

const char *
tkt_path(const char *name)
{
	static char bufs[8][512];
	static unsigned next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof bufs[0], "%s/%s", tkt_tmpdir(), name);
	return b;
}

static int
tkt_rm(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void
tkt_cleanup(void)
{
	if (tkt_dir[0] != '\0')
		nftw(tkt_dir, tkt_rm, 16, FTW_DEPTH | FTW_PHYS);
	tkt_dir[0] = '\0';
}

tkshm_policy
tkt_policy(const char *spec)
{
	tkshm_policy p;
	char err[256] = "";
	int rc = tkshm_policy_parse(spec, &p, err, sizeof err);

	if (rc != TKSHM_OK)
		fail_msg("policy \"%s\": %s (%s)", spec, tkshm_strerror(rc),
			 err);
	return p;
}

tkshm_table *
tkt_anon(const char *spec, uint64_t slots)
{
	return tkt_file(NULL, spec, slots);
}

tkshm_table *
tkt_file(const char *path, const char *spec, uint64_t slots)
{
	tkshm_policy p = tkt_policy(spec);
	tkshm_options o = TKSHM_OPTIONS_INIT;
	char err[256] = "";
	tkshm_table *t = NULL;
	int rc;

	o.policy = &p;
	o.slots = slots;
	o.errbuf = err;
	o.errbuf_len = sizeof err;
	rc = tkshm_open(path, &o, &t);
	if (rc != TKSHM_OK)
		fail_msg("tkshm_open(%s): %s (%s)", path ? path : "anonymous",
			 tkshm_strerror(rc), err);
	return t;
}

cJSON *
tkt_json_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;
	cJSON *j;

	if (!f)
		fail_msg("open %s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		fail_msg("read %s", path);
	buf[n] = '\0';
	fclose(f);
	j = cJSON_Parse(buf);
	free(buf);
	if (!j)
		fail_msg("%s is not valid JSON", path);
	return j;
}

cJSON *
tkt_golden(void)
{
	return tkt_json_file(TKSHM_TEST_DATA "/throttlekit-golden-vectors.json");
}

void *
tkt_shared(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		fail_msg("mmap: %s", strerror(errno));
	return p;
}

void
tkt_shared_free(void *p, size_t bytes)
{
	munmap(p, bytes);
}

void
tkt_wait_ok(int pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		fail_msg("waitpid(%d): %s", pid, strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("child %d ended with status %#x", pid, status);
}

double
tkt_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
