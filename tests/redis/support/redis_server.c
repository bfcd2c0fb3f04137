/*
 * redis_server.c - a private redis-server for one test (redis_server.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_support.h"
#include "tkshm_redis.h"
#include "redis_server.h"

/* How long a server may take to answer its first PING. */
#define START_WAIT_S 10.0
/* Ports tried before giving up (each one taken by someone else). */
#define START_TRIES   20
#define CTL_TIMEOUT_S 5
#define ARGS_MAX      64
/* A cluster node's bus port is port + BUS_OFFSET, which Redis wants below
 * 65536; ours stay below 55536, so node ports stay below BUS_PORT_MAX. */
#define BUS_OFFSET   10000
#define BUS_PORT_MAX 45536
#define LOG_TAIL     30

/* The directories a start sweeps (tkt_redis_mkdir). */
static const char *const dir_prefixes[] = { "tkt-redis-", "tkt-cluster-",
					    "tkt-sentinel-" };

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ------------------------------------------------------------------------
 * Ports
 * ---------------------------------------------------------------------- */

static unsigned
next_random(void)
{
	static unsigned long long state;
	struct timespec ts;

	if (state == 0) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		state = ((unsigned long long)getpid() << 32) ^
			(unsigned long long)ts.tv_nsec ^ 0x9e3779b97f4a7c15ULL;
	}
	/* xorshift64 */
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return (unsigned)(state >> 16);
}

/* The candidate range: below the kernel's ephemeral ports when there is
 * room, above them otherwise (a client socket never holds these); for a
 * cluster node, its bus port in the range too. */
static void
port_range(bool bus, int *lo, int *hi)
{
	int eph_lo = 32768, eph_hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f != NULL) {
		if (fscanf(f, "%d %d", &eph_lo, &eph_hi) != 2) {
			eph_lo = 32768;
			eph_hi = 60999;
		}
		fclose(f);
	}
	if (eph_lo - 10000 >= 2000) {
		*lo = 10000;
		*hi = eph_lo;
	} else {
		*lo = eph_hi + 1;
		*hi = 65536;
	}
	if (bus) {
		*hi -= BUS_OFFSET;
		if (*hi > BUS_PORT_MAX)
			*hi = BUS_PORT_MAX;
		/* No room: bind() still tells what is free now. */
		if (*hi - *lo < 2000) {
			*lo = 10000;
			*hi = BUS_PORT_MAX;
		}
	}
}

