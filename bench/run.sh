#!/usr/bin/env bash
# Builds the benchmarks (Release, build/bench) and runs the core check bench:
# 5 repetitions, aggregates only, console table on stdout, JSON in
# bench/results/core.json.  Extra arguments go to the benchmark binary, e.g.
#
#   bench/run.sh --benchmark_filter='check_now'
#
# Environment:
#   TKSHM_BENCH_CPU   pin the run to this CPU with taskset (e.g. 1)
#   TKSHM_BENCH_OUT   JSON output path (default bench/results/core.json)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build/bench"
out="${TKSHM_BENCH_OUT:-$root/bench/results/core.json}"

# Warnings are the test builds' gate (scripts/test.sh); a benchmark build must
# not fail on a warning that only -O3 raises.
cmake -S "$root" -B "$build" \
	-DCMAKE_BUILD_TYPE=Release \
	-DTKSHM_WERROR=OFF \
	-DTKSHM_BUILD_BENCH=ON \
	-DTKSHM_BUILD_TESTS=OFF \
	-DTKSHM_BUILD_TOOLS=OFF \
	-DTKSHM_BUILD_DEMO=OFF >/dev/null
cmake --build "$build" --target tkshm_bench_check -j "$(nproc)"

pin=()
if [[ -n "${TKSHM_BENCH_CPU:-}" ]]; then
	pin=(taskset -c "$TKSHM_BENCH_CPU")
fi

mkdir -p "$(dirname "$out")"
${pin[@]+"${pin[@]}"} "$build/bench/tkshm_bench_check" \
	--benchmark_repetitions=5 \
	--benchmark_report_aggregates_only=true \
	--benchmark_out="$out" \
	--benchmark_out_format=json \
	"$@"

# Ratio of each check case to its ideal (medians), when python3 is at hand.
if command -v python3 >/dev/null 2>&1; then
	python3 - "$out" <<'PY'
import json, sys

runs = json.load(open(sys.argv[1]))["benchmarks"]
med = {r["run_name"]: r["real_time"] for r in runs
       if r.get("aggregate_name") == "median" and r.get("time_unit") == "ns"}
if not med:
    sys.exit(0)
print("\nmedian ns per check, and ratio to the ideal with the same clock:")
for name in sorted(med):
    if not name.startswith("BM_check_"):
        continue
    case, keys = name[len("BM_check_"):].split("/")
    ideal = med.get("BM_ideal_%s/%s" % (case.split("_")[0], keys))
    ratio = " x%.2f of %s" % (med[name] / ideal, "%.2f ns ideal" % ideal) \
        if ideal else ""
    print("  %-28s %8.2f ns%s" % (name, med[name], ratio))
PY
fi || true
echo "results: $out"
