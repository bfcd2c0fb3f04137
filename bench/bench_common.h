// bench_common.h - what every case of tkshm_bench_check shares: key sets,
// the cursor that cycles through them, an anonymous table, the counters.
//
// The cases live in bench_check.cc (one GCRA check next to the ideal floor),
// bench_hashed.cc (a pre-hashed key), bench_algos.cc (every algorithm) and
// bench_multi.cc (multi-dimensional checks); bench_main.cc registers them.
// Every case creates its tables before its timed loop and closes them after
// it, so no case sees state left by another.
#ifndef TKSHM_BENCH_COMMON_H
#define TKSHM_BENCH_COMMON_H

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tkshm.h"

namespace tkbench
{

// Slots of every table (and of the ideal's slot array): 100k keys fill it to
// 38%, where two-choice placement almost never evicts.
constexpr uint64_t kSlots = 262144;
constexpr size_t kOneKey = 1;
constexpr size_t kManyKeys = 100000;

// Mostly-allowed GCRA: 64,000 per second per key (T = 1/64 ms = 15.625 us,
// the finest step the policy parser accepts: src/algorithms/resolution.h).
// now advances by T per check, so with one key each check lands exactly at
// the rate and is admitted; with 100k keys a key comes back every 100k
// checks, far below it.  (Near today's epoch, ~1.8e12 ms, doubles are
// 2^-12 ms apart, so now and the TAT both advance by exactly 64 such steps
// per check.)
// The clock cases cannot pick their pace: one thread checks one key about
// 20e6 times a second, 300x the rate, so with the default burst (= limit)
// the key would be in debt within a few ms and the case would measure
// denials.  The burst of 1e12 (tau = 1.5625e10 ms, about 180 days of lead)
// keeps every check admitted for any realistic run; the check's arithmetic
// and writes do not depend on it.
constexpr const char *kAllowPolicy =
	"gcra:limit=64000,periodMs=1000,burst=1000000000000";
constexpr double kAllowStepMs = 0.015625; // = T

enum class Clock {
	kSystem,
	kExplicit,
	// Explicit now, the call's body run on the handle's instance: what a
	// check costs without following (no read-side section, no load of the
	// table's live word; docs/lifecycle.md).
	kBody
};

// How long each case runs per repetition, set once by bench_main.cc before
// the cases are registered (--tkshm_min_time).
struct Config {
	double min_time_s = 0.5;
};

// n keys "user:NNNNNN" (11 bytes): n distinct ids out of 0..999999 in a
// fixed pseudo-random order (n == 1 gives "user:123456"), stored in visit
// order.  Visiting them in order makes reading the key a sequential stream
// (a request's key is in cache) while the table lines it lands on are
// random.
std::vector<std::string> make_keys(size_t n);

// Cycles through a key set (strings or hashed keys): the one piece of loop
// code every case shares, so the 1-key and 100k cases differ only in keys.
template <typename K> class Cursor
{
      public:
	explicit Cursor(const std::vector<K> &keys)
	    : keys_(keys.data()), n_(keys.size())
	{
	}
	const K &next()
	{
		const K &k = keys_[i_];
		if (++i_ == n_)
			i_ = 0;
		return k;
	}

      private:
	const K *keys_;
	size_t n_;
	size_t i_ = 0;
};

// An open anonymous table (MAP_SHARED|MAP_ANONYMOUS, the prefork setup),
// closed on scope exit.  error() is empty when it opened.
class Table
{
      public:
	Table(const char *spec, uint64_t slots);
	~Table();
	Table(const Table &) = delete;
	Table &operator=(const Table &) = delete;

	tkshm_table *get() const
	{
		return t_;
	}
	const std::string &error() const
	{
		return error_;
	}
	tkshm_stats stats() const;

      private:
	tkshm_table *t_ = nullptr;
	std::string error_;
};

// Decisions counted by a table's statistics between two snapshots.
struct Tally {
	double checks, allowed, inserts;
};
Tally tally(const tkshm_stats &before, const tkshm_stats &after);

// The counters every single-table case reports:
//   allowed_ratio         admitted / checks in the timed loop
//   bytes_per_key         tkshm_stats.bytes_per_key = file_bytes / slots
// and with 100k keys also
//   bytes_per_stored_key  file_bytes / 100000, at this occupancy
//   warmup_refused        keys a table that never evicts refused (EFULL)
//                         while inserting the 100k: left out of the loop
//   warmup_evicted        keys evicted while inserting the 100k
//   insert_ratio          inserts / checks in the timed loop (keys a full
//                         window pushed out, inserted again)
void set_table_counters(benchmark::State &state, const tkshm_stats &before,
			const tkshm_stats &after, size_t nkeys);

// The timed loop of every single-table case: opens a table of `spec`, checks
// every key once (inserting it), then in the loop checks the keys in turn at
// cost 1, with the system clock (tkshm_check) or with an explicit now that
// advances by step_ms per check (tkshm_check_at), and sets the counters
// above.  Instantiated for both clocks in bench_common.cc.
template <Clock C>
void run_checks(benchmark::State &state, const char *spec, double step_ms,
		size_t nkeys);

// "1key" or "100k": the suffix of every case name.
const char *keys_label(size_t nkeys);

// The registrations of each file, called once by main.
void register_check_cases(const Config &cfg);
void register_hashed_cases(const Config &cfg);
void register_algo_cases(const Config &cfg);
void register_multi_cases(const Config &cfg);
void register_shaper_cases(const Config &cfg);

} // namespace tkbench

#endif
