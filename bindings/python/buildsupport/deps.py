"""The Debian libraries the C library links, found with pkg-config as
CMakeLists.txt finds them: libxxhash and liburcu-bp are required, hiredis
turns the Redis tier on when it is there.  A missing one fails the build
with the Debian -dev package that provides it."""

import shutil
import subprocess

from setuptools.errors import PlatformError

# pkg-config module -> the Debian 12 package that installs its .pc file.
REQUIRED = (("libxxhash", "libxxhash-dev"), ("liburcu-bp", "liburcu-dev"))
OPTIONAL_REDIS = ("hiredis", "libhiredis-dev")

# Linked whatever pkg-config says: the library's own (CMake links m; the
# atfork handler and liburcu need pthread, part of libc since glibc 2.34).
ALWAYS_LINKED = ("m", "pthread")


class MissingDependency(PlatformError):
    """A library the build needs is not installed (setuptools prints a
    PlatformError as "error: <the sentence>", without a traceback)."""


def _pkg_config(*args):
    """pkg-config's words for `args`, or None when the module is missing."""
    r = subprocess.run(["pkg-config", *args], capture_output=True,
                       text=True, check=False)
    return r.stdout.split() if r.returncode == 0 else None


def _flags(module):
    """(include dirs, library dirs, libraries) of a pkg-config module, or
    None when it is not installed."""
    cflags = _pkg_config("--cflags-only-I", module)
    libs = _pkg_config("--libs", module)
    if cflags is None or libs is None:
        return None
    return ([w[2:] for w in cflags if w.startswith("-I")],
            [w[2:] for w in libs if w.startswith("-L")],
            [w[2:] for w in libs if w.startswith("-l")])


class Deps:
    """What the compile and the link need: include_dirs, library_dirs,
    libraries, and redis (True when hiredis was found)."""

    def __init__(self):
        self.include_dirs = []
        self.library_dirs = []
        self.libraries = []
        self.redis = False

    def add(self, flags):
        for mine, theirs in zip((self.include_dirs, self.library_dirs,
                                 self.libraries), flags):
            mine.extend(x for x in theirs if x not in mine)


def find():
    """The Deps of this machine, or MissingDependency naming what to
    install (apt-get install ...)."""
    if shutil.which("pkg-config") is None:
        raise MissingDependency(
            "pkg-config is not installed: it finds the libraries tkshm "
            "links (apt-get install pkg-config)")
    deps = Deps()
    for module, package in REQUIRED:
        flags = _flags(module)
        if flags is None:
            raise MissingDependency(
                "%s was not found by pkg-config: install the Debian package "
                "%s (apt-get install %s)" % (module, package, package))
        deps.add(flags)
    flags = _flags(OPTIONAL_REDIS[0])
    if flags is not None:
        deps.add(flags)
        deps.redis = True
    deps.add(([], [], list(ALWAYS_LINKED)))
    return deps
