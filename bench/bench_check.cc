// bench_check.cc - one GCRA check (allowed, denied), next to an ideal floor.
//
// What is measured (one thread, one process, no contention):
//
//   BM_check_clock/{1key,100k}        tkshm_check(): reads CLOCK_REALTIME
//   BM_check_now/{1key,100k}          tkshm_check_at() with an explicit now
//   BM_check_body/{1key,100k}         its body on the handle's instance: no
//                                     read-side section, no live-word load
//   BM_check_clock_deny/{1key,100k}   as above, every check denied
//   BM_check_now_deny/{1key,100k}
//   BM_ideal_clock/{1key,100k}        clock_gettime + XXH3 + 16-byte CAS
//   BM_ideal_now/{1key,100k}          XXH3 + 16-byte CAS
//   BM_part_clock_realtime            clock_gettime(CLOCK_REALTIME) alone
//   BM_part_xxh3/11B                  XXH3_64bits_withSeed of one 11-byte key
//   BM_part_cas16                     load + lock cmpxchg16b of an L1 slot
//   BM_part_lock_add                  lock xadd on an L1 line (the counter)
//
// The ideal is the physical floor (docs/benchmarks.md, tkshm_bench_check): what
// any lock-free shared table must do per check (read the time, hash the key,
// compare-and-swap one 16-byte slot), and nothing else: no argument checks,
// no probe, no rate arithmetic, no decision, no counters.  "Ratio to ideal"
// is check_clock / ideal_clock and check_now / ideal_now, same key set.
// Like every case here it is a back-to-back throughput: nothing in the ideal
// branches on the loaded slot, so on 100k keys the CPU overlaps one check's
// cache miss with the next; a check whose probe branches on the line it
// missed on gets less of that overlap.
//
// Every case keeps its own table (created before the timed loop, closed after
// it).  Tables are anonymous shared mappings of kSlots slots; the ideal's slot
// array is mapped the same way so both get the same page size (shmem: 4 KiB
// pages unless shmem_enabled says otherwise), has as many 16-byte slots
// (what a table's check touches: its slot array) and is prefaulted.  Spread
// one table's bytes per key apart instead (64 B, the whole file's footprint),
// the ideal touched four times the pages and lines a check does and was no
// floor: ideal_clock/100k 163-185 ns against check_clock/100k 57-78 ns on
// the machine of issue 25.  Keys and the counters
// (allowed_ratio, bytes_per_key, ...) are described in bench_common.h.
// Every key is checked once before the timed loop, so the loop measures
// checks of present keys.
//
// Adding a case: run_check and run_ideal take the number of keys; a new
// policy goes next to kAllowPolicy, and each case is one more registration
// in register_check_cases at the bottom.

#include <benchmark/benchmark.h>

#include <sys/mman.h>
#include <time.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bench_common.h"
#include "tkshm.h"

