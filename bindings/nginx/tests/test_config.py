"""Every directive error of ngx_http_tkshm_module is reported by
"nginx -t" with a sentence naming it, and "nginx -t" changes no table."""

import grp
import hashlib
import os
import pwd
import re

from nginx import Nginx, check, main

SERVER = """
    server {
        listen 127.0.0.1:{port};
        root html;
        location / { %s }
    }
"""

GOOD_TABLE = "tkshm_table t file={dir}/t.tbl policy=10/second;"

# (what is tested, http{} tables, the location's directives, what nginx -t
# must say)
CASES = [
    ("unknown table", GOOD_TABLE, "tkshm_limit nosuch;",
     'uses table "nosuch", which no tkshm_table declares'),
    ("bad policy with the library's sentence",
     "tkshm_table t anonymous policy=gcra:limit=0,periodMs=1000;",
     "tkshm_limit t;",
     'tkshm_table t: invalid policy "gcra:limit=0,periodMs=1000": '),
    ("unknown policy kind", "tkshm_table t anonymous policy=bogus:x=1;",
     "tkshm_limit t;", "unknown policy kind"),
    ("two rates in one policy",
     "tkshm_table t anonymous \"policy=10/second;100/minute\";", "",
     "tkshm_table t: invalid policy"),
    ("a kind that is not a request limit",
     "tkshm_table t anonymous policy=concurrency:limit=4;", "",
     'policy "concurrency:limit=4" cannot limit requests'),
    ("slots too small",
     "tkshm_table t anonymous policy=5/s slots=3;", "",
     'tkshm_table t: invalid slots "3": a whole number from 8'),
    ("slots not a number",
     "tkshm_table t anonymous policy=5/s slots=many;", "",
     'invalid slots "many"'),
    ("duplicate table", GOOD_TABLE + "\ntkshm_table t anonymous "
     "policy=1/s;", "", 'tkshm_table "t" is already declared in '),
    ("no policy", "tkshm_table t anonymous;", "",
     "tkshm_table t: policy=POLICY is missing"),
    ("no file", "tkshm_table t policy=1/s;", "",
     "tkshm_table t: file=PATH (or anonymous) is missing"),
    ("unknown table argument",
     "tkshm_table t anonymous policy=1/s size=10m;", "",
     'tkshm_table t: unknown argument "size=10m"'),
    ("bad on_full", "tkshm_table t anonymous policy=1/s on_full=drop;", "",
     'invalid on_full "drop": use evict or refuse'),
    ("bad mode", "tkshm_table t anonymous policy=1/s mode=0999;", "",
     'invalid mode "0999"'),
    ("unknown owner", "tkshm_table t file={dir}/t.tbl policy=1/s "
     "owner=nosuchuser;", "", "tkshm_table t: owner=nosuchuser: no such user"),
    ("unknown group", "tkshm_table t file={dir}/t.tbl policy=1/s "
     "group=nosuchgroup;", "",
     "tkshm_table t: group=nosuchgroup: no such group"),
    ("owner of an anonymous table",
     "tkshm_table t anonymous policy=1/s owner=daemon;", "",
     "an anonymous table has no file: owner= and group= do not apply"),
    ("bad table name", "tkshm_table t/x anonymous policy=1/s;", "",
     'tkshm_table: invalid name "t/x"'),
    ("strict refused",
     "tkshm_table t anonymous \"policy=10/s;mode=strict\";", "tkshm_limit t;",
     "strict tables are not supported by nginx: a strict check waits for "
     "Redis, and an nginx worker must never block; use a lease table"),
    ("lease with another limit",
     "tkshm_table t anonymous \"policy=10/s;mode=lease\";\n"
     "tkshm_table u anonymous policy=10/s;",
     "tkshm_limit t; tkshm_limit u;",
     "is a lease table: it must be the only tkshm_limit of a level"),
    ("bad cost", GOOD_TABLE, "tkshm_limit t cost=0;",
     'tkshm_limit: invalid cost "0"'),
    ("unknown variable in key", GOOD_TABLE, "tkshm_limit t key=$nosuchvar;",
     'unknown "nosuchvar" variable'),
    ("unknown limit argument", GOOD_TABLE, "tkshm_limit t burst=5;",
     'tkshm_limit: unknown argument "burst=5"'),
    ("too many limits", GOOD_TABLE, "tkshm_limit t; " * 17,
     "tkshm_limit: at most 16 limits per level"),
    ("bad headers", GOOD_TABLE, "tkshm_headers off;",
     'tkshm_headers: invalid value "off": use draft, legacy or none'),
    ("bad status", GOOD_TABLE, "tkshm_status 200;",
     "value must be between 400 and 599"),
    ("bad log level", GOOD_TABLE, "tkshm_log_level debug;",
     'invalid value "debug"'),
    ("bad dry run", GOOD_TABLE, "tkshm_dry_run maybe;",
     'invalid value "maybe" in "tkshm_dry_run"'),
    ("tkshm_table in a location", "", GOOD_TABLE,
     '"tkshm_table" directive is not allowed here'),
]


def configtest(tables, location):
    n = Nginx(tables + SERVER % location)
    try:
        return n.configtest() + (n,)
    finally:
        n.cleanup()


