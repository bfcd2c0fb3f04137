#!/usr/bin/env bash
# The Apache module's benchmark (bench/apache/bench.py says what it runs):
#
#   bench/apache/run.sh [--quick] [--out-dir DIR]
#
# 1. builds mod_tkshm, tkshm_bench_apache_hook, tkshm-inspect and
#    ngx_http_tkshm_module (Release) in build/bench-apache, and the nginx
#    module again with its handler timed in build/bench-apache-timed;
# 2. runs bench/apache/bench.py: the module's hook alone (hook_bench.c),
#    then Apache httpd with and without mod_tkshm, nginx with and without
#    limit_req and nginx with ngx_http_tkshm_module (load_module), loaded
#    by wrk, into DIR/apache.jsonl (about 5 minutes; --quick: a smoke of
#    about 30 seconds);
# 3. runs bench/apache/report.py: the Apache section of DIR/RESULTS.md.
#
# DIR is bench/results unless --out-dir says otherwise; --quick defaults it
# to build/bench/quick, so that a smoke never overwrites the committed
# results.  Needs apache2, apache2-dev, nginx-light, nginx-dev and wrk
# (scripts/install-deps.sh bench).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build="$root/build/bench-apache"

# --quick, --out-dir DIR: quick and out_dir (bench/lib/args.sh).
# shellcheck source=bench/lib/args.sh
. "$root/bench/lib/args.sh"
bench_args "$@"

# The modules alone, as a server would load them: Release, no tests; and
# tkshm-inspect of the same tree, which reads the evictions of the crowd
# case's tables (an installed one may not know this tree's table layout).
# The nginx module needs nginx-dev (without it CMake leaves the target
# out).
if [[ ! -f /usr/share/nginx/src/conf_flags ]]; then
	echo "bench/apache/run.sh: nginx-dev is missing (scripts/install-deps.sh" \
		"bench installs it)" >&2
	exit 1
fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
	-DTKSHM_WERROR=OFF -DTKSHM_BUILD_TESTS=OFF -DTKSHM_BUILD_TOOLS=ON \
	-DTKSHM_BUILD_DEMO=OFF -DTKSHM_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target mod_tkshm \
	tkshm_bench_apache_hook tkshm-inspect ngx_http_tkshm_module
# The same module with its request handler timed (TKSHM_NGINX_TIMING):
# the module's own share of a request, measured inside nginx.
cmake -S "$root" -B "$build-timed" -DCMAKE_BUILD_TYPE=Release \
	-DTKSHM_WERROR=OFF -DTKSHM_BUILD_TESTS=OFF -DTKSHM_BUILD_TOOLS=OFF \
	-DTKSHM_BUILD_DEMO=OFF -DTKSHM_BUILD_BENCH=OFF \
	-DTKSHM_NGINX_TIMING=ON >/dev/null
cmake --build "$build-timed" -j "$(nproc)" --target ngx_http_tkshm_module

quick_arg=()
[[ $quick -eq 1 ]] && quick_arg=(--quick)
python3 "$root/bench/apache/bench.py" \
	--module "$build/apache/mod_tkshm.so" \
	--hook "$build/apache/tkshm_bench_apache_hook" \
	--inspect "$build/tools/tkshm-inspect/tkshm-inspect" \
	--nginx-module "$build/nginx/ngx_http_tkshm_module.so" \
	--nginx-timed-module "$build-timed/nginx/ngx_http_tkshm_module.so" \
	--out "$out_dir/apache.jsonl" ${quick_arg[@]+"${quick_arg[@]}"}
python3 "$root/bench/apache/report.py" --results "$out_dir"
