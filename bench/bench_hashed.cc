// bench_hashed.cc - one GCRA check of a key hashed beforehand.
//
//   BM_check_hashed/{1key,100k}   tkshm_check_hashed_at(), explicit now
//
// Every key is hashed once with tkshm_key_hash() before the loop, as a
// server does for a connection's client address or a worker's API key, so
// the loop pays no XXH3: read against BM_check_now (same keys, same policy
// and pace) for what hashing costs inside a check, and against
// BM_ideal_now, which does hash.

#include "bench_common.h"

#include <string>
#include <vector>

namespace tkbench
{

namespace
{

void
BM_check_hashed(benchmark::State &state, size_t nkeys)
{
	const std::vector<std::string> keys = make_keys(nkeys);
	Table table(kAllowPolicy, kSlots);
	if (!table.error().empty()) {
		state.SkipWithError(table.error().c_str());
		return;
	}
	tkshm_table *t = table.get();
	std::vector<tkshm_key> hashed(keys.size());
	for (size_t i = 0; i < keys.size(); i++)
		if (tkshm_key_hash(t, keys[i].data(), keys[i].size(),
				   &hashed[i]) != TKSHM_OK) {
			state.SkipWithError("tkshm_key_hash failed");
			return;
		}

	tkshm_decision d;
	double now = tkshm_now_ms();
	for (const tkshm_key &k : hashed)
		if (tkshm_check_hashed_at(t, &k, 1.0, now, &d) != TKSHM_OK) {
			state.SkipWithError("warm-up check failed");
			return;
		}
	const tkshm_stats before = table.stats();

	Cursor<tkshm_key> cur(hashed);
	int bad = 0;
	for (auto _ : state) {
		now += kAllowStepMs;
		bad |= tkshm_check_hashed_at(t, &cur.next(), 1.0, now, &d);
		benchmark::DoNotOptimize(d);
	}
	if (bad != 0) {
		state.SkipWithError("a check returned an error");
		return;
	}
	state.SetItemsProcessed(state.iterations());
	set_table_counters(state, before, table.stats(), nkeys);
}

} // namespace

void
register_hashed_cases(const Config &cfg)
{
	for (size_t n : { kOneKey, kManyKeys }) {
		const std::string name =
			std::string("BM_check_hashed/") + keys_label(n);
		benchmark::RegisterBenchmark(name.c_str(), BM_check_hashed, n)
			->MinTime(cfg.min_time_s);
	}
}

} // namespace tkbench
