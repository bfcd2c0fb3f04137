/*
 * agent.c - the lease agent's engine (agent.h).
 *
 * Lease sizing (docs/cross-host.md, "Lease"), per key, from the units its workers
 * asked for (the lease state's `asked`, summed by every check):
 *   rate      an exponentially weighted rate, time constant TK_RATE_TAU_MS
 *   low water rate * (2 * round trip + poll): a refill is asked for when
 *             the spendable credit falls to it, so that it lands before
 *             the credit runs out
 *   size      ceil(rate * horizon), at least 1, at most the limit's share
 *             of the live hosts (capacity / hosts), so that credit
 *             stranded on idle hosts stays within one capacity
 * Leases of one table are pipelined in batches; a round waits for its
 * replies, so a key never has two leases outstanding (TK-R01).
 *
 * Handover from the failure policy (lease.h, L5): when the agent finds
 * Redis again, reconnects, first reaches it for a table whose workers
 * admitted by their failure policy, or comes back from a stall long
 * enough for its workers to have judged it gone, hosts may be spending
 * safe shares Redis never counted (Redis may also have lost its
 * counters).  It then leases nothing until tk_lease_resume_at of the
 * time by which every host's agent, configured alike, has found Redis
 * too (tk_agent_settle_ms): a fixed window's next boundary after that.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "algorithms/lease.h"
#include "api/handle.h"
#include "base/clock.h"
#include "global/global_shm.h"
#include "global/lease_check.h"
#include "redis/breaker.h"
#include "redis/redis_handle.h"
#include "redis/state_codec.h"
#include "shm/atomic.h"
#include "shm/table.h"

#define TK_AGENT_MAX_TABLES 64
#define TK_AGENT_BATCH	    256
#define TK_RATE_TAU_MS	    200.0
/* "prefix:" + a lease key + NUL. */
#define TK_AGENT_KEY_MAX (TKSHM_PREFIX_MAX + 2 + TKSHM_LEASE_KEY_MAX)

/* What the agent remembers of the key in one slot. */
struct tk_track {
	uint64_t fp;	 /* the key it was measured for; 0: none */
	double asked;	 /* its `asked` at the last scan */
	double at;	 /* when (epoch ms) */
	double rate;	 /* units per ms */
	double next_ask; /* epoch ms before which Redis has nothing to
			    grant (its last answer was 0 units) */
};

struct tk_atable {
	tkshm_table *handle; /* as opened: closed with the agent */
	/* The instance the handle is on (api/handle.h), taken at the start
	 * of each round and valid until its end: the table the workers use
	 * now, after a change of its policy or a replacement. */
	tkshm_table *t;
	struct tk_track *track; /* one per slot */
	uint64_t nslots;
	double next_hosts; /* monotonic ms of the next heartbeat */
	double lease_from; /* epoch ms before which nothing is leased */
};

/* One lease to ask for in a batch. */
struct tk_ask {
	uint64_t fp, index;
	double want; /* units asked for */
	size_t klen, rlen;
	unsigned char key[TKSHM_LEASE_KEY_MAX];
	char rkey[TK_AGENT_KEY_MAX];
	char args[5][40];
	const char *av[5];
	size_t al[5];
	const char *kv[1];
	size_t kl[1];
};

struct tk_agent {
	struct tk_agent_conf conf;
	struct tk_conn *conn;
	struct tk_breaker breaker; /* the agent's own, process-local */
	struct tk_atable tables[TK_AGENT_MAX_TABLES];
	size_t ntables;
	struct tk_agent_round totals;
	double rtt_ms; /* smoothed round trip of a batch */
	bool redis_up;
	double last_beat;     /* monotonic ms of the last round's publish */
	bool reached;	      /* Redis answered once */
	double down_at;	      /* epoch ms: Redis lost (or the agent made) */
	char last_error[256]; /* the latest fault, for the daemon's log */
	struct tk_ask *asks;  /* TK_AGENT_BATCH */
};

void
tk_agent_conf_init(struct tk_agent_conf *c)
{
	memset(c, 0, sizeof *c);
	tk_redis_conf_init(&c->redis);
	c->poll_ms = 1;
	c->horizon_ms = 100;
	c->heartbeat_ms = 1000;
	c->breaker_failures = 3;
	c->breaker_open_ms = 500;
	c->server_time = true;
	if (gethostname(c->host_id, sizeof c->host_id - 1) != 0)
		strcpy(c->host_id, "localhost");
	c->host_id[sizeof c->host_id - 1] = '\0';
}

