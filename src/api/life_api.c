/*
 * life_api.c - a table's lifecycle: open, change, follow, close
 * (protocol.h L1-L6; docs/lifecycle.md).
 *
 * tkshm_open attaches or creates, then applies a policy or size that
 * differs from the table's: in place when the state keeps its shape
 * (tk_life_publish), else by publishing a replacement under the same path
 * and carrying every key into it (tk_replace).  Every process notices a
 * change through the live word on its next call and follows (tk_follow).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/handle.h"
#include "api/life_change.h"
#include "shm/atomic.h"
#include "shm/drain.h"
#include "shm/life.h"
#include "shm/table.h"

/* How long a change waits for another process's change to finish. */
#define TK_WRITER_WAIT_MS 1000

/* Serialises the changes and drains of this process's threads: a writer
 * word names a process, so two threads of one process would both hold it
 * and write one policy record at once.  Re-made in a forked child, which
 * has none of the parent's other threads. */
static pthread_mutex_t tk_change_lock = PTHREAD_MUTEX_INITIALIZER;

/* What following a handle needs: the path it was opened by and its open
 * options (never a policy: a follower adopts the table's). */
struct tk_follow {
	char *path; /* NULL: anonymous */
	tkshm_options o;
	/* Why the last attempt to open what the path names failed (0: it
	 * did not): a replacement this process may not open (another
	 * owner, a mode without its bits), or a path removed.  Relaxed
	 * atomics: a report, ordering nothing. */
	int error;
};

/* ------------------------------------------------------------------------
 * Instances
 * ---------------------------------------------------------------------- */

/* liburcu-bp keeps a registry of reader threads and a call_rcu worker; a
 * fork must find them consistent, and a child must forget the parent's
 * other threads (whose read-side sections it would wait for forever). */
static void
tk_rcu_before_fork(void)
{
	urcu_bp_call_rcu_before_fork();
	urcu_bp_before_fork();
}

static void
tk_rcu_after_fork_parent(void)
{
	urcu_bp_after_fork_parent();
	urcu_bp_call_rcu_after_fork_parent();
}

static void
tk_rcu_after_fork_child(void)
{
	(void)pthread_mutex_init(&tk_change_lock, NULL);
	urcu_bp_after_fork_child();
	urcu_bp_call_rcu_after_fork_child();
}

static void
tk_rcu_init(void)
{
	(void)pthread_atfork(tk_rcu_before_fork, tk_rcu_after_fork_parent,
			     tk_rcu_after_fork_child);
}

static void
tk_map_put(struct tk_mapping *m)
{
	/* acq_rel: the last one out sees every use of the mapping. */
	if (m && tk_priv_fetch_sub_acq_rel(&m->refs, 1) == 1) {
		munmap(m->base, m->size);
		free(m);
	}
}

static int
tk_map_own(struct tkshm_table *t)
{
	t->map = malloc(sizeof *t->map);
	if (!t->map)
		return TKSHM_ENOMEM;
	t->map->base = t->base;
	t->map->size = t->map_size;
	t->map->refs = 1;
	return TKSHM_OK;
}

static void tk_instance_free(struct tkshm_table *t);

/* A copy of instance t on the same mapping, with its own predecessor
 * copy; no handle fields. */
static struct tkshm_table *
tk_instance_copy(const struct tkshm_table *t)
{
	struct tkshm_table *n = malloc(sizeof *n);

	if (!n)
		return NULL;
	memcpy(n, t, TK_INSTANCE_FIXED);
	/* Relaxed: a hint of when to look for dead holders again. */
	n->next_reap_ms = tk_priv_load_relaxed(&t->next_reap_ms);
	n->cur = NULL;
	n->follow = NULL;
	n->pred = NULL;
	/* Relaxed: the caller holds a reference already (its own). */
	(void)tk_priv_fetch_add_relaxed(&n->map->refs, 1);
	if (t->pred) {
		n->pred = tk_instance_copy(t->pred);
		if (!n->pred) {
			tk_instance_free(n);
			return NULL;
		}
	}
	return n;
}

