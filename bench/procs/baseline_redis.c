/*
 * baseline_redis.c - redis-server's lifecycle and the redis-strict client
 * (see baseline_redis.h).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baseline_redis.h"
#include "cleanup.h"
#include "tsc.h"

#if TKSHM_PROCS_HIREDIS
#include <hiredis/hiredis.h>

#include "algorithms/decision.h"

/*
 * GCRA as ThrottleKit computes it, in Lua (Redis runs Lua 5.1: every number
 * is an IEEE-754 double, so the arithmetic is the C transition's, step for
 * step):
 *   T = periodMs / limit, tau = T * burst, tat = stored TAT or now,
 *   tatEff = max(tat, now), newTat = tatEff + T * cost,
 *   allow iff now >= newTat - tau (and cost <= burst, as tkshm refuses).
 * A denial writes nothing.  An admission stores newTat with 17 significant
 * digits (exactly the double again) and expires it when it would be idle.
 * KEYS[1] the key; ARGV now, limit, periodMs, burst, cost.  Returns
 * {allowed, remaining, resetAt, retryAfterMs}, whole numbers.
 */
static const char redis_gcra_lua[] =
	"local now = tonumber(ARGV[1])\n"
	"local burst = tonumber(ARGV[4])\n"
	"local cost = tonumber(ARGV[5])\n"
	"local T = tonumber(ARGV[3]) / tonumber(ARGV[2])\n"
	"local tau = T * burst\n"
	"local stored = redis.call('GET', KEYS[1])\n"
	"local tat = now\n"
	"if stored then tat = tonumber(stored) end\n"
	"local tat_eff = tat\n"
	"if now > tat_eff then tat_eff = now end\n"
	"local new_tat = tat_eff + T * cost\n"
	"local allow_at = new_tat - tau\n"
	"if now < allow_at or cost > burst then\n"
	"  local rem = math.floor((tau - (tat_eff - now)) / T)\n"
	"  if rem < 0 then rem = 0 end\n"
	"  local retry = math.ceil(allow_at - now)\n"
	"  if retry < 1 then retry = 1 end\n"
	"  return {0, rem, math.ceil(tat_eff), retry}\n"
	"end\n"
	"local rem = math.floor((tau - (new_tat - now)) / T)\n"
	"if rem < 0 then rem = 0 end\n"
	"redis.call('SET', KEYS[1], string.format('%.17g', new_tat))\n"
	"redis.call('PEXPIRE', KEYS[1], math.ceil(new_tat - now))\n"
	"return {1, rem, math.ceil(new_tat), 0}\n";

struct redis_client {
	redisContext *ctx;
	char sha[48];
	char limit[32], period[32], burst[32];
	int64_t burst_field;
	char error[256];
};

/* SCRIPT LOAD; the sha goes into c->sha.  0 or -1 (c->error says why). */
static int
redis_load(struct redis_client *c)
{
	redisReply *r = redisCommand(c->ctx, "SCRIPT LOAD %s", redis_gcra_lua);

	if (!r) {
		snprintf(c->error, sizeof c->error, "SCRIPT LOAD: %s",
			 c->ctx->errstr);
		return -1;
	}
	if (r->type != REDIS_REPLY_STRING || r->len >= (int)sizeof c->sha) {
		snprintf(c->error, sizeof c->error, "SCRIPT LOAD: %s",
			 r->type == REDIS_REPLY_ERROR ? r->str :
							"unexpected reply");
		freeReplyObject(r);
		return -1;
	}
	memcpy(c->sha, r->str, (size_t)r->len);
	c->sha[r->len] = '\0';
	freeReplyObject(r);
	return 0;
}

int
redis_client_open(int port, const tkshm_policy *policy,
		  struct redis_client **out, char *err, size_t err_len)
{
	struct timeval tv = { 2, 0 };
	struct redis_client *c;