#define TK_ERR(...)                                          \
	do {                                                 \
		if (err && err_len)                          \
			snprintf(err, err_len, __VA_ARGS__); \
	} while (0)

/* The ranges tk_agent_new and tk_agent_tune accept. */
static bool
tk_agent_conf_valid(const struct tk_agent_conf *c, char *err, size_t err_len)
{
	if (!(c->poll_ms >= 0.1 && c->poll_ms <= 1000) ||
	    !(c->horizon_ms >= 1 && c->horizon_ms <= 60000) ||
	    !(c->heartbeat_ms >= 10 && c->heartbeat_ms <= 600000) ||
	    c->breaker_failures < 1 ||
	    !(c->breaker_open_ms >= 1 && c->breaker_open_ms <= 600000) ||
	    c->host_id[0] == '\0') {
		TK_ERR("poll_ms 0.1..1000, horizon_ms 1..60000, heartbeat_ms "
		       "10..600000, breaker_failures >= 1, breaker_open_ms "
		       "1..600000 and a host_id are required");
		return false;
	}
	return true;
}

int
tk_agent_new(const struct tk_agent_conf *c, struct tk_agent **out, char *err,
	     size_t err_len)
{
	struct tk_agent *a;
	int rc;

	if (!c || !out)
		return TKSHM_ENULL;
	if (!tk_agent_conf_valid(c, err, err_len))
		return TKSHM_EINVAL;
	a = calloc(1, sizeof *a);
	if (!a)
		return TKSHM_ENOMEM;
	a->asks = calloc(TK_AGENT_BATCH, sizeof *a->asks);
	if (!a->asks) {
		free(a);
		return TKSHM_ENOMEM;
	}
	a->conf = *c;
	a->down_at = tkshm_now_ms();
	a->conf.host_id[sizeof a->conf.host_id - 1] = '\0';
	a->rtt_ms = 1;
	rc = tk_conn_new(&c->redis, &a->conn);
	if (rc != TKSHM_OK) {
		TK_ERR("bad Redis settings");
		free(a->asks);
		free(a);
		return rc;
	}
	*out = a;
	return TKSHM_OK;
}

int
tk_agent_tune(struct tk_agent *a, const struct tk_agent_conf *c, char *err,
	      size_t err_len)
{
	if (!a || !c)
		return TKSHM_ENULL;
	if (!tk_agent_conf_valid(c, err, err_len))
		return TKSHM_EINVAL;
	/* The connection, the host's name and the clock stay: the tables'
	 * leases and Redis's host registry were made with them. */
	a->conf.poll_ms = c->poll_ms;
	a->conf.horizon_ms = c->horizon_ms;
	a->conf.heartbeat_ms = c->heartbeat_ms;
	a->conf.breaker_failures = c->breaker_failures;
	a->conf.breaker_open_ms = c->breaker_open_ms;
	return TKSHM_OK;
}

/* Publishes the agent's view in a table's shared region: its pid, its
 * round period, whether Redis answered, and (last, with release) the
 * heartbeat `beat` (monotonic ms, 0: detached) that makes the rest
 * current (lease_check.c reads it with acquire). */
static void
tk_agent_publish(struct tk_agent *a, tkshm_table *t, double beat)
{
	struct tk_global_shm *g = t->global;

	/* Relaxed (three stores): published by the beat's release. */
	tk_store_relaxed(&g->agent_pid, beat > 0 ? (uint64_t)getpid() : 0);
	tk_store_relaxed(&g->poll_ms, tk_f64_word(a->conf.poll_ms));
	tk_store_relaxed(&g->redis_up, a->redis_up ? 1 : 0);
	/* Release: the stores above are visible with this beat. */
	tk_store_release(&g->agent_beat, tk_f64_word(beat));
}

/* The pid of another live agent serving `t` (heartbeat fresh, process
 * alive), or 0.  The pid comes from shared memory: only 1..INT32_MAX is
 * ever passed to kill(), which would signal a group for 0 or less. */
