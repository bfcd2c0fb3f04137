/*
 * test_redis_conn.c - the connection to Redis (src/redis/conn.c) against a
 * private redis-server per test (support/redis_server.h).
 *
 * The contract under test is conn.h's C1-C5.  Where a test must show that
 * a command was NOT sent again (C3), the command has an effect that
 * counts: an EVAL that INCRs a key, or fixedWindow checks whose count the
 * key's hash holds; the count after the fault tells how many times Redis
 * ran it.  Where it must show WHICH commands of a pipeline were resent,
 * INFO commandstats tells how many EVALSHAs Redis ran and how many of
 * them failed (NOSCRIPT counts as a failed call).
 *
 * Times: the command timeout is 100 ms unless a test says otherwise; the
 * timing assertions have a lower bound (the timeout was waited for) and a
 * loose upper one (it was not waited for twice, or for the kernel's 1 s
 * SYN retransmission).
 *
 * Children never call cmocka; they report through shared memory and their
 * exit status.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_support.h"
#include "redis_server.h"
#include "redis/conn.h"

#define BIG_LIMIT "1000000000"
#define INCR_LUA  "return redis.call('INCR', KEYS[1])"

struct fixture {
	struct tkt_redis r;
	struct tk_redis_conf conf;
	struct tk_conn *c;
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);

	assert_non_null(f);
	tkt_redis_start(&f->r);
	tkt_redis_conf(&f->r, &f->conf);
	assert_rc(tk_conn_new(&f->conf, &f->c), TKSHM_OK);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	tk_conn_free(f->c);
	tkt_redis_stop(&f->r);
	free(f);
	return 0;
}

/* ------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------- */

static void
sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static struct tk_conn_stats
stats(const struct tk_conn *c)
{
	struct tk_conn_stats s;

	tk_conn_stats_get(c, &s);
	return s;
}

static void
expect_stats(const struct tk_conn *c, uint64_t calls, uint64_t errors,
	     uint64_t reloads, uint64_t connects)
{
	struct tk_conn_stats s = stats(c);

	if (s.calls != calls || s.errors != errors ||
	    s.noscript_reloads != reloads || s.connects != connects)
		fail_msg("stats: calls %llu errors %llu reloads %llu "
			 "connects %llu; wanted %llu %llu %llu %llu",
			 (unsigned long long)s.calls,
			 (unsigned long long)s.errors,
			 (unsigned long long)s.noscript_reloads,
			 (unsigned long long)s.connects,
			 (unsigned long long)calls, (unsigned long long)errors,
			 (unsigned long long)reloads,
			 (unsigned long long)connects);
}

/* The arguments of one fixedWindow check of `key` (cost 1, now 1000, a
 * window longer than any test): its KEYS and ARGV. */
struct fw {
	const char *key[1];
	const char *argv[4];
	struct tk_args keys, args;
};

static void
fw_init(struct fw *w, const char *key, const char *limit)
{
	w->key[0] = key;
	w->argv[0] = "1000";
	w->argv[1] = limit;
	w->argv[2] = "1000000000000";
	w->argv[3] = "1";
	w->keys = (struct tk_args){ 1, w->key, NULL };
	w->args = (struct tk_args){ 4, w->argv, NULL };
}

/* A fixedWindow reply's `allowed` (its first element). */
static long long
allowed_of(const redisReply *r)
{
	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_true(r->elements >= 5);
	assert_int_equal(r->element[0]->type, REDIS_REPLY_INTEGER);
	return r->element[0]->integer;
}

static long long
remaining_of(const redisReply *r)
{
	assert_int_equal(r->element[2]->type, REDIS_REPLY_INTEGER);
	return r->element[2]->integer;
}

/* One fixedWindow check; returns the reply's allowed, failing unless the
 * call returns TKSHM_OK.  *remaining gets the reply's remaining. */
static long long
fw_check(struct tk_conn *c, const char *key, const char *limit,
	 long long *remaining)
{
	struct fw w;
	redisReply *r;
	char err[256] = "";
	long long allowed;
	int rc;

	fw_init(&w, key, limit);
	rc = tk_conn_eval(c, TK_SCRIPT_FIXED_WINDOW, &w.keys, &w.args, &r, err,
			  sizeof err);
	if (rc != TKSHM_OK)
		fail_msg("fixedWindow check: %s (%s)", tkshm_error_name(rc),
			 err);
	allowed = allowed_of(r);
	if (remaining != NULL)
		*remaining = remaining_of(r);
	freeReplyObject(r);
	return allowed;
}

/* The count a key's fixedWindow hash holds (0 when absent). */
static long long
fw_count(struct tkt_redis *r, const char *key)
{
	return tkt_redis_int(r, "HGET", key, "c", NULL);
}

/* EVAL of INCR_LUA on `key` through tk_conn_command: the rc, and the
 * counter's new value in *value on TKSHM_OK. */
static int
incr(struct tk_conn *c, const char *key, long long *value, char *err,
     size_t errlen)
{
	const char *v[4] = { "EVAL", INCR_LUA, "1", key };
	const struct tk_args a = { 4, v, NULL };
	redisReply *r;
	int rc = tk_conn_command(c, &a, &r, err, errlen);

	if (rc == TKSHM_OK) {
		assert_int_equal(r->type, REDIS_REPLY_INTEGER);
		*value = r->integer;
		freeReplyObject(r);
	}
	return rc;
}

