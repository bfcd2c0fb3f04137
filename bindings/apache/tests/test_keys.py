"""What mod_tkshm keys a request by and what it answers, on one httpd
(prefork) behind mod_remoteip, so that each test picks its client
addresses with X-Forwarded-For:

- the client address: IPv4 as is, an IPv4-mapped IPv6 address as its IPv4,
  other IPv6 addresses by their /64 (TkshmIPv6Prefix changes it);
- a key expression (an empty key: the limit does not apply);
- several limits in a section admit together or consume nothing, also
  when a client names one key in several of them (issue 18);
- a table whose policy is a rate string ("3 per day");
- cost=, the three header styles, TkshmDenyStatus, TkshmDryRun,
  TkshmLimit off in a nested section, and TkshmOnError on a full table.

Every table has a one-day period: nothing refills during the test.

Run as a script (ctest does): exits 77 (skipped) without httpd."""

import unittest

import httpd

DAY = 86400000


def gcra(limit):
    return "gcra:limit=%d,periodMs=%d" % (limit, DAY)


SITE = """
LoadModule remoteip_module {modules}/mod_remoteip.so
RemoteIPHeader X-Forwarded-For
RemoteIPInternalProxy 127.0.0.1

TkshmTable v6 {dir}/v6.tk %(two)s
TkshmTable v6full {dir}/v6full.tk %(two)s
TkshmTable apikey {dir}/apikey.tk %(two)s
TkshmTable perip {dir}/perip.tk %(three)s
TkshmTable global {dir}/global.tk %(five)s
TkshmTable cost {dir}/cost.tk tokenBucket:capacity=10,refillPerSec=0.0001
TkshmTable styles {dir}/styles.tk %(two)s
TkshmTable outer {dir}/outer.tk %(one)s
TkshmTable small {dir}/small.tk %(two)s slots=8 onFull=refuse
TkshmTable repeat {dir}/repeat.tk fixedWindow:limit=2,windowMs=%(day)d
TkshmTable repeat6 {dir}/repeat6.tk fixedWindow:limit=6,windowMs=%(day)d

<Location /v6>
    TkshmLimit v6
</Location>
<Location /v6full>
    TkshmLimit v6full
    TkshmIPv6Prefix 128
</Location>
<Location /key>
    TkshmLimit apikey key=%%{HTTP:X-Api-Key}
</Location>
<Location /multi>
    TkshmLimit perip
    TkshmLimit global key=all
</Location>
<Location /cost>
    TkshmLimit cost cost=5
</Location>
<Location /legacy>
    TkshmLimit styles
    TkshmHeaders legacy
</Location>
<Location /quiet>
    TkshmLimit styles
    TkshmHeaders none
</Location>
<Location /status>
    TkshmLimit styles
    TkshmDenyStatus 503
</Location>
<Location /dry>
    TkshmLimit outer
    TkshmDryRun on
</Location>
<Location /outer>
    TkshmLimit outer
</Location>
<Location /outer/free>
    TkshmLimit off
</Location>
<Location /full>
    TkshmLimit small key=%%{HTTP:X-K}
    TkshmOnError deny
</Location>
<Location /fullopen>
    TkshmLimit small key=%%{HTTP:X-K}
</Location>
<Location /repeat>
    TkshmLimit repeat key=%%{HTTP:X-A}
    TkshmLimit repeat key=%%{HTTP:X-B}
    TkshmLimit repeat key=%%{HTTP:X-C}
</Location>
<Location /repeat6>
    TkshmLimit repeat6 key=%%{HTTP:X-A}
    TkshmLimit repeat6 key=%%{HTTP:X-B}
    TkshmLimit repeat6 key=%%{HTTP:X-C}
</Location>
""" % {"one": gcra(1), "two": gcra(2), "five": gcra(5), "day": DAY,
       # a rate string (docs/policies.md), quoted as Apache's arguments
       # with spaces are: the same policy as gcra(3)
       "three": '"3 per day"'}