static void
tk_instance_free(struct tkshm_table *t)
{
	if (!t)
		return;
	tk_instance_free(t->pred);
	if (t->map)
		tk_map_put(t->map);
	else
		tk_segment_close(t);
	free(t);
}

struct tk_retired {
	struct rcu_head head;
	struct tkshm_table *t;
};

#ifdef TK_TSAN
char tk_rcu_tsan_token;
#endif

static void
tk_retired_free(struct rcu_head *head)
{
	struct tk_retired *r = caa_container_of(head, struct tk_retired, head);

	TK_TSAN_TAKEN(r);
	TK_RCU_TSAN_ACQUIRE();
	tk_instance_free(r->t);
	free(r);
}

/* An instance no call will start on again: freed after a grace period,
 * when no thread can still be running on it.  The handle itself is freed
 * only by tkshm_close. */
static void
tk_instance_retire(const struct tkshm_table *h, struct tkshm_table *t)
{
	struct tk_retired *r;

	if (t == h)
		return;
	r = malloc(sizeof *r);
	if (!r)
		return; /* kept: a leak, never a use after free */
	r->t = t;
	TK_TSAN_HANDOFF(r);
	urcu_bp_call_rcu(&r->head, tk_retired_free);
}

/* The directory part of a path, and its last component. */
static int
tk_path_split(const char *path, char *dir, size_t dlen, const char **base)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (!slash || n + 2 >= dlen)
		return TKSHM_EINVAL;
	memcpy(dir, path, n);
	dir[n] = '\0';
	if (n == 0) {
		dir[0] = '/';
		dir[1] = '\0';
	}
	*base = slash + 1;
	return TKSHM_OK;
}

/* Attaches the predecessor a draining table names (L5), if it is still
 * there: a predecessor that is gone was drained (L6 unlinks it last).  A
 * read-only handle opens it read-only and goes on without it when it may
 * not (it only reads: a key not yet carried reads as new meanwhile). */
static int
tk_pred_attach(struct tkshm_table *n, const char *path)
{
	char dir[4096], full[4300];
	const char *base;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	struct tkshm_table *p;
	int rc;

	if (!path || n->pred_name[0] == '\0' ||
	    tk_path_split(path, dir, sizeof dir, &base) != TKSHM_OK)
		return TKSHM_OK;
	snprintf(full, sizeof full, "%s/%s", dir, n->pred_name);
	o.flags = n->readonly ? TKSHM_O_RDONLY : 0;
	p = calloc(1, sizeof *p);
	if (!p)
		return TKSHM_ENOMEM;
	rc = tk_segment_open(full, &o, p);
	if (rc == TKSHM_OK && (p->table_id != n->pred_id || p->seed != n->seed))
		rc = TKSHM_ENOENT; /* not ours: never carry from it */
	if (rc == TKSHM_OK)
		rc = tk_map_own(p);
	if (rc != TKSHM_OK) {
		if (p->base)
			tk_segment_close(p);
		free(p);
		return rc == TKSHM_ENOENT || n->readonly ? TKSHM_OK : rc;
	}
	n->pred = p;
	return TKSHM_OK;
}

/* ------------------------------------------------------------------------
 * Following a change (L1-L3)
 * ---------------------------------------------------------------------- */

/* An instance for a change of t's table that kept its mapping: a new
 * policy generation, or the end of a drain. */
static struct tkshm_table *
tk_refresh(struct tkshm_table *h, const struct tkshm_table *t, uint64_t w)
{
	struct tkshm_table *n = tk_instance_copy(t);

	if (!n)
		return NULL;
	if ((w & TK_LIFE_GEN_MASK) != (t->life_word & TK_LIFE_GEN_MASK)) {
		n->life_word = w;
		if (tk_life_adopt(n) != TKSHM_OK) {
			tk_instance_free(n);
			return NULL;
		}
	}
	n->life_word = w;
	if (!(w & TK_LIFE_DRAINING) && n->pred) {
		tk_instance_free(n->pred);
		n->pred = NULL;
	}
	if ((w & TK_LIFE_DRAINING) && !n->pred && h->follow &&
	    tk_pred_attach(n, h->follow->path) != TKSHM_OK) {
		tk_instance_free(n);
		return NULL;
	}
	return n;
}