/* CLIENT ID of the connection, through tk_conn_command. */
static int
client_id(struct tk_conn *c, long long *id)
{
	const char *v[2] = { "CLIENT", "ID" };
	const struct tk_args a = { 2, v, NULL };
	redisReply *r;
	int rc = tk_conn_command(c, &a, &r, NULL, 0);

	if (rc == TKSHM_OK) {
		*id = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
		freeReplyObject(r);
	}
	return rc;
}

/* A field of INFO commandstats for `cmd` ("calls", "failed_calls"); 0
 * when Redis has not run the command yet. */
static long long
cmdstat(struct tkt_redis *r, const char *cmd, const char *field)
{
	redisReply *info = tkt_redis_cmd(r, "INFO", "commandstats", NULL);
	char head[64], key[64];
	const char *line, *at;
	long long v = 0;

	assert_int_equal(info->type, REDIS_REPLY_STRING);
	snprintf(head, sizeof head, "cmdstat_%s:", cmd);
	snprintf(key, sizeof key, "%s=", field);
	if ((line = strstr(info->str, head)) != NULL) {
		const char *end = strchr(line, '\r');

		at = line + strlen(head);
		while ((at = strstr(at, key)) != NULL &&
		       (end == NULL || at < end)) {
			/* "calls=" also ends "failed_calls=": want a whole
			 * field name. */
			if (at[-1] == ':' || at[-1] == ',') {
				v = strtoll(at + strlen(key), NULL, 10);
				break;
			}
			at += strlen(key);
		}
	}
	freeReplyObject(info);
	return v;
}

/* ------------------------------------------------------------------------
 * Without a server
 * ---------------------------------------------------------------------- */

static void
test_bad_arguments(void **state)
{
	struct tk_redis_conf conf;
	struct tk_conn *c;
	redisReply *r = (redisReply *)&r;
	const char *v[1] = { NULL };
	struct tk_args bad_n = { -1, v, NULL }, bad_v = { 1, NULL, NULL },
		       null_s = { 1, v, NULL }, none = { 0, NULL, NULL };

	(void)state;
	assert_rc(tk_conn_new(NULL, &c), TKSHM_ENULL);
	tk_redis_conf_init(&conf);
	assert_rc(tk_conn_new(&conf, NULL), TKSHM_ENULL);
	conf.port = 0;
	assert_rc(tk_conn_new(&conf, &c), TKSHM_EINVAL);
	assert_null(c);
	tk_redis_conf_init(&conf);
	conf.host[0] = '\0';
	assert_rc(tk_conn_new(&conf, &c), TKSHM_EINVAL);
	tk_redis_conf_init(&conf);
	memset(conf.password, 'x', sizeof conf.password);
	assert_rc(tk_conn_new(&conf, &c), TKSHM_EINVAL);
	tk_redis_conf_init(&conf);
	conf.db = -1;
	assert_rc(tk_conn_new(&conf, &c), TKSHM_EINVAL);
	const double bad_ms[] = { 0, -1, __builtin_nan(""), __builtin_inf(),
				  1e12 };
	for (size_t i = 0; i < sizeof bad_ms / sizeof bad_ms[0]; i++) {
		tk_redis_conf_init(&conf);
		conf.connect_timeout_ms = bad_ms[i];
		assert_rc(tk_conn_new(&conf, &c), TKSHM_EINVAL);
		tk_redis_conf_init(&conf);
		conf.command_timeout_ms = bad_ms[i];
		assert_rc(tk_conn_new(&conf, &c), TKSHM_EINVAL);
	}

	/* Bad calls are refused before any I/O (port 1 is never Redis). */
	tk_redis_conf_init(&conf);
	conf.port = 1;
	assert_rc(tk_conn_new(&conf, &c), TKSHM_OK);
	assert_rc(tk_conn_eval(NULL, TK_SCRIPT_GCRA, &none, &none, &r, NULL, 0),
		  TKSHM_ENULL);
	assert_null(r);
	assert_rc(tk_conn_eval(c, TK_SCRIPT_GCRA, &none, &none, NULL, NULL, 0),
		  TKSHM_ENULL);
	assert_rc(tk_conn_eval(c, TK_SCRIPT_COUNT, &none, &none, &r, NULL, 0),
		  TKSHM_EINVAL);
	assert_rc(tk_conn_eval(c, TK_SCRIPT_GCRA, &bad_n, &none, &r, NULL, 0),
		  TKSHM_EINVAL);
	assert_rc(tk_conn_eval(c, TK_SCRIPT_GCRA, &none, &bad_v, &r, NULL, 0),
		  TKSHM_ENULL);
	assert_rc(tk_conn_eval(c, TK_SCRIPT_GCRA, &null_s, &none, &r, NULL, 0),
		  TKSHM_ENULL);
	assert_rc(tk_conn_command(c, &none, &r, NULL, 0), TKSHM_EINVAL);
	assert_rc(tk_conn_command(c, NULL, &r, NULL, 0), TKSHM_ENULL);
	assert_rc(tk_conn_eval_many(c, TK_SCRIPT_GCRA, 1, &bad_n, NULL, &r),
		  TKSHM_EINVAL);
	assert_rc(tk_conn_eval_many(c, TK_SCRIPT_GCRA, 0, NULL, NULL, NULL),
		  TKSHM_OK);
	expect_stats(c, 0, 0, 0, 0);
	tk_conn_free(c);
	tk_conn_free(NULL);
}

