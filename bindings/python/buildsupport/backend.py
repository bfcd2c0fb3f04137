"""The package's PEP 517 build backend: setuptools', unchanged, except that
a venv without the `wheel` package (a plain `python3 -m venv` has setuptools
but not wheel, which setuptools needs to build a wheel) may build with the
system's copy, Debian's python3-wheel, when no package index can supply
one (`pip install --no-build-isolation`).  It is appended to the build
process's path only, after everything of the venv's own."""

import importlib.util
import os
import sys

SYSTEM_PACKAGES = "/usr/lib/python3/dist-packages"

if importlib.util.find_spec("wheel") is None and \
        os.path.isdir(os.path.join(SYSTEM_PACKAGES, "wheel")):
    sys.path.append(SYSTEM_PACKAGES)

from setuptools.build_meta import *  # noqa: E402,F401,F403
