#!/usr/bin/env bash
# The whole benchmark suite in one command:
#
#   bench/run.sh [--quick] [--out-dir DIR] [--skip-core] [--skip-procs]
#                [--skip-redis-tier] [--skip-cluster] [--skip-servers]
#                [--report-only] [--benchmark_*=...]... [-- DRIVER_ARGS...]
#
# 1. installs what is missing (scripts/install-deps.sh bench);
# 2. builds Release in build/bench: tkshm_bench_check (Google Benchmark),
#    tkshm_bench_procs (the multi-process driver, bench/procs/) and
#    tkshm_bench_redis_tier (strict and lease tables, bench/procs/; built
#    when the library has its Redis tier, i.e. hiredis was found);
# 3. runs tkshm_bench_check, 3 repetitions, JSON in DIR/core.json;
# 4. runs tkshm_bench_procs, JSON Lines in DIR/procs.jsonl;
# 5. runs tkshm_bench_redis_tier, JSON Lines in DIR/redis_tier.jsonl:
#    strict and lease tables on a redis-server of their own per case
#    (about 30 s), then their key sets again on a Redis Cluster of 3
#    masters and 3 replicas that it starts on 127.0.0.1 with redis-server
#    and redis-cli --cluster create and stops at the end (about 15 s
#    more; its records say "topology": "cluster");
# 6. runs the server benchmarks of the bindings: bench/apache/run.sh
#    (Apache with and without mod_tkshm, nginx limit_req; DIR/apache.jsonl)
#    bench/php/run.sh (a PHP loop beside APCu and Symfony;
#    DIR/php.jsonl) and bench/ruby/run.sh (a Ruby loop beside
#    Rack::Attack over MemoryStore and redis-server; DIR/ruby.jsonl),
#    each a few minutes;
# 7. runs bench/report.py: DIR/RESULTS.md and the plots DIR/*.png, then
#    the sections of the Redis tier (bench/procs/report_redis_tier.py),
#    Apache (bench/apache/report.py), PHP (bench/php/report.py) and Ruby
#    (bench/ruby/report.py).
#
# DIR is bench/results (the committed results) unless --out-dir says
# otherwise.  --quick is a smoke of every step: each core case runs once for
# 20 ms, the driver gets --quick, and DIR defaults to build/bench/quick so
# that a smoke never overwrites the committed results.
#
#   --skip-core / --skip-procs / --skip-redis-tier / --skip-servers
#                                keep that step's previous output in DIR
#   --skip-cluster               step 5 without the Redis Cluster cases
#                                (tkshm_bench_redis_tier --skip-cluster)
#   --report-only                only step 7, on what DIR holds
#   --benchmark_*                passed to tkshm_bench_check, e.g.
#                                --benchmark_filter=BM_algo
#   -- DRIVER_ARGS               the rest goes to tkshm_bench_procs, e.g.
#                                -- --scenario hotkey --seconds 3
#
# Environment:
#   TKSHM_BENCH_CPU   pin tkshm_bench_check to this CPU with taskset (e.g. 1)
#
# A step that fails does not stop the later ones (the report says what is
# missing); the script then exits 1.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build/bench"

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
	exit "${1:-2}"
}

quick=0
out_dir=
run_core=1
run_procs=1
run_tier=1
run_servers=1
tier_cluster=1
build_only_report=0
procs_args=()
core_args=()
while [[ $# -gt 0 ]]; do
	case "$1" in
	--quick) quick=1 ;;
	--out-dir)
		[[ $# -ge 2 ]] || usage
		out_dir=$2
		shift
		;;
	--out-dir=*) out_dir=${1#--out-dir=} ;;
	--skip-core) run_core=0 ;;
	--skip-procs) run_procs=0 ;;
	--skip-redis-tier) run_tier=0 ;;
	--skip-cluster) tier_cluster=0 ;;
	--skip-servers) run_servers=0 ;;
	--report-only)
		run_core=0
		run_procs=0
		run_tier=0
		run_servers=0
		build_only_report=1
		;;
	--)
		shift
		procs_args=("$@")
		break
		;;
	--benchmark_*) core_args+=("$1") ;;
	-h | --help) usage 0 ;;
	*)
		echo "run.sh: unknown argument '$1'" >&2
		usage
		;;
	esac
	shift
done

if [[ -z "$out_dir" ]]; then
	if [[ $quick -eq 1 ]]; then
		out_dir="$build/quick"
	else
		out_dir="$root/bench/results"
	fi
fi
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
failed=0

step() {
	echo
	echo "=== $* ==="
}

