"""Long keys and the level of denial logs:

- a key longer than the table takes is replaced by its SHA-1: a 5,000-byte
  X-Api-Key is limited like a short one (it does not fail the check, which
  TkshmOnError allow would let through), and two long keys that differ
  only in their last byte have buckets of their own;
- TkshmLogLevel: the level of the denial's log line.

Run as a script (ctest does): exits 77 (skipped) without httpd."""

import time
import unittest

import httpd

SITE = """
LogLevel warn
TkshmTable k {dir}/k.tk gcra:limit=2,periodMs=86400000
TkshmTable lw {dir}/lw.tk gcra:limit=1,periodMs=86400000
TkshmTable ld {dir}/ld.tk gcra:limit=1,periodMs=86400000
<Location /k>
    TkshmLimit k key=%{HTTP:X-Api-Key}
</Location>
<Location /warn>
    TkshmLimit lw
    TkshmLogLevel warn
</Location>
<Location /debug>
    TkshmLimit ld
    TkshmLogLevel debug
</Location>
"""


class LongKeyTest(unittest.TestCase):
    def setUp(self):
        self.httpd = httpd.Httpd(SITE, files={"k/index.html": "k\n",
                                              "warn/index.html": "w\n",
                                              "debug/index.html": "d\n"})
        self.addCleanup(self.httpd.cleanup)
        self.httpd.start()

    def statuses(self, key, n):
        return [self.httpd.get("/k/", {"X-Api-Key": key})[0]
                for _ in range(n)]

    def test_long_keys_are_limited(self):
        short = "s"
        long_a = "a" * 4999 + "1"
        long_b = "a" * 4999 + "2"
        self.assertEqual(self.statuses(short, 3), [200, 200, 429])
        self.assertEqual(self.statuses(long_a, 3), [200, 200, 429])
        self.assertEqual(self.statuses(long_b, 3), [200, 200, 429])
        self.assertEqual(self.statuses(long_a, 1), [429])
        self.assertNotIn("check of table", self.httpd.output())

    def test_log_level(self):
        h = self.httpd
        self.assertEqual([h.get("/warn/")[0] for _ in range(2)], [200, 429])
        self.assertEqual([h.get("/debug/")[0] for _ in range(2)],
                         [200, 429])
        deadline = time.monotonic() + 5
        while "table lw denies" not in h.output() and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        out = h.output()
        self.assertIn("table lw denies 127.0.0.1", out)
        self.assertNotIn("table ld denies", out)

    def test_bad_level(self):
        h = self.httpd
        h.write_conf("TkshmLogLevel loud\n")
        rc, out = h.configtest()
        self.assertNotEqual(rc, 0)
        self.assertIn("TkshmLogLevel takes", out)


if __name__ == "__main__":
    httpd.skip_without_httpd()
    unittest.main(verbosity=2)
