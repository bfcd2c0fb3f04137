/*
 * tier_cluster.c - the Redis Cluster of tkshm_bench_redis_tier (see
 * tier_cluster.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "cleanup.h"
#include "tier_cluster.h"
#include "tsc.h"

/* A node's first PING; ports tried per node (each one taken by someone
 * else first). */
#define TC_START_WAIT_S 5.0
#define TC_START_TRIES	20
/* Formation: create ~1 s, cluster_state:ok ~2 s after the start, the
 * replicas' links ~0.05 s later (at node timeout 1 s). */
#define TC_FORM_WAIT_S 30.0
#define TC_STOP_WAIT_S 5.0
/* Redis wants the bus port (port + 10000) below 65536: ours stay below
 * 55536, so node ports below 45536. */
#define TC_BUS_OFFSET 10000
#define TC_PORT_MAX   45536
#define TC_POLL_S     0.02
#define TC_LOG_TAIL   8

/* ------------------------------------------------------------------------
 * Files and processes
 * ---------------------------------------------------------------------- */

/* True when `prog` is an executable file in a directory of PATH; its
 * path goes into full. */
static bool
tc_which(const char *prog, char *full, size_t full_len)
{
	const char *path = getenv("PATH");

	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path) {
		size_t n = strcspn(path, ":");

		if (n > 0) {
			snprintf(full, full_len, "%.*s/%s", (int)n, path, prog);
			if (access(full, X_OK) == 0)
				return true;
		}
		path += n;
		if (*path == ':')
			path++;
	}
	return false;
}

static void
tc_remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX];
	struct stat st;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
			tc_remove_tree(path);
		else
			unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

/* A signal ends the benchmark with cleanup.c, which kills the nodes but
 * cannot remove their directory: a start removes those whose benchmark
 * (the pid in their file `owner`) is gone. */
static void
tc_sweep(void)
{
	DIR *d = opendir("/tmp");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		char dir[PATH_MAX], owner[PATH_MAX + 8];
		FILE *f;
		int pid = 0;

		if (strncmp(e->d_name, "tkshm-cluster.", 14) != 0)
			continue;
		snprintf(dir, sizeof dir, "/tmp/%s", e->d_name);
		snprintf(owner, sizeof owner, "%s/owner", dir);
		if (!(f = fopen(owner, "r")))
			continue; /* being made, or not ours to judge */
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
		if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)
			tc_remove_tree(dir);
	}
	closedir(d);
}

/* The last lines of a log on stderr, to explain a failed start (the
 * directory is removed next). */
static void
tc_show_tail(const char *path, const char *label)
{
	char *lines[TC_LOG_TAIL] = { 0 }, line[512];
	FILE *f = fopen(path, "r");
	int next = 0;

	if (!f)
		return;
	while (fgets(line, sizeof line, f)) {
		free(lines[next]);
		lines[next] = strdup(line);
		next = (next + 1) % TC_LOG_TAIL;
	}
	fclose(f);
	for (int i = 0; i < TC_LOG_TAIL; i++) {
		char *l = lines[(next + i) % TC_LOG_TAIL];

		if (l)
			fprintf(stderr, "%s: %s", label, l);
		free(l);
	}
}

/* Runs argv[0] (a full path) in `dir`, its output appended to `log`.  The
 * child dies with the benchmark (cleanup_child) and keeps none of its
 * descriptors. */
static pid_t
tc_spawn(char *const *argv, const char *dir, const char *log)
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	pid = fork();
	if (pid != 0)
		return pid; /* the child's pid, or -1 */
	cleanup_child(parent);
	{
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
	}
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	if (chdir(dir) != 0)
		_exit(127);
	execv(argv[0], argv);
	_exit(127);
}

/* ------------------------------------------------------------------------
 * Ports
 * ---------------------------------------------------------------------- */

static bool
tc_port_free(int port)
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

/* A port whose bus port is free too, not one of ours already: below the
 * kernel's ephemeral ports (no client socket holds them) and below
 * TC_PORT_MAX.  -1 when none was found. */