static int
tk_agent_other(const tkshm_table *t)
{
	struct tk_global_shm *g = t->global;
	/* Acquire: pairs with the agent's release of its beat. */
	double beat = tk_word_f64(tk_load_acquire(&g->agent_beat));
	/* Relaxed: ordered after the beat's acquire. */
	uint64_t pid = tk_load_relaxed(&g->agent_pid);

	if (pid == 0 || pid > INT32_MAX || (pid_t)pid == getpid())
		return 0;
	if (!(tk_mono_ms() - beat <= TK_AGENT_STALE_MS))
		return 0; /* gone quiet: a crashed agent's leftover */
	if (kill((pid_t)pid, 0) != 0 && errno != EPERM)
		return 0;
	return (int)pid;
}

int
tk_agent_add_table(struct tk_agent *a, const char *path, char *err,
		   size_t err_len)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	struct tk_atable *at;
	char why[256] = "";
	tkshm_table *t;
	int rc;

	if (!a || !path)
		return TKSHM_ENULL;
	if (a->ntables == TK_AGENT_MAX_TABLES) {
		TK_ERR("%s: an agent serves at most %d tables", path,
		       TK_AGENT_MAX_TABLES);
		return TKSHM_EINVAL;
	}
	o.flags = 0; /* attach only: the workers' table */
	o.errbuf = why;
	o.errbuf_len = sizeof why;
	rc = tkshm_open(path, &o, &t);
	if (rc != TKSHM_OK) {
		TK_ERR("%s: %s%s%s", path, tkshm_strerror(rc),
		       why[0] ? ": " : "", why);
		return rc;
	}
	if (t->policy.global.mode != TKSHM_MODE_LEASE) {
		TK_ERR("%s: not a lease table (its policy has no "
		       "mode=lease)",
		       path);
		tkshm_close(t);
		return TKSHM_ENOTSUP;
	}
	rc = tk_agent_other(t);
	if (rc > 0) {
		/* Two agents would each lease for the same workers. */
		TK_ERR("%s: served by another agent (pid %d)", path, rc);
		tkshm_close(t);
		return TKSHM_EBUSY;
	}
	at = &a->tables[a->ntables];
	memset(at, 0, sizeof *at);
	at->handle = t;
	at->t = t;
	at->nslots = t->nbuckets * TK_SLOTS_PER_BUCKET;
	at->track = calloc(at->nslots, sizeof *at->track);
	if (!at->track) {
		tkshm_close(t);
		return TKSHM_ENOMEM;
	}
	a->ntables++;
	/* Attached, Redis not yet asked: workers keep to their failure
	 * policy until the first round reaches Redis. */
	tk_agent_publish(a, t, tk_mono_ms());
	return TKSHM_OK;
}

/* The local rate of the key in slot `index` (units per ms), updated from
 * its `asked` counter; *fresh is set when it asked since the last scan. */
static double
tk_track_rate(struct tk_atable *at, uint64_t index, uint64_t fp,
	      const uint64_t *words, double now, bool *fresh)
{
	struct tk_track *k = &at->track[index];
	double asked = tk_word_f64(words[TK_LEASE_ASKED]);
	double dt, inst, w;

	if (k->fp != fp) {
		k->fp = fp;
		k->asked = asked;
		k->at = now;
		k->rate = 0;
		k->next_ask = 0;
		*fresh = asked > 0;
		return 0;
	}
	*fresh = asked > k->asked;
	dt = now - k->at;
	if (dt < 1)
		return k->rate; /* too soon to measure */
	inst = asked > k->asked ? (asked - k->asked) / dt : 0;
	w = 1 - exp(-dt / TK_RATE_TAU_MS);
	k->rate += w * (inst - k->rate);
	k->asked = asked;
	k->at = now;
	return k->rate;
}

static void
tk_ask_args(const struct tk_agent *a, const tkshm_table *t, double now,
	    double want, struct tk_ask *q)
{
	const tkshm_policy *p = &t->policy;
	double v[5];
	int n = 0;

	v[n++] = a->conf.server_time ? 0 : now;
	if (p->kind == TKSHM_KIND_GCRA) {
		v[n++] = p->u.gcra.period_ms;
		v[n++] = p->u.gcra.limit;
		v[n++] = p->u.gcra.burst;
	} else {
		v[n++] = p->u.fixed_window.limit;
		v[n++] = p->u.fixed_window.window_ms;
	}
	v[n++] = want;
	q->want = want;
	for (int i = 0; i < n; i++) {
		q->al[i] = tk_arg_f64(q->args[i], sizeof q->args[i], v[i]);
		q->av[i] = q->args[i];
	}
	q->kv[0] = q->rkey;
	q->kl[0] = q->rlen;
}

