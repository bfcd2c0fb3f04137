/*
 * redis_cluster.c - a private Redis Cluster or Sentinel set for one test
 * (redis_cluster.h).
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
#include "redis_cluster.h"

/* How long a server may take to answer its first PING. */
#define START_WAIT_S 10.0
/* Ports tried per server before giving up (each one taken by someone
 * else). */
#define START_TRIES 20
/* The cluster's formation: create ~1 s, cluster_state:ok ~2 s later. */
#define FORM_WAIT_S 30.0
/* A failover: ~1.5 s to FAIL, then an election; 2-3 s in all. */
#define FAILOVER_WAIT_S 20.0
/* Gossip spreading a slot's new owner to the replicas. */
#define AGREE_WAIT_S  10.0
#define CTL_TIMEOUT_S 5
/* Polls must not hang on a node that is being killed. */
#define POLL_TIMEOUT_MS 1000
#define POLL_EVERY_MS	20
/* Redis wants the bus port (port + 10000) below 65536; ours stay below
 * 55536 so node ports stay below 45536. */
#define BUS_OFFSET    10000
#define BUS_PORT_MAX  45536
#define MIGRATE_BATCH 100
#define LOG_TAIL      20
#define SENTINEL_NAME "mymaster"

static const char *const set_prefixes[] = { "tkt-cluster-", "tkt-sentinel-" };

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

bool
tkt_cluster_available(void)
{
	return TKSHM_REDIS_CLI[0] != '\0' && access(TKSHM_REDIS_CLI, X_OK) == 0;
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

/* The candidates: below the kernel's ephemeral ports (no client socket
 * holds them), and for a cluster node its bus port as well. */
static void
port_range(bool bus, int *lo, int *hi)
{
	int eph_lo = 32768, eph_hi = 60999;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f != NULL) {
		if (fscanf(f, "%d %d", &eph_lo, &eph_hi) != 2)
			eph_lo = 32768;
		fclose(f);
	}
	*lo = 10000;
	*hi = bus ? eph_lo - BUS_OFFSET : eph_lo;
	if (bus && *hi > BUS_PORT_MAX)
		*hi = BUS_PORT_MAX;
	/* A range too small below the ephemeral ports: bind() still
	 * tells what is free now. */
	if (*hi - *lo < 2000)
		*hi = bus ? BUS_PORT_MAX : 30000;
}

static bool
port_free(int port)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
	close(fd);
	return ok;
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

/* ------------------------------------------------------------------------
 * Directories
 * ---------------------------------------------------------------------- */

static void
remove_tree(const char *dir)
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
			remove_tree(path);
		else
			unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/* The owner file names the test process that made a set's directory, so
 * a later start can remove what a killed test (a ctest timeout) left. */
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
ours(const char *name)
{
	for (size_t i = 0; i < sizeof set_prefixes / sizeof *set_prefixes; i++)
		if (strncmp(name, set_prefixes[i], strlen(set_prefixes[i])) ==
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

		if (!ours(e->d_name))
			continue;
		snprintf(dir, sizeof dir, "/tmp/%s", e->d_name);
		snprintf(path, sizeof path, "%s/owner", dir);
		if ((f = fopen(path, "r")) == NULL)
			continue; /* being made, or not ours to judge */
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
		if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)
			remove_tree(dir);
	}
	closedir(d);
}

/* The set's directory /tmp/<prefix>XXXXXX with its owner file. */
static void
make_set_dir(char *dir, size_t size, const char *prefix)
{
	sweep_dead_owners();
	snprintf(dir, size, "/tmp/%sXXXXXX", prefix);
	if (mkdtemp(dir) == NULL)
		fail_msg("mkdtemp: %s", strerror(errno));
	write_owner(dir);
}

static void
make_node_dir(struct tkt_node *n, const char *set_dir, const char *name)
{
	memset(n, 0, sizeof *n);
	snprintf(n->dir, sizeof n->dir, "%s/%s", set_dir, name);
	if (mkdir(n->dir, 0700) != 0)
		fail_msg("mkdir %s: %s", n->dir, strerror(errno));
	snprintf(n->unix_path, sizeof n->unix_path, "%s/redis.sock", n->dir);
}

/* ------------------------------------------------------------------------
 * Processes
 * ---------------------------------------------------------------------- */

/* Runs argv[0] in `dir` with its output appended to `log`.  It dies with
 * the thread that started it and inherits none of the test's descriptors
 * (a pipe to a child the test waits on would never reach EOF). */
static pid_t
fork_exec(const char *const *argv, const char *dir, const char *log)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (pid == 0) {
		sigset_t none;
		int fd;

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

enum node_kind {
	NODE_CLUSTER,
	NODE_DATA,
	NODE_SENTINEL
};

/* What a node is started as; `primary` is the port a replica replicates
 * from or the sentinels monitor (0: none). */
struct launch {
	enum node_kind kind;
	int primary;
};

/* Sentinel rewrites its configuration file: one per sentinel, written
 * again at each start (its port changes when the last one was taken). */
static void
write_sentinel_conf(const struct tkt_node *n, int primary, char *path,
		    size_t size)
{
	FILE *f;

	snprintf(path, size, "%s/sentinel.conf", n->dir);
	if ((f = fopen(path, "w")) == NULL)
		fail_msg("%s: %s", path, strerror(errno));
	fprintf(f,
		"port %d\nbind 127.0.0.1\ndir \"%s\"\n"
		"unixsocket \"%s\"\nunixsocketperm 700\n"
		"daemonize no\nloglevel notice\n"
		"sentinel monitor %s 127.0.0.1 %d 2\n"
		"sentinel down-after-milliseconds %s 1000\n"
		"sentinel failover-timeout %s 3000\n"
		"sentinel parallel-syncs %s 1\n",
		n->port, n->dir, n->unix_path, SENTINEL_NAME, primary,
		SENTINEL_NAME, SENTINEL_NAME, SENTINEL_NAME);
	if (fclose(f) != 0)
		fail_msg("%s: %s", path, strerror(errno));
}

struct server_opt {
	const char *name, *value;
};

static int
add_options(const char **argv, int k, const struct server_opt *o, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		argv[k++] = o[i].name;
		argv[k++] = o[i].value;
	}
	return k;
}