static int
bind_loopback(int port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool
port_free(int port)
{
	int fd = bind_loopback(port);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* A port (and bus port) nothing is bound to right now.  Someone may take
 * it before the server binds it, our own next server too: the server
 * then exits and the start retries. */
static int
pick_port(bool bus)
{
	int lo, hi;

	port_range(bus, &lo, &hi);
	for (int i = 0; i < 1000; i++) {
		int port = lo + (int)(next_random() % (unsigned)(hi - lo));

		if (port_free(port) && (!bus || port_free(port + BUS_OFFSET)))
			return port;
	}
	fail_msg("no free TCP port in [%d, %d)", lo, hi);
	return -1;
}

int
tkt_redis_refusing_port(int *holder)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	int fd = bind_loopback(0);

	if (fd < 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		fail_msg("binding a refusing port: %s", strerror(errno));
	*holder = fd;
	return ntohs(a.sin_port);
}

/* ------------------------------------------------------------------------
 * The server process
 * ---------------------------------------------------------------------- */

pid_t
tkt_redis_exec(const char *const *argv, const char *dir, const char *log)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		sigset_t none;
		int fd;

		/* A test that crashes takes its server with it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		/* exec keeps the mask and ignored signals: undo what the
		 * test may have set (tkt_proc_start ignores SIGPIPE). */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		/* Nor may it keep the test's other descriptors: a pipe to a
		 * child the test waits on would never reach EOF. */
		close_range(3, ~0U, 0);
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0)
			dup2(fd, STDIN_FILENO);
		if (chdir(dir) != 0)
			_exit(127);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static pid_t
spawn(struct tkt_redis *r)
{
	char port[16], log[96], conf[160];
	const char *argv[ARGS_MAX + 32];
	int n = 0;

	snprintf(port, sizeof port, "%d", r->port);
	snprintf(log, sizeof log, "%s/redis.log", r->dir);
	argv[n++] = TKSHM_REDIS_SERVER;
	if (r->conf != NULL) {
		snprintf(conf, sizeof conf, "%s/%s", r->dir, r->conf);
		argv[n++] = conf;
	}
	argv[n++] = "--port";
	argv[n++] = port;
	argv[n++] = "--bind";
	argv[n++] = "127.0.0.1";
	argv[n++] = "--dir";
	argv[n++] = r->dir;
	argv[n++] = "--save";
	argv[n++] = "";
	argv[n++] = "--appendonly";
	argv[n++] = "no";
	argv[n++] = "--daemonize";
	argv[n++] = "no";
	argv[n++] = "--unixsocket";
	argv[n++] = r->unix_path;
	argv[n++] = "--unixsocketperm";
	argv[n++] = "700";
	argv[n++] = "--enable-debug-command";
	argv[n++] = "local";
	argv[n++] = "--loglevel";
	argv[n++] = "warning";
	if (r->cluster) {
		argv[n++] = "--cluster-enabled";
		argv[n++] = "yes";
		argv[n++] = "--cluster-config-file";
		argv[n++] = "nodes.conf";
	}
	for (int i = 0; r->args != NULL && r->args[i] != NULL; i++) {
		if (i == ARGS_MAX)
			fail_msg("more than %d extra server arguments",
				 ARGS_MAX);
		argv[n++] = r->args[i];
	}
	argv[n] = NULL;
	return tkt_redis_exec(argv, r->dir, log);
}

/* A connection to the server's unix socket; NULL when there is none
 * (failing the test instead when `must`). */
static redisContext *
connect_unix(const struct tkt_redis *r, long timeout_ms, bool must)
{
	const struct timeval tv = { timeout_ms / 1000,
				    (timeout_ms % 1000) * 1000 };
	redisContext *c = redisConnectUnixWithTimeout(r->unix_path, tv);

	if (c != NULL && c->err == 0 && redisSetTimeout(c, tv) == 0)
		return c;
	if (must)
		fail_msg("connecting to %s: %s", r->unix_path,
			 c != NULL ? c->errstr : "out of memory");
	if (c != NULL)
		redisFree(c);
	return NULL;
}

/* True once our server answers PING on its unix socket; false when it
 * exited first (its port was taken) or did not answer within the wait. */
static bool
wait_ready(struct tkt_redis *r)
{
	double deadline = tkt_seconds() + START_WAIT_S;

	while (tkt_seconds() < deadline) {
		int status;
		redisReply *p;
		bool up;

		if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
			r->pid = 0;
			return false;
		}
		p = tkt_redis_try(r, 200, "PING");
		up = p != NULL && p->type == REDIS_REPLY_STATUS &&
		     strcmp(p->str, "PONG") == 0;
		if (p != NULL)
			freeReplyObject(p);
		if (up)
			return true;
		sleep_ms(5);
	}
	return false;
}

static void
reap(struct tkt_redis *r)
{
	int status;

	while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR)
		;
	r->pid = 0;
}

void
tkt_redis_rmdir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX];
	struct stat st;

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			tkt_redis_rmdir(path);
		else
			unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

void
tkt_redis_show_file(const char *path, const char *label)
{
	char *lines[LOG_TAIL] = { 0 };
	char line[512];
	int next = 0;
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		free(lines[next]);
		lines[next] = strdup(line);
		next = (next + 1) % LOG_TAIL;
	}
	fclose(f);
	for (int i = 0; i < LOG_TAIL; i++) {
		char *l = lines[(next + i) % LOG_TAIL];

		if (l != NULL)
			fprintf(stderr, "%s: %s", label, l);
		free(l);
	}
}

void
tkt_redis_show_log(const struct tkt_redis *r)
{
	char path[96], label[32];

	if (r->dir[0] == '\0')
		return;
	snprintf(path, sizeof path, "%s/redis.log", r->dir);
	snprintf(label, sizeof label, "port %d", r->port);
	tkt_redis_show_file(path, label);
}

/* The owner file names the test process that made a directory, so a
 * later start can remove what a killed test (a ctest timeout) left. */