static int
tc_pick_port(const struct tier_cluster *c)
{
	static unsigned long long rng;
	int lo = 10000, hi = 32768 - TC_BUS_OFFSET, eph = 32768, unused;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f) {
		if (fscanf(f, "%d %d", &eph, &unused) == 2)
			hi = eph - TC_BUS_OFFSET;
		fclose(f);
	}
	if (hi > TC_PORT_MAX)
		hi = TC_PORT_MAX;
	/* Too few below the ephemeral ports: bind() still says what is
	 * free now. */
	if (hi - lo < 2000)
		hi = TC_PORT_MAX;
	if (rng == 0) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		rng = ((unsigned long long)getpid() << 32) ^
		      (unsigned long long)ts.tv_nsec ^ 0x9E3779B97F4A7C15ULL;
	}
	for (int i = 0; i < 1000; i++) {
		bool taken = false;
		int port;

		/* xorshift64 */
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		port = lo + (int)((rng >> 16) % (unsigned long long)(hi - lo));
		for (int k = 0; k < TC_NODES; k++)
			taken |= c->port[k] == port ||
				 c->port[k] + TC_BUS_OFFSET == port ||
				 c->port[k] == port + TC_BUS_OFFSET;
		if (!taken && tc_port_free(port) &&
		    tc_port_free(port + TC_BUS_OFFSET))
			return port;
	}
	return -1;
}

/* ------------------------------------------------------------------------
 * Commands
 * ---------------------------------------------------------------------- */

/* One command over a new connection (1 s timeouts); NULL when the node
 * does not answer. */
static redisReply *
tc_cmd(int port, const char *fmt, ...)
{
	struct timeval tv = { 1, 0 };
	redisContext *ctx = redisConnectWithTimeout("127.0.0.1", port, tv);
	redisReply *r = NULL;
	va_list ap;

	if (!ctx)
		return NULL;
	if (ctx->err == 0 && redisSetTimeout(ctx, tv) == REDIS_OK) {
		va_start(ap, fmt);
		r = redisvCommand(ctx, fmt, ap);
		va_end(ap);
	}
	redisFree(ctx);
	return r;
}

/* True when an INFO-like text reply holds the line `field:want`. */
static bool
tc_info_is(const redisReply *r, const char *field, const char *want)
{
	size_t fl = strlen(field), wl = strlen(want);

	if (!r || r->type != REDIS_REPLY_STRING)
		return false;
	for (const char *p = r->str; p; p = strchr(p, '\n')) {
		const char *v;

		if (*p == '\n')
			p++;
		if (strncmp(p, field, fl) != 0 || p[fl] != ':')
			continue;
		v = p + fl + 1;
		return strncmp(v, want, wl) == 0 &&
		       (v[wl] == '\r' || v[wl] == '\n' || v[wl] == '\0');
	}
	return false;
}

/* The number after `field:` in an INFO-like text reply, -1 when none. */
static long
tc_info_num(const redisReply *r, const char *field)
{
	size_t fl = strlen(field);

	if (!r || r->type != REDIS_REPLY_STRING)
		return -1;
	for (const char *p = r->str; p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, field, fl) == 0 && p[fl] == ':')
			return strtol(p + fl + 1, NULL, 10);
	}
	return -1;
}

static bool
tc_says(int port, const char *cmd, const char *field, const char *want)
{
	redisReply *r = tc_cmd(port, cmd);
	bool yes = tc_info_is(r, field, want);

	if (r)
		freeReplyObject(r);
	return yes;
}

static int
tc_node_of_port(const struct tier_cluster *c, long long port)
{
	for (int i = 0; i < TC_NODES; i++)
		if (c->port[i] == port)
			return i;
	return -1;
}

/* CLUSTER SLOTS of node 0: [start, end, [ip, port, id, ...], replicas...]
 * (7.0 adds a metadata element to each node: fields 0-2 are read).  True
 * once it gives every slot to one of 3 masters of ours; fills the slot
 * map, master_port and seeds.  (Its replicas are not read: 7.0 leaves
 * out a replica whose replication offset is still 0, which on an empty
 * data set lasts until the master's first ping to it, 10 s.) */
