/*
 * node.c - one process's connection to one Redis server over hiredis
 * 0.14's sync API (conn.c routes a call to a node: the one server, a
 * Sentinel's primary, or a Cluster's node of the key's slot).
 *
 * The contract is conn.h's C1-C5.  How this file keeps it:
 *
 * Fork (C1).  tk_node records the pid its context and counters belong to;
 * every call compares getpid() with it.  A context inherited through
 * fork() is redisFree()d in the child, which only closes the child's copy
 * of the socket (hiredis sends nothing when it frees), and the child's
 * counters start from zero: they count this process's exchanges.
 *
 * Connect.  One round trip after the TCP (or unix) connect: AUTH, SELECT
 * and a SCRIPT LOAD of every script are pipelined, and the sha1s Redis
 * answers are kept (C2).  A refused AUTH, SELECT or script frees the
 * context (a half-configured connection is of no use) and is
 * TKSHM_EREDIS; a connect or I/O failure is TKSHM_EUNAVAILABLE.
 *
 * Deadline (C4).  hiredis 0.14 has no command timeout of its own, and a
 * socket timeout (SO_RCVTIMEO) bounds each read(), not the reply: a
 * server trickling a byte at a time would hold a caller for ever.  So the
 * socket is made non-blocking once connected, and every exchange writes
 * and reads through poll() with what is left of one deadline, set when a
 * call's command starts: the command, a NOSCRIPT reload and its resend
 * all fit in one command timeout, whatever the server sends.  Connecting
 * (the TCP connect and the handshake) has a deadline of its own, the
 * connect timeout, so a call that connects first ends within both.
 *
 * Bounded replies.  hiredis allocates an array as soon as its header
 * arrives (`*2147483647` is 16 GiB of pointers) and keeps every byte a
 * reply has sent so far.  The reader's reply functions are hiredis's own
 * behind a count: one reply may hold at most TK_REPLY_OBJECTS_MAX objects
 * (counted from the array headers, before anything is allocated) and
 * TK_REPLY_BYTES_MAX bytes of strings, and no more than TK_READ_BUF_MAX
 * unparsed bytes are kept.  A reply past a bound is a failed exchange.
 *
 * Failure (C3).  Any failed exchange (deadline passed, reset, EOF, a
 * reply that cannot be parsed or is too large) frees the context and
 * returns at once; nothing is ever sent again for it.  Only a NOSCRIPT
 * error reply, which says the script did not run, leads to a resend,
 * once, after a SCRIPT LOAD.
 *
 * SIGPIPE.  hiredis writes with write(2), which raises SIGPIPE when the
 * peer is gone; that would kill a worker whose Redis died (C5).  Each
 * exchange therefore runs with SIGPIPE blocked in the calling thread, and
 * a SIGPIPE it raised is taken off the pending set (sigtimedwait, no
 * wait) before the mask is restored.  A thread that already blocks
 * SIGPIPE is left as it is.
 *
 * Counters: `calls` counts the commands callers asked for (a NOSCRIPT
 * resend and the SCRIPT LOADs are not calls), `errors` those of them that
 * ended without a good reply (unavailable, or an error reply), `connects`
 * the connections made and `noscript_reloads` the SCRIPT LOADs a NOSCRIPT
 * reply caused.
 *
 * A tk_node is not thread-safe (neither is a redisContext): one per
 * thread.  A struct tk_args with len == NULL holds NUL-terminated strings.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tkshm.h"
#include "base/clock.h"
#include "redis/node.h"

#define SHA_LEN 40

/* The longest timeout accepted: a day, in ms. */
#define TIMEOUT_MAX_MS 86400000.0

/* What one reply may hold.  The largest any script sends is a sliding
 * log's state (two elements per stamp, 128 stamps) or a multi check
 * (6 + 5 * 16 integers); the longest string, a SCRIPT LOAD's 40-byte
 * sha1 or an error text. */
#define TK_REPLY_OBJECTS_MAX 4096
#define TK_REPLY_BYTES_MAX   (64 * 1024)
/* Unparsed input kept at most: a pipeline's worth of small replies. */
#define TK_READ_BUF_MAX (1024 * 1024)

/* The reply being read: what it holds so far (reset at its root). */
struct reply_budget {
	size_t objects, bytes;
	bool refused; /* a bound was passed: the exchange fails */
};

