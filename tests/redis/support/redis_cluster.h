/*
 * redis_cluster.h - a private Redis Cluster, or a Sentinel-managed
 * primary, for one test.
 *
 * Every process is a struct tkt_redis started by redis_server.h, with its
 * conventions: a TKSHM_REDIS_SERVER in the foreground on 127.0.0.1, with
 * no persistence (--save "" --appendonly no), also listening on a unix
 * socket in its own directory (commands go there: only our process can
 * have made it), with DEBUG allowed from local clients.  It gets SIGKILL
 * when the thread that started it exits (PR_SET_PDEATHSIG): start sets
 * from the main thread.  All the directories of a set sit in one private
 * directory (mkdtemp under /tmp, tkt_redis_mkdir) naming its test process
 * in a file `owner`; a start removes the directories of test processes
 * that no longer exist.
 *
 * Ports: random, below the kernel's ephemeral range, checked free with
 * bind(); a server that finds its port taken exits and is started again
 * on another.  A cluster node also needs its bus port, port + 10000, and
 * Redis wants that below 65536 and our range below 55536: node ports stay
 * below 45536.
 *
 * Every helper fails the running cmocka test (fail_msg) instead of
 * returning an error, so none may be called in a forked child; only the
 * process that started a set stops it.  A start that fails stops what it
 * started; later failures leave the set for the test's teardown, which
 * calls the stop function (safe on a set whose start failed).
 *
 * The cluster is made by redis-cli --cluster create (TKSHM_REDIS_CLI):
 * a test calls tkt_cluster_available() first and skips without it.
 */
#ifndef TKSHM_TEST_REDIS_CLUSTER_H
#define TKSHM_TEST_REDIS_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <hiredis/hiredis.h>

#include "redis_server.h"

#define TKT_CLUSTER_NODES  6 /* 3 masters, each with one replica */
#define TKT_CLUSTER_RANGES 16
#define TKT_CLUSTER_SLOTS  16384

struct tkt_slot_range {
	int lo, hi; /* inclusive */
};

/* The roles are as of the last start, promotion or migration (from
 * CLUSTER NODES); the indexes are those of node[]. */
struct tkt_cluster {
	pid_t owner; /* the process that started it */
	char dir[64];
	struct tkt_redis node[TKT_CLUSTER_NODES]; /* pid 0: not running */
	char id[TKT_CLUSTER_NODES][41];		  /* cluster node ids */
	bool master[TKT_CLUSTER_NODES];	   /* a master (live or failed) */
	int replica_of[TKT_CLUSTER_NODES]; /* a replica's master, or -1 */
	int replica[TKT_CLUSTER_NODES];	   /* a master's replica, or -1 */
	int nranges[TKT_CLUSTER_NODES];	   /* a master's slot ranges */
	struct tkt_slot_range range[TKT_CLUSTER_NODES][TKT_CLUSTER_RANGES];
	char seeds[96]; /* the masters at creation, "127.0.0.1:P,..." */
	int mig_slot, mig_from, mig_to; /* a migration begun; -1 when none */
};

/* True when redis-cli was found (the cluster cannot be made without). */
bool tkt_cluster_available(void);

/* Starts 6 nodes, makes them a cluster with one replica per master,
 * and returns once every node says cluster_state:ok with 6 known nodes
 * and every replica's link is up (fails the test after 30 s). */
void tkt_cluster_start(struct tkt_cluster *c);
/* SIGTERM to every node still running, a wait of up to 5 s (then
 * SIGKILL), the directory removed.  Does nothing when not started, or
 * when called by another process than the one that started it. */
void tkt_cluster_stop(struct tkt_cluster *c);
/* "127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3": the masters at creation. */
const char *tkt_cluster_seeds(struct tkt_cluster *c);
/* The node serving `slot` now, as CLUSTER SLOTS of the first live node
 * says; -1 when no node serves it (during a failover). */
int tkt_cluster_master_of_slot(struct tkt_cluster *c, int slot);
/* Returns once the replica of master `node` has applied every write the
 * master had made when called (its replication offset); fails the test
 * after 10 s.  Before a kill, so that no write is lost to asynchronous
 * replication. */
void tkt_cluster_wait_replicated(struct tkt_cluster *c, int node);
/* kill -9 of a master (and reaped); its directory is kept. */
void tkt_cluster_kill_master(struct tkt_cluster *c, int node);
/* Waits until the replica of `dead_node` (a killed master) is a master
 * and every live node says cluster_state:ok and gives it the dead
 * node's slots; fails the test after 20 s. */
