#!/usr/bin/env bash
# Static analysis and leak checks of tkshm.
#
#   scripts/lint.sh [--build DIR] [--jobs N] tidy [--fast] [FILE...]
#   scripts/lint.sh [--build DIR] [--jobs N] cppcheck
#   scripts/lint.sh [--build DIR] [--jobs N] valgrind [--label REGEX]
#   scripts/lint.sh [--build DIR] [--jobs N] all
#
#   tidy      clang-tidy with .clang-tidy (bugprone, CERT C, the clang static
#             analyzer, misc, performance, portability) over every file of
#             src/ and tools/ in the compilation database (or the FILEs
#             given), their headers and include/'s; any warning fails.
#             --fast leaves the analyzer out (~10 s instead of ~50 s).
#   cppcheck  cppcheck over src/ and tools/ with the options below and the
#             suppressions of .cppcheck/suppressions; any finding fails.
#   valgrind  memcheck over the tests labelled `unit` (the single-process
#             cmocka tests; --label picks others): a test fails on any
#             memcheck error or on a definite or indirect leak.
#   all       the three in turn (each runs even if one before failed).
#
#   --build DIR  a plain build (no sanitizer) to read compile_commands.json
#                from and to run the tests of; default build/lint, configured
#                here (RelWithDebInfo, no bindings) when it does not exist.
#                An existing build without compile_commands.json is
#                configured again with CMAKE_EXPORT_COMPILE_COMMANDS=ON.
#   --jobs N     parallel jobs (default: the number of CPUs).
#
# Findings are suppressed only where they are, with their reason:
# NOLINT(check) for clang-tidy, `cppcheck-suppress id ; reason` for cppcheck.
# The last line is "lint: ok" or "lint: FAILED: <what>".
set -euo pipefail

CALLER_DIR=$PWD
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD

BUILD=build/lint
JOBS=$(nproc 2>/dev/null || echo 2)

