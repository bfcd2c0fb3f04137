#!/usr/bin/env bash
# The Debian packages, as an administrator gets them: built from a copy of
# the source tree (debian/, dpkg-buildpackage), checked by lintian (no
# error), installed into this machine with `apt-get install ./*.deb`, each
# part tried against the installed files only, then purged, leaving
# nothing behind.
#
#   tests/install/test_debian_packages.sh SOURCE_DIR
#
# It installs into the machine (ctest label `serial`), and it never skips:
# a machine where the packages cannot be built or installed (tools
# missing, a package of ours already installed, apt's lock held too long,
# a dependency apt cannot get) fails, saying why.  Prints the packages'
# sizes, lintian's verdict and each smoke's output, for the release notes.
set -euo pipefail

src=${1:?usage: $0 SOURCE_DIR}
src=$(cd "$src" && pwd)
PACKAGES=(libtkshm0 libtkshm-dev tkshm-tools libapache2-mod-tkshm
	php8.2-tkshm python3-tkshm libnginx-mod-http-tkshm)
# Where a stray file of ours could be left: compared before and after.
WATCHED=(/etc /usr /lib /var/lib/php /var/lib/dpkg/info)
APT=(apt-get -y -q -o DPkg::Lock::Timeout=300 -o APT::Sandbox::User=root)
export DEBIAN_FRONTEND=noninteractive

fail() {
	echo "FAIL: $*" >&2
	exit 1
}
step() {
	printf '\n== %s (%ds)\n' "$*" "$SECONDS"
}

installed_ours() {
	local p
	for p in "${PACKAGES[@]}"; do
		if dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null |
			grep -q '^[a-z]i'; then
			echo "$p"
		fi
	done
}

stray_files() {
	find "${WATCHED[@]}" -xdev \( -iname '*tkshm*' \) 2>/dev/null | sort
}

# --- the machine can do it ---------------------------------------------------
[[ $(id -u) -eq 0 ]] || fail "must run as root: it installs packages"
for tool in dpkg-buildpackage dh lintian apt-get dpkg-deb pkg-config cc man \
	/usr/bin/python3 php apache2ctl a2enmod nginx cmake; do
	command -v "$tool" >/dev/null ||
		fail "$tool is missing (scripts/install-deps.sh test installs it)"
done
already=$(installed_ours)
[[ -z $already ]] || fail "already installed, not by this test:" \
	"${already//$'\n'/ }" "(apt-get purge them first)"

