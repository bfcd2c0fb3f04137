#!/usr/bin/env bash
# The soak (issue 9 item 6): N worker processes check random keys of a
# near-full file-backed table (GCRA, evicting; and a token-bucket table, a
# wide state, refusing) for M minutes while the supervisor SIGKILLs a
# random worker every 100-500 ms and forks a new one, and moves the shared
# clock every 2-6 s (+1 h or back 0.5-5 s).  Every second it runs
# tkshm_verify on both tables, samples memory and descriptors, and checks
# the hot keys' admissions of each clock epoch against GCRA's bound; at the
# end it prints a summary and exits non-zero on any violation.  What is
# checked, and why the bound holds, is in tests/soak/soak.c and
# tests/soak/soak_bound.c.
#
#   bash scripts/soak.sh [--minutes M] [--procs N] [-- tkshm_soak options]
#
#   --minutes M   how long (default 10)
#   --procs N     worker processes (default 16)
#   --            passes the rest to tkshm_soak (--slots, --seed, ...)
#
# Builds build/soak (RelWithDebInfo, no sanitizer, tests on: the driver is
# tests/soak/tkshm_soak), then runs it niced: the soak checks correctness,
# not speed, so it can share the machine.  The short smoke of the same
# driver is a ctest test: ctest --test-dir build/plain -R soak_smoke
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

minutes=10
procs=16
extra=()
while [[ $# -gt 0 ]]; do
	case $1 in
	--minutes)
		[[ $# -ge 2 && $2 =~ ^[0-9]+([.][0-9]+)?$ ]] ||
			{ echo "soak.sh: --minutes takes a number" >&2; exit 2; }
		minutes=$2
		shift 2
		;;
	--procs)
		[[ $# -ge 2 && $2 =~ ^[0-9]+$ && $2 -ge 2 ]] ||
			{ echo "soak.sh: --procs takes a whole number >= 2" >&2; exit 2; }
		procs=$2
		shift 2
		;;
	--)
		shift
		extra=("$@")
		break
		;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "soak.sh: unknown option $1" >&2
		exit 2
		;;
	esac
done

build=build/soak
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTKSHM_SANITIZE= \
	-DTKSHM_BUILD_TESTS=ON -DTKSHM_BUILD_TOOLS=OFF -DTKSHM_BUILD_DEMO=OFF \
	-DTKSHM_BUILD_BENCH=OFF -DTKSHM_BUILD_APACHE=OFF -DTKSHM_BUILD_PHP=OFF \
	-DTKSHM_BUILD_PYTHON=OFF >/dev/null
nice -n 10 cmake --build "$build" --target tkshm_soak -j2

seconds=$(awk -v m="$minutes" 'BEGIN { printf "%d", m * 60 }')
echo "soak.sh: $(date -u '+%F %T') UTC: $procs processes for $seconds s"
exec nice -n 10 "$build/tests/soak/tkshm_soak" --seconds "$seconds" \
	--procs "$procs" "${extra[@]}"