struct tk_node {
	struct tk_redis_conf conf;
	redisContext *ctx; /* NULL: not connected in process `pid` */
	pid_t pid;	   /* the process ctx and stats belong to (C1) */
	double deadline;   /* monotonic ms: the current call's end (C4) */
	redisReplyObjectFunctions fn; /* hiredis's, behind the budget */
	const redisReplyObjectFunctions *base;
	struct reply_budget budget;
	char sha[TK_SCRIPT_COUNT][SHA_LEN + 1]; /* as SCRIPT LOAD answered */
	char err[256];				/* why the last call failed */
	struct tk_conn_stats stats;
};

/* Reply slots of tk_node_eval_many not answered yet, and answered
 * NOSCRIPT and waiting for their resend (C2); never handed to a caller. */
static redisReply sent_mark, noscript_mark;

/* ------------------------------------------------------------------------
 * Small helpers
 * ---------------------------------------------------------------------- */

static void
copy_text(char *buf, size_t len, const char *text, size_t text_len)
{
	if (buf == NULL || len == 0)
		return;
	if (text_len >= len)
		text_len = len - 1;
	memcpy(buf, text, text_len);
	buf[text_len] = '\0';
}

static void
copy_err(const struct tk_node *c, char *buf, size_t len)
{
	copy_text(buf, len, c->err, strlen(c->err));
}

static bool
is_noscript(const redisReply *r)
{
	return r->type == REDIS_REPLY_ERROR && r->len >= 8 &&
	       memcmp(r->str, "NOSCRIPT", 8) == 0;
}

static bool
terminated(const char *s, size_t size)
{
	return memchr(s, '\0', size) != NULL;
}

static bool
timeout_ok(double ms)
{
	return isfinite(ms) && ms > 0 && ms <= TIMEOUT_MAX_MS;
}

/* ms as a timeval, rounded up to a whole µs and never zero: a zero
 * timeval means "no timeout" to setsockopt. */
static struct timeval
timeval_of(double ms)
{
	double us = ceil(ms * 1000.0);
	struct timeval tv;

	if (us < 1)
		us = 1;
	tv.tv_sec = (time_t)(us / 1e6);
	tv.tv_usec = (suseconds_t)(us - (double)tv.tv_sec * 1e6);
	return tv;
}

/* ------------------------------------------------------------------------
 * SIGPIPE guard (see the top of the file)
 * ---------------------------------------------------------------------- */

struct pipe_guard {
	sigset_t old;
	bool armed; /* this guard blocked SIGPIPE and must restore */
};

static void
guard_enter(struct pipe_guard *g)
{
	sigset_t pipe;

	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	g->armed = pthread_sigmask(SIG_BLOCK, &pipe, &g->old) == 0 &&
		   !sigismember(&g->old, SIGPIPE);
}

/* A SIGPIPE can only have been raised by a failed write, so the pending
 * set is looked at only after a failure. */