/* Opens what the path names now, after t's table was replaced (L3). */
static struct tkshm_table *
tk_reopen(struct tkshm_table *h, const struct tkshm_table *t)
{
	struct tkshm_table *n;
	tkshm_options o;
	int rc;

	if (!h->follow || !h->follow->path)
		return NULL;
	o = h->follow->o;
	o.policy = NULL;
	o.slots = 0;
	o.flags &= ~(unsigned)(TKSHM_O_CREATE | TKSHM_O_EXCL);
	n = calloc(1, sizeof *n);
	if (!n)
		return NULL;
	rc = tk_segment_open(h->follow->path, &o, n);
	if (rc == TKSHM_OK && n->table_id == t->table_id)
		rc = TKSHM_EBUSY; /* replaced, not yet renamed: L2's order */
	if (rc == TKSHM_OK)
		rc = tk_map_own(n);
	/* Relaxed: see struct tk_follow. */
	tk_priv_store_relaxed(&h->follow->error, rc);
	if (rc != TKSHM_OK) {
		if (n->base)
			tk_segment_close(n);
		free(n);
		return NULL;
	}
	n->redis = t->redis;
	n->strict = t->strict;
	if (n->life_word & TK_LIFE_DRAINING) {
		if (n->pred_id == t->table_id && n->seed == t->seed) {
			/* We hold the predecessor already. */
			n->pred = tk_instance_copy(t);
			if (n->pred) {
				tk_instance_free(n->pred->pred);
				n->pred->pred = NULL;
			}
		} else if (tk_pred_attach(n, h->follow->path) != TKSHM_OK) {
			n->pred = NULL;
		}
		if (!n->pred) {
			tk_instance_free(n);
			return NULL;
		}
	}
	return n;
}

struct tkshm_table *
tk_follow(struct tkshm_table *h, struct tkshm_table *t)
{
	uint64_t w = tk_life_load(t);
	struct tkshm_table *n, *expected = t;

	if (!h->follow)
		return t; /* an instance, not a handle: nothing follows */
	if (w & TK_LIFE_REPLACED)
		n = tk_reopen(h, t);
	else
		n = tk_refresh(h, t, w);
	if (!n)
		return t;
	/* Release: the new instance is complete before anybody takes it. */
	if (tk_priv_cas_release_acquire(&h->cur, &expected, n)) {
		tk_instance_retire(h, t);
		return n;
	}
	/* Another thread followed first: take its instance. */
	tk_instance_free(n);
	return expected;
}

int
tk_follow_error(const struct tkshm_table *h)
{
	/* Relaxed: see struct tk_follow. */
	int e = h->follow ? tk_priv_load_relaxed(&h->follow->error) : 0;

	return e == TKSHM_EBUSY ? 0 : e;
}

void
tk_follow_pause(unsigned tries)
{
	struct timespec ms = { 0, 1000000L };

	if (tries < 8)
		sched_yield();
	else
		nanosleep(&ms, NULL);
}

/* ------------------------------------------------------------------------
 * Replacement (L2, L6)
 * ---------------------------------------------------------------------- */

/* A cross-host table's shared region (the agent's heartbeat, the breaker,
 * the fallback tallies) goes on in its replacement: a snapshot, as the
 * replacement is not yet published; the agent writes the new one from its
 * next round (src/agent/agent.c). */
static void
tk_global_inherit(struct tkshm_table *n, const struct tkshm_table *t)
{
	const uint64_t *from = (const uint64_t *)(const void *)t->global;
	uint64_t *to = (uint64_t *)(void *)n->global;

	if (t->policy.global.mode == TKSHM_MODE_LOCAL ||
	    n->policy.global.mode != t->policy.global.mode)
		return;
	for (size_t i = 0; i < TK_PAGE / sizeof(uint64_t); i++)
		/* Relaxed both: a snapshot of counters and stamps, each word
		 * whole; nobody reads n before its rename publishes it. */
		tk_store_relaxed(&to[i], tk_load_relaxed(&from[i]));
}

