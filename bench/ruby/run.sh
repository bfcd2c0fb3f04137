#!/usr/bin/env bash
# The Ruby benchmark: checks/s from a Ruby loop in 2 processes (fork) with
# 100k keys and with 1 hot key, through the tkshm gem's Tkshm::Table, and
# what one Rack::Attack throttle costs per request over ActiveSupport's
# MemoryStore, over redis-server and over Tkshm::RackAttackStore; and how
# many each admits on the hot key against what the policy allows.
#
#   bench/ruby/run.sh [--quick] [--out-dir DIR]
#
# Writes DIR/ruby.jsonl (one line per case, bench/ruby/bench.rb, plus a
# machine line) and then runs bench/ruby/report.py --results DIR, which
# puts the section into DIR/RESULTS.md.  DIR is bench/results unless
# --out-dir says otherwise; --quick runs each case for 0.5 s instead of
# 3 s and defaults DIR to build/bench/quick.
#
# The gem is built and installed (gem build, gem install from this tree)
# into build/bench-ruby/home unless TKSHM_BENCH_RUBY_GEM_HOME names a
# GEM_HOME that has it.  Needs ruby-dev, ruby-rack-attack and
# ruby-activesupport; attack_redis also redis-server and ruby-redis, and
# is recorded as skipped without them.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
here="$root/bench/ruby"

# --quick, --out-dir DIR: quick and out_dir (bench/lib/args.sh).
# shellcheck source=bench/lib/args.sh
. "$root/bench/lib/args.sh"
bench_args "$@"
seconds=3
[[ $quick -eq 1 ]] && seconds=0.5

command -v ruby >/dev/null || {
	echo "run.sh: ruby not found (apt-get install ruby-dev)" >&2
	exit 1
}

gem_home=${TKSHM_BENCH_RUBY_GEM_HOME:-}
if [[ -z "$gem_home" ]]; then
	gem_home="$root/build/bench-ruby/home"
	echo "=== build and install the gem ($gem_home) ==="
	ruby "$root/bindings/ruby/tests/build_gem.rb" "$root/build/bench-ruby" "$root" >/dev/null
fi
export GEM_HOME="$gem_home"

# attack_redis: a redis-server of its own on a free port, stopped by pid.
redis_port=
redis_pid=
skip_redis=
if ! command -v redis-server >/dev/null; then
	skip_redis="redis-server is not installed"
elif ! ruby -e 'require "redis"' 2>/dev/null; then
	skip_redis="ruby-redis is not installed"
else
	redis_port=$(python3 -c 'import socket
for p in range(47000, 55000):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); print(p); break
    except OSError:
        pass
    finally:
        s.close()')
	redis-server --port "$redis_port" --bind 127.0.0.1 --save "" \
		--appendonly no >/dev/null &
	redis_pid=$!
	trap '[[ -n "$redis_pid" ]] && kill "$redis_pid" 2>/dev/null; wait' EXIT
	for _ in $(seq 100); do
		redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
		sleep 0.05
	done
fi

jsonl="$out_dir/ruby.jsonl"
tmp="$jsonl.tmp"
# shellcheck disable=SC2016 # Ruby code, expanded by Ruby
ruby -rjson -rrbconfig -e '
  seconds, quick = ARGV[0].to_f, ARGV[1] == "1"
  first = ->(path, re) { File.foreach(path).each { |l| m = l[re, 1] and return m.strip } rescue nil; nil }
  ver = ->(pkg) { IO.popen(["dpkg-query", "-W", "-f", "${Version}", pkg], err: File::NULL, &:read) rescue "" }
  require "etc"
  puts JSON.generate(suite: "ruby", record: "machine",
    cpu_model: first.("/proc/cpuinfo", /^model name\s*:(.*)/), cpus: Etc.nprocessors,
    os: first.("/etc/os-release", /^PRETTY_NAME="?([^"]*)/), kernel: Etc.uname[:release],
    ruby: RUBY_VERSION, rack_attack: ver.("ruby-rack-attack"), activesupport: ver.("ruby-activesupport"),
    redis: ver.("redis-server"),
    date: Time.now.utc.strftime("%Y-%m-%d %H:%M UTC"), load_avg_1m: File.read("/proc/loadavg").split.first.to_f,
    seconds: seconds, procs: 2, quick: quick)
' "$seconds" "$quick" >"$tmp"

failed=0
for keys in 100000 1; do
	modes=(tkshm attack_memory attack_redis attack_tkshm)
	[[ $keys -gt 1 ]] && modes+=(loop)
	for mode in "${modes[@]}"; do
		extra=()
		if [[ $mode == attack_redis ]]; then
			if [[ -n "$skip_redis" ]]; then
				printf '{"suite":"ruby","record":"case","mode":"%s","keys":%d,"skipped":"%s"}\n' \
					"$mode" "$keys" "$skip_redis" >>"$tmp"
				continue
			fi
			redis-cli -p "$redis_port" flushall >/dev/null
			extra=(--redis-port "$redis_port")
		fi
		echo "=== $mode, $keys keys, 2 processes, ${seconds} s ==="
		if ! ruby "$here/bench.rb" --mode "$mode" --keys "$keys" \
			--seconds "$seconds" --procs 2 ${extra[@]+"${extra[@]}"} | tee -a "$tmp"; then
			echo "run.sh: $mode, $keys keys failed" >&2
			failed=1
		fi
	done
done
mv "$tmp" "$jsonl"

echo "=== report ==="
python3 "$here/report.py" --results "$out_dir"
exit $failed
