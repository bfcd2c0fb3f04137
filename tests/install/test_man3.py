#!/usr/bin/env python3
"""tkshm_man3: the C API's man pages (scripts/gen-man3.py, at build time)
against the shared library they document.

    test_man3.py MAN3_DIR LIBTKSHM_SO

- every function libtkshm.so exports (nm -D) has a page, and every page
  but tkshm(3) names an exported function: a function added without its
  header comment, or a page of a removed one, fails;
- each page has NAME, SYNOPSIS (its prototype) and DESCRIPTION, and
  renders with groff -ww without a warning (an overlong line that cannot
  be justified is not one: some policy strings have no break point);
- the generator refuses a declaration without its comment (run on a
  header made for the purpose).
"""

import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "..", "scripts", "gen-man3.py")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def exported(lib):
    out = subprocess.run(["nm", "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    return {l.split()[-1] for l in out.splitlines()
            if re.match(r"\S+ T tkshm_", l)}


def main():
    man_dir, lib = sys.argv[1], sys.argv[2]
    pages = {f[:-2] for f in os.listdir(man_dir) if f.endswith(".3")}
    if "tkshm" not in pages:
        fail("no tkshm(3) in %s" % man_dir)
    funcs = exported(lib)
    if len(funcs) < 10:
        fail("nm found %d tkshm_ functions in %s" % (len(funcs), lib))
    missing = sorted(funcs - pages)
    extra = sorted(pages - funcs - {"tkshm"})
    if missing:
        fail("exported without a page: %s" % ", ".join(missing))
    if extra:
        fail("pages of no exported function: %s" % ", ".join(extra))

    for name in sorted(pages):
        path = os.path.join(man_dir, name + ".3")
        text = open(path, encoding="utf-8").read()
        for section in (".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION"):
            if section not in text:
                fail("%s: no %s" % (path, section))
        if name != "tkshm" and not re.search(r"\b%s\(" % name, text):
            fail("%s: its synopsis does not declare %s()" % (path, name))
        r = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8", path],
                           capture_output=True, text=True)
        warnings = [l for l in r.stderr.splitlines()
                    if "cannot adjust line" not in l]
        if r.returncode != 0 or warnings:
            fail("%s: groff: %s" % (path, "\n".join(warnings)))

    with tempfile.TemporaryDirectory() as tmp:
        header = os.path.join(tmp, "bad.h")
        with open(header, "w") as f:
            f.write("/** Documented. */\nTKSHM_API int tkshm_a(void);\n\n"
                    "TKSHM_API int tkshm_b(int x);\n")
        r = subprocess.run([sys.executable, GEN, os.path.join(tmp, "out"),
                            "0", header], capture_output=True, text=True)
        if r.returncode == 0 or "tkshm_b has no comment" not in r.stderr:
            fail("gen-man3.py accepted an undocumented function: rc %d, %r"
                 % (r.returncode, r.stderr))
    print("man3: %d pages for %d exported functions, groff clean"
          % (len(pages), len(funcs)))


if __name__ == "__main__":
    main()
