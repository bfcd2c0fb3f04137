/*
 * forecast.c - ThrottleKit's non-consuming forecast for every algorithm
 * (the definitions and per-kind formulas are in forecast.h).
 *
 * Design.  Two tools do all the work, each exact in double arithmetic.
 *
 * 1. The walk (tk_fc_walk) counts spendable_now.  For every kind, a run of
 *    admissions at one `now` only ever moves one counter x by a constant
 *    addend s, with the check's own rounding, x' = x + s:
 *      gcra            x = the TAT (from max(TAT, now)),  s = T*cost
 *      token bucket    x = tokens,                        s = -cost
 *      fixed window    x = count (quota: the same),       s = cost
 *      sliding window  x = the count of the decided tick, s = cost
 *      token budget    x = served,                        s = tokens
 *    and its admission test is a monotone function of x alone (every other
 *    input is fixed at `now`), so the admissions are a prefix of the walk.
 *    Within one binade [A, B) of grid u (x a multiple of u, A/u = 2^52,
 *    B/u = 2^53; [0, 2^-1021) is one binade of grid 2^-1074), a step whose
 *    exact sum stays in [A, B) is x + round_u(s), round-to-nearest-even on
 *    the grid: a constant stride, except that on a tie the even neighbour
 *    depends on the parity of x/u.  The parity settles after at most one
 *    step (if s/u = Q + 1/2: Q even keeps stride Q once x/u + Q is even, Q
 *    odd keeps Q + 1 once it is odd), so two equal consecutive strides
 *    mean a constant stride to the binade's edge.  The walk therefore
 *    takes single steps at binade edges and while a tie settles, and
 *    jumps whole binades otherwise, searching the admission test by
 *    bisection only in the binade where it fails.
 *
 * 2. The search (tk_fc_first) finds the least whole ms at which a
 *    predicate monotone in time holds: idle (full_at), "one more unit"
 *    (next_replenish_at), "tick >= k" (the sliding window's ticks).  It
 *    starts from the formula's value, gallops up if that is too early and
 *    bisects, so an error of the formula in the last ulp can never show.
 *
 * Invariants.
 *   I1: the state is only read (const); nothing but *f is written.
 *   I2: every loop is bounded: the walk by binades crossed (a step that
 *       does not move x is a fixed point and ends it) and by
 *       TK_FORECAST_SPENDABLE_MAX; a search by 63 doublings and 63
 *       bisections; the sliding window's tick walk by S + 2 ticks.
 *   I3: no clock, no shared memory, no allocation (stack only).
 *
 * Crash: nothing shared is touched, so a crash leaves nothing behind.
 */
#include <math.h>
#include <stdint.h>

#include "algorithms/forecast.h"
#include "algorithms/rounding.h"

#define TK_FC_2P52 INT64_C(4503599627370496) /* 2^52 */
#define TK_FC_2P53 INT64_C(9007199254740992) /* 2^53 */

/* ------------------------------------------------------------------------
 * The walk: spendable_now.
 * ---------------------------------------------------------------------- */

/* A kind's admission test on its counter x (each mirrors the check's own
 * comparison, operand for operand). */
enum tk_fc_test {
	TK_FC_GCRA,	/* admit unless now < (x + add) - tau */
	TK_FC_AT_LEAST, /* admit iff x >= bound (the bucket's tokens >= cost) */
	TK_FC_SUM_LE,	/* admit iff x + add <= bound (fixed window, quota) */
	TK_FC_BELOW,	/* admit unless x >= bound (token budget) */
	TK_FC_WINDOW,	/* admit iff ((part + x) + ow) + add <= bound */
	TK_FC_QUEUE,	/* admit unless x - now > bound (the shaper) */
};

struct tk_fc_acc {
	enum tk_fc_test test;
	double add;   /* the cost (gcra: inc) */
	double bound; /* limit, L or cost */
	double now;   /* gcra */
	double tau;   /* gcra */
	double part;  /* sliding window: the sum of the ticks before c */
	double ow;    /* sliding window: oldest * weight */
};