	if (!policy || policy->kind != TKSHM_KIND_GCRA) {
		snprintf(err, err_len, "redis-strict runs GCRA only");
		return TKSHM_EPOLICY;
	}
	c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, err_len, "out of memory");
		return TKSHM_ENOMEM;
	}
	c->ctx = redisConnectWithTimeout("127.0.0.1", port, tv);
	if (!c->ctx || c->ctx->err) {
		snprintf(err, err_len, "connect to 127.0.0.1:%d: %s", port,
			 c->ctx ? c->ctx->errstr : "out of memory");
		redis_client_close(c);
		return TKSHM_ESYSTEM;
	}
	/* %.17g: the policy's doubles reach Lua's tonumber exactly. */
	snprintf(c->limit, sizeof c->limit, "%.17g", policy->u.gcra.limit);
	snprintf(c->period, sizeof c->period, "%.17g",
		 policy->u.gcra.period_ms);
	snprintf(c->burst, sizeof c->burst, "%.17g", policy->u.gcra.burst);
	c->burst_field = tk_field(policy->u.gcra.burst);
	if (redis_load(c) != 0) {
		snprintf(err, err_len, "%s", c->error);
		redis_client_close(c);
		return TKSHM_ESYSTEM;
	}
	*out = c;
	return TKSHM_OK;
}

static bool
redis_reply_is_decision(const redisReply *r)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 4)
		return false;
	for (size_t i = 0; i < 4; i++)
		if (r->element[i]->type != REDIS_REPLY_INTEGER)
			return false;
	return true;
}

int
redis_client_check(struct redis_client *c, const void *key, size_t key_len,
		   double cost, double now_ms, tkshm_decision *out)
{
	char now[32], cst[32];
	const char *argv[9] = { "EVALSHA", c->sha,    "1",	key, now,
				c->limit,  c->period, c->burst, cst };
	size_t lens[9];
	redisReply *r;

	snprintf(now, sizeof now, "%.17g", now_ms);
	snprintf(cst, sizeof cst, "%.17g", cost);
	for (int i = 0; i < 9; i++)
		lens[i] = strlen(argv[i]);
	lens[3] = key_len;
	for (int attempt = 0;; attempt++) {
		r = redisCommandArgv(c->ctx, 9, argv, lens);
		if (!r) {
			snprintf(c->error, sizeof c->error, "EVALSHA: %s",
				 c->ctx->errstr);
			return TKSHM_ESYSTEM;
		}
		/* A server restarted or flushed (SCRIPT FLUSH) forgets
		 * scripts: load it again, once. */
		if (attempt == 0 && r->type == REDIS_REPLY_ERROR &&
		    strncmp(r->str, "NOSCRIPT", 8) == 0) {
			freeReplyObject(r);
			if (redis_load(c) != 0)
				return TKSHM_ESYSTEM;
			argv[1] = c->sha;
			lens[1] = strlen(c->sha);
			continue;
		}
		break;
	}
	if (!redis_reply_is_decision(r)) {
		snprintf(c->error, sizeof c->error, "EVALSHA: %s",
			 r->type == REDIS_REPLY_ERROR ? r->str :
							"unexpected reply");
		freeReplyObject(r);
		return TKSHM_ESYSTEM;
	}
	out->allowed = r->element[0]->integer != 0;
	out->limit = c->burst_field;
	out->remaining = r->element[1]->integer;
	out->reset_at = r->element[2]->integer;
	out->retry_after_ms = r->element[3]->integer;
	out->flags = 0;
	freeReplyObject(r);
	return TKSHM_OK;
}

const char *
redis_client_error(const struct redis_client *c)
{
	return c->error;
}

void
redis_client_close(struct redis_client *c)
{
	if (!c)
		return;
	if (c->ctx)
		redisFree(c->ctx);
	free(c);
}

/* PING until PONG or the deadline. */
static bool
redis_ping(int port)
{
	struct timeval tv = { 0, 200000 };
	redisContext *ctx = redisConnectWithTimeout("127.0.0.1", port, tv);
	redisReply *r;
	bool ok;

	if (!ctx)
		return false;
	if (ctx->err) {
		redisFree(ctx);
		return false;
	}
	r = redisCommand(ctx, "PING");
	ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
	if (r)
		freeReplyObject(r);
	redisFree(ctx);
	return ok;
}

/* A port nobody listens on now: bind port 0 and read what the kernel
 * chose.  (Another process could take it before redis-server does; the
 * start then fails and says so.) */
