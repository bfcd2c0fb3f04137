"""The extension built the way PHP extensions are shipped (issue 23): from
its PECL package, with phpize, ./configure, make, in a temporary directory
outside the source tree, by both routes config.m4 offers:

- bundled: ./configure --enable-tkshm-bundled, the C library compiled in
  from the package's libtkshm/ (the Redis tier when pkg-config finds
  hiredis); tkshm.so exports get_module only and needs no libtkshm; its
  embedded Redis scripts are the CMake build's (lua_sources.c); make
  install INSTALL_ROOT=... puts it in the extension directory;
- installed: libtkshm installed from the CMake build (`cmake --install`
  into a staging DESTDIR, moved to a temporary prefix), found through
  PKG_CONFIG_PATH (--with-tkshm) and under the prefix (--with-tkshm=DIR):
  tkshm.so needs libtkshm.so.0, found through its RUNPATH;
- bundled with --disable-tkshm-redis: no hiredis, Tkshm\\Redis throws
  ENOTSUP.

Every build compiles with -Wall -Wextra -Werror, and each tkshm.so runs
the unit scripts (tests/*_test.php, as the php_* tests run them: php -n
-d extension=<that tkshm.so>; redis_test.php may skip) and PHP's own
runner over tests/phpt/*.phpt (make test, NO_INTERACTION=1).  Before
that: package.xml lists exactly the package's files
(pecl-package.sh check); with pecl (php-pear) the package is the tgz that
`pecl package` makes, validated by `pecl package-validate`, else the tree
`pecl-package.sh stage` makes.

Run as a script (ctest php_phpize does) with TKSHM_PHP_CONFIG (php-config),
TKSHM_BUILD_DIR (the CMake build, for `cmake --install` and its
lua_sources.c) and TKSHM_CMAKE (cmake) in the environment.  Exits 77
(skipped) when php-config or phpize is missing; any failed step fails."""

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PHP_DIR = os.path.dirname(HERE)
SOURCE_DIR = os.path.dirname(os.path.dirname(PHP_DIR))
TESTS_DATA = os.path.join(SOURCE_DIR, "tests", "data")
UNIT_SCRIPTS = ["api", "decision", "table", "golden", "http", "redis"]
WARNINGS = "-O2 -g -Wall -Wextra -Werror"
JOBS = "-j2"
STEP_TIMEOUT = 180

START = time.monotonic()


class Failed(Exception):
    pass


def log(msg):
    print("[%5.1fs] %s" % (time.monotonic() - START, msg), flush=True)


def run(cmd, cwd, env=None, ok=(0,)):
    """Runs cmd; its output is printed only when it fails (or says why it
    failed).  Returns (returncode, output)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run(cmd, cwd=cwd, env=full_env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True,
                       timeout=STEP_TIMEOUT, check=False)
    if p.returncode not in ok:
        sys.stdout.write(p.stdout[-6000:])
        raise Failed("%s exited with %d (in %s)" % (" ".join(cmd),
                                                    p.returncode, cwd))
    return p.returncode, p.stdout


def tool(env_name, default_names):
    """The program the environment names, or the first on PATH."""
    path = os.environ.get(env_name, "")
    if path and os.access(path, os.X_OK):
        return path
    for name in default_names:
        found = shutil.which(name)
        if found:
            return found
    return None


def phpize_for(php_config):
    """The phpize of php-config's PHP: php-config8.2 -> phpize8.2 beside it."""
    d, name = os.path.split(php_config)
    candidate = os.path.join(d, name.replace("php-config", "phpize"))
    if os.access(candidate, os.X_OK):
        return candidate
    return shutil.which("phpize")


def package_tree(tmp):
    """The package's tree: the tgz of `pecl package`, validated and
    unpacked, or the staged tree without pecl."""
    script = os.path.join(PHP_DIR, "pecl-package.sh")
    run(["bash", script, "check"], tmp)
    log("package.xml lists the package's files (pecl-package.sh check)")
    if shutil.which("pecl"):
        out = os.path.join(tmp, "dist")
        run(["bash", script, out], tmp)
        tgz = [f for f in os.listdir(out) if f.endswith(".tgz")]
        if len(tgz) != 1:
            raise Failed("pecl-package.sh made %r" % tgz)
        tgz = os.path.join(out, tgz[0])
        _, text = run(["pecl", "package-validate", tgz], tmp)
        if not re.search(r"Validation: 0 error\(s\)", text):
            sys.stdout.write(text)
            raise Failed("pecl package-validate found errors")
        with tarfile.open(tgz) as t:
            if hasattr(tarfile, "data_filter"):
                t.extractall(os.path.join(tmp, "unpacked"), filter="data")
            else:
                t.extractall(os.path.join(tmp, "unpacked"))
        name = os.path.basename(tgz)[:-len(".tgz")]
        tree = os.path.join(tmp, "unpacked", name)
        log("PECL package %s: valid, unpacked" % os.path.basename(tgz))
    else:
        tree = os.path.join(tmp, "staged")
        run(["bash", script, "stage", tree], tmp)
        log("pecl not installed (php-pear): the staged package tree instead")
    for must in ("config.m4", "libtkshm/include/tkshm.h",
                 "libtkshm/src/api/table_api.c", "tests/phpt"):
        if not os.path.exists(os.path.join(tree, must)):
            raise Failed("the package has no %s" % must)
    return tree