PAGES = ["v6", "v6full", "key", "multi", "cost", "legacy", "quiet",
         "status", "dry", "outer", "outer/free", "full", "fullopen",
         "repeat", "repeat6"]


def remaining(headers):
    return int(headers["RateLimit"].split(";r=")[1].split(";")[0])


def policy_name(headers):
    return headers["RateLimit"].split('"')[1]


class KeysTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.h = httpd.Httpd(
            SITE.replace("{modules}", httpd.MODULES), mpm="prefork",
            files={p + "/index.html": p + "\n" for p in PAGES})
        try:
            cls.h.start()
        except BaseException:
            cls.h.cleanup()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.h.cleanup()

    def get(self, path, client, **headers):
        hd = {"X-Forwarded-For": client}
        hd.update({k.replace("_", "-"): v for k, v in headers.items()})
        return self.h.get(path, hd)

    def statuses(self, path, clients, **headers):
        return [self.get(path, c, **headers)[0] for c in clients]

    def test_ipv6_client_keyed_by_its_64(self):
        self.assertEqual(self.statuses("/v6/", [
            "2001:db8::1", "2001:db8::2", "2001:db8::ffff:1",
            "2001:db8:0:1::1"]), [200, 200, 429, 200])

    def test_ipv4_mapped_client_keyed_as_ipv4(self):
        self.assertEqual(self.statuses("/v6/", [
            "::ffff:192.0.2.7", "192.0.2.7", "192.0.2.7", "192.0.2.8"]),
            [200, 200, 429, 200])

    def test_ipv6_prefix_128(self):
        self.assertEqual(self.statuses("/v6full/", [
            "2001:db8::1", "2001:db8::1", "2001:db8::1", "2001:db8::2"]),
            [200, 200, 429, 200])

    def test_key_expression(self):
        c = "198.51.100.10"
        self.assertEqual(self.statuses("/key/", [c] * 3, X_Api_Key="a"),
                         [200, 200, 429])
        self.assertEqual(self.statuses("/key/", [c], X_Api_Key="b"), [200])
        # no key: the limit does not apply, and says nothing
        for _ in range(4):
            status, hd, _ = self.get("/key/", c)
            self.assertEqual(status, 200)
            self.assertNotIn("RateLimit", hd)

    def test_limits_of_a_section_admit_together(self):
        # perip: 3 per client; global: 5 in all
        one, two = "198.51.100.21", "198.51.100.22"
        seen = [self.get("/multi/", one) for _ in range(4)]
        self.assertEqual([s for s, _, _ in seen], [200, 200, 200, 429])
        # the binding limit names itself: perip has the least left
        self.assertEqual([policy_name(hd) for _, hd, _ in seen],
                         ["perip"] * 4)
        self.assertEqual([remaining(hd) for _, hd, _ in seen], [2, 1, 0, 0])
        # the denied request took nothing from global: 2 left of 5
        seen = [self.get("/multi/", two) for _ in range(3)]
        self.assertEqual([s for s, _, _ in seen], [200, 200, 429])
        self.assertEqual([policy_name(hd) for _, hd, _ in seen],
                         ["global"] * 3)
        self.assertEqual([remaining(hd) for _, hd, _ in seen], [1, 0, 0])

    def test_one_key_in_three_limits(self):
        # Three limits of one table, keyed by headers the client chooses:
        # the same value in all three is one key counted three times per
        # request.  At limit 2 no request fits, and the denials take
        # nothing (they once left the key corrupt, and TkshmOnError's
        # default then admitted all twenty).
        c = "198.51.100.25"
        same = {"X_A": "v", "X_B": "v", "X_C": "v"}
        self.assertEqual(self.statuses("/repeat/", [c] * 20, **same),
                         [429] * 20)
        # v still has its whole limit: two requests that name it once
        self.assertEqual(
            [self.get("/repeat/", c, X_A="v", X_B="w%d" % i,
                      X_C="x%d" % i)[0] for i in range(3)],
            [200, 200, 429])
        # At limit 6 a request naming one key three times takes 3 units:
        # exactly the limit is spent, by two requests.
        self.assertEqual(self.statuses("/repeat6/", [c] * 5, **same),
                         [200, 200, 429, 429, 429])

    def test_cost(self):
        seen = [self.get("/cost/", "198.51.100.30") for _ in range(3)]
        self.assertEqual([s for s, _, _ in seen], [200, 200, 429])
        self.assertEqual([remaining(hd) for _, hd, _ in seen], [5, 0, 0])

    def test_legacy_headers(self):
        seen = [self.get("/legacy/", "198.51.100.40") for _ in range(3)]
        self.assertEqual([s for s, _, _ in seen], [200, 200, 429])
        self.assertEqual([hd["RateLimit-Remaining"] for _, hd, _ in seen],
                         ["1", "0", "0"])
        for _, hd, _ in seen:
            self.assertEqual(hd["RateLimit-Limit"], "2")
            self.assertGreater(int(hd["RateLimit-Reset"]), 0)
            self.assertNotIn("RateLimit-Policy", hd)
        self.assertGreater(int(seen[2][1]["Retry-After"]), 0)

    def test_headers_off(self):
        seen = [self.get("/quiet/", "198.51.100.41") for _ in range(3)]
        self.assertEqual([s for s, _, _ in seen], [200, 200, 429])
        for _, hd, _ in seen:
            self.assertFalse([k for k in hd if k.startswith("RateLimit")])
        self.assertNotIn("Retry-After", seen[1][1])
        self.assertGreater(int(seen[2][1]["Retry-After"]), 0)

    def test_deny_status(self):
        seen = [self.get("/status/", "198.51.100.42") for _ in range(3)]
        self.assertEqual([s for s, _, _ in seen], [200, 200, 503])
        self.assertGreater(int(seen[2][1]["Retry-After"]), 0)

    def test_dry_run_never_denies(self):
        c = "198.51.100.50"
        for _ in range(4):
            status, hd, _ = self.get("/dry/", c)
            self.assertEqual(status, 200)
            self.assertFalse([k for k in hd if k.startswith("RateLimit")])
            self.assertNotIn("Retry-After", hd)
        notes = [row[3] for row in self.h.access_log(
            lambda row: row[4].startswith("/dry/"), rows=4)]
        # Counted, not ordered: each child writes its line after its
        # response, so the next request's line can come first.
        self.assertEqual(sorted(notes), ["allowed"] + ["dry-run"] * 3)
        self.assertIn("table outer would deny %s" % c, self.h.output())
        # it counted: the same table denies the client elsewhere
        self.assertEqual(self.get("/outer/", c)[0], 429)

    def test_limit_off_in_a_nested_section(self):
        c = "198.51.100.60"
        self.assertEqual(self.statuses("/outer/", [c] * 2), [200, 429])
        self.assertEqual(self.statuses("/outer/free/", [c] * 3),
                         [200] * 3)

    def test_on_error_with_a_full_table(self):
        # 8 slots that refuse to evict: the 9th live key cannot be
        # placed, and the check fails with TKSHM_EFULL
        c = "198.51.100.70"
        codes = [self.get("/full/", c, X_K="k%d" % i)[0] for i in range(9)]
        self.assertEqual(codes, [200] * 8 + [503])
        self.assertEqual(self.get("/fullopen/", c, X_K="k9")[0], 200)
        notes = [row[3] for row in self.h.access_log(
            lambda row: row[4].split("/")[1] in ("full", "fullopen"),
            rows=10)]
        self.assertEqual(sorted(notes), ["allowed"] * 8 + ["error"] * 2)
        self.assertIn("TKSHM_EFULL", self.h.output())


if __name__ == "__main__":
    httpd.skip_without_httpd()
    unittest.main(verbosity=2)
