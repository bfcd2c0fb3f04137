/*
 * test_cluster_support.c - the Redis Cluster and Sentinel test support
 * (support/redis_cluster.h) against real servers, so the tests built on
 * it can trust what it says: key slots as Redis computes them, a cluster
 * whose records match CLUSTER SLOTS, a slot moved with its keys (and ASK
 * half-way), a master's replica promoted, a sentinel failover and a
 * primary's death.
 *
 * Skipped (exit 77) without redis-cli, which makes the cluster.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_support.h"
#include "redis_cluster.h"

#define SKIP 77

static struct tkt_cluster cluster;
static struct tkt_sentinel_set sentinels;

static int
cluster_setup(void **state)
{
	(void)state;
	tkt_cluster_start(&cluster);
	return 0;
}

static int
cluster_teardown(void **state)
{
	(void)state;
	tkt_cluster_stop(&cluster);
	return 0;
}

static int
sentinel_setup(void **state)
{
	(void)state;
	tkt_sentinel_start(&sentinels);
	return 0;
}

static int
sentinel_teardown(void **state)
{
	(void)state;
	tkt_sentinel_stop(&sentinels);
	return 0;
}

static int
slot_of(const char *key)
{
	return tkt_key_slot(key, strlen(key));
}

/* Fails unless the reply is a status reply "OK"; frees it. */
static void
expect_ok(redisReply *r, const char *what)
{
	if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "OK") != 0)
		fail_msg("%s: %s", what, r->str != NULL ? r->str : "?");
	freeReplyObject(r);
}

/* Fails unless the reply is the string `want`; frees it. */
static void
expect_str(redisReply *r, const char *want, const char *what)
{
	if (r->type != REDIS_REPLY_STRING || strcmp(r->str, want) != 0)
		fail_msg("%s: %s, wanted \"%s\"", what,
			 r->str != NULL ? r->str : "(no string)", want);
	freeReplyObject(r);
}

static long long
cluster_int(int node, const char *fmt, int arg)
{
	redisReply *r = tkt_cluster_cmd(&cluster, node, fmt, arg);
	long long v;

	if (r->type != REDIS_REPLY_INTEGER)
		fail_msg("\"%s\": not an integer", fmt);
	v = r->integer;
	freeReplyObject(r);
	return v;
}

/* ------------------------------------------------------------------------
 * Key slots (no server)
 * ---------------------------------------------------------------------- */

static void
test_key_slot_tags(void **state)
{
	(void)state;
	/* The spec's check value of CRC16-XMODEM: 0x31C3. */
	assert_int_equal(slot_of("123456789"), 12739);
	assert_int_equal(slot_of("foo{bar}zap"), slot_of("bar"));
	assert_int_equal(slot_of("foo{bar}{zap}"), slot_of("bar"));
	assert_int_equal(slot_of("foo{{bar}}zap"), slot_of("{bar"));
	/* An empty tag, or none closed: the whole key. */
	assert_int_equal(slot_of("{}x"), tkt_key_slot("{}x", 3));
	assert_int_not_equal(slot_of("{}x"), slot_of("x"));
	assert_int_not_equal(slot_of("a{b"), slot_of("b"));
	assert_int_equal(tkt_key_slot("", 0), 0);
}

/* ------------------------------------------------------------------------
 * The cluster
 * ---------------------------------------------------------------------- */

static void
check_records(void)
{
	char want[96];
	size_t len = 0;
	int masters = 0;

	for (int i = 0; i < TKT_CLUSTER_NODES; i++) {
		if (!cluster.master[i]) {
			assert_true(cluster.master[cluster.replica_of[i]]);
			continue;
		}
		masters++;
		assert_int_equal(cluster.replica_of[cluster.replica[i]], i);
		len += (size_t)snprintf(want + len, sizeof want - len,
					"%s127.0.0.1:%d", len ? "," : "",
					cluster.node[i].port);
		for (int k = 0; k < cluster.nranges[i]; k++) {
			assert_int_equal(
				tkt_cluster_master_of_slot(
					&cluster, cluster.range[i][k].lo),
				i);
			assert_int_equal(
				tkt_cluster_master_of_slot(
					&cluster, cluster.range[i][k].hi),
				i);
		}
	}
	assert_int_equal(masters, 3);
	assert_string_equal(tkt_cluster_seeds(&cluster), want);
}

static void
check_key_slots(void)
{
	static const char *const keys[] = {
		"123456789", "foo{bar}zap",   "{}x",
		"a{b",	     "foo{{bar}}zap", "foo{bar}{zap}",
		"{}",	     "}{x}",	      "tkshm:{api:42}:w",
		"",
	};
	char bin[] = { 'k', '\0', '{', '\xff', '}', '\n' };

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		long long want;
		redisReply *r = tkt_cluster_cmd(&cluster, 0,
						"CLUSTER KEYSLOT %s", keys[i]);

		assert_int_equal(r->type, REDIS_REPLY_INTEGER);
		want = r->integer;
		freeReplyObject(r);
		if (slot_of(keys[i]) != want)
			fail_msg("\"%s\": slot %d, Redis says %lld", keys[i],
				 slot_of(keys[i]), want);
	}
	redisReply *r = tkt_cluster_cmd(&cluster, 0, "CLUSTER KEYSLOT %b", bin,
					sizeof bin);
	assert_int_equal(r->integer, tkt_key_slot(bin, sizeof bin));
	freeReplyObject(r);
}