/* Replaces anonymous table t for this process: a copy of every key's
 * state in a new anonymous table; processes forked before keep t. */
static int
tk_replace_anonymous(struct tkshm_table *h, struct tkshm_table *t,
		     const tkshm_options *o, uint64_t slots, double now)
{
	struct tk_lineage lin;
	struct tkshm_table *n = calloc(1, sizeof *n);
	struct tkshm_table *expected = t;
	int rc;

	if (!n)
		return TKSHM_ENOMEM;
	memset(&lin, 0, sizeof lin);
	lin.seed = t->seed;
	lin.pred_id = t->table_id;
	lin.permit_epoch = tk_permit_epoch_after(t, o->policy);
	lin.change_ms = now;
	rc = tk_segment_build(NULL, o, slots, &lin, n);
	if (rc == TKSHM_OK)
		rc = tk_map_own(n);
	if (rc == TKSHM_OK)
		tk_global_inherit(n, t);
	if (rc != TKSHM_OK) {
		if (n->base)
			tk_segment_close(n);
		free(n);
		return rc;
	}
	n->redis = t->redis;
	n->strict = t->strict;
	n->pred = tk_instance_copy(t);
	n->carry_copy = true; /* t stays live for others: read, never seal */
	rc = n->pred ? tk_carry_drain(n, now) : TKSHM_ENOMEM;
	tk_instance_free(n->pred);
	n->pred = NULL;
	n->carry_copy = false;
	if (rc != TKSHM_OK) {
		tk_instance_free(n);
		return rc;
	}
	tk_life_clear(n, TK_LIFE_DRAINING);
	n->life_word = tk_life_load(n);
	if (!tk_priv_cas_release_acquire(&h->cur, &expected, n)) {
		tk_instance_free(n);
		return TKSHM_EBUSY;
	}
	tk_instance_retire(h, t);
	return TKSHM_OK;
}

/* The names of a replacement: `side`, where t's file stays linked while
 * it is drained, and `tmp`, where the replacement is built. */
static int
tk_replace_names(const char *path, const struct tkshm_table *t, char *side,
		 char *side_base, char *tmp, size_t len)
{
	char dir[4096];
	const char *base;
	uint32_t r;

	if (tk_path_split(path, dir, sizeof dir, &base) != TKSHM_OK)
		return TKSHM_EINVAL;
	if ((size_t)snprintf(side_base, TK_PRED_NAME_MAX,
			     "%.60s.%016" PRIx64 ".pred", base,
			     t->table_id) >= TK_PRED_NAME_MAX)
		return TKSHM_EINVAL;
	if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
		return TKSHM_ESYSTEM;
	if ((size_t)snprintf(side, len, "%s/%s", dir, side_base) >= len ||
	    (size_t)snprintf(tmp, len, "%s/%.60s.%08" PRIx32 ".new", dir, base,
			     r) >= len)
		return TKSHM_EINVAL;
	return TKSHM_OK;
}

/* tk_replace_named's answer when the path names another table than t. */
#define TK_PATH_MOVED 2

/* Whether `path` names a replacement of t (a table whose predecessor is
 * t): one its replacer published, then died before setting REPLACED in t
 * (L2).  Any process may set it then, as every fetch does (L4). */
static bool
tk_path_replaces(const char *path, const struct tkshm_table *t)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	struct tkshm_table *n = calloc(1, sizeof *n);
	bool yes;

	if (!n)
		return false;
	o.flags = TKSHM_O_RDONLY;
	yes = tk_segment_open(path, &o, n) == TKSHM_OK &&
	      n->pred_id == t->table_id && n->seed == t->seed;
	if (n->base)
		tk_segment_close(n);
	free(n);
	return yes;
}

/* L2 and L6 for a named table t (the caller holds t's writer word); the
 * keys are converted as they stand at `now`. */