static pid_t
spawn(struct tkt_node *n, const struct launch *l)
{
	char port[16], primary[16], conf[96], log[96];
	const struct server_opt common[] = {
		{ "--port", port },
		{ "--bind", "127.0.0.1" },
		{ "--dir", n->dir },
		{ "--save", "" },
		{ "--appendonly", "no" },
		{ "--daemonize", "no" },
		{ "--unixsocket", n->unix_path },
		{ "--unixsocketperm", "700" },
		{ "--enable-debug-command", "local" },
		{ "--loglevel", "notice" },
		/* 7.0 delays a replica's first sync by 5 s otherwise; and a
		 * cluster replica never synced cannot fail over. */
		{ "--repl-diskless-sync-delay", "0" },
	};
	const struct server_opt cluster[] = {
		{ "--cluster-enabled", "yes" },
		{ "--cluster-config-file", "nodes.conf" },
		{ "--cluster-node-timeout", "1000" },
	};
	const char *argv[48];
	int k = 0;

	snprintf(port, sizeof port, "%d", n->port);
	snprintf(primary, sizeof primary, "%d", l->primary);
	snprintf(log, sizeof log, "%s/redis.log", n->dir);
	argv[k++] = TKSHM_REDIS_SERVER;
	if (l->kind == NODE_SENTINEL) {
		write_sentinel_conf(n, l->primary, conf, sizeof conf);
		argv[k++] = conf;
		argv[k++] = "--sentinel";
	} else {
		k = add_options(argv, k, common,
				sizeof common / sizeof *common);
	}
	if (l->kind == NODE_CLUSTER) {
		k = add_options(argv, k, cluster,
				sizeof cluster / sizeof *cluster);
	} else if (l->kind == NODE_DATA && l->primary > 0) {
		argv[k++] = "--replicaof";
		argv[k++] = "127.0.0.1";
		argv[k++] = primary;
	}
	argv[k] = NULL;
	return fork_exec(argv, n->dir, log);
}

static void
reap(struct tkt_node *n)
{
	int status;

	while (waitpid(n->pid, &status, 0) < 0 && errno == EINTR)
		;
	n->pid = 0;
}

/* True once our server answers PING on its unix socket; false when it
 * exited first (its port was taken) or did not answer within the wait. */
static bool
wait_ready(struct tkt_node *n)
{
	const struct timeval tv = { 0, 200000 };
	double deadline = tkt_seconds() + START_WAIT_S;

	while (tkt_seconds() < deadline) {
		int status;
		redisContext *c;

		if (waitpid(n->pid, &status, WNOHANG) == n->pid) {
			n->pid = 0;
			return false;
		}
		c = redisConnectUnixWithTimeout(n->unix_path, tv);
		if (c != NULL && c->err == 0 && redisSetTimeout(c, tv) == 0) {
			redisReply *p = redisCommand(c, "PING");
			bool up = p != NULL && p->type == REDIS_REPLY_STATUS &&
				  strcmp(p->str, "PONG") == 0;

			if (p != NULL)
				freeReplyObject(p);
			if (up) {
				redisFree(c);
				return true;
			}
		}
		if (c != NULL)
			redisFree(c);
		sleep_ms(5);
	}
	return false;
}

/* Starts a node on a free port, retrying on another port when someone
 * took it first.  False when the server would not start. */
static bool
start_node(struct tkt_node *n, const struct launch *l)
{
	char nodes_conf[96];

	snprintf(nodes_conf, sizeof nodes_conf, "%s/nodes.conf", n->dir);
	for (int i = 0; i < START_TRIES; i++) {
		/* A node that failed on its bus port left its id and old
		 * port in nodes.conf. */
		unlink(nodes_conf);
		n->port = pick_port(l->kind == NODE_CLUSTER);
		n->pid = spawn(n, l);
		if (wait_ready(n))
			return true;
		if (n->pid != 0) {
			/* Alive but silent: not a port clash; give up. */
			kill(n->pid, SIGKILL);
			reap(n);
			break;
		}
	}
	return false;
}

/* SIGTERM to all at once (a stop is the slowest part of a short test),
 * then up to 5 s for them all before SIGKILL. */
static void
stop_nodes(struct tkt_node *nodes, int count)
{
	double deadline = tkt_seconds() + 5.0;

	for (int i = 0; i < count; i++) {
		if (nodes[i].pid != 0) {
			kill(nodes[i].pid, SIGCONT);
			kill(nodes[i].pid, SIGTERM);
		}
	}
	for (int i = 0; i < count; i++) {
		struct tkt_node *n = &nodes[i];
		int status;
		pid_t got;

		while (n->pid != 0 &&
		       (got = waitpid(n->pid, &status, WNOHANG)) != n->pid) {
			if (got < 0 && errno != EINTR)
				break;
			if (tkt_seconds() > deadline) {
				kill(n->pid, SIGKILL);
				reap(n);
				break;
			}
			sleep_ms(2);
		}
		n->pid = 0;
	}
}

/* The last lines of a file on stderr, to explain a failure. */
static void
show_tail(const char *path, const char *label)
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

static void
show_logs(const struct tkt_node *nodes, int count)
{
	char path[96], label[32];

	for (int i = 0; i < count; i++) {
		if (nodes[i].dir[0] == '\0')
			continue;
		snprintf(path, sizeof path, "%s/redis.log", nodes[i].dir);
		snprintf(label, sizeof label, "port %d", nodes[i].port);
		show_tail(path, label);
	}
}