/* How long a probe may take: a connect and a command or two. */
static double
tk_agent_probe_ms(const struct tk_agent *a)
{
	return a->conf.redis.connect_timeout_ms +
	       2 * a->conf.redis.command_timeout_ms;
}

/* How long after this agent found Redis every host's agent has (with the
 * same settings): a probe that failed just before Redis came back, the
 * breaker's open period, the probe that finds it, and a round for the
 * workers to read it. */
static double
tk_agent_settle_ms(const struct tk_agent *a)
{
	return a->conf.breaker_open_ms + 2 * tk_agent_probe_ms(a) +
	       2 * a->conf.poll_ms;
}

/* A handover from the failure policy at epoch ms `now`: no table leases
 * until every host has stopped spending its share (file comment).  At
 * the agent's first contact with Redis, only the tables whose workers
 * ever admitted by their failure policy hand over (a fresh table leases
 * at once). */
static void
tk_agent_settle(struct tk_agent *a, double now, bool first, double outage)
{
	for (size_t i = 0; i < a->ntables; i++) {
		tkshm_table *t = a->tables[i].t;

		/* Relaxed: a tally read on its own. */
		if (first &&
		    tk_load_relaxed(&t->global->c[TK_G_FALLBACK_ALLOWED]) == 0)
			continue;
		a->tables[i].lease_from = tk_lease_resume_at(
			&t->algo.lease, t->policy.global.lease_ms,
			now + tk_agent_settle_ms(a), outage);
	}
}

/* True (and a handover begun) when the agent's last heartbeat is old
 * enough that its workers may have judged it gone and fallen back: the
 * process was stopped, or a round ran long.  last_beat is the beat the
 * tables hold (or an older one), so the age measured here is never less
 * than the one a worker saw before (lease_check.c, on a coarser clock
 * that lags).  Asked before each exchange, after it, and once the
 * round's beats are out: a stall anywhere in a round is seen before its
 * grants are written or the beat that hides it becomes last_beat. */
static bool
tk_agent_stalled(struct tk_agent *a)
{
	if (a->last_beat <= 0 ||
	    !(tk_mono_ms() - a->last_beat > TK_AGENT_STALE_MS))
		return false;
	tk_agent_settle(a, tkshm_now_ms(), false, tk_mono_ms() - a->last_beat);
	return true;
}

/* A lease script's answer to `q` (lease_gcra.lua, lease_window.lua):
 * {granted 0..want, now >= 0, the window's end >= now (window only)}.
 * Anything else (an error reply, a wrong type, a field out of range) is
 * a Redis fault. */
static bool
tk_lease_reply_valid(const redisReply *y, const struct tk_ask *q, bool gcra)
{
	if (!y || y->type != REDIS_REPLY_ARRAY || y->elements < 3)
		return false;
	for (size_t i = 0; i < (gcra ? 2u : 3u); i++)
		if (!y->element[i] ||
		    y->element[i]->type != REDIS_REPLY_INTEGER)
			return false;
	return y->element[0]->integer >= 0 &&
	       (double)y->element[0]->integer <= q->want &&
	       y->element[1]->integer >= 0 &&
	       (gcra || y->element[2]->integer >= y->element[1]->integer);
}

/* A fault of this round (an exchange that failed, or `bad` replies that
 * were not answers): the breaker counts one failure, the tables apply
 * their failure policy until Redis answers again, and the fault is kept
 * for the daemon to log. */
static void
tk_agent_fault(struct tk_agent *a, tkshm_table *t, uint64_t bad,
	       struct tk_agent_round *r)
{
	(void)tk_breaker_failure(&a->breaker, tk_mono_ms(),
				 a->conf.breaker_failures,
				 a->conf.breaker_open_ms);
	a->redis_up = false;
	tk_gcount(t->global, TK_G_REDIS_ERRORS, bad);
	r->redis_errors += bad;
	tk_conn_last_error(a->conn, a->last_error, sizeof a->last_error);
	if (a->last_error[0] == '\0')
		snprintf(a->last_error, sizeof a->last_error,
			 "a reply that is not an answer (a wrong type or "
			 "a field out of range)");
}

/* Writes the grant of a valid reply to ask i. */
static void
tk_agent_take(struct tk_agent *a, struct tk_atable *at, size_t i,
	      const redisReply *y, double now, double sent,
	      struct tk_agent_round *r)
{
	tkshm_table *t = at->t;
	bool gcra = t->policy.kind == TKSHM_KIND_GCRA;
	long long units = y->element[0]->integer;
	long long rnow = y->element[1]->integer;
	struct tk_lease_grant g;