def build(tree, dest, php_config, phpize, configure_args, env=None):
    """A copy of the package tree in dest, built with phpize; returns the
    configure output."""
    shutil.copytree(tree, dest)
    run([phpize], dest)
    _, conf = run(["./configure", "--with-php-config=" + php_config]
                  + configure_args + ["CFLAGS=" + WARNINGS], dest, env)
    run(["make", JOBS], dest)
    so = os.path.join(dest, "modules", "tkshm.so")
    if not os.path.isfile(so):
        raise Failed("make made no %s" % so)
    log("built %s (configure %s)" % (so, " ".join(configure_args)))
    return conf


def dynamic(so):
    """(exported symbols, NEEDED libraries, RUNPATH) of so."""
    _, syms = run(["nm", "-D", "--defined-only", so], "/")
    exported = sorted(line.split()[-1] for line in syms.splitlines()
                      if line.strip())
    _, dyn = run(["readelf", "-d", so], "/")
    needed = re.findall(r"\(NEEDED\).*\[(.*)\]", dyn)
    runpath = re.findall(r"\((?:RUNPATH|RPATH)\).*\[(.*)\]", dyn)
    return exported, needed, runpath


def check_exports(so):
    exported, needed, runpath = dynamic(so)
    if exported != ["get_module"]:
        raise Failed("%s exports %s (get_module only expected)" %
                     (so, exported))
    return needed, runpath


def php_tests(php, build_dir, so, what):
    """The unit scripts with this tkshm.so, then make test over the .phpt."""
    for name in UNIT_SCRIPTS:
        rc, out = run([php, "-n", "-d", "extension=" + so,
                       "-d", "display_errors=stderr", "-d",
                       "error_reporting=-1", "%s_test.php" % name,
                       TESTS_DATA], HERE, ok=(0, 77))
        last = out.strip().splitlines()[-1] if out.strip() else ""
        log("  %s %s_test.php: %s" % (what, name,
                                      "skipped" if rc == 77 else last))
    phpt = sorted(f for f in os.listdir(os.path.join(build_dir, "tests",
                                                     "phpt"))
                  if f.endswith(".phpt"))
    # Only this build's extension: no ini directory scanned (a tkshm.ini
    # enabled on the machine would load a second copy).
    _, out = run(["make", "test", "TESTS=tests/phpt"], build_dir,
                 env={"NO_INTERACTION": "1", "PHP_INI_SCAN_DIR": "",
                      "TEST_PHP_ARGS": ""})
    m = re.search(r"^Tests passed\s*:\s*(\d+)", out, re.M)
    if not m or int(m.group(1)) != len(phpt) or \
            re.search(r"^Tests failed\s*:\s*[1-9]", out, re.M):
        sys.stdout.write(out[-4000:])
        raise Failed("make test: not all of the %d .phpt passed" % len(phpt))
    log("  %s make test: %d of %d .phpt passed" % (what, len(phpt),
                                                  len(phpt)))


def bundled_route(tree, tmp, php_config, phpize, php):
    d = os.path.join(tmp, "bundled")
    conf = build(tree, d, php_config, phpize, ["--enable-tkshm-bundled"])
    so = os.path.join(d, "modules", "tkshm.so")
    m = re.search(r"for the libtkshm sources\.\.\. (.*)$", conf, re.M)
    if not m or os.path.realpath(m.group(1)) != \
            os.path.realpath(os.path.join(d, "libtkshm")):
        raise Failed("configure did not take the package's libtkshm/ (%s)"
                     % (m.group(1) if m else "no libtkshm line"))
    needed, _ = check_exports(so)
    if any(n.startswith("libtkshm") for n in needed):
        raise Failed("the bundled tkshm.so needs %s" % needed)
    redis = re.search(r"compile the Redis tier\.\.\. yes", conf) is not None
    log("  bundled: exports get_module only, needs %s; Redis tier %s" %
        (" ".join(needed), "on" if redis else "off"))
    cmake_lua = os.path.join(os.environ.get("TKSHM_BUILD_DIR", ""),
                             "lua_sources.c")
    if redis and os.path.isfile(cmake_lua):
        with open(os.path.join(d, "bundled", "lua_sources.c")) as a, \
                open(cmake_lua) as b:
            if a.read().split("\n", 1)[1] != b.read().split("\n", 1)[1]:
                raise Failed("bundled/lua_sources.c differs from the CMake "
                             "build's lua_sources.c")
        log("  bundled: embedded Redis scripts identical to CMake's")
    root = os.path.join(tmp, "install-root")
    run(["make", "install", "INSTALL_ROOT=" + root], d)
    _, ext_dir = run([php_config, "--extension-dir"], d)
    installed = os.path.join(root, ext_dir.strip().lstrip("/"), "tkshm.so")
    if not os.path.isfile(installed):
        raise Failed("make install put no %s" % installed)
    log("  bundled: make install INSTALL_ROOT -> %s" % installed)
    php_tests(php, d, so, "bundled")


