// bench_multi.cc - one request checked against several limits at once.
//
//   BM_multi_all/{2,3}dims/{1key,100k}   tkshm_check_multi_at(ALL, ...)
//   BM_multi_any/2dims/{1key,100k}       tkshm_check_multi_at(ANY, ...)
//
// Each dimension is its own GCRA table (kAllowPolicy, kSlots slots), as
// when one request is limited per user, per tenant and per route; the
// request's key is the same in every table, so with 100k keys every
// dimension misses the cache as a single check does.  Explicit now,
// advancing by kAllowStepMs per request, so every dimension admits: `all`
// decides every dimension, then commits each (its worst path without
// contention), and `any` checks each.  Read against BM_check_now (one
// check, same keys): the bar is `all` over 2 dimensions within 2.5x.
//
// Counters:
//   allowed_ratio   requests admitted / requests in the timed loop
//   bytes_per_key   sum of the tables' bytes_per_key: the memory the keys
//                   of one request take

#include "bench_common.h"

#include <memory>
#include <string>
#include <vector>

namespace tkbench
{

namespace
{

void
BM_multi(benchmark::State &state, tkshm_multi_mode mode, size_t ndims,
	 size_t nkeys)
{
	const std::vector<std::string> keys = make_keys(nkeys);
	std::vector<std::unique_ptr<Table>> tables;
	tkshm_dimension dims[TKSHM_MULTI_MAX];
	for (size_t i = 0; i < ndims; i++) {
		tables.emplace_back(new Table(kAllowPolicy, kSlots));
		if (!tables.back()->error().empty()) {
			state.SkipWithError(tables.back()->error().c_str());
			return;
		}
		dims[i].table = tables.back()->get();
		dims[i].cost = 1.0;
	}
	auto aim = [&](const std::string &k) {
		for (size_t i = 0; i < ndims; i++) {
			dims[i].key = k.data();
			dims[i].key_len = k.size();
		}
	};

	tkshm_decision d;
	double now = tkshm_now_ms();
	// Warm-up: every key present in every table.
	for (const std::string &k : keys) {
		aim(k);
		if (tkshm_check_multi_at(mode, dims, ndims, now, &d, nullptr,
					 nullptr) != TKSHM_OK) {
			state.SkipWithError("warm-up check failed");
			return;
		}
	}

	Cursor<std::string> cur(keys);
	int bad = 0;
	uint64_t allowed = 0;
	for (auto _ : state) {
		aim(cur.next());
		now += kAllowStepMs;
		bad |= tkshm_check_multi_at(mode, dims, ndims, now, &d, nullptr,
					    nullptr);
		allowed += d.allowed;
		benchmark::DoNotOptimize(d);
	}
	if (bad != 0) {
		state.SkipWithError("a multi check returned an error");
		return;
	}
	double bytes = 0;
	for (const auto &t : tables)
		bytes += t->stats().bytes_per_key;
	state.SetItemsProcessed(state.iterations());
	state.counters["allowed_ratio"] =
		state.iterations() ?
			double(allowed) / double(state.iterations()) :
			0;
	state.counters["bytes_per_key"] = bytes;
}

} // namespace

void
register_multi_cases(const Config &cfg)
{
	struct {
		const char *name;
		tkshm_multi_mode mode;
		size_t ndims;
	} cases[] = {
		{ "BM_multi_all/2dims", TKSHM_MULTI_ALL, 2 },
		{ "BM_multi_all/3dims", TKSHM_MULTI_ALL, 3 },
		{ "BM_multi_any/2dims", TKSHM_MULTI_ANY, 2 },
	};
	for (size_t n : { kOneKey, kManyKeys })
		for (const auto &c : cases) {
			const std::string name =
				std::string(c.name) + "/" + keys_label(n);
			benchmark::RegisterBenchmark(name.c_str(), BM_multi,
						     c.mode, c.ndims, n)
				->MinTime(cfg.min_time_s);
		}
}

} // namespace tkbench
