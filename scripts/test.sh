#!/usr/bin/env bash
# Builds tkshm four ways and runs the test suite (or its part) on each, lints
# the code, then runs the demo command; stops at the first failing stage.
#
#   plain  build/plain  RelWithDebInfo              all tests
#   lint   build/plain  clang-tidy, cppcheck, the   scripts/lint.sh,
#                       unit tests under valgrind;  scripts/check-layers.sh
#                       the layers of src/
#   asan   build/asan   Debug, address+undefined,   all tests
#                       crash points
#   tsan   build/tsan   Debug, clang, thread        tests labelled concurrency
#   fuzz   build/fuzz   Debug, clang, address+      the libFuzzer targets
#                       undefined, libFuzzer        smoke (label fuzz)
#   demo   build        Release (scripts/demo.sh)   the README's first command,
#                                                   for a few seconds
#
# In the plain and asan stages, tests labelled `serial` run alone (-j1) after
# the others ran two at a time.  Every build uses -Werror and bench off; the
# first three build the tools too.
# The last line is "summary: N passed, N failed" (test runs over all stages).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

JOBS=2
total_passed=0
total_failed=0
stage_times=()
t_start=$SECONDS

banner() {
	printf '\n===== test.sh: %s =====\n' "$*"
}

summary() {
	local elapsed=$((SECONDS - t_start))
	echo
	if [[ ${#stage_times[@]} -gt 0 ]]; then
		echo "stages: ${stage_times[*]} (total ${elapsed}s)"
	fi
	if [[ $((total_passed + total_failed)) -eq 0 ]]; then
		echo "test.sh: warning: no test ran (no tests defined yet?)"
	fi
	echo "summary: ${total_passed} passed, ${total_failed} failed"
}

fail() {
	echo "test.sh: FAILED: $*" >&2
	summary
	exit 1
}

# configure_build DIR [cmake args...]
configure_build() {
	local dir=$1
	shift
	cmake -S . -B "$dir" \
		-DTKSHM_WERROR=ON \
		-DTKSHM_BUILD_TESTS=ON \
		-DTKSHM_BUILD_TOOLS=ON \
		-DTKSHM_BUILD_BENCH=OFF \
		-DTKSHM_BUILD_DEMO=ON \
		"$@" || fail "configure of $dir"
	cmake --build "$dir" -j"$JOBS" || fail "build of $dir"
}

# run_ctest STAGE DIR [ctest args...]
# Runs ctest with the command prefix in CTEST_PREFIX (an array, maybe empty),
# adds its counts to the totals and stops the script if a test failed.
CTEST_PREFIX=()
run_ctest() {
	local stage=$1 dir=$2
	shift 2
	local log rc=0 counts failed=0 total=0
	log=$(mktemp)
	"${CTEST_PREFIX[@]}" ctest --test-dir "$dir" --output-on-failure \
		--no-tests=ignore "$@" 2>&1 | tee "$log" || rc=$?
	# "100% tests passed, 0 tests failed out of 12"
	counts=$(sed -n 's/.*tests passed, \([0-9]*\) tests* failed out of \([0-9]*\).*/\1 \2/p' "$log" | tail -n 1)
	rm -f "$log"
	if [[ -n $counts ]]; then
		read -r failed total <<<"$counts"
	fi
	total_passed=$((total_passed + total - failed))
	total_failed=$((total_failed + failed))
	if [[ $rc -ne 0 ]]; then
		[[ $failed -gt 0 ]] || total_failed=$((total_failed + 1))
		fail "$stage: ctest $* (exit $rc)"
	fi
}

# run_stage_tests STAGE DIR [EXCLUDE]: parallel non-serial tests, then serial
# ones alone; tests labelled EXCLUDE (a regex) are left out.
run_stage_tests() {
	local stage=$1 dir=$2 exclude=${3:-}
	local skip=serial
	[[ -n $exclude ]] && skip="serial|$exclude"
	run_ctest "$stage" "$dir" -LE "$skip" -j"$JOBS"
	if [[ -n $exclude ]]; then
		run_ctest "$stage" "$dir" -L serial -LE "$exclude" -j1
	else
		run_ctest "$stage" "$dir" -L serial -j1
	fi
}

bash scripts/install-deps.sh test

# --- plain ------------------------------------------------------------------
banner "[1/5] plain: RelWithDebInfo, all tests (build/plain)"
t0=$SECONDS
configure_build build/plain -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DTKSHM_SANITIZE= -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
run_stage_tests plain build/plain
stage_times+=("plain=$((SECONDS - t0))s")

# --- lint: clang-tidy, cppcheck, valgrind (over the plain build) ------------
banner "[2/5] lint: clang-tidy, cppcheck, valgrind memcheck (build/plain)"
t0=$SECONDS
for what in tidy cppcheck valgrind; do
	if bash scripts/lint.sh --build build/plain --jobs "$JOBS" "$what"; then
		total_passed=$((total_passed + 1))
	else
		total_failed=$((total_failed + 1))
		fail "lint: scripts/lint.sh $what"
	fi
done
# The layers of src/ (docs/architecture.md): no upward include or call,
# no circle inside a layer.
if bash scripts/check-layers.sh build/plain; then
	total_passed=$((total_passed + 1))
else
	total_failed=$((total_failed + 1))
	fail "lint: scripts/check-layers.sh"
fi
stage_times+=("lint=$((SECONDS - t0))s")

# --- asan + ubsan -----------------------------------------------------------
banner "[3/5] asan: Debug, address+undefined, all tests (build/asan)"
t0=$SECONDS
# With crash points compiled in: tests/crash kills a process at every
# shared-memory write of each kind of transition (src/shm/crash_point.h).
configure_build build/asan -DCMAKE_BUILD_TYPE=Debug \
	'-DTKSHM_SANITIZE=address;undefined' -DTKSHM_CRASH_POINTS=ON
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The spin model is not compiled with the sanitizers: it ran in the plain stage.
run_stage_tests asan build/asan model
unset ASAN_OPTIONS UBSAN_OPTIONS
stage_times+=("asan=$((SECONDS - t0))s")

# --- tsan -------------------------------------------------------------------
banner "[4/5] tsan: Debug, clang, thread, concurrency tests (build/tsan)"
t0=$SECONDS
configure_build build/tsan -DCMAKE_BUILD_TYPE=Debug \
	-DCMAKE_C_COMPILER=clang -DTKSHM_SANITIZE=thread
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp"

# clang 14's TSan runtime dies with "FATAL: ThreadSanitizer: unexpected
# memory mapping" when the kernel randomises mmap with more bits than it
# expects (vm.mmap_rnd_bits > 28).  Probe with a trivial program; if it
# fails, run the tests with address-space randomisation off (setarch -R).
probe_dir=build/tsan/tsan-probe
mkdir -p "$probe_dir"
cat >"$probe_dir/probe.c" <<'PROBE'
#include <pthread.h>
static int counter;
static void *bump(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&counter, 1, __ATOMIC_SEQ_CST);
	return NULL;
}
int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, bump, NULL) != 0)
		return 2;
	bump(NULL);
	pthread_join(t, NULL);
	return counter == 2 ? 0 : 1;
}
PROBE
clang -fsanitize=thread -g -O1 -pthread "$probe_dir/probe.c" \
	-o "$probe_dir/probe" || fail "tsan: cannot build the TSan probe"
