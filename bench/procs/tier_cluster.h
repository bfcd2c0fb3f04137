/*
 * tier_cluster.h - the Redis Cluster of tkshm_bench_redis_tier: 3 masters
 * and 3 replicas on 127.0.0.1, started by the benchmark and stopped by it.
 *
 * Every node is a redis-server child of the benchmark, in the foreground,
 * in its own directory under one mkdtemp directory in /tmp, with cluster
 * mode on (node timeout 1 s), no persistence and no delay before a
 * replica's first sync.  redis-cli --cluster create pairs them (one
 * replica per master); the start returns once every node says
 * cluster_state:ok with 6 known nodes, the slot map has 3 masters
 * covering every slot, each with a replica, and every replica's link to
 * its master is up.
 *
 * Ports: random, below the kernel's ephemeral range and below 45536 (a
 * node's bus port is port + 10000, which Redis wants below 65536), both
 * checked free with bind(); a node that finds its port taken meanwhile
 * exits and is started again on another.  The nodes are registered with
 * cleanup.c (SIGKILL on a signal, PR_SET_PDEATHSIG) and stopped by pid:
 * SIGTERM, then SIGKILL after 5 s.  The directory names its benchmark in
 * a file `owner`; a start removes the directories of benchmarks that are
 * gone (a signal leaves its directory behind).
 */
#ifndef TKSHM_BENCH_PROCS_TIER_CLUSTER_H
#define TKSHM_BENCH_PROCS_TIER_CLUSTER_H

#include <stddef.h>
#include <sys/types.h>

#define TC_NODES   6
#define TC_MASTERS 3
#define TC_SLOTS   16384

struct tier_cluster {
	char dir[64];	     /* "" when none */
	pid_t pid[TC_NODES]; /* 0: not running */
	int port[TC_NODES];
	int master_port[TC_MASTERS]; /* the masters, in slot order */
	/* The master (an index of master_port) serving each slot. */
	unsigned char slot_master[TC_SLOTS];
	char seeds[96]; /* the masters: "127.0.0.1:P1,127.0.0.1:P2,..." */
};

/* Starts the cluster.  Returns 0 when it is ready, 1 when it cannot be
 * made here (no redis-server or redis-cli on PATH: `why` says so and the
 * cases are skipped), -1 on an error (`why` says which, and where the
 * logs were).  Whatever a failed start made is stopped and removed. */
int tier_cluster_start(struct tier_cluster *c, char *why, size_t why_len);

/* Stops every node still running (SIGTERM to all, up to 5 s, then
 * SIGKILL), reaps them and removes the directory.  Harmless on a cluster
 * that never started or was stopped already. */
void tier_cluster_stop(struct tier_cluster *c);

/* FLUSHALL on every master (replicated to the replicas), so that a case
 * inherits no keys, leases or host registrations of the one before.
 * 0, or -1 with `why`. */
int tier_cluster_flush(const struct tier_cluster *c, char *why, size_t why_len);

#endif /* TKSHM_BENCH_PROCS_TIER_CLUSTER_H */