static int
tk_replace_named(struct tkshm_table *h, struct tkshm_table *t, tkshm_options *o,
		 uint64_t slots, double now)
{
	const char *path = h->follow->path;
	char side[4400], tmp[4400];
	struct tk_lineage lin;
	struct stat st;
	struct tkshm_table *n;
	int rc;

	memset(&lin, 0, sizeof lin);
	rc = tk_replace_names(path, t, side, lin.pred_name, tmp, sizeof side);
	if (rc != TKSHM_OK)
		return rc;
	if (lstat(path, &st) != 0)
		return TKSHM_ENOENT;
	if (st.st_ino != t->ino || st.st_dev != t->dev)
		return TK_PATH_MOVED;
	lin.seed = t->seed;
	lin.pred_id = t->table_id;
	lin.permit_epoch = tk_permit_epoch_after(t, o->policy);
	lin.change_ms = now;
	lin.uid = st.st_uid;
	lin.gid = st.st_gid;
	o->mode = st.st_mode & 0777;
	n = calloc(1, sizeof *n);
	if (!n)
		return TKSHM_ENOMEM;
	rc = tk_segment_build(tmp, o, slots, &lin, n);
	if (rc != TKSHM_OK) {
		free(n);
		return rc;
	}
	tk_global_inherit(n, t);
	TK_CRASH_POINT();
	/* A side name left by a replacer that died before publishing. */
	(void)unlink(side);
	if (link(path, side) != 0) {
		rc = errno == EEXIST ? TKSHM_EBUSY : TKSHM_ESYSTEM;
		goto unbuilt;
	}
	/* A crash here leaves the side name, which the next replacement of
	 * this table removes first (above). */
	TK_CRASH_POINT();
	if (rename(tmp, path) != 0) {
		rc = TKSHM_ESYSTEM;
		(void)unlink(side);
		goto unbuilt;
	}
	/* Published: from here on a crash leaves a draining table that its
	 * next opener drains (tk_drain_orphan). */
	TK_CRASH_POINT();
	(void)tk_life_or(t, TK_LIFE_REPLACED);
	n->pred = tk_instance_copy(t);
	rc = n->pred ? tk_map_own(n) : TKSHM_ENOMEM;
	if (rc == TKSHM_OK)
		rc = tk_carry_drain(n, now);
	if (rc == TKSHM_OK) {
		(void)unlink(side);
		tk_life_clear(n, TK_LIFE_DRAINING);
	}
	tk_instance_free(n);
	return rc;
unbuilt:
	(void)unlink(tmp);
	tk_segment_close(n);
	free(n);
	return rc;
}

/* Finishes the drain of table n (L6), converting at `now` (the time of
 * the change that made n, recorded in it): takes its predecessor's writer word
 * (waiting up to wait_ms for a live replacer to finish, or from a dead
 * one), drains what is left, unlinks the predecessor's side name and
 * clears DRAINING.  A predecessor that is gone was drained: L6 unlinks it
 * last.  The caller holds tk_change_lock. */
static int
tk_drain_finish(struct tkshm_table *n, const char *path, long wait_ms,
		double now)
{
	char side[4400], dir[4096];
	const char *base;
	int rc;

	if (!n->pred) {
		tk_life_clear(n, TK_LIFE_DRAINING);
		return TKSHM_OK;
	}
	rc = tk_writer_take(n->pred, wait_ms);
	if (rc != TKSHM_OK)
		return rc;
	if (tk_life_load(n) & TK_LIFE_DRAINING) {
		rc = tk_carry_drain(n, now);
		if (rc == TK_EMOVED)
			rc = TKSHM_EBUSY; /* n was replaced meanwhile */
		if (rc == TKSHM_OK && path &&
		    tk_path_split(path, dir, sizeof dir, &base) == TKSHM_OK) {
			snprintf(side, sizeof side, "%s/%s", dir, n->pred_name);
			(void)unlink(side);
		}
		if (rc == TKSHM_OK)
			tk_life_clear(n, TK_LIFE_DRAINING);
	}
	tk_writer_release(n->pred);
	return rc;
}

/* A table left draining by a replacer that died (L6): whoever opens it
 * takes the predecessor's writer word from the dead and finishes.  A
 * replacer still at work is left to it. */
