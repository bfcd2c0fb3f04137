"""gunicorn (Debian's) with 4 prefork workers and a table's lifecycle
(docs/lifecycle.md, bindings/python/README.md):

- without --preload every worker imports the app after the fork; the
  middleware's default table is a file named after the app in the run
  directory, so the 4 workers share one limit exactly: gcra 11 per day on
  one client admits 11 of 80 requests.  The control, one private
  anonymous table per worker, admits 11 per worker that served (44 with
  4), which is what the default table used to do;
- with --preload the same default table is as exact, and so is an
  anonymous table created before the fork (the prefork pattern);
- an anonymous table created at import without --preload is an error
  that says why: no worker boots, gunicorn stops, the log says it;
- a policy edited while requests keep coming, applied by a reload
  (SIGHUP: gunicorn starts new workers, which import the app again): no
  5xx, no failed request, and the key's count stands: limit 10 -> 20 per
  day on a key that used 10 admits exactly 10 more.

Run as a script (ctest does): exits 77 (skipped) without gunicorn."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import unittest

import web_servers
from web_servers import DAY_MS, fetch, fetch_all, tally

WORKERS = 4
REQUESTS = 80
CLIENTS = 8
GCRA_11 = "gcra:limit=11,periodMs=%d" % DAY_MS

# TKSHM_TEST_TABLE chooses the table: "default" (a policy string: the
# middleware's default table), "anonymous" (tkshm.Table(None, ...)) or
# "private" (the same with private=True).  Every response carries the pid
# of the worker that served it, 429s included.
APP = textwrap.dedent('''
    import os
    import sys
    import time

    import tkshm
    from tkshm.wsgi import RateLimitMiddleware

    with open(os.path.join(os.path.dirname(__file__), "policy.txt")) as f:
        POLICY = f.read().strip()
    MODE = os.environ["TKSHM_TEST_TABLE"]

    def inner(environ, start_response):
        time.sleep(0.005)  # keeps a worker busy, so that all serve
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok\\n"]

    def key(environ):
        if environ.get("PATH_INFO") == "/healthz":
            return None  # not counted
        return "one-client"

    if MODE == "default":
        # A policy string: the application's default table, one file for
        # every worker (tkshm.run_dir(): $XDG_RUNTIME_DIR/tkshm here).
        limited = RateLimitMiddleware(inner, POLICY, key_func=key,
                                      slots=1024)
    else:
        limited = RateLimitMiddleware(
            inner, tkshm.Table(None, POLICY, slots=1024,
                               private=MODE == "private"), key_func=key)
    c = limited.table.change
    print("tkshm change %d: %s: %s" % (os.getpid(), c.kind, c.text),
          file=sys.stderr, flush=True)

    def application(environ, start_response):
        def start(status, headers, exc_info=None):
            return start_response(
                status, list(headers) + [("X-Worker", str(os.getpid()))],
                exc_info)
        return limited(environ, start)
''')


class Server(web_servers.Server):
    """A gunicorn with WORKERS sync workers serving APP from a fresh
    directory, $XDG_RUNTIME_DIR in it (test_uvicorn.py: a uvicorn)."""

    def __init__(self, policy, preload, table="default"):
        now = time.time() * 1000
        if DAY_MS - now % DAY_MS < 60000:  # never across a window's end
            time.sleep((DAY_MS - now % DAY_MS) / 1000 + 1)
        super().__init__("tkshm-gunicorn-life-", {"app.py": APP})
        self.set_policy(policy)
        self.start(self.command(preload), TKSHM_TEST_TABLE=table)

    booted = "Booting worker"  # in the log, once per worker started

    def command(self, preload):
        return self.gunicorn("app:application", WORKERS, options=(
            ["--preload"] if preload else []))

    def set_policy(self, policy):
        with open(os.path.join(self.dir, "policy.txt"), "w") as f:
            f.write(policy + "\n")

    def wait_booted(self, n):
        super().wait_booted(n, 20)


def burst(base, n=REQUESTS):
    """n requests from CLIENTS threads: [(path, status, headers)]."""
    return fetch_all(base, ["/"] * n, CLIENTS)


class SharedLimitTest(unittest.TestCase):
    def serve(self, preload, table):
        srv = Server(GCRA_11, preload, table)
        self.addCleanup(srv.stop)
        srv.wait_booted(WORKERS)
        results = burst(srv.base)
        codes = [s for _, s, _ in results]
        self.assertEqual(codes.count(200) + codes.count(429), REQUESTS,
                         codes)
        _, per_worker = tally(results)
        # Otherwise a table per worker would pass the exactness test.
        self.assertGreaterEqual(len(per_worker), 2, per_worker)
        return srv, codes.count(200), per_worker

    def exact(self, preload, table):
        srv, admitted, per_worker = self.serve(preload, table)
        self.assertEqual(admitted, 11)
        print("gunicorn %s, %s table: %d of %d admitted (limit 11) across "
              "%d workers" % ("--preload" if preload else "without --preload",
                              table, admitted, REQUESTS, len(per_worker)),
              file=sys.stderr)
        return srv

    def test_default_table_without_preload(self):
        srv = self.exact(False, "default")
        tables = os.listdir(os.path.join(srv.run, "tkshm"))
        self.assertEqual(len(tables), 1, tables)
        self.assertTrue(tables[0].startswith("app.inner-"), tables)
        # One worker created it; the others attached as it was.
        log = srv.text()
        self.assertEqual(log.count(": create: "), 1, log)
        self.assertEqual(log.count(": none: "), WORKERS - 1, log)

    def test_default_table_with_preload(self):
        srv = self.exact(True, "default")
        self.assertEqual(len(os.listdir(os.path.join(srv.run, "tkshm"))), 1)

    def test_anonymous_table_with_preload(self):
        self.exact(True, "anonymous")

    def test_private_tables_admit_per_worker(self):
        # The control: what an anonymous table per worker does.  Each
        # worker admits its first 11, so the exactness above is the shared
        # table's doing, not the spread of the requests.
        _, admitted, per_worker = self.serve(False, "private")
        expect = sum(min(11, n) for n in per_worker.values())
        self.assertEqual(admitted, expect, per_worker)
        self.assertGreater(admitted, 11)
        print("gunicorn without --preload, private tables: %d of %d "
              "admitted (limit 11) across %d workers %s" % (
                  admitted, REQUESTS, len(per_worker),
                  sorted(per_worker.values())), file=sys.stderr)


class AnonymousAfterForkTest(unittest.TestCase):
    def test_anonymous_table_without_preload_stops_gunicorn(self):
        srv = Server(GCRA_11, False, "anonymous")
        self.addCleanup(srv.stop)
        try:
            code = srv.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.fail("gunicorn kept running:\n" + srv.text())
        log = srv.text()
        self.assertNotEqual(code, 0, log)
        self.assertIn("RuntimeError: an anonymous table created after "
                      "fork() is private to this worker process", log)
        self.assertIn("gunicorn --preload", log)
        self.assertNotIn("tkshm change", log)  # no worker got a table
        print("gunicorn without --preload, anonymous table: no worker "
              "booted, gunicorn exited %d with the error" % code,
              file=sys.stderr)


class ReloadTest(unittest.TestCase):
    def test_policy_edit_applied_by_a_reload(self):
        day = "fixedWindow:limit=%d,windowMs=" + str(DAY_MS)
        srv = Server(day % 10, False)
        self.addCleanup(srv.stop)
        srv.wait_booted(WORKERS)
        self.assertEqual(tally(burst(srv.base, 30))[0][200], 10)
        statuses, stop = [], threading.Event()

        def hammer():
            while not stop.is_set():
                try:
                    statuses.append(fetch(srv.base + "/")[0])
                except OSError as e:
                    statuses.append(repr(e))
                time.sleep(0.002)

        threads = [threading.Thread(target=hammer) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        srv.set_policy(day % 20)
        srv.proc.send_signal(signal.SIGHUP)  # new workers, new policy
        srv.wait_booted(2 * WORKERS)
        deadline = time.monotonic() + 10
        while statuses.count(200) < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # more requests after the 10: all denied
        stop.set()
        for t in threads:
            t.join()
        failed = [s for s in statuses if s not in (200, 429)]
        self.assertEqual(failed, [], "failed requests across the reload")
        self.assertEqual(statuses.count(200), 10, statuses)
        # The first new worker changed the live table in place; the
        # others found it changed.
        log = srv.text()
        self.assertEqual(log.count(": in_place: limit 10 -> 20, states "
                                   "kept"), 1, log)
        self.assertEqual(log.count(": none: "), 2 * WORKERS - 2, log)
        print("gunicorn reload: %d requests, 0 failed, 10 admitted before "
              "the edit and exactly 10 after it (limit 10 -> 20 per day, "
              "in place)" % len(statuses), file=sys.stderr)


if __name__ == "__main__":
    try:
        import gunicorn  # noqa: F401
    except ImportError:
        print("skipped: gunicorn is not installed (apt-get install "
              "gunicorn)", file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