static bool
tk_fc_admits(const struct tk_fc_acc *t, double x)
{
	switch (t->test) {
	case TK_FC_GCRA:
		return !(t->now < (x + t->add) - t->tau);
	case TK_FC_AT_LEAST:
		return x >= t->bound;
	case TK_FC_SUM_LE:
		return x + t->add <= t->bound;
	case TK_FC_BELOW:
		return !(x >= t->bound);
	case TK_FC_WINDOW:
		return ((t->part + x) + t->ow) + t->add <= t->bound;
	case TK_FC_QUEUE:
		return !(x - t->now > t->bound);
	}
	return false;
}

/* The grid u of the binade holding x (finite, >= 0), x / u, and the
 * binade's lower edge in units of u (its upper edge is 2^53 units). */
static void
tk_fc_binade(double x, double *u, int64_t *xu, int64_t *lower)
{
	int e;

	if (x < 0x1p-1021) {
		/* Zero, the subnormals and [2^-1022, 2^-1021): one grid. */
		*u = 0x1p-1074;
		*lower = 0;
	} else {
		(void)frexp(x, &e); /* x in [2^(e-1), 2^e) */
		*u = ldexp(1.0, e - 53);
		*lower = TK_FC_2P52;
	}
	*xu = (int64_t)(x / *u); /* exact: a power-of-two scaling */
}

/*
 * The number of admissions, at most TK_FORECAST_SPENDABLE_MAX, of the run
 * x_0 = x, x_{i+1} = x_i + s (double rounding), admission i being
 * tk_fc_admits(t, x_i); the test must be monotone along the run.  For s < 0
 * an admission must imply x_i + s >= 0 (the bucket: tokens >= cost).
 */
static int64_t
tk_fc_walk(const struct tk_fc_acc *t, double x, double s)
{
	int64_t n = 0;

	while (n < TK_FORECAST_SPENDABLE_MAX) {
		double y, u, a, y2, step;
		int64_t xu, lower, q, k, d, m, lo, hi;
		bool frac;

		if (!tk_fc_admits(t, x))
			return n;
		y = x + s;
		if (y == x) /* I2: a fixed point that admits, for ever */
			return TK_FORECAST_SPENDABLE_MAX;
		if (!(x >= 0) || !isfinite(y))
			goto single;
		tk_fc_binade(x, &u, &xu, &lower);
		a = fabs(s) / u;
		if (!(a < 0x1p53))
			goto single;
		q = (int64_t)tk_floor(a);
		frac = a != tk_floor(a);
		/* k: the largest j*d for which step j's exact sum stays in the
		 * binade: x/u + j*d + s/u < 2^53 going up, >= lower going
		 * down. */
		if (s > 0)
			k = TK_FC_2P53 - 1 - q - xu;
		else
			k = xu - q - lower - (frac ? 1 : 0);
		if (k < 0)
			goto single;
		d = (int64_t)(fabs(y - x) / u); /* exact: both on the grid */
		m = k / d + 1; /* steps 0 .. m-1 stay in the binade */
		if (m < 2)
			goto single;
		y2 = y + s;
		if (y2 - y != y - x)
			goto single; /* a tie still settling its parity */
		if (m > TK_FORECAST_SPENDABLE_MAX - n)
			m = TK_FORECAST_SPENDABLE_MAX - n;
		step = (double)d * u;
		if (s < 0)
			step = -step;
		/* x_j = x + j*step exactly (on the grid, inside the binade). */
		if (tk_fc_admits(t, x + (double)(m - 1) * step)) {
			n += m;
			x = x + (double)m * step;
			continue;
		}
		/* Admits at j = lo, not at j = hi. */
		lo = 0;
		hi = m - 1;
		while (hi - lo > 1) {
			int64_t mid = lo + (hi - lo) / 2;

			if (tk_fc_admits(t, x + (double)mid * step))
				lo = mid;
			else
				hi = mid;
		}
		return n + hi;
single:
		n++;
		x = y;
	}
	return TK_FORECAST_SPENDABLE_MAX;
}