static void
tk_drain_orphan(struct tkshm_table *n, const char *path)
{
	if (pthread_mutex_trylock(&tk_change_lock) != 0)
		return; /* another thread of ours is changing or draining */
	(void)tk_drain_finish(n, path, 0, n->change_ms);
	(void)pthread_mutex_unlock(&tk_change_lock);
}

/* ------------------------------------------------------------------------
 * Changing a table
 * ---------------------------------------------------------------------- */

/* tk_change_once's answer when the table changed while it planned: plan
 * again on what it is now. */
#define TK_CHANGE_AGAIN 1

/* Applies the change planned in *change to instance t of handle h, with
 * t's writer word held. */
static int
tk_change_write(struct tkshm_table *h, struct tkshm_table *t,
		const tkshm_policy *policy, double now,
		const tkshm_change *change)
{
	tkshm_options o = TKSHM_OPTIONS_INIT;
	int rc;

	o.policy = policy ? policy : &t->policy;
	o.on_full = t->on_full;
	if (change->kind == TKSHM_CHANGE_IN_PLACE)
		return tk_life_publish(t, o.policy);
	if (t->life_word & TK_LIFE_DRAINING) {
		/* t still holds keys of its predecessor only: replaced now,
		 * they would be lost.  Its drain finishes first. */
		rc = tk_drain_finish(t, h->follow ? h->follow->path : NULL,
				     TK_WRITER_WAIT_MS, t->change_ms);
		return rc == TKSHM_OK ? TK_CHANGE_AGAIN : rc;
	}
	if (t->anonymous || !h->follow || !h->follow->path) {
		rc = tk_replace_anonymous(h, t, &o, change->slots_after, now);
	} else {
		rc = tk_replace_named(h, t, &o, change->slots_after, now);
		if (rc == TK_PATH_MOVED) {
			/* Replaced already, by a replacer that died before
			 * saying so in t: said now, the next attempt follows
			 * and finishes its drain.  Another table under the
			 * path: not ours to change. */
			if (!tk_path_replaces(h->follow->path, t))
				return TKSHM_EBUSY;
			(void)tk_life_or(t, TK_LIFE_REPLACED);
			return TK_CHANGE_AGAIN;
		}
	}
	/* The drain met a replacement of the new table (its writer word is
	 * not ours): the change is made, its drain is the next opener's. */
	return rc == TK_EMOVED ? TKSHM_EBUSY : rc;
}

/* One attempt of tk_change_apply, with tk_change_lock held. */
static int
tk_change_once(struct tkshm_table *h, const tkshm_policy *policy,
	       uint64_t slots, bool refuse_shrink, double now,
	       tkshm_change *change)
{
	struct tkshm_table *t = tk_enter(h);
	int rc;

	rc = tk_change_plan(t, policy, slots, change);
	if (rc == TKSHM_OK && refuse_shrink && slots &&
	    tk_slots_rounded(slots) < change->slots_before)
		rc = TKSHM_EINVAL; /* tables do not shrink */
	if (rc == TKSHM_OK && change->kind != TKSHM_CHANGE_NONE && t->readonly)
		rc = TKSHM_EREADONLY;
	if (rc != TKSHM_OK || change->kind == TKSHM_CHANGE_NONE) {
		tk_leave();
		return rc;
	}
	rc = tk_writer_take(t, TK_WRITER_WAIT_MS);
	if (rc == TKSHM_OK) {
		if (tk_life_load(t) != t->life_word)
			rc = TK_CHANGE_AGAIN; /* changed meanwhile */
		else
			rc = tk_change_write(h, t, policy, now, change);
		tk_writer_release(t);
	}
	tk_leave();
	return rc;
}

/* Applies `policy` and `slots` to the table handle h is on (the caller
 * may hold nothing; the writer word is taken here), converting states
 * carried to a replacement as they stand at `now`.  *change says what
 * was done. */
