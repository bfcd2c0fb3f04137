/*
 * baseline_mutex.c - a shared table under one robust process-shared mutex
 * (see baseline_mutex.h for what it stands for and why it is built so).
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "algorithms/gcra.h"
#include "baseline_mutex.h"

struct mtx_slot {
	uint64_t fp; /* 0: never used */
	uint64_t st; /* the TAT's bit pattern (tk_gcra_state) */
};

/* The whole mapping: this header, then the slots from a cache line. */
struct mtx_table {
	pthread_mutex_t lock;
	uint64_t seed;
	uint64_t mask;
	uint64_t evictions;
	size_t map_bytes;
	struct tk_gcra g;
	_Alignas(64) struct mtx_slot slots[];
};

static void (*mtx_in_lock_hook)(void);

#define MTX_ERR(...)                                         \
	do {                                                 \
		if (err && err_len)                          \
			snprintf(err, err_len, __VA_ARGS__); \
	} while (0)

int
mtx_create(uint64_t slots, const tkshm_policy *policy, struct mtx_table **out,
	   char *err, size_t err_len)
{
	pthread_mutexattr_t attr;
	struct mtx_table *t;
	uint64_t n = MTX_WINDOW;
	size_t bytes;
	int rc;

	if (!policy || !out)
		return TKSHM_ENULL;
	if (policy->kind != TKSHM_KIND_GCRA) {
		MTX_ERR("the mutex baseline runs GCRA only");
		return TKSHM_EPOLICY;
	}
	while (n < slots && n < TKSHM_MAX_SLOTS)
		n <<= 1;
	bytes = sizeof *t + n * sizeof(struct mtx_slot);
	t = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED) {
		MTX_ERR("mmap of %zu bytes: %s", bytes, strerror(errno));
		return TKSHM_ENOMEM;
	}
	rc = tk_gcra_init(&t->g, policy->u.gcra.limit, policy->u.gcra.period_ms,
			  policy->u.gcra.burst, err, err_len);
	if (rc != TKSHM_OK) {
		munmap(t, bytes);
		return rc;
	}
	if (getrandom(&t->seed, sizeof t->seed, 0) != sizeof t->seed) {
		MTX_ERR("getrandom: %s", strerror(errno));
		munmap(t, bytes);
		return TKSHM_ESYSTEM;
	}
	t->mask = n - 1;
	t->map_bytes = bytes;
	/* PSHARED: the mutex lives in the shared mapping and is taken by
	 * several processes.  ROBUST: a holder that dies hands the next
	 * locker EOWNERDEAD instead of a lock held forever, as nginx and
	 * APCu configure theirs. */
	rc = pthread_mutexattr_init(&attr);
	if (rc == 0)
		rc = pthread_mutexattr_setpshared(&attr,
						  PTHREAD_PROCESS_SHARED);
	if (rc == 0)
		rc = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
	if (rc == 0)
		rc = pthread_mutex_init(&t->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	if (rc != 0) {
		MTX_ERR("process-shared robust mutex: %s", strerror(rc));
		munmap(t, bytes);
		return TKSHM_ESYSTEM;
	}
	*out = t;
	return TKSHM_OK;
}

void
mtx_destroy(struct mtx_table *t)
{
	if (!t)
		return;
	/* No pthread_mutex_destroy: other processes may still hold the
	 * mapping (a mutex shared with them is theirs too). */
	munmap(t, t->map_bytes);
}

void
mtx_set_in_lock_hook(void (*fn)(void))
{
	mtx_in_lock_hook = fn;
}

uint64_t
mtx_evictions(const struct mtx_table *t)
{
	return t->evictions;
}

/* Not inlined: gcc 12 -O2 warns (-Warray-bounds) inside the inlined XXH3
 * when a caller passes a tiny constant key. */
__attribute__((noinline)) static uint64_t
mtx_fp(const struct mtx_table *t, const void *key, size_t len)
{
	uint64_t h = XXH3_64bits_withSeed(key, len, t->seed);

	return h ? h : 1; /* 0 marks an empty slot */
}

static int
mtx_lock(struct mtx_table *t)
{
	int rc = pthread_mutex_lock(&t->lock);

	if (rc == EOWNERDEAD)
		rc = pthread_mutex_consistent(&t->lock);
	return rc;
}

/* The slot of `fp`, or where to insert it (*found false).  Under the lock:
 * plain reads, nobody else writes. */
static struct mtx_slot *
mtx_find(struct mtx_table *t, uint64_t fp, double now, bool *found)
{
	struct mtx_slot *empty = NULL, *idle = NULL, *oldest = NULL;

	for (uint64_t i = 0; i < MTX_WINDOW; i++) {
		struct mtx_slot *s = &t->slots[(fp + i) & t->mask];

		if (s->fp == fp) {
			*found = true;
			return s;
		}
		if (s->fp == 0) {
			if (!empty)
				empty = s;
		} else if (tk_gcra_is_idle(s->st, now)) {
			if (!idle)
				idle = s;
		} else if (!oldest || s->st < oldest->st) {
			/* Non-negative doubles order like their bits. */
			oldest = s;
		}
	}
	*found = false;
	return empty ? empty : idle ? idle : oldest;
}

int
mtx_check_at(struct mtx_table *t, const void *key, size_t key_len, double cost,
	     double now_ms, tkshm_decision *out)
{
	struct mtx_slot *s;
	uint64_t fp, next;
	bool found;
	int rc;

	if (!t || !key || !out)
		return TKSHM_ENULL;
	if (key_len == 0)
		return TKSHM_EKEYEMPTY;
	if (key_len > TKSHM_KEY_MAX)
		return TKSHM_EKEYLONG;
	if (!isfinite(cost) || !(cost > 0) || cost > TKSHM_COST_MAX)
		return TKSHM_ECOST;
	if (!isfinite(now_ms) || now_ms < 0)
		return TKSHM_ENOW;
	/* Hashing needs no lock: keep it out of the critical section. */
	fp = mtx_fp(t, key, key_len);

	rc = mtx_lock(t);
	if (rc != 0)
		return TKSHM_ESYSTEM;
	s = mtx_find(t, fp, now_ms, &found);
	if (tk_gcra_check(&t->g, found, found ? s->st : 0, now_ms, cost, &next,
			  out)) {
		/* A denial writes nothing; an admission stores the TAT,
		 * taking the slot over if the key was not there. */
		if (!found && s->fp != 0 && !tk_gcra_is_idle(s->st, now_ms))
			t->evictions++;
		s->fp = fp;
		s->st = next;
	}
	if (mtx_in_lock_hook)
		mtx_in_lock_hook();
	pthread_mutex_unlock(&t->lock);
	return TKSHM_OK;
}

int
mtx_check(struct mtx_table *t, const void *key, size_t key_len, double cost,
	  tkshm_decision *out)
{
	return mtx_check_at(t, key, key_len, cost, tkshm_now_ms(), out);
}