static void
write_owner(const char *dir)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/owner", dir);
	if ((f = fopen(path, "w")) != NULL) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
}

static bool
sweepable(const char *name)
{
	for (size_t i = 0; i < sizeof dir_prefixes / sizeof *dir_prefixes; i++)
		if (strncmp(name, dir_prefixes[i], strlen(dir_prefixes[i])) ==
		    0)
			return true;
	return false;
}

static void
sweep_dead_owners(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *e;
	char dir[PATH_MAX], path[PATH_MAX + 8];

	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		FILE *f;
		int pid = 0;

		if (!sweepable(e->d_name))
			continue;
		snprintf(dir, sizeof dir, "/tmp/%s", e->d_name);
		snprintf(path, sizeof path, "%s/owner", dir);
		if ((f = fopen(path, "r")) == NULL)
			continue; /* being made, or not ours to judge */
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
		if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)
			tkt_redis_rmdir(dir);
	}
	closedir(d);
}

void
tkt_redis_mkdir(char *dir, size_t size, const char *prefix)
{
	if (!sweepable(prefix))
		fail_msg("tkt_redis_mkdir: %s is not swept", prefix);
	sweep_dead_owners();
	snprintf(dir, size, "/tmp/%sXXXXXX", prefix);
	if (mkdtemp(dir) == NULL)
		fail_msg("mkdtemp: %s", strerror(errno));
	write_owner(dir);
}

void
tkt_redis_init(struct tkt_redis *r, const char *parent, const char *const *args)
{
	memset(r, 0, sizeof *r);
	r->owner = getpid();
	r->args = args;
	if (parent == NULL) {
		tkt_redis_mkdir(r->dir, sizeof r->dir, "tkt-redis-");
	} else {
		if ((size_t)snprintf(r->dir, sizeof r->dir, "%s/redis-XXXXXX",
				     parent) >= sizeof r->dir)
			fail_msg("%s: too long a directory", parent);
		if (mkdtemp(r->dir) == NULL)
			fail_msg("mkdtemp: %s", strerror(errno));
	}
	snprintf(r->unix_path, sizeof r->unix_path, "%s/redis.sock", r->dir);
}

bool
tkt_redis_run(struct tkt_redis *r)
{
	char nodes_conf[96];

	snprintf(nodes_conf, sizeof nodes_conf, "%s/nodes.conf", r->dir);
	for (int i = 0; i < START_TRIES; i++) {
		/* A node that failed on its bus port left its id and old
		 * port in nodes.conf. */
		if (r->cluster)
			unlink(nodes_conf);
		r->port = pick_port(r->cluster);
		r->pid = spawn(r);
		if (wait_ready(r))
			return true;
		if (r->pid != 0) {
			/* Alive but silent for START_WAIT_S: not a port
			 * clash; give up. */
			kill(r->pid, SIGKILL);
			reap(r);
			break;
		}
	}
	return false;
}

void
tkt_redis_start_args(struct tkt_redis *r, const char *const *args)
{
	tkt_redis_init(r, NULL, args);
	if (tkt_redis_run(r))
		return;
	tkt_redis_show_log(r);
	tkt_redis_stop(r);
	fail_msg("redis-server (%s) did not start", TKSHM_REDIS_SERVER);
}

void
tkt_redis_start(struct tkt_redis *r)
{
	tkt_redis_start_args(r, NULL);
}

static bool
mine(const struct tkt_redis *r)
{
	return r->owner == getpid() && r->dir[0] != '\0';
}

void
tkt_redis_stop_all(struct tkt_redis *rs, int n)
{
	double deadline = tkt_seconds() + 5.0;

	for (int i = 0; i < n; i++) {
		if (mine(&rs[i]) && rs[i].pid != 0) {
			kill(rs[i].pid, SIGCONT);
			kill(rs[i].pid, SIGTERM);
		}
	}
	for (int i = 0; i < n; i++) {
		struct tkt_redis *r = &rs[i];
		int status;
		pid_t got;

		if (!mine(r))
			continue;
		while (r->pid != 0 &&
		       (got = waitpid(r->pid, &status, WNOHANG)) != r->pid) {
			if (got < 0 && errno != EINTR)
				break;
			if (tkt_seconds() > deadline) {
				kill(r->pid, SIGKILL);
				reap(r);
				break;
			}
			sleep_ms(2);
		}
		r->pid = 0;
		tkt_redis_rmdir(r->dir);
		r->dir[0] = '\0';
	}
}