/* The sliding window's run at now: its counter (the count of the decided
 * tick) and the fixed terms of its admission test. */
static int64_t
tk_fc_sliding_window_spendable(const struct tk_sliding_window *sw,
			       const uint64_t *st, double now, double cost)
{
	struct tk_sliding_window_view v;
	struct tk_fc_acc t = { .test = TK_FC_WINDOW,
			       .add = cost,
			       .bound = sw->limit };
	double part = 0;

	tk_sliding_window_eval(sw, st, now, &v);
	/* The check's `full` adds the S ticks in ascending order and tick c
	 * last, so full = part + count(c) with part summed the same way. */
	for (int64_t j = v.c - (int64_t)sw->S + 1; j < v.c; j++)
		part += tk_sliding_window_get(sw, st, j);
	t.part = part;
	t.ow = v.oldest * v.weight;
	return tk_fc_walk(&t, tk_sliding_window_get(sw, st, v.c), cost);
}

/* A counter that grows by `cost` and is admitted while count + cost <=
 * limit (fixed window, calendar and fixed quota). */
static int64_t
tk_fc_counter_spendable(double count, double limit, double cost)
{
	struct tk_fc_acc t = { .test = TK_FC_SUM_LE,
			       .add = cost,
			       .bound = limit };

	return tk_fc_walk(&t, count, cost);
}

static int64_t
tk_fc_spendable(const struct tk_algo *a, bool present, const uint64_t *st,
		double now, double cost)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA: {
		const struct tk_gcra *g = &a->u.gcra;
		double tat = present ? tk_gcra_tat(st[0]) : now;
		struct tk_fc_acc t = { .test = TK_FC_GCRA,
				       .add = g->T * cost,
				       .now = now,
				       .tau = g->tau };

		if (cost > g->burst) /* the check's guard: never admitted */
			return 0;
		/* After one admission TAT >= now, so max(TAT, now) = TAT. */
		return tk_fc_walk(&t, tat > now ? tat : now, t.add);
	}
	case TKSHM_KIND_TOKEN_BUCKET: {
		double last;
		double tokens = tk_token_bucket_level(&a->u.token_bucket,
						      present, st, now, &last);
		struct tk_fc_acc t = { .test = TK_FC_AT_LEAST, .bound = cost };

		/* After one admission `last` >= now: no refill, and
		 * min(capacity, left + 0) = left. */
		return tk_fc_walk(&t, tokens, -cost);
	}
	case TKSHM_KIND_FIXED_WINDOW: {
		double start, reset;
		double count = tk_fixed_window_count(
			&a->u.fixed_window, present, st, now, &start, &reset);

		return tk_fc_counter_spendable(count, a->u.fixed_window.limit,
					       cost);
	}
	case TKSHM_KIND_SLIDING_WINDOW:
		return tk_fc_sliding_window_spendable(
			&a->u.sliding_window, present ? st : NULL, now, cost);
	case TKSHM_KIND_SLIDING_LOG: {
		const struct tk_sliding_log *lg = &a->u.sliding_log;
		struct tk_sliding_log_view v;
		double units = tk_ceil(cost);
		int64_t n = 0;

		tk_sliding_log_eval(lg, present ? st : NULL, now, &v);
		/* floor(max(0, limit - count) / units) without the division's
		 * rounding: count and units are small integers, exact. */
		while (v.count + (double)(n + 1) * units <= lg->limit)
			n++;
		return n;
	}
	case TKSHM_KIND_QUOTA: {
		const struct tk_quota *q = &a->u.quota;
		double start, reset, count;

		if (q->cadence == TK_QUOTA_ROLLING)
			return tk_fc_sliding_window_spendable(
				&q->sw, present ? st : NULL, now, cost);
		count = tk_quota_count(q, present, st, now, &start, &reset);
		return tk_fc_counter_spendable(count, q->limit, cost);
	}
	case TKSHM_KIND_TOKEN_BUDGET: {
		const struct tk_token_budget *b = &a->u.token_budget;
		double w;
		double served = tk_token_budget_served(b, present, st, now, &w);
		struct tk_fc_acc t = { .test = TK_FC_BELOW, .bound = b->L };

		if (served >= b->L)
			return 0;
		/* A window already over at now no longer rolls again on
		 * every debit (a roll only moves forward, token_budget.h):
		 * the debits after the first stay in it. */
		return tk_fc_walk(&t, served, cost);
	}
	case TKSHM_KIND_LEAKY_BUCKET: {
		const struct tk_leaky_bucket *l = &a->u.leaky_bucket;
		double dep = present ? tk_word_f64(st[0]) : now;
		struct tk_fc_acc t = { .test = TK_FC_QUEUE,
				       .now = now,
				       .bound = l->max_queue };

		/* After one acceptance the departure is >= now. */
		return tk_fc_walk(&t, dep > now ? dep : now, l->T * cost);
	}
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY: {
		tkshm_decision d;

		/* Permits are whole: the free ones, whatever the cost. */
		tk_conc_peek(&a->u.conc, present, st, now, &d);
		return d.remaining;
	}
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * The search: full_at and next_replenish_at.
 * ---------------------------------------------------------------------- */