void tkt_cluster_wait_promoted(struct tkt_cluster *c, int dead_node);

/* Moves `slot` and all its keys to master `to_node`: IMPORTING on the
 * target, MIGRATING on the source, MIGRATE of its keys in batches, then
 * SETSLOT NODE on every master, returning once every live node gives the
 * slot to `to_node`. */
void tkt_cluster_migrate_slot(struct tkt_cluster *c, int slot, int to_node);
/* The same stopped half-way, so a test can see ASK and TRYAGAIN: the slot
 * left MIGRATING on its master and IMPORTING on `to_node` after the first
 * `nkeys` keys CLUSTER GETKEYSINSLOT gives were moved (0: none).  Returns
 * how many were moved.  One migration at a time. */
int tkt_cluster_migrate_begin(struct tkt_cluster *c, int slot, int to_node,
			      int nkeys);
/* Moves one key (of the slot being migrated) to the target. */
void tkt_cluster_migrate_key(struct tkt_cluster *c, const char *key,
			     size_t len);
/* Moves the rest and assigns the slot, as tkt_cluster_migrate_slot. */
void tkt_cluster_migrate_end(struct tkt_cluster *c);

/* One command (hiredis's printf-style format) to one node over a new
 * connection (its unix socket, 5 s timeout) closed afterwards.  Returns
 * the reply (an error reply too: MOVED, ASK), which the caller frees
 * with freeReplyObject(); fails the test when the node does not answer.
 * (WAIT counts the writes of its own connection: sent this way it waits
 * for none.  node[i].unix_path is there for a connection of one's own.) */
redisReply *tkt_cluster_cmd(struct tkt_cluster *c, int node, const char *fmt,
			    ...);
/* The cluster's hash slot of a key: CRC16-XMODEM of its hash tag (the
 * bytes between the first '{' and the first '}' after it, when there is
 * at least one) or of the whole key, modulo 16384. */
int tkt_key_slot(const char *key, size_t len);

/* ------------------------------------------------------------------------
 * Sentinel: a primary, its replica and 3 sentinels monitoring it as
 * "mymaster" (quorum 2, down after 1 s, failover timeout 3 s).  The
 * sentinels are tuned with SENTINEL DEBUG (7.0): TILT, which a host stall
 * of 2 s starts, lasts 2 s instead of 30 (a failover waits it out), and
 * hellos go every 0.5 s instead of 2.
 * ---------------------------------------------------------------------- */

#define TKT_SENTINELS 3

struct tkt_sentinel_set {
	pid_t owner; /* the process that started it */
	char dir[64];
	struct tkt_redis server[2]; /* the first primary, then its replica */
	struct tkt_redis sentinel[TKT_SENTINELS];
	int primary;	/* the index in server[] of the primary now */
	char addrs[96]; /* "127.0.0.1:S1,127.0.0.1:S2,127.0.0.1:S3" */
};

/* Starts the set and returns once the replica's link is up and every
 * sentinel sees 2 other sentinels and 1 replica and passes CKQUORUM
 * (fails the test after 20 s). */
void tkt_sentinel_start(struct tkt_sentinel_set *s);
/* As tkt_cluster_stop. */
void tkt_sentinel_stop(struct tkt_sentinel_set *s);
/* The sentinels' addresses. */
const char *tkt_sentinel_addrs(struct tkt_sentinel_set *s);
/* The port of the primary now (as of the last start, failover or
 * promotion). */
int tkt_sentinel_primary_port(struct tkt_sentinel_set *s);
/* SENTINEL FAILOVER mymaster to the first sentinel (asked again while
 * it runs none: NOGOODSLAVE, or one a stall aborted); returns once every
 * sentinel names the former replica, which answers ROLE master (fails the
 * test after 20 s).  The former primary stays a writable master until a
 * sentinel converts it, ~10 s later: not waited for. */
void tkt_sentinel_failover(struct tkt_sentinel_set *s);
/* kill -9 of the primary (and reaped); no wait. */
void tkt_sentinel_kill_primary(struct tkt_sentinel_set *s);
/* After tkt_sentinel_kill_primary: returns once every sentinel names the
 * replica, which answers ROLE master (fails the test after 20 s). */
void tkt_sentinel_wait_promoted(struct tkt_sentinel_set *s);

#endif