/* ------------------------------------------------------------------------
 * Commands
 * ---------------------------------------------------------------------- */

static redisContext *
node_connect(const struct tkt_node *n, long timeout_ms)
{
	const struct timeval tv = { timeout_ms / 1000,
				    (timeout_ms % 1000) * 1000 };
	redisContext *c = redisConnectUnixWithTimeout(n->unix_path, tv);

	if (c != NULL && c->err == 0 && redisSetTimeout(c, tv) == 0)
		return c;
	if (c != NULL)
		redisFree(c);
	return NULL;
}

/* One command over a new connection; NULL when the node does not answer
 * (polls go on across a node's death). */
static redisReply *
node_try(const struct tkt_node *n, long timeout_ms, const char *fmt, ...)
{
	redisContext *c;
	redisReply *r;
	va_list ap;

	if (n->pid == 0 || (c = node_connect(n, timeout_ms)) == NULL)
		return NULL;
	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	redisFree(c);
	return r;
}

/* A command with binary-safe arguments that must answer; the reply is the
 * caller's. */
static redisReply *
node_argv(const struct tkt_node *n, int argc, const char **argv,
	  const size_t *lens)
{
	redisContext *c = node_connect(n, CTL_TIMEOUT_S * 1000L);
	redisReply *r;

	if (c == NULL)
		fail_msg("no connection to the node on port %d", n->port);
	r = redisCommandArgv(c, argc, argv, lens);
	if (r == NULL)
		fail_msg("%s to port %d: %s", argv[0], n->port, c->errstr);
	redisFree(c);
	return r;
}

/* The value of the line `field:value` of an INFO-like text reply, or
 * NULL. */
static const char *
info_value(const redisReply *r, const char *field)
{
	size_t fl = strlen(field);

	if (r == NULL || r->type != REDIS_REPLY_STRING)
		return NULL;
	for (const char *p = r->str; p != NULL; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, field, fl) == 0 && p[fl] == ':')
			return p + fl + 1;
	}
	return NULL;
}

static bool
info_is(const redisReply *r, const char *field, const char *want)
{
	const char *v = info_value(r, field);
	size_t wl = strlen(want);

	return v != NULL && strncmp(v, want, wl) == 0 &&
	       (v[wl] == '\r' || v[wl] == '\n' || v[wl] == '\0');
}

/* The number of the line `field:N`; -1 when there is none. */
static long long
info_number(const redisReply *r, const char *field)
{
	const char *v = info_value(r, field);

	return v != NULL ? strtoll(v, NULL, 10) : -1;
}

/* The node answers `cmd` (no arguments to format) with field:want. */
static bool
node_says(const struct tkt_node *n, const char *cmd, const char *field,
	  const char *want)
{
	redisReply *r = node_try(n, POLL_TIMEOUT_MS, cmd);
	bool yes = info_is(r, field, want);

	if (r != NULL)
		freeReplyObject(r);
	return yes;
}

/* ROLE's first element is "master". */
static bool
node_is_master(const struct tkt_node *n)
{
	redisReply *r = node_try(n, POLL_TIMEOUT_MS, "ROLE");
	bool yes = r != NULL && r->type == REDIS_REPLY_ARRAY &&
		   r->elements > 0 &&
		   r->element[0]->type == REDIS_REPLY_STRING &&
		   strcmp(r->element[0]->str, "master") == 0;

	if (r != NULL)
		freeReplyObject(r);
	return yes;
}

static void
expect_status(redisReply *r, const char *want, const char *what, int port)
{
	if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, want) != 0)
		fail_msg("%s on port %d: %s", what, port,
			 r->str != NULL ? r->str : "(not a status reply)");
	freeReplyObject(r);
}

/* ------------------------------------------------------------------------
 * Cluster: topology
 * ---------------------------------------------------------------------- */

static int
node_by_port(const struct tkt_cluster *c, int port)
{
	for (int i = 0; i < TKT_CLUSTER_NODES; i++)
		if (c->node[i].port == port)
			return i;
	return -1;
}

static int
node_by_id(const struct tkt_cluster *c, const char *id)
{
	for (int i = 0; i < TKT_CLUSTER_NODES; i++)
		if (strcmp(c->id[i], id) == 0)
			return i;
	return -1;
}

/* One line of CLUSTER NODES: "<id> <ip:port@cport[,host]> <flags>
 * <master id|-> <ping> <pong> <epoch> <link> <slot|lo-hi|[migrating]>...".
 * Records the node's id, role and ranges; its master's id in master_id. */
static void
parse_node_line(struct tkt_cluster *c, char *line, char master_id[][41])
{
	char *save, *f[8], *at;
	const char *colon;
	int i, k;

	for (k = 0; k < 8; k++)
		if ((f[k] = strtok_r(k == 0 ? line : NULL, " ", &save)) == NULL)
			return;
	if ((at = strchr(f[1], '@')) != NULL)
		*at = '\0';
	colon = strrchr(f[1], ':');
	if (colon == NULL || (i = node_by_port(c, atoi(colon + 1))) < 0 ||
	    strlen(f[0]) != 40)
		return;
	snprintf(c->id[i], sizeof c->id[i], "%s", f[0]);
	c->master[i] = strstr(f[2], "master") != NULL;
	snprintf(master_id[i], sizeof master_id[i], "%s",
		 strcmp(f[3], "-") == 0 ? "" : f[3]);
	c->nranges[i] = 0;
	for (char *s; (s = strtok_r(NULL, " ", &save)) != NULL;) {
		struct tkt_slot_range *r = &c->range[i][c->nranges[i]];
		char *dash;

		if (s[0] == '[')
			continue; /* a migration's state, not an owner's */
		if (c->nranges[i] == TKT_CLUSTER_RANGES)
			fail_msg("node %d: more than %d slot ranges", i,
				 TKT_CLUSTER_RANGES);
		r->lo = atoi(s);
		r->hi = (dash = strchr(s, '-')) != NULL ? atoi(dash + 1) :
							  r->lo;
		c->nranges[i]++;
	}
}

