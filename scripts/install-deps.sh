#!/usr/bin/env bash
# Installs the Debian 12 packages that tkshm needs and that are missing.
#
#   scripts/install-deps.sh [demo|test|bench]     (default: demo)
#
#   demo   build the library, tkshm-inspect and the demo
#   test   demo + what the test suite and the sanitizer builds need
#   bench  test + the C++ benchmarks and their plots
#
# Runs apt-get only when something is missing (apt-get update once, then one
# apt-get install).  As a non-root user it uses sudo when sudo exists.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

# --- the package lists (the only place they are written) --------------------
DEMO_PKGS=(build-essential cmake pkg-config libxxhash-dev liburcu-dev)
# libhiredis-dev, redis-server and redis-tools (redis-cli, which makes the
# test clusters): the redis-strict baseline of bench/procs, and the Redis
# tier's tests.  The bindings (bindings/) and
# the servers their tests start: python3-dev, gunicorn and python3-uvicorn
# (workers spawned, not forked); for the Python package: python3-build and
# python3-venv (the wheel, installed into a venv), python3-mypy (stubtest
# checks the type stubs), python3-fastapi and python3-httpx (the ASGI
# middleware and its test client), python3-flask and python3-django (the
# per-route limits), python3-flask-limiter and python3-limits (the
# tkshm:// storage); apache2-dev
# (apxs) and apache2; php8.2-dev (php-config), php8.2-cli, php8.2-fpm and
# libfcgi-bin (cgi-fcgi, a FastCGI client); php-pear (pecl: the PECL
# package of bindings/php, made and validated by its test php_phpize);
# php-symfony-rate-limiter (Symfony's RateLimiter, which bindings/php/lib's
# adapter implements and php_symfony compares it with);
# ruby-dev (Ruby's headers and mkmf: the gem's C extension, bindings/ruby),
# ruby-minitest (its tests), ruby-rack and ruby-rack-attack (the middleware
# and the Rack::Attack store), ruby-activesupport (the MemoryStore the
# store is compared with), puma and unicorn (the prefork servers its tests
# start), ruby-sinatra (its example application);
# nginx-dev (nginx's headers,
# configure and the binary's configure flags, for the dynamic module) and
# nginx-light (the nginx its tests start).  scripts/lint.sh: clang-tidy,
# cppcheck and valgrind.  wrk: the load through an Apache graceful restart
# (bindings/apache/tests/test_change.py).  libsystemd-dev: tkshm-syncd's
# readiness notification (sd_notify; test redis_syncd_service);
# libmicrohttpd-dev: the HTTP server of `tkshm-inspect serve`; prometheus:
# its promtool checks the scrapes and contrib/'s alerting rules
# (tool_inspect_exporter, apache_status).  The Debian packages (debian/,
# built, linted, installed and purged by tests/install's debian_packages):
# debhelper and dpkg-dev (dh, dpkg-buildpackage), dh-python and dh-php
# (the Python and PHP helpers; dh_apache2 and dh_nginx come with
# apache2-dev and nginx-dev), lintian; man-db and groff-base (man -w, and
# groff -ww over the generated man3 pages: tkshm_man3).
TEST_PKGS=("${DEMO_PKGS[@]}" libcmocka-dev libcjson-dev clang
	libclang-rt-14-dev binutils python3 procps spin libhiredis-dev
	redis-server redis-tools python3-dev gunicorn python3-uvicorn
	python3-build python3-venv python3-mypy python3-fastapi python3-httpx
	python3-flask python3-django python3-flask-limiter python3-limits
	apache2 apache2-dev php8.2-cli
	php8.2-dev php8.2-fpm libfcgi-bin php-pear php-symfony-rate-limiter
	ruby-dev ruby-minitest ruby-rack ruby-rack-attack ruby-activesupport
	puma unicorn ruby-sinatra
	nginx-dev nginx-light
	clang-tidy cppcheck valgrind wrk
	libsystemd-dev libmicrohttpd-dev prometheus
	debhelper dpkg-dev dh-python dh-php lintian man-db groff-base)
# The peers the benchmarks measure beside tkshm: nginx (limit_req) driven
# by wrk, ab, and APCu and Symfony's RateLimiter for the PHP loop;
# ruby-redis (Rack::Attack over redis-server, for the Ruby loop).
BENCH_PKGS=("${TEST_PKGS[@]}" libbenchmark-dev g++ gnuplot-nox nginx-light
	wrk apache2-utils php-apcu php-symfony-rate-limiter
	php-symfony-cache php-symfony-lock ruby-redis)
# -----------------------------------------------------------------------------

usage() {
	echo "usage: $0 [demo|test|bench]" >&2
	exit 2
}

set_name=${1:-demo}
case "$set_name" in
demo) pkgs=("${DEMO_PKGS[@]}") ;;
test) pkgs=("${TEST_PKGS[@]}") ;;
bench) pkgs=("${BENCH_PKGS[@]}") ;;
-h | --help) usage ;;
*)
	echo "install-deps: unknown set '$set_name'" >&2
	usage
	;;
esac
[[ $# -le 1 ]] || usage

if ! command -v dpkg-query >/dev/null 2>&1; then
	echo "install-deps: not a Debian system (no dpkg-query); make sure" \
		"these are installed: ${pkgs[*]}" >&2
	exit 0
fi

missing=()
for pkg in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
		grep -q 'install ok installed'; then
		missing+=("$pkg")
	fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
	echo "install-deps: all ${#pkgs[@]} packages of set '$set_name' are installed"
	exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
	as_root=()
elif command -v sudo >/dev/null 2>&1; then
	as_root=(sudo --preserve-env=DEBIAN_FRONTEND)
else
	echo "install-deps: missing packages (${missing[*]}), and this is not" \
		"root and sudo is absent: install them as root" >&2
	exit 1
fi

echo "install-deps: installing ${missing[*]}"
"${as_root[@]}" apt-get update
"${as_root[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