/* A question about the key at a whole ms, monotone in time. */
enum tk_fc_question {
	TK_FC_IDLE,    /* idle(t) */
	TK_FC_MORE,    /* R(t) > r0 */
	TK_FC_TICK_GE, /* the sliding window's tick of t >= tick */
};

struct tk_fc_when {
	enum tk_fc_question q;
	const struct tk_algo *a;
	const uint64_t *st; /* present */
	int64_t r0;
	int64_t tick;
	const struct tk_sliding_window *sw; /* TICK_GE and the window's R */
};

static bool
tk_fc_idle(const struct tk_algo *a, const uint64_t *st, double t)
{
	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		return tk_gcra_is_idle(st[0], t);
	case TKSHM_KIND_TOKEN_BUCKET:
		return tk_token_bucket_is_idle(&a->u.token_bucket, st, t);
	case TKSHM_KIND_FIXED_WINDOW:
		return tk_fixed_window_is_idle(&a->u.fixed_window, st, t);
	case TKSHM_KIND_SLIDING_WINDOW:
		return tk_sliding_window_is_idle(&a->u.sliding_window, st, t);
	case TKSHM_KIND_SLIDING_LOG:
		return tk_sliding_log_is_idle(&a->u.sliding_log, st, t);
	case TKSHM_KIND_QUOTA:
		return tk_quota_is_idle(&a->u.quota, st, t);
	case TKSHM_KIND_TOKEN_BUDGET:
		return tk_token_budget_is_idle(&a->u.token_budget, st, t);
	case TKSHM_KIND_LEAKY_BUCKET:
		return tk_gcra_is_idle(st[0], t);
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		return tk_conc_is_idle(&a->u.conc, st, t);
	}
	return true;
}

