# shellcheck shell=bash
# bench/lib/args.sh - the command line every bench/<server>/run.sh takes,
# sourced by them (bash):
#
#   run.sh [--quick] [--out-dir DIR]
#
# bench_args "$@" sets `quick` (1 with --quick, else 0) and `out_dir`, made
# and absolute: DIR, else build/bench/quick with --quick (a smoke never
# overwrites the committed results), else bench/results; -h prints the
# calling script's header comment (up to its `set -euo`), and a bad
# argument prints it and exits 2.  Needs `root` (the repository).
# shellcheck disable=SC2154 # root is the sourcing script's

bench_usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit "${1:-2}"
}

bench_args() {
	quick=0
	out_dir=
	while [[ $# -gt 0 ]]; do
		case "$1" in
		--quick) quick=1 ;;
		--out-dir)
			[[ $# -ge 2 ]] || bench_usage
			out_dir=$2
			shift
			;;
		--out-dir=*) out_dir=${1#--out-dir=} ;;
		-h | --help) bench_usage 0 ;;
		*)
			echo "$0: unknown argument '$1'" >&2
			bench_usage
			;;
		esac
		shift
	done
	if [[ -z $out_dir ]]; then
		if [[ $quick -eq 1 ]]; then
			out_dir="$root/build/bench/quick"
		else
			out_dir="$root/bench/results"
		fi
	fi
	mkdir -p "$out_dir"
	out_dir=$(cd "$out_dir" && pwd)
}