/* Nothing listens: refused at once, not after the connect timeout. */
static void
test_refused(void **state)
{
	struct tk_redis_conf conf;
	struct tk_conn *c;
	struct fw w;
	redisReply *r;
	char err[256] = "";
	int holder;
	double t0;

	(void)state;
	tk_redis_conf_init(&conf);
	conf.port = tkt_redis_refusing_port(&holder);
	conf.connect_timeout_ms = 1000;
	assert_rc(tk_conn_new(&conf, &c), TKSHM_OK);
	t0 = tkt_seconds();
	assert_rc(tk_conn_ready(c), TKSHM_EUNAVAILABLE);
	assert_true(tkt_seconds() - t0 < 0.5);
	fw_init(&w, "k", "5");
	assert_rc(tk_conn_eval(c, TK_SCRIPT_FIXED_WINDOW, &w.keys, &w.args, &r,
			       err, sizeof err),
		  TKSHM_EUNAVAILABLE);
	assert_null(r);
	tkt_expect_contains(err, "refused", "the reason");
	expect_stats(c, 1, 1, 0, 0);
	tk_conn_free(c);
	close(holder);
}

/* A listener whose accept queue is full drops new SYNs, so a connect
 * hangs (the kernel would retry after 1 s): the connect timeout ends it.
 */
static void
test_connect_timeout(void **state)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	struct tk_redis_conf conf;
	struct tk_conn *c;
	int lfd, fill[3];
	double t0, took;
	const char *ping[1] = { "PING" };
	redisReply *r;
	char err[256] = "";

	(void)state;
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &len), 0);
	assert_int_equal(listen(lfd, 0), 0);
	for (int i = 0; i < 3; i++) {
		fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		(void)connect(fill[i], (struct sockaddr *)&a, sizeof a);
	}
	sleep_s(0.05);

	tk_redis_conf_init(&conf);
	conf.port = ntohs(a.sin_port);
	conf.connect_timeout_ms = 150;
	assert_rc(tk_conn_new(&conf, &c), TKSHM_OK);
	t0 = tkt_seconds();
	assert_rc(tk_conn_ready(c), TKSHM_EUNAVAILABLE);
	took = tkt_seconds() - t0;
	if (took < 0.14 || took > 0.9)
		fail_msg("the connect gave up after %.3f s (timeout 0.150)",
			 took);
	/* The next call tries again, and times out again. */
	t0 = tkt_seconds();
	assert_rc(tk_conn_command(c, &(struct tk_args){ 1, ping, NULL }, &r,
				  err, sizeof err),
		  TKSHM_EUNAVAILABLE);
	assert_true(tkt_seconds() - t0 >= 0.14);
	tkt_expect_contains(err, "timed out", "the reason");
	expect_stats(c, 1, 1, 0, 0);
	tk_conn_free(c);
	for (int i = 0; i < 3; i++)
		close(fill[i]);
	close(lfd);
}

/* ------------------------------------------------------------------------
 * Scripts
 * ---------------------------------------------------------------------- */

static void
test_evalsha(void **state)
{
	struct fixture *f = *state;
	long long remaining;

	assert_rc(tk_conn_ready(f->c), TKSHM_OK);
	assert_int_equal(fw_check(f->c, "k", "2", &remaining), 1);
	assert_int_equal(remaining, 1);
	assert_int_equal(fw_check(f->c, "k", "2", &remaining), 1);
	assert_int_equal(remaining, 0);
	assert_int_equal(fw_check(f->c, "k", "2", &remaining), 0);
	assert_int_equal(fw_count(&f->r, "k"), 2);
	expect_stats(f->c, 3, 0, 0, 1);
	/* By sha only: the sources went once, by SCRIPT LOAD. */
	assert_int_equal(cmdstat(&f->r, "evalsha", "calls"), 3);
	assert_int_equal(cmdstat(&f->r, "eval", "calls"), 0);
	assert_int_equal(cmdstat(&f->r, "script|load", "calls"),
			 TK_SCRIPT_COUNT);
}

/* SCRIPT FLUSH: the next EVALSHA gets NOSCRIPT (the script did not run),
 * the script is loaded again and the command sent once more. */
static void
test_script_flush_reloads_once(void **state)
{
	struct fixture *f = *state;
	redisReply *ok;
	long long remaining;

	assert_int_equal(fw_check(f->c, "k", "10", NULL), 1);
	ok = tkt_redis_cmd(&f->r, "SCRIPT", "FLUSH", NULL);
	assert_int_equal(ok->type, REDIS_REPLY_STATUS);
	freeReplyObject(ok);
	assert_int_equal(fw_check(f->c, "k", "10", &remaining), 1);
	assert_int_equal(remaining, 8);
	assert_int_equal(fw_count(&f->r, "k"), 2);
	expect_stats(f->c, 2, 0, 1, 1);
	assert_int_equal(cmdstat(&f->r, "evalsha", "calls"), 3);
	assert_int_equal(cmdstat(&f->r, "evalsha", "failed_calls"), 1);
	/* Loaded again: no more NOSCRIPT. */
	assert_int_equal(fw_check(f->c, "k", "10", &remaining), 1);
	assert_int_equal(remaining, 7);
	expect_stats(f->c, 3, 0, 1, 1);
}