/* Reads the roles and slot ranges from CLUSTER NODES of node `from`;
 * false when it does not answer. */
static bool
read_topology(struct tkt_cluster *c, int from)
{
	char master_id[TKT_CLUSTER_NODES][41] = { { 0 } };
	redisReply *r =
		node_try(&c->node[from], POLL_TIMEOUT_MS, "CLUSTER NODES");
	char *text, *save, *line;

	if (r == NULL || r->type != REDIS_REPLY_STRING) {
		if (r != NULL)
			freeReplyObject(r);
		return false;
	}
	text = strdup(r->str);
	freeReplyObject(r);
	if (text == NULL)
		fail_msg("out of memory");
	for (int i = 0; i < TKT_CLUSTER_NODES; i++)
		c->replica[i] = c->replica_of[i] = -1;
	for (line = strtok_r(text, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		parse_node_line(c, line, master_id);
	free(text);
	for (int i = 0; i < TKT_CLUSTER_NODES; i++) {
		int m = master_id[i][0] != '\0' ? node_by_id(c, master_id[i]) :
						  -1;

		if (!c->master[i] && m >= 0) {
			c->replica_of[i] = m;
			c->replica[m] = i;
		}
	}
	return true;
}

/* What redis-cli --cluster create makes: 3 masters covering every slot,
 * each with one replica. */
static bool
topology_complete(const struct tkt_cluster *c)
{
	int masters = 0, covered = 0;

	for (int i = 0; i < TKT_CLUSTER_NODES; i++) {
		if (c->master[i]) {
			masters++;
			if (c->replica[i] < 0)
				return false;
			for (int k = 0; k < c->nranges[i]; k++)
				covered += c->range[i][k].hi -
					   c->range[i][k].lo + 1;
		} else if (c->replica_of[i] < 0) {
			return false;
		}
	}
	return masters == 3 && covered == TKT_CLUSTER_SLOTS;
}

/* The node serving `slot` in CLUSTER SLOTS of node `from`: -1 when none,
 * -2 when `from` did not answer. */
static int
slot_owner_on(const struct tkt_cluster *c, int from, int slot)
{
	redisReply *r =
		node_try(&c->node[from], POLL_TIMEOUT_MS, "CLUSTER SLOTS");
	int owner = -2;

	if (r == NULL)
		return -2;
	if (r->type == REDIS_REPLY_ARRAY) {
		owner = -1;
		for (size_t i = 0; i < r->elements; i++) {
			redisReply *e = r->element[i];

			/* [start, end, [ip, port, id, ...], replicas...] */
			if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
			    e->element[2]->type != REDIS_REPLY_ARRAY ||
			    e->element[2]->elements < 2)
				continue;
			if (slot >= e->element[0]->integer &&
			    slot <= e->element[1]->integer)
				owner = node_by_port(c, (int)e->element[2]
								->element[1]
								->integer);
		}
	}
	freeReplyObject(r);
	return owner;
}

/* Every live node gives `slot` to `node`, and says cluster_state:ok. */
static bool
all_agree(const struct tkt_cluster *c, int slot, int node)
{
	for (int i = 0; i < TKT_CLUSTER_NODES; i++) {
		if (c->node[i].pid == 0)
			continue;
		if (!node_says(&c->node[i], "CLUSTER INFO", "cluster_state",
			       "ok") ||
		    slot_owner_on(c, i, slot) != node)
			return false;
	}
	return true;
}

/* ------------------------------------------------------------------------
 * Cluster: start and stop
 * ---------------------------------------------------------------------- */

/* Stops what a failed start made (the caller may have no teardown) and
 * fails the test, showing the nodes' last log lines. */
static void __attribute__((format(printf, 2, 3)))
cluster_abort(struct tkt_cluster *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	show_logs(c->node, TKT_CLUSTER_NODES);
	tkt_cluster_stop(c);
	fail_msg("%s", msg);
}

static void
cluster_create(struct tkt_cluster *c)
{
	char addr[TKT_CLUSTER_NODES][24], log[96];
	const char *argv[TKT_CLUSTER_NODES + 8];
	int k = 0, status;
	pid_t pid;

	argv[k++] = TKSHM_REDIS_CLI;
	argv[k++] = "--cluster";
	argv[k++] = "create";
	for (int i = 0; i < TKT_CLUSTER_NODES; i++) {
		snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d",
			 c->node[i].port);
		argv[k++] = addr[i];
	}
	argv[k++] = "--cluster-replicas";
	argv[k++] = "1";
	argv[k++] = "--cluster-yes";
	argv[k] = NULL;
	snprintf(log, sizeof log, "%s/cli.log", c->dir);
	pid = fork_exec(argv, c->dir, log);
	status = tkt_wait_bounded(pid, FORM_WAIT_S);
	if (status != 0) {
		show_tail(log, "redis-cli");
		cluster_abort(c, "redis-cli --cluster create: status %d",
			      status);
	}
}

/* Every node: cluster_state:ok and 6 known nodes; then the roles, and
 * every replica's link up. */
