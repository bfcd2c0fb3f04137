"""The tkshm-status handler: every declared table with its definition and
counters, as text, ?auto lines and ?json; only GET and HEAD; reading it
changes no table.

Run as a script (ctest does): exits 77 (skipped) without httpd."""

import http.client
import json
import unittest

import httpd

SITE = """
TkshmTable api {dir}/api.tk gcra:limit=3,periodMs=86400000 slots=64
TkshmTable anon anonymous fixedWindow:limit=5,windowMs=86400000
<Location /api>
    TkshmLimit api
</Location>
<Location /tkshm-status>
    SetHandler tkshm-status
</Location>
"""


def auto_tables(body):
    """{table: {key: value}} of a ?auto answer."""
    tables, cur = {}, None
    for line in body.decode().splitlines():
        key, value = line.split(": ", 1)
        if key == "Table":
            cur = tables.setdefault(value, {})
        elif cur is not None:
            cur[key] = value
    return tables


class StatusTest(unittest.TestCase):
    def setUp(self):
        self.httpd = httpd.Httpd(SITE, files={"api/index.html": "api\n"})
        self.addCleanup(self.httpd.cleanup)
        self.httpd.start()

    def test_formats_and_counters(self):
        h = self.httpd
        self.assertEqual([h.get("/api/")[0] for _ in range(5)],
                         [200] * 3 + [429] * 2)
        status, headers, body = h.get("/tkshm-status?auto")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain"))
        self.assertIn(b"Tables: 2\n", body)
        t = auto_tables(body)
        self.assertEqual(t["api"]["File"], h.path("api.tk"))
        self.assertEqual(t["api"]["Slots"], "64")
        self.assertEqual(t["api"]["Allowed"], "3")
        self.assertEqual(t["api"]["Denied"], "2")
        self.assertEqual(t["api"]["Inserts"], "1")
        self.assertTrue(t["api"]["Policy"].startswith("gcra:"))
        for k in ("Reclaims", "Evictions", "EvictionsInDebt", "Refusals",
                  "CasRetries"):
            self.assertEqual(t["api"][k], "0", k)
        self.assertNotIn("GlobalRedisCalls", t["api"])  # a local table
        self.assertEqual(t["anon"]["File"], "anonymous")
        self.assertEqual(t["anon"]["Allowed"], "0")

        status, headers, body = h.get("/tkshm-status?json")
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"], "application/json")
        doc = json.loads(body)
        by_name = {x["Table"]: x for x in doc["tables"]}
        self.assertEqual(sorted(by_name), ["anon", "api"])
        self.assertEqual(by_name["api"]["Allowed"], 3)
        self.assertEqual(by_name["api"]["Denied"], 2)

        status, _, body = h.get("/tkshm-status")
        self.assertEqual(status, 200)
        self.assertIn(b"table api\n", body)
        self.assertRegex(body.decode(), r"\n  Denied +2\n")

    def test_read_only(self):
        h = self.httpd
        h.get("/api/")
        before = auto_tables(h.get("/tkshm-status?auto")[2])
        for _ in range(3):
            h.get("/tkshm-status?json")
            h.get("/tkshm-status")
        self.assertEqual(auto_tables(h.get("/tkshm-status?auto")[2]),
                         before)

    def test_methods(self):
        h = self.httpd
        c = http.client.HTTPConnection("127.0.0.1", h.port, timeout=20)
        try:
            c.request("HEAD", "/tkshm-status")
            r = c.getresponse()
            self.assertEqual(r.status, 200)
            self.assertEqual(r.read(), b"")
        finally:
            c.close()
        c = http.client.HTTPConnection("127.0.0.1", h.port, timeout=20)
        try:
            c.request("POST", "/tkshm-status", body=b"x")
            r = c.getresponse()
            r.read()
            self.assertEqual(r.status, 405)
            self.assertIn("GET", r.getheader("Allow"))
        finally:
            c.close()


if __name__ == "__main__":
    httpd.skip_without_httpd()
    unittest.main(verbosity=2)