static int
redis_free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* True when `prog` is an executable file in a directory of PATH. */
static bool
redis_on_path(const char *prog)
{
	const char *path = getenv("PATH");
	char dir[PATH_MAX], full[PATH_MAX + 64];

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (n > 0 && n < sizeof dir) {
			memcpy(dir, path, n);
			dir[n] = '\0';
			snprintf(full, sizeof full, "%s/%s", dir, prog);
			if (access(full, X_OK) == 0)
				return true;
		}
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

int
redis_server_start(struct redis_server *s, char *why, size_t why_len)
{
	char port[16], log[128];
	pid_t parent = getpid();
	double deadline;

	memset(s, 0, sizeof *s);
	if (!redis_on_path("redis-server")) {
		snprintf(why, why_len,
			 "redis-server not found on PATH (install "
			 "redis-server: scripts/install-deps.sh bench)");
		return 1;
	}
	snprintf(s->dir, sizeof s->dir, "/tmp/tkshm-redis.XXXXXX");
	if (!mkdtemp(s->dir)) {
		snprintf(why, why_len, "mkdtemp: %s", strerror(errno));
		s->dir[0] = '\0';
		return -1;
	}
	s->port = redis_free_port();
	if (s->port < 0) {
		snprintf(why, why_len, "no free port: %s", strerror(errno));
		redis_server_stop(s);
		return -1;
	}
	snprintf(port, sizeof port, "%d", s->port);
	snprintf(log, sizeof log, "%s/redis.log", s->dir);
	s->pid = fork();
	if (s->pid < 0) {
		s->pid = 0;
		snprintf(why, why_len, "fork: %s", strerror(errno));
		redis_server_stop(s);
		return -1;
	}
	if (s->pid == 0) {
		cleanup_child(parent);
		execlp("redis-server", "redis-server", "--port", port, "--bind",
		       "127.0.0.1", "--save", "", "--appendonly", "no",
		       "--daemonize", "no", "--dir", s->dir, "--logfile", log,
		       (char *)NULL);
		_exit(127);
	}
	cleanup_add_pid(s->pid);
	deadline = mono_seconds() + 5;
	while (!redis_ping(s->port)) {
		int st;

		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			cleanup_forget_pid(s->pid);
			s->pid = 0;
			snprintf(why, why_len,
				 "redis-server exited at start (see %s)", log);
			redis_server_stop(s);
			return -1;
		}
		if (mono_seconds() > deadline) {
			snprintf(why, why_len,
				 "redis-server did not answer PING on port %d "
				 "within 5 s",
				 s->port);
			redis_server_stop(s);
			return -1;
		}
		sleep_seconds(0.01);
	}
	return 0;
}
#else /* !TKSHM_PROCS_HIREDIS */
struct redis_client {
	int unused;
};

int
redis_server_start(struct redis_server *s, char *why, size_t why_len)
{
	memset(s, 0, sizeof *s);
	snprintf(why, why_len,
		 "built without hiredis (install libhiredis-dev: "
		 "scripts/install-deps.sh bench, and reconfigure)");
	return 1;
}

int
redis_client_open(int port, const tkshm_policy *policy,
		  struct redis_client **out, char *err, size_t err_len)
{
	(void)port;
	(void)policy;
	(void)out;
	snprintf(err, err_len, "built without hiredis");
	return TKSHM_ESYSTEM;
}

int
redis_client_check(struct redis_client *c, const void *key, size_t key_len,
		   double cost, double now_ms, tkshm_decision *out)
{
	(void)c;
	(void)key;
	(void)key_len;
	(void)cost;
	(void)now_ms;
	(void)out;
	return TKSHM_ESYSTEM;
}

const char *
redis_client_error(const struct redis_client *c)
{
	(void)c;
	return "built without hiredis";
}

void
redis_client_close(struct redis_client *c)
{
	(void)c;
}
#endif

/* Removes the files redis-server left in its directory, then the
 * directory (one level: it writes none deeper). */
static void
redis_remove_dir(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

void
redis_server_stop(struct redis_server *s)
{
	if (s->pid > 0) {
		double deadline = mono_seconds() + 2;
		int st;

		kill(s->pid, SIGTERM);
		while (waitpid(s->pid, &st, WNOHANG) == 0) {
			if (mono_seconds() > deadline) {
				kill(s->pid, SIGKILL);
				waitpid(s->pid, &st, 0);
				break;
			}
			sleep_seconds(0.005);
		}
		cleanup_forget_pid(s->pid);
		s->pid = 0;
	}
	if (s->dir[0]) {
		redis_remove_dir(s->dir);
		s->dir[0] = '\0';
	}
}