static int
tk_change_apply(struct tkshm_table *h, const tkshm_policy *policy,
		uint64_t slots, bool refuse_shrink, double now,
		tkshm_change *change)
{
	struct timespec until;
	int rc = TKSHM_EBUSY;

	(void)clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += TK_WRITER_WAIT_MS / 1000;
	if (pthread_mutex_timedlock(&tk_change_lock, &until) != 0)
		return TKSHM_EBUSY;
	for (int attempt = 0; attempt < 8; attempt++) {
		rc = tk_change_once(h, policy, slots, refuse_shrink, now,
				    change);
		if (rc != TK_CHANGE_AGAIN)
			break;
		rc = TKSHM_EBUSY;
	}
	(void)pthread_mutex_unlock(&tk_change_lock);
	if (rc == TKSHM_OK) {
		/* The caller's next call runs on the change. */
		(void)tk_enter(h);
		tk_leave();
	}
	return rc;
}

int
tkshm_apply_at(tkshm_table *h, const tkshm_policy *policy, uint64_t slots,
	       double now_ms, tkshm_change *out)
{
	tkshm_change scratch;
	int rc;

	if (!h)
		return TKSHM_ENULL;
	if (!(now_ms >= 0 && now_ms <= TKSHM_NOW_MAX))
		return TKSHM_ENOW; /* NaN fails both */
	if (!out)
		out = &scratch;
	rc = tk_change_check_args(policy, slots, NULL);
	if (rc != TKSHM_OK)
		return rc;
	return tk_change_apply(h, policy, slots, true, now_ms, out);
}

int
tkshm_apply(tkshm_table *h, const tkshm_policy *policy, uint64_t slots,
	    tkshm_change *out)
{
	return tkshm_apply_at(h, policy, slots, tkshm_now_ms(), out);
}

/* ------------------------------------------------------------------------
 * Open, plan, close
 * ---------------------------------------------------------------------- */

static int
tk_follow_make(struct tkshm_table *t, const char *path, const tkshm_options *o)
{
	char full[4096];

	t->follow = calloc(1, sizeof *t->follow);
	if (!t->follow)
		return TKSHM_ENOMEM;
	t->follow->o = *o;
	t->follow->o.policy = NULL;
	t->follow->o.errbuf = NULL;
	t->follow->o.errbuf_len = 0;
	t->follow->o.change = NULL;
	if (!path)
		return TKSHM_OK;
	if (!strchr(path, '/'))
		snprintf(full, sizeof full, "%s/%s", TKSHM_DEFAULT_DIR, path);
	else
		snprintf(full, sizeof full, "%s", path);
	t->follow->path = strdup(full);
	return t->follow->path ? TKSHM_OK : TKSHM_ENOMEM;
}

static void
tk_handle_free(struct tkshm_table *t)
{
	if (t->follow) {
		free(t->follow->path);
		free(t->follow);
	}
	tk_instance_free(t->pred);
	t->pred = NULL;
	if (t->map)
		tk_map_put(t->map);
	else if (t->base)
		tk_segment_close(t);
	free(t);
}

/* Attaches or creates the table at path (not following a change): the
 * handle, on the table the path names now, draining finished if its
 * replacer died. */
static int
tk_handle_open(const char *path, const tkshm_options *o,
	       struct tkshm_table **out)
{
	for (int attempt = 0; attempt < 8; attempt++) {
		struct tkshm_table *t = calloc(1, sizeof *t);
		int rc;

		if (!t)
			return TKSHM_ENOMEM;
		rc = tk_segment_open(path, o, t);
		if (rc == TKSHM_OK)
			rc = tk_map_own(t);
		if (rc == TKSHM_OK)
			rc = tk_follow_make(t, path, o);
		if (rc == TKSHM_OK && (t->life_word & TK_LIFE_DRAINING))
			rc = tk_pred_attach(t, t->follow->path);
		if (rc != TKSHM_OK) {
			tk_handle_free(t);
			return rc;
		}
		t->cur = t;
		if (t->pred && !t->readonly)
			tk_drain_orphan(t, t->follow->path);
		if (!(tk_life_load(t) & TK_LIFE_REPLACED) || !path) {
			*out = t;
			return TKSHM_OK;
		}
		/* Replaced between our open and now: open what it names. */
		tk_handle_free(t);
	}
	return TKSHM_EBUSY;
}

