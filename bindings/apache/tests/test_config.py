"""mod_tkshm's configuration errors: every bad directive is refused by
`httpd -t` (configtest) with a sentence naming what is wrong, and
configtest creates no table.  configtest also says what a start would do
to each table (created, changed in place, replaced) and changes nothing; a
start applies an edited policy to the table file it finds (no
TKSHM_EMISMATCH any more), and a file that is not a table fails configtest
and stops httpd at start with the library's error, left as it was.

Run as a script (ctest does): exits 77 (skipped) without httpd."""

import os
import re
import unittest

import httpd

GOOD = "gcra:limit=10,periodMs=86400000"  # no refill during a test
TABLE = "TkshmTable api {dir}/api.tkshm %s\n" % GOOD
# fixedWindow's windows are aligned to the epoch: 10^12 ms ones end in 2033
FOREVER = 1000000000000

# Tables a configuration edit changes in every way configtest names
NAMED = """
TkshmTable api {dir}/api.tk %%(api)s
TkshmTable kind {dir}/kind.tk %%(kind)s
TkshmTable grow {dir}/grow.tk %s slots=%%(slots)d
TkshmTable same {dir}/same.tk %s
TkshmTable anon anonymous %s
%%(new)s
""" % (GOOD, GOOD, GOOD)

# (site, what the error says): each is refused by configtest.
REFUSED = [
    ("TkshmTable api {dir}/a.tk gcra:limit=0,periodMs=1000",
     "TkshmTable api: policy 'gcra:limit=0,periodMs=1000'"),
    ("TkshmTable api {dir}/a.tk gcra:limit=1",
     "TkshmTable api: policy 'gcra:limit=1'"),
    ("TkshmTable api {dir}/a.tk %s slots=3" % GOOD,
     "slots=3: expected an integer from 8"),
    ("TkshmTable api {dir}/a.tk %s slots=12x" % GOOD,
     "slots=12x: expected an integer"),
    ("TkshmTable api {dir}/a.tk %s onFull=never" % GOOD,
     "onFull=never: expected evict or refuse"),
    ("TkshmTable api {dir}/a.tk %s mode=0999" % GOOD,
     "mode=0999: expected octal"),
    ("TkshmTable api {dir}/a.tk %s mode=04600" % GOOD,
     "mode=04600: expected octal permission bits from 0 to 0777"),
    ("TkshmTable api {dir}/a.tk %s mode=0xffffffff" % GOOD,
     "mode=0xffffffff: expected octal permission bits from 0 to 0777"),
    ("TkshmTable api {dir}/a.tk %s group=tkshm-no-such-group" % GOOD,
     "group=tkshm-no-such-group: no such group"),
    ("TkshmTable api {dir}/a.tk %s size=8" % GOOD,
     "unknown option 'size=8'"),
    ("TkshmTable api {dir}/a.tk %s slots=8 slots=16" % GOOD,
     "'slots=16' repeats an option"),
    ("TkshmTable api {dir}/a.tk", "takes a name, a file and a policy"),
    ("TkshmTable api run/a.tk %s" % GOOD,
     "file 'run/a.tk' must be an absolute path or a bare name"),
    ("TkshmTable a/b {dir}/a.tk %s" % GOOD, "TkshmTable: bad name 'a/b'"),
    ("TkshmTable api {dir}/a.tk leakyBucket:ratePerSec=5,maxQueueMs=0",
     "a leakyBucket table cannot limit requests"),
    ("TkshmTable api {dir}/a.tk concurrency:limit=4",
     "a concurrency table cannot limit requests"),
    ("TkshmTable api {dir}/a.tk %s;mode=strict" % GOOD,
     "is strict: TkshmRedis must say where Redis is"),
    ("TkshmRedis port=0", "TkshmRedis: bad option 'port=0'"),
    ("TkshmRedis host=h timeoutMs=0", "bad option 'timeoutMs=0'"),
    ("TkshmRedis hots=h", "bad option 'hots=h'"),
    ("TkshmRedis sentinels=127.0.0.1:26379",
     "TkshmRedis: sentinels= and master= go together"),
    ("TkshmRedis cluster=127.0.0.1:7000 host=h",
     "cluster= or sentinels= name the servers"),
    ("TkshmRedis cluster=127.0.0.1:7000 sentinels=h:1 master=m",
     "cluster= and sentinels= are exclusive"),
    ("TkshmRedis\nTkshmRedis port=7000", "TkshmRedis is already set at"),
    ("TkshmRedis\nTkshmTable s {dir}/s.tk %s;mode=strict\n" % GOOD + TABLE +
     "<Location /x>\nTkshmLimit s\nTkshmLimit api\n</Location>",
     "a lease or strict table must be the only TkshmLimit of a section"),
    (TABLE + "TkshmTable api {dir}/b.tk %s" % GOOD,
     "TkshmTable api is already defined at"),
    ("<Location /x>\nTkshmTable api {dir}/a.tk %s\n</Location>" % GOOD,
     "TkshmTable not allowed in <Location> context"),
    (TABLE + "TkshmLimit api cost=0", "cost=0: expected an integer >= 1"),
    (TABLE + "TkshmLimit api cost=1.5", "cost=1.5: expected an integer"),
    (TABLE + "TkshmLimit api cost=1 cost=2",
     "unknown or repeated option 'cost=2'"),
    (TABLE + "TkshmLimit api weight=2", "unknown or repeated option"),
    (TABLE + "TkshmLimit api key=%{tkshm_nope:x}", "TkshmLimit api: key=%{tkshm_nope:x}: Function"),
    (TABLE + "TkshmLimit api\nTkshmLimit off",
     "TkshmLimit off must be the only TkshmLimit"),
    (TABLE + "TkshmLimit off\nTkshmLimit api",
     "TkshmLimit off is already set"),
    (TABLE + "TkshmLimit api key=k\n" * 17, "at most 16 limits"),
    ("TkshmLimit a:b", "TkshmLimit: bad table name 'a:b'"),
    ("TkshmIPv6Prefix 0", "TkshmIPv6Prefix takes a prefix length"),
    ("TkshmIPv6Prefix 129", "TkshmIPv6Prefix takes a prefix length"),
    ("TkshmDenyStatus 200", "TkshmDenyStatus takes an HTTP error status"),
    ("TkshmHeaders ietf", "TkshmHeaders takes draft, legacy or none"),
    ("TkshmHeaders off", "TkshmHeaders off is spelled none"),
    ("TkshmOnError ignore", "TkshmOnError takes allow or deny"),
    ("TkshmDryRun maybe", "TkshmDryRun must be On or Off"),
    # what only the whole configuration shows (check_config)
    ("<Location /x>\nTkshmLimit nope\n</Location>",
     "uses table 'nope', which no TkshmTable defines"),
    ("TkshmTable g {dir}/g.tk %s;mode=lease\n" % GOOD + TABLE +
     "<Location /x>\nTkshmLimit api\nTkshmLimit g key=all\n</Location>",
     "a lease or strict table must be the only TkshmLimit of a section"),
]


