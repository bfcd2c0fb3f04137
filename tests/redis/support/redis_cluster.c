/*
 * redis_cluster.c - a private Redis Cluster or Sentinel set for one test
 * (redis_cluster.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_support.h"
#include "redis_cluster.h"

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
#define MIGRATE_BATCH	100
#define SENTINEL_NAME	"mymaster"

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
 * Processes
 * ---------------------------------------------------------------------- */

/* The servers' options beyond redis_server.c's: the notices in the logs;
 * 7.0 delays a replica's first sync by 5 s otherwise, and a cluster
 * replica never synced cannot fail over. */
static const char *const data_args[] = { "--loglevel", "notice",
					 "--repl-diskless-sync-delay", "0",
					 NULL };
static const char *const node_args[] = { "--loglevel",
					 "notice",
					 "--repl-diskless-sync-delay",
					 "0",
					 "--cluster-node-timeout",
					 "1000",
					 NULL };
static const char *const sentinel_args[] = { "--sentinel", "--loglevel",
					     "notice", NULL };

/* A sentinel's configuration (the options come from the command line),
 * which it rewrites: in its own directory. */
static void
write_sentinel_conf(const struct tkt_redis *n, int primary)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", n->dir, n->conf);
	if ((f = fopen(path, "w")) == NULL)
		fail_msg("%s: %s", path, strerror(errno));
	fprintf(f,
		"sentinel monitor %s 127.0.0.1 %d 2\n"
		"sentinel down-after-milliseconds %s 1000\n"
		"sentinel failover-timeout %s 3000\n"
		"sentinel parallel-syncs %s 1\n",
		SENTINEL_NAME, primary, SENTINEL_NAME, SENTINEL_NAME,
		SENTINEL_NAME);
	if (fclose(f) != 0)
		fail_msg("%s: %s", path, strerror(errno));
}

static void
show_logs(const struct tkt_redis *nodes, int count)
{
	for (int i = 0; i < count; i++)
		tkt_redis_show_log(&nodes[i]);
}

/* ------------------------------------------------------------------------
 * Commands
 * ---------------------------------------------------------------------- */

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
node_says(const struct tkt_redis *n, const char *cmd, const char *field,
	  const char *want)
{
	redisReply *r = tkt_redis_try(n, POLL_TIMEOUT_MS, cmd);
	bool yes = info_is(r, field, want);

	if (r != NULL)
		freeReplyObject(r);
	return yes;
}

