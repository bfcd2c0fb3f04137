"""uvicorn (Debian's python3-uvicorn) with 4 workers serving the WSGI app
of test_gunicorn_lifecycle.py (--interface wsgi).  uvicorn starts its
workers with multiprocessing's spawn: each is a new interpreter that
imports the app, so nothing made before could be inherited.

- the middleware's default table: gcra 11 per day on one client admits
  exactly 11 of 80 across the workers; the control, a private anonymous
  table per worker, admits 11 per worker that served (48 was reported
  with 12 per day);
- an anonymous table is an error that says why in every worker.

Run as a script (ctest does): exits 77 (skipped) without uvicorn."""

import os
import subprocess
import sys
import time
import unittest

from test_gunicorn_lifecycle import GCRA_11, REQUESTS, WORKERS, Server, \
    burst
from web_servers import tally


class Uvicorn(Server):
    booted = "Application startup complete."

    def command(self, preload):
        assert not preload  # uvicorn has no such thing
        return self.uvicorn("app:application", WORKERS,
                            options=["--interface", "wsgi"])


class UvicornTest(unittest.TestCase):
    def serve(self, table):
        srv = Uvicorn(GCRA_11, False, table)
        self.addCleanup(srv.stop)
        srv.wait_booted(WORKERS)
        results = burst(srv.base)
        codes = [s for _, s, _ in results]
        self.assertEqual(codes.count(200) + codes.count(429), REQUESTS,
                         codes)
        _, per_worker = tally(results)
        self.assertGreaterEqual(len(per_worker), 2, per_worker)
        return srv, codes.count(200), per_worker

    def test_default_table_is_shared(self):
        srv, admitted, per_worker = self.serve("default")
        self.assertEqual(admitted, 11)
        self.assertEqual(len(os.listdir(os.path.join(srv.run, "tkshm"))), 1)
        print("uvicorn --workers %d, default table: %d of %d admitted "
              "(limit 11) across %d workers" % (
                  WORKERS, admitted, REQUESTS, len(per_worker)),
              file=sys.stderr)

    def test_private_tables_admit_per_worker(self):
        _, admitted, per_worker = self.serve("private")
        self.assertEqual(admitted,
                         sum(min(11, n) for n in per_worker.values()))
        self.assertGreater(admitted, 11)
        print("uvicorn --workers %d, private tables: %d of %d admitted "
              "(limit 11) across %d workers" % (
                  WORKERS, admitted, REQUESTS, len(per_worker)),
              file=sys.stderr)

    def test_anonymous_table_is_an_error(self):
        srv = Uvicorn(GCRA_11, False, "anonymous")
        self.addCleanup(srv.stop)
        error = ("RuntimeError: an anonymous table created in a "
                 "multiprocessing child (uvicorn --workers) is private to "
                 "this worker process")
        deadline = time.monotonic() + 15
        while (srv.text().count(error) < WORKERS
               and time.monotonic() < deadline):
            time.sleep(0.05)
        log = srv.text()
        self.assertEqual(log.count(error), WORKERS, log)
        self.assertNotIn(srv.booted, log)
        self.assertNotIn("tkshm change", log)
        print("uvicorn --workers %d, anonymous table: the error in each "
              "worker, none started" % WORKERS, file=sys.stderr)


if __name__ == "__main__":
    try:
        subprocess.run([sys.executable, "-c", "import uvicorn"], check=True,
                       stderr=subprocess.DEVNULL)
    except subprocess.CalledProcessError:
        print("skipped: uvicorn is not installed (apt-get install "
              "python3-uvicorn)", file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