static bool
tc_read_slots(struct tier_cluster *c)
{
	redisReply *r = tc_cmd(c->port[0], "CLUSTER SLOTS");
	int masters = 0, covered = 0;
	long long first[TC_MASTERS];
	bool ok = false;
	size_t len = 0;

	if (!r)
		return false;
	if (r->type != REDIS_REPLY_ARRAY)
		goto out;
	/* Masters in order of their lowest slot: the same order for the
	 * same layout whatever order SLOTS lists them in. */
	memset(c->master_port, 0, sizeof c->master_port);
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < r->elements; i++) {
			redisReply *e = r->element[i], *m;
			long long lo, hi;
			int k;

			if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
			    e->element[0]->type != REDIS_REPLY_INTEGER ||
			    e->element[1]->type != REDIS_REPLY_INTEGER ||
			    e->element[2]->type != REDIS_REPLY_ARRAY ||
			    e->element[2]->elements < 2 ||
			    e->element[2]->element[1]->type !=
				    REDIS_REPLY_INTEGER)
				goto out;
			lo = e->element[0]->integer;
			hi = e->element[1]->integer;
			m = e->element[2];
			if (lo < 0 || hi >= TC_SLOTS || lo > hi ||
			    tc_node_of_port(c, m->element[1]->integer) < 0)
				goto out;
			for (k = 0; k < masters; k++)
				if (c->master_port[k] == m->element[1]->integer)
					break;
			if (pass == 0) {
				if (k == masters) {
					if (masters == TC_MASTERS)
						goto out;
					first[k] = lo;
					c->master_port[masters++] =
						(int)m->element[1]->integer;
				} else if (lo < first[k]) {
					first[k] = lo;
				}
				continue;
			}
			for (long long s = lo; s <= hi; s++)
				c->slot_master[s] = (unsigned char)k;
			covered += (int)(hi - lo + 1);
		}
		/* (insertion sort of at most 3, by lowest slot) */
		for (int a = 1; pass == 0 && a < masters; a++)
			for (int b = a; b > 0 && first[b] < first[b - 1]; b--) {
				long long f = first[b];
				int p = c->master_port[b];

				first[b] = first[b - 1];
				c->master_port[b] = c->master_port[b - 1];
				first[b - 1] = f;
				c->master_port[b - 1] = p;
			}
	}
	ok = masters == TC_MASTERS && covered == TC_SLOTS;
	for (int k = 0; ok && k < TC_MASTERS; k++)
		len += (size_t)snprintf(c->seeds + len, sizeof c->seeds - len,
					"%s127.0.0.1:%d", k ? "," : "",
					c->master_port[k]);
out:
	freeReplyObject(r);
	return ok;
}

static bool
tc_is_master(const struct tier_cluster *c, int node)
{
	for (int k = 0; k < TC_MASTERS; k++)
		if (c->master_port[k] == c->port[node])
			return true;
	return false;
}

/* ------------------------------------------------------------------------
 * Start and stop
 * ---------------------------------------------------------------------- */

/* Starts node i on a free port, again on another when its port was
 * taken.  0, or -1 with why. */
static int
tc_start_node(struct tier_cluster *c, int i, const char *server, char *why,
	      size_t why_len)
{
	char dir[96], log[128], conf[128], port[16];
	char *argv[] = { (char *)server, "--port", port, "--bind", "127.0.0.1",
			 "--dir", dir, "--logfile", log, "--daemonize", "no",
			 "--cluster-enabled", "yes", "--cluster-config-file",
			 "nodes.conf", "--cluster-node-timeout", "1000",
			 "--save", "", "--appendonly", "no",
			 /* 7.0 delays a replica's first sync by 5 s
			  * otherwise. */
			 "--repl-diskless-sync-delay", "0", NULL };

	snprintf(dir, sizeof dir, "%s/n%d", c->dir, i);
	snprintf(log, sizeof log, "%s/redis.log", dir);
	snprintf(conf, sizeof conf, "%s/nodes.conf", dir);
	if (mkdir(dir, 0700) != 0) {
		snprintf(why, why_len, "mkdir %s: %s", dir, strerror(errno));
		return -1;
	}
	for (int t = 0; t < TC_START_TRIES; t++) {
		double deadline = mono_seconds() + TC_START_WAIT_S;
		bool up = false;

		/* A node that failed on its bus port left its id in
		 * nodes.conf. */
		unlink(conf);
		c->port[i] = 0; /* not counted as taken by itself */
		c->port[i] = tc_pick_port(c);
		if (c->port[i] < 0) {
			c->port[i] = 0;
			snprintf(why, why_len, "no free port pair below %d",
				 TC_PORT_MAX);
			return -1;
		}
		snprintf(port, sizeof port, "%d", c->port[i]);
		c->pid[i] = tc_spawn(argv, dir, log);
		if (c->pid[i] < 0) {
			c->pid[i] = 0;
			snprintf(why, why_len, "fork: %s", strerror(errno));
			return -1;
		}
		cleanup_add_pid(c->pid[i]);
		while (!up && mono_seconds() < deadline) {
			redisReply *r;

			if (waitpid(c->pid[i], NULL, WNOHANG) == c->pid[i]) {
				cleanup_forget_pid(c->pid[i]);
				c->pid[i] = 0;
				break; /* its port was taken: another */
			}
			r = tc_cmd(c->port[i], "PING");
			up = r && r->type == REDIS_REPLY_STATUS &&
			     strcmp(r->str, "PONG") == 0;
			if (r)
				freeReplyObject(r);
			if (!up)
				sleep_seconds(0.005);
		}
		if (up)
			return 0;
		if (c->pid[i] != 0) {
			snprintf(why, why_len,
				 "redis-server on port %d did not answer PING "
				 "within %.0f s",
				 c->port[i], TC_START_WAIT_S);
			return -1;
		}
	}
	snprintf(why, why_len, "redis-server exited at start %d times",
		 TC_START_TRIES);
	return -1;
}

