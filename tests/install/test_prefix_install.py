#!/usr/bin/env python3
"""install_prefix: `cmake --install BUILD --prefix P` puts every part under
P and nothing elsewhere, each component alone installs its own files, and
the README's recipes work from P: a C program with PKG_CONFIG_PATH and
with find_package(tkshm) (CMAKE_PREFIX_PATH), `import tkshm` with
PYTHONPATH, PHP with the extension's path, the Apache and nginx load
lines naming P.

    test_prefix_install.py BUILD_DIR SOURCE_DIR

Components are those of the top-level CMakeLists.txt; a part the build
skipped (no apxs, no php-config, ...) is not asked for.
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile

COMPONENT_FILES = {  # component -> files it must install (globs under P)
    "lib": ["lib*/libtkshm.so.0*"],
    "dev": ["include/tkshm.h", "lib*/libtkshm.a", "lib*/libtkshm.so",
            "lib*/pkgconfig/tkshm.pc", "lib*/cmake/tkshm/tkshmConfig.cmake",
            "share/man/man3/tkshm_open.3"],
    "tools": ["bin/tkshm-inspect", "share/man/man1/tkshm-inspect.1",
              "lib/systemd/system/tkshm-syncd.service",
              "lib/tmpfiles.d/tkshm.conf"],
    "python": ["lib/python3*/site-packages/tkshm/__init__.py",
               "lib/python3*/site-packages/tkshm/_tkshm*.so"],
    "php": ["lib/php/*/tkshm.so", "etc/php/*/mods-available/tkshm.ini"],
    "apache": ["lib/apache2/modules/mod_tkshm.so",
               "etc/apache2/mods-available/tkshm.load",
               "etc/apache2/mods-available/tkshm.conf"],
    "nginx": ["lib/nginx/modules/ngx_http_tkshm_module.so",
              "share/nginx/modules-available/mod-http-tkshm.conf"],
}
EXAMPLE = r"""
#include <stdio.h>
#include <tkshm.h>
int main(void)
{
	tkshm_policy p;
	tkshm_options o = TKSHM_OPTIONS_INIT;
	tkshm_table *t = NULL;
	tkshm_decision d;
	int rc = tkshm_policy_parse("gcra:limit=1,periodMs=60000,burst=1", &p,
				    NULL, 0);
	o.policy = &p;
	if (rc == TKSHM_OK)
		rc = tkshm_open(NULL, &o, &t);
	if (rc == TKSHM_OK)
		rc = tkshm_check(t, "k", 1, 1, &d);
	printf("tkshm %s: %s\n", tkshm_version(), tkshm_strerror(rc));
	tkshm_close(t);
	return rc == TKSHM_OK && d.allowed ? 0 : 1;
}
"""


class Failed(Exception):
    pass


def run(cmd, env=None, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run(cmd, env=e, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise Failed("%s: exit %d\n%s%s" % (" ".join(cmd), r.returncode,
                                             r.stdout, r.stderr))
    return r.stdout


def install(build, prefix, component=None):
    """Files the install wrote (its manifest), all of which must be under
    prefix."""
    cmd = ["cmake", "--install", build, "--prefix", prefix]
    if component:
        cmd += ["--component", component]
    out = run(cmd)
    files = [l.split(": ", 1)[1] for l in out.splitlines()
             if l.startswith(("-- Installing: ", "-- Up-to-date: "))]
    outside = [f for f in files if not f.startswith(prefix + "/")]
    if outside:
        raise Failed("%s wrote outside %s: %s" % (component or "install",
                                                   prefix, outside))
    return files


def components_built(build):
    """The components this build has: those named in its install scripts."""
    text = ""
    for path in glob.glob(os.path.join(build, "**", "cmake_install.cmake"),
                          recursive=True):
        text += open(path).read()
    return [c for c in COMPONENT_FILES
            if 'CMAKE_INSTALL_COMPONENT STREQUAL "%s"' % c in text]


def main():
    build, source = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="tkshm-prefix.")
    try:
        comps = components_built(build)
        for c in comps:  # each component alone: its files, no other's
            p = os.path.join(tmp, "only-" + c)
            install(build, p, c)
            for pattern in COMPONENT_FILES[c]:
                if not glob.glob(os.path.join(p, pattern)):
                    raise Failed("--component %s installed no %s" % (c, pattern))
            for other in comps:
                for pattern in COMPONENT_FILES[other] if other != c else []:
                    hit = glob.glob(os.path.join(p, pattern))
                    if hit:
                        raise Failed("--component %s installed %s's %s"
                                     % (c, other, hit[0]))
        print("components alone: %s" % " ".join(comps))

        p = os.path.join(tmp, "all")
        files = install(build, p)
        print("install --prefix: %d files, all under the prefix" % len(files))
        pc = glob.glob(os.path.join(p, "lib*", "pkgconfig"))[0]
        libdir = os.path.dirname(pc)
        src = os.path.join(tmp, "example.c")
        with open(src, "w") as f:
            f.write(EXAMPLE)
        flags = run(["pkg-config", "--cflags", "--libs", "tkshm"],
                    env={"PKG_CONFIG_PATH": pc}).split()
        exe = os.path.join(tmp, "example")
        run(["cc", "-std=c11", "-o", exe, src] + flags)
        print("pkg-config:", run([exe], env={"LD_LIBRARY_PATH": libdir}).strip())

        cm = os.path.join(tmp, "cm")
        os.mkdir(cm)
        shutil.copy(src, cm)
        with open(os.path.join(cm, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.25)\nproject(ex C)\n"
                    "find_package(tkshm 0.1 REQUIRED)\n"
                    "add_executable(ex example.c)\n"
                    "target_link_libraries(ex PRIVATE tkshm::tkshm_static)\n")
        run(["cmake", "-S", cm, "-B", os.path.join(cm, "b"),
             "-DCMAKE_PREFIX_PATH=" + p])
        run(["cmake", "--build", os.path.join(cm, "b")])
        print("find_package:", run([os.path.join(cm, "b", "ex")]).strip())

        if "python" in comps:
            site = glob.glob(os.path.join(p, "lib", "python3*", "site-packages"))[0]
            out = run(["/usr/bin/python3", "-c",
                       "import tkshm; print(tkshm.__file__)"],
                      env={"PYTHONPATH": site})
            if not out.startswith(site):
                raise Failed("import tkshm found %s, not %s" % (out, site))
            print("python: %s" % out.strip())
        if "php" in comps:
            so = glob.glob(os.path.join(p, "lib", "php", "*", "tkshm.so"))[0]
            out = run(["php", "-n", "-d", "extension=" + so, "-m"])
            if "tkshm" not in out.split():
                raise Failed("php -m with %s lists no tkshm" % so)
            print("php: -d extension=%s" % so)
        for c, conf, so in (
                ("apache", "etc/apache2/mods-available/tkshm.load",
                 "lib/apache2/modules/mod_tkshm.so"),
                ("nginx", "share/nginx/modules-available/mod-http-tkshm.conf",
                 "lib/nginx/modules/ngx_http_tkshm_module.so")):
            if c in comps:
                text = open(os.path.join(p, conf)).read()
                if os.path.join(p, so) not in text:
                    raise Failed("%s names no %s: %r" % (conf, so, text))
                print("%s: %s" % (c, text.strip()))
        unit = open(os.path.join(p, "lib/systemd/system/tkshm-syncd.service")).read()
        if "ExecStart=%s/sbin/tkshm-syncd -f" % p not in unit:
            raise Failed("tkshm-syncd.service does not start %s/sbin/tkshm-syncd" % p)
    except Failed as e:
        print("FAIL: %s" % e)
        return 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("install_prefix: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
