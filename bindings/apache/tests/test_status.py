"""The tkshm-status handler: every declared table with its definition and
counters, as text, ?auto lines, ?json and ?prometheus (Prometheus's text
format, with tkshm-inspect's metric names and values, passed by `promtool
check metrics`); only GET and HEAD; reading it changes no table.

Run as a script (ctest does): exits 77 (skipped) without httpd.  PROMTOOL
and TKSHM_INSPECT_BIN (from the build) name promtool and tkshm-inspect."""

import http.client
import json
import os
import re
import subprocess
import unittest

import httpd
from prom import samples as prom_samples  # tests/support (httpd.py)

SITE = """
TkshmTable api {dir}/api.tk gcra:limit=3,periodMs=86400000 slots=64
TkshmTable anon anonymous fixedWindow:limit=5,windowMs=86400000
TkshmTable lease {dir}/lease.tk "fixedWindow:limit=5,windowMs=86400000;mode=lease,prefix=st" slots=64
<Location /api>
    TkshmLimit api
</Location>
<Location /lease>
    TkshmLimit lease
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
        self.httpd = httpd.Httpd(SITE, files={"api/index.html": "api\n",
                                          "lease/index.html": "lease\n"})
        self.addCleanup(self.httpd.cleanup)
        self.httpd.start()

    def test_formats_and_counters(self):
        h = self.httpd
        self.assertEqual([h.get("/api/")[0] for _ in range(5)],
                         [200] * 3 + [429] * 2)
        status, headers, body = h.get("/tkshm-status?auto")
        self.assertEqual(status, 200)
        self.assertTrue(headers["Content-Type"].startswith("text/plain"))
        self.assertIn(b"Tables: 3\n", body)
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
        self.assertEqual(sorted(by_name), ["anon", "api", "lease"])
        self.assertEqual(by_name["api"]["Allowed"], 3)
        self.assertEqual(by_name["api"]["Denied"], 2)

        status, _, body = h.get("/tkshm-status")
        self.assertEqual(status, 200)
        self.assertIn(b"table api\n", body)
        self.assertRegex(body.decode(), r"\n  Denied +2\n")

    def test_prometheus(self):
        h = self.httpd
        self.assertEqual([h.get("/api/")[0] for _ in range(5)],
                         [200] * 3 + [429] * 2)
        # No agent serves the lease table: its failure policy decides,
        # which its fallback counters show.
        for _ in range(4):
            h.get("/lease/")
        status, headers, body = h.get("/tkshm-status?prometheus")
        self.assertEqual(status, 200)
        self.assertEqual(headers["Content-Type"],
                         "text/plain; version=0.0.4; charset=utf-8")
        text = body.decode()
        got = prom_samples(text)
        self.assertEqual(
            got['tkshm_decisions_total{table="api",decision="allowed"}'], 3)
        self.assertEqual(
            got['tkshm_decisions_total{table="api",decision="denied"}'], 2)
        self.assertEqual(got['tkshm_keys{table="api",state="live"}'], 1)
        self.assertEqual(
            got['tkshm_decisions_total{table="anon",decision="allowed"}'], 0)
        self.assertEqual(got["tkshm_status_errors"], 0)
        self.assertNotIn('tkshm_redis_up{table="api"}', got)  # local

        r = subprocess.run([os.environ["PROMTOOL"], "check", "metrics"],
                           input=text, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

        # tkshm-inspect's metrics of the same files: the same metrics, with
        # the same types and values (one dashboard for both).  Its label
        # is the file's name.
        r = subprocess.run([os.environ["TKSHM_INSPECT_BIN"], "metrics",
                            h.path("api.tk"), h.path("lease.tk")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
        del types["tkshm_status_errors"]
        self.assertEqual(
            types, dict(re.findall(r"^# TYPE (\S+) (\S+)$", r.stdout, re.M)))
        theirs = prom_samples(r.stdout)
        for name in ("api", "lease"):
            label = 'table="%s"' % name
            mine = {k: v for k, v in got.items() if label in k}
            self.assertEqual(
                mine,
                {k.replace('table="%s.tk"' % name, label): v
                 for k, v in theirs.items() if '"%s.tk"' % name in k},
                name)
        # The lease table's cross-host tier: no agent serves it.
        self.assertEqual(
            got['tkshm_global_mode{table="lease",mode="lease"}'], 1)
        self.assertEqual(got['tkshm_agent_pid{table="lease"}'], 0)
        self.assertEqual(
            sum(v for k, v in got.items()
                if k.startswith('tkshm_fallback_decisions_total{table="lease"')),
            4)

    def test_read_only(self):
        h = self.httpd
        h.get("/api/")
        before = auto_tables(h.get("/tkshm-status?auto")[2])
        for _ in range(3):
            h.get("/tkshm-status?json")
            h.get("/tkshm-status?prometheus")
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