static void
test_error_replies(void **state)
{
	struct fixture *f = *state;
	const char *hset[4] = { "HSET", "h", "f", "v" };
	const char *incr_h[2] = { "INCR", "h" };
	struct fw w;
	redisReply *r;
	char err[256] = "";

	assert_rc(tk_conn_command(f->c, &(struct tk_args){ 4, hset, NULL }, &r,
				  NULL, 0),
		  TKSHM_OK);
	freeReplyObject(r);
	assert_rc(tk_conn_command(f->c, &(struct tk_args){ 2, incr_h, NULL },
				  &r, err, sizeof err),
		  TKSHM_EREDIS);
	assert_null(r);
	tkt_expect_contains(err, "WRONGTYPE", "the error reply");
	/* A script's own error: a limit that is not a number. */
	fw_init(&w, "k", "many");
	err[0] = '\0';
	assert_rc(tk_conn_eval(f->c, TK_SCRIPT_FIXED_WINDOW, &w.keys, &w.args,
			       &r, err, sizeof err),
		  TKSHM_EREDIS);
	assert_null(r);
	tkt_expect_contains(err, "ERR", "the script's error");
	/* An error reply is an answer: the connection stays. */
	assert_int_equal(fw_check(f->c, "k", "5", NULL), 1);
	expect_stats(f->c, 4, 2, 0, 1);
	/* A short errbuf gets a truncated, terminated text. */
	assert_rc(tk_conn_command(f->c, &(struct tk_args){ 2, incr_h, NULL },
				  &r, err, 4),
		  TKSHM_EREDIS);
	assert_string_equal(err, "WRO");
}

/* ------------------------------------------------------------------------
 * Timeouts and lost connections (C3)
 * ---------------------------------------------------------------------- */

/* The server is stopped (SIGSTOP) while the command is on its way: the
 * command times out, is not sent again, and runs once when the server
 * continues (it was in the socket).  The next call reconnects. */
static void
test_timeout_is_not_resent(void **state)
{
	struct fixture *f = *state;
	long long v = 0;
	char err[256] = "";
	double t0, took;

	assert_rc(incr(f->c, "n", &v, NULL, 0), TKSHM_OK);
	assert_int_equal(v, 1);
	tkt_redis_sigstop(&f->r);
	t0 = tkt_seconds();
	assert_rc(incr(f->c, "n", &v, err, sizeof err), TKSHM_EUNAVAILABLE);
	took = tkt_seconds() - t0;
	tkt_redis_sigcont(&f->r);
	if (took < 0.09 || took > 1.0)
		fail_msg("the command gave up after %.3f s (timeout 0.100)",
			 took);
	assert_true(err[0] != '\0');
	/* Ran exactly once, when the server continued. */
	assert_int_equal(tkt_redis_int(&f->r, "GET", "n", NULL), 2);
	expect_stats(f->c, 2, 1, 0, 1);
	assert_rc(incr(f->c, "n", &v, NULL, 0), TKSHM_OK);
	assert_int_equal(v, 3);
	expect_stats(f->c, 3, 1, 0, 2);
	assert_int_equal(tkt_redis_int(&f->r, "GET", "n", NULL), 3);
}

/* CLIENT PAUSE longer than the command timeout.  Redis drops a paused
 * command whose client has gone, so after the pause the counter shows
 * only what a resend would have added: nothing. */
static void
test_client_pause_is_not_resent(void **state)
{
	struct fixture *f = *state;
	long long v = 0;
	double t0, took;

	assert_rc(incr(f->c, "n", &v, NULL, 0), TKSHM_OK);
	tkt_redis_pause(&f->r, 800);
	t0 = tkt_seconds();
	assert_rc(incr(f->c, "n", &v, NULL, 0), TKSHM_EUNAVAILABLE);
	took = tkt_seconds() - t0;
	if (took < 0.09 || took > 0.7)
		fail_msg("the command gave up after %.3f s (timeout 0.100)",
			 took);
	sleep_s(0.85 - took);
	assert_int_equal(tkt_redis_int(&f->r, "GET", "n", NULL), 1);
	assert_rc(incr(f->c, "n", &v, NULL, 0), TKSHM_OK);
	assert_int_equal(v, 2);
	expect_stats(f->c, 3, 1, 0, 2);
}

/* A server stopped before the first connect: the TCP handshake succeeds
 * (the kernel does it) and the SCRIPT LOADs time out. */
static void
test_handshake_timeout(void **state)
{
	struct fixture *f = *state;
	double t0, took;

	tkt_redis_sigstop(&f->r);
	t0 = tkt_seconds();
	assert_rc(tk_conn_ready(f->c), TKSHM_EUNAVAILABLE);
	took = tkt_seconds() - t0;
	tkt_redis_sigcont(&f->r);
	if (took < 0.09 || took > 1.0)
		fail_msg("the handshake gave up after %.3f s (timeout 0.100)",
			 took);
	assert_rc(tk_conn_ready(f->c), TKSHM_OK);
	assert_int_equal(fw_check(f->c, "k", "5", NULL), 1);
	expect_stats(f->c, 1, 0, 0, 1);
}

