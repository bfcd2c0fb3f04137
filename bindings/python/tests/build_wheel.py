"""The ctest fixture python_wheel: builds tkshm's sdist and wheel the way a
user does and installs them into fresh virtual environments, which the
Python tests then run in (ctest runs every tests/test_*.py with VENV's
interpreter, never against the build tree).

    build_wheel.py OUT

OUT/dist         the sdist, and the wheel built from it (python3 -m build
                 --no-isolation: the wheel is built from the unpacked sdist
                 in a temporary directory, so one compile proves both)
OUT/venv         --system-site-packages (Debian's gunicorn, uvicorn, flask,
                 django, fastapi, mypy), the wheel installed
OUT/venv-sdist   a plain venv (no system packages: what `python3 -m venv`
                 makes), the sdist installed by pip from outside the
                 repository (--no-build-isolation: setup.py finds
                 Debian's wheel package, the venv having none), a second
                 compile

Each environment must import tkshm from its own site-packages, never from
the build tree or a copy installed in the system's dist-packages.  Run by
the interpreter the extension is built for (/usr/bin/python3)."""

import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.dirname(HERE)  # bindings/python
REPO = os.path.dirname(os.path.dirname(PACKAGE_DIR))

# What a build could leave next to setup.py: setuptools' defaults, the
# sdist's copy of the library, Python's cache of the build's helpers.
LEFT_BEHIND = ("build", "tkshm.egg-info", "libtkshm",
               os.path.join("buildsupport", "__pycache__"))

# Run in each environment: where tkshm comes from, and one decision.
PROBE = """
import os, sys, sysconfig, tkshm
site = os.path.realpath(sysconfig.get_paths()["platlib"])
where = os.path.realpath(tkshm._tkshm.__file__)
assert sys.prefix != sys.base_prefix, "not a virtual environment"
assert where.startswith(site + os.sep), "tkshm from %s, not %s" % (where, site)
policy = "fixedWindow:limit=1,windowMs=60000"
with tkshm.Table(None, policy, private=True) as t:
    assert t.check("k") and not t.check("k")
print("tkshm %s from %s" % (tkshm.__version__, where))
"""


def run(cmd, **kw):
    """Runs cmd, printing it and how long it took; fails on an error."""
    print("$ " + " ".join(cmd), flush=True)
    start = time.monotonic()
    subprocess.run(cmd, check=True, **kw)
    print("  (%.1f s)" % (time.monotonic() - start), flush=True)


def clean_env(tmp):
    """The environment of every step: temporary files (the sdist unpacked
    by build and pip) outside the repository, nothing that would put
    another tkshm on the path, and bytecode written as a user's build
    writes it (LEFT_BEHIND)."""
    env = dict(os.environ, TMPDIR=tmp, PYTHONNOUSERSITE="1")
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def make_venv(path, env, system_site=True):
    """A fresh environment at path, seeing the system's packages or not."""
    shutil.rmtree(path, ignore_errors=True)
    run([sys.executable, "-m", "venv", path] +
        (["--system-site-packages"] if system_site else []), env=env)
    return os.path.join(path, "bin", "python")


def pip_install(python, what, env, cwd, *extra):
    run([python, "-m", "pip", "install", "--isolated", "--no-cache-dir",
         "--no-index", "--no-deps", *extra, what], env=env, cwd=cwd)


def check_tools():
    """Exits saying what to install when a tool of the build is missing
    (scripts/install-deps.sh test installs them; without python3-venv,
    Debian's venv says itself what to install)."""
    needed = {"build": "python3-build", "wheel": "python3-wheel",
              "setuptools": "python3-setuptools"}
    packages = [pkg for module, pkg in needed.items()
                if importlib.util.find_spec(module) is None]
    if packages:
        sys.exit("%s has no %s: apt-get install %s" % (
            sys.executable, ", ".join(packages), " ".join(packages)))


def only(pattern):
    found = glob.glob(pattern)
    if len(found) != 1:
        sys.exit("expected one %s, found %r" % (pattern, found))
    return found[0]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    check_tools()
    out = os.path.abspath(sys.argv[1])
    tmp = tempfile.mkdtemp(prefix="tkshm-wheel-")
    try:
        if os.path.realpath(tmp).startswith(os.path.realpath(REPO) + os.sep):
            sys.exit("TMPDIR %s is inside the repository: the sdist must "
                     "be proven outside it" % tmp)
        env = clean_env(tmp)
        dist = os.path.join(out, "dist")
        shutil.rmtree(dist, ignore_errors=True)
        run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
             dist, PACKAGE_DIR], env=env, cwd=tmp)
        sdist = only(os.path.join(dist, "tkshm-*.tar.gz"))
        wheel = only(os.path.join(dist, "tkshm-*.whl"))
        left = [n for n in LEFT_BEHIND
                if os.path.exists(os.path.join(PACKAGE_DIR, n))]
        if left:
            sys.exit("the build left %s in %s" % (", ".join(left),
                                                  PACKAGE_DIR))

        python = make_venv(os.path.join(out, "venv"), env)
        pip_install(python, wheel, env, tmp)
        run([python, "-c", PROBE], env=env, cwd=tmp)

        python = make_venv(os.path.join(out, "venv-sdist"), env,
                           system_site=False)
        pip_install(python, sdist, env, tmp, "--no-build-isolation")
        run([python, "-c", PROBE], env=env, cwd=tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
