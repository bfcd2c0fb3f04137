/*
 * permit_local.c - the permits this process holds (permit_local.h).
 *
 * A small array searched linearly: a process holds few permits at once
 * (one per thread in a request, usually).  Its capacity only grows, so a
 * slot freed by tk_local_take is always there for putting it back.
 */
#include <pthread.h>
#include <stdlib.h>

#include "shaper/permit_local.h"

struct tk_held {
	uint64_t seed, fp, serial;
	uint32_t cell;
};

static pthread_mutex_t tk_held_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t tk_held_once = PTHREAD_ONCE_INIT;
static struct tk_held *tk_held;
static size_t tk_held_n, tk_held_cap;

/* In a forked child: the parent's permits are not the child's, and a
 * lock held by another thread of the parent at fork would never open. */
static void
tk_held_after_fork(void)
{
	pthread_mutex_init(&tk_held_lock, NULL);
	tk_held_n = 0;
}

static void
tk_held_init(void)
{
	(void)pthread_atfork(NULL, NULL, tk_held_after_fork);
}

bool
tk_local_add(uint64_t seed, uint64_t fp, uint32_t cell, uint64_t serial)
{
	bool ok = true;

	(void)pthread_once(&tk_held_once, tk_held_init);
	pthread_mutex_lock(&tk_held_lock);
	if (tk_held_n == tk_held_cap) {
		size_t cap = tk_held_cap ? tk_held_cap * 2 : 16;
		struct tk_held *h = realloc(tk_held, cap * sizeof *h);

		if (h) {
			tk_held = h;
			tk_held_cap = cap;
		} else {
			ok = false;
		}
	}
	if (ok)
		tk_held[tk_held_n++] =
			(struct tk_held){ seed, fp, serial, cell };
	pthread_mutex_unlock(&tk_held_lock);
	return ok;
}

bool
tk_local_take(uint64_t seed, uint64_t fp, uint32_t cell, uint64_t serial)
{
	bool found = false;

	(void)pthread_once(&tk_held_once, tk_held_init);
	pthread_mutex_lock(&tk_held_lock);
	for (size_t i = 0; i < tk_held_n; i++) {
		struct tk_held *h = &tk_held[i];

		if (h->seed == seed && h->fp == fp && h->cell == cell &&
		    h->serial == serial) {
			*h = tk_held[--tk_held_n];
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&tk_held_lock);
	return found;
}
