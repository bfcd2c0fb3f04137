"""The setuptools commands setup.py replaces, and where setuptools builds.

BuildExt compiles the C library's sources (ctree) into tkshm._tkshm with
the flags CMakeLists.txt gives them, so the wheel needs no libtkshm.
Sdist puts a copy of the library's src/ and include/ into the sdist, which
then builds with no repository around it.
"""

import atexit
import os
import platform
import re
import shutil
import tempfile

from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist
from setuptools.errors import PlatformError

from . import ctree, deps

# setup.py's directory (bindings/python, or an unpacked sdist).
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Decisions must be bit-identical to ThrottleKit's IEEE-754 double
# arithmetic: no fused multiply-add (-ffp-contract=off), no fast math.
# These come after the compiler's own flags and the user's CFLAGS.
COMMON_FLAGS = ["-std=c11", "-ffp-contract=off", "-fno-fast-math",
                "-fvisibility=hidden", "-Wall", "-Wextra"]

# Flags that would let the compiler reorder or fuse floating-point
# operations: refused wherever they come from (CFLAGS, Python's own).
FAST_MATH = re.compile(r"^(-ffast-math|-Ofast|-ffp-contract=(fast|on)|"
                       r"-funsafe-math-optimizations|-fassociative-math)$")


def c_flags():
    """The compile flags of the library and the module, as CMake's
    TKSHM_C_FLAGS (without -Werror: a user's compiler may warn where
    ours does not).  -mcx16 on x86: the 16-byte compare-and-swap is then
    inlined (lock cmpxchg16b), never a libatomic call, which could take a
    lock that other processes do not see."""
    flags = list(COMMON_FLAGS)
    if re.match(r"^(x86_64|AMD64|amd64|i[3-6]86)$", platform.machine()):
        flags.append("-mcx16")
    return flags


def out_of_tree_options():
    """setup()'s default options: setuptools writes build/ and
    tkshm.egg-info/ next to setup.py unless told otherwise, which would
    leave files in the repository.  They go to a temporary directory
    instead, removed when setup.py exits (--build-base on the command line
    still chooses another place)."""
    tmp = tempfile.mkdtemp(prefix="tkshm-setup-")
    atexit.register(shutil.rmtree, tmp, True)
    return {"build": {"build_base": os.path.join(tmp, "build")},
            "egg_info": {"egg_base": tmp}}


class BuildExt(build_ext):
    """Compiles the library into the extension: its sources with its own
    macros and private include path (src/), the module's with the public
    headers, both with c_flags(); links the Debian libraries (deps)."""

    def build_extension(self, ext):
        self._refuse_fast_math()
        root = ctree.find(HERE)
        found = deps.find()
        print("tkshm: C library from %s, Redis tier %s" % (
            root, "on" if found.redis else
            "off (hiredis not found: install libhiredis-dev)"))
        objects = self._compile_library(root, found)
        # Relinked when a library source is newer than the module (with a
        # --build-base kept from one build to the next).
        ext.depends.extend(ctree.sources(root, found.redis))
        # Hidden like every other symbol (-fvisibility=hidden): only
        # PyInit__tkshm is exported, so another libtkshm loaded into the
        # process can never interpose on the copy compiled in here.
        ext.define_macros.append(("TKSHM_STATIC_DEFINE", None))
        if found.redis:
            ext.define_macros.append(("TKSHM_PY_HAVE_REDIS", "1"))
        ext.include_dirs.insert(0, os.path.join(root, "include"))
        ext.extra_compile_args = c_flags() + list(ext.extra_compile_args)
        ext.extra_objects = objects + list(ext.extra_objects)
        ext.libraries.extend(found.libraries)
        ext.library_dirs.extend(found.library_dirs)
        super().build_extension(ext)

    def _compile_library(self, root, found):
        """The library's object files, compiled as CMake's tkshm_obj."""
        sources = ctree.sources(root, found.redis)
        macros = [("_GNU_SOURCE", None), ("TKSHM_STATIC_DEFINE", None)]
        if found.redis:
            macros.append(("TKSHM_HAVE_REDIS", "1"))
            # The Redis scripts, embedded as C strings.
            temp = os.path.abspath(self.build_temp)
            self.mkpath(temp)
            lua_c = os.path.join(temp, "lua_sources.c")
            ctree.write_lua_c(root, lua_c)
            sources.append(lua_c)
        return self.compiler.compile(
            sources, output_dir=self.build_temp, macros=macros,
            include_dirs=[os.path.join(root, "include"),
                          os.path.join(root, "src")] + found.include_dirs,
            debug=self.debug, extra_postargs=c_flags())

    def _refuse_fast_math(self):
        """Fails if the compiler command would allow fast math (a CFLAGS
        from the environment, or Python's configuration)."""
        words = getattr(self.compiler, "compiler_so", None) or []
        bad = [w for w in words if FAST_MATH.match(w)]
        if bad:
            raise PlatformError(
                "tkshm must not be compiled with %s: its decisions must be "
                "bit-identical to the reference IEEE-754 arithmetic (remove "
                "it from CFLAGS)" % " ".join(bad))


class Sdist(sdist):
    """An sdist that carries the C library (ctree.VENDORED/src and
    /include), found by ctree.find when it is built.

    Its tree (tkshm-X.Y.Z/) is assembled in a temporary directory, not
    next to setup.py where distutils puts it: nothing is left in the
    source tree if the build is killed, and two builds of one checkout at
    once (two build directories' ctest) cannot remove each other's."""

    _tree_root = None

    def make_distribution(self):
        with tempfile.TemporaryDirectory(prefix="tkshm-sdist-") as tmp:
            self._tree_root = tmp
            # The temporary directory goes as a whole: distutils' own
            # removal would look for the tree next to setup.py.
            keep, self.keep_temp = self.keep_temp, True
            try:
                super().make_distribution()
            finally:
                self.keep_temp = keep
                self._tree_root = None

    def make_release_tree(self, base_dir, files):
        base_dir = os.path.join(self._tree_root or os.curdir, base_dir)
        super().make_release_tree(base_dir, files)
        dest = os.path.join(base_dir, ctree.VENDORED)
        shutil.rmtree(dest, ignore_errors=True)
        ctree.copy_tree(ctree.find(HERE), dest)

    def make_archive(self, base_name, format, root_dir=None, base_dir=None,
                     owner=None, group=None):
        return super().make_archive(base_name, format,
                                    root_dir=self._tree_root or root_dir,
                                    base_dir=base_dir, owner=owner,
                                    group=group)