namespace tkbench
{

namespace
{

// ---------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------

// Always-denied: one per hour, burst 1.  The warm-up check admits each key
// once (TAT = now + 1 h); every later check within the hour is denied, and a
// denial writes no slot (protocol.h, I7).
constexpr const char *kDenyPolicy = "gcra:limit=1,periodMs=3600000";
constexpr double kDenyStepMs = 0.001;

// Slots of the scratch array the part benchmarks use (one page).
constexpr uint64_t kPartSlots = 256;

enum class Outcome {
	kAllow,
	kDeny
};

// ---------------------------------------------------------------------------
// tkshm cases
// ---------------------------------------------------------------------------

template <Clock C, Outcome O>
void
run_check(benchmark::State &state, size_t nkeys)
{
	if (O == Outcome::kAllow)
		run_checks<C>(state, kAllowPolicy, kAllowStepMs, nkeys);
	else
		run_checks<C>(state, kDenyPolicy, kDenyStepMs, nkeys);
}

void
BM_check_clock(benchmark::State &s, size_t n)
{
	run_check<Clock::kSystem, Outcome::kAllow>(s, n);
}

void
BM_check_now(benchmark::State &s, size_t n)
{
	run_check<Clock::kExplicit, Outcome::kAllow>(s, n);
}

// The same checks without following a table's change: the cost of the
// read-side section and the live-word load is BM_check_now - BM_check_body.
void
BM_check_body(benchmark::State &s, size_t n)
{
	run_checks<Clock::kBody>(s, kAllowPolicy, kAllowStepMs, n);
}

void
BM_check_clock_deny(benchmark::State &s, size_t n)
{
	run_check<Clock::kSystem, Outcome::kDeny>(s, n);
}

void
BM_check_now_deny(benchmark::State &s, size_t n)
{
	run_check<Clock::kExplicit, Outcome::kDeny>(s, n);
}

// ---------------------------------------------------------------------------
// The ideal floor
// ---------------------------------------------------------------------------

typedef unsigned __int128 u128;

struct alignas(16) IdealSlot {
	uint64_t fp, st;
};

// A slot array of the table's size, mapped like a table (MAP_SHARED anon:
// shmem pages, the same page size as the real table gets): the bytes a
// check of a present key reads and writes in a table are its slot array
// (16 bytes a slot, kSlots slots; labels and the rest of the file's bytes
// per key are written on insert only), so this is the footprint the table's
// checks have.  Every page is written before use (MAP_POPULATE, then a
// memset), so that no timed check, nor the warm-up's order, takes a page
// fault or decides where the pages land.
class IdealTable
{
      public:
	explicit IdealTable(uint64_t slots)
	    : bytes_(slots * sizeof(IdealSlot)), mask_(slots - 1)
	{
		void *p =
			mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p == MAP_FAILED)
			return;
		std::memset(p, 0, bytes_);
		slots_ = static_cast<IdealSlot *>(p);
	}
	~IdealTable()
	{
		if (slots_)
			munmap(slots_, bytes_);
	}
	IdealTable(const IdealTable &) = delete;
	IdealTable &operator=(const IdealTable &) = delete;

	bool ok() const
	{
		return slots_ != nullptr;
	}
	IdealSlot *at(uint64_t h) const
	{
		return &slots_[h & mask_];
	}

      private:
	size_t bytes_;
	uint64_t mask_;
	IdealSlot *slots_ = nullptr;
};

inline double
realtime_ms()
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return double(ts.tv_sec) * 1000.0 + double(ts.tv_nsec) / 1e6;
}

inline uint64_t
bits_of(double x)
{
	uint64_t u;
	std::memcpy(&u, &x, sizeof u);
	return u;
}

// Loads a slot as two 8-byte halves (as a table reader does) and replaces it
// with {fp, st} by one lock cmpxchg16b.
inline bool
ideal_update(IdealSlot *s, uint64_t fp, uint64_t st)
{
	u128 *p = reinterpret_cast<u128 *>(s);
	uint64_t lo = __atomic_load_n(&s->fp, __ATOMIC_RELAXED);
	uint64_t hi = __atomic_load_n(&s->st, __ATOMIC_RELAXED);
	u128 expected = (u128(hi) << 64) | lo;
	u128 desired = (u128(st) << 64) | fp;
	return __sync_bool_compare_and_swap(p, expected, desired);
}

template <Clock C>
void
run_ideal(benchmark::State &state, size_t nkeys)
{
	const std::vector<std::string> keys = make_keys(nkeys);
	IdealTable table(kSlots);
	if (!table.ok()) {
		state.SkipWithError("mmap failed");
		return;
	}
	const uint64_t seed = UINT64_C(0x5EED5EED5EED5EED);
	// Touch every key's slot once, as the warm-up does for the table.
	for (const std::string &k : keys) {
		uint64_t h = XXH3_64bits_withSeed(k.data(), k.size(), seed);
		ideal_update(table.at(h), h, 0);
	}

	Cursor<std::string> cur(keys);
	double now = realtime_ms();
	bool ok = true;
	for (auto _ : state) {
		const std::string &k = cur.next();
		if (C == Clock::kSystem)
			now = realtime_ms();
		else
			now += kAllowStepMs;
		uint64_t h = XXH3_64bits_withSeed(k.data(), k.size(), seed);
		ok &= ideal_update(table.at(h), h, bits_of(now));
	}
	if (!ok) {
		state.SkipWithError("a CAS failed with no other writer");
		return;
	}
	state.SetItemsProcessed(state.iterations());
}