def test_every_error():
    for what, tables, location, says in CASES:
        ok, out, _ = configtest(tables, location)
        check(not ok and says in out,
              "%s: nginx -t fails saying %r (said: %s)"
              % (what, says, out.strip()[:300]))


ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                    "..")
# The README examples tested as pasted: (file, the heading of the section
# whose first nginx block it is, the tables it declares).
EXAMPLES = [
    ("README.md", "## nginx", ("api", "keys")),
    ("bindings/nginx/README.md", "## Example", ("api", "day", "keys", "burst")),
]


def readme_example(path, heading):
    """The body of http{} in the first nginx block of section `heading` of
    `path`, with what a machine must change changed: the tables' files go
    to the test's directory and the server listens on the test's port."""
    with open(os.path.join(ROOT, path)) as f:
        text = f.read()
    section = text[text.index("\n%s\n" % heading):]
    block = re.search(r"```nginx\n(.*?)```", section, re.S).group(1)
    check(block.startswith("load_module modules/ngx_http_tkshm_module.so;"),
          "%s: the example loads the module" % path)
    body = block[block.index("http {") + len("http {"):block.rindex("}")]
    for old, new in (("file=/dev/shm/", "file={dir}/"),
                     ("listen 80;", "listen 127.0.0.1:{port};")):
        check(old in body, "%s: the example has %r" % (path, old))
        body = body.replace(old, new)
    return body


def test_readme_examples():
    """The README examples, as pasted: nginx -t accepts each, nginx serves
    with it, /api/ answers with RateLimit headers and the status page lists
    every table."""
    for path, heading, tables in EXAMPLES:
        n = Nginx(readme_example(path, heading))
        try:
            ok, out = n.configtest()
            check(ok, "%s: nginx -t accepts the example: %s"
                  % (path, out[-400:]))
            n.start()
            s, h, _ = n.get("/api/x", headers={"X-API-Key": "k1"})
            check(s == 404 and "ratelimit" in h,
                  "%s: a request to /api/ is checked (404: no such file), "
                  "with RateLimit headers: %d %s" % (path, s, h))
            s, _, body = n.get("/tkshm-status")
            check(s == 200 and all(("%s." % t).encode() in body
                                   for t in tables),
                  "%s: the status page lists %s: %r"
                  % (path, tables, body[:300]))
        finally:
            n.cleanup()


def test_owner_and_group():
    """owner= and group=: the file the root master creates is theirs, with
    mode=; the workers (nobody, of group nogroup) use it through the
    group's bits."""
    if os.geteuid() != 0:
        print("skipped test_owner_and_group: not root")
        return
    n = Nginx("tkshm_table t file={dir}/o.tbl policy=10/day owner=daemon "
              "group=nogroup mode=0660;" + SERVER % "tkshm_limit t;")
    try:
        n.start()
        st = os.stat(n.path("o.tbl"))
        check(st.st_uid == pwd.getpwnam("daemon").pw_uid
              and st.st_gid == grp.getgrnam("nogroup").gr_gid
              and st.st_mode & 0o777 == 0o660,
              "the file is daemon's, of group nogroup, mode 0660: uid %d "
              "gid %d mode %o" % (st.st_uid, st.st_gid, st.st_mode & 0o777))
        s, h, _ = n.get("/")
        check(s == 200 and "ratelimit" in h,
              "the workers check on it: %d %s" % (s, h))
    finally:
        n.cleanup()


def test_lease_alone_accepted():
    ok, out, _ = configtest("tkshm_table t anonymous \"policy=10/s;mode=lease\";",
                            "tkshm_limit t;")
    check(ok, "a lease table alone is accepted: %s" % out.strip()[:300])


def test_configtest_changes_nothing():
    n = Nginx("tkshm_table t file={dir}/t.tbl policy=10/second;"
              + SERVER % "tkshm_limit t;")
    try:
        ok, out = n.configtest()
        check(ok and not os.path.exists(n.path("t.tbl")),
              "nginx -t creates no table file")
        n.run("-s", "reload")  # no master to signal: it reads the config
        check(not os.path.exists(n.path("t.tbl")),
              "the nginx -s signaller creates no table file")
        n.start()
        n.stop()
        if os.geteuid() == 0:
            owner = os.stat(n.path("t.tbl")).st_uid
            check(owner == pwd.getpwnam("nobody").pw_uid,
                  "the root master gave the file it made to the workers' "
                  "user (uid %d)" % owner)
        with open(n.path("t.tbl"), "rb") as f:
            before = hashlib.sha256(f.read()).hexdigest()
        n.write_conf("tkshm_table t file={dir}/t.tbl policy=20/second;"
                     + SERVER % "tkshm_limit t;")
        ok, out = n.configtest()
        with open(n.path("t.tbl"), "rb") as f:
            after = hashlib.sha256(f.read()).hexdigest()
        check(ok and before == after, "nginx -t leaves the table as it is")
        check("tkshm_table t: a start or reload would change it: limit 10 "
              "-> 20" in out, "nginx -t says what a reload would change")
        with open(n.path("t.tbl"), "wb") as f:
            f.write(b"not a table" * 1000)
        ok, out = n.configtest()
        check(not ok and "cannot be opened" in out
              and "not a tkshm table" in out,
              "a file that is not a table fails nginx -t: %s"
              % out.strip()[:300])
    finally:
        n.cleanup()


if __name__ == "__main__":
    main([test_readme_examples, test_owner_and_group, test_every_error, test_lease_alone_accepted,
          test_configtest_changes_nothing])
