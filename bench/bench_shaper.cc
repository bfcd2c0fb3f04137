// bench_shaper.cc - the shaper's reservation and a permit's round trip.
//
//   BM_reserve/{1key,100k}          tkshm_reserve_at() on a leakyBucket
//                                   table that accepts every reservation
//   BM_acquire_release/{1key,100k}  tkshm_acquire_at() + tkshm_release_at()
//                                   on a concurrency table (limit 16)
//
// A reservation is a one-word transition like a GCRA check; a permit's
// round trip is two wide transitions over 6 + 16 state words, plus the
// process-local record that makes a release exactly once.

#include "bench_common.h"

#include <string>

namespace tkbench
{

namespace
{

void
BM_reserve(benchmark::State &state, size_t nkeys)
{
	// One departure a second and a queue of 1e12 ms: every reservation
	// is accepted and every key stays queued (present), so the case
	// measures the update of a present key, as BM_algo does.
	Table t("leakyBucket:ratePerSec=1,maxQueueMs=1000000000000", kSlots);
	std::vector<std::string> keys = make_keys(nkeys);
	Cursor<std::string> cur(keys);
	double now = 1.7e12;
	uint64_t accepted = 0;

	if (!t.get()) {
		state.SkipWithError(t.error().c_str());
		return;
	}
	for (auto _ : state) {
		const std::string &k = cur.next();
		tkshm_reservation r;

		if (tkshm_reserve_at(t.get(), k.data(), k.size(), 1, now, &r) !=
		    TKSHM_OK) {
			state.SkipWithError("tkshm_reserve_at failed");
			return;
		}
		accepted += r.accepted;
		now += 0.001;
	}
	state.counters["accepted_ratio"] =
		(double)accepted / (double)state.iterations();
}

void
BM_acquire_release(benchmark::State &state, size_t nkeys)
{
	Table t("concurrency:limit=16", kSlots);
	std::vector<std::string> keys = make_keys(nkeys);
	Cursor<std::string> cur(keys);
	double now = 1.7e12;

	if (!t.get()) {
		state.SkipWithError(t.error().c_str());
		return;
	}
	for (auto _ : state) {
		const std::string &k = cur.next();
		tkshm_permit p;
		tkshm_decision d;

		if (tkshm_acquire_at(t.get(), k.data(), k.size(), now, &p,
				     &d) != TKSHM_OK ||
		    !d.allowed ||
		    tkshm_release_at(t.get(), &p, now + 1,
				     TKSHM_OUTCOME_SUCCESS) != TKSHM_OK) {
			state.SkipWithError("acquire/release failed");
			return;
		}
		now += 0.001;
	}
}

} // namespace

void
register_shaper_cases(const Config &cfg)
{
	for (size_t n : { kOneKey, kManyKeys }) {
		std::string name = std::string("BM_reserve/") + keys_label(n);
		benchmark::RegisterBenchmark(name.c_str(), BM_reserve, n)
			->MinTime(cfg.min_time_s);
		name = std::string("BM_acquire_release/") + keys_label(n);
		benchmark::RegisterBenchmark(name.c_str(), BM_acquire_release,
					     n)
			->MinTime(cfg.min_time_s);
	}
}

} // namespace tkbench