/* kill -9: the connection is lost (unavailable), then refused, then the
 * restarted server (no data, no scripts) serves the next call. */
static void
test_killed_and_restarted(void **state)
{
	struct fixture *f = *state;
	struct fw w;
	redisReply *r;
	double t0;

	assert_int_equal(fw_check(f->c, "k", "5", NULL), 1);
	tkt_redis_kill(&f->r);
	fw_init(&w, "k", "5");
	assert_rc(tk_conn_eval(f->c, TK_SCRIPT_FIXED_WINDOW, &w.keys, &w.args,
			       &r, NULL, 0),
		  TKSHM_EUNAVAILABLE);
	t0 = tkt_seconds();
	assert_rc(tk_conn_eval(f->c, TK_SCRIPT_FIXED_WINDOW, &w.keys, &w.args,
			       &r, NULL, 0),
		  TKSHM_EUNAVAILABLE);
	assert_true(tkt_seconds() - t0 < 0.5);
	tkt_redis_restart(&f->r);
	assert_int_equal(fw_check(f->c, "k", "5", NULL), 1);
	assert_int_equal(fw_count(&f->r, "k"), 1);
	/* The scripts went with the reconnect: no NOSCRIPT. */
	expect_stats(f->c, 4, 2, 0, 2);
	assert_int_equal(cmdstat(&f->r, "evalsha", "failed_calls"), 0);
}

/* ------------------------------------------------------------------------
 * fork (C1)
 * ---------------------------------------------------------------------- */

struct child_report {
	int rc_id, rc_check;
	long long id, allowed;
	struct tk_conn_stats before, after;
};

static void
test_fork_gets_its_own_connection(void **state)
{
	struct fixture *f = *state;
	struct child_report *rep = tkt_shared(sizeof *rep);
	long long parent_id, id;
	pid_t pid;

	assert_rc(client_id(f->c, &parent_id), TKSHM_OK);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct fw w;
		redisReply *r;

		tk_conn_stats_get(f->c, &rep->before);
		rep->rc_id = client_id(f->c, &rep->id);
		fw_init(&w, "k", "5");
		rep->rc_check = tk_conn_eval(f->c, TK_SCRIPT_FIXED_WINDOW,
					     &w.keys, &w.args, &r, NULL, 0);
		if (rep->rc_check == TKSHM_OK) {
			rep->allowed = r->element[0]->integer;
			freeReplyObject(r);
		}
		tk_conn_stats_get(f->c, &rep->after);
		tk_conn_free(f->c);
		_exit(0);
	}
	tkt_wait_ok(pid);
	assert_rc(rep->rc_id, TKSHM_OK);
	assert_rc(rep->rc_check, TKSHM_OK);
	assert_true(rep->id != parent_id);
	assert_int_equal(rep->allowed, 1);
	/* The child's counters are its own. */
	assert_int_equal(rep->before.calls, 0);
	assert_int_equal(rep->after.calls, 2);
	assert_int_equal(rep->after.connects, 1);

	/* A child that only frees the inherited connection. */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		tk_conn_free(f->c);
		_exit(0);
	}
	tkt_wait_ok(pid);

	/* The parent's connection is the same one and still works. */
	assert_rc(client_id(f->c, &id), TKSHM_OK);
	assert_int_equal(id, parent_id);
	assert_int_equal(fw_check(f->c, "k", "5", NULL), 1);
	expect_stats(f->c, 3, 0, 0, 1);
	assert_int_equal(fw_count(&f->r, "k"), 2);
	tkt_shared_free(rep, sizeof *rep);
}

/* ------------------------------------------------------------------------
 * Pipelines
 * ---------------------------------------------------------------------- */

struct batch {
	size_t n;
	struct fw w;
	struct tk_args *keys, *args;
	redisReply **replies;
};

/* n fixedWindow checks of one key; `pad` > 0 adds an extra ARGV of that
 * many bytes (the script ignores it) to make the pipeline big. */
static void
batch_init(struct batch *b, size_t n, const char *key, const char *limit,
	   size_t pad)
{
	static char padding[4096];

	assert_true(pad < sizeof padding);
	memset(padding, 'x', pad);
	padding[pad] = '\0';
	b->n = n;
	fw_init(&b->w, key, limit);
	b->keys = calloc(n, sizeof *b->keys);
	b->args = calloc(n, sizeof *b->args);
	b->replies = calloc(n, sizeof *b->replies);
	assert_non_null(b->keys);
	assert_non_null(b->args);
	assert_non_null(b->replies);
	for (size_t i = 0; i < n; i++) {
		b->keys[i] = b->w.keys;
		b->args[i] = b->w.args;
	}
	if (pad > 0) {
		static const char *argv5[5];

		memcpy(argv5, b->w.argv, sizeof b->w.argv);
		argv5[4] = padding;
		for (size_t i = 0; i < n; i++)
			b->args[i] = (struct tk_args){ 5, argv5, NULL };
	}
}

static int
batch_run(struct tk_conn *c, struct batch *b)
{
	return tk_conn_eval_many(c, TK_SCRIPT_FIXED_WINDOW, b->n, b->keys,
				 b->args, b->replies);
}

static void
batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->replies[i] != NULL)
			freeReplyObject(b->replies[i]);
	free(b->keys);
	free(b->args);
	free(b->replies);
}

