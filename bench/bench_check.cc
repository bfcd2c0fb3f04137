// bench_check.cc - first numbers for one tkshm check, next to an ideal floor.
//
// What is measured (one thread, one process, no contention):
//
//   BM_check_clock/{1key,100k}        tkshm_check(): reads CLOCK_REALTIME
//   BM_check_now/{1key,100k}          tkshm_check_at() with an explicit now
//   BM_check_clock_deny/{1key,100k}   as above, every check denied
//   BM_check_now_deny/{1key,100k}
//   BM_ideal_clock/{1key,100k}        clock_gettime + XXH3 + 16-byte CAS
//   BM_ideal_now/{1key,100k}          XXH3 + 16-byte CAS
//   BM_part_clock_realtime            clock_gettime(CLOCK_REALTIME) alone
//   BM_part_xxh3/11B                  XXH3_64bits_withSeed of one 11-byte key
//   BM_part_cas16                     load + lock cmpxchg16b of an L1 slot
//   BM_part_lock_add                  lock xadd on an L1 line (the counter)
//
// The ideal is the physical floor of shared/notes/table-design.md A.11: what
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
// it), so no case sees state left by another.  Tables are anonymous shared
// mappings (MAP_SHARED|MAP_ANONYMOUS, the prefork setup), 262144 slots; the
// ideal's slot array is mapped the same way so both get the same page size
// (shmem: 4 KiB pages unless shmem_enabled says otherwise).
//
// Keys are "user:NNNNNN" (11 bytes).  The 100k set holds distinct ids in a
// fixed pseudo-random order and is visited cyclically in that order: reading
// the key is a sequential stream (a request's key is in cache), the table
// lines it lands on are random.  Every key is checked once before the timed
// loop, so the loop measures checks of present keys (see warmup_evicted and
// insert_ratio for the few a full window pushed out).
//
// Counters:
//   allowed_ratio         admitted / checks in the timed loop (from stats)
//   bytes_per_key         tkshm_stats.bytes_per_key = file_bytes / slots
//   bytes_per_stored_key  file_bytes / 100000, at this occupancy (100k only)
//   warmup_evicted        keys evicted while inserting the 100k (100k only)
//   insert_ratio          inserts / checks in the timed loop (100k only)
//
// Adding a case: run_check and run_ideal take the number of keys; a new key
// shape goes in make_keys, a new policy next to kAllowPolicy, and each case is
// one more BENCHMARK_CAPTURE line at the bottom.

#include <benchmark/benchmark.h>

#include <sys/mman.h>
#include <time.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "tkshm.h"

namespace
{

// ---------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------

constexpr uint64_t kSlots = 262144;
constexpr size_t kOneKey = 1;
constexpr size_t kManyKeys = 100000;

// Mostly-allowed: 1e6 per second per key (T = 1 us).  now advances by T per
// check, so with one key each check lands exactly at the rate and is
// admitted; with 100k keys a key comes back every 100k checks, far below it.
// (Near today's epoch, ~1.8e12 ms, a double moves in steps of 2^-12 ms =
// 0.24 us, so now and the TAT both advance by 4 such steps per check; a T
// below 0.12 us would not advance the TAT at all.)
// The clock cases cannot pick their pace: one thread checks one key about
// 20e6 times a second, 20x the rate, so with the default burst (= limit) the
// key would be in debt after ~50 ms and the case would measure denials.  The
// burst of 1e12 (tau = 1e9 ms, about 11.6 days of lead) keeps every check
// admitted for any realistic run; the check's arithmetic and writes do not
// depend on it.
constexpr const char *kAllowPolicy =
	"gcra:limit=1000000,periodMs=1000,burst=1000000000000";
constexpr double kAllowStepMs = 0.001; // = T

// Always-denied: one per hour, burst 1.  The warm-up check admits each key
// once (TAT = now + 1 h); every later check within the hour is denied, and a
// denial writes no slot (protocol.h, I7).
constexpr const char *kDenyPolicy = "gcra:limit=1,periodMs=3600000";
constexpr double kDenyStepMs = 0.001;

// Slots of the scratch array the part benchmarks use (one page).
constexpr uint64_t kPartSlots = 256;

enum class Clock {
	kSystem,
	kExplicit
};
enum class Outcome {
	kAllow,
	kDeny
};

// ---------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------

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

// n keys "user:NNNNNN": n distinct ids out of 0..999999 in pseudo-random
// order (n == 1 gives "user:123456").  Stored in visit order.
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

// Cycles through a key set: the one piece of loop code every case shares,
// so the 1-key and 100k cases differ only in the keys.
class KeyCursor
{
      public:
	explicit KeyCursor(const std::vector<std::string> &keys)
	    : keys_(keys.data()), n_(keys.size())
	{
	}
	const std::string &next()
	{
		const std::string &k = keys_[i_];
		if (++i_ == n_)
			i_ = 0;
		return k;
	}

