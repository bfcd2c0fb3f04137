"""The installed wheel (ctest python_package, in the venv of the fixture
python_wheel: tests/build_wheel.py): where tkshm is imported from, its
version, the files it ships, what its extension exports and links, and
that it embeds the Redis scripts as the CMake build does.

Run as a script by the environment's interpreter; the repository (for the
sources compared) is found from this file, the CMake build (for the
scripts it embedded) from $TKSHM_BUILD_DIR."""

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import unittest

import tkshm
from tkshm import _tkshm

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.dirname(HERE)  # bindings/python
REPO = os.path.dirname(os.path.dirname(PACKAGE_DIR))
INSTALLED = os.path.dirname(os.path.realpath(tkshm.__file__))


def load_ctree():
    """bindings/python/buildsupport/ctree.py, loaded by its path (putting
    bindings/python on sys.path would shadow the installed tkshm)."""
    path = os.path.join(PACKAGE_DIR, "buildsupport", "ctree.py")
    spec = importlib.util.spec_from_file_location("tkshm_ctree", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def c_arrays(text):
    """{name: bytes} of the `const char tk_lua_<name>[] = {0x..,}` in a
    generated C file."""
    return {m.group(1): bytes(int(x, 16) for x in
                              re.findall(r"0x([0-9a-f]{2})", m.group(2)))
            for m in re.finditer(r"const char tk_lua_(\w+)\[\] = "
                                 r"\{([^}]*)\};", text)}


class InstalledTest(unittest.TestCase):
    def test_imported_from_this_venv(self):
        self.assertNotEqual(sys.prefix, sys.base_prefix,
                            "not run in a virtual environment")
        site = os.path.realpath(sysconfig.get_paths()["platlib"])
        for module in (tkshm, _tkshm):
            where = os.path.realpath(module.__file__)
            self.assertTrue(where.startswith(site + os.sep),
                            "%s from %s, not %s" % (module.__name__, where,
                                                    site))

    def test_version_is_the_library_version(self):
        """The metadata's version is read from include/tkshm.h; the
        library's tkshm_version() must say the same."""
        self.assertEqual(importlib.metadata.version("tkshm"),
                         _tkshm.library_version)
        self.assertEqual(tkshm.__version__, _tkshm.library_version)
        self.assertEqual(load_ctree().version(REPO), _tkshm.library_version)

    def test_ships_every_module_and_the_type_information(self):
        source = sorted(n for n in os.listdir(os.path.join(PACKAGE_DIR,
                                                           "tkshm"))
                        if n.endswith((".py", ".pyi")) or n == "py.typed")
        shipped = sorted(n for n in os.listdir(INSTALLED)
                         if n.endswith((".py", ".pyi")) or n == "py.typed")
        self.assertEqual(shipped, source)
        self.assertIn("_tkshm.pyi", shipped)
        self.assertIn("py.typed", shipped)


class ExtensionTest(unittest.TestCase):
    """The compiled module, as the linker and the dynamic loader see it."""

    def tool(self, name):
        path = shutil.which(name)
        if not path:
            self.skipTest("%s is not installed (binutils)" % name)
        return path

    def test_exports_only_its_init_function(self):
        """The library inside is hidden: another libtkshm loaded into the
        process can neither see nor interpose on it."""
        out = subprocess.run([self.tool("nm"), "-D", "--defined-only",
                              _tkshm.__file__], capture_output=True,
                             text=True, check=True).stdout
        names = sorted(line.split()[-1] for line in out.splitlines())
        self.assertEqual(names, ["PyInit__tkshm"])

    def test_needs_no_libtkshm(self):
        out = subprocess.run([self.tool("readelf"), "-d", _tkshm.__file__],
                             capture_output=True, text=True,
                             check=True).stdout
        needed = re.findall(r"\(NEEDED\).*\[(.*)\]", out)
        self.assertTrue(needed)
        self.assertFalse([n for n in needed if "tkshm" in n], needed)

    def test_inlines_its_16_byte_cas(self):
        """cmake/check-no-libatomic.cmake, as on libtkshm.so: setup.py
        must compile with -mcx16 as CMake does."""
        cmake = self.tool("cmake")
        r = subprocess.run([cmake, "-DLIB=" + _tkshm.__file__, "-P",
                            os.path.join(REPO, "cmake",
                                         "check-no-libatomic.cmake")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("16-byte CAS inlined", r.stdout + r.stderr)

    def test_redis_scripts_embedded_as_cmake_does(self):
        """setup.py embeds src/redis/lua/ itself (no cmake needed): byte
        for byte what cmake/embed-lua.cmake wrote for this build."""
        build = os.environ.get("TKSHM_BUILD_DIR", "")
        cmake_c = os.path.join(build, "lua_sources.c")
        if not build or not os.path.exists(cmake_c):
            self.skipTest("no CMake build with the Redis tier "
                          "($TKSHM_BUILD_DIR/lua_sources.c)")
        with open(cmake_c, encoding="ascii") as f:
            want = c_arrays(f.read())
        ctree = load_ctree()
        self.assertTrue(want)
        # The C arrays end with the NUL that ends each string.
        self.assertEqual({name: script + b"\0" for name, script in
                          ctree.lua_arrays(REPO).items()}, want)
        fd, out = tempfile.mkstemp(suffix=".c")
        os.close(fd)
        try:
            ctree.write_lua_c(REPO, out)
            with open(out, encoding="ascii") as f:
                self.assertEqual(c_arrays(f.read()), want)
        finally:
            os.unlink(out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
