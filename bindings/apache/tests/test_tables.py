"""How TkshmTable declares a table:

- anonymous: no file; created by the parent, inherited by every child,
  and its state survives a graceful restart and a restart; a changed
  policy is applied to it (tkshm_apply: the states are kept), a smaller
  slots= keeps its size, and a changed onFull= or a declaration removed
  (then declared again) starts afresh;
- owner=USER: the owner of the file httpd creates (as root); an unknown
  user, and owner= on an anonymous table, are refused by configtest.

Run as a script (ctest does): exits 77 (skipped) without httpd."""

import os
import pwd
import re
import signal
import unittest

import httpd

DAY = 86400000
ANON = """
TkshmTable anon anonymous gcra:limit=%d,periodMs=%d
<Location /anon>
    TkshmLimit anon
</Location>
"""


def owner_user():
    for name in ("daemon", "nobody"):
        try:
            return pwd.getpwnam(name)
        except KeyError:
            pass
    raise unittest.SkipTest("no daemon or nobody user")


class AnonymousTest(unittest.TestCase):
    def setUp(self):
        self.httpd = httpd.Httpd(ANON % (10, DAY),
                                 files={"anon/index.html": "a\n"})
        self.addCleanup(self.httpd.cleanup)

    def statuses(self, n):
        return [self.httpd.get("/anon/")[0] for _ in range(n)]

    def test_state_survives_restarts(self):
        h = self.httpd
        h.start()
        # several children serve these: they share the parent's mapping
        self.assertEqual(self.statuses(4), [200] * 4)
        h.signal(signal.SIGUSR1)  # graceful
        h.wait_ready(generation=2, old_gone=True)
        self.assertEqual(self.statuses(3), [200] * 3)
        h.signal(signal.SIGHUP)  # restart
        h.wait_ready(generation=3, old_gone=True)
        self.assertEqual(self.statuses(5), [200] * 3 + [429] * 2)
        rows = h.access_log(lambda r: r[4].startswith("/anon"), rows=12)
        self.assertGreater(len({r[0] for r in rows}), 1, rows)

    def test_changed_declaration_is_applied(self):
        h = self.httpd
        h.start()
        self.assertEqual(self.statuses(11), [200] * 10 + [429])
        h.write_conf(ANON % (2, DAY))
        h.signal(signal.SIGUSR1)
        h.wait_ready(generation=2, old_gone=True)
        # in place: the key keeps its state (a day's worth of units spent,
        # under either limit); afresh it would have 2 to spend
        self.assertEqual(self.statuses(3), [429] * 3)
        self.assertRegex(h.output(), re.escape(h.conf) + r":\d+: limit 10 "
                         r"-> 2, burst 10 -> 2, states kept\n")

    def test_removed_declaration_starts_afresh(self):
        h = self.httpd
        h.start()
        self.assertEqual(self.statuses(11), [200] * 10 + [429])
        h.write_conf("")  # the parent closes the table
        h.signal(signal.SIGUSR1)
        h.wait_ready(generation=2, old_gone=True)
        h.write_conf(ANON % (10, DAY))
        h.signal(signal.SIGUSR1)
        h.wait_ready(generation=3, old_gone=True)
        self.assertEqual(self.statuses(11), [200] * 10 + [429])

    def test_on_full_change_starts_afresh(self):
        h = self.httpd
        h.start()
        self.assertEqual(self.statuses(11), [200] * 10 + [429])
        # onFull= is the table's, fixed when it is made: a new one
        h.write_conf((ANON % (10, DAY)).replace(
            "periodMs=%d" % DAY, "periodMs=%d onFull=refuse" % DAY))
        h.signal(signal.SIGUSR1)
        h.wait_ready(generation=2, old_gone=True)
        self.assertEqual(self.statuses(11), [200] * 10 + [429])
        self.assertIn("onFull= or hugepages changed, which a live table "
                      "cannot take: a new anonymous table, keys start "
                      "afresh", h.output())

    def test_smaller_slots_keep_the_table(self):
        h = self.httpd
        site = (ANON % (10, DAY)).replace("periodMs=%d" % DAY,
                                          "periodMs=%d slots=%%d" % DAY)
        h.write_conf(site % 4096)
        h.start()
        self.assertEqual(self.statuses(4), [200] * 4)
        h.write_conf(site % 64)
        h.signal(signal.SIGUSR1)
        h.wait_ready(generation=2, old_gone=True)
        self.assertEqual(self.statuses(7), [200] * 6 + [429])
        self.assertRegex(h.output(), re.escape(h.conf) + r":\d+: slots 4096 "
                         r"kept \(64 asked: a table does not shrink\)\n")

    def test_no_file_options(self):
        h = self.httpd
        h.write_conf("TkshmTable a anonymous gcra:limit=1,periodMs=1000 "
                     "mode=0640\n")
        rc, out = h.configtest()
        self.assertNotEqual(rc, 0)
        self.assertIn("an anonymous table has no file", out)


class OwnerTest(unittest.TestCase):
    def setUp(self):
        self.user = owner_user()
        self.httpd = httpd.Httpd(
            "TkshmTable o {dir}/o.tk gcra:limit=1,periodMs=1000 owner=%s\n"
            "<Location /o>\n    TkshmLimit o\n</Location>\n"
            % self.user.pw_name)
        self.addCleanup(self.httpd.cleanup)

    def test_unknown_user_refused(self):
        h = self.httpd
        h.write_conf("TkshmTable o {dir}/o.tk gcra:limit=1,periodMs=1000 "
                     "owner=no-such-user-tkshm\n")
        rc, out = h.configtest()
        self.assertNotEqual(rc, 0)
        self.assertIn("owner=no-such-user-tkshm: no such user", out)

    def test_created_file_owner(self):
        if os.geteuid() != 0:
            self.skipTest("only root gives a file away")
        h = self.httpd
        h.start()
        self.assertEqual(os.stat(h.path("o.tk")).st_uid, self.user.pw_uid)
        self.assertEqual(h.get("/o")[0], 404)  # the limit still applies
        self.assertEqual(h.get("/o")[0], 429)


if __name__ == "__main__":
    httpd.skip_without_httpd()
    unittest.main(verbosity=2)