	if (units < 1) {
		/* Nothing left: ask again when Redis can have some (the
		 * window's end; one emission interval). */
		struct tk_track *k = &at->track[a->asks[i].index];
		double wait = gcra ? t->policy.u.gcra.period_ms /
					      t->policy.u.gcra.limit :
				     (double)(y->element[2]->integer - rnow);

		if (k->fp == a->asks[i].fp)
			k->next_ask = sent + wait;
		return;
	}
	g.units = (double)units;
	/* GCRA: from the send.  Window-coupled: the credit ends with the
	 * window on Redis's clock, measured from the send; the script's
	 * now is floor()ed, so Redis's time was up to 1 ms later and 1 ms
	 * less is left. */
	g.expiry = gcra ? sent + t->policy.global.lease_ms :
			  sent + (double)(y->element[2]->integer - rnow) - 1;
	if (tk_lease_grant(t, a->asks[i].key, a->asks[i].klen, now, &g) ==
	    TKSHM_OK) {
		r->leases_granted++;
		r->units_granted += (uint64_t)units;
	}
}

/* Sends a batch of leases and writes what was granted.  `sent` is the
 * epoch ms read just before sending: every expiry is measured from it. */
static void
tk_agent_send(struct tk_agent *a, struct tk_atable *at, size_t n, double now,
	      struct tk_agent_round *r)
{
	tkshm_table *t = at->t;
	bool gcra = t->policy.kind == TKSHM_KIND_GCRA;
	struct tk_args keys[TK_AGENT_BATCH], args[TK_AGENT_BATCH];
	redisReply *replies[TK_AGENT_BATCH];
	struct tk_conn_stats before, after;
	double sent = tkshm_now_ms(), t0 = tk_mono_ms(), mono;
	uint64_t bad = 0;
	bool stalled;
	int rc;

	for (size_t i = 0; i < n; i++) {
		keys[i] = (struct tk_args){ 1, a->asks[i].kv, a->asks[i].kl };
		args[i] = (struct tk_args){ gcra ? 5 : 4, a->asks[i].av,
					    a->asks[i].al };
		replies[i] = NULL;
	}
	if (tk_agent_stalled(a) || sent < at->lease_from)
		return; /* a handover began while this round ran */
	if (!tk_breaker_allow(&a->breaker, t0, tk_agent_probe_ms(a))) {
		a->redis_up = false;
		return;
	}
	tk_conn_stats_get(a->conn, &before);
	rc = tk_conn_eval_many(
		a->conn, gcra ? TK_SCRIPT_LEASE_GCRA : TK_SCRIPT_LEASE_WINDOW,
		n, keys, args, replies);
	tk_conn_stats_get(a->conn, &after);
	mono = tk_mono_ms();
	r->leases_asked += n;
	r->round_trips++;
	tk_gcount(t->global, TK_G_LEASE_ROUND_TRIPS, 1);
	tk_gcount(t->global, TK_G_REDIS_CALLS, n);
	tk_gcount(t->global, TK_G_NOSCRIPT_RELOADS,
		  after.noscript_reloads - before.noscript_reloads);
	/* A stall during the exchange: Redis may have granted after it,
	 * counting the units in a window the workers' shares, fallen back
	 * meanwhile, admit in, while the expiries measured from `sent` can
	 * leave them live.  Not written: units Redis counted and no host
	 * spends. */
	stalled = tk_agent_stalled(a);
	for (size_t i = 0; i < n; i++) {
		if (tk_lease_reply_valid(replies[i], &a->asks[i], gcra)) {
			if (!stalled)
				tk_agent_take(a, at, i, replies[i], now, sent,
					      r);
		} else {
			/* Not asked again before the breaker's period: a
			 * fault of one key (a WRONGTYPE) must not make
			 * every round fail and the tables flap. */
			struct tk_track *k = &at->track[a->asks[i].index];

			if (k->fp == a->asks[i].fp)
				k->next_ask = sent + a->conf.breaker_open_ms;
			bad++;
		}
		if (replies[i])
			freeReplyObject(replies[i]);
	}
	if (rc == TKSHM_OK && bad == 0) {
		tk_breaker_success(&a->breaker);
		a->redis_up = true;
		a->rtt_ms += 0.2 * ((mono - t0) - a->rtt_ms);
		return;
	}
	tk_agent_fault(a, t, bad ? bad : 1, r);
}

