/*
 * test_support.h - small helpers shared by the test programs.
 * Every helper fails the running cmocka test (fail_msg) instead of returning
 * an error, so test bodies stay straight-line.
 */
#ifndef TKSHM_TEST_SUPPORT_H
#define TKSHM_TEST_SUPPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <cmocka.h>
#include <cjson/cJSON.h>

#include "tkshm.h"

/* Fails the test unless `expr` returns the tkshm code `want`, naming both. */
#define assert_rc(expr, want)                                 \
	do {                                                  \
		int rc_ = (expr);                             \
		if (rc_ != (want))                            \
			fail_msg("%s = %s, wanted %s", #expr, \
				 tkshm_error_name(rc_),       \
				 tkshm_error_name(want));     \
	} while (0)

/* Fails the test unless the two decisions agree on every field but flags;
 * `what` names the step in the message. */
void tkt_assert_decision(const char *what, const tkshm_decision *got,
			 const tkshm_decision *want);

/* A fresh private directory for table files; removed by tkt_cleanup(). */
const char *tkt_tmpdir(void);
/* tkt_tmpdir() + "/" + name, in a static rotating buffer. */
const char *tkt_path(const char *name);

/* Copies file `from` to `to` (created 0600, or truncated); fails the test
 * on any error. */
void tkt_copy_file(const char *from, const char *to);
/* Removes the directory made by tkt_tmpdir() and everything in it. */
void tkt_cleanup(void);
/* tkt_cleanup() as a cmocka group teardown. */
int tkt_teardown(void **state);

/* Parses `spec` or fails the test. */
tkshm_policy tkt_policy(const char *spec);
/* An anonymous table (shared with children forked later). */
tkshm_table *tkt_anon(const char *spec, uint64_t slots);
/* Creates or attaches a table file. */
tkshm_table *tkt_file(const char *path, const char *spec, uint64_t slots);

/* The stats of the table at path, read through a read-only attach (the
 * test fails if it does not open). */
tkshm_stats tkt_stats_of(const char *path);

/* The whole content of a file, NUL-terminated (its length in *len unless
 * len is NULL); fails the test on error.  Free with free(). */
char *tkt_read_file(const char *path, size_t *len);
/* Reads and parses a JSON file; fails the test on error.  Free with
 * cJSON_Delete. */
cJSON *tkt_json_file(const char *path);
/* The golden vectors (tests/data). */
cJSON *tkt_golden(void);
/* The policy string "kind:name=value,..." of a golden suite's kind and
 * options object (fails the test if it does not fit `len`). */
void tkt_spec_of(const char *kind, const cJSON *opts, char *buf, size_t len);

/* Memory shared with children forked after the call (MAP_SHARED|ANON). */
void *tkt_shared(size_t bytes);
void tkt_shared_free(void *p, size_t bytes);

/* Waits for pid; fails the test unless it exited with status 0. */
void tkt_wait_ok(int pid);
/* Waits up to `secs` for pid (a child, or an orphan a subreaper reaps) to
 * end: its wait status, or -1 after killing it (SIGKILL) when it did not
 * end in time.  Fails the test if waitpid fails. */
int tkt_wait_bounded(pid_t pid, double secs);

/* Monotonic seconds, for bounding loops (never for asserting speed). */
double tkt_seconds(void);

/* splitmix64: the next pseudo-random number of the sequence in *state. */
uint64_t tkt_splitmix(uint64_t *state);

/* Sets (setlocale LC_ALL) a locale whose decimal point is a comma: an
 * installed one, else de_DE.UTF-8 built with localedef into tkt_tmpdir()
 * (LOCPATH).  False when neither is possible. */
bool tkt_comma_locale(void);

/* --- child processes with pipes (appended for tests/tool) ---------------- */

/* A program run with pipes on its stdin, stdout and stderr. */
struct tkt_proc {
	int pid;
	int fd_in, fd_out, fd_err; /* the parent's ends; -1 when closed */
	const char *input;	   /* fed to stdin, then stdin is closed */
	size_t input_len, input_off;
	char *out, *err; /* captured, NUL-terminated */
	size_t out_len, out_cap, err_len, err_cap;
	int status; /* exit code, or 128 + signal number */
};

/* Starts argv[0] (a path) with `input` (may be NULL: empty) on its stdin.
 * SIGPIPE is ignored in the test process from then on. */
void tkt_proc_start(struct tkt_proc *p, const char *const argv[],
		    const char *input);
/* Feeds and drains all `n` processes at once until every one has exited
 * (fails the test after 60 s, killing them).  Fills out, err and status. */
void tkt_proc_finish(struct tkt_proc *ps, size_t n);
/* Frees out and err. */
void tkt_proc_free(struct tkt_proc *p);

/* --- checking what a program printed ------------------------------------- */

/* Fails unless p exited with `want`, showing its stdout and stderr. */
void tkt_expect_status(const struct tkt_proc *p, int want, const char *what);
/* Fails unless `needle` occurs in `hay`. */
void tkt_expect_contains(const char *hay, const char *needle, const char *what);
/* Parses `text` as JSON or fails; the caller cJSON_Deletes it. */
cJSON *tkt_parse_json(const char *text, const char *what);
/* obj's member `key` (case-sensitive), failing when it is missing or not
 * of the type asked for. */
const cJSON *tkt_json_item(const cJSON *obj, const char *key);
double tkt_num_at(const cJSON *obj, const char *key);
const char *tkt_str_at(const cJSON *obj, const char *key);
bool tkt_bool_at(const cJSON *obj, const char *key);
/* Fails unless obj's number `key` is exactly `want`. */
void tkt_expect_num(const cJSON *obj, const char *key, double want,
		    const char *what);
/* tkt_proc_start + tkt_proc_finish for one process; returns its status. */
int tkt_run(struct tkt_proc *p, const char *const argv[], const char *input);

/* Forks a child that acquires `n` permits of `key` through `t` (inherited)
 * at now_ms (< 0: the system clock), reports through a pipe and holds them
 * until it is killed (or its parent dies).  Fails the test if it cannot. */
pid_t tkt_permit_holder(tkshm_table *t, const char *key, int n, double now_ms);

#endif