/* R(t): the remaining the kind's peek reports at t (the key present). */
static int64_t
tk_fc_remaining(const struct tk_algo *a, const uint64_t *st, double t)
{
	tkshm_decision d;

	switch (a->kind) {
	case TKSHM_KIND_GCRA:
		tk_gcra_peek(&a->u.gcra, true, st[0], t, &d);
		break;
	case TKSHM_KIND_TOKEN_BUCKET:
		tk_token_bucket_peek(&a->u.token_bucket, true, st, t, &d);
		break;
	case TKSHM_KIND_FIXED_WINDOW:
		tk_fixed_window_peek(&a->u.fixed_window, true, st, t, &d);
		break;
	case TKSHM_KIND_SLIDING_WINDOW:
		tk_sliding_window_peek(&a->u.sliding_window, true, st, t, &d);
		break;
	case TKSHM_KIND_SLIDING_LOG:
		tk_sliding_log_peek(&a->u.sliding_log, true, st, t, &d);
		break;
	case TKSHM_KIND_QUOTA:
		tk_quota_peek(&a->u.quota, true, st, t, &d);
		break;
	case TKSHM_KIND_TOKEN_BUDGET:
		tk_token_budget_peek(&a->u.token_budget, true, st, t, &d);
		break;
	case TKSHM_KIND_LEAKY_BUCKET:
		tk_leaky_bucket_peek(&a->u.leaky_bucket, true, st[0], t, &d);
		break;
	case TKSHM_KIND_CONCURRENCY:
	case TKSHM_KIND_ADAPTIVE_CONCURRENCY:
		tk_conc_peek(&a->u.conc, true, st, t, &d);
		break;
	default:
		return 0;
	}
	return d.remaining;
}

static bool
tk_fc_holds(const struct tk_fc_when *w, int64_t t)
{
	double td = (double)t; /* monotone, if not exact above 2^53 */

	switch (w->q) {
	case TK_FC_IDLE:
		return tk_fc_idle(w->a, w->st, td);
	case TK_FC_MORE:
		return tk_fc_remaining(w->a, w->st, td) > w->r0;
	case TK_FC_TICK_GE:
		return tk_sliding_window_tick(w->sw, td) >= w->tick;
	}
	return true;
}

/* A time formula's value as a whole ms (saturating). */
static int64_t
tk_fc_ms(double x)
{
	return tk_field_ceil(x);
}

/*
 * The least whole ms t >= lo at which the question holds (monotone: false
 * then true), starting from `guess`; INT64_MAX when it never holds below
 * that.  I2: at most 63 doublings and 63 bisections.
 */
