#!/usr/bin/env bash
# Checks a model of the shared-memory protocols exhaustively with spin, in
# several process mixes, and checks that seeded bugs are found.
#
# Model `slot` (slot_protocol.pml, the slot protocol I1-I11), a crash
# possible before any step of every worker.  Every mix checks all five
# properties: P2 no over-admission, P4 no lost slot, P5 no stuck key (both
# by the auditor that runs after the workers), P1 one REAL slot per key
# (I5), P3 no slot back to EMPTY (I2):
#   duplicates  three processes insert and update one key (limit 2), time
#               passes once: duplicate placeholders retired or left behind
#   reclaim     two processes on key 1, one on key 2 competing for the two
#               slots; time passes, so drained keys are reclaimed as idle
#   evict       keys 1, 2, 3 on two slots (limit 1, no time): evictions; key 1
#               checks twice, so its debt must survive being evicted
# Seeded bugs, each of which must violate its own property: no-retire (P1),
# no-debt-memory (P2), ph-not-stealable (P4), rival-not-stolen (P5).
#
# Model `wide` (wide_protocol.pml, the wide-state protocol W1-W9), a crash
# possible before any step in every mix:
#   steal       three writers of one key (limit 2): claims, steals up to
#               D_MAX, EBUSY, superseded claimants
#   limit3      two writers, two checks each (limit 3): records are reused,
#               so a reader can meet a record being rewritten
#   reuse       two writers of key 1; a retirer resets key 1 or reclaims it
#               while FRESH, reinserts key 1 or key 2 and admits: stale
#               claimants resume after the reinsert
#   reuse-dead  the same, the first control holding a claim whose claimant
#               died (stale targets up to D_MAX without a write)
#   inserters   one writer, the retirer and a rival inserter: floors raised
#               under a FRESH occupant, FRESH gens rebuilt across the modulus
#
# Each run must be a complete search ("errors: 0" and no memory cut-off).
# Model `lifecycle` (lifecycle_replace.pml, a table's replacement L2-L6 of
# protocol.h), a crash possible before any step of every process; the
# mixes and seeded bugs are listed where they are run, below.
#
# Model `policy` (lifecycle_policy.pml, a policy changed in place, L1):
# two writers and two readers, or three writers and a reader, a crash
# possible before any step; seeded bugs: a checksum that does not cover the
# generation, a reader that does not compare it (Q1), a writer word never
# taken from a dead holder (Q3).
#
# Model `pair` (pair_protocol.pml, the pair states P1-P9): one slot and its
# pair, a crash possible before any step of every process but the auditor
# (one check of key 1, or one fetch, after the others):
#   reclaim       two writers of key 1 (limit 1, idle once the clock moves)
#                 and a reclaimer for key 2 that inserts and admits key 2
#   reclaim-absent the same, key 1 starting ABSENT and no clock: only an
#                 absent state is reclaimable
#   reclaimers    one writer and two reclaimers racing for the slot
#   reset         one writer (two checks), the reclaimer and a resetter
#   seal          two writers (limit 2) and two fetchers that seal and
#                 freeze (the second may find the slot sealed, the pair not)
#   seal-reset    one writer, the reclaimer, the resetter and a fetcher
# Seeded bugs: the slot CASed before the pair frozen (P2; LIVE where idle
# means absent), no adoption (LIVE), no second slot load (P1), no freeze
# (FROZEN), a reclaim of a busy state (LIMIT; IDLE alone); and the two
# counterexamples of the protocol as first written (adoption slot first,
# reset over a reclaim's ABSENT).
#
# Usage: run-model.sh [spin] [workdir] [slot|wide|lifecycle|policy|pair]
set -euo pipefail
spin=${1:-spin}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=${2:-$(mktemp -d)}
model=${3:-slot}
case $model in
slot) pml=slot_protocol.pml props=P1-P5 ;;
wide) pml=wide_protocol.pml props=P1-P5 ;;
lifecycle) pml=lifecycle_replace.pml props=P1-P4 ;;
policy) pml=lifecycle_policy.pml props=Q1-Q3 ;;
pair) pml=pair_protocol.pml props=P1-P9 ;;
*)
	echo "run-model.sh: unknown model '$model' (slot, wide, lifecycle," \
		"policy or pair)" >&2
	exit 2
	;;
