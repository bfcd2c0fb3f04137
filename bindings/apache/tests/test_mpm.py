"""httpd with one table, under the MPM named on the command line:

  prefork  4 to 8 child processes, a gcra table
  event    2 child processes of 8 threads each, a tokenBucket table

200 requests from 8 client threads must give exactly 50 x 200 and
150 x 429 across the children and threads (and 4 clients on 4 loopback
addresses, 100 requests each, exactly 50 x 200 each), each admission seeing its own
remaining count (49 .. 0: a request is counted once, though mod_dir's
index and the ErrorDocument are internal redirects of it), with the
draft's RateLimit headers and Retry-After.  The test starts and stops
httpd itself.

Run as a script (ctest does): test_mpm.py prefork|event; exits 77
(skipped) without httpd."""

import concurrent.futures
import sys
import unittest

import httpd

LIMIT = 50
REQUESTS = 200
CLIENTS = 8
DAY_MS = 86400000
# Both: 50 at once, then one more every 1,728 s (none during the test).
EMISSION_S = DAY_MS // LIMIT // 1000
POLICIES = {
    "prefork": "gcra:limit=%d,periodMs=%d" % (LIMIT, DAY_MS),
    "event": "tokenBucket:capacity=%d,refillPerSec=%r"
             % (LIMIT, LIMIT * 1000.0 / DAY_MS),
}
MPM = None  # from the command line

SITE = """
TkshmTable api {dir}/api.tkshm %s slots=1024
<Location /api>
    TkshmLimit api
</Location>
ErrorDocument 429 /api/429.html
"""


class MpmTest(unittest.TestCase):
    def setUp(self):
        self.httpd = httpd.Httpd(SITE % POLICIES[MPM], mpm=MPM, files={
            "api/index.html": "api\n", "api/429.html": "slow down\n"})
        self.addCleanup(self.httpd.cleanup)

    def test_exact_admission_across_workers(self):
        h = self.httpd
        h.start()
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            results = list(pool.map(lambda _: h.get("/api/"),
                                    range(REQUESTS)))
        codes = [s for s, _, _ in results]
        self.assertEqual(codes.count(200), LIMIT, codes)
        self.assertEqual(codes.count(429), REQUESTS - LIMIT, codes)

        ok = [hd for s, hd, _ in results if s == 200]
        denied = [(hd, body) for s, hd, body in results if s == 429]
        remaining = sorted(int(hd["RateLimit"].split(";r=")[1]
                               .split(";")[0]) for hd in ok)
        self.assertEqual(remaining, list(range(LIMIT)))
        for hd in ok:
            self.assertEqual(hd["RateLimit-Policy"], '"api";q=%d' % LIMIT)
            self.assertNotIn("Retry-After", hd)
        for hd, body in denied:
            self.assertEqual(body, b"slow down\n")  # the ErrorDocument
            self.assertEqual(hd["RateLimit-Policy"], '"api";q=%d' % LIMIT)
            rl = hd["RateLimit"]
            self.assertTrue(rl.startswith('"api";r=0;t='), rl)
            # the next admission is one emission interval away
            retry = int(hd["Retry-After"])
            self.assertLessEqual(abs(retry - EMISSION_S), 2, retry)

        log = h.access_log(lambda row: row[4] != "/healthz", rows=REQUESTS)
        self.assertEqual(len(log), REQUESTS)
        # prefork: children; event: threads (of one or both children)
        workers = {(pid, tid) for pid, tid, status, _, _ in log
                   if status == 200}
        self.assertGreaterEqual(len(workers), 2, "one worker served all")
        notes = [row[3] for row in log]
        self.assertEqual(notes.count("allowed"), LIMIT)
        self.assertEqual(notes.count("denied"), REQUESTS - LIMIT)
        print("%s: %d x 200 by %d workers in %d processes, %d x 429"
              % (MPM, len(ok), len(workers),
                 len({pid for pid, _ in workers}), len(denied)),
              file=sys.stderr)

    def test_several_clients(self):
        """4 clients (4 loopback addresses, so 4 keys), 100 requests each,
        interleaved over 8 connections' threads: exactly LIMIT admissions
        for each client, whichever worker served it."""
        h = self.httpd
        h.start()
        sources = ["127.0.0.%d" % i for i in range(1, 5)]
        order = [sources[i % len(sources)] for i in range(4 * 100)]
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            results = list(pool.map(lambda src: (src, h.get("/api/",
                                                            source=src)),
                                    order))
        for src in sources:
            codes = [r[0] for s, r in results if s == src]
            self.assertEqual(codes.count(200), LIMIT, (src, codes))
            self.assertEqual(codes.count(429), 100 - LIMIT, (src, codes))


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in POLICIES:
        sys.exit("usage: test_mpm.py prefork|event [unittest args]")
    MPM = sys.argv.pop(1)
    httpd.skip_without_httpd()
    unittest.main(verbosity=2)
