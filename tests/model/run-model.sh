#!/usr/bin/env bash
# Checks the slot protocol's model (slot_protocol.pml) exhaustively with spin
# in three process mixes, and checks that two seeded bugs are found.
#
#   duplicates  three processes insert and update one key (limit 2), time
#               passes once, a crash may strike before any step
#   reclaim     two processes on key 1, one on key 2 competing for the two
#               slots; time passes, so drained keys are reclaimed as idle
#   evict       keys 1, 2, 3 on two slots (limit 1, no time): evictions; key 1
#               checks twice, so its debt must survive being evicted
#
# Each run must be a complete search ("errors: 0" and no memory cut-off).
# Usage: run-model.sh [spin] [workdir]
set -euo pipefail
spin=${1:-spin}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${2:-$(mktemp -d)}
mkdir -p "$work"
cp "$here/slot_protocol.pml" "$work/"
cd "$work"

passed=0
failed=0

# check NAME EXPECT(pass|violation) DEFINES...
check() {
	local name=$1 expect=$2
	shift 2
	"$spin" -a "$@" slot_protocol.pml >/dev/null
	cc -O2 -DSAFETY -DCOLLAPSE -DMEMLIM=6000 -w -o "pan-$name" pan.c
	local out
	out=$("./pan-$name" -m10000 2>&1 | grep -v '^Depth=')
	local summary states
	summary=$(grep -E 'errors: [0-9]+' <<<"$out" | head -n 1)
	states=$(grep -E 'states, stored' <<<"$out" | head -n 1 | awk '{print $1}')
	if grep -q 'reached -DMEMLIM bound' <<<"$out"; then
		echo "model $name: FAILED: the search ran out of memory (incomplete)"
		failed=$((failed + 1))
		return
	fi
	case $expect in
	pass)
		if grep -q 'errors: 0' <<<"$summary"; then
			echo "model $name: P1-P3 hold in all $states states ($*)"
			passed=$((passed + 1))
		else
			echo "model $name: FAILED: $summary"
			grep -E 'assertion violated' <<<"$out" || true
			failed=$((failed + 1))
		fi
		;;
	violation)
		if grep -q 'assertion violated' <<<"$out"; then
			echo "model $name: seeded bug found: $(grep -m1 'assertion violated' <<<"$out")"
			passed=$((passed + 1))
		else
			echo "model $name: FAILED: the seeded bug was not found"
			failed=$((failed + 1))
		fi
		;;
	esac
}

check duplicates pass -DW1=3 -DW2=0 -DW3=0 -DROUNDS=3 -DLIMIT=2 -DDECAYS=1
check reclaim pass -DW1=2 -DW2=1 -DW3=0 -DROUNDS=2 -DLIMIT=2 -DDECAYS=1
check evict pass -DW1=1 -DW2=1 -DW3=1 -DCHECKS=2 -DROUNDS=2 -DLIMIT=1 \
	-DDECAYS=0
check bug-no-retire violation -DW1=2 -DW2=1 -DW3=0 -DROUNDS=2 -DLIMIT=2 \
	-DDECAYS=1 -DBUG_NO_RETIRE
check bug-no-debt-memory violation -DW1=1 -DW2=1 -DW3=1 -DCHECKS=2 \
	-DROUNDS=2 -DLIMIT=1 -DDECAYS=0 -DBUG_NO_DEBT_MEMORY

echo "model: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