static void
cluster_wait_formed(struct tkt_cluster *c)
{
	double deadline = tkt_seconds() + FORM_WAIT_S;

	for (int i = 0; i < TKT_CLUSTER_NODES; i++) {
		const struct tkt_node *n = &c->node[i];

		while (!node_says(n, "CLUSTER INFO", "cluster_state", "ok") ||
		       !node_says(n, "CLUSTER INFO", "cluster_known_nodes",
				  "6")) {
			if (tkt_seconds() > deadline)
				cluster_abort(c, "port %d: not ok with 6 nodes",
					      n->port);
			sleep_ms(POLL_EVERY_MS);
		}
	}
	while (!read_topology(c, 0) || !topology_complete(c)) {
		if (tkt_seconds() > deadline)
			cluster_abort(c, "CLUSTER NODES: not 3 masters with "
					 "one replica each");
		sleep_ms(POLL_EVERY_MS);
	}
	for (int i = 0; i < TKT_CLUSTER_NODES; i++) {
		while (!c->master[i] &&
		       !node_says(&c->node[i], "INFO replication",
				  "master_link_status", "up")) {
			if (tkt_seconds() > deadline)
				cluster_abort(c, "port %d: replica link down",
					      c->node[i].port);
			sleep_ms(POLL_EVERY_MS);
		}
	}
}

void
tkt_cluster_start(struct tkt_cluster *c)
{
	const struct launch l = { NODE_CLUSTER, 0 };
	size_t len = 0;

	memset(c, 0, sizeof *c);
	c->owner = getpid();
	c->mig_slot = c->mig_from = c->mig_to = -1;
	make_set_dir(c->dir, sizeof c->dir, "tkt-cluster-");
	for (int i = 0; i < TKT_CLUSTER_NODES; i++) {
		char name[8];

		snprintf(name, sizeof name, "n%d", i);
		make_node_dir(&c->node[i], c->dir, name);
		if (!start_node(&c->node[i], &l))
			cluster_abort(c, "redis-server (%s) did not start",
				      TKSHM_REDIS_SERVER);
	}
	cluster_create(c);
	cluster_wait_formed(c);
	for (int i = 0; i < TKT_CLUSTER_NODES; i++)
		if (c->master[i])
			len += (size_t)snprintf(
				c->seeds + len, sizeof c->seeds - len,
				"%s127.0.0.1:%d", len > 0 ? "," : "",
				c->node[i].port);
}

void
tkt_cluster_stop(struct tkt_cluster *c)
{
	if (c->owner != getpid() || c->dir[0] == '\0')
		return;
	stop_nodes(c->node, TKT_CLUSTER_NODES);
	remove_tree(c->dir);
	c->dir[0] = '\0';
}

const char *
tkt_cluster_seeds(struct tkt_cluster *c)
{
	return c->seeds;
}

/* ------------------------------------------------------------------------
 * Cluster: commands, slots, failover
 * ---------------------------------------------------------------------- */

static const struct tkt_node *
live_node(const struct tkt_cluster *c, int node)
{
	if (node < 0 || node >= TKT_CLUSTER_NODES)
		fail_msg("no cluster node %d", node);
	if (c->node[node].pid == 0)
		fail_msg("cluster node %d (port %d) is not running", node,
			 c->node[node].port);
	return &c->node[node];
}

redisReply *
tkt_cluster_cmd(struct tkt_cluster *c, int node, const char *fmt, ...)
{
	const struct tkt_node *n = live_node(c, node);
	redisContext *ctx = node_connect(n, CTL_TIMEOUT_S * 1000L);
	redisReply *r;
	va_list ap;

	if (ctx == NULL)
		fail_msg("no connection to %s", n->unix_path);
	va_start(ap, fmt);
	r = redisvCommand(ctx, fmt, ap);
	va_end(ap);
	if (r == NULL)
		fail_msg("\"%s\" to port %d: %s", fmt, n->port, ctx->errstr);
	redisFree(ctx);
	return r;
}

static uint16_t
crc16_xmodem(const unsigned char *p, size_t len)
{
	uint16_t crc = 0;

	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)(p[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 :
							crc << 1);
	}
	return crc;
}

int
tkt_key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len);

	if (open != NULL) {
		size_t rest = len - (size_t)(open + 1 - key);
		const char *close = memchr(open + 1, '}', rest);

		/* "{}" hashes the whole key: the tag must not be empty. */
		if (close != NULL && close > open + 1) {
			key = open + 1;
			len = (size_t)(close - key);
		}
	}
	return crc16_xmodem((const unsigned char *)key, len) &
	       (TKT_CLUSTER_SLOTS - 1);
}

int
tkt_cluster_master_of_slot(struct tkt_cluster *c, int slot)
{
	for (int i = 0; i < TKT_CLUSTER_NODES; i++) {
		int owner;

		if (c->node[i].pid != 0 &&
		    (owner = slot_owner_on(c, i, slot)) != -2)
			return owner;
	}
	fail_msg("no live cluster node answers CLUSTER SLOTS");
	return -1;
}

void
tkt_cluster_kill_master(struct tkt_cluster *c, int node)
{
	live_node(c, node);
	if (!c->master[node])
		fail_msg("cluster node %d is not a master", node);
	kill(c->node[node].pid, SIGKILL);
	reap(&c->node[node]);
}

static bool
promoted(const struct tkt_cluster *c, int dead, int replica)
{
	if (!node_is_master(&c->node[replica]))
		return false;
	for (int k = 0; k < c->nranges[dead]; k++)
		if (!all_agree(c, c->range[dead][k].lo, replica))
			return false;
	return true;
}

void
tkt_cluster_wait_promoted(struct tkt_cluster *c, int dead_node)
{
	double deadline = tkt_seconds() + FAILOVER_WAIT_S;
	int r = -1;

	if (dead_node >= 0 && dead_node < TKT_CLUSTER_NODES &&
	    c->master[dead_node])
		r = c->replica[dead_node];
	if (r < 0)
		fail_msg("cluster node %d is no master with a replica",
			 dead_node);
	while (!promoted(c, dead_node, r)) {
		if (tkt_seconds() > deadline) {
			show_logs(c->node, TKT_CLUSTER_NODES);
			fail_msg("node %d (port %d) not promoted in %.0f s", r,
				 c->node[r].port, FAILOVER_WAIT_S);
		}
		sleep_ms(POLL_EVERY_MS);
	}
	while (!read_topology(c, r))
		sleep_ms(POLL_EVERY_MS);
}