if [[ $build_only_report -eq 0 ]]; then
	step "dependencies"
	bash "$root/scripts/install-deps.sh" bench

	step "build (Release, $build)"
	# Warnings are the test builds' gate (scripts/test.sh); a benchmark
	# build must not fail on a warning that only -O3 raises.
	cmake -S "$root" -B "$build" \
		-DCMAKE_BUILD_TYPE=Release \
		-DTKSHM_WERROR=OFF \
		-DTKSHM_BUILD_BENCH=ON \
		-DTKSHM_BUILD_TESTS=OFF \
		-DTKSHM_BUILD_TOOLS=OFF \
		-DTKSHM_BUILD_DEMO=OFF >/dev/null
	targets=(tkshm_bench_check)
	# The driver's folder is being written alongside; build it once its
	# CMakeLists.txt exists (the top-level CMakeLists.txt adds it then).
	if [[ -f "$root/bench/procs/CMakeLists.txt" ]]; then
		targets+=(tkshm_bench_procs)
	fi
	# The Redis tier's benchmark exists only in a library built with
	# hiredis (bench/procs/CMakeLists.txt): ask the build for it (the
	# whole list, not a pipe into grep -q, which pipefail would fail).
	if [[ $(cmake --build "$build" --target help 2>/dev/null) == \
		*tkshm_bench_redis_tier* ]]; then
		targets+=(tkshm_bench_redis_tier)
	fi
	cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
fi

if [[ $run_core -eq 1 ]]; then
	step "core: tkshm_bench_check -> $out_dir/core.json"
	pin=()
	if [[ -n "${TKSHM_BENCH_CPU:-}" ]]; then
		pin=(taskset -c "$TKSHM_BENCH_CPU")
	fi
	if [[ $quick -eq 1 ]]; then
		timing=(--benchmark_repetitions=1 --tkshm_min_time=0.02)
	else
		timing=(--benchmark_repetitions=3)
	fi
	if ! ${pin[@]+"${pin[@]}"} "$build/bench/tkshm_bench_check" \
		"${timing[@]}" \
		--benchmark_report_aggregates_only=true \
		--benchmark_out="$out_dir/core.json" \
		--benchmark_out_format=json \
		${core_args[@]+"${core_args[@]}"}; then
		echo "run.sh: tkshm_bench_check failed" >&2
		failed=1
	fi
fi

if [[ $run_procs -eq 1 ]]; then
	procs_bin="$build/bench/procs/tkshm_bench_procs"
	step "procs: tkshm_bench_procs -> $out_dir/procs.jsonl"
	if [[ ! -x "$procs_bin" ]]; then
		echo "run.sh: $procs_bin is not built; the report will say" \
			"'not measured' for the multi-process targets" >&2
		# A failure only when the build was meant to make it.
		if [[ -f "$root/bench/procs/CMakeLists.txt" ]]; then
			failed=1
		fi
	else
		quick_arg=()
		[[ $quick -eq 1 ]] && quick_arg=(--quick)
		if ! "$procs_bin" --out "$out_dir/procs.jsonl" \
			${quick_arg[@]+"${quick_arg[@]}"} \
			${procs_args[@]+"${procs_args[@]}"}; then
			echo "run.sh: tkshm_bench_procs failed" >&2
			failed=1
		fi
	fi
fi

if [[ $run_tier -eq 1 ]]; then
	tier_bin="$build/bench/procs/tkshm_bench_redis_tier"
	step "redis tier: tkshm_bench_redis_tier -> $out_dir/redis_tier.jsonl"
	if [[ ! -x "$tier_bin" ]]; then
		# Not a failure: a library without hiredis has no Redis tier
		# to measure (the report says "not measured").
		echo "run.sh: $tier_bin is not built (no hiredis?);" \
			"the Redis tier is not measured" >&2
	else
		tier_args=()
		[[ $quick -eq 1 ]] && tier_args=(--quick)
		[[ $tier_cluster -eq 0 ]] && tier_args+=(--skip-cluster)
		if ! "$tier_bin" --out "$out_dir/redis_tier.jsonl" \
			${tier_args[@]+"${tier_args[@]}"}; then
			echo "run.sh: tkshm_bench_redis_tier failed" >&2
			failed=1
		fi
	fi
fi

# The bindings' server benchmarks build what they load themselves (the
# module and the extension, Release, in their own build directory).
if [[ $run_servers -eq 1 ]]; then
	for srv in apache php ruby; do
		[[ -f "$root/bench/$srv/run.sh" ]] || continue
		step "$srv: bench/$srv/run.sh -> $out_dir/$srv.jsonl"
		quick_arg=()
		[[ $quick -eq 1 ]] && quick_arg=(--quick)
		if ! bash "$root/bench/$srv/run.sh" --out-dir "$out_dir" \
			${quick_arg[@]+"${quick_arg[@]}"}; then
			echo "run.sh: bench/$srv/run.sh failed" >&2
			failed=1
		fi
	done
fi

step "report -> $out_dir/RESULTS.md"
if ! python3 "$root/bench/report.py" --results "$out_dir"; then
	echo "run.sh: report.py failed" >&2
	failed=1
fi
# report.py rewrites RESULTS.md whole: the Redis tier's section goes in
# after it.
if ! python3 "$root/bench/procs/report_redis_tier.py" \
	--results "$out_dir" >/dev/null; then
	echo "run.sh: report_redis_tier.py failed" >&2
	failed=1
fi
for srv in apache php ruby; do
	[[ -f "$root/bench/$srv/report.py" ]] || continue
	if ! python3 "$root/bench/$srv/report.py" \
		--results "$out_dir" >/dev/null; then
		echo "run.sh: bench/$srv/report.py failed" >&2
		failed=1
	fi
done

echo
echo "results: $out_dir"
exit $failed