/* redis-cli --cluster create of the 6 nodes, one replica per master,
 * within TC_FORM_WAIT_S.  0, or -1 with why. */
static int
tc_create(struct tier_cluster *c, const char *cli, char *why, size_t why_len)
{
	char addr[TC_NODES][24], log[96];
	char *argv[TC_NODES + 8];
	double deadline = mono_seconds() + TC_FORM_WAIT_S;
	int k = 0, st;
	pid_t pid;

	argv[k++] = (char *)cli;
	argv[k++] = "--cluster";
	argv[k++] = "create";
	for (int i = 0; i < TC_NODES; i++) {
		snprintf(addr[i], sizeof addr[i], "127.0.0.1:%d", c->port[i]);
		argv[k++] = addr[i];
	}
	argv[k++] = "--cluster-replicas";
	argv[k++] = "1";
	argv[k++] = "--cluster-yes";
	argv[k] = NULL;
	snprintf(log, sizeof log, "%s/cli.log", c->dir);
	pid = tc_spawn(argv, c->dir, log);
	if (pid < 0) {
		snprintf(why, why_len, "fork: %s", strerror(errno));
		return -1;
	}
	cleanup_add_pid(pid);
	while (waitpid(pid, &st, WNOHANG) != pid) {
		if (mono_seconds() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			cleanup_forget_pid(pid);
			tc_show_tail(log, "redis-cli");
			snprintf(why, why_len,
				 "redis-cli --cluster create did not finish "
				 "within %.0f s",
				 TC_FORM_WAIT_S);
			return -1;
		}
		sleep_seconds(0.01);
	}
	cleanup_forget_pid(pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		tc_show_tail(log, "redis-cli");
		snprintf(why, why_len, "redis-cli --cluster create failed");
		return -1;
	}
	return 0;
}

/* True when the node (not a master) replicates one of the masters with
 * its link up; `of` gets that master's index. */
static bool
tc_replica_up(const struct tier_cluster *c, int node, int *of)
{
	redisReply *r = tc_cmd(c->port[node], "INFO replication");
	long port = tc_info_num(r, "master_port");
	bool up = tc_info_is(r, "role", "slave") &&
		  tc_info_is(r, "master_link_status", "up");

	if (r)
		freeReplyObject(r);
	for (int k = 0; up && k < TC_MASTERS; k++)
		if (c->master_port[k] == port) {
			*of = k;
			return true;
		}
	return false;
}

/* Every node ok with 6 known nodes, the slot map complete, every other
 * node a replica of one master (each master one), its link up.  0, or
 * -1 with why. */
static int
tc_wait_formed(struct tier_cluster *c, char *why, size_t why_len)
{
	double deadline = mono_seconds() + TC_FORM_WAIT_S;
	int replicas[TC_MASTERS] = { 0 };

	for (int i = 0; i < TC_NODES; i++)
		while (!tc_says(c->port[i], "CLUSTER INFO", "cluster_state",
				"ok") ||
		       !tc_says(c->port[i], "CLUSTER INFO",
				"cluster_known_nodes", "6")) {
			if (mono_seconds() > deadline) {
				snprintf(why, why_len,
					 "port %d: not cluster_state:ok with "
					 "6 nodes within %.0f s",
					 c->port[i], TC_FORM_WAIT_S);
				return -1;
			}
			sleep_seconds(TC_POLL_S);
		}
	while (!tc_read_slots(c)) {
		if (mono_seconds() > deadline) {
			snprintf(why, why_len,
				 "CLUSTER SLOTS: not 3 masters covering "
				 "every slot, each with a replica");
			return -1;
		}
		sleep_seconds(TC_POLL_S);
	}
	for (int i = 0; i < TC_NODES; i++) {
		int of = -1;

		if (tc_is_master(c, i))
			continue;
		while (!tc_replica_up(c, i, &of)) {
			if (mono_seconds() > deadline) {
				snprintf(why, why_len,
					 "port %d: not a replica of a master "
					 "with its link up",
					 c->port[i]);
				return -1;
			}
			sleep_seconds(TC_POLL_S);
		}
		if (replicas[of]++) {
			snprintf(why, why_len,
				 "master on port %d has two replicas",
				 c->master_port[of]);
			return -1;
		}
	}
	return 0;
}