tmp=$(mktemp -d /tmp/tkshm-debs.XXXXXX)
purged=yes
cleanup() {
	if [[ $purged != yes ]]; then
		"${APT[@]}" purge "${PACKAGES[@]}" >/dev/null 2>&1 || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
# apt reads the .deb files as its sandbox user when it has one; keep the
# directory readable.
chmod 0755 "$tmp"
before=$(stray_files)

# --- build --------------------------------------------------------------------
step "copying the source tree (no build directories, no VCS)"
mkdir "$tmp/tkshm"
tar -C "$src" --exclude-vcs --exclude=./build --exclude='./obj-*' \
	--exclude=./debian/tmp --exclude='./debian/.debhelper' -cf - . |
	tar -C "$tmp/tkshm" -xf -

step "dpkg-buildpackage -us -uc -b (nocheck, noddebs, parallel=2)"
t0=$SECONDS
if ! (cd "$tmp/tkshm" && DEB_BUILD_OPTIONS="nocheck noddebs parallel=2" \
	dpkg-buildpackage -us -uc -b >"$tmp/build.log" 2>&1); then
	tail -n 40 "$tmp/build.log" >&2
	fail "dpkg-buildpackage failed"
fi
echo "built in $((SECONDS - t0))s"
debs=()
for p in "${PACKAGES[@]}"; do
	f=$(ls "$tmp"/"${p}"_*.deb 2>/dev/null || true)
	[[ -n $f ]] || fail "no package $p was built"
	debs+=("$f")
done

step "package sizes (Installed-Size, .deb size)"
for f in "${debs[@]}"; do
	printf '%-28s %6s KiB installed  %7s bytes .deb\n' \
		"$(dpkg-deb -f "$f" Package)" "$(dpkg-deb -f "$f" Installed-Size)" \
		"$(stat -c %s "$f")"
done

step "lintian (errors fail)"
lintian_rc=0
(cd "$tmp" && lintian --display-info --tag-display-limit 0 \
	--fail-on error ./*.changes) >"$tmp/lintian.log" 2>&1 || lintian_rc=$?
grep -v '^running with root privileges' "$tmp/lintian.log" || true
printf 'lintian: %d errors, %d warnings, %d info\n' \
	"$(grep -c '^E: ' "$tmp/lintian.log" || true)" \
	"$(grep -c '^W: ' "$tmp/lintian.log" || true)" \
	"$(grep -c '^I: ' "$tmp/lintian.log" || true)"
[[ $lintian_rc -eq 0 ]] || fail "lintian reported errors (exit $lintian_rc)"

# --- install ------------------------------------------------------------------
step "apt-get install ./*.deb"
purged=no
if ! "${APT[@]}" install --no-install-recommends "${debs[@]}" \
	>"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log" >&2
	fail "apt-get install of the packages failed"
fi
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${db:Status-Abbrev}' "$p" | grep -q '^ii' ||
		fail "$p is not installed after apt-get install"
done
lists=$(dpkg -L "${PACKAGES[@]}")

# --- smokes, against the installed files only --------------------------------
run_dir="$tmp/run"
mkdir "$run_dir"
cd "$run_dir"

step "C: an example built with pkg-config"
cat >example.c <<'EOF'
#include <stdio.h>
#include <tkshm.h>

int main(void)
{
	tkshm_policy p;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;
	tkshm_decision d;
	int allowed = 0, rc;

	rc = tkshm_policy_parse("gcra:limit=3,periodMs=60000,burst=3", &p,
				NULL, 0);
	o.policy = &p;
	o.flags |= TKSHM_O_CREATE;
	if (rc == TKSHM_OK)
		rc = tkshm_open(NULL, &o, &t);
	for (int i = 0; rc == TKSHM_OK && i < 5; i++) {
		rc = tkshm_check(t, "client", 6, 1, &d);
		allowed += rc == TKSHM_OK && d.allowed;
	}
	printf("libtkshm %s: %d of 5 allowed (%s)\n", tkshm_version(), allowed,
	       tkshm_strerror(rc));
	tkshm_close(t);
	return rc == TKSHM_OK && allowed == 3 ? 0 : 1;
}
EOF
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror -o example example.c \
	$(pkg-config --cflags tkshm) $(pkg-config --libs tkshm)
ldd ./example | grep -E 'libtkshm\.so\.0 => /(usr/)?lib/' ||
	fail "example is not linked with the installed libtkshm.so.0"
./example || fail "the C example failed"

step "C: find_package(tkshm) and tkshm::tkshm"
mkdir cm
cp example.c cm/
cat >cm/CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.25)
project(example C)
find_package(tkshm 0.1 REQUIRED)
add_executable(example example.c)
target_link_libraries(example PRIVATE tkshm::tkshm)
EOF
cmake -S cm -B cm/build -DCMAKE_BUILD_TYPE=Release >cm.log 2>&1 ||
	{ cat cm.log; fail "find_package(tkshm) failed"; }
cmake --build cm/build >>cm.log 2>&1 || { cat cm.log; fail "cmake build"; }
cm/build/example || fail "the CMake example failed"

step "man pages"
for page in tkshm tkshm_open tkshm_check tkshm_strerror; do
	f=$(man -w "$page" 2>/dev/null) || fail "man -w $page: no page"
	echo "$page(3): $f"
	[[ $f == /usr/share/man/man3/* ]] || fail "$page(3) is not in man3"
done
man -w tkshm-inspect tkshm-syncd

step "Python: import tkshm (Debian's python3)"
/usr/bin/python3 -I -c 'import tkshm, sys
print("tkshm from", tkshm.__file__)
t = tkshm.Table(None, "gcra:limit=2,periodMs=60000,burst=2")
n = sum(t.check("client").allowed for _ in range(4))
print("python3: %d of 4 allowed" % n)
sys.exit(0 if n == 2 and tkshm.__file__.startswith("/usr/lib/python3/dist-packages/") else 1)' ||
	fail "python3 -c 'import tkshm' failed"

step "PHP: php -m (phpenmod by the package)"
php -m | grep -x tkshm || fail "php -m does not list tkshm"
# shellcheck disable=SC2016 # PHP's variables, not the shell's
php -r '$t = new Tkshm\Table($argv[1], "gcra:limit=1,periodMs=60000,burst=1");
$a = $t->check("client")->allowed; $b = $t->check("client")->allowed;
echo "php: first ", var_export($a, true), ", second ", var_export($b, true), "\n";
exit($a && !$b ? 0 : 1);' "$run_dir/php-table" ||
	fail "the PHP extension's check failed"

step "Apache: a2enmod tkshm, apache2ctl -M"
grep -v '^\s*#' /etc/apache2/mods-available/tkshm.load
a2enmod tkshm
apache2ctl -M 2>&1 | grep tkshm_module ||
	fail "apache2ctl -M does not list tkshm_module after a2enmod tkshm"
apache2ctl -t -D DUMP_MODULES >/dev/null 2>&1 ||
	fail "apache2ctl -t fails with the module and its tkshm.conf"

step "nginx: the module's snippet in modules-enabled, nginx -t"
ngx_link=/etc/nginx/modules-enabled/50-mod-http-tkshm.conf
[[ -L $ngx_link ]] ||
	fail "the package did not enable its module: no $ngx_link"
echo "$ngx_link -> $(readlink "$ngx_link")"
mkdir ngx
# The package's enabled snippet (load_module modules/..., relative to
# nginx's prefix: no -p), and a directive only the module knows.
cat >ngx/nginx.conf <<EOF
include $ngx_link;
pid $run_dir/ngx/nginx.pid;
error_log $run_dir/ngx/error.log;
events {}
http {
    tkshm_table smoke file=$run_dir/ngx/smoke policy=20/second slots=64;
}
EOF
nginx -t -c "$run_dir/ngx/nginx.conf" 2>&1 ||
	fail "nginx -t with the installed module failed"

step "tkshm-syncd --check on a sample configuration; the unit, /run/tkshm"
tkshm-inspect create "$run_dir/api" \
	--policy 'gcra:limit=1000,periodMs=1000;mode=lease,prefix=api'
printf 'table = %s\nredis_host = 127.0.0.1\nredis_port = 6379\n' \
	"$run_dir/api" >syncd.conf
chmod 0600 syncd.conf
tkshm-syncd -c "$run_dir/syncd.conf" --check || fail "tkshm-syncd --check"
# The unit's Type=notify needs sd_notify: without libsystemd the daemon
# would never say READY=1 and systemd would time it out.
ldd /usr/sbin/tkshm-syncd | grep -q 'libsystemd\.so' ||
	fail "the packaged tkshm-syncd is built without libsystemd (Type=notify)"
tkshm-inspect serve --help >/dev/null ||
	fail "the packaged tkshm-inspect has no serve command (libmicrohttpd)"
grep -E '^(Type|ExecStart|ExecReload)=' /lib/systemd/system/tkshm-syncd.service
if command -v systemd-analyze >/dev/null; then
	systemd-analyze verify /lib/systemd/system/tkshm-syncd.service ||
		fail "systemd-analyze verify tkshm-syncd.service"
fi
if command -v systemd-tmpfiles >/dev/null; then
	stat -c '/run/tkshm: %A %U:%G' /run/tkshm
	[[ $(stat -c '%a %U %G' /run/tkshm) == '770 root www-data' ]] ||
		fail "/run/tkshm was not made by tmpfiles.d as 0770 root:www-data"
else
	echo "(no systemd-tmpfiles here: /run/tkshm is made at boot)"
fi

# --- purge --------------------------------------------------------------------
cd "$tmp"
step "apt-get purge"
"${APT[@]}" purge "${PACKAGES[@]}" >"$tmp/purge.log" 2>&1 ||
	{ cat "$tmp/purge.log" >&2; fail "apt-get purge failed"; }
purged=yes
left=$(installed_ours)
[[ -z $left ]] || fail "still installed after purge: $left"
for p in "${PACKAGES[@]}"; do
	! dpkg-query -W "$p" >/dev/null 2>&1 || fail "$p still known to dpkg"
done
# Every file the packages listed is gone (directories may be shared).
while IFS= read -r f; do
	if [[ -e $f && ! -d $f ]]; then
		fail "left behind: $f"
	fi
done <<<"$lists"
# And nothing of ours appeared anywhere else: enabled links, PHP's state,
# byte-compiled Python, /run/tkshm.
after=$(stray_files)
new=$(comm -13 <(echo "$before") <(echo "$after"))
[[ -z $new ]] || fail "left behind after purge: $new"
[[ ! -e /run/tkshm ]] || fail "left behind after purge: /run/tkshm"
echo "purged: no file of the ${#PACKAGES[@]} packages is left"
echo "debian packages: ok (${SECONDS}s)"
