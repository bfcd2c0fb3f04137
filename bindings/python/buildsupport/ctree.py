"""The C library's source tree, as setup.py compiles it into the module.

It is found in one of two places: inside the repository, two levels up
(bindings/python/../../src and ../../include), or in an sdist, where
commands.Sdist copied it to VENDORED (the sdist has no repository around
it).  The copy comes first: an unpacked sdist must never pick up another
checkout that happens to sit two levels above it.
"""

import glob
import os
import re
import shutil

# Where an sdist carries the library (relative to setup.py's directory).
VENDORED = "libtkshm"

# The folders the library's build reads (sources, private headers, Lua
# scripts; public headers).
TREE_DIRS = ("src", "include")


def find(here):
    """The absolute path of the C tree that setup.py in `here` builds:
    `here`/libtkshm in an sdist, else the repository's root."""
    for root in (os.path.join(here, VENDORED),
                 os.path.join(here, os.pardir, os.pardir)):
        if os.path.isfile(os.path.join(root, "include", "tkshm.h")) and \
                os.path.isdir(os.path.join(root, "src")):
            return os.path.realpath(root)
    raise RuntimeError(
        "tkshm's C sources are missing: build from bindings/python inside "
        "the repository (which has src/ and include/ two levels up) or "
        "from an sdist (which carries them in %s/)" % VENDORED)


def version(root):
    """"MAJOR.MINOR.PATCH" from include/tkshm.h's TKSHM_VERSION_* macros,
    the one place the version is written (tkshm_version() returns the
    same; the C unit tests check that)."""
    with open(os.path.join(root, "include", "tkshm.h"),
              encoding="utf-8") as f:
        text = f.read()
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(r"^#define TKSHM_VERSION_%s (\d+)$" % part, text, re.M)
        if not m:
            raise RuntimeError("include/tkshm.h defines no "
                               "TKSHM_VERSION_%s" % part)
        parts.append(m.group(1))
    return ".".join(parts)


def sources(root, redis):
    """The library's C files, as CMakeLists.txt lists TKSHM_SOURCES:
    src/*/*.c, without src/redis/ and src/agent/ unless the Redis tier is
    built, and never src/shm/crash_point.c (a debug build's,
    TKSHM_CRASH_POINTS)."""
    found = []
    for path in sorted(glob.glob(os.path.join(root, "src", "*", "*.c"))):
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        if rel == "src/shm/crash_point.c":
            continue
        if rel.startswith(("src/redis/", "src/agent/")) and not redis:
            continue
        found.append(path)
    if not found:
        raise RuntimeError("no library sources under %s/src/*/" % root)
    return found


def lua_arrays(root):
    """{name: bytes} of each Redis script as the library embeds it
    (cmake/embed-lua.cmake: "local SCRIPT_NAME = '<name>'", then
    src/redis/lua/prelude.lib, then the script byte for byte)."""
    lua_dir = os.path.join(root, "src", "redis", "lua")
    with open(os.path.join(lua_dir, "prelude.lib"), "rb") as f:
        prelude = f.read()
    if not prelude.endswith(b"\n"):
        raise RuntimeError("src/redis/lua/prelude.lib must end with a "
                           "newline")
    scripts = {}
    for path in sorted(glob.glob(os.path.join(lua_dir, "*.lua"))):
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path, "rb") as f:
            text = f.read()
        head = ("local SCRIPT_NAME = '%s'\n" % name).encode()
        scripts[name] = head + prelude + text
    return scripts


def write_lua_c(root, out):
    """Writes `out`, the C file defining `const char tk_lua_<name>[]` for
    every script (NUL-terminated), as cmake/embed-lua.cmake does for the
    CMake build; the ctest python_package compares the two."""
    lines = ["/* Generated from src/redis/lua/ by "
             "bindings/python/buildsupport/ctree.py. */\n"]
    for name, data in lua_arrays(root).items():
        body = "".join("0x%02x," % b for b in data)
        lines.append("const char tk_lua_%s[] = {%s0x00};\n" % (name, body))
    with open(out, "w", encoding="ascii") as f:
        f.writelines(lines)


def copy_tree(root, dest):
    """Copies the folders the build reads (src/, include/) from `root`
    to `dest` (an sdist's VENDORED folder)."""
    for name in TREE_DIRS:
        shutil.copytree(os.path.join(root, name), os.path.join(dest, name),
                        ignore=shutil.ignore_patterns("__pycache__", "*.o"))