void
tkt_cluster_wait_replicated(struct tkt_cluster *c, int node)
{
	double deadline = tkt_seconds() + AGREE_WAIT_S;
	redisReply *r = tkt_cluster_cmd(c, node, "INFO replication");
	long long want = info_number(r, "master_repl_offset"), got = -1;
	int rep = c->replica[node];

	freeReplyObject(r);
	if (want < 0 || rep < 0 || c->node[rep].pid == 0)
		fail_msg("cluster node %d is no master with a live replica",
			 node);
	/* The replica's own count of what it applied: the master's view of
	 * it (slave0:...offset=) is only refreshed by its ACK each second. */
	while (got < want) {
		if (tkt_seconds() > deadline)
			fail_msg("node %d: its replica at %lld of %lld", node,
				 got, want);
		r = node_try(&c->node[rep], POLL_TIMEOUT_MS,
			     "INFO replication");
		got = info_number(r, "slave_repl_offset");
		if (r != NULL)
			freeReplyObject(r);
		if (got < want)
			sleep_ms(POLL_EVERY_MS);
	}
}

/* ------------------------------------------------------------------------
 * Cluster: slot migration
 * ---------------------------------------------------------------------- */

/* MIGRATE of `n` keys (a reply's strings) from the migration's source to
 * its target. */
static void
migrate_keys(struct tkt_cluster *c, redisReply **keys, size_t n)
{
	char port[16];
	/* MIGRATE host port "" db timeout KEYS k...: the keys come after
	 * KEYS, the key argument is empty. */
	const char *head[] = { "MIGRATE", "127.0.0.1", port,  "",
			       "0",	  "5000",      "KEYS" };
	const char *argv[MIGRATE_BATCH + 7];
	size_t lens[MIGRATE_BATCH + 7];
	int k = 0;
	redisReply *r;

	snprintf(port, sizeof port, "%d", c->node[c->mig_to].port);
	for (size_t i = 0; i < sizeof head / sizeof *head; i++, k++) {
		argv[k] = head[i];
		lens[k] = strlen(head[i]);
	}
	for (size_t i = 0; i < n && i < MIGRATE_BATCH; i++, k++) {
		argv[k] = keys[i]->str;
		lens[k] = keys[i]->len;
	}
	r = node_argv(live_node(c, c->mig_from), k, argv, lens);
	/* NOKEY: they all expired since GETKEYSINSLOT listed them. */
	if (r->type == REDIS_REPLY_STATUS && strcmp(r->str, "NOKEY") == 0)
		freeReplyObject(r);
	else
		expect_status(r, "OK", "MIGRATE", c->node[c->mig_from].port);
}

/* Moves up to `limit` keys (all when < 0) of the slot; returns how many. */
static int
move_keys(struct tkt_cluster *c, int limit)
{
	int moved = 0;

	while (limit < 0 || moved < limit) {
		int batch = limit < 0 || limit - moved > MIGRATE_BATCH ?
				    MIGRATE_BATCH :
				    limit - moved;
		redisReply *r = tkt_cluster_cmd(c, c->mig_from,
						"CLUSTER GETKEYSINSLOT %d %d",
						c->mig_slot, batch);
		size_t n = r->type == REDIS_REPLY_ARRAY ? r->elements : 0;

		if (r->type != REDIS_REPLY_ARRAY)
			fail_msg("CLUSTER GETKEYSINSLOT: %s",
				 r->str != NULL ? r->str : "?");
		if (n > 0)
			migrate_keys(c, r->element, n);
		freeReplyObject(r);
		if (n == 0)
			break;
		moved += (int)n;
	}
	return moved;
}

int
tkt_cluster_migrate_begin(struct tkt_cluster *c, int slot, int to_node,
			  int nkeys)
{
	int from;

	if (slot < 0 || slot >= TKT_CLUSTER_SLOTS)
		fail_msg("no slot %d", slot);
	if (c->mig_slot >= 0)
		fail_msg("slot %d is being migrated already", c->mig_slot);
	live_node(c, to_node);
	if (!c->master[to_node])
		fail_msg("cluster node %d is not a master", to_node);
	from = tkt_cluster_master_of_slot(c, slot);
	if (from < 0 || from == to_node)
		fail_msg("slot %d: served by node %d, not migrated to %d", slot,
			 from, to_node);
	/* The target first, as redis-cli does: a client the source sends
	 * there with ASK must find the slot importing. */
	expect_status(tkt_cluster_cmd(c, to_node,
				      "CLUSTER SETSLOT %d IMPORTING %s", slot,
				      c->id[from]),
		      "OK", "SETSLOT IMPORTING", c->node[to_node].port);
	expect_status(tkt_cluster_cmd(c, from,
				      "CLUSTER SETSLOT %d MIGRATING %s", slot,
				      c->id[to_node]),
		      "OK", "SETSLOT MIGRATING", c->node[from].port);
	c->mig_slot = slot;
	c->mig_from = from;
	c->mig_to = to_node;
	return nkeys > 0 ? move_keys(c, nkeys) : 0;
}

void
tkt_cluster_migrate_key(struct tkt_cluster *c, const char *key, size_t len)
{
	char port[16];
	const char *argv[6];
	size_t lens[6];

	if (c->mig_slot < 0 || tkt_key_slot(key, len) != c->mig_slot)
		fail_msg("the key's slot %d is not being migrated",
			 tkt_key_slot(key, len));
	snprintf(port, sizeof port, "%d", c->node[c->mig_to].port);
	argv[0] = "MIGRATE";
	argv[1] = "127.0.0.1";
	argv[2] = port;
	argv[3] = key;
	argv[4] = "0";
	argv[5] = "5000";
	for (int i = 0; i < 6; i++)
		lens[i] = i == 3 ? len : strlen(argv[i]);
	/* NOKEY (not on the source) fails: the test meant this key. */
	expect_status(node_argv(live_node(c, c->mig_from), 6, argv, lens), "OK",
		      "MIGRATE", c->node[c->mig_from].port);
}