static void
test_eval_many(void **state)
{
	struct fixture *f = *state;
	struct batch b;
	size_t admitted = 0;

	batch_init(&b, 100, "k", "60", 0);
	assert_rc(batch_run(f->c, &b), TKSHM_OK);
	for (size_t i = 0; i < b.n; i++)
		admitted += (size_t)allowed_of(b.replies[i]);
	assert_int_equal(admitted, 60);
	assert_int_equal(allowed_of(b.replies[59]), 1);
	assert_int_equal(allowed_of(b.replies[60]), 0);
	assert_int_equal(fw_count(&f->r, "k"), 60);
	expect_stats(f->c, 100, 0, 0, 1);
	assert_int_equal(cmdstat(&f->r, "evalsha", "calls"), 100);
	batch_free(&b);

	/* An error reply in the middle is that command's NULL only. */
	batch_init(&b, 5, "k2", "60", 0);
	{
		static const char *bad[4] = { "1000", "many", "1000000000000",
					      "1" };

		b.args[2] = (struct tk_args){ 4, bad, NULL };
	}
	assert_rc(batch_run(f->c, &b), TKSHM_OK);
	assert_null(b.replies[2]);
	assert_int_equal(allowed_of(b.replies[4]), 1);
	assert_int_equal(fw_count(&f->r, "k2"), 4);
	expect_stats(f->c, 105, 1, 0, 1);
	batch_free(&b);
}

/* The server-side receive queues of connections to `port`
 * (/proc/net/tcp): the largest one, and whether one holds exactly `want`
 * bytes. */
static unsigned long
rx_queue(int port, unsigned long want, bool *found)
{
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[512];
	unsigned long most = 0;

	*found = false;
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned local_port, st;
		unsigned long tx, rx;

		if (sscanf(line, " %*d: %*x:%x %*x:%*x %x %lx:%lx", &local_port,
			   &st, &tx, &rx) != 4)
			continue;
		if ((int)local_port != port || st != 1 /* ESTABLISHED */)
			continue;
		if (rx > most)
			most = rx;
		if (rx == want)
			*found = true;
	}
	fclose(f);
	return most;
}

/* Waits until the server sleeps in epoll_wait (/proc/<pid>/syscall).
 * It matters before a SIGSTOP that must preserve arrival order: epoll
 * re-queues a level-triggered fd after reporting it and drops it only at
 * its next scan, so a server stopped just after answering still has the
 * answered connection at the head of its ready list, ahead of any data
 * that arrives while it is stopped. */
static void
wait_in_epoll(pid_t pid)
{
	char path[64];
	double deadline = tkt_seconds() + 10;

	snprintf(path, sizeof path, "/proc/%d/syscall", (int)pid);
	while (tkt_seconds() < deadline) {
		FILE *f = fopen(path, "r");
		long nr = -1;

		if (f == NULL)
			fail_msg("%s: %s", path, strerror(errno));
		if (fscanf(f, "%ld", &nr) != 1)
			nr = -1;
		fclose(f);
		if (nr == SYS_epoll_wait || nr == SYS_epoll_pwait)
			return;
		sleep_s(0.001);
	}
	fail_msg("redis-server never waited in epoll_wait");
}

/* The child of run_behind: once the pipeline waits in the stopped
 * server's socket, queue `wire` behind it on another connection, then
 * continue the server.  Exit status: 0, or the step that failed. */
static void
queue_behind(struct tkt_redis *r, redisContext *ctl, const char *wire, int len)
{
	double deadline = tkt_seconds() + 10;
	unsigned long last = 0, now;
	int stable = 0, status = 0, done = 0;
	bool found;
	void *reply = NULL;

	/* The pipeline is in when its queue stops growing (it is bigger
	 * than the socket buffers; the writer is blocked). */
	while (stable < 5 && tkt_seconds() < deadline) {
		now = rx_queue(r->port, 0, &found);
		stable = (now == last && now > 65536) ? stable + 1 : 0;
		last = now;
		sleep_s(0.01);
	}
	if (stable < 5)
		status = 2;
	if (status == 0 && (redisAppendFormattedCommand(ctl, wire, len) != 0 ||
			    redisBufferWrite(ctl, &done) != 0 || !done))
		status = 3;
	while (status == 0 &&
	       (rx_queue(r->port, (unsigned long)len, &found), !found)) {
		if (tkt_seconds() > deadline)
			status = 4;
		sleep_s(0.001);
	}
	kill(r->pid, SIGCONT);
	if (status == 0 && (redisGetReply(ctl, &reply) != 0 ||
			    ((redisReply *)reply)->type != REDIS_REPLY_STATUS))
		status = 5;
	_exit(status);
}

/* Runs the batch through `c` with the server stopped until the whole
 * socket buffer holds the pipeline and `cmd` (redisCommand's format, no
 * arguments) waits behind it on another connection.  When the server
 * continues, its first pass over the ready sockets reads a part of the
 * pipeline (20 KB) and runs it, then runs `cmd`, then the rest of the
 * pipeline.  Returns the batch's rc. */
