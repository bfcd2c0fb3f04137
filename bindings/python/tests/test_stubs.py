"""The type information tkshm ships (ctest python_stubs, in the venv of the
fixture python_wheel): tkshm/_tkshm.pyi against the real extension, and the
annotations of tkshm/__init__.py, wsgi.py, _http.py and route.py under
mypy --strict.

- mypy.stubtest compares every name, method signature (the C docstrings
  carry __text_signature__) and attribute of the stub with the module;
- what stubtest leaves out is compared here: the module's own classes
  (their __module__ is "tkshm", so stubtest does not ask the stub for
  them), the constructors' signatures, the keys and value types of
  Table.stats();
- mypy run on a user's code that imports the installed package finds the
  stub (py.typed) and reports exactly the misuses marked in it.

Exits 77 (skipped) without mypy (Debian's python3-mypy)."""

import ast
import inspect
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import tkshm
from tkshm import _tkshm

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(os.path.dirname(HERE), "tkshm")
STUB = os.path.join(os.path.dirname(os.path.realpath(_tkshm.__file__)),
                    "_tkshm.pyi")
ALLOWLIST = os.path.join(HERE, "stubtest-allowlist.txt")

# A user's code: each line marked "# E" must be an error, no other line.
USER_CODE = textwrap.dedent('''
    import tkshm
    from tkshm.wsgi import RateLimitMiddleware

    t = tkshm.Table(None, "gcra:limit=5,periodMs=1000", private=True)
    d: tkshm.Decision = t.check("k", 2, now_ms=1.5)
    code: int = tkshm.EINVAL
    up: bool = t.stats()["global"]["redis_up"]
    both: tuple[tkshm.Decision, int, list[tkshm.Decision]] = \\
        tkshm.check_multi([(t, "k"), (t, b"k", 2)], mode="any")
    pairs: list[tuple[str, str]] = tkshm.headers(d, style="legacy")
    kind: str = t.change.kind
    r = tkshm.Redis(host="127.0.0.1", port=6379, cluster=None)
    mw = RateLimitMiddleware(lambda e, s: [b""], t, cost=lambda e: 2.0)
    wrong: str = t.check("k")  # E
    t.check(1)  # E
    tkshm.check_multi([(t, "k")], mode="most")  # E
    tkshm.Redis("127.0.0.1")  # E
    t.stats()["no_such_counter"]  # E
''')


def run_mypy(*args, cwd):
    """mypy's output and exit status (run by this interpreter: the venv's,
    whose site-packages hold the installed tkshm); no cache is written."""
    r = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir",
                        os.devnull, "--no-error-summary", *args],
                       capture_output=True, text=True, cwd=cwd)
    return r.stdout + r.stderr, r.returncode


def stub_tree():
    with open(STUB, encoding="utf-8") as f:
        return ast.parse(f.read(), STUB)


def stub_names(tree):
    """The names the stub defines at its top level."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets)
    return names


def stub_class(tree, name):
    return next(n for n in tree.body
                if isinstance(n, ast.ClassDef) and n.name == name)


def typed_dicts(tree):
    """{name: {key: annotation source}} of the functional TypedDicts."""
    found = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", "") == "TypedDict"):
            fields = node.value.args[1]
            found[node.targets[0].id] = {
                k.value: ast.unparse(v)
                for k, v in zip(fields.keys, fields.values)}
    return found


def stub_parameters(func):
    """[(name, kind, default)] of a stub's FunctionDef, self left out, in
    inspect.Parameter terms (default inspect.Parameter.empty if none)."""
    a = func.args
    kind = inspect.Parameter
    empty = kind.empty
    positional = ([(p, kind.POSITIONAL_ONLY) for p in a.posonlyargs]
                  + [(p, kind.POSITIONAL_OR_KEYWORD) for p in a.args])
    defaults = [empty] * (len(positional) - len(a.defaults)) + [
        ast.literal_eval(d) for d in a.defaults]
    params = [(p.arg, k, dflt)
              for (p, k), dflt in zip(positional, defaults)]
    params += [(p.arg, kind.KEYWORD_ONLY,
                empty if d is None else ast.literal_eval(d))
               for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    return params[1:]  # self


class StubTest(unittest.TestCase):
    def test_stubtest(self):
        with tempfile.TemporaryDirectory() as cwd:  # its cache stays there
            r = subprocess.run(
                [sys.executable, "-m", "mypy.stubtest", "tkshm._tkshm",
                 "--allowlist", ALLOWLIST], capture_output=True, text=True,
                cwd=cwd)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        print(r.stdout.strip(), file=sys.stderr)

    def test_every_public_name(self):
        runtime = {n for n in dir(_tkshm) if not n.startswith("_")}
        self.assertEqual(runtime - stub_names(stub_tree()), set())

    def test_constructor_signatures(self):
        tree = stub_tree()
        for cls in (_tkshm.Table, _tkshm.Redis):
            init = next(n for n in stub_class(tree, cls.__name__).body
                        if isinstance(n, ast.FunctionDef)
                        and n.name == "__init__")
            runtime = [(p.name, p.kind, p.default) for p in
                       inspect.signature(cls).parameters.values()]
            self.assertEqual(stub_parameters(init), runtime, cls.__name__)

    def test_stats_keys_and_types(self):
        types = {"int": int, "float": float, "bool": bool, "str": str}
        stubs = typed_dicts(stub_tree())
        with tkshm.Table(None, "gcra:limit=5,periodMs=1000",
                         private=True) as t:
            stats = t.stats()
        for name, value in (("_Stats", stats),
                            ("_GlobalStats", stats["global"])):
            fields = stubs[name]
            self.assertEqual(sorted(fields), sorted(value), name)
            for key, annotation in fields.items():
                v = value[key]
                if annotation in stubs:
                    self.assertIsInstance(v, dict, key)
                elif annotation.startswith("Literal["):
                    self.assertIn(v, ast.literal_eval(annotation[8:-1]), key)
                else:  # bool is an int: the exact type is compared
                    self.assertIs(type(v), types[annotation], key)


class AnnotationsTest(unittest.TestCase):
    def test_package_sources_strict(self):
        files = [os.path.join(SOURCE, n) for n in
                 ("__init__.py", "wsgi.py", "_http.py", "route.py",
                  "_tkshm.pyi")]
        with tempfile.TemporaryDirectory() as cwd:
            out, status = run_mypy("--strict", *files, cwd=cwd)
        self.assertEqual(status, 0, out)

    def test_user_code_sees_the_installed_types(self):
        marked = {i for i, line in enumerate(USER_CODE.splitlines(), 1)
                  if line.endswith("# E")}
        with tempfile.TemporaryDirectory() as cwd:
            with open(os.path.join(cwd, "user.py"), "w") as f:
                f.write(USER_CODE)
            out, status = run_mypy("--strict", "user.py", cwd=cwd)
        reported = {int(line.split(":")[1]) for line in out.splitlines()
                    if line.startswith("user.py:") and ": error:" in line}
        self.assertEqual(reported, marked, out)
        self.assertEqual(status, 1, out)


def main():
    try:
        import mypy.stubtest  # noqa: F401
    except ImportError:
        print("skipped: mypy is not installed (apt-get install "
              "python3-mypy)", file=sys.stderr)
        return 77
    prog = unittest.main(exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
