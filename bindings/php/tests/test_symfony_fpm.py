"""Symfony RateLimiter code on tkshm across a PHP-FPM pool: the pool of
test_fpm.py (FpmPool: 4 static workers on a free loopback port, driven
over FastCGI) serves symfony_fpm_app.php, which builds
Tkshm\\Symfony\\TkshmRateLimiterFactory in every request and calls
create($key)->consume(1)->ensureAccepted() as Symfony code does.

For each of token_bucket, fixed_window and sliding_window, KEYS keys x
PER_KEY requests from CLIENTS threads against a limit of LIMIT (nothing
refills during the test): exactly LIMIT answered 200 per key, whichever
workers served them, the admissions' remaining tokens LIMIT-1 .. 0 once
each, the X-RateLimit headers, and no worker opening a table more than
once (Table::openCount() at most one per policy).

Run as a script (ctest does) with TKSHM_PHP_SO and TKSHM_PHP_FPM; exits 77
(skipped) when php-fpm or Debian's php-symfony-rate-limiter is missing."""

import collections
import concurrent.futures
import os
import sys
import time
import unittest

from test_fpm import FPM, SO, FpmPool

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "symfony_fpm_app.php")
RATE_LIMITER = "/usr/share/php/Symfony/Component/RateLimiter/autoload.php"

POLICIES = ["token_bucket", "fixed_window", "sliding_window"]
LIMIT = 15
KEYS = ["alice", "bob", "carol"]
PER_KEY = 40
CLIENTS = 8


class SymfonyFpmTest(FpmPool):
    app = APP

    def test_exact_across_workers(self):
        t0 = time.monotonic()
        self.start(env={"TKSHM_TEST_DIR": self.dir,
                        "TKSHM_TEST_LIMIT": str(LIMIT)})
        self.wait_ready_app()
        queries = [(p, k) for _ in range(PER_KEY) for p in POLICIES
                   for k in KEYS]
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            rs = list(pool.map(
                lambda q: self.get("policy=%s&key=%s" % q), queries))
        status = collections.Counter()
        remaining = collections.defaultdict(list)
        pids = collections.Counter()
        for (policy, key), r in zip(queries, rs):
            status[(policy, key, r.status)] += 1
            pids[r.json["pid"]] += 1
            self.assertLessEqual(r.json["opens"], len(POLICIES), r.json)
            self.assertEqual(r.headers["X-RateLimit-Limit"], str(LIMIT))
            self.assertEqual(r.headers["X-RateLimit-Remaining"],
                             str(r.json["remaining"]))
            if r.status == 200:
                self.assertTrue(r.json["accepted"], r.json)
                remaining[(policy, key)].append(r.json["remaining"])
            else:
                self.assertEqual(r.status, 429, r.body)
                self.assertFalse(r.json["accepted"], r.json)
                self.assertEqual(r.json["remaining"], 0, r.json)
                # nothing refills before 2070 at the earliest
                self.assertGreater(int(r.headers["X-RateLimit-Retry-After"]),
                                   time.time() + 40 * 365 * 86400, r.headers)
        for policy in POLICIES:
            for key in KEYS:
                self.assertEqual(status[(policy, key, 200)], LIMIT,
                                 (policy, key, status))
                self.assertEqual(status[(policy, key, 429)],
                                 PER_KEY - LIMIT, (policy, key, status))
                self.assertEqual(sorted(remaining[(policy, key)]),
                                 list(range(LIMIT)), (policy, key))
        self.assertGreaterEqual(len(pids), 2, "one worker served all")
        print("php-fpm + Symfony RateLimiter on tkshm: %d workers served "
              "%d requests, exactly %d admitted per key and policy; %.1f s"
              % (len(pids), len(rs), LIMIT, time.monotonic() - t0),
              file=sys.stderr)

    def wait_ready_app(self):
        """FpmPool.wait_ready() with a request this app answers (a key no
        test counts)."""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            self.assertIsNone(self.proc.poll(),
                              "php-fpm exited:\n" + self.fpm_log())
            try:
                return self.get("policy=token_bucket&key=ping")
            except OSError:
                time.sleep(0.05)
        self.fail("php-fpm did not start:\n" + self.fpm_log())


if __name__ == "__main__":
    if not FPM or not os.access(FPM, os.X_OK):
        print("skipped: php-fpm is not installed (apt-get install "
              "php8.2-fpm)", file=sys.stderr)
        sys.exit(77)
    if not os.path.exists(RATE_LIMITER):
        print("skipped: Symfony's RateLimiter is not installed (apt-get "
              "install php-symfony-rate-limiter)", file=sys.stderr)
        sys.exit(77)
    if not SO or not os.path.exists(SO):
        print("TKSHM_PHP_SO must name the built tkshm.so", file=sys.stderr)
        sys.exit(2)
    unittest.main(verbosity=2)