/* ROLE's first element is "master". */
static bool
node_is_master(const struct tkt_redis *n)
{
	redisReply *r = tkt_redis_try(n, POLL_TIMEOUT_MS, "ROLE");
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
		tkt_redis_try(&c->node[from], POLL_TIMEOUT_MS, "CLUSTER NODES");
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
		tkt_redis_try(&c->node[from], POLL_TIMEOUT_MS, "CLUSTER SLOTS");
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
	pid = tkt_redis_exec(argv, c->dir, log);
	status = tkt_wait_bounded(pid, FORM_WAIT_S);
	if (status != 0) {
		tkt_redis_show_file(log, "redis-cli");
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
		const struct tkt_redis *n = &c->node[i];

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
	size_t len = 0;

	memset(c, 0, sizeof *c);
	c->owner = getpid();
	c->mig_slot = c->mig_from = c->mig_to = -1;
	tkt_redis_mkdir(c->dir, sizeof c->dir, "tkt-cluster-");
	for (int i = 0; i < TKT_CLUSTER_NODES; i++) {
		tkt_redis_init(&c->node[i], c->dir, node_args);
		c->node[i].cluster = true;
		if (!tkt_redis_run(&c->node[i]))
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
	tkt_redis_stop_all(c->node, TKT_CLUSTER_NODES);
	tkt_redis_rmdir(c->dir);
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

static const struct tkt_redis *
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
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = tkt_redis_vcmdf(live_node(c, node), fmt, ap);
	va_end(ap);
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
	tkt_redis_kill(&c->node[node]);
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
		r = tkt_redis_try(&c->node[rep], POLL_TIMEOUT_MS,
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
	r = tkt_redis_argv(live_node(c, c->mig_from), k, argv, lens);
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
	expect_status(tkt_redis_argv(live_node(c, c->mig_from), 6, argv, lens),
		      "OK", "MIGRATE", c->node[c->mig_from].port);
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
sentinel_names(const struct tkt_redis *n, int port)
{
	redisReply *r = tkt_redis_try(n, POLL_TIMEOUT_MS,
				      "SENTINEL get-master-addr-by-name %s",
				      SENTINEL_NAME);
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
sentinel_settled(const struct tkt_redis *n, int port)
{
	redisReply *r;
	bool yes;

	if (!sentinel_names(n, port))
		return false;
	r = tkt_redis_try(n, POLL_TIMEOUT_MS, "SENTINEL MASTER %s",
			  SENTINEL_NAME);
	yes = r != NULL && r->type == REDIS_REPLY_ARRAY &&
	      strcmp(field_of(r, "flags"), "master") == 0 &&
	      strcmp(field_of(r, "num-other-sentinels"), "2") == 0 &&
	      strcmp(field_of(r, "num-slaves"), "1") == 0;
	if (r != NULL)
		freeReplyObject(r);
	if (!yes)
		return false;
	r = tkt_redis_try(n, POLL_TIMEOUT_MS, "SENTINEL CKQUORUM %s",
			  SENTINEL_NAME);
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
tune_sentinel(const struct tkt_redis *n)
{
	redisReply *r = tkt_redis_try(n, CTL_TIMEOUT_S * 1000L,
				      "SENTINEL DEBUG tilt-period 2000 "
				      "publish-period 500");

	if (r != NULL)
		freeReplyObject(r);
}

/* REPLICAOF the primary on `port` (once started: the arguments of a
 * server must outlive it). */
static void
replicate(const struct tkt_redis *n, int port)
{
	char arg[16];

	snprintf(arg, sizeof arg, "%d", port);
	expect_status(tkt_redis_cmd(n, "REPLICAOF", "127.0.0.1", arg, NULL),
		      "OK", "REPLICAOF", n->port);
}

static bool
set_settled(const struct tkt_sentinel_set *s)
{
	const struct tkt_redis *p = &s->server[s->primary];
	const struct tkt_redis *rep = &s->server[1 - s->primary];
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
	tkt_redis_mkdir(s->dir, sizeof s->dir, "tkt-sentinel-");
	for (int i = 0; i < 2 + TKT_SENTINELS; i++) {
		struct tkt_redis *n =
			i < 2 ? &s->server[i] : &s->sentinel[i - 2];

		tkt_redis_init(n, s->dir, i < 2 ? data_args : sentinel_args);
		if (i >= 2) {
			n->conf = "sentinel.conf";
			write_sentinel_conf(n, s->server[0].port);
		}
		if (!tkt_redis_run(n))
			sentinel_abort(s, "redis-server (%s) did not start",
				       TKSHM_REDIS_SERVER);
		if (i == 1)
			replicate(n, s->server[0].port);
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
	tkt_redis_stop_all(s->sentinel, TKT_SENTINELS);
	tkt_redis_stop_all(s->server, 2);
	tkt_redis_rmdir(s->dir);
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
	r = tkt_redis_try(&s->sentinel[0], POLL_TIMEOUT_MS,
			  "SENTINEL MASTER %s", SENTINEL_NAME);
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
			redisReply *r = tkt_redis_try(
				&s->sentinel[0], POLL_TIMEOUT_MS,
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
	struct tkt_redis *p = &s->server[s->primary];

	if (p->pid == 0)
		fail_msg("the primary (port %d) is not running", p->port);
	tkt_redis_kill(p);
}

void
tkt_sentinel_wait_promoted(struct tkt_sentinel_set *s)
{
	wait_switched(s, 1 - s->primary);
}