def read(path):
    with open(path, "rb") as f:
        return f.read()


class ConfigTest(unittest.TestCase):
    def setUp(self):
        self.httpd = httpd.Httpd("")
        self.addCleanup(self.httpd.cleanup)

    def test_configtest_refuses(self):
        h = self.httpd
        for site, why in REFUSED:
            with self.subTest(site=site):
                h.write_conf(site)
                rc, out = h.configtest()
                self.assertNotEqual(rc, 0, out)
                self.assertIn(why, out)
                self.assertNotIn("Syntax OK", out)
        self.assertEqual([f for f in os.listdir(h.dir)
                          if f.endswith(".tk")], [])

    def test_strict_refused_with_a_threaded_mpm(self):
        h = httpd.Httpd("TkshmRedis port=6390\n"
                        "TkshmTable s {dir}/s.tk %s;mode=strict\n" % GOOD,
                        mpm="event")
        self.addCleanup(h.cleanup)
        rc, out = h.configtest()
        self.assertNotEqual(rc, 0, out)
        self.assertIn("is strict, which needs an MPM without threads", out)

    def test_configtest_accepts_and_creates_nothing(self):
        h = self.httpd
        # a limit may come before the table it uses
        h.write_conf("""
<Location /api>
    TkshmLimit api key=%{HTTP:X-Api-Key} cost=2
    TkshmLimit perip
    TkshmHeaders legacy
    TkshmIPv6Prefix 56
    TkshmDenyStatus 503
    TkshmOnError deny
    TkshmDryRun on
</Location>
TkshmTable api {dir}/api.tkshm tokenBucket:capacity=10,refillPerSec=5 \
    slots=64 onFull=refuse mode=0640 group=root hugepages
TkshmTable perip perip-PID fixedWindow:limit=5,windowMs=1000
TkshmTable quota {dir}/quota.tk fixedWindow:limit=5,windowMs=1000;mode=lease
TkshmTable login {dir}/login.tk gcra:limit=5,periodMs=1000;mode=strict,prefix=l
TkshmRedis host=10.0.0.5 port=6380 user=u password=p db=2 timeoutMs=50 \
    connectTimeoutMs=100
""".replace("PID", str(os.getpid())))
        rc, out = h.configtest()
        self.assertEqual(rc, 0, out)
        self.assertIn("Syntax OK", out)
        self.assertFalse(os.path.exists(h.path("api.tkshm")))
        self.assertFalse(os.path.exists("/dev/shm/perip-%d" % os.getpid()))

    def test_start_applies_another_policy(self):
        h = self.httpd
        site = ("TkshmTable api {dir}/api.tkshm fixedWindow:limit=10,"
                "windowMs=%d\n<Location /api>\nTkshmLimit api\n"
                "</Location>\n" % FOREVER)
        h.write_conf(site)
        h.start()
        self.assertEqual(h.get("/api")[0], 404)  # admitted, no document
        h.stop()
        with open(h.path("api.tkshm"), "rb") as f:
            before = f.read()

        h.write_conf(site.replace("limit=10", "limit=12"))
        rc, out = h.configtest()
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r"TkshmTable api at %s:\d+ \(%s\), on the "
                         r"next start or restart: limit 10 -> 12, states "
                         r"kept\n" % (re.escape(h.conf),
                                       re.escape(h.path("api.tkshm"))))
        with open(h.path("api.tkshm"), "rb") as f:
            self.assertEqual(f.read(), before)  # configtest changed nothing

        h.start()
        out = h.output()
        self.assertNotIn("TKSHM_EMISMATCH", out)
        self.assertRegex(out, r"TkshmTable api at %s:\d+ \(%s\): limit "
                         r"10 -> 12, states kept\n"
                         % (re.escape(h.conf), re.escape(h.path("api.tkshm"))))
        # the state survived, under the new limit: 12 - 1 more
        codes = [h.get("/api")[0] for _ in range(12)]
        self.assertEqual(codes, [404] * 11 + [429])

    def test_start_says_on_full_is_kept(self):
        h = self.httpd
        h.write_conf(TABLE)
        h.start()
        h.stop()
        h.write_conf(TABLE.replace("\n", " onFull=refuse\n"))
        h.start()
        self.assertRegex(h.output(), r"TkshmTable api at \S+: onFull=refuse "
                         r"is declared, but %s was made with onFull=evict, "
                         r"which it keeps" % re.escape(h.path("api.tkshm")))

    def test_configtest_names_every_change(self):
        h = self.httpd
        h.write_conf(NAMED % {"api": "fixedWindow:limit=20,windowMs=%d"
                              % FOREVER, "kind": "gcra:limit=20,periodMs=1000",
                              "slots": 64, "new": ""})
        h.start()
        files = {f: read(h.path(f))
                 for f in ("api.tk", "kind.tk", "grow.tk", "same.tk")}
        h.write_conf(NAMED % {
            "api": "fixedWindow:limit=40,windowMs=%d" % FOREVER,
            "kind": "slidingWindow:limit=20,windowMs=1000",
            "slots": 1024,
            "new": "TkshmTable new {dir}/new.tk %s" % GOOD})
        rc, out = h.configtest()
        self.assertEqual(rc, 0, out)
        self.assertIn("Syntax OK", out)
        said = {m.group(1): m.group(2) for m in re.finditer(
            r"TkshmTable (\S+) at \S+ \(\S+\), on the next start or "
            r"restart: (.*)\n", out)}
        self.assertEqual(said["api"], "limit 20 -> 40, states kept")
        self.assertRegex(said["kind"],
                         r"^kind gcra -> slidingWindow .*: replaced, ")
        self.assertEqual(said["grow"],
                         "slots 64 -> 1024: replaced, states carried over")
        self.assertRegex(said["new"], "^created")
        self.assertNotIn("same", said)  # unchanged: nothing to say
        self.assertEqual(sorted(said), ["api", "grow", "kind", "new"])
        self.assertRegex(out, r"TkshmTable anon at \S+: anonymous, so "
                         r"configtest cannot see a running httpd's table")
        # configtest changed and created nothing
        self.assertFalse(os.path.exists(h.path("new.tk")))
        for f, data in files.items():
            self.assertEqual(read(h.path(f)), data, f)

    def test_start_refuses_a_file_that_is_no_table(self):
        h = self.httpd
        junk = b"not a table\n" * 2000
        with open(h.path("api.tkshm"), "wb") as f:
            f.write(junk)
        h.write_conf(TABLE)
        # configtest sees it too: no "Syntax OK" before a start that fails
        rc, out = h.configtest()
        self.assertNotEqual(rc, 0, out)
        self.assertNotIn("Syntax OK", out)
        self.assertIn("cannot open %s" % h.path("api.tkshm"), out)
        self.assertIn("TKSHM_EBADMAGIC", out)
        h.start(wait=False)
        self.assertNotEqual(h.wait_exit(), 0)
        self.assertIn("cannot open %s" % h.path("api.tkshm"), h.output())
        self.assertIn("TKSHM_EBADMAGIC", h.output())
        with open(h.path("api.tkshm"), "rb") as f:
            self.assertEqual(f.read(), junk)


if __name__ == "__main__":
    httpd.skip_without_httpd()
    unittest.main(verbosity=2)
