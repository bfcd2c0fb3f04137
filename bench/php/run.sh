#!/usr/bin/env bash
# The PHP benchmark: checks/s from a PHP loop in 2 processes (pcntl_fork)
# with 100k keys and with 1 hot key, through the tkshm extension, a GCRA
# over APCu (apcu_fetch/apcu_cas, yiisoft style), Symfony's RateLimiter
# (token_bucket over ApcuAdapter, no lock) and the same Symfony code on
# tkshm's adapter (bindings/php/lib, Tkshm\Symfony), and how many each
# admits on the hot key against what the policy allows.
#
#   bench/php/run.sh [--quick] [--out-dir DIR]
#
# Writes DIR/php.jsonl (one line per case, bench/php/bench.php, plus a
# machine line) and then runs bench/php/report.py --results DIR, which puts
# the section into DIR/RESULTS.md.  DIR is bench/results unless --out-dir
# says otherwise; --quick runs each case for 0.5 s instead of 3 s and
# defaults DIR to build/bench/quick.
#
# tkshm.so is built (Release) in build/bench-php unless TKSHM_BENCH_PHP_SO
# names one already built.  Needs php8.2-cli, php-apcu and Debian's
# php-symfony-rate-limiter/-cache; a mode whose package is missing is
# recorded as skipped (symfony_tkshm needs php-symfony-rate-limiter only).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$root/bench/php"

# --quick, --out-dir DIR: quick and out_dir (bench/lib/args.sh).
# shellcheck source=bench/lib/args.sh
. "$root/bench/lib/args.sh"
bench_args "$@"
seconds=3
[[ $quick -eq 1 ]] && seconds=0.5

php=$(command -v php8.2 || command -v php || true)
if [[ -z "$php" ]]; then
	echo "run.sh: php not found (apt-get install php8.2-cli)" >&2
	exit 1
fi

so=${TKSHM_BENCH_PHP_SO:-}
if [[ -z "$so" ]]; then
	build="$root/build/bench-php"
	echo "=== build tkshm.so (Release, $build) ==="
	cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
		-DTKSHM_WERROR=OFF -DTKSHM_BUILD_TESTS=OFF \
		-DTKSHM_BUILD_TOOLS=OFF -DTKSHM_BUILD_DEMO=OFF \
		-DTKSHM_BUILD_PYTHON=OFF >/dev/null
	cmake --build "$build" -j"$(nproc)" --target tkshm_php >/dev/null
	so="$build/php/tkshm.so"
fi
[[ -f "$so" ]] || {
	echo "run.sh: $so not found" >&2
	exit 1
}

# -n: no php.ini, only what the cases need.
ini=(-n -d memory_limit=1G -d "extension=$so")
have_apcu=0
if "$php" -n -d extension=apcu -r 'exit(extension_loaded("apcu") ? 0 : 1);' 2>/dev/null; then
	have_apcu=1
	ini+=(-d extension=apcu -d apc.enable_cli=1 -d apc.shm_size=128M)
fi
have_symfony=0
[[ $have_apcu -eq 1 && -f /usr/share/php/Symfony/Component/RateLimiter/autoload.php &&
	-f /usr/share/php/Symfony/Component/Cache/autoload.php ]] && have_symfony=1
have_symfony_rl=0
[[ -f /usr/share/php/Symfony/Component/RateLimiter/autoload.php ]] && have_symfony_rl=1

jsonl="$out_dir/php.jsonl"
tmp="$jsonl.tmp"
python3 - "$php" "$seconds" "$quick" >"$tmp" <<'PY'
import json, os, platform, subprocess, sys, time
php, seconds, quick = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1"
def first(path, prefix):
    try:
        for line in open(path):
            if line.startswith(prefix):
                return line.split(":", 1)[1].strip() if ":" in line else \
                    line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return None
def out(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""
print(json.dumps({
    "suite": "php", "record": "machine",
    "cpu_model": first("/proc/cpuinfo", "model name"),
    "cpus": os.cpu_count(),
    "os": first("/etc/os-release", "PRETTY_NAME="),
    "kernel": platform.release(),
    "php": out([php, "-n", "-r", "echo PHP_VERSION;"]),
    "apcu": out(["dpkg-query", "-W", "-f", "${Version}", "php-apcu"]),
    "symfony": out(["dpkg-query", "-W", "-f", "${Version}",
                    "php-symfony-rate-limiter"]),
    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    "load_avg_1m": os.getloadavg()[0],
    "seconds": seconds, "procs": 2, "quick": quick,
}))
PY

failed=0
for keys in 100000 1; do
	modes=(tkshm apcu_gcra symfony symfony_tkshm)
	# the bare loop (key and loop, no limiter) once: it is the same for both
	[[ $keys -gt 1 ]] && modes+=(loop)
	for mode in "${modes[@]}"; do
		skip=
		case $mode in
		apcu_gcra) [[ $have_apcu -eq 1 ]] || skip="php-apcu is not installed" ;;
		symfony) [[ $have_symfony -eq 1 ]] || skip="php-apcu or php-symfony-rate-limiter/-cache is not installed" ;;
		symfony_tkshm) [[ $have_symfony_rl -eq 1 ]] || skip="php-symfony-rate-limiter is not installed" ;;
		esac
		if [[ -n "$skip" ]]; then
			printf '{"suite":"php","record":"case","mode":"%s","keys":%d,"skipped":"%s"}\n' \
				"$mode" "$keys" "$skip" >>"$tmp"
			continue
		fi
		echo "=== $mode, $keys keys, 2 processes, ${seconds} s ==="
		if ! "$php" "${ini[@]}" "$here/bench.php" --mode "$mode" \
			--keys "$keys" --seconds "$seconds" --procs 2 | tee -a "$tmp"; then
			echo "run.sh: $mode, $keys keys failed" >&2
			failed=1
		fi
	done
done
mv "$tmp" "$jsonl"

echo "=== report ==="
python3 "$here/report.py" --results "$out_dir"
exit $failed
