#!/usr/bin/env bash
# Runs the libFuzzer targets of tests/fuzz/ for long (issue 9): builds them
# (build/fuzz: clang, Debug, AddressSanitizer + UndefinedBehaviorSanitizer),
# then runs each target in turn for M minutes with one worker, niced, over
# its committed seed corpus plus a work corpus that persists between runs.
#
#   bash scripts/fuzz.sh [--minutes M] [target...]
#
#   --minutes M   minutes per target (default 10)
#   target        fuzz_table, fuzz_policy, fuzz_replay_line,
#                 fuzz_apache_directive, fuzz_redis_reply (default: all
#                 that were built)
#
# New inputs go to build/fuzz/corpus/<target>/ (never to the repository);
# crashes, timeouts and leaks to build/fuzz/artifacts/<target>-*, and the
# run's log to build/fuzz/logs/<target>.log.  Each target's summary
# (executions, libFuzzer's cov: and ft:, corpus size) is printed at the end;
# the script fails if any target found anything.
#
# The short smoke of every target is a ctest test instead:
#   ctest --test-dir build/fuzz -L fuzz
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

minutes=10
targets=()
while [[ $# -gt 0 ]]; do
	case $1 in
	--minutes)
		[[ $# -ge 2 && $2 =~ ^[0-9]+$ && $2 -gt 0 ]] ||
			{ echo "fuzz.sh: --minutes takes a whole number > 0" >&2; exit 2; }
		minutes=$2
		shift 2
		;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
		exit 0
		;;
	-*)
		echo "fuzz.sh: unknown option $1" >&2
		exit 2
		;;
	*)
		targets+=("$1")
		shift
		;;
	esac
done

build=build/fuzz
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	'-DTKSHM_SANITIZE=address;undefined' -DTKSHM_BUILD_FUZZ=ON \
	-DTKSHM_BUILD_TOOLS=OFF -DTKSHM_BUILD_DEMO=OFF -DTKSHM_BUILD_BENCH=OFF \
	-DTKSHM_BUILD_APACHE=OFF -DTKSHM_BUILD_PHP=OFF -DTKSHM_BUILD_PYTHON=OFF \
	>/dev/null
nice -n 19 cmake --build "$build" --target tkshm_fuzzers -j2

bin=$build/tests/fuzz
if [[ ${#targets[@]} -eq 0 ]]; then
	for t in fuzz_table fuzz_policy fuzz_replay_line fuzz_apache_directive \
		fuzz_redis_reply; do
		[[ -x $bin/$t ]] && targets+=("$t")
	done
fi

mkdir -p "$build/corpus" "$build/artifacts" "$build/logs"
# fuzz_table also starts from tables this build's library writes.
"$bin/make_seeds" "$build/corpus/seeds-fuzz_table"

export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
summaries=()
failed=0
for t in "${targets[@]}"; do
	[[ -x $bin/$t ]] || { echo "fuzz.sh: no target $t in $bin" >&2; exit 2; }
	corpus=$build/corpus/$t
	log=$build/logs/$t.log
	mkdir -p "$corpus"
	extra=()
	[[ $t == fuzz_table ]] && extra+=("$build/corpus/seeds-fuzz_table")
	dict=()
	case $t in
	fuzz_policy) dict=(-dict=tests/fuzz/policy.dict) ;;
	fuzz_apache_directive) dict=(-dict=tests/fuzz/apache.dict) ;;
	fuzz_redis_reply) dict=(-dict=tests/fuzz/redis.dict) ;;
	esac
	echo "===== fuzz.sh: $t for $minutes min (log: $log) ====="
	rc=0
	# One process, one worker: -jobs/-workers stay at their default 1.
	nice -n 19 "$bin/$t" -max_total_time=$((minutes * 60)) -timeout=10 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		"-artifact_prefix=$build/artifacts/$t-" "${dict[@]}" \
		"$corpus" "tests/fuzz/corpus/$t" "${extra[@]}" >"$log" 2>&1 ||
		rc=$?
	# libFuzzer's status lines: "#4096<TAB>pulse  cov: ... ft: ...".
	grep -E '^#[0-9]+[[:space:]]+(INITED|pulse|DONE)' "$log" |
		tail -n 3 || true
	last=$(grep -E '^#[0-9]+[[:space:]]' "$log" | tail -n 1 || true)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	files=$(find "$corpus" -type f | wc -l)
	status=ok
	if [[ $rc -ne 0 ]]; then
		status="FAILED (exit $rc; see $log)"
		failed=1
		grep -E 'ERROR|SUMMARY' "$log" | head -n 5 >&2 || true
	fi
	summaries+=("$t: ${minutes} min, ${execs:-?} execs (${rate:-?}/s), cov ${cov:-?}, ft ${ft:-?}, work corpus ${files} files: $status")
done

echo
echo "===== fuzz.sh: summary ====="
printf '%s\n' "${summaries[@]}"
exit $failed
