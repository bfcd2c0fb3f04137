/*
 * strict_args.c - the ARGV of each strict script (strict_args.h).
 */
#include <string.h>

#include "redis/state_codec.h"
#include "redis/strict_args.h"

static void
tk_argv_add(struct tk_argv *a, double v)
{
	int i = a->args.n++;

	a->len[i] = tk_arg_f64(a->buf[i], sizeof a->buf[i], v);
	a->v[i] = a->buf[i];
}

static void
tk_argv_init(struct tk_argv *a)
{
	memset(&a->args, 0, sizeof a->args);
	a->args.v = a->v;
	a->args.len = a->len;
}

enum tk_script_id
tk_strict_args(const struct tkshm_table *t, double now, double cost,
	       struct tk_argv *a)
{
	const tkshm_policy *p = &t->policy;

	tk_argv_init(a);
	tk_argv_add(a, now);
	switch (p->kind) {
	case TKSHM_KIND_GCRA:
		tk_argv_add(a, p->u.gcra.period_ms);
		tk_argv_add(a, p->u.gcra.limit);
		tk_argv_add(a, p->u.gcra.burst);
		tk_argv_add(a, cost);
		return TK_SCRIPT_GCRA;
	case TKSHM_KIND_TOKEN_BUCKET:
		tk_argv_add(a, p->u.token_bucket.capacity);
		tk_argv_add(a, p->u.token_bucket.refill_per_sec);
		tk_argv_add(a, cost);
		return TK_SCRIPT_TOKEN_BUCKET;
	case TKSHM_KIND_FIXED_WINDOW:
		tk_argv_add(a, p->u.fixed_window.limit);
		tk_argv_add(a, p->u.fixed_window.window_ms);
		tk_argv_add(a, cost);
		return TK_SCRIPT_FIXED_WINDOW;
	case TKSHM_KIND_SLIDING_WINDOW:
		tk_argv_add(a, p->u.sliding_window.window_ms);
		tk_argv_add(a, p->u.sliding_window.limit);
		tk_argv_add(a, cost);
		tk_argv_add(a, p->u.sliding_window.buckets);
		return TK_SCRIPT_SLIDING_WINDOW;
	case TKSHM_KIND_SLIDING_LOG:
		tk_argv_add(a, p->u.sliding_log.window_ms);
		tk_argv_add(a, p->u.sliding_log.limit);
		tk_argv_add(a, cost);
		return TK_SCRIPT_SLIDING_LOG;
	case TKSHM_KIND_QUOTA:
		if (p->u.quota.reset_cadence == TKSHM_QUOTA_ROLLING) {
			/* ThrottleKit's rolling quota is its slidingWindow. */
			tk_argv_add(a, p->u.quota.period_ms);
			tk_argv_add(a, p->u.quota.limit);
			tk_argv_add(a, cost);
			tk_argv_add(a, p->u.quota.buckets);
			return TK_SCRIPT_SLIDING_WINDOW;
		}
		tk_argv_add(a, p->u.quota.limit);
		tk_argv_add(a, cost);
		tk_argv_add(a, p->u.quota.reset_cadence);
		tk_argv_add(a, p->u.quota.period_ms);
		tk_argv_add(a, p->u.quota.anchor);
		tk_argv_add(a, p->u.quota.offset_minutes * 60000.0);
		tk_argv_add(a, p->u.quota.week_starts_on);
		return TK_SCRIPT_QUOTA;
	default: /* validated: the shaper */
		tk_argv_add(a, p->u.leaky_bucket.rate_per_sec);
		tk_argv_add(a, p->u.leaky_bucket.max_queue_ms);
		tk_argv_add(a, cost);
		return TK_SCRIPT_LEAKY;
	}
}

void
tk_strict_read_args(const struct tkshm_table *t, double now, struct tk_argv *a)
{
	const tkshm_policy *p = &t->policy;
	double type;

	switch (p->kind) {
	case TKSHM_KIND_GCRA:
	case TKSHM_KIND_LEAKY_BUCKET:
		type = 1;
		break;
	case TKSHM_KIND_TOKEN_BUCKET:
		type = 2;
		break;
	case TKSHM_KIND_SLIDING_WINDOW:
		type = 4;
		break;
	case TKSHM_KIND_SLIDING_LOG:
		type = 5;
		break;
	case TKSHM_KIND_QUOTA:
		type = p->u.quota.reset_cadence == TKSHM_QUOTA_ROLLING ? 4 : 3;
		break;
	default: /* fixed window */
		type = 3;
		break;
	}
	tk_argv_init(a);
	tk_argv_add(a, now);
	tk_argv_add(a, type);
}
