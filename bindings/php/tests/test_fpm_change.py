"""An application's policy edited while PHP-FPM serves it (issue 19: a
table's lifecycle).  The pool (test_fpm.FpmPool: 4 static workers) serves
an app.php that this test writes, with the policy as a literal in the
script, as a site's index.php has it; client threads request it without a
pause while the script is edited (written aside and renamed over, as a
deploy does) and:

- reloaded: opcache on without revalidation, so the workers run the old
  script until `kill -USR2` of the master (php-fpm's reload) starts new
  ones.  gcra 10 per day with a burst of 10, edited to a burst of 20:
  exactly 10 admitted before the reload (none between the edit and the
  reload), exactly 10 more after it, one worker reporting the in-place
  change;
- not reloaded: no opcache, so every request compiles the script and the
  workers pick up the edit at once, on handles they keep open across
  requests.  fixedWindow 10 -> 20 (in place: exactly 10 more), then slots
  1024 -> 4096 (a replacement carrying the states: nothing more).

Every request must be answered 200 or 429: no 500 (an uncaught
Tkshm\\Exception), no connection error, at any point.

Run as a script (ctest does) with TKSHM_PHP_SO and TKSHM_PHP_FPM; exits 77
(skipped) when php-fpm is not installed."""

import collections
import json
import os
import signal
import sys
import threading
import time
import unittest

import fastcgi
import test_fpm
from test_fpm import FPM, SO, WORKERS, children_of

DAY = 86400000
# fixedWindow windows are aligned to the epoch: this one ends in 2033.
FOREVER = 1000000000000
CLIENTS = 4

# As in production: an uncaught exception is a 500 (with display_errors
# on, PHP sends the message with a 200), logged to the pool's log.
QUIET = ["display_errors=0", "log_errors=1"]

APP = """<?php
// Written by test_fpm_change.py, which edits the policy while the pool
// serves this script.  Exceptions are not caught: one would be a 500.
$t = new Tkshm\\Table('{table}', '{policy}', {slots});
$out = [
    'pid' => getmypid(),
    'policy' => $t->policy(),
    'slots' => $t->stats()['slots'],
    'change' => $t->change(),
    'opcache' => function_exists('opcache_get_status') &&
        (opcache_get_status(false)['opcache_enabled'] ?? false),
];
if (($_GET['op'] ?? 'check') === 'check') {{
    $d = $t->check('k');
    $out['allowed'] = $d->allowed;
    if (!$d->allowed) {{
        http_response_code(429);
    }}
}}
header('Content-Type: application/json');
echo json_encode($out), "\\n";
"""


class Load:
    """CLIENTS threads requesting op=check without a pause until stop();
    every answer (or failure to answer) is recorded as
    (sent, done, status or None, JSON or None, problem or None)."""

    def __init__(self, test):
        self.test = test
        self.lock = threading.Lock()
        self.records = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run)
                        for _ in range(CLIENTS)]

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join()

    def run(self):
        while not self.stopping.is_set():
            sent = time.monotonic()
            status, body, problem = None, None, None
            try:
                r = fastcgi.request(self.test.addr,
                                    self.test.params("op=check"))
                status = r.status
                if r.stderr:
                    problem = r.stderr.decode("utf-8", "replace")
                try:
                    body = json.loads(r.body)
                except ValueError:
                    problem = (problem or "") + " body: %r" % r.body[:300]
            except (OSError, fastcgi.ProtocolError) as e:
                problem = repr(e)
            with self.lock:
                self.records.append((sent, time.monotonic(), status, body,
                                     problem))

    def snapshot(self, since=0.0, until=float("inf")):
        """The records of requests sent in [since, until)."""
        with self.lock:
            return [r for r in self.records if since <= r[0] < until]

    def wait(self, what, predicate, timeout=8):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self):
                return
            time.sleep(0.02)
        self.test.fail("waited %d s for %s; statuses %s\n%s"
                       % (timeout, what, self.statuses(),
                          self.test.fpm_log()))

    def statuses(self, since=0.0, until=float("inf")):
        """Statuses of the requests sent in [since, until)."""
        return collections.Counter(r[2] for r in self.snapshot(since, until))

    def admitted(self, sent_from=0.0, done_by=float("inf"), policy=None):
        """200s of the requests sent from `sent_from` and answered by
        `done_by` (a request in flight at a mark is on either side of it),
        that ran `policy` if given."""
        return len([r for r in self.snapshot(sent_from)
                    if r[1] < done_by and r[2] == 200 and
                    (policy is None or r[3]["policy"] == policy)])

    def failures(self):
        return [r for r in self.snapshot()
                if r[2] not in (200, 429) or r[4] is not None]