static int
run_behind(struct fixture *f, struct tk_conn *c, struct batch *b,
	   const char *cmd)
{
	redisContext *ctl = tkt_redis_connect(&f->r);
	redisReply *ping = redisCommand(ctl, "PING");
	char *wire;
	int len = redisFormatCommand(&wire, cmd), rc;
	pid_t pid;

	assert_non_null(ping);
	freeReplyObject(ping);
	assert_true(len > 0);
	wait_in_epoll(f->r.pid);
	tkt_redis_sigstop(&f->r);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		queue_behind(&f->r, ctl, wire, len);
	rc = batch_run(c, b);
	tkt_wait_ok(pid);
	redisFreeCommand(wire);
	redisFree(ctl);
	return rc;
}

/* A SCRIPT FLUSH lands in the middle of a pipeline (run_behind): the
 * commands after it get NOSCRIPT, and only those are resent. */
static void
test_eval_many_noscript_in_the_middle(void **state)
{
	struct fixture *f = *state;
	struct tk_redis_conf slow = f->conf;
	struct tk_conn *c;
	struct batch b;
	long long failed, calls;

	/* The pipeline waits for the stopped server: no timeout here. */
	slow.command_timeout_ms = 20000;
	assert_rc(tk_conn_new(&slow, &c), TKSHM_OK);
	assert_rc(tk_conn_ready(c), TKSHM_OK);
	batch_init(&b, 4000, "k", BIG_LIMIT, 200);
	assert_rc(run_behind(f, c, &b, "SCRIPT FLUSH"), TKSHM_OK);

	for (size_t i = 0; i < b.n; i++)
		if (b.replies[i] == NULL || allowed_of(b.replies[i]) != 1)
			fail_msg("command %zu: no admission", i);
	/* Each command ran exactly once... */
	assert_int_equal(fw_count(&f->r, "k"), (long long)b.n);
	/* ...some after a NOSCRIPT, some not... */
	failed = cmdstat(&f->r, "evalsha", "failed_calls");
	calls = cmdstat(&f->r, "evalsha", "calls");
	if (failed <= 0 || failed >= (long long)b.n)
		fail_msg("%lld of %zu commands got NOSCRIPT", failed, b.n);
	/* ...and exactly those were sent again, after one reload. */
	assert_int_equal(calls, (long long)b.n + failed);
	expect_stats(c, b.n, 0, 1, 1);
	batch_free(&b);
	tk_conn_free(c);
}

/* CLIENT PAUSE lands in the middle of a pipeline (run_behind): the
 * replies of the commands before it arrive, the rest time out.  Those
 * are kept, the rest are NULL, nothing is resent (Redis drops the paused
 * commands of a client that has gone, so the count is what arrived), and
 * the next call reconnects. */
static void
test_eval_many_timeout_keeps_what_arrived(void **state)
{
	struct fixture *f = *state;
	struct tk_redis_conf conf = f->conf;
	struct tk_conn *c;
	struct batch b;
	size_t k = 0;
	redisReply *ok;

	/* Longer than the server stays stopped, shorter than the pause. */
	conf.command_timeout_ms = 1000;
	assert_rc(tk_conn_new(&conf, &c), TKSHM_OK);
	assert_rc(tk_conn_ready(c), TKSHM_OK);
	batch_init(&b, 4000, "k", BIG_LIMIT, 200);
	assert_rc(run_behind(f, c, &b, "CLIENT PAUSE 20000 WRITE"),
		  TKSHM_EUNAVAILABLE);
	while (k < b.n && b.replies[k] != NULL)
		assert_int_equal(allowed_of(b.replies[k++]), 1);
	if (k == 0 || k == b.n)
		fail_msg("%zu of %zu replies arrived", k, b.n);
	for (size_t i = k; i < b.n; i++)
		assert_null(b.replies[i]);
	ok = tkt_redis_cmd(&f->r, "CLIENT", "UNPAUSE", NULL);
	assert_int_equal(ok->type, REDIS_REPLY_STATUS);
	freeReplyObject(ok);
	assert_int_equal(fw_count(&f->r, "k"), (long long)k);
	expect_stats(c, b.n, b.n - k, 0, 1);
	assert_int_equal(fw_check(c, "k", BIG_LIMIT, NULL), 1);
	expect_stats(c, b.n + 1, b.n - k, 0, 2);
	batch_free(&b);
	tk_conn_free(c);
}

/* A big pipeline to a killed server: hiredis's write(2)s hit the closed
 * socket (EPIPE), which would raise SIGPIPE and kill the process; the
 * connection blocks it and takes it back. */
static void
test_eval_many_dead_server_no_sigpipe(void **state)
{
	struct fixture *f = *state;
	struct batch b;
	sigset_t pending, mask;
	void (*saved)(int) = signal(SIGPIPE, SIG_DFL);

	assert_rc(tk_conn_ready(f->c), TKSHM_OK);
	tkt_redis_kill(&f->r);
	batch_init(&b, 5000, "k", BIG_LIMIT, 1000);
	assert_rc(batch_run(f->c, &b), TKSHM_EUNAVAILABLE);
	for (size_t i = 0; i < b.n; i++)
		assert_null(b.replies[i]);
	expect_stats(f->c, b.n, b.n, 0, 1);
	assert_int_equal(sigpending(&pending), 0);
	assert_false(sigismember(&pending, SIGPIPE));
	assert_int_equal(sigprocmask(SIG_BLOCK, NULL, &mask), 0);
	assert_false(sigismember(&mask, SIGPIPE));
	batch_free(&b);
	signal(SIGPIPE, saved);
}