/* A connection over the unix socket `path`, or to 127.0.0.1:port. */
static redisContext *
connect_to(const char *path, int port)
{
	const struct timeval tv = { 5, 0 };
	redisContext *c =
		path != NULL ? redisConnectUnixWithTimeout(path, tv) :
			       redisConnectWithTimeout("127.0.0.1", port, tv);

	if (c == NULL || c->err != 0 || redisSetTimeout(c, tv) != 0)
		fail_msg("connecting to %s:%d: %s", path ? path : "127.0.0.1",
			 port, c != NULL ? c->errstr : "out of memory");
	return c;
}

/* SET, then WAIT for the replica on the same connection (WAIT counts the
 * writes of its own connection: on a new one it waits for nothing), so
 * the key survives a failover.  Frees c. */
static void
set_acked(redisContext *c, const char *key, const char *value)
{
	redisReply *r = redisCommand(c, "SET %s %s", key, value);

	if (r == NULL)
		fail_msg("SET %s: %s", key, c->errstr);
	expect_ok(r, "SET");
	if ((r = redisCommand(c, "WAIT 1 5000")) == NULL)
		fail_msg("WAIT: %s", c->errstr);
	assert_int_equal(r->type, REDIS_REPLY_INTEGER);
	assert_int_equal(r->integer, 1);
	freeReplyObject(r);
	redisFree(c);
}

/* A key served by master m: "key:N" for the first N that lands there. */
static void
key_on(int m, char *key, size_t size)
{
	for (int n = 0;; n++) {
		snprintf(key, size, "key:%d", n);
		if (tkt_cluster_master_of_slot(&cluster, slot_of(key)) == m)
			return;
	}
}

/* SET on the key's master (acknowledged by its replica); MOVED from
 * another master. */
static void
set_on_each_master(char keys[][32])
{
	for (int m = 0; m < TKT_CLUSTER_NODES; m++) {
		int other = (m + 1) % TKT_CLUSTER_NODES;
		char value[16];
		redisReply *r;

		if (!cluster.master[m])
			continue;
		key_on(m, keys[m], 32);
		snprintf(value, sizeof value, "v%d", m);
		set_acked(connect_to(cluster.node[m].unix_path, 0), keys[m],
			  value);
		while (!cluster.master[other] || other == m)
			other = (other + 1) % TKT_CLUSTER_NODES;
		r = tkt_cluster_cmd(&cluster, other, "GET %s", keys[m]);
		assert_int_equal(r->type, REDIS_REPLY_ERROR);
		assert_true(strncmp(r->str, "MOVED ", 6) == 0);
		freeReplyObject(r);
	}
}

/* Another master than m. */
static int
other_master(int m)
{
	for (int i = 0; i < TKT_CLUSTER_NODES; i++)
		if (cluster.master[i] && cluster.node[i].pid != 0 && i != m)
			return i;
	fail_msg("no other master than %d", m);
	return -1;
}

/* 250 keys (3 MIGRATE batches) of one slot moved to another master. */
static void
check_migrate(void)
{
	int slot = slot_of("{mig}");
	int from = tkt_cluster_master_of_slot(&cluster, slot);
	int to = other_master(from);

	for (int i = 0; i < 250; i++)
		expect_ok(tkt_cluster_cmd(&cluster, from, "SET k%d{mig} %d", i,
					  i),
			  "SET");
	tkt_cluster_migrate_slot(&cluster, slot, to);
	assert_int_equal(tkt_cluster_master_of_slot(&cluster, slot), to);
	assert_int_equal(cluster_int(to, "CLUSTER COUNTKEYSINSLOT %d", slot),
			 250);
	assert_int_equal(cluster_int(from, "CLUSTER COUNTKEYSINSLOT %d", slot),
			 0);
	expect_str(tkt_cluster_cmd(&cluster, to, "GET k249{mig}"), "249",
		   "GET after the move");
}

/* Half-way: the moved key answers ASK at the source, the other one is
 * still served there. */
