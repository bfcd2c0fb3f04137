/*
 * handle.h - from a caller's handle to the table instance a call runs on.
 *
 * A handle is the first instance of its table.  When the table changes
 * (a policy written in place, a replacement, the end of a drain:
 * protocol.h L1-L6) the live word in its header page changes, and the next
 * call that sees it makes a new instance and moves the handle's `cur` to
 * it.  Other threads may still be running on the old instance: it is
 * released only after an RCU grace period (liburcu-bp, which registers a
 * library's threads on their first read-side section), so the check path
 * takes no lock.
 *
 * The handle itself, the first instance, is never released before
 * tkshm_close, nor its mapping.  So a handle that has never followed a
 * change needs no read-side section: its calls load `cur` (the handle
 * itself) and the live word (unchanged), and run.  Measured with
 * bench_check (BM_check_now against BM_check_body, its body alone), that
 * is about 1 ns a check where a read-side section of liburcu-bp (two calls
 * into the library and its thread-local reader) costs 4 to 7 ns.  The
 * price: a table replaced under a handle stays mapped until the handle is
 * closed (the instances after it are released after grace periods).
 */
#ifndef TKSHM_API_HANDLE_H
#define TKSHM_API_HANDLE_H

#include <urcu/urcu-bp.h>

#include "shm/atomic.h"
#include "shm/table.h"

#ifdef TK_TSAN
/* ThreadSanitizer does not see liburcu's grace periods (an uninstrumented
 * library, synchronising through membarrier): every read-side section's
 * end releases this token, and freeing a retired instance acquires it,
 * which is the order a grace period guarantees. */
#include <sanitizer/tsan_interface.h>
extern char tk_rcu_tsan_token;
#define TK_RCU_TSAN_RELEASE() __tsan_release(&tk_rcu_tsan_token)
#define TK_RCU_TSAN_ACQUIRE() __tsan_acquire(&tk_rcu_tsan_token)
/* The same for what call_rcu's queue hands to its worker thread. */
#define TK_TSAN_HANDOFF(p) __tsan_release(p)
#define TK_TSAN_TAKEN(p)   __tsan_acquire(p)
#else
#define TK_RCU_TSAN_RELEASE() ((void)0)
#define TK_RCU_TSAN_ACQUIRE() ((void)0)
#define TK_TSAN_HANDOFF(p)    ((void)(p))
#define TK_TSAN_TAKEN(p)      ((void)(p))
#endif

/* Makes a new instance for the table's change and moves the handle to it
 * (life_api.c).  Inside a read-side section.  Returns the instance the
 * call is to run on: the new one, or `t` when following failed (the call
 * then decides on the table it had, and the next call tries again). */
struct tkshm_table *tk_follow(struct tkshm_table *h, struct tkshm_table *t);

/* The instance handle h is on, following a change first.  Inside a
 * read-side section. */
static inline struct tkshm_table *
tk_resolve(struct tkshm_table *h)
{
	/* Acquire: pairs with tk_follow's release, so the new instance's
	 * fields are seen whole.  An instance that is no handle (cur NULL)
	 * is its own. */
	struct tkshm_table *t = tk_priv_load_acquire(&h->cur);

	if (!t)
		t = h;
	if (__builtin_expect(tk_life_load(t) != t->life_word, 0))
		t = tk_follow(h, t);
	return t;
}

/* A read-side section: instances seen inside it stay mapped until
 * tk_leave. */
static inline void
tk_rcu_lock(void)
{
	urcu_bp_read_lock();
}

static inline struct tkshm_table *
tk_enter(struct tkshm_table *h)
{
	tk_rcu_lock();
	return tk_resolve(h);
}

static inline void
tk_leave(void)
{
	TK_RCU_TSAN_RELEASE();
	urcu_bp_read_unlock();
}

/* Waits a moment for a replacement to be published before running a call
 * again that met TK_EMOVED. */
void tk_follow_pause(unsigned tries);

/* Why handle h could not follow its table's replacement, when that will
 * not pass by waiting (TKSHM_EPERM, TKSHM_ENOENT, ...), else 0. */
int tk_follow_error(const struct tkshm_table *h);

/* True when handle h is on itself and its table has not changed: a call
 * may run on h with no read-side section (see above). */
static inline bool
tk_on_itself(struct tkshm_table *h)
{
	/* Relaxed: `cur == h` says the call runs on the handle, whose fixed
	 * fields were written before the caller had it. */
	struct tkshm_table *c = tk_priv_load_relaxed(&h->cur);

	return (c == h || !c) &&
	       __builtin_expect(tk_life_load(h) == h->life_word, 1);
}

/* The body of every public call on a handle h: runs `call` (which names
 * the instance `t`) inside a read-side section, again on the replacement
 * when the table was replaced under it (TK_EMOVED, L3). */
#define TK_HANDLE_CALL(h, call)                                       \
	do {                                                          \
		if (!(h))                                             \
			return TKSHM_ENULL;                           \
		if (__builtin_expect(tk_on_itself(h), 1)) {           \
			struct tkshm_table *t = (h);                  \
			int tk_rc_ = (call);                          \
			if (__builtin_expect(tk_rc_ != TK_EMOVED, 1)) \
				return tk_rc_;                        \
		}                                                     \
		for (unsigned tk_try_ = 0;; tk_try_++) {              \
			struct tkshm_table *t = tk_enter(h);          \
			int tk_rc_ = (call);                          \
			tk_leave();                                   \
			if (tk_rc_ != TK_EMOVED)                      \
				return tk_rc_;                        \
			if ((tk_rc_ = tk_follow_error(h)) != 0)       \
				return tk_rc_;                        \
			if (tk_try_ >= 64)                            \
				return TKSHM_EBUSY;                   \
			tk_follow_pause(tk_try_);                     \
		}                                                     \
	} while (0)

#endif /* TKSHM_API_HANDLE_H */