static void
guard_leave(struct pipe_guard *g, bool failed)
{
	sigset_t pipe, pending;
	const struct timespec zero = { 0, 0 };

	if (!g->armed)
		return;
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	if (failed && sigpending(&pending) == 0 &&
	    sigismember(&pending, SIGPIPE))
		(void)sigtimedwait(&pipe, NULL, &zero);
	(void)pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

/* ------------------------------------------------------------------------
 * Bounded replies (see the top of the file)
 * ---------------------------------------------------------------------- */

/* The budget of the reply a reader task belongs to: its privdata is the
 * tk_conn (set on the reader when connected). */
static struct reply_budget *
budget_of(const redisReadTask *task)
{
	struct tk_node *c = task->privdata;

	if (task->parent == NULL)
		memset(&c->budget, 0, sizeof c->budget); /* a new reply */
	return &c->budget;
}

/* Takes `objects` and `bytes` from the reply's budget; false (and the
 * reply refused) when they do not fit. */
static bool
budget_take(struct reply_budget *b, size_t objects, size_t bytes)
{
	if (b->refused || objects > TK_REPLY_OBJECTS_MAX - b->objects ||
	    bytes > TK_REPLY_BYTES_MAX - b->bytes) {
		b->refused = true;
		return false;
	}
	b->objects += objects;
	b->bytes += bytes;
	return true;
}

/* Each returns hiredis's object, or NULL (which hiredis reports as out
 * of memory, and read_reply as a refused reply) past the budget.  An
 * array's elements are counted from its header, before it is made. */
static void *
bounded_string(const redisReadTask *task, char *str, size_t len)
{
	struct tk_node *c = task->privdata;

	if (!budget_take(budget_of(task), task->parent == NULL, len))
		return NULL;
	return c->base->createString(task, str, len);
}

static void *
bounded_array(const redisReadTask *task, int elements)
{
	struct tk_node *c = task->privdata;
	size_t n = elements > 0 ? (size_t)elements : 0;

	if (!budget_take(budget_of(task), n + (task->parent == NULL), 0))
		return NULL;
	return c->base->createArray(task, elements);
}

static void *
bounded_integer(const redisReadTask *task, long long v)
{
	struct tk_node *c = task->privdata;

	if (!budget_take(budget_of(task), task->parent == NULL, 0))
		return NULL;
	return c->base->createInteger(task, v);
}

static void *
bounded_nil(const redisReadTask *task)
{
	struct tk_node *c = task->privdata;

	if (!budget_take(budget_of(task), task->parent == NULL, 0))
		return NULL;
	return c->base->createNil(task);
}

/* Puts the budget between the new context's reader and hiredis's reply
 * functions. */
static void
bound_reader(struct tk_node *c)
{
	redisReader *r = c->ctx->reader;

	c->base = r->fn;
	c->fn = *r->fn;
	c->fn.createString = bounded_string;
	c->fn.createArray = bounded_array;
	c->fn.createInteger = bounded_integer;
	c->fn.createNil = bounded_nil;
	r->fn = &c->fn;
	r->privdata = c;
	memset(&c->budget, 0, sizeof c->budget);
}

/* ------------------------------------------------------------------------
 * Deadline I/O (C4)
 * ---------------------------------------------------------------------- */

/* The context failed without hiredis saying so: the deadline passed, or
 * a reply passed its bounds.  Set as hiredis sets its own errors, so
 * that drop() reports it. */
static void
fail_ctx(struct tk_node *c, int err, const char *why)
{
	c->ctx->err = err;
	snprintf(c->ctx->errstr, sizeof c->ctx->errstr, "%s", why);
}

/* Waits until the socket is ready for `events` (POLLIN or POLLOUT), at
 * most until the deadline.  False, with the context failed, when it
 * passed first. */
static bool
wait_ready(struct tk_node *c, short events)
{
	for (;;) {
		struct pollfd p = { c->ctx->fd, events, 0 };
		double left = c->deadline - tk_mono_ms();
		int n;

		if (!(left > 0))
			break;
		n = poll(&p, 1, (int)ceil(left));
		if (n > 0)
			return true; /* an error or hang-up shows in the I/O */
		if (n < 0 && errno != EINTR) {
			fail_ctx(c, REDIS_ERR_IO, strerror(errno));
			return false;
		}
	}
	fail_ctx(c, REDIS_ERR_IO, "timed out");
	return false;
}

/* Writes what the context's output buffer holds. */
static bool
write_all(struct tk_node *c)
{
	int done = 0;

	for (;;) {
		if (redisBufferWrite(c->ctx, &done) != REDIS_OK)
			return false;
		if (done)
			return true;
		if (!wait_ready(c, POLLOUT))
			return false;
	}
}

/* The next reply, read before the deadline, or NULL (the context
 * failed). */
static redisReply *
read_reply(struct tk_node *c)
{
	void *r = NULL;

	for (;;) {
		if (redisGetReplyFromReader(c->ctx, &r) != REDIS_OK)
			break;
		if (r != NULL)
			return r;
		if (c->ctx->reader->len - c->ctx->reader->pos >
		    TK_READ_BUF_MAX) {
			c->budget.refused = true;
			break;
		}
		if (!wait_ready(c, POLLIN) ||
		    redisBufferRead(c->ctx) != REDIS_OK)
			return NULL;
	}
	if (c->budget.refused)
		fail_ctx(c, REDIS_ERR_PROTOCOL, "reply too large");
	return NULL;
}

static redisReply *
exchange(struct tk_node *c, int argc, const char **argv, const size_t *len)
{
	struct pipe_guard g;
	redisReply *r = NULL;

	guard_enter(&g);
	if (redisAppendCommandArgv(c->ctx, argc, argv, len) == REDIS_OK &&
	    write_all(c))
		r = read_reply(c);
	guard_leave(&g, r == NULL);
	return r;
}

/* The next reply of a pipeline (its first call writes the pipeline). */
static redisReply *
next_reply(struct tk_node *c)
{
	struct pipe_guard g;
	redisReply *r = NULL;

	guard_enter(&g);
	if (write_all(c))
		r = read_reply(c);
	guard_leave(&g, r == NULL);
	return r;
}

/* ------------------------------------------------------------------------
 * Argument vectors
 * ---------------------------------------------------------------------- */

#define ARGV_SMALL 16

struct argv_buf {
	const char **v;
	size_t *len;
	int n, cap;
	const char *v_small[ARGV_SMALL];
	size_t len_small[ARGV_SMALL];
	char nkeys[24];
};

static void
argv_init(struct argv_buf *a)
{
	a->v = a->v_small;
	a->len = a->len_small;
	a->n = 0;
	a->cap = ARGV_SMALL;
}

static void
argv_free(struct argv_buf *a)
{
	if (a->v != a->v_small) {
		free(a->v);
		free(a->len);
	}
}

static int
argv_reserve(struct argv_buf *a, int n)
{
	const char **v;
	size_t *len;

	if (n <= a->cap)
		return TKSHM_OK;
	v = malloc((size_t)n * sizeof *v);
	len = malloc((size_t)n * sizeof *len);
	if (v == NULL || len == NULL) {
		free(v);
		free(len);
		return TKSHM_ENOMEM;
	}
	argv_free(a);
	a->v = v;
	a->len = len;
	a->cap = n;
	return TKSHM_OK;
}

static void
argv_push(struct argv_buf *a, const char *s, size_t len)
{
	a->v[a->n] = s;
	a->len[a->n] = len;
	a->n++;
}

static void
argv_push_args(struct argv_buf *a, const struct tk_args *args)
{
	if (args == NULL)
		return;
	for (int i = 0; i < args->n; i++)
		argv_push(a, args->v[i],
			  args->len != NULL ? args->len[i] :
					      strlen(args->v[i]));
}

/* TKSHM_OK when `args` (NULL: none) can be sent; adds its count to *n. */
static int
args_check(const struct tk_args *args, long long *n)
{
	if (args == NULL)
		return TKSHM_OK;
	if (args->n < 0)
		return TKSHM_EINVAL;
	if (args->n > 0 && args->v == NULL)
		return TKSHM_ENULL;
	for (int i = 0; i < args->n; i++)
		if (args->v[i] == NULL)
			return TKSHM_ENULL;
	*n += args->n;
	return TKSHM_OK;
}

static int
eval_check(const struct tk_args *keys, const struct tk_args *args)
{
	long long n = 3;
	int rc = args_check(keys, &n);

	if (rc == TKSHM_OK)
		rc = args_check(args, &n);
	if (rc == TKSHM_OK && n > INT_MAX)
		rc = TKSHM_EINVAL;
	return rc;
}

/* EVALSHA sha nkeys keys... args... into `a` (checked by eval_check). */
static int
argv_eval(struct argv_buf *a, const char *sha, const struct tk_args *keys,
	  const struct tk_args *args)
{
	int nk = keys != NULL ? keys->n : 0;
	int na = args != NULL ? args->n : 0;
	int rc = argv_reserve(a, 3 + nk + na);

	if (rc != TKSHM_OK)
		return rc;
	a->n = 0;
	snprintf(a->nkeys, sizeof a->nkeys, "%d", nk);
	argv_push(a, "EVALSHA", 7);
	argv_push(a, sha, SHA_LEN);
	argv_push(a, a->nkeys, strlen(a->nkeys));
	argv_push_args(a, keys);
	argv_push_args(a, args);
	return TKSHM_OK;
}

/* ------------------------------------------------------------------------
 * The context's life
 * ---------------------------------------------------------------------- */

/* The exchange failed (C3): the context is freed and the next call makes
 * a new one.  TKSHM_EUNAVAILABLE, or TKSHM_ENOMEM when hiredis ran out of
 * memory. */
static int
drop(struct tk_node *c, const char *what)
{
	int rc = c->ctx->err == REDIS_ERR_OOM ? TKSHM_ENOMEM :
						TKSHM_EUNAVAILABLE;

	snprintf(c->err, sizeof c->err, "%s: %s", what, c->ctx->errstr);
	redisFree(c->ctx);
	c->ctx = NULL;
	return rc;
}

/* Redis refused a step of the handshake: the context is freed too. */
static int
refused(struct tk_node *c, const char *what, const redisReply *r)
{
	if (r->type == REDIS_REPLY_ERROR)
		snprintf(c->err, sizeof c->err, "%s: %.*s", what,
			 r->len > 150 ? 150 : (int)r->len, r->str);
	else
		snprintf(c->err, sizeof c->err, "%s: unexpected reply type %d",
			 what, r->type);
	redisFree(c->ctx);
	c->ctx = NULL;
	return TKSHM_EREDIS;
}

/* Keeps the sha1 a SCRIPT LOAD answered, or refuses it. */
static int
take_sha(struct tk_node *c, enum tk_script_id id, redisReply *r)
{
	int rc = TKSHM_OK;

	if (r->type == REDIS_REPLY_STRING && r->len == SHA_LEN)
		memcpy(c->sha[id], r->str, SHA_LEN + 1);
	else
		rc = refused(c, tk_script_name(id), r);
	freeReplyObject(r);
	return rc;
}

/* AUTH, SELECT and every SCRIPT LOAD in one round trip.  (Appending only
 * fills the output buffer; its one failure, out of memory, sets err.) */
static int
handshake(struct tk_node *c)
{
	const struct tk_redis_conf *f = &c->conf;
	const char *step[2]; /* AUTH and SELECT, when configured */
	int steps = 0, scripts = f->plain ? 0 : TK_SCRIPT_COUNT;
	char db[24];

	if (f->password[0] != '\0') {
		const char *user[3] = { "AUTH", f->username, f->password };
		const char *pass[2] = { "AUTH", f->password };

		if (f->username[0] != '\0')
			redisAppendCommandArgv(c->ctx, 3, user, NULL);
		else
			redisAppendCommandArgv(c->ctx, 2, pass, NULL);
		step[steps++] = "AUTH";
	}
	if (f->db != 0) {
		const char *select[2] = { "SELECT", db };

		snprintf(db, sizeof db, "%d", f->db);
		redisAppendCommandArgv(c->ctx, 2, select, NULL);
		step[steps++] = "SELECT";
	}
	for (int id = 0; id < scripts; id++) {
		const char *load[3] = { "SCRIPT", "LOAD",
					tk_script_source(
						(enum tk_script_id)id) };

		redisAppendCommandArgv(c->ctx, 3, load, NULL);
	}
	if (c->ctx->err != 0)
		return drop(c, "connect");
	for (int i = 0; i < steps + scripts; i++) {
		redisReply *r = next_reply(c);
		int rc = TKSHM_OK;

		if (r == NULL)
			return drop(c, "connect");
		if (i >= steps) {
			rc = take_sha(c, (enum tk_script_id)(i - steps), r);
		} else {
			if (r->type == REDIS_REPLY_ERROR)
				rc = refused(c, step[i], r);
			freeReplyObject(r);
		}
		if (rc != TKSHM_OK)
			return rc;
	}
	return TKSHM_OK;
}

/* Every exchange goes through poll() (C4): the socket is made
 * non-blocking, and hiredis is told so (its reads and writes then take
 * EAGAIN as "not yet"). */
static bool
nonblocking(struct tk_node *c)
{
	int fl = fcntl(c->ctx->fd, F_GETFL);

	if (fl < 0 || fcntl(c->ctx->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		fail_ctx(c, REDIS_ERR_IO, strerror(errno));
		return false;
	}
	c->ctx->flags &= ~REDIS_BLOCK;
	return true;
}

static int
connect_now(struct tk_node *c)
{
	const struct tk_redis_conf *f = &c->conf;
	struct timeval ct = timeval_of(f->connect_timeout_ms);
	bool local = f->unix_path[0] != '\0';
	/* C4: connecting (TCP, AUTH, SELECT, the SCRIPT LOADs) ends within
	 * the connect timeout. */
	double deadline = tk_mono_ms() + f->connect_timeout_ms;
	int rc;

	c->ctx = local ? redisConnectUnixWithTimeout(f->unix_path, ct) :
			 redisConnectWithTimeout(f->host, f->port, ct);
	if (c->ctx == NULL) {
		snprintf(c->err, sizeof c->err, "connect: out of memory");
		return TKSHM_ENOMEM;
	}
	if (c->ctx->err != 0)
		return drop(c, "connect");
	/* Keepalive finds a peer that vanished without a word (a host
	 * that lost power) on an idle connection. */
	if (!local && redisEnableKeepAlive(c->ctx) != REDIS_OK)
		return drop(c, "connect");
	if (!nonblocking(c))
		return drop(c, "connect");
	bound_reader(c);
	c->deadline = deadline;
	if ((rc = handshake(c)) != TKSHM_OK)
		return rc;
	c->stats.connects++;
	return TKSHM_OK;
}

/* C1: the connection and counters of another process are not ours. */
static void
claim(struct tk_node *c)
{
	pid_t me = getpid();

	if (c->pid == me)
		return;
	if (c->ctx != NULL) {
		redisFree(c->ctx);
		c->ctx = NULL;
	}
	memset(&c->stats, 0, sizeof c->stats);
	c->pid = me;
}

/* Connected (within the connect timeout, when it had to connect), with
 * the call's deadline set (C4): one command timeout from now. */
static int
ensure(struct tk_node *c)
{
	int rc;

	if (c->ctx == NULL && (rc = connect_now(c)) != TKSHM_OK)
		return rc;
	c->deadline = tk_mono_ms() + c->conf.command_timeout_ms;
	return TKSHM_OK;
}

/* SCRIPT LOAD after a NOSCRIPT reply (C2). */
static int
reload(struct tk_node *c, enum tk_script_id id)
{
	const char *v[3] = { "SCRIPT", "LOAD", tk_script_source(id) };
	redisReply *r;

	c->stats.noscript_reloads++;
	if ((r = exchange(c, 3, v, NULL)) == NULL)
		return drop(c, "SCRIPT LOAD");
	return take_sha(c, id, r);
}

/* ------------------------------------------------------------------------
 * The interface
 * ---------------------------------------------------------------------- */

void
tk_redis_conf_init(struct tk_redis_conf *c)
{
	memset(c, 0, sizeof *c);
	snprintf(c->host, sizeof c->host, "127.0.0.1");
	c->port = 6379;
	c->connect_timeout_ms = 200;
	c->command_timeout_ms = 100;
}

int
tk_node_new(const struct tk_redis_conf *conf, struct tk_node **out)
{
	struct tk_node *c;

	if (out == NULL)
		return TKSHM_ENULL;
	*out = NULL;
	if (conf == NULL)
		return TKSHM_ENULL;
	if (!terminated(conf->host, sizeof conf->host) ||
	    !terminated(conf->unix_path, sizeof conf->unix_path) ||
	    !terminated(conf->username, sizeof conf->username) ||
	    !terminated(conf->password, sizeof conf->password))
		return TKSHM_EINVAL;
	if (conf->unix_path[0] == '\0' &&
	    (conf->host[0] == '\0' || conf->port < 1 || conf->port > 65535))
		return TKSHM_EINVAL;
	if (conf->db < 0 || !timeout_ok(conf->connect_timeout_ms) ||
	    !timeout_ok(conf->command_timeout_ms))
		return TKSHM_EINVAL;
	/* A script without source is a broken build: say so now rather
	 * than at the first connect. */
	for (int id = 0; id < TK_SCRIPT_COUNT; id++)
		if (tk_script_source((enum tk_script_id)id) == NULL)
			return TKSHM_EINVAL;
	if ((c = calloc(1, sizeof *c)) == NULL)
		return TKSHM_ENOMEM;
	c->conf = *conf;
	c->pid = getpid();
	*out = c;
	return TKSHM_OK;
}

void
tk_node_free(struct tk_node *c)
{
	if (c == NULL)
		return;
	/* In a child that inherited the context this closes the child's
	 * copy of the socket only. */
	if (c->ctx != NULL)
		redisFree(c->ctx);
	free(c);
}

int
tk_node_ready(struct tk_node *c)
{
	if (c == NULL)
		return TKSHM_ENULL;
	claim(c);
	return ensure(c);
}

/* ASKING before a command sent to the node a slot is moving to: it
 * covers exactly the next command (Redis Cluster's ASK redirection). */
static int
asking(struct tk_node *c)
{
	const char *v[1] = { "ASKING" };
	redisReply *r = exchange(c, 1, v, NULL);

	if (r == NULL)
		return drop(c, "ASKING");
	freeReplyObject(r);
	return TKSHM_OK;
}

int
tk_node_eval(struct tk_node *c, enum tk_script_id id,
	     const struct tk_args *keys, const struct tk_args *args, bool ask,
	     redisReply **reply, char *errbuf, size_t errlen)
{
	struct argv_buf a;
	redisReply *r = NULL;
	int rc;

	if (reply != NULL)
		*reply = NULL;
	if (c == NULL || reply == NULL)
		return TKSHM_ENULL;
	if ((unsigned)id >= TK_SCRIPT_COUNT)
		return TKSHM_EINVAL;
	if ((rc = eval_check(keys, args)) != TKSHM_OK)
		return rc;
	claim(c);
	c->stats.calls++;
	c->err[0] = '\0';
	argv_init(&a);
	if ((rc = ensure(c)) != TKSHM_OK)
		goto out;
	for (int attempt = 0; attempt < 2; attempt++) {
		if ((rc = argv_eval(&a, c->sha[id], keys, args)) != TKSHM_OK)
			goto out;
		if (ask && (rc = asking(c)) != TKSHM_OK)
			goto out;
		if ((r = exchange(c, a.n, a.v, a.len)) == NULL) {
			rc = drop(c, "EVALSHA");
			goto out;
		}
		if (!is_noscript(r) || attempt == 1)
			break;
		/* C2: the script did not run; load it and send once more. */
		freeReplyObject(r);
		r = NULL;
		if ((rc = reload(c, id)) != TKSHM_OK)
			goto out;
	}
	if (r->type == REDIS_REPLY_ERROR) {
		snprintf(c->err, sizeof c->err, "%.*s",
			 r->len > 250 ? 250 : (int)r->len, r->str);
		freeReplyObject(r);
		rc = TKSHM_EREDIS;
		goto out;
	}
	*reply = r;
out:
	argv_free(&a);
	if (rc != TKSHM_OK) {
		c->stats.errors++;
		copy_err(c, errbuf, errlen);
	}
	return rc;
}

/* Appends the commands whose slot in `replies` is `mark` (NULL: all). */
static int
append_evals(struct tk_node *c, enum tk_script_id id, size_t n,
	     const struct tk_args *keys, const struct tk_args *args,
	     redisReply **replies, const redisReply *mark)
{
	struct argv_buf a;
	int rc = TKSHM_OK;

	argv_init(&a);
	for (size_t i = 0; i < n && rc == TKSHM_OK; i++) {
		if (replies[i] != mark)
			continue;
		rc = argv_eval(&a, c->sha[id], keys ? &keys[i] : NULL,
			       args ? &args[i] : NULL);
		if (rc == TKSHM_OK &&
		    redisAppendCommandArgv(c->ctx, a.n, a.v, a.len) != REDIS_OK)
			rc = TKSHM_ENOMEM;
	}
	argv_free(&a);
	if (rc != TKSHM_OK) {
		/* Nothing was sent, but the output buffer holds part of
		 * the pipeline: this context cannot be used again. */
		snprintf(c->err, sizeof c->err, "EVALSHA: out of memory");
		redisFree(c->ctx);
		c->ctx = NULL;
	}
	return rc;
}

/* Reads the replies of the slots holding `mark`: a good reply is kept, a
 * NOSCRIPT one becomes &noscript_mark (when `resend`), any other error
 * reply NULL.  Stops at a failed read (the rest stays as it was). */
static int
read_evals(struct tk_node *c, size_t n, redisReply **replies,
	   const redisReply *mark, bool resend, size_t *waiting,
	   char (*errs)[TK_NODE_ERR_LEN])
{
	*waiting = 0;
	for (size_t i = 0; i < n; i++) {
		redisReply *r;

		if (replies[i] != mark)
			continue;
		if ((r = next_reply(c)) == NULL)
			return drop(c, "EVALSHA");
		if (resend && is_noscript(r)) {
			replies[i] = &noscript_mark;
			(*waiting)++;
		} else if (r->type == REDIS_REPLY_ERROR) {
			replies[i] = NULL;
			c->stats.errors++;
			snprintf(c->err, sizeof c->err, "%.*s",
				 r->len > 250 ? 250 : (int)r->len, r->str);
			if (errs)
				copy_text(errs[i], TK_NODE_ERR_LEN, r->str,
					  r->len);
		} else {
			replies[i] = r;
		}
		if (r != replies[i])
			freeReplyObject(r);
	}
	return TKSHM_OK;
}

/* Slots still holding `mark` got no answer: NULL, and counted. */
static void
unanswered(struct tk_node *c, size_t n, redisReply **replies,
	   const redisReply *mark)
{
	for (size_t i = 0; i < n; i++) {
		if (replies[i] == mark) {
			replies[i] = NULL;
			c->stats.errors++;
		}
	}
}

int
tk_node_eval_many(struct tk_node *c, enum tk_script_id id, size_t n,
		  const struct tk_args *keys, const struct tk_args *args,
		  redisReply **replies, char (*errs)[TK_NODE_ERR_LEN])
{
	redisReply *const sent = &sent_mark;
	size_t waiting;
	int rc;

	if (c == NULL || (replies == NULL && n > 0))
		return TKSHM_ENULL;
	if ((unsigned)id >= TK_SCRIPT_COUNT)
		return TKSHM_EINVAL;
	for (size_t i = 0; i < n; i++) {
		replies[i] = NULL;
		if (errs)
			errs[i][0] = '\0';
		rc = eval_check(keys ? &keys[i] : NULL, args ? &args[i] : NULL);
		if (rc != TKSHM_OK)
			return rc;
	}
	if (n == 0)
		return TKSHM_OK;
	claim(c);
	c->stats.calls += n;
	c->err[0] = '\0';
	for (size_t i = 0; i < n; i++)
		replies[i] = sent;
	if ((rc = ensure(c)) != TKSHM_OK ||
	    (rc = append_evals(c, id, n, keys, args, replies, sent)) !=
		    TKSHM_OK ||
	    (rc = read_evals(c, n, replies, sent, true, &waiting, errs)) !=
		    TKSHM_OK)
		goto out;
	if (waiting == 0)
		goto out;
	/* C2: only the commands answered NOSCRIPT did not run; load the
	 * script once and send those again, pipelined. */
	if ((rc = reload(c, id)) == TKSHM_EREDIS) {
		/* Redis refused the script: NOSCRIPT stays those commands'
		 * (error) answer, and every command got one. */
		rc = TKSHM_OK;
		goto out;
	}
	if (rc != TKSHM_OK || (rc = append_evals(c, id, n, keys, args, replies,
						 &noscript_mark)) != TKSHM_OK)
		goto out;
	rc = read_evals(c, n, replies, &noscript_mark, false, &waiting, errs);
out:
	unanswered(c, n, replies, sent);
	unanswered(c, n, replies, &noscript_mark);
	return rc;
}

int
tk_node_command(struct tk_node *c, const struct tk_args *argv,
		redisReply **reply, char *errbuf, size_t errlen)
{
	struct argv_buf a;
	long long n = 0;
	redisReply *r;
	int rc;

	if (reply != NULL)
		*reply = NULL;
	if (c == NULL || argv == NULL || reply == NULL)
		return TKSHM_ENULL;
	if ((rc = args_check(argv, &n)) != TKSHM_OK)
		return rc;
	if (n == 0)
		return TKSHM_EINVAL;
	claim(c);
	c->stats.calls++;
	argv_init(&a);
	if ((rc = ensure(c)) != TKSHM_OK ||
	    (rc = argv_reserve(&a, argv->n)) != TKSHM_OK)
		goto out;
	argv_push_args(&a, argv);
	if ((r = exchange(c, a.n, a.v, a.len)) == NULL) {
		rc = drop(c, "command");
	} else if (r->type == REDIS_REPLY_ERROR) {
		snprintf(c->err, sizeof c->err, "%.*s",
			 r->len > 250 ? 250 : (int)r->len, r->str);
		freeReplyObject(r);
		rc = TKSHM_EREDIS;
	} else {
		*reply = r;
	}
out:
	argv_free(&a);
	if (rc != TKSHM_OK) {
		c->stats.errors++;
		copy_err(c, errbuf, errlen);
	}
	return rc;
}

void
tk_node_last_error(const struct tk_node *c, char *buf, size_t len)
{
	if (c == NULL || c->pid != getpid())
		copy_text(buf, len, "", 0);
	else
		copy_err(c, buf, len);
}

void
tk_node_stats_get(const struct tk_node *c, struct tk_conn_stats *out)
{
	if (out == NULL)
		return;
	memset(out, 0, sizeof *out);
	/* A forked child that has not used the connection yet has no
	 * counters of its own (C1). */
	if (c != NULL && c->pid == getpid())
		*out = c->stats;
}

int
tk_node_retarget(struct tk_node *c, const char *host, int port)
{
	if (c == NULL || host == NULL)
		return TKSHM_ENULL;
	if (strlen(host) >= sizeof c->conf.host || port < 1 || port > 65535)
		return TKSHM_EINVAL;
	if (strcmp(c->conf.host, host) == 0 && c->conf.port == port)
		return TKSHM_OK;
	tk_node_drop(c);
	snprintf(c->conf.host, sizeof c->conf.host, "%s", host);
	c->conf.port = port;
	return TKSHM_OK;
}

void
tk_node_drop(struct tk_node *c)
{
	if (c == NULL)
		return;
	claim(c);
	if (c->ctx != NULL) {
		redisFree(c->ctx);
		c->ctx = NULL;
	}
}