if "$probe_dir/probe" >"$probe_dir/probe.log" 2>&1; then
	echo "test.sh: tsan probe runs as is"
	CTEST_PREFIX=()
elif setarch "$(uname -m)" -R "$probe_dir/probe" \
	>"$probe_dir/probe-setarch.log" 2>&1; then
	echo "test.sh: tsan probe failed ($(head -n 1 "$probe_dir/probe.log"));" \
		"running the tsan tests under setarch $(uname -m) -R"
	CTEST_PREFIX=(setarch "$(uname -m)" -R)
else
	cat "$probe_dir/probe.log" "$probe_dir/probe-setarch.log" >&2
	fail "tsan: a trivial TSan program fails, even under setarch -R" \
		"(try: sysctl vm.mmap_rnd_bits=28)"
fi

run_ctest tsan build/tsan -L concurrency
CTEST_PREFIX=()
unset TSAN_OPTIONS
stage_times+=("tsan=$((SECONDS - t0))s")

# --- fuzz smoke -------------------------------------------------------------
# The libFuzzer targets of tests/fuzz/ (table files, policy strings, replay
# lines, Redis replies), clang with address+undefined, each for a few
# seconds over its seed corpus.  Only the targets are built here (the other
# tests ran in the stages above); scripts/fuzz.sh runs them for long.
banner "[5/5] fuzz: clang, address+undefined, libFuzzer smoke (build/fuzz)"
t0=$SECONDS
cmake -S . -B build/fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	-DTKSHM_WERROR=ON '-DTKSHM_SANITIZE=address;undefined' \
	-DTKSHM_BUILD_FUZZ=ON -DTKSHM_BUILD_TESTS=ON -DTKSHM_BUILD_TOOLS=OFF \
	-DTKSHM_BUILD_BENCH=OFF -DTKSHM_BUILD_DEMO=OFF \
	-DTKSHM_BUILD_PYTHON=OFF -DTKSHM_BUILD_APACHE=OFF \
	-DTKSHM_BUILD_PHP=OFF || fail "configure of build/fuzz"
cmake --build build/fuzz -j"$JOBS" --target tkshm_fuzzers ||
	fail "build of build/fuzz"
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
run_ctest fuzz build/fuzz -L fuzz -j"$JOBS"
unset ASAN_OPTIONS UBSAN_OPTIONS
stage_times+=("fuzz=$((SECONDS - t0))s")

# --- the demo command -------------------------------------------------------
# The README's first command, as a newcomer runs it (its own Release build in
# build/), for 3 seconds: it must end with "demo: ok".
banner "demo: bash scripts/demo.sh --seconds 3"
t0=$SECONDS
demo_log=$(mktemp)
if bash scripts/demo.sh --seconds 3 2>&1 | tee "$demo_log" &&
	[[ $(tail -n 1 "$demo_log") == "demo: ok" ]]; then
	total_passed=$((total_passed + 1))
	rm -f "$demo_log"
else
	rm -f "$demo_log"
	total_failed=$((total_failed + 1))
	fail "demo: scripts/demo.sh did not end with 'demo: ok'"
fi
stage_times+=("demo=$((SECONDS - t0))s")

summary
