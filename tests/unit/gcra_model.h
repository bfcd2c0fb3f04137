/*
 * gcra_model.h - ThrottleKit's GCRA for one key, written from
 * docs/semantics.md, "GCRA", never from src/: the model shared
 * by test_gcra_properties.c and test_multi.c.
 */
#ifndef TKSHM_TESTS_GCRA_MODEL_H
#define TKSHM_TESTS_GCRA_MODEL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tkshm.h"

struct model {
	double T, tau, burst;
	bool present;
	double tat;
};

static inline struct model
model_new(double limit, double period_ms, double burst)
{
	struct model m;

	m.T = period_ms / limit;
	m.tau = m.T * burst;
	m.burst = burst;
	m.present = false;
	m.tat = 0;
	return m;
}

static inline double
clamp0(double x)
{
	return x < 0 ? 0 : x;
}

/* The decision of check(state, now, cost), without changing the state; the
 * new TAT in *new_tat (if not NULL) when it admits.  retryAfterMs is
 * ceil(allowAt - now), unclamped. */
static inline tkshm_decision
gcra_model_decide(const struct model *m, double now, double cost,
		  double *new_tat)
{
	tkshm_decision d;
	double inc = m->T * cost;
	double tat = m->present ? m->tat : now;
	double tat_eff = tat > now ? tat : now;
	double nt = tat_eff + inc;
	double allow_at = nt - m->tau;

	memset(&d, 0, sizeof d);
	d.limit = (int64_t)m->burst;
	if (now < allow_at || cost > m->burst) {
		d.allowed = false;
		d.remaining = (int64_t)clamp0(
			floor((m->tau - (tat_eff - now)) / m->T));
		d.reset_at = (int64_t)ceil(tat_eff);
		d.retry_after_ms = (int64_t)ceil(allow_at - now);
		return d;
	}
	d.allowed = true;
	d.remaining = (int64_t)clamp0(floor((m->tau - (nt - now)) / m->T));
	d.reset_at = (int64_t)ceil(nt);
	d.retry_after_ms = 0;
	if (new_tat)
		*new_tat = nt;
	return d;
}

/* Commits an admission of gcra_model_decide(): a denial leaves the state
 * alone. */
static inline void
gcra_model_commit(struct model *m, const tkshm_decision *d, double new_tat)
{
	if (d->allowed) {
		m->present = true;
		m->tat = new_tat;
	}
}

/* peek(state, now): what a cost-1 check would see, consuming nothing. */
static inline tkshm_decision
model_peek(const struct model *m, double now)
{
	tkshm_decision d;
	double tat = m->present ? m->tat : now;
	double tat_eff = tat > now ? tat : now;
	double remaining = clamp0(floor((m->tau - (tat_eff - now)) / m->T));

	memset(&d, 0, sizeof d);
	d.limit = (int64_t)m->burst;
	d.remaining = (int64_t)remaining;
	d.allowed = remaining >= 1;
	d.reset_at = (int64_t)ceil(tat_eff);
	d.retry_after_ms =
		d.allowed ? 0 : (int64_t)ceil(tat_eff + m->T - m->tau - now);
	return d;
}

#endif /* TKSHM_TESTS_GCRA_MODEL_H */