static int64_t
tk_fc_first(const struct tk_fc_when *w, int64_t lo, int64_t guess)
{
	int64_t hi, step = 1;

	if (tk_fc_holds(w, lo))
		return lo;
	if (lo == INT64_MAX)
		return INT64_MAX;
	hi = guess > lo ? guess : lo + 1;
	/* The formula's value is usually the answer: confirm it in two
	 * evaluations. */
	if (hi - 1 > lo && tk_fc_holds(w, hi)) {
		if (!tk_fc_holds(w, hi - 1))
			return hi;
	}
	while (!tk_fc_holds(w, hi)) {
		lo = hi;
		if (hi > INT64_MAX - step)
			return INT64_MAX;
		hi += step;
		if (step < INT64_C(1) << 62)
			step *= 2;
	}
	while (hi - lo > 1) { /* false at lo, true at hi */
		int64_t mid = lo + (hi - lo) / 2;

		if (tk_fc_holds(w, mid))
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/* next_replenish_at for a kind whose R(t) is monotone in t: the first
 * t in [lo, full] with R(t) > R(now), else full. */
static int64_t
tk_fc_next_monotone(struct tk_fc_when *w, double now, int64_t lo, int64_t full,
		    int64_t guess)
{
	w->q = TK_FC_MORE;
	w->r0 = tk_fc_remaining(w->a, w->st, now);
	if (!tk_fc_holds(w, full))
		return full;
	return tk_fc_first(w, lo, guess < full ? guess : full);
}

/*
 * The sliding window's next_replenish_at.  R(t) is monotone within a tick
 * (only the oldest bucket's weight moves), but where a tick boundary
 * re-sums the buckets in another order it may round the other way, so the
 * walk goes tick by tick (the decided tick max(tick(t), newest)) from
 * now's to full_at's, at most S + 2 of them (I2), and searches inside the
 * first tick whose last ms shows one more unit.
 */
static int64_t
tk_fc_sliding_window_next(const struct tk_algo *a,
			  const struct tk_sliding_window *sw,
			  const uint64_t *st, double now, int64_t lo,
			  int64_t full)
{
	struct tk_fc_when w = { .q = TK_FC_MORE, .a = a, .st = st };
	struct tk_fc_when tw = {
		.q = TK_FC_TICK_GE, .a = a, .st = st, .sw = sw
	};
	int64_t newest = tk_sliding_window_newest(sw, st);
	int64_t seg_lo = lo, c, tick;

	w.r0 = tk_fc_remaining(a, st, now);
	tick = tk_sliding_window_tick(sw, (double)lo);
	c = tick > newest ? tick : newest;
	while (seg_lo <= full) {
		int64_t seg_end, seg_hi;

		if (c >= TK_SLIDING_WINDOW_TICK_MAX) {
			seg_end = INT64_MAX; /* the window no longer moves */
		} else {
			tw.tick = c + 1;
			seg_end = tk_fc_first(
				&tw, seg_lo, tk_fc_ms((double)(c + 1) * sw->w));
		}
		seg_hi = seg_end - 1 < full ? seg_end - 1 : full;
		if (seg_hi >= seg_lo && tk_fc_holds(&w, seg_hi))
			return tk_fc_first(&w, seg_lo, seg_hi);
		if (seg_end == INT64_MAX)
			break;
		seg_lo = seg_end;
		tick = tk_sliding_window_tick(sw, (double)seg_lo);
		c = tick > newest ? tick : newest;
	}
	return full;
}

/* The sliding window's (and the rolling quota's) full_at and
 * next_replenish_at. */
static void
tk_fc_sliding_window_times(const struct tk_algo *a,
			   const struct tk_sliding_window *sw,
			   const uint64_t *st, double now, int64_t lo,
			   struct tk_forecast *f)
{
	struct tk_fc_when w = { .q = TK_FC_IDLE, .a = a, .st = st };
	int64_t newest = tk_sliding_window_newest(sw, st);

	f->full_at = tk_fc_first(
		&w, lo,
		tk_fc_ms((double)(newest + (int64_t)sw->S + 1) * sw->w));
	f->next_replenish_at =
		tk_fc_sliding_window_next(a, sw, st, now, lo, f->full_at);
}

/* full_at and next_replenish_at of a present key. */
static void
tk_fc_times(const struct tk_algo *a, const uint64_t *st, double now,
	    struct tk_forecast *f)
{
	struct tk_fc_when w = { .q = TK_FC_IDLE, .a = a, .st = st };
	int64_t lo = tk_fc_ms(now), full;

	switch (a->kind) {
	case TKSHM_KIND_GCRA: {
		const struct tk_gcra *g = &a->u.gcra;
		double tat = tk_gcra_tat(st[0]);
		int64_t r = tk_fc_remaining(a, st, now);

		full = tk_fc_first(&w, lo, tk_fc_ms(tat));
		f->full_at = full;
		f->next_replenish_at = tk_fc_next_monotone(
			&w, now, lo, full,
			tk_fc_ms(tat - g->tau + (double)(r + 1) * g->T));
		return;
	}
	case TKSHM_KIND_TOKEN_BUCKET: {
		const struct tk_token_bucket *b = &a->u.token_bucket;
		double last = tk_word_f64(st[1]);
		double base = last > now ? last : now;
		double tokens = tk_token_bucket_level(b, true, st, base, &last);

		full = tk_fc_first(
			&w, lo,
			tk_fc_ms(base + tk_ceil((b->capacity - tokens) /
						b->refill_per_ms)));
		f->full_at = full;
		f->next_replenish_at = tk_fc_next_monotone(
			&w, now, lo, full,
			tk_fc_ms(base +
				 tk_ceil((tk_floor(tokens) + 1 - tokens) /
					 b->refill_per_ms)));
		return;
	}
	case TKSHM_KIND_FIXED_WINDOW:
		full = tk_fc_first(&w, lo,
				   tk_fc_ms(tk_word_f64(st[0]) +
					    a->u.fixed_window.window_ms));
		break;
	case TKSHM_KIND_SLIDING_WINDOW:
		tk_fc_sliding_window_times(a, &a->u.sliding_window, st, now, lo,
					   f);
		return;
	case TKSHM_KIND_SLIDING_LOG: {
		const struct tk_sliding_log *lg = &a->u.sliding_log;
		struct tk_sliding_log_view v;
		int64_t next;

		tk_sliding_log_eval(lg, st, now, &v);
		if (v.count == 0) {
			f->full_at = f->next_replenish_at = lo;
			return;
		}
		/* ThrottleKit's formulas, clamped to [ceil(now), ...). */
		next = tk_fc_ms(tk_sliding_log_stamp(st, v.first) +
				lg->window_ms);
		full = tk_fc_ms(tk_sliding_log_stamp(st, v.n - 1) +
				lg->window_ms);
		f->full_at = full > lo ? full : lo;
		f->next_replenish_at = next > lo ? next : lo;
		return;
	}
	case TKSHM_KIND_QUOTA: {
		const struct tk_quota *q = &a->u.quota;
		double s = tk_word_f64(st[0]), start, reset;

		if (q->cadence == TK_QUOTA_ROLLING) {
			tk_fc_sliding_window_times(a, &q->sw, st, now, lo, f);
			return;
		}
		/* The reset of the state's own period [s, reset). */
		if (q->cal.cadence == TK_CADENCE_FIXED)
			reset = s + q->cal.period_ms;
		else
			tk_calendar_period(&q->cal, s, &start, &reset);
		full = tk_fc_first(&w, lo, tk_fc_ms(reset));
		break;
	}
	case TKSHM_KIND_TOKEN_BUDGET:
		full = tk_fc_first(&w, lo,
				   tk_fc_ms(tk_word_f64(st[0]) +
					    a->u.token_budget.window_ms));
		break;
	case TKSHM_KIND_LEAKY_BUCKET: {
		const struct tk_leaky_bucket *l = &a->u.leaky_bucket;
		double dep = tk_word_f64(st[0]);
		int64_t r = tk_fc_remaining(a, st, now);

		/* The queue is empty at the departure; one more request fits
		 * each time it drains by T (remaining r: at dep - maxQueue +
		 * r * T). */
		full = tk_fc_first(&w, lo, tk_fc_ms(dep));
		f->full_at = full;
		f->next_replenish_at = tk_fc_next_monotone(
			&w, now, lo, full,
			tk_fc_ms(dep - l->max_queue + (double)r * l->T));
		return;
	}
	default:
		full = lo;
		break;
	}
	/* Fixed window, calendar and fixed quota, token budget: R(t) only
	 * changes when the whole count expires, i.e. at full_at. */
	f->full_at = full;
	f->next_replenish_at = full;
}

void
tk_algo_forecast(const struct tk_algo *a, bool present, const uint64_t *st,
		 double now, double cost, struct tk_forecast *f)
{
	if (a->leased) {
		/* A lease state: what the credit held covers now; what comes
		 * next depends on the agent's leases, not on time. */
		double c = present ? tk_lease_credits(st, now) : 0;

		f->spendable_now = c >= cost ? (int64_t)floor(c / cost) : 0;
		f->full_at = f->next_replenish_at = tk_fc_ms(now);
		return;
	}
	f->spendable_now = tk_fc_spendable(a, present, st, now, cost);
	if (!present) {
		/* An absent key is idle: nothing to replenish. */
		f->full_at = f->next_replenish_at = tk_fc_ms(now);
		return;
	}
	tk_fc_times(a, st, now, f);
	return;
}