int
tier_cluster_start(struct tier_cluster *c, char *why, size_t why_len)
{
	char server[PATH_MAX], cli[PATH_MAX];

	memset(c, 0, sizeof *c);
	if (!tc_which("redis-server", server, sizeof server) ||
	    !tc_which("redis-cli", cli, sizeof cli)) {
		snprintf(why, why_len,
			 "redis-server and redis-cli not both on PATH "
			 "(install redis-server: scripts/install-deps.sh "
			 "bench)");
		return 1;
	}
	tc_sweep();
	snprintf(c->dir, sizeof c->dir, "/tmp/tkshm-cluster.XXXXXX");
	if (!mkdtemp(c->dir)) {
		snprintf(why, why_len, "mkdtemp: %s", strerror(errno));
		c->dir[0] = '\0';
		return -1;
	}
	{
		char owner[96];
		FILE *f;

		snprintf(owner, sizeof owner, "%s/owner", c->dir);
		if ((f = fopen(owner, "w")) != NULL) {
			fprintf(f, "%d\n", (int)getpid());
			fclose(f);
		}
	}
	for (int i = 0; i < TC_NODES; i++)
		if (tc_start_node(c, i, server, why, why_len) != 0)
			goto fail;
	if (tc_create(c, cli, why, why_len) != 0 ||
	    tc_wait_formed(c, why, why_len) != 0)
		goto fail;
	return 0;
fail:
	for (int i = 0; i < TC_NODES; i++) {
		char path[128], label[32];

		snprintf(path, sizeof path, "%s/n%d/redis.log", c->dir, i);
		snprintf(label, sizeof label, "node %d (port %d)", i,
			 c->port[i]);
		tc_show_tail(path, label);
	}
	tier_cluster_stop(c);
	return -1;
}

void
tier_cluster_stop(struct tier_cluster *c)
{
	double deadline = mono_seconds() + TC_STOP_WAIT_S;

	/* SIGTERM to all at once, then each reaped (SIGKILL past the
	 * deadline). */
	for (int i = 0; i < TC_NODES; i++)
		if (c->pid[i] > 0) {
			kill(c->pid[i], SIGCONT);
			kill(c->pid[i], SIGTERM);
		}
	for (int i = 0; i < TC_NODES; i++) {
		while (c->pid[i] > 0) {
			pid_t got = waitpid(c->pid[i], NULL, WNOHANG);

			if (got == c->pid[i] || (got < 0 && errno != EINTR))
				break;
			if (mono_seconds() > deadline) {
				kill(c->pid[i], SIGKILL);
				waitpid(c->pid[i], NULL, 0);
				break;
			}
			sleep_seconds(0.002);
		}
		if (c->pid[i] > 0)
			cleanup_forget_pid(c->pid[i]);
		c->pid[i] = 0;
	}
	if (c->dir[0]) {
		tc_remove_tree(c->dir);
		c->dir[0] = '\0';
	}
}

int
tier_cluster_flush(const struct tier_cluster *c, char *why, size_t why_len)
{
	for (int k = 0; k < TC_MASTERS; k++) {
		redisReply *r = tc_cmd(c->master_port[k], "FLUSHALL");
		bool ok = r && r->type == REDIS_REPLY_STATUS &&
			  strcmp(r->str, "OK") == 0;

		if (!ok)
			snprintf(why, why_len, "FLUSHALL on port %d: %s",
				 c->master_port[k],
				 r && r->type == REDIS_REPLY_ERROR ?
					 r->str :
					 "no answer");
		if (r)
			freeReplyObject(r);
		if (!ok)
			return -1;
	}
	return 0;
}