def bundled_without_redis(tree, tmp, php_config, phpize, php):
    """--disable-tkshm-redis: no hiredis linked, Tkshm\\Redis refuses."""
    d = os.path.join(tmp, "bundled-no-redis")
    conf = build(tree, d, php_config, phpize,
                 ["--enable-tkshm-bundled", "--disable-tkshm-redis"])
    if not re.search(r"compile the Redis tier\.\.\. no", conf):
        raise Failed("--disable-tkshm-redis: configure kept the Redis tier")
    so = os.path.join(d, "modules", "tkshm.so")
    needed, _ = check_exports(so)
    if any("hiredis" in n for n in needed):
        raise Failed("--disable-tkshm-redis: tkshm.so needs %s" % needed)
    _, out = run([php, "-n", "-d", "extension=" + so, "-r",
                  "try { new Tkshm\\Redis(); echo 'made'; } "
                  "catch (Tkshm\\Exception $e) { "
                  "echo $e->getCode() === Tkshm\\ENOTSUP ? 'ENOTSUP' "
                  ": $e->getCode(); }"], d)
    if out.strip() != "ENOTSUP":
        raise Failed("without the Redis tier, new Tkshm\\Redis() gave %r "
                     "(ENOTSUP expected)" % out)
    log("  no-redis: needs %s; new Tkshm\\Redis() throws ENOTSUP" %
        " ".join(needed))
    php_tests(php, d, so, "no-redis")


def install_prefix(tmp):
    """libtkshm installed from the CMake build under tmp/prefix: installed
    into a DESTDIR (the build also installs the PHP, Apache and nginx
    modules to absolute directories, which must not be touched), then the
    prefix moved out of it."""
    build_dir = os.environ.get("TKSHM_BUILD_DIR", "")
    if not os.path.isfile(os.path.join(build_dir, "cmake_install.cmake")):
        raise Failed("TKSHM_BUILD_DIR (%r) is no CMake build" % build_dir)
    cmake = os.environ.get("TKSHM_CMAKE") or shutil.which("cmake")
    prefix = os.path.join(tmp, "prefix")
    destdir = os.path.join(tmp, "destdir")
    run([cmake, "--install", build_dir, "--prefix", prefix], tmp,
        env={"DESTDIR": destdir})
    os.rename(destdir + prefix, prefix)
    shutil.rmtree(destdir)
    pc_dir = None
    for lib in ("lib", "lib64"):
        if os.path.isfile(os.path.join(prefix, lib, "pkgconfig", "tkshm.pc")):
            pc_dir = os.path.join(prefix, lib, "pkgconfig")
    if pc_dir is None:
        raise Failed("cmake --install made no tkshm.pc under %s" % prefix)
    log("libtkshm installed under %s (cmake --install)" % prefix)
    return prefix, pc_dir


def installed_route(tree, tmp, php_config, phpize, php):
    prefix, pc_dir = install_prefix(tmp)
    for name, args, env in (
            ("pkg-config", ["--with-tkshm"], {"PKG_CONFIG_PATH": pc_dir}),
            ("prefix", ["--with-tkshm=" + prefix], None)):
        d = os.path.join(tmp, "installed-" + name)
        conf = build(tree, d, php_config, phpize, args, env)
        so = os.path.join(d, "modules", "tkshm.so")
        needed, runpath = check_exports(so)
        libdir = os.path.join(prefix, "lib")
        if "libtkshm.so.0" not in needed or \
                not any(libdir in r.split(":") for r in runpath):
            raise Failed("%s needs %s with RUNPATH %s (libtkshm.so.0 from "
                         "%s expected)" % (so, needed, runpath, libdir))
        redis = re.search(r"checking for tkshm_redis_open\.\.\. yes", conf)
        log("  %s: needs libtkshm.so.0 (RUNPATH %s); Redis tier %s" %
            (name, " ".join(runpath), "on" if redis else "off"))
        php_tests(php, d, so, name)


def main():
    php_config = tool("TKSHM_PHP_CONFIG", ["php-config8.2", "php-config"])
    phpize = phpize_for(php_config) if php_config else None
    if not php_config or not phpize:
        print("php-config or phpize not found (install php8.2-dev): skipped")
        return 77
    _, php = run([php_config, "--php-binary"], "/")
    php = php.strip()
    tmp = tempfile.mkdtemp(prefix="tkshm-phpize-")
    ok = False
    try:
        log("phpize %s, php-config %s, in %s" % (phpize, php_config, tmp))
        tree = package_tree(tmp)
        bundled_route(tree, tmp, php_config, phpize, php)
        bundled_without_redis(tree, tmp, php_config, phpize, php)
        installed_route(tree, tmp, php_config, phpize, php)
        ok = True
    except (Failed, subprocess.TimeoutExpired) as e:
        print("FAILED: %s" % e)
    finally:
        if ok or not os.environ.get("TKSHM_KEEP_TMP"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept %s (TKSHM_KEEP_TMP)" % tmp)
    log("php_phpize: %s" % ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