void
tkt_redis_stop(struct tkt_redis *r)
{
	tkt_redis_stop_all(r, 1);
}

struct tkt_redis tkt_srv;

int
tkt_redis_group_setup(void **state)
{
	(void)state;
	tkt_redis_start(&tkt_srv);
	return 0;
}

int
tkt_redis_group_teardown(void **state)
{
	tkt_redis_stop(&tkt_srv);
	return tkt_teardown(state);
}

void
tkt_redis_kill(struct tkt_redis *r)
{
	if (r->pid == 0)
		fail_msg("tkt_redis_kill: the server is not running");
	kill(r->pid, SIGKILL);
	reap(r);
}

void
tkt_redis_restart(struct tkt_redis *r)
{
	double deadline = tkt_seconds() + START_WAIT_S;

	if (r->pid != 0)
		fail_msg("tkt_redis_restart: the server is running");
	/* The port is ours (below the ephemeral range, nobody else's
	 * server was on it): a failure to bind can only be brief. */
	while (tkt_seconds() < deadline) {
		r->pid = spawn(r);
		if (wait_ready(r))
			return;
		if (r->pid != 0) {
			kill(r->pid, SIGKILL);
			reap(r);
			break;
		}
		sleep_ms(20);
	}
	tkt_redis_show_log(r);
	fail_msg("redis-server did not restart on port %d", r->port);
}

/* Waits until the server's state is `stopped` (true) or running again. */
static void
wait_state(struct tkt_redis *r, bool stopped)
{
	for (;;) {
		int status;
		pid_t got = waitpid(r->pid, &status,
				    stopped ? WUNTRACED : WCONTINUED);

		if (got == r->pid && stopped && WIFSTOPPED(status))
			return;
		if (got == r->pid && !stopped && WIFCONTINUED(status))
			return;
		if (got == r->pid &&
		    (WIFEXITED(status) || WIFSIGNALED(status))) {
			r->pid = 0;
			fail_msg("redis-server died (status %d)", status);
		}
		if (got < 0 && errno != EINTR)
			fail_msg("waitpid: %s", strerror(errno));
	}
}

void
tkt_redis_sigstop(struct tkt_redis *r)
{
	kill(r->pid, SIGSTOP);
	wait_state(r, true);
}

void
tkt_redis_sigcont(struct tkt_redis *r)
{
	kill(r->pid, SIGCONT);
	wait_state(r, false);
}

/* ------------------------------------------------------------------------
 * Commands
 * ---------------------------------------------------------------------- */

redisReply *
tkt_redis_argv(const struct tkt_redis *r, int argc, const char **argv,
	       const size_t *lens)
{
	redisContext *c = connect_unix(r, CTL_TIMEOUT_S * 1000L, true);
	redisReply *reply = redisCommandArgv(c, argc, argv, lens);

	if (reply == NULL)
		fail_msg("redis %s to port %d: %s", argv[0], r->port,
			 c->errstr);
	redisFree(c);
	return reply;
}

static redisReply *
command_v(const struct tkt_redis *r, const char *arg, va_list ap)
{
	const char *argv[ARGS_MAX];
	int n = 0;

	for (const char *a = arg; a != NULL; a = va_arg(ap, const char *)) {
		if (n == ARGS_MAX)
			fail_msg("tkt_redis_cmd: more than %d arguments",
				 ARGS_MAX);
		argv[n++] = a;
	}
	return tkt_redis_argv(r, n, argv, NULL);
}

redisReply *
tkt_redis_cmd(const struct tkt_redis *r, const char *arg, ...)
{
	va_list ap;
	redisReply *reply;

	va_start(ap, arg);
	reply = command_v(r, arg, ap);
	va_end(ap);
	return reply;
}

redisReply *
tkt_redis_vcmdf(const struct tkt_redis *r, const char *fmt, va_list ap)
{
	redisContext *c = connect_unix(r, CTL_TIMEOUT_S * 1000L, true);
	redisReply *reply = redisvCommand(c, fmt, ap);

	if (reply == NULL)
		fail_msg("redis \"%s\" to port %d: %s", fmt, r->port,
			 c->errstr);
	redisFree(c);
	return reply;
}