void
BM_ideal_clock(benchmark::State &s, size_t n)
{
	run_ideal<Clock::kSystem>(s, n);
}

void
BM_ideal_now(benchmark::State &s, size_t n)
{
	run_ideal<Clock::kExplicit>(s, n);
}

// ---------------------------------------------------------------------------
// Parts of the ideal, to read the others against
// ---------------------------------------------------------------------------

void
BM_part_clock_realtime(benchmark::State &state)
{
	struct timespec ts;
	for (auto _ : state) {
		clock_gettime(CLOCK_REALTIME, &ts);
		benchmark::DoNotOptimize(ts);
	}
	state.SetItemsProcessed(state.iterations());
}

void
BM_part_xxh3(benchmark::State &state, const std::string &k)
{
	const char *p = k.data();
	uint64_t seed = UINT64_C(0x5EED5EED5EED5EED);
	for (auto _ : state) {
		benchmark::DoNotOptimize(p);
		uint64_t h = XXH3_64bits_withSeed(p, k.size(), seed);
		benchmark::DoNotOptimize(h);
	}
	state.SetItemsProcessed(state.iterations());
}

// Load + 16-byte CAS of one slot that stays in L1 (the ideal's write).
void
BM_part_cas16(benchmark::State &state)
{
	IdealTable table(kPartSlots);
	if (!table.ok()) {
		state.SkipWithError("mmap failed");
		return;
	}
	IdealSlot *s = table.at(0);
	uint64_t st = 0;
	bool ok = true;
	for (auto _ : state)
		ok &= ideal_update(s, 1, ++st);
	if (!ok)
		state.SkipWithError("a CAS failed with no other writer");
	state.SetItemsProcessed(state.iterations());
}

// A relaxed atomic add to an L1 line (lock xadd): what the check path pays
// per check for its statistics counter (protocol.h, I11).
void
BM_part_lock_add(benchmark::State &state)
{
	alignas(64) static uint64_t counter;
	for (auto _ : state)
		__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
	benchmark::DoNotOptimize(counter);
	state.SetItemsProcessed(state.iterations());
}

} // namespace

void
register_check_cases(const Config &cfg)
{
	const std::string xxh3_key = "user:123456";
	for (size_t n : { kOneKey, kManyKeys }) {
		const std::string k = std::string("/") + keys_label(n);
		struct {
			const char *name;
			void (*fn)(benchmark::State &, size_t);
		} cases[] = {
			{ "BM_check_clock", BM_check_clock },
			{ "BM_check_now", BM_check_now },
			{ "BM_check_body", BM_check_body },
			{ "BM_check_clock_deny", BM_check_clock_deny },
			{ "BM_check_now_deny", BM_check_now_deny },
			{ "BM_ideal_clock", BM_ideal_clock },
			{ "BM_ideal_now", BM_ideal_now },
		};
		for (const auto &c : cases)
			benchmark::RegisterBenchmark((c.name + k).c_str(), c.fn,
						     n)
				->MinTime(cfg.min_time_s);
	}
	benchmark::RegisterBenchmark("BM_part_clock_realtime",
				     BM_part_clock_realtime)
		->MinTime(cfg.min_time_s);
	benchmark::RegisterBenchmark("BM_part_xxh3/11B", BM_part_xxh3, xxh3_key)
		->MinTime(cfg.min_time_s);
	benchmark::RegisterBenchmark("BM_part_cas16", BM_part_cas16)
		->MinTime(cfg.min_time_s);
	benchmark::RegisterBenchmark("BM_part_lock_add", BM_part_lock_add)
		->MinTime(cfg.min_time_s);
}

} // namespace tkbench