esac
mkdir -p "$work"
cp "$here/$pml" "$work/"
cd "$work"

passed=0
failed=0

# check NAME EXPECT(pass|violation) DEFINES...
check() {
	local name=$1 expect=$2
	shift 2
	"$spin" -a "$@" "$pml" >/dev/null
	cc -O2 -DSAFETY -DCOLLAPSE -DMEMLIM=6000 -w -o "pan-$name" pan.c
	local out
	out=$("./pan-$name" -m10000 2>&1 | grep -v '^Depth=')
	local summary states secs mib
	summary=$(grep -E 'errors: [0-9]+' <<<"$out" | head -n 1)
	states=$(grep -E 'states, stored' <<<"$out" | head -n 1 | awk '{print $1}')
	# The cost of each mix, to keep the CI stage bounded.
	secs=$(grep -E 'elapsed time' <<<"$out" | head -n 1 | awk '{print $4}')
	mib=$(grep -E 'total actual memory usage' <<<"$out" | head -n 1 |
		awk '{print $1}')
	if grep -q 'reached -DMEMLIM bound' <<<"$out"; then
		echo "model $name: FAILED: the search ran out of memory (incomplete)"
		failed=$((failed + 1))
		return
	fi
	if grep -q 'max search depth too small' <<<"$out"; then
		echo "model $name: FAILED: the search hit its depth bound (incomplete)"
		failed=$((failed + 1))
		return
	fi
	case $expect in
	pass)
		if grep -q 'errors: 0' <<<"$summary"; then
			echo "model $name: $props hold in all $states states" \
				"(${secs:-?} s, ${mib:-?} MB; $*)"
			passed=$((passed + 1))
		else
			echo "model $name: FAILED: $summary"
			grep -E 'assertion violated' <<<"$out" || true
			failed=$((failed + 1))
		fi
		;;
	violation*)
		# violation:TEXT - the assertion violated must contain TEXT
		# (so that a bound of the model is not taken for the bug).
		local want=${expect#violation} violated
		want=${want#:}
		violated=$(grep -m1 'assertion violated' <<<"$out" || true)
		if [[ -n $violated && $violated == *"$want"* ]]; then
			echo "model $name: seeded bug found: $violated"
			passed=$((passed + 1))
		elif [[ -n $violated ]]; then
			echo "model $name: FAILED: expected a violation of '$want': $violated"
			failed=$((failed + 1))
		else
			echo "model $name: FAILED: the seeded bug was not found"
			failed=$((failed + 1))
		fi
		;;
	esac
}

if [[ $model == pair ]]; then
	seal="-DNW=2 -DNF=2 -DRECLAIMER=0 -DLIMIT=2"
	# The properties' texts as spin prints them: LIVE (an admission lands
	# in the slot's occupancy), P1, P2, FROZEN, LIMIT, IDLE.
	live='(sst==lst)'
	p1='(ex==lst)'
	p2='(skind==6)||(pk=='
	frozen='(nfetch==0)'
	limit='(adm[nw]<='
	idle='violated ((gabs||'
	# shellcheck disable=SC2086 # the mixes are lists of options
	{
		check reclaim pass
		check reclaim-absent pass -DINIT_ABSENT=1 -DTICK=0
		check reclaimers pass -DNW=1 -DRECLAIMER=2
		check reset pass -DNW=1 -DWCHECKS=2 -DRESETTER=1
		check seal pass $seal
		check seal-reset pass -DNW=1 -DNF=1 -DRESETTER=1
		check bug-slot-first "violation:$p2" -DBUG_SLOT_FIRST
		check bug-slot-first-lost "violation:$live" -DBUG_SLOT_FIRST \
			-DINIT_ABSENT=1 -DTICK=0
		check bug-no-adopt "violation:$live" -DBUG_NO_ADOPT
		check bug-no-reload "violation:$p1" -DBUG_NO_RELOAD
		check bug-no-freeze "violation:$frozen" $seal -DBUG_NO_FREEZE
		check bug-reclaim-busy "violation:$limit" -DBUG_RECLAIM_BUSY
		check bug-reclaim-busy-alone "violation:$idle" -DNW=0 -DTICK=0 \
			-DCRASH=0 -DBUG_RECLAIM_BUSY
		check flaw-adopt-slot-first "violation:$p1" -DFLAW_ADOPT_SLOT_FIRST
		check flaw-reset-over-absent "violation:$live" -DNW=1 \
			-DRESETTER=1 -DFLAW_RESET_OVER_ABSENT
	}
elif [[ $model == policy ]]; then
	q1='(pub[g]==(a%8))'
	{
		check two-two pass
		check three-one pass -DWRITERS=3 -DREADERS=1
		check bug-checksum-no-gen "violation:$q1" -DWRITERS=3 -DREADERS=1 \
			-DBUG_CHECKSUM_NO_GEN
		check bug-no-gen-check "violation:$q1" -DWRITERS=3 -DREADERS=1 \
			-DBUG_NO_GEN_CHECK
		check bug-no-takeover "violation:got" -DBUG_NO_TAKEOVER
	}
elif [[ $model == lifecycle ]]; then
	# The mixes (defaults: an O-worker and an N-worker of key 1, the
	# replacer; 2 slots a table, limit 2):
	#   base       the replacer publishes, seals and drains while an O-worker
	#              and an N-worker check the same new key
	#   old-twice  the same with an O-worker that checks twice (2 rounds a
	#              check): mid-check when REPLACED is set, or its second
	#              check follows the path
	#   race       the replacer died after publishing N, before setting
	#              REPLACED: two O-workers race an N-worker, whose fetch
	#              sets REPLACED and seals (2 rounds a check)
	#   taker      the same death, key 1 at 1 in O: an N-worker and a taker
	#              of the dead replacer's drain
	#   taker-old  the same with an O-worker that has not seen REPLACED
	#   taker-two  the same with an O-worker of key 2 (absent from O) and
	#              an N-worker of key 1: the drain walks two keys
	taker="-DREPL=0 -DTAKER=1 -DINIT1=1 -DOW1=0 -DNW1=1"
	race="-DOW1=2 -DREPL=0 -DROUNDS=2"
	# P1 (an admission from the true count, below the limit) and P4 (a
	# key drained into N with its count), as spin prints them.
	p1='(f==adm[k])'
	p4='(adm[c]==0)||(n==1)'
	# shellcheck disable=SC2086 # the mixes are lists of options
	{
		check base pass
		check old-twice pass -DOC1=2 -DROUNDS=2
		check race pass $race
		check taker pass $taker
		check taker-old pass -DREPL=0 -DTAKER=1 -DINIT1=1 -DOW1=1 -DNW1=0
		check taker-two pass -DREPL=0 -DTAKER=1 -DINIT1=1 -DOW1=0 \
			-DOW2=1 -DROUNDS=2
		# Seeded bugs (a)-(d) of issue 19.  (a): without a drain, P1;
		# with the replacer's drain, P4 comes first (the REAL slot made
		# after the drain is still in O).
		check bug-no-recheck "violation:$p1" $race -DBUG_NO_RECHECK
		check bug-no-recheck-drained "violation:$p4" -DBUG_NO_RECHECK
		check bug-seal-first "violation:$p1" -DBUG_SEAL_FIRST
		check bug-keep-o-ph "violation:$p1" -DBUG_KEEP_O_PH
		check bug-drain-skips-sealed "violation:$p4" $taker \
			-DBUG_DRAIN_SKIPS_SEALED
		# The protocol as first written, three counterexamples: the drain
		# skips placeholders, a fetch out of rounds reads "absent", the
		# fetch seals in the pass that retires placeholders.
		check flaw-drain-skips-ph "violation:$p4" -DDRAIN_SKIPS_PH
		check flaw-fetch-gives-absent "violation:$p1" -DFETCH_GIVES_ABSENT
		check flaw-seal-in-pass "violation:$p1" $race -DSEAL_IN_PASS
	}
elif [[ $model == slot ]]; then
	duplicates="-DW1=3 -DW2=0 -DW3=0 -DROUNDS=3 -DLIMIT=2 -DDECAYS=1"
	reclaim="-DW1=2 -DW2=1 -DW3=0 -DROUNDS=2 -DLIMIT=2 -DDECAYS=1"
	evict="-DW1=1 -DW2=1 -DW3=1 -DCHECKS=2 -DROUNDS=2 -DLIMIT=1 -DDECAYS=0"
	# One key's workers only: a placeholder of another key is then met by
	# P4's fresh keys alone (with two keys, a bug that ignores foreign
	# placeholders also leaves a key stuck, P5, which may be found first).
	onekey="-DW1=2 -DW2=0 -DW3=0 -DROUNDS=2 -DLIMIT=2 -DDECAYS=1"
	# The text of each property's assertion, as spin prints it: P1
	# (assert_unique), P2 (the admission), P4 and P5 (the auditor's; P4
	# counts NSLOTS, 2 in every mix).
	p1='(n_<=1)'
	p2='(owed[k]<'
	p4='(n==2)'
	p5='(owed[k]==1)'
	# shellcheck disable=SC2086 # the mixes are lists of options
	{
		check duplicates pass $duplicates
		check reclaim pass $reclaim
		check evict pass $evict
		check bug-no-retire "violation:$p1" $reclaim -DBUG_NO_RETIRE
		check bug-no-debt-memory "violation:$p2" $evict \
			-DBUG_NO_DEBT_MEMORY
		check bug-ph-not-stealable "violation:$p4" $onekey \
			-DBUG_PH_NOT_STEALABLE
		check bug-rival-not-stolen "violation:$p5" $reclaim \
			-DBUG_RIVAL_NOT_STOLEN
	}
else
	steal="-DNW=3 -DRETIRER=0 -DLIMIT=2 -DROUNDS=3"
	limit3="-DNW=2 -DWADM=2 -DRETIRER=0 -DLIMIT=3 -DROUNDS=3"
	reuse="-DNW=2 -DRETIRER=1 -DLIMIT=2 -DROUNDS=2"
	# shellcheck disable=SC2086 # the mixes are lists of options
	{
		check steal pass $steal
		check limit3 pass $limit3
		check reuse pass $reuse
		check reuse-dead pass $reuse -DINIT_D=1
		check inserters pass -DNW=1 -DRETIRER=1 -DINSERTER=1 -DLIMIT=2 \
			-DROUNDS=2
		# P4 (a unit lands in a published active record), P1 (a
		# record accepted that was not published), P3 (W1)
		p4='(sact==r)'
		p1='(e!=0)'
		p3='(x<G)'
		check bug-floor-no-max "violation:$p4" $reuse -DBUG_FLOOR_NO_MAX
		check bug-read-one-gen "violation:$p1" $limit3 -DBUG_READ_ONE_GEN
		check bug-publish-any-claim "violation:$p4" $steal \
			-DBUG_PUBLISH_ANY_CLAIM
		check bug-gt-same-d "violation:$p3" $steal -DBUG_SUPERSEDED_GT \
			-DBUG_STEAL_SAME_D
		check bug-spacing "violation:$p4" $reuse -DINIT_D=1 -DSPACING=1
	}
fi

echo "model: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