redisReply *
tkt_redis_cmdf(const struct tkt_redis *r, const char *fmt, ...)
{
	va_list ap;
	redisReply *reply;

	va_start(ap, fmt);
	reply = tkt_redis_vcmdf(r, fmt, ap);
	va_end(ap);
	return reply;
}

redisReply *
tkt_redis_try(const struct tkt_redis *r, long timeout_ms, const char *fmt, ...)
{
	redisContext *c;
	redisReply *reply;
	va_list ap;

	if (r->pid == 0 || (c = connect_unix(r, timeout_ms, false)) == NULL)
		return NULL;
	va_start(ap, fmt);
	reply = redisvCommand(c, fmt, ap);
	va_end(ap);
	redisFree(c);
	return reply;
}

struct tkshm_redis *
tkt_strict_connect(int port, bool server_time, double timeout_ms)
{
	tkshm_redis_options o = TKSHM_REDIS_OPTIONS_INIT;
	tkshm_redis *r;

	o.port = port;
	o.server_time = server_time;
	o.command_timeout_ms = timeout_ms;
	o.connect_timeout_ms = timeout_ms;
	o.breaker_failures = 2;
	o.breaker_open_ms = 300;
	assert_rc(tkshm_redis_open(&o, &r), TKSHM_OK);
	return r;
}

struct tkshm_table *
tkt_strict_table(const char *spec, struct tkshm_redis *r)
{
	tkshm_table *t = tkt_anon(spec, 1024);

	assert_rc(tkshm_redis_attach(t, r), TKSHM_OK);
	return t;
}

void
tkt_redis_flushall(struct tkt_redis *r)
{
	freeReplyObject(tkt_redis_cmd(r, "FLUSHALL", NULL));
}

void
tkt_redis_persist_all(struct tkt_redis *r)
{
	freeReplyObject(
		tkt_redis_cmd(r, "EVAL",
			      "for _, k in ipairs(redis.call('KEYS', '*')) do "
			      "redis.call('PERSIST', k) end return 0",
			      "0", NULL));
}

long long
tkt_redis_int(struct tkt_redis *r, const char *arg, ...)
{
	va_list ap;
	redisReply *reply;
	long long v = 0;
	char *end;

	va_start(ap, arg);
	reply = command_v(r, arg, ap);
	va_end(ap);
	switch (reply->type) {
	case REDIS_REPLY_INTEGER:
		v = reply->integer;
		break;
	case REDIS_REPLY_NIL:
		break;
	case REDIS_REPLY_STRING:
		errno = 0;
		v = strtoll(reply->str, &end, 10);
		if (errno != 0 || end == reply->str || *end != '\0')
			fail_msg("redis %s: \"%s\" is not an integer", arg,
				 reply->str);
		break;
	default:
		fail_msg("redis %s: reply type %d (%s), not an integer", arg,
			 reply->type, reply->str != NULL ? reply->str : "");
	}
	freeReplyObject(reply);
	return v;
}

void
tkt_redis_pause(struct tkt_redis *r, long ms)
{
	char arg[32];
	redisReply *reply;

	snprintf(arg, sizeof arg, "%ld", ms);
	reply = tkt_redis_cmd(r, "CLIENT", "PAUSE", arg, "ALL", NULL);
	if (reply->type != REDIS_REPLY_STATUS)
		fail_msg("CLIENT PAUSE %s: %s", arg,
			 reply->str != NULL ? reply->str : "?");
	freeReplyObject(reply);
}

redisContext *
tkt_redis_connect(struct tkt_redis *r)
{
	const struct timeval tv = { CTL_TIMEOUT_S, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);

	if (c == NULL || c->err != 0 || redisSetTimeout(c, tv) != 0)
		fail_msg("connecting to 127.0.0.1:%d: %s", r->port,
			 c != NULL ? c->errstr : "out of memory");
	return c;
}

void
tkt_redis_conf(const struct tkt_redis *r, struct tk_redis_conf *conf)
{
	tk_redis_conf_init(conf);
	snprintf(conf->host, sizeof conf->host, "127.0.0.1");
	conf->port = r->port;
}
