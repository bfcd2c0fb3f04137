// bench_common.cc - key sets, the anonymous table and the shared counters
// (see bench_common.h).

#include "bench_common.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

// The body of tkshm_check_at (src/api/api_calls.h), run on the instance a
// handle is on: a hidden symbol of the static library, for BM_check_body.
extern "C" int tk_api_check_at(tkshm_table *t, const void *key, size_t key_len,
			       double cost, double now_ms, tkshm_decision *out);

namespace tkbench
{

namespace
{

// splitmix64: a fixed generator, so the key order is the same with every
// standard library (std::shuffle's is implementation-defined).
uint64_t
splitmix64(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

} // namespace

std::vector<std::string>
make_keys(size_t n)
{
	if (n == 1)
		return { "user:123456" };
	std::vector<uint32_t> ids(1000000);
	for (uint32_t i = 0; i < ids.size(); i++)
		ids[i] = i;
	uint64_t seed = 42;
	for (size_t i = ids.size() - 1; i > 0; i--) // Fisher-Yates
		std::swap(ids[i], ids[splitmix64(&seed) % (i + 1)]);
	std::vector<std::string> keys;
	keys.reserve(n);
	char buf[16];
	for (size_t i = 0; i < n; i++) {
		std::snprintf(buf, sizeof buf, "user:%06" PRIu32, ids[i]);
		keys.emplace_back(buf);
	}
	return keys;
}

Table::Table(const char *spec, uint64_t slots)
{
	tkshm_policy p;
	char why[160] = "";
	int rc = tkshm_policy_parse(spec, &p, why, sizeof why);
	if (rc != TKSHM_OK) {
		error_ = std::string("policy: ") + why;
		return;
	}
	tkshm_options o = TKSHM_OPTIONS_INIT;
	o.policy = &p;
	o.slots = slots;
	o.errbuf = why;
	o.errbuf_len = sizeof why;
	rc = tkshm_open(nullptr, &o, &t_);
	if (rc != TKSHM_OK)
		error_ = std::string("tkshm_open: ") + tkshm_strerror(rc) +
			 " " + why;
}

Table::~Table()
{
	tkshm_close(t_);
}

tkshm_stats
Table::stats() const
{
	tkshm_stats s;
	std::memset(&s, 0, sizeof s);
	(void)tkshm_stats_get(t_, &s);
	return s;
}

Tally
tally(const tkshm_stats &before, const tkshm_stats &after)
{
	Tally t;
	t.checks = double(after.allowed + after.denied) -
		   double(before.allowed + before.denied);
	t.allowed = double(after.allowed - before.allowed);
	t.inserts = double(after.inserts - before.inserts);
	return t;
}

void
set_table_counters(benchmark::State &state, const tkshm_stats &before,
		   const tkshm_stats &after, size_t nkeys)
{
	const Tally t = tally(before, after);
	state.counters["allowed_ratio"] =
		t.checks > 0 ? t.allowed / t.checks : 0;
	state.counters["bytes_per_key"] = after.bytes_per_key;
	if (nkeys == kManyKeys) {
		state.counters["bytes_per_stored_key"] =
			double(after.file_bytes) / double(kManyKeys);
		state.counters["warmup_evicted"] = double(before.evictions);
		state.counters["insert_ratio"] =
			t.checks > 0 ? t.inserts / t.checks : 0;
	}
}

template <Clock C>
void
run_checks(benchmark::State &state, const char *spec, double step_ms,
	   size_t nkeys)
{
	const std::vector<std::string> keys = make_keys(nkeys);
	Table table(spec, kSlots);
	if (!table.error().empty()) {
		state.SkipWithError(table.error().c_str());
		return;
	}
	tkshm_table *t = table.get();
	tkshm_decision d;
	double now = tkshm_now_ms();

	// Warm-up: check every key once, inserting it, so that the timed loop
	// checks present keys.  A window can fill up even at this occupancy;
	// the keys evicted then are counted (warmup_evicted), re-inserted by
	// the loop in admitting cases (insert_ratio), and denied from their
	// remembered debt in denying ones.  A table that never evicts (every
	// kind but GCRA and the leaky bucket) refuses such a key instead
	// (TKSHM_EFULL): it is counted (warmup_refused) and left out of the
	// timed loop, which checks the keys the table holds.
	std::vector<std::string> held;
	held.reserve(keys.size());
	for (const std::string &k : keys) {
		int rc = tkshm_check_at(t, k.data(), k.size(), 1.0, now, &d);
		if (rc == TKSHM_OK)
			held.push_back(k);
		else if (rc != TKSHM_EFULL) {
			state.SkipWithError("warm-up check failed");
			return;
		}
	}
	const tkshm_stats before = table.stats();
	if (nkeys == kManyKeys)
		state.counters["warmup_refused"] =
			double(keys.size() - held.size());

	Cursor<std::string> cur(held);
	int bad = 0;
	for (auto _ : state) {
		const std::string &k = cur.next();
		int rc;
		if (C == Clock::kSystem) {
			rc = tkshm_check(t, k.data(), k.size(), 1.0, &d);
		} else if (C == Clock::kBody) {
			now += step_ms;
			rc = tk_api_check_at(t, k.data(), k.size(), 1.0, now,
					     &d);
		} else {
			now += step_ms;
			rc = tkshm_check_at(t, k.data(), k.size(), 1.0, now,
					    &d);
		}
		bad |= rc;
		benchmark::DoNotOptimize(d);
	}
	if (bad != 0) {
		state.SkipWithError("a check returned an error");
		return;
	}
	state.SetItemsProcessed(state.iterations());
	set_table_counters(state, before, table.stats(), nkeys);
}

template void run_checks<Clock::kSystem>(benchmark::State &, const char *,
					 double, size_t);
template void run_checks<Clock::kExplicit>(benchmark::State &, const char *,
					   double, size_t);
template void run_checks<Clock::kBody>(benchmark::State &, const char *, double,
				       size_t);

const char *
keys_label(size_t nkeys)
{
	return nkeys == kOneKey ? "1key" : "100k";
}

} // namespace tkbench