void
tkt_cluster_migrate_end(struct tkt_cluster *c)
{
	double deadline = tkt_seconds() + AGREE_WAIT_S;
	int slot = c->mig_slot, to = c->mig_to;

	if (slot < 0)
		fail_msg("no slot is being migrated");
	move_keys(c, -1);
	/* The target first: the source then sends MOVED to a node that
	 * owns the slot, not one that bounces it back.  The other masters
	 * last (gossip would tell them too, later). */
	for (int pass = 0; pass < 3; pass++) {
		for (int i = 0; i < TKT_CLUSTER_NODES; i++) {
			bool mine = pass == 0 ? i == to :
				    pass == 1 ? i == c->mig_from :
						i != to && i != c->mig_from;

			if (!mine || !c->master[i] || c->node[i].pid == 0)
				continue;
			expect_status(
				tkt_cluster_cmd(c, i,
						"CLUSTER SETSLOT %d NODE %s",
						slot, c->id[to]),
				"OK", "SETSLOT NODE", c->node[i].port);
		}
	}
	c->mig_slot = c->mig_from = c->mig_to = -1;
	/* Replicas learn it by gossip. */
	while (!all_agree(c, slot, to)) {
		if (tkt_seconds() > deadline)
			fail_msg("slot %d: not on node %d for every node", slot,
				 to);
		sleep_ms(POLL_EVERY_MS);
	}
	while (!read_topology(c, to))
		sleep_ms(POLL_EVERY_MS);
}

void
tkt_cluster_migrate_slot(struct tkt_cluster *c, int slot, int to_node)
{
	tkt_cluster_migrate_begin(c, slot, to_node, 0);
	tkt_cluster_migrate_end(c);
}

/* ------------------------------------------------------------------------
 * Sentinel
 * ---------------------------------------------------------------------- */

static void __attribute__((format(printf, 2, 3)))
sentinel_abort(struct tkt_sentinel_set *s, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	show_logs(s->server, 2);
	show_logs(s->sentinel, TKT_SENTINELS);
	tkt_sentinel_stop(s);
	fail_msg("%s", msg);
}

/* The value of `field` in a flat [name, value, ...] reply, or "". */
static const char *
field_of(const redisReply *r, const char *field)
{
	for (size_t i = 0; i + 1 < r->elements; i += 2)
		if (r->element[i]->type == REDIS_REPLY_STRING &&
		    strcmp(r->element[i]->str, field) == 0 &&
		    r->element[i + 1]->type == REDIS_REPLY_STRING)
			return r->element[i + 1]->str;
	return "";
}

/* The sentinel names the server on `port` as the primary. */
static bool
sentinel_names(const struct tkt_node *n, int port)
{
	redisReply *r =
		node_try(n, POLL_TIMEOUT_MS,
			 "SENTINEL get-master-addr-by-name %s", SENTINEL_NAME);
	bool yes = r != NULL && r->type == REDIS_REPLY_ARRAY &&
		   r->elements == 2 &&
		   r->element[1]->type == REDIS_REPLY_STRING &&
		   atoi(r->element[1]->str) == port;

	if (r != NULL)
		freeReplyObject(r);
	return yes;
}

/* The sentinel names the primary, sees it up with 2 other sentinels and
 * one replica, and has its quorum. */
static bool
sentinel_settled(const struct tkt_node *n, int port)
{
	redisReply *r;
	bool yes;

	if (!sentinel_names(n, port))
		return false;
	r = node_try(n, POLL_TIMEOUT_MS, "SENTINEL MASTER %s", SENTINEL_NAME);
	yes = r != NULL && r->type == REDIS_REPLY_ARRAY &&
	      strcmp(field_of(r, "flags"), "master") == 0 &&
	      strcmp(field_of(r, "num-other-sentinels"), "2") == 0 &&
	      strcmp(field_of(r, "num-slaves"), "1") == 0;
	if (r != NULL)
		freeReplyObject(r);
	if (!yes)
		return false;
	r = node_try(n, POLL_TIMEOUT_MS, "SENTINEL CKQUORUM %s", SENTINEL_NAME);
	yes = r != NULL && r->type == REDIS_REPLY_STATUS &&
	      strncmp(r->str, "OK", 2) == 0;
	if (r != NULL)
		freeReplyObject(r);
	return yes;
}

/* A host that stalls 2 s (a loaded CI machine does) puts a sentinel in
 * TILT, where it acts on nothing for 30 s, a failover included; 2 s
 * refreshes what it knows as well.  Hellos every 0.5 s instead of 2 s:
 * the sentinels find each other, and learn a new primary, sooner.
 * (SENTINEL DEBUG is 7.0's: an older server keeps its defaults.) */
static void
tune_sentinel(const struct tkt_node *n)
{
	redisReply *r = node_try(n, CTL_TIMEOUT_S * 1000L,
				 "SENTINEL DEBUG tilt-period 2000 "
				 "publish-period 500");

	if (r != NULL)
		freeReplyObject(r);
}

static bool
set_settled(const struct tkt_sentinel_set *s)
{
	const struct tkt_node *p = &s->server[s->primary];
	const struct tkt_node *rep = &s->server[1 - s->primary];
	char port[16];

	snprintf(port, sizeof port, "%d", p->port);
	if (!node_says(rep, "INFO replication", "master_port", port) ||
	    !node_says(rep, "INFO replication", "master_link_status", "up"))
		return false;
	for (int i = 0; i < TKT_SENTINELS; i++)
		if (!sentinel_settled(&s->sentinel[i], p->port))
			return false;
	return true;
}

