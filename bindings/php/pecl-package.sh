#!/usr/bin/env bash
# The PECL package of the PHP extension, which carries the C library's
# sources so that it builds with no repository around it.
#
#   bindings/php/pecl-package.sh [OUTDIR]   tkshm-X.Y.Z.tgz into OUTDIR
#                                           (default: the current directory)
#   bindings/php/pecl-package.sh stage DIR  the package's tree in DIR (new
#                                           or empty): what the tgz holds,
#                                           plus composer.json (for PIE)
#   bindings/php/pecl-package.sh check      package.xml lists exactly the
#                                           files the package must carry
#   bindings/php/pecl-package.sh update     rewrites package.xml's <contents>
#
# The tree is the extension's files (config.m4, src/, tests/phpt/, ...) and
# libtkshm/src and libtkshm/include, copies of the repository's src/ and
# include/, where config.m4 --enable-tkshm-bundled looks first.  It is
# assembled in a temporary directory, never in bindings/php.  package.xml's
# <contents> is generated (update) from the same list, so a file added to
# the library or the extension fails `check` (run by the ctest php_phpize)
# until package.xml is updated; the tgz is made only when it passes.
# The tgz needs `pecl` (Debian: php-pear).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

usage() {
	sed -n '5,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

die() {
	echo "pecl-package: $*" >&2
	exit 1
}

# The package's files, "ROLE PATH" per line (PATH as in the package);
# libtkshm/X is the repository's X.
files() {
	local f
	echo "doc README.md"
	echo "doc tkshm.ini"
	for f in config.m4 embed-lua.php tkshm.stub.php; do
		echo "src $f"
	done
	(cd "$HERE" && find src -maxdepth 1 -type f \( -name '*.c' -o -name '*.h' \)) |
		LC_ALL=C sort | sed 's/^/src /'
	(cd "$HERE" && find tests/phpt -maxdepth 1 -type f -name '*.phpt') |
		LC_ALL=C sort | sed 's/^/test /'
	(cd "$ROOT" && find include src -type f \( -name '*.c' -o -name '*.h' \
		-o -name '*.lua' -o -name '*.lib' \)) |
		LC_ALL=C sort | sed 's|^|src libtkshm/|'
}

# The <contents> element, as package.xml holds it.
contents() {
	local role path
	echo " <contents>"
	echo "  <dir name=\"/\">"
	echo "   <!-- Written by pecl-package.sh update: do not edit. -->"
	while read -r role path; do
		echo "   <file role=\"$role\" name=\"$path\"/>"
	done < <(files)
	echo "  </dir>"
	echo " </contents>"
}

# package.xml with the <contents> element replaced by $1's.
with_contents() {
	awk -v repl="$1" '
		/^ <contents>$/ { print repl; skip = 1; next }
		/^ <\/contents>$/ { skip = 0; next }
		!skip { print }
	' "$HERE/package.xml"
}

version_of_header() {
	local part v=
	for part in MAJOR MINOR PATCH; do
		v+=$(sed -n "s/^#define TKSHM_VERSION_$part \([0-9]*\)$/\1/p" \
			"$ROOT/include/tkshm.h").
	done
	echo "${v%.}"
}

check() {
	local want version
	want=$(contents)
	if [[ "$(with_contents "$want")" != "$(cat "$HERE/package.xml")" ]]; then
		echo "pecl-package: package.xml's <contents> is not the package's" \
			"files:" >&2
		diff <(cat "$HERE/package.xml") <(with_contents "$want") >&2 || true
		die "run bindings/php/pecl-package.sh update"
	fi
	version=$(version_of_header)
	grep -q "<release>$version</release>" "$HERE/package.xml" ||
		die "package.xml's <release> is not $version (include/tkshm.h)"
	grep -q "^#define PHP_TKSHM_VERSION \"$version\"$" \
		"$HERE/src/php_tkshm.h" ||
		die "src/php_tkshm.h's PHP_TKSHM_VERSION is not $version"
}

stage() {
	local dest=$1 role path src
	mkdir -p "$dest"
	[[ -z "$(ls -A "$dest")" ]] || die "$dest is not empty"
	while read -r role path; do
		case $path in
		libtkshm/*) src=$ROOT/${path#libtkshm/} ;;
		*) src=$HERE/$path ;;
		esac
		mkdir -p "$dest/$(dirname "$path")"
		cp -p "$src" "$dest/$path"
	done < <(files)
	cp -p "$HERE/package.xml" "$HERE/composer.json" "$dest/"
}

case ${1:-} in
-h | --help) usage ;;
check)
	[[ $# -eq 1 ]] || usage
	check
	echo "pecl-package: package.xml lists the package's $(files | wc -l) files"
	;;
update)
	[[ $# -eq 1 ]] || usage
	new=$(with_contents "$(contents)")
	printf '%s\n' "$new" >"$HERE/package.xml"
	echo "pecl-package: package.xml's <contents> written"
	;;
stage)
	[[ $# -eq 2 ]] || usage
	check
	stage "$2"
	echo "pecl-package: package tree in $2"
	;;
*)
	[[ $# -le 1 ]] || usage
	out=$(mkdir -p "${1:-.}" && cd "${1:-.}" && pwd)
	command -v pecl >/dev/null || die "pecl not found (Debian: apt-get install php-pear)"
	check
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/tkshm-pecl.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	stage "$tmp/tree"
	(cd "$tmp/tree" && pecl package package.xml >"$tmp/pecl.log" 2>&1) || {
		cat "$tmp/pecl.log" >&2
		die "pecl package failed"
	}
	tgz=$(cd "$tmp/tree" && ls tkshm-*.tgz)
	mv "$tmp/tree/$tgz" "$out/"
	echo "pecl-package: $out/$tgz"
	;;
esac