/* Registers the host and reads the live host count (hosts.lua): true
 * when Redis answered, which the breaker learns either way. */
static bool
tk_agent_hosts_call(struct tk_agent *a, struct tk_atable *at, double now,
		    struct tk_agent_round *r)
{
	tkshm_table *t = at->t;
	struct tk_hosts_req q;
	redisReply *y = NULL;
	int rc;

	at->next_hosts = tk_mono_ms() + a->conf.heartbeat_ms;
	tk_hosts_req_init(&q, t, a->conf.host_id,
			  a->conf.server_time ? 0 : floor(now),
			  3 * a->conf.heartbeat_ms);
	tk_gcount(t->global, TK_G_REDIS_CALLS, 1);
	rc = tk_conn_eval(a->conn, TK_SCRIPT_HOSTS, &q.keys, &q.args, &y, NULL,
			  0);
	if (rc == TKSHM_OK && tk_hosts_valid(t, y, NULL)) {
		tk_hosts_store(t, y);
		freeReplyObject(y);
		tk_breaker_success(&a->breaker);
		return true;
	}
	if (y)
		freeReplyObject(y);
	tk_agent_fault(a, t, 1, r);
	return false;
}

/* The heartbeat: every heartbeat_ms while Redis answers. */
static void
tk_agent_hosts(struct tk_agent *a, struct tk_atable *at, double now,
	       struct tk_agent_round *r)
{
	if (tk_mono_ms() < at->next_hosts || !a->redis_up)
		return;
	(void)tk_agent_hosts_call(a, at, now, r);
}

/* One round over one table. */
static void
tk_agent_table(struct tk_agent *a, struct tk_atable *at, double now,
	       struct tk_agent_round *r)
{
	tkshm_table *t = at->t;
	const struct tk_lease *l = &t->algo.lease;
	uint64_t words[TK_ALGO_MAX_WORDS];
	uint64_t cursor = 0, index, fp;
	double hosts = tk_global_hosts(t->global, t->policy.global.hosts);
	double cap = floor(l->capacity / hosts);
	double lead = 2 * a->rtt_ms + a->conf.poll_ms;
	size_t n = 0;
	bool present;

	if (cap < 1)
		cap = 1;
	while (tk_state_next(t, &cursor, &index, &fp, words, &present) ==
	       TKSHM_OK) {
		struct tk_ask *q = &a->asks[n];
		bool fresh;
		double rate, credits, low, want;

		if (!present)
			continue;
		r->keys_scanned++;
		rate = tk_track_rate(at, index, fp, words, now, &fresh);
		credits = tk_lease_credits(words, now);
		low = rate * lead;
		if (low < 1)
			low = 1;
		/* Rates are kept up while Redis is down, but nothing is
		 * asked for: the round's probe finds it back first. */
		if (!a->redis_up || credits > low || (!fresh && rate <= 0) ||
		    now < at->track[index].next_ask || now < at->lease_from)
			continue;
		want = ceil(rate * a->conf.horizon_ms);
		if (want < 1)
			want = 1;
		if (want > cap)
			want = cap;
		if (!tk_keyrec_read(t, index, fp, q->key, &q->klen))
			continue; /* a record torn by a racing insert */
		q->fp = fp;
		q->index = index;
		q->rlen = tk_redis_key_of(t, q->key, q->klen, q->rkey,
					  sizeof q->rkey);
		if (!q->rlen)
			continue;
		tk_ask_args(a, t, now, want, q);
		if (++n == TK_AGENT_BATCH) {
			tk_agent_send(a, at, n, now, r);
			n = 0;
		}
	}
	if (n)
		tk_agent_send(a, at, n, now, r);
	tk_agent_hosts(a, at, now, r);
}

/* Moves table i to the instance its handle is on now: the workers' table
 * after a replacement (a new size: new per-slot tracks), or a policy
 * written in place.  Inside the round's read-side section. */
static void
tk_agent_follow(struct tk_agent *a, struct tk_atable *at)
{
	struct tkshm_table *cur = tk_resolve(at->handle);
	uint64_t nslots = cur->nbuckets * TK_SLOTS_PER_BUCKET;

	if (cur == at->t)
		return;
	if (nslots != at->nslots || cur->seed != at->t->seed) {
		struct tk_track *track = calloc(nslots, sizeof *track);

		if (!track)
			return; /* stays on the table it knew, this round */
		free(at->track);
		at->track = track;
		at->nslots = nslots;
	}
	at->t = cur;
	/* Not older than the beat the other tables hold (tk_agent_stalled
	 * measures from that one). */
	tk_agent_publish(a, cur, tk_mono_ms());
}

