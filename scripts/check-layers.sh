#!/usr/bin/env bash
# check-layers.sh [BUILD_DIR] - no file of src/ reaches a higher layer.
#
# The order, bottom up (docs/architecture.md, "The layers of src/"):
#   base < algorithms < shm < global, shaper < redis < api < agent
# global/ and shaper/ are peers: neither may use the other.  http/ stands
# beside the stack: it may use the public headers and itself only.
# 1. includes: every #include "layer/..." of src/ names its own layer or
#    a lower one.
# 2. symbols (with a build dir): every undefined symbol of an object of
#    src/ that another object of the library defines is defined in its own
#    layer or a lower one (catches calls through the public tkshm.h).
# 3. (with a build dir) no files of one layer reach each other through
#    their symbols: a circle inside a layer, of any length, fails too.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
rank() {
	case $1 in
	base) echo 0 ;; algorithms) echo 1 ;; shm) echo 2 ;;
	global | shaper) echo 3 ;; redis) echo 4 ;; api) echo 5 ;;
	agent) echo 6 ;;
	http) echo 9 ;; *) echo -1 ;;
	esac
}
bad=0
# 1. includes
while IFS= read -r line; do
	file=${line%%:*}
	from=${file#src/}
	from=${from%%/*}
	inc=$(sed -n 's/.*#include "\([^"]*\)".*/\1/p' <<<"${line#*:*:}")
	to=${inc%%/*}
	[[ $inc == */* ]] || continue # tkshm.h, xxhash.h, same-folder
	[[ $to == "$from" ]] && continue
	rt=$(rank "$to")
	[[ $rt -ge 0 ]] || continue # not a layer of src/
	rf=$(rank "$from")
	if [[ $from == http || $rt -ge $rf ]]; then
		echo "include: ${line%%:#*} ($from) -> $inc ($to)"
		bad=$((bad + 1))
	fi
done < <(grep -rn '^[[:space:]]*#[[:space:]]*include "' src --include='*.c' --include='*.h')
# 2. symbols
if [[ $# -ge 1 ]]; then
	objdir=$1/CMakeFiles/tkshm_obj.dir/src
	[[ -d $objdir ]] || { echo "no $objdir" >&2; exit 2; }
	# The objects of the sources src/ has now (a build dir keeps the
	# objects of removed files).
	objs=()
	for o in "$objdir"/*/*.o; do
		l=${o#"$objdir"/}
		[[ -f src/${l%.o} ]] && objs+=("$o")
	done
	defs=$(mktemp)
	edges=$(mktemp)
	for o in "${objs[@]}"; do
		l=${o#"$objdir"/}
		nm --defined-only -g "$o" | awk -v l="${l%%/*}" -v f="$l" \
			'NF == 3 && $2 ~ /[TDBRVW]/ {print $3, l, f}'
	done | sort -k1,1 >"$defs"
	for o in "${objs[@]}"; do
		l=${o#"$objdir"/}
		from=${l%%/*}
		rf=$(rank "$from")
		while read -r sym; do
			while read -r _ to where; do
				[[ $where == "$l" ]] ||
					echo "${l%.o} ${where%.o}" >>"$edges"
				[[ $to == "$from" ]] && continue
				rt=$(rank "$to")
				if [[ $from == http || $rt -ge $rf ]]; then
					echo "symbol: src/${l%.o} ($from) uses $sym of src/${where%.o} ($to)"
					bad=$((bad + 1))
				fi
			done < <(awk -v s="$sym" '$1 == s' "$defs")
		done < <(nm -u "$o" | awk '{print $2}')
	done
	# 3. circles: files of one layer that reach each other through
	#    their calls (any length of loop), each loop listed and counted.
	loops=$(sort -u "$edges" | python3 -c '
import sys
sys.setrecursionlimit(10000)
g = {}
for line in sys.stdin:
    a, b = line.split()
    if a.split("/")[0] == b.split("/")[0]:
        g.setdefault(a, set()).add(b)
        g.setdefault(b, set())
index, low, stack, on, out = {}, {}, [], set(), []
def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in sorted(g[v]):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        part = []
        while True:
            w = stack.pop()
            on.discard(w)
            part.append(w)
            if w == v:
                break
        if len(part) > 1:
            out.append(" <-> ".join("src/" + p for p in sorted(part)))
for v in sorted(g):
    if v not in index:
        visit(v)
print("\n".join(out))
')
	while IFS= read -r loop; do
		[[ -n $loop ]] || continue
		echo "circle (one layer): $loop"
		bad=$((bad + 1))
	done <<<"$loops"
	rm -f "$defs" "$edges"
fi
if [[ $bad -gt 0 ]]; then
	echo "layers: $bad upward references or circles"
	exit 1
fi
echo "layers: ok"