/* ------------------------------------------------------------------------
 * Configuration: AUTH, SELECT, unix socket
 * ---------------------------------------------------------------------- */

static void
test_auth_and_select(void **state)
{
	struct fixture *f = *state;
	struct tk_redis_conf conf = f->conf;
	struct tk_conn *c;
	redisReply *r;
	const char *set[3] = { "SET", "s", "v" };
	char err[256] = "";

	r = tkt_redis_cmd(&f->r, "ACL", "SETUSER", "tk", "on", ">s3cret", "~*",
			  "&*", "+@all", NULL);
	assert_int_equal(r->type, REDIS_REPLY_STATUS);
	freeReplyObject(r);
	snprintf(conf.username, sizeof conf.username, "tk");
	snprintf(conf.password, sizeof conf.password, "s3cret");
	conf.db = 3;
	assert_rc(tk_conn_new(&conf, &c), TKSHM_OK);
	assert_rc(tk_conn_command(c, &(struct tk_args){ 3, set, NULL }, &r,
				  NULL, 0),
		  TKSHM_OK);
	freeReplyObject(r);
	r = tkt_redis_cmd(&f->r, "INFO", "keyspace", NULL);
	tkt_expect_contains(r->str, "db3:keys=1", "INFO keyspace");
	freeReplyObject(r);
	r = tkt_redis_cmd(&f->r, "CLIENT", "LIST", NULL);
	tkt_expect_contains(r->str, "user=tk", "CLIENT LIST");
	freeReplyObject(r);
	assert_int_equal(fw_check(c, "k", "5", NULL), 1);
	tk_conn_free(c);

	/* A wrong password: Redis refuses AUTH, no connection is kept. */
	snprintf(conf.password, sizeof conf.password, "wrong");
	assert_rc(tk_conn_new(&conf, &c), TKSHM_OK);
	assert_rc(tk_conn_ready(c), TKSHM_EREDIS);
	assert_rc(tk_conn_command(c, &(struct tk_args){ 3, set, NULL }, &r, err,
				  sizeof err),
		  TKSHM_EREDIS);
	tkt_expect_contains(err, "WRONGPASS", "the AUTH error");
	expect_stats(c, 1, 1, 0, 0);
	{
		struct batch b;

		batch_init(&b, 3, "k", "5", 0);
		assert_rc(batch_run(c, &b), TKSHM_EREDIS);
		for (size_t i = 0; i < b.n; i++)
			assert_null(b.replies[i]);
		expect_stats(c, 4, 4, 0, 0);
		batch_free(&b);
	}
	tk_conn_free(c);

	/* A password alone is AUTH <password> (the default user, which has
	 * none here: refused). */
	conf.username[0] = '\0';
	assert_rc(tk_conn_new(&conf, &c), TKSHM_OK);
	assert_rc(tk_conn_command(c, &(struct tk_args){ 3, set, NULL }, &r, err,
				  sizeof err),
		  TKSHM_EREDIS);
	tkt_expect_contains(err, "AUTH", "the AUTH error");
	tk_conn_free(c);

	/* A database Redis does not have. */
	conf = f->conf;
	conf.db = 1000;
	assert_rc(tk_conn_new(&conf, &c), TKSHM_OK);
	assert_rc(tk_conn_command(c, &(struct tk_args){ 3, set, NULL }, &r, err,
				  sizeof err),
		  TKSHM_EREDIS);
	tkt_expect_contains(err, "SELECT", "the SELECT error");
	tk_conn_free(c);
}

static void
test_unix_socket(void **state)
{
	struct fixture *f = *state;
	struct tk_redis_conf conf = f->conf;
	struct tk_conn *c;
	redisReply *r;

	snprintf(conf.unix_path, sizeof conf.unix_path, "%s", f->r.unix_path);
	conf.port = 0; /* not used */
	assert_rc(tk_conn_new(&conf, &c), TKSHM_OK);
	assert_int_equal(fw_check(c, "k", "5", NULL), 1);
	r = tkt_redis_cmd(&f->r, "CLIENT", "LIST", NULL);
	tkt_expect_contains(r->str, "addr=/", "CLIENT LIST");
	freeReplyObject(r);
	expect_stats(c, 1, 0, 0, 1);
	tk_conn_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_connect_timeout),
#define WITH_SERVER(t) cmocka_unit_test_setup_teardown(t, setup, teardown)
		WITH_SERVER(test_evalsha),
		WITH_SERVER(test_script_flush_reloads_once),
		WITH_SERVER(test_error_replies),
		WITH_SERVER(test_timeout_is_not_resent),
		WITH_SERVER(test_client_pause_is_not_resent),
		WITH_SERVER(test_handshake_timeout),
		WITH_SERVER(test_killed_and_restarted),
		WITH_SERVER(test_fork_gets_its_own_connection),
		WITH_SERVER(test_eval_many),
		WITH_SERVER(test_eval_many_noscript_in_the_middle),
		WITH_SERVER(test_eval_many_timeout_keeps_what_arrived),
		WITH_SERVER(test_eval_many_dead_server_no_sigpipe),
		WITH_SERVER(test_auth_and_select),
		WITH_SERVER(test_unix_socket),
#undef WITH_SERVER
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