      private:
	const std::string *keys_;
	size_t n_;
	size_t i_ = 0;
};

// ---------------------------------------------------------------------------
// tkshm cases
// ---------------------------------------------------------------------------

// An open anonymous table, closed on scope exit.
class Table
{
      public:
	Table(const char *spec, uint64_t slots)
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
			error_ = std::string("tkshm_open: ") +
				 tkshm_strerror(rc) + " " + why;
	}
	~Table()
	{
		tkshm_close(t_);
	}
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

	tkshm_stats stats() const
	{
		tkshm_stats s;
		std::memset(&s, 0, sizeof s);
		(void)tkshm_stats_get(t_, &s);
		return s;
	}

      private:
	tkshm_table *t_ = nullptr;
	std::string error_;
};

template <Clock C, Outcome O>
void
run_check(benchmark::State &state, size_t nkeys)
{
	const std::vector<std::string> keys = make_keys(nkeys);
	Table table(O == Outcome::kAllow ? kAllowPolicy : kDenyPolicy, kSlots);
	if (!table.error().empty()) {
		state.SkipWithError(table.error().c_str());
		return;
	}
	tkshm_table *t = table.get();
	tkshm_decision d;
	double now = tkshm_now_ms();
	const double step = O == Outcome::kAllow ? kAllowStepMs : kDenyStepMs;

	// Warm-up: check every key once, inserting it, so that the timed loop
	// checks present keys.  A window can fill up even at this occupancy;
	// the keys evicted then are counted (warmup_evicted), re-inserted by
	// the loop in the allow cases (insert_ratio), and denied from their
	// remembered debt in the deny cases.
	for (const std::string &k : keys) {
		int rc = tkshm_check_at(t, k.data(), k.size(), 1.0, now, &d);
		if (rc != TKSHM_OK) {
			state.SkipWithError("warm-up check failed");
			return;
		}
	}
	const tkshm_stats before = table.stats();

	KeyCursor cur(keys);
	int bad = 0;
	for (auto _ : state) {
		const std::string &k = cur.next();
		int rc;
		if (C == Clock::kSystem) {
			rc = tkshm_check(t, k.data(), k.size(), 1.0, &d);
		} else {
			now += step;
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

	const tkshm_stats after = table.stats();
	const double checks = double(after.allowed + after.denied) -
			      double(before.allowed + before.denied);
	state.SetItemsProcessed(state.iterations());
	state.counters["allowed_ratio"] =
		checks > 0 ? double(after.allowed - before.allowed) / checks :
			     0;
	if (nkeys == kManyKeys) {
		state.counters["bytes_per_key"] = after.bytes_per_key;
		state.counters["bytes_per_stored_key"] =
			double(after.file_bytes) / double(kManyKeys);
		state.counters["warmup_evicted"] = double(before.evictions);
		state.counters["insert_ratio"] =
			checks > 0 ? double(after.inserts - before.inserts) /
					     checks :
				     0;
	}
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
// shmem pages, the same page size as the real table gets).
class IdealTable
{
      public:
	explicit IdealTable(uint64_t slots)
	    : bytes_(slots * sizeof(IdealSlot)), mask_(slots - 1)
	{
		void *p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED)
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

	KeyCursor cur(keys);
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

BENCHMARK_CAPTURE(BM_check_clock, 1key, kOneKey);
BENCHMARK_CAPTURE(BM_check_now, 1key, kOneKey);
BENCHMARK_CAPTURE(BM_check_clock_deny, 1key, kOneKey);
BENCHMARK_CAPTURE(BM_check_now_deny, 1key, kOneKey);
BENCHMARK_CAPTURE(BM_ideal_clock, 1key, kOneKey);
BENCHMARK_CAPTURE(BM_ideal_now, 1key, kOneKey);

BENCHMARK_CAPTURE(BM_check_clock, 100k, kManyKeys);
BENCHMARK_CAPTURE(BM_check_now, 100k, kManyKeys);
BENCHMARK_CAPTURE(BM_check_clock_deny, 100k, kManyKeys);
BENCHMARK_CAPTURE(BM_check_now_deny, 100k, kManyKeys);
BENCHMARK_CAPTURE(BM_ideal_clock, 100k, kManyKeys);
BENCHMARK_CAPTURE(BM_ideal_now, 100k, kManyKeys);

BENCHMARK(BM_part_clock_realtime);
BENCHMARK_CAPTURE(BM_part_xxh3, 11B, std::string("user:123456"));
BENCHMARK(BM_part_cas16);
BENCHMARK(BM_part_lock_add);

BENCHMARK_MAIN();
