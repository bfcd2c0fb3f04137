// bench_algos.cc - one check of every algorithm, explicit now.
//
//   BM_algo/<kind>/{1key,100k}   tkshm_check_at() on a table of that kind
//
// for gcra (the reference: the same case as BM_check_now), tokenBucket,
// fixedWindow, slidingWindow (10 sub-buckets), slidingWindowLog, quota
// (calendar month) and tokenBudget.  The policies admit (nearly) every
// check of the timed loop, as kAllowPolicy does for GCRA, so each case
// measures the path a request takes when it is let through: a read, the
// algorithm's arithmetic and a write of the new state.  allowed_ratio says
// how nearly; bytes_per_key is what a slot of that kind costs (GCRA keeps
// one word in the slot; the others add a wide-state record per slot).
//
// The pace is T = 1 us of simulated time per check, as for GCRA, except
// for the log: its limit is at most 128 stamps, so no window can admit one
// key checked every microsecond for long.  It runs at one check per 0.1 ms
// with 16 stamps per 1 ms, so the 1-key case keeps ~10 live stamps (the
// log's realistic worst case: a busy key near its limit) and the 100k case,
// whose keys come back every 10 s, one.

#include "bench_common.h"

#include <string>

namespace tkbench
{

namespace
{

struct AlgoCase {
	const char *kind; // the name in the case, ThrottleKit's
	const char *spec;
	double step_ms;
};

// Limits of 1e12 are never reached by a run (at 64,000 checks per simulated
// second a window of 1 s sees 64,000); they keep the admitted path without
// changing the arithmetic.
const AlgoCase kAlgos[] = {
	{ "gcra", kAllowPolicy, kAllowStepMs },
	// Refills 1e6 tokens a second: 15.6 per check of one key.
	{ "tokenBucket",
	  "tokenBucket:capacity=1000000000000,refillPerSec=1000000",
	  kAllowStepMs },
	{ "fixedWindow", "fixedWindow:limit=1000000000000,windowMs=1000",
	  kAllowStepMs },
	{ "slidingWindow",
	  "slidingWindow:limit=1000000000000,windowMs=1000,buckets=10",
	  kAllowStepMs },
	{ "slidingWindowLog", "slidingWindowLog:limit=16,windowMs=1", 0.1 },
	{ "quota", "quota:limit=1000000000000,resetCadence=calendar-month",
	  kAllowStepMs },
	{ "tokenBudget", "tokenBudget:budget=1000000000000,windowMs=1000",
	  kAllowStepMs },
};

void
BM_algo(benchmark::State &state, const AlgoCase *c, size_t nkeys)
{
	run_checks<Clock::kExplicit>(state, c->spec, c->step_ms, nkeys);
}

} // namespace

void
register_algo_cases(const Config &cfg)
{
	for (size_t n : { kOneKey, kManyKeys })
		for (const AlgoCase &c : kAlgos) {
			const std::string name = std::string("BM_algo/") +
						 c.kind + "/" + keys_label(n);
			benchmark::RegisterBenchmark(name.c_str(), BM_algo, &c,
						     n)
				->MinTime(cfg.min_time_s);
		}
}

} // namespace tkbench