int
tkshm_open(const char *path, const tkshm_options *opts, tkshm_table **out)
{
	static const tkshm_options defaults = TKSHM_OPTIONS_INIT;
	struct tkshm_table *t;
	tkshm_change change;
	int rc;

	if (!out)
		return TKSHM_ENULL;
	if (!opts)
		opts = &defaults;
	if (opts->size != sizeof(tkshm_options))
		return TKSHM_EINVAL;
	if (opts->errbuf && opts->errbuf_len)
		opts->errbuf[0] = '\0';
	{
		static pthread_once_t once = PTHREAD_ONCE_INIT;
		(void)pthread_once(&once, tk_rcu_init);
	}
	rc = tk_handle_open(path, opts, &t);
	if (rc != TKSHM_OK)
		return rc;
	rc = tk_change_plan(t, opts->policy, opts->slots, &change);
	if (rc == TKSHM_OK && t->created_now)
		tk_change_created(t, &change);
	else if (rc == TKSHM_OK && change.kind != TKSHM_CHANGE_NONE) {
		if ((opts->flags & TKSHM_O_KEEP) || t->readonly) {
			tk_change_say_mismatch(opts, t, opts->policy, &change);
			rc = TKSHM_EMISMATCH;
		} else {
			rc = tk_change_apply(t, opts->policy, opts->slots,
					     false, tkshm_now_ms(), &change);
		}
	} else if (rc == TKSHM_OK && (opts->flags & TKSHM_O_KEEP) &&
		   opts->slots &&
		   tk_slots_rounded(opts->slots) != change.slots_before) {
		tk_change_say_mismatch(opts, t, opts->policy, &change);
		rc = TKSHM_EMISMATCH;
	}
	if (rc != TKSHM_OK) {
		if (rc == TKSHM_EPOLICY || rc == TKSHM_EINVAL)
			tk_change_say_invalid(opts, rc);
		tkshm_close(t);
		return rc;
	}
	if (opts->change)
		*opts->change = change;
	*out = t;
	return TKSHM_OK;
}

int
tkshm_plan(const char *path, const tkshm_options *opts, tkshm_change *out)
{
	tkshm_options o;
	struct tkshm_table *t;
	int rc;

	if (!opts || !out)
		return TKSHM_ENULL;
	if (opts->size != sizeof(tkshm_options))
		return TKSHM_EINVAL;
	rc = tk_change_check_args(opts->policy, opts->slots, opts);
	if (rc != TKSHM_OK)
		return rc;
	if (!path) {
		tk_change_creating(
			opts->policy,
			tk_slots_rounded(opts->slots ? opts->slots :
						       TKSHM_DEFAULT_SLOTS),
			true, out);
		return opts->policy ? TKSHM_OK : TKSHM_EPOLICY;
	}
	o = *opts;
	o.flags = (o.flags & ~(unsigned)(TKSHM_O_CREATE | TKSHM_O_EXCL)) |
		  TKSHM_O_RDONLY;
	o.change = NULL;
	rc = tk_handle_open(path, &o, &t);
	if (rc == TKSHM_ENOENT) {
		tk_change_creating(
			opts->policy,
			tk_slots_rounded(opts->slots ? opts->slots :
						       TKSHM_DEFAULT_SLOTS),
			false, out);
		return opts->policy ? TKSHM_OK : TKSHM_EPOLICY;
	}
	if (rc != TKSHM_OK)
		return rc;
	rc = tk_change_plan(t, opts->policy, opts->slots, out);
	tkshm_close(t);
	return rc;
}

int
tkshm_close(tkshm_table *h)
{
	struct tkshm_table *t;

	if (!h)
		return TKSHM_OK;
	t = tk_priv_load_acquire(&h->cur);
	/* No other thread may use the handle now (tkshm.h): every instance
	 * but the handle is freed after the calls still running on it. */
	if (t && t != h) {
		tk_instance_retire(h, t);
		urcu_bp_barrier();
	}
	tk_handle_free(h);
	return TKSHM_OK;
}