void
tkt_sentinel_start(struct tkt_sentinel_set *s)
{
	double deadline;
	size_t len = 0;

	memset(s, 0, sizeof *s);
	s->owner = getpid();
	make_set_dir(s->dir, sizeof s->dir, "tkt-sentinel-");
	make_node_dir(&s->server[0], s->dir, "primary");
	make_node_dir(&s->server[1], s->dir, "replica");
	for (int i = 0; i < TKT_SENTINELS; i++) {
		char name[16];

		snprintf(name, sizeof name, "sentinel%d", i);
		make_node_dir(&s->sentinel[i], s->dir, name);
	}
	for (int i = 0; i < 2 + TKT_SENTINELS; i++) {
		struct tkt_node *n =
			i < 2 ? &s->server[i] : &s->sentinel[i - 2];
		const struct launch l = { i < 2 ? NODE_DATA : NODE_SENTINEL,
					  i == 0 ? 0 : s->server[0].port };

		if (!start_node(n, &l))
			sentinel_abort(s, "redis-server (%s) did not start",
				       TKSHM_REDIS_SERVER);
		if (i >= 2)
			tune_sentinel(n);
	}
	/* Sentinels find each other through the primary's hello channel,
	 * published every 2 s. */
	deadline = tkt_seconds() + FAILOVER_WAIT_S;
	while (!set_settled(s)) {
		if (tkt_seconds() > deadline)
			sentinel_abort(s, "the sentinels did not settle");
		sleep_ms(POLL_EVERY_MS);
	}
	for (int i = 0; i < TKT_SENTINELS; i++)
		len += (size_t)snprintf(s->addrs + len, sizeof s->addrs - len,
					"%s127.0.0.1:%d", i > 0 ? "," : "",
					s->sentinel[i].port);
}

void
tkt_sentinel_stop(struct tkt_sentinel_set *s)
{
	if (s->owner != getpid() || s->dir[0] == '\0')
		return;
	/* Sentinels first: none fails over a primary stopping first. */
	stop_nodes(s->sentinel, TKT_SENTINELS);
	stop_nodes(s->server, 2);
	remove_tree(s->dir);
	s->dir[0] = '\0';
}

const char *
tkt_sentinel_addrs(struct tkt_sentinel_set *s)
{
	return s->addrs;
}

int
tkt_sentinel_primary_port(struct tkt_sentinel_set *s)
{
	return s->server[s->primary].port;
}

/* Every sentinel names server `to`, which says it is a master. */
static bool
switched(const struct tkt_sentinel_set *s, int to)
{
	if (!node_is_master(&s->server[to]))
		return false;
	for (int i = 0; i < TKT_SENTINELS; i++)
		if (!sentinel_names(&s->sentinel[i], s->server[to].port))
			return false;
	return true;
}

static void
wait_switched(struct tkt_sentinel_set *s, int to)
{
	double deadline = tkt_seconds() + FAILOVER_WAIT_S;

	while (!switched(s, to)) {
		if (tkt_seconds() > deadline) {
			show_logs(s->sentinel, TKT_SENTINELS);
			fail_msg("the sentinels did not switch to port %d",
				 s->server[to].port);
		}
		sleep_ms(POLL_EVERY_MS);
	}
	s->primary = to;
}

/* Sentinel 0 names the primary on `port` and runs no failover. */
static bool
failover_idle(const struct tkt_sentinel_set *s, int port)
{
	redisReply *r;
	bool idle;

	if (!sentinel_names(&s->sentinel[0], port))
		return false;
	r = node_try(&s->sentinel[0], POLL_TIMEOUT_MS, "SENTINEL MASTER %s",
		     SENTINEL_NAME);
	idle = r != NULL && r->type == REDIS_REPLY_ARRAY &&
	       strstr(field_of(r, "flags"), "failover_in_progress") == NULL;
	if (r != NULL)
		freeReplyObject(r);
	return idle;
}

void
tkt_sentinel_failover(struct tkt_sentinel_set *s)
{
	double deadline = tkt_seconds() + FAILOVER_WAIT_S;
	int to = 1 - s->primary, from_port = s->server[s->primary].port;
	char why[128] = "not started";

	while (!switched(s, to)) {
		if (tkt_seconds() > deadline) {
			show_logs(s->sentinel, TKT_SENTINELS);
			fail_msg("SENTINEL FAILOVER to port %d: %s",
				 s->server[to].port, why);
		}
		/* Asked again while no failover runs: the sentinel answers
		 * NOGOODSLAVE until it has read the replica's INFO, and a
		 * stall that outlasts the failover timeout aborts one. */
		if (failover_idle(s, from_port)) {
			redisReply *r =
				node_try(&s->sentinel[0], POLL_TIMEOUT_MS,
					 "SENTINEL FAILOVER %s", SENTINEL_NAME);

			snprintf(why, sizeof why, "%s",
				 r != NULL && r->str != NULL ? r->str :
							       "no reply");
			if (r != NULL)
				freeReplyObject(r);
		}
		sleep_ms(POLL_EVERY_MS);
	}
	s->primary = to;
	/* The former primary is made a replica when a sentinel next reads
	 * its INFO: not waited for (~10 s). */
}

void
tkt_sentinel_kill_primary(struct tkt_sentinel_set *s)
{
	struct tkt_node *p = &s->server[s->primary];

	if (p->pid == 0)
		fail_msg("the primary (port %d) is not running", p->port);
	kill(p->pid, SIGKILL);
	reap(p);
}

void
tkt_sentinel_wait_promoted(struct tkt_sentinel_set *s)
{
	wait_switched(s, 1 - s->primary);
}
