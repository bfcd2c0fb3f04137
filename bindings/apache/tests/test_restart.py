"""A table's state belongs to its file, not to httpd's processes:

- a graceful restart (SIGUSR1) and a restart (SIGHUP) read the
  configuration again and attach the same file: the counts go on;
- children killed with SIGKILL while they serve leave nothing to repair:
  the new children decide on the same state, never admitting more than
  the policy allows, and nothing waits.

Run as a script (ctest does): exits 77 (skipped) without httpd."""

import concurrent.futures
import os
import signal
import threading
import time
import unittest

import httpd

BURST = 20
RATE = 100  # paced: per second, after a burst of 10
SITE = """
TkshmTable api {dir}/api.tkshm gcra:limit=%d,periodMs=86400000
TkshmTable paced {dir}/paced.tkshm gcra:limit=%d,periodMs=1000,burst=10
<Location /api>
    TkshmLimit api
</Location>
<Location /paced>
    TkshmLimit paced
</Location>
""" % (BURST, RATE)


class RestartTest(unittest.TestCase):
    def setUp(self):
        self.httpd = httpd.Httpd(SITE, files={"api/index.html": "api\n",
                                              "paced/index.html": "p\n"})
        self.addCleanup(self.httpd.cleanup)

    def statuses(self, n):
        return [self.httpd.get("/api/")[0] for _ in range(n)]

    def test_state_survives_restarts(self):
        h = self.httpd
        h.start()
        self.assertEqual(self.statuses(6), [200] * 6)
        h.signal(signal.SIGUSR1)  # graceful: children finish, then go
        h.wait_ready(generation=2)
        self.assertEqual(self.statuses(6), [200] * 6)
        h.signal(signal.SIGHUP)  # restart: children are killed at once
        h.wait_ready(generation=3)
        self.assertEqual(self.statuses(BURST - 12 + 2),
                         [200] * (BURST - 12) + [429] * 2)

    def test_children_killed_while_serving(self):
        h = self.httpd
        h.start()
        done = threading.Event()
        statuses, failures = [], []

        def client():
            while not done.is_set():
                try:
                    statuses.append(h.get("/paced/")[0])
                except OSError:  # a connection to a killed child
                    failures.append(1)

        start = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            for _ in range(6):
                pool.submit(client)
            for _ in range(8):
                time.sleep(0.1)
                for pid in httpd.child_pids(h.proc.pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            time.sleep(0.2)
            done.set()
        elapsed = time.monotonic() - start

        # never more than the policy allows (burst + rate x time), though
        # children died in the middle of requests
        self.assertLessEqual(statuses.count(200), 10 + RATE * elapsed + 1)
        self.assertEqual(len(statuses), statuses.count(200) +
                         statuses.count(429), statuses)
        self.assertGreater(statuses.count(429), 0)
        # and the children httpd made since decide on the same state:
        # nothing was left locked
        h.wait_ready()
        self.assertIn(h.get("/paced/")[0], (200, 429))
        print("children killed 8 times in %.1f s: %d x 200 (at most %d), "
              "%d x 429, %d lost connections"
              % (elapsed, statuses.count(200), 10 + RATE * elapsed + 1,
                 statuses.count(429), len(failures)))


if __name__ == "__main__":
    httpd.skip_without_httpd()
    unittest.main(verbosity=2)