class ChangeTest(test_fpm.FpmPool):
    def setUp(self):
        super().setUp()
        self.app = os.path.join(self.dir, "app.php")
        self.table = os.path.join(self.dir, "app.tkshm")

    def write_app(self, policy, slots):
        """The script with this policy, renamed over the old one: a worker
        compiles the old file or the new one, never half of one."""
        tmp = self.app + ".new"
        with open(tmp, "w") as f:
            f.write(APP.format(table=self.table, policy=policy,
                               slots=slots))
        os.replace(tmp, self.app)

    def served(self, load, policy, since, n):
        """At least n answers, sent after `since`, that ran `policy`."""
        return lambda l: len([r for r in l.snapshot(since)
                              if r[3] and r[3]["policy"] == policy]) >= n

    def report(self, what, load, counts):
        """One line for the log: requests, failures, and `counts`, a list
        of (what, number) pairs."""
        every = load.snapshot()
        print("%s: %d requests from %d workers in %.2f s, %d failed "
              "(500s: %d); %s"
              % (what, len(every),
                 len(set(r[3]["pid"] for r in every if r[3])),
                 max(r[1] for r in every) - min(r[0] for r in every),
                 len(load.failures()), load.statuses()[500],
                 "; ".join("%s %s" % c for c in counts)), file=sys.stderr)

    def changes(self, load):
        """(kind, text) of every answer's change(), counted."""
        return collections.Counter(
            (r[3]["change"]["kind"], r[3]["change"]["text"])
            for r in load.snapshot() if r[3])

    def test_edit_then_reload(self):
        a = "gcra:limit=10,periodMs=%d" % DAY
        b = "gcra:limit=10,periodMs=%d,burst=20" % DAY
        a_canon, b_canon = a + ",burst=10", b
        self.write_app(a, 1024)
        # opcache without revalidation (and caching the script however
        # new it is): the edit waits for the reload.  The reload lets the
        # requests in flight finish: without process_control_timeout the
        # master ends them (php-fpm's behaviour, whatever the extension).
        self.start(QUIET + ["zend_extension=opcache", "opcache.enable=1",
                            "opcache.validate_timestamps=0",
                            "opcache.file_update_protection=0"],
                   env={}, globals_="process_control_timeout = 10s\n")
        first = self.wait_ready()
        self.assertTrue(first.json["opcache"], "opcache is not on")
        old_workers = set(children_of(self.proc.pid))
        with Load(self) as load:
            # the old policy: 10 at once, then denials
            load.wait("10 admitted and 40 denied", lambda l:
                      l.statuses()[200] >= 10 and l.statuses()[429] >= 40)
            t_edit = time.monotonic()
            self.write_app(b, 1024)
            # edited, not reloaded: every worker still runs the old script
            load.wait("100 answers after the edit", lambda l:
                      len(l.snapshot(t_edit)) >= 100)
            t_signal = time.monotonic()
            os.kill(self.proc.pid, signal.SIGUSR2)
            load.wait("the new workers", lambda l: self.served(
                l, b_canon, t_signal, 1)(l))
            # the first answer of the new generation
            t_ready = min(r[1] for r in load.snapshot(t_signal)
                          if r[3] and r[3]["policy"] == b_canon)
            # the new policy: 10 more, then denials again
            load.wait("200 answers after the reload", self.served(
                load, b_canon, t_ready, 200))
        self.report("edit, then reload (kill -USR2)", load, [
            ("admitted before the edit:", load.admitted(done_by=t_edit)),
            ("between the edit and the reload:",
             load.admitted(t_edit, t_signal)),
            ("under the old policy:", load.admitted(policy=a_canon)),
            ("under the new policy:", load.admitted(policy=b_canon)),
            ("reload (signal to the first new answer): %.0f ms"
             % ((t_ready - t_signal) * 1000), ""),
            ("changes reported:", dict(self.changes(load)))])
        self.assertEqual(load.failures(), [])
        # the old policy's 10, none while the edit waited for the reload,
        # and the new policy's 10 more
        self.assertEqual(load.admitted(done_by=t_edit), 10)
        self.assertEqual(load.admitted(t_edit, t_signal), 0)
        self.assertEqual(load.admitted(policy=a_canon), 10)
        self.assertEqual(load.admitted(policy=b_canon), 10)
        self.assertEqual(load.admitted(), 20)
        for r in load.snapshot():
            if r[1] < t_signal:
                self.assertEqual(r[3]["policy"], a_canon, r)
                self.assertIn(r[3]["pid"], old_workers, r)
        new_workers = set(children_of(self.proc.pid))
        self.assertFalse(new_workers & old_workers, "the pool was reloaded")
        for r in load.snapshot(t_ready):
            self.assertEqual(r[3]["policy"], b_canon, r)
            self.assertIn(r[3]["pid"], new_workers, r)
        # the first new worker to open the table changed it in place; the
        # others found it changed
        # (a request queued before the signal may be its first answer)
        self.assertEqual(self.changes(load), collections.Counter({
            ("in_place", "burst 10 -> 20, states kept"): 1,
            ("none", "unchanged"): len(load.snapshot()) - 1}))

    def test_edit_without_reload(self):
        a = "fixedWindow:limit=10,windowMs=%d" % FOREVER
        b = "fixedWindow:limit=20,windowMs=%d" % FOREVER
        self.write_app(a, 1024)
        # no opcache (php-fpm -n): every request compiles the script
        self.start(QUIET, env={})
        first = self.wait_ready()
        self.assertFalse(first.json["opcache"])
        workers = set(children_of(self.proc.pid))
        with Load(self) as load:
            load.wait("10 admitted and 40 denied", lambda l:
                      l.statuses()[200] >= 10 and l.statuses()[429] >= 40)
            t_edit = time.monotonic()
            self.write_app(b, 1024)
            # every worker has run the new script, and denies again
            load.wait("each worker on the new policy", lambda l: set(
                r[3]["pid"] for r in l.snapshot(t_edit)
                if r[3] and r[3]["policy"] == b) == workers)
            load.wait("20 admitted and 40 denied after the edit", lambda l:
                      l.statuses()[200] >= 20 and
                      l.statuses(t_edit)[429] >= 40)
            t_grow = time.monotonic()
            self.write_app(b, 4096)
            load.wait("each worker on the grown table", lambda l: set(
                r[3]["pid"] for r in l.snapshot(t_grow)
                if r[3] and r[3]["slots"] == 4096) == workers)
            t_grown = time.monotonic()
            load.wait("100 answers after the growth", lambda l:
                      len(l.snapshot(t_grown)) >= 100)
        self.report("edits without reload", load, [
            ("admitted before the edit:", load.admitted(done_by=t_edit)),
            ("in all:", load.admitted()),
            ("after the growth:", load.admitted(t_grow)),
            ("changes reported:", dict(self.changes(load)))])
        self.assertEqual(load.failures(), [])
        self.assertEqual(set(children_of(self.proc.pid)), workers,
                         "no worker was replaced")
        # 10 under the old limit, 10 more under the new one (a request in
        # flight at the edit may have run either script), none after the
        # growth: the replacement carried the spent key over
        self.assertEqual(load.admitted(done_by=t_edit), 10)
        self.assertEqual(load.admitted(), 20)
        self.assertEqual(load.admitted(t_grow), 0)
        seen = self.changes(load)
        # each edit was applied by the first worker to run it; a request
        # that began on the old script as another applied the new one may
        # put the old limit back for a moment (it asked for it), so the
        # in-place change can be reported more than once, never the
        # replacement (the old script's smaller slots only keep the size)
        self.assertGreaterEqual(
            seen[("in_place", "limit 10 -> 20, states kept")], 1, seen)
        self.assertEqual(
            seen[("replace", "slots 1024 -> 4096: replaced, states carried "
                  "over")], 1, seen)
        for r in load.snapshot(t_grown):
            self.assertEqual((r[3]["policy"], r[3]["slots"]), (b, 4096), r)


if __name__ == "__main__":
    if not FPM or not os.access(FPM, os.X_OK):
        print("skipped: php-fpm is not installed (apt-get install "
              "php8.2-fpm)", file=sys.stderr)
        sys.exit(77)
    if not SO or not os.path.exists(SO):
        print("TKSHM_PHP_SO must name the built tkshm.so", file=sys.stderr)
        sys.exit(2)
    unittest.main(verbosity=2)