static void
check_ask(void)
{
	int slot = slot_of("{ask}");
	int from = tkt_cluster_master_of_slot(&cluster, slot);
	int to = other_master(from);
	char want[64];
	redisReply *r;

	expect_ok(tkt_cluster_cmd(&cluster, from, "SET a{ask} 1"), "SET");
	expect_ok(tkt_cluster_cmd(&cluster, from, "SET b{ask} 2"), "SET");
	assert_int_equal(tkt_cluster_migrate_begin(&cluster, slot, to, 0), 0);
	tkt_cluster_migrate_key(&cluster, "a{ask}", 6);
	r = tkt_cluster_cmd(&cluster, from, "GET a{ask}");
	snprintf(want, sizeof want, "ASK %d 127.0.0.1:%d", slot,
		 cluster.node[to].port);
	assert_int_equal(r->type, REDIS_REPLY_ERROR);
	assert_string_equal(r->str, want);
	freeReplyObject(r);
	expect_str(tkt_cluster_cmd(&cluster, from, "GET b{ask}"), "2",
		   "GET of a key not moved yet");
	/* The target redirects clients that did not send ASKING. */
	r = tkt_cluster_cmd(&cluster, to, "GET a{ask}");
	assert_int_equal(r->type, REDIS_REPLY_ERROR);
	assert_true(strncmp(r->str, "MOVED ", 6) == 0);
	freeReplyObject(r);
	tkt_cluster_migrate_end(&cluster);
	assert_int_equal(tkt_cluster_master_of_slot(&cluster, slot), to);
	expect_str(tkt_cluster_cmd(&cluster, to, "GET b{ask}"), "2",
		   "GET after the move");
}

static void
check_failover(char keys[][32])
{
	int dead = other_master(-1), r = cluster.replica[dead];
	int slot = slot_of(keys[dead]), mig = slot_of("{mig}");
	bool imported = tkt_cluster_master_of_slot(&cluster, mig) == dead;
	char want[16];

	/* The keys it imported (MIGRATE) on its replica too. */
	tkt_cluster_wait_replicated(&cluster, dead);
	tkt_cluster_kill_master(&cluster, dead);
	tkt_cluster_wait_promoted(&cluster, dead);
	assert_true(cluster.master[r]);
	assert_int_equal(cluster.replica[r], -1);
	assert_int_equal(tkt_cluster_master_of_slot(&cluster, slot), r);
	for (int i = 0; i < TKT_CLUSTER_NODES; i++) {
		if (i == dead || !cluster.master[i] || keys[i][0] == '\0')
			continue;
		snprintf(want, sizeof want, "v%d", i);
		expect_str(tkt_cluster_cmd(&cluster, i, "GET %s", keys[i]),
			   want, "GET on a live master");
	}
	if (imported)
		assert_int_equal(
			cluster_int(r, "CLUSTER COUNTKEYSINSLOT %d", mig), 250);
	snprintf(want, sizeof want, "v%d", dead);
	expect_str(tkt_cluster_cmd(&cluster, r, "GET %s", keys[dead]), want,
		   "GET on the promoted replica");
}

static void
test_cluster(void **state)
{
	char keys[TKT_CLUSTER_NODES][32] = { { 0 } };

	(void)state;
	check_records();
	check_key_slots();
	set_on_each_master(keys);
	check_migrate();
	check_ask();
	check_records();
	check_failover(keys);
}

/* ------------------------------------------------------------------------
 * Sentinel
 * ---------------------------------------------------------------------- */

static redisReply *
tcp_cmd(int port, const char *fmt, ...)
{
	redisContext *c = connect_to(NULL, port);
	redisReply *r;
	va_list ap;

	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	if (r == NULL)
		fail_msg("\"%s\" to port %d: %s", fmt, port, c->errstr);
	redisFree(c);
	return r;
}

static void
expect_role(int port, const char *want)
{
	redisReply *r = tcp_cmd(port, "ROLE");

	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	assert_string_equal(r->element[0]->str, want);
	freeReplyObject(r);
}

static void
check_addrs(void)
{
	char want[96];

	snprintf(want, sizeof want, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
		 sentinels.sentinel[0].port, sentinels.sentinel[1].port,
		 sentinels.sentinel[2].port);
	assert_string_equal(tkt_sentinel_addrs(&sentinels), want);
	assert_int_equal(tkt_sentinel_primary_port(&sentinels),
			 sentinels.server[0].port);
	expect_role(sentinels.server[0].port, "master");
	expect_role(sentinels.server[1].port, "slave");
}

static void
test_sentinel_failover(void **state)
{
	int replica = sentinels.server[1].port;

	(void)state;
	check_addrs();
	set_acked(connect_to(NULL, tkt_sentinel_primary_port(&sentinels)), "k",
		  "v");
	tkt_sentinel_failover(&sentinels);
	assert_int_equal(tkt_sentinel_primary_port(&sentinels), replica);
	expect_role(replica, "master");
	expect_str(tcp_cmd(replica, "GET k"), "v", "GET on the new primary");
}

static void
test_sentinel_kill(void **state)
{
	int replica = sentinels.server[1].port;

	(void)state;
	check_addrs();
	tkt_sentinel_kill_primary(&sentinels);
	tkt_sentinel_wait_promoted(&sentinels);
	assert_int_equal(tkt_sentinel_primary_port(&sentinels), replica);
	expect_role(replica, "master");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_slot_tags),
		cmocka_unit_test_setup_teardown(test_cluster, cluster_setup,
						cluster_teardown),
		cmocka_unit_test_setup_teardown(test_sentinel_failover,
						sentinel_setup,
						sentinel_teardown),
		cmocka_unit_test_setup_teardown(
			test_sentinel_kill, sentinel_setup, sentinel_teardown),
	};

	if (!tkt_cluster_available()) {
		printf("redis-cli not found: skipped\n");
		return SKIP;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
