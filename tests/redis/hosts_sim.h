/*
 * hosts_sim.h - simulated hosts for the Redis tier's tests: per host a
 * table file, an agent process (the engine tkshm-syncd runs) and worker
 * processes checking one key at skewed rates; every admission's time is
 * recorded in shared memory for the bounds to be checked afterwards.
 */
#ifndef TKSHM_TEST_HOSTS_SIM_H
#define TKSHM_TEST_HOSTS_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SIM_HOSTS	    3
#define SIM_WORKERS	    2 /* per host */
#define SIM_MAX_ADMITS	    60000
#define SIM_LATENCY_SAMPLES 20000

struct sim_worker {
	uint64_t admitted, denied, fallback, checks;
	/* Admissions whose window is not known: the clock crossed a window
	 * boundary between the `now` passed and the check's return, so
	 * the authority may have counted it in either window. */
	uint64_t ambiguous;
	uint64_t nstamps;
	double stamps[SIM_MAX_ADMITS]; /* epoch ms of each admission */
	uint64_t nlat[2];
	float lat_us[2][SIM_LATENCY_SAMPLES]; /* per phase (record_latency) */
};

struct sim {
	volatile int stop_workers, stop_agents;
	volatile int record_latency; /* 0: none, 1 or 2: into that phase */
	/* > 0: admissions straddling a boundary of windows this long are
	 * counted as ambiguous instead of stamped (per-window bounds). */
	double window_ms;
	/* When set: the workers' nice value (so that busy workers leave
	 * the CPU to the agents), the agents' heartbeat_ms (default 100). */
	int worker_nice;
	double agent_heartbeat_ms;
	/* When set: a Redis Cluster's seeds ("h:p,h:p"), which agents and
	 * strict workers use instead of the port they are given (a port
	 * above 0 still says "strict" to sim_workers). */
	const char *redis_cluster;
	struct sim_worker w[SIM_HOSTS][SIM_WORKERS];
};

struct sim_host {
	char path[256];
	pid_t agent;
	pid_t workers[SIM_WORKERS];
};

/* The shared block (tkt_shared), zeroed. */
struct sim *sim_new(void);
void sim_free(struct sim *s);

/* Creates host h's table at a fresh path with `spec`. */
void sim_table(struct sim_host *h, int index, const char *spec);

/* Forks host h's agent against 127.0.0.1:port. */
void sim_agent(struct sim *s, struct sim_host *h, int index, int port);

/* Forks host h's workers: worker w of host h checks `key` with a pause of
 * gap_us[h] between checks (0: as fast as it can), cost 1; for strict
 * tables (redis_port > 0) each worker attaches its own connection. */
void sim_workers(struct sim *s, struct sim_host *h, int index, const char *key,
		 const int *gap_us, int redis_port);

/* The same, worker w checking keys[w]. */
void sim_workers_keys(struct sim *s, struct sim_host *h, int index,
		      const char *const keys[SIM_WORKERS], const int *gap_us,
		      int redis_port);

/* Stops and reaps the workers, then the agents. */
void sim_stop(struct sim *s, struct sim_host *hosts, int n);

/* Ambiguous admissions of all workers. */
uint64_t sim_ambiguous(const struct sim *s);

/* Every admission of every worker, sorted (caller frees). */
double *sim_stamps(const struct sim *s, uint64_t *n);

/* The most admissions in any window [t, t + w) of the sorted stamps. */
uint64_t sim_max_in_window(const double *st, uint64_t n, double w);

/* Admissions per aligned window floor(t / w): the largest count among the
 * windows wholly inside [from, to), and the number of such windows. */
uint64_t sim_max_aligned(const double *st, uint64_t n, double w, double from,
			 double to, uint64_t *windows, uint64_t *total);

/* The admissions of host h's workers, sorted (caller frees). */
double *sim_host_stamps(const struct sim *s, int h, uint64_t *n);

/* The admissions of worker w of hosts 0 .. hosts - 1 (with
 * sim_workers_keys, those of one key), sorted (caller frees). */
double *sim_worker_stamps(const struct sim *s, int hosts, int w, uint64_t *n);

/* The p99 of the latencies all workers recorded in phase 1 or 2 (µs). */
double sim_p99_us(const struct sim *s, int phase);

#endif /* TKSHM_TEST_HOSTS_SIM_H */