usage() {
	sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--build)
		[[ $# -ge 2 ]] || usage
		BUILD=$2
		shift 2
		;;
	--jobs)
		[[ $# -ge 2 && $2 =~ ^[1-9][0-9]*$ ]] || usage
		JOBS=$2
		shift 2
		;;
	-h | --help) usage ;;
	*) break ;;
	esac
done
[[ $# -ge 1 ]] || usage
cmd=$1
shift
case $cmd in
tidy | cppcheck | valgrind | all) ;;
*)
	echo "lint: unknown command '$cmd'" >&2
	usage
	;;
esac
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD

need() {
	local tool
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "lint: $tool not found (scripts/install-deps.sh" \
				"test installs it)" >&2
			exit 1
		fi
	done
}

# --- the build: compile_commands.json, and the tests for valgrind ---------
# (The run_* functions run in `||` lists, where set -e is off: every step
# checks its own status; a build that cannot be set up ends the script.)
ensure_build() {
	if [[ ! -f $BUILD/CMakeCache.txt ]]; then
		echo "lint: configuring $BUILD"
		cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
			-DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DTKSHM_SANITIZE= \
			-DTKSHM_WERROR=ON -DTKSHM_BUILD_TESTS=ON \
			-DTKSHM_BUILD_TOOLS=ON -DTKSHM_BUILD_BENCH=OFF \
			-DTKSHM_BUILD_DEMO=OFF -DTKSHM_BUILD_PYTHON=OFF \
			-DTKSHM_BUILD_APACHE=OFF -DTKSHM_BUILD_PHP=OFF \
			>/dev/null || {
			echo "lint: configure of $BUILD failed" >&2
			exit 1
		}
	elif [[ ! -f $BUILD/compile_commands.json ]]; then
		echo "lint: configuring $BUILD again with" \
			"CMAKE_EXPORT_COMPILE_COMMANDS=ON"
		cmake -S "$ROOT" -B "$BUILD" \
			-DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null || {
			echo "lint: configure of $BUILD failed" >&2
			exit 1
		}
	fi
	[[ -f $BUILD/compile_commands.json ]] || {
		echo "lint: no $BUILD/compile_commands.json" >&2
		exit 1
	}
}

# The files of src/ and tools/ in the compilation database, once each;
# with an argument, also writes their entries to that file as a
# compilation database of its own (cppcheck loads every entry of the one it
# is given, and the build's names generated sources that may not exist yet).
db_files() {
	python3 - "$BUILD/compile_commands.json" "$ROOT" "${1:-}" <<'PY'
import json, os, sys
db, root, out = sys.argv[1], sys.argv[2], sys.argv[3]
seen, kept = set(), []
for e in json.load(open(db)):
    f = os.path.normpath(os.path.join(e.get("directory", ""), e["file"]))
    rel = os.path.relpath(f, root)
    if rel.split(os.sep)[0] in ("src", "tools") and f not in seen:
        seen.add(f)
        kept.append(e)
        print(f)
if out:
    json.dump(kept, open(out, "w"), indent=1)
PY
}

# --- clang-tidy -----------------------------------------------------------
# clang-tidy 14 takes ~1.3 s of CPU per file here, the analyzer ~85 % of
# it: the 71 files of src/ and tools/ take ~95 CPU-s, ~50 s on 2 idle CPUs
# (--fast: ~17 CPU-s).
run_tidy() {
	need clang-tidy python3
	ensure_build
	local out files=() f n failed=0 checks=
	if [[ $# -gt 0 && $1 == --fast ]]; then
		checks='--checks=-clang-analyzer-*'
		shift
	fi
	if [[ $# -gt 0 ]]; then
		for f in "$@"; do
			[[ $f = /* ]] || f=$CALLER_DIR/$f
			files+=("$(realpath "$f")") || return 1
		done
	else
		mapfile -t files < <(db_files) || return 1
	fi
	n=${#files[@]}
	[[ $n -gt 0 ]] || {
		echo "lint: tidy: no file to check" >&2
		return 1
	}
	echo "lint: tidy${checks:+ (fast: no analyzer)}: $n files, $JOBS at a time ($(clang-tidy --version |
		sed -n 's/.*LLVM version \([0-9.]*\).*/\1/p'))"
	out=$(mktemp -d)
	# One log per file, printed whole when clang-tidy fails on it.
	# shellcheck disable=SC2016 # expanded by sh -c
	printf '%s\0' "${files[@]}" | xargs -0 -P "$JOBS" -I{} sh -c '
		log="$1/$(printf %s "$2" | tr / _).log"
		clang-tidy -p "$0" --quiet ${3:+"$3"} "$2" >"$log" 2>&1 ||
			{ echo "$2" >>"$log.failed"; }' "$BUILD" "$out" {} \
		"$checks" || true
	for f in "$out"/*.failed; do
		[[ -e $f ]] || continue
		failed=$((failed + 1))
		grep -v -e '^[0-9]* warnings\{0,1\} generated\.$' \
			-e '^[0-9]* warnings\{0,1\} treated as errors$' \
			"${f%.failed}" >&2 || true
	done
	rm -rf "$out"
	if [[ $failed -gt 0 ]]; then
		echo "lint: tidy: $failed of $n files have findings" >&2
		return 1
	fi
	echo "lint: tidy: clean"
}

# --- cppcheck -------------------------------------------------------------
# The build's flags per file (--project), plus what cppcheck cannot know
# from them: -mcx16's __GCC_HAVE_SYNC_COMPARE_AND_SWAP_16 and the target
# (src/shm/atomic.h #errors without them).  At least 2 jobs: cppcheck 2.10
# reports stale inline suppressions (unmatchedSuppression) only then.
# shellcheck disable=SC2054 # the commas are cppcheck's
CPPCHECK_OPTS=(--std=c11 --platform=unix64 --library=posix
	-D__x86_64__=1 -D__GCC_HAVE_SYNC_COMPARE_AND_SWAP_16=1
	--enable=warning,style,performance,portability,information
	--inline-suppr --suppressions-list=.cppcheck/suppressions
	--error-exitcode=1 --quiet
	'--template={file}:{line}:{column}: {severity}: {message} [{id}]')

run_cppcheck() {
	need cppcheck python3
	ensure_build
	local jobs=$JOBS tmp n rc=0
	[[ $jobs -ge 2 ]] || jobs=2
	tmp=$(mktemp -d)
	n=$(db_files "$tmp/compile_commands.json" | wc -l) || n=0
	if [[ $n -eq 0 ]]; then
		rm -rf "$tmp"
		echo "lint: cppcheck: no file to check" >&2
		return 1
	fi
	echo "lint: cppcheck: $n files of src/ and tools/ ($(cppcheck --version))"
	cppcheck --project="$tmp/compile_commands.json" -j "$jobs" \
		"${CPPCHECK_OPTS[@]}" || rc=$?
	rm -rf "$tmp"
	if [[ $rc -ne 0 ]]; then
		echo "lint: cppcheck: findings (above)" >&2
		return 1
	fi
	echo "lint: cppcheck: clean"
}

# --- valgrind memcheck ----------------------------------------------------
# All 25 tests labelled unit take ~95 s of CPU under memcheck (test_forecast
# ~24 s of it): ~50 s on 2 idle CPUs.  Forked children (test_segment,
# test_entries_permits) run under memcheck too: an error or a leak makes a
# child exit 99, which fails its test.
# shellcheck disable=SC2054 # the commas are valgrind's
VALGRIND_OPTS=(--error-exitcode=99 --leak-check=full
	--errors-for-leak-kinds=definite,indirect
	--show-leak-kinds=definite,indirect --num-callers=30 -q)

run_valgrind() {
	local label=unit
	if [[ $# -ge 2 && $1 == --label ]]; then
		label=$2
		shift 2
	fi
	[[ $# -eq 0 ]] || usage
	need valgrind ctest cmake python3
	ensure_build
	if grep -q '^TKSHM_SANITIZE:STRING=..*' "$BUILD/CMakeCache.txt"; then
		echo "lint: valgrind: $BUILD is a sanitizer build; use a plain" \
			"one (--build)" >&2
		return 1
	fi
	local tests json rc=0
	json=$(mktemp)
	ctest --test-dir "$BUILD" --show-only=json-v1 -L "$label" >"$json" || {
		rm -f "$json"
		return 1
	}
	tests=$(python3 -c '
import json, sys
print(" ".join(t["name"] for t in json.load(open(sys.argv[1]))["tests"]))' \
		"$json") || {
		rm -f "$json"
		return 1
	}
	[[ -n $tests ]] || {
		rm -f "$json"
		echo "lint: valgrind: no test labelled '$label'" >&2
		return 1
	}
	# The unit tests are targets of the same names (tests/CMakeLists.txt:
	# tkshm_add_test); a no-op when the build is up to date.
	# shellcheck disable=SC2086
	cmake --build "$BUILD" -j "$JOBS" --target $tests >/dev/null || {
		rm -f "$json"
		echo "lint: valgrind: build of the tests failed" >&2
		return 1
	}
	# Again, now that they are built: ctest leaves the command out of a
	# test whose program does not exist yet.
	ctest --test-dir "$BUILD" --show-only=json-v1 -L "$label" >"$json" || {
		rm -f "$json"
		return 1
	}
	echo "lint: valgrind: $(wc -w <<<"$tests") tests labelled '$label'," \
		"$JOBS at a time ($(valgrind --version))"
	python3 - "$json" "$JOBS" "${VALGRIND_OPTS[@]}" <<'PY' || rc=$?
import concurrent.futures, json, os, subprocess, sys, time

tests = json.load(open(sys.argv[1]))["tests"]
jobs, vg_opts = int(sys.argv[2]), sys.argv[3:]

def run(t):
    if "command" not in t:
        return t["name"], -1, 0.0, b"no program (not built?)\n"
    props = {p["name"]: p["value"] for p in t.get("properties", [])}
    env = dict(os.environ)
    for kv in props.get("ENVIRONMENT", []):
        k, _, v = kv.partition("=")
        env[k] = v
    t0 = time.monotonic()
    try:
        p = subprocess.run(["valgrind"] + vg_opts + t["command"],
                           cwd=props.get("WORKING_DIRECTORY"), env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=600)
    except subprocess.TimeoutExpired as e:
        return t["name"], -1, time.monotonic() - t0, \
            (e.output or b"") + b"\ntimed out after 600 s\n"
    return t["name"], p.returncode, time.monotonic() - t0, p.stdout

failed = []
with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
    for name, rc, secs, out in ex.map(run, tests):
        # 99: memcheck found an error or a definite/indirect leak; any
        # other non-zero: the test itself failed (maybe a child's error).
        why = "ok" if rc == 0 else (
            "memcheck errors" if rc == 99 else "failed (exit %d)" % rc)
        print("  %-28s %6.1fs  %s" % (name, secs, why), flush=True)
        if rc != 0:
            failed.append(name)
            sys.stderr.write(out.decode(errors="replace"))
if failed:
    print("lint: valgrind: FAILED: " + " ".join(failed), file=sys.stderr)
    sys.exit(1)
PY
	rm -f "$json"
	[[ $rc -eq 0 ]] || return 1
	echo "lint: valgrind: clean"
}

# --- the command ----------------------------------------------------------
timed() {
	local name=$1 t0=$SECONDS rc=0
	shift
	"$@" || rc=$?
	times+=("$name=$((SECONDS - t0))s")
	[[ $rc -eq 0 ]] || failures+=("$name")
}

times=()
failures=()
case $cmd in
tidy) timed tidy run_tidy "$@" ;;
cppcheck)
	[[ $# -eq 0 ]] || usage
	timed cppcheck run_cppcheck
	;;
valgrind) timed valgrind run_valgrind "$@" ;;
all)
	[[ $# -eq 0 ]] || usage
	timed tidy run_tidy
	timed cppcheck run_cppcheck
	timed valgrind run_valgrind
	;;
esac
echo "lint: ${times[*]}"
if [[ ${#failures[@]} -gt 0 ]]; then
	echo "lint: FAILED: ${failures[*]}"
	exit 1
fi
echo "lint: ok"