static void tk_agent_round_in(struct tk_agent *a, double now_ms,
			      struct tk_agent_round *out);

void
tk_agent_round(struct tk_agent *a, double now_ms, struct tk_agent_round *out)
{
	if (!a)
		return;
	/* The instances stay mapped until the round is over (handle.h). */
	tk_rcu_lock();
	for (size_t i = 0; i < a->ntables; i++)
		tk_agent_follow(a, &a->tables[i]);
	tk_agent_round_in(a, now_ms, out);
	tk_leave();
}

static void
tk_agent_round_in(struct tk_agent *a, double now_ms, struct tk_agent_round *out)
{
	struct tk_agent_round r;
	double beat;
	bool was_up;

	memset(&r, 0, sizeof r);
	was_up = a->redis_up;
	(void)tk_agent_stalled(a);
	/* Down (or never reached): probe when the breaker lets us, so that
	 * recovery is seen even when no key needs a lease.  The probe is a
	 * script's answer (a heartbeat of the first table), not only a
	 * connection: a server that connects but answers errors (BUSY,
	 * LOADING...) stays down.  Up: Redis stays as last seen until a
	 * lease or a heartbeat fails. */
	if (!a->redis_up &&
	    tk_breaker_allow(&a->breaker, tk_mono_ms(), tk_agent_probe_ms(a))) {
		if (a->ntables > 0) {
			a->redis_up = tk_agent_hosts_call(a, &a->tables[0],
							  now_ms, &r);
		} else if (tk_conn_ready(a->conn) == TKSHM_OK) {
			tk_breaker_success(&a->breaker);
			a->redis_up = true;
		} else {
			(void)tk_breaker_failure(&a->breaker, tk_mono_ms(),
						 a->conf.breaker_failures,
						 a->conf.breaker_open_ms);
		}
	}
	if (a->redis_up && !was_up) {
		/* Found again, or first found. */
		tk_agent_settle(a, now_ms, !a->reached, now_ms - a->down_at);
		a->reached = true;
	}
	for (size_t i = 0; i < a->ntables; i++)
		tk_agent_table(a, &a->tables[i], now_ms, &r);
	r.redis_up = a->redis_up;
	if (was_up && !a->redis_up)
		a->down_at = now_ms; /* before any worker fell back */
	beat = tk_mono_ms();
	for (size_t i = 0; i < a->ntables; i++) {
		/* Relaxed: published by the beat's release below. */
		if (a->redis_up)
			tk_store_relaxed(&a->tables[i].t->global->up_at,
					 tk_f64_word(now_ms));
		tk_agent_publish(a, a->tables[i].t, beat);
	}
	/* Once the beats are out, before `beat` replaces the beat the
	 * workers judged by until then: a stall since the last check of
	 * this round (in the heartbeat's exchange, say) would else be
	 * forgotten, and the next round would lease in a window the shares
	 * admitted in. */
	(void)tk_agent_stalled(a);
	a->last_beat = beat;
	a->totals.keys_scanned += r.keys_scanned;
	a->totals.leases_asked += r.leases_asked;
	a->totals.leases_granted += r.leases_granted;
	a->totals.units_granted += r.units_granted;
	a->totals.round_trips += r.round_trips;
	a->totals.redis_errors += r.redis_errors;
	a->totals.redis_up = r.redis_up;
	if (out)
		*out = r;
}

void
tk_agent_totals(const struct tk_agent *a, struct tk_agent_round *out)
{
	if (a && out)
		*out = a->totals;
}

void
tk_agent_last_error(const struct tk_agent *a, char *buf, size_t len)
{
	if (!buf || len == 0)
		return;
	snprintf(buf, len, "%s", a ? a->last_error : "");
}

void
tk_agent_free(struct tk_agent *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->ntables; i++) {
		tk_rcu_lock();
		tk_agent_publish(a, tk_resolve(a->tables[i].handle), 0);
		tk_leave();
		free(a->tables[i].track);
		tkshm_close(a->tables[i].handle);
	}
	tk_conn_free(a->conn);
	free(a->asks);
	free(a);
}
