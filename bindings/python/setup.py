"""Builds the tkshm package and its C extension tkshm._tkshm, with the C
library compiled in (no system libtkshm needed).  The static metadata
is in pyproject.toml; here is what is computed or needs code: the version
(include/tkshm.h), the package's files and the extension.

    python3 -m build --no-isolation bindings/python     # sdist and wheel
    pip install --no-build-isolation ./bindings/python  # see README.md
"""

import glob
import importlib.util
import os
import sys

# A plain venv (python3 -m venv, no --system-site-packages) has setuptools
# but not `wheel`, which setuptools needs to build a wheel: where no
# package index can supply it (pip install --no-build-isolation), the
# system's copy, Debian's python3-wheel, is used, after everything of the
# venv's own on the path.
SYSTEM_PACKAGES = "/usr/lib/python3/dist-packages"
if importlib.util.find_spec("wheel") is None and \
        os.path.isdir(os.path.join(SYSTEM_PACKAGES, "wheel")):
    sys.path.append(SYSTEM_PACKAGES)

from setuptools import Extension, setup  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# setuptools' PEP 517 backend runs this file with another directory on
# sys.path[0]: the helpers next to it are imported from HERE, without
# leaving a __pycache__ there (a build leaves nothing in the source tree;
# build/ and the egg-info go elsewhere too: commands.out_of_tree_options).
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True

from buildsupport import commands, ctree  # noqa: E402

# Relative paths: setuptools puts the extension's sources into the sdist.
MODULE_SOURCES = sorted(os.path.relpath(p, HERE) for p in
                        glob.glob(os.path.join(HERE, "src", "*.c")))

setup(
    version=ctree.version(ctree.find(HERE)),
    # Listed, not discovered: src/, tests/ and buildsupport/ are not
    # packages of the distribution.  The type information ships with it:
    # the C module's stub and the PEP 561 marker.
    packages=["tkshm"],
    package_data={"tkshm": ["py.typed", "*.pyi"]},
    ext_modules=[Extension("tkshm._tkshm", sources=MODULE_SOURCES)],
    cmdclass={"build_ext": commands.BuildExt, "sdist": commands.Sdist},
    options=commands.out_of_tree_options(),
)
