"""An edited TkshmTable, applied by a restart to the live table (issue 19):

- a graceful restart (SIGUSR1) with a changed limit serves every request
  of a load running through it (no 5xx, no connection error), and the
  new limit applies to the state kept: a key that used 20 of 20 gets 20
  more under limit 40, not 40; for a table file and an anonymous table;
- a change of kind (gcra -> slidingWindow) and a larger slots= replace the
  table under the same load, the states carried over where the library
  says so;
- a restart (SIGHUP) applies a change too, under the same load (httpd
  ends the connections its children were serving then, and only those
  fail).

Run as a script (ctest does): exits 77 (skipped) without httpd."""

import grp
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import time
import unittest

import httpd
import test_status

# Windows no test outlives: fixedWindow's windows are aligned to the
# epoch, and 10^12 ms ones end in 2033; GCRA's day admits one more unit
# per 72 minutes at limit 20.
FOREVER = 1000000000000
DAY = 86400000

FIXED = """
TkshmTable api {dir}/api.tkshm fixedWindow:limit=%(limit)d,windowMs=%(w)d
TkshmTable anon anonymous fixedWindow:limit=%(limit)d,windowMs=%(w)d
"""

# The files give httpd's children the right to open them (children_access):
# a child of the generation before the restart follows a replaced file by
# its path (FollowTest).
REPLACED_BEFORE = """
TkshmTable kind {dir}/kind.tkshm gcra:limit=20,periodMs=%(d)d %(a)s
TkshmTable grow {dir}/grow.tkshm gcra:limit=20,periodMs=%(d)d slots=64 %(a)s
TkshmTable akind anonymous gcra:limit=20,periodMs=%(d)d
TkshmTable agrow anonymous gcra:limit=20,periodMs=%(d)d slots=64
"""
REPLACED_AFTER = """
TkshmTable kind {dir}/kind.tkshm slidingWindow:limit=30,windowMs=%(d)d %(a)s
TkshmTable grow {dir}/grow.tkshm gcra:limit=20,periodMs=%(d)d slots=1024 %(a)s
TkshmTable akind anonymous slidingWindow:limit=30,windowMs=%(d)d
TkshmTable agrow anonymous gcra:limit=20,periodMs=%(d)d slots=1024
"""


def locations(*tables):
    """A <Location /NAME> limited by table NAME for each, and the status
    handler."""
    out = ["<Location /tkshm-status>\n    SetHandler tkshm-status\n"
           "</Location>\n"]
    for t in tables:
        out.append("<Location /%s>\n    TkshmLimit %s\n</Location>\n"
                   % (t, t))
    return "".join(out)


def children_access():
    """mode= and group= that let httpd's children open a table file: the
    group they run as (httpd.py) may read and write it.  Empty when the
    tests do not run as root: the children are the creator then."""
    if os.geteuid() != 0:
        return ""
    gid = pwd.getpwnam(httpd.Httpd.child_user()).pw_gid
    return "mode=0660 group=%s" % grp.getgrgid(gid).gr_name


def changes(h):
    """{table: text} of the module's notices of what a start did."""
    found = {}
    for m in re.finditer(r"\[tkshm:notice\] .*? TkshmTable (\S+) at "
                         r"\S+(?: \([^)]*\))?: (.*)", h.output()):
        found[m.group(1)] = m.group(2).strip()
    return found


class ChangeTest(unittest.TestCase):
    mpm = "prefork"

    def make(self, site, tables):
        h = httpd.Httpd(site + locations(*tables), mpm=self.mpm,
                        files={"%s/index.html" % t: t + "\n"
                               for t in tables})
        self.addCleanup(h.cleanup)
        h.start()
        return h

    def admitted(self, load, want):
        """Until each path has its admissions in `want` ({path: n}) and
        denials after them."""
        load.wait(lambda l: all(l.counts(p)[200] >= n and
                                l.counts(p)[429] >= 5
                                for p, n in want.items()))

    def graceful_under_load(self, h, paths, before, after, new_site):
        """Runs a load over `paths`; once each path has `before`
        admissions (and is denied), edits the configuration to new_site
        and restarts gracefully; then waits for the admissions after(h)
        says ({path: n}, from what the restart logged) and 300 requests
        more on the new generation, none of which may be admitted beyond
        the new policy.  Returns the load, stopped, the restart's (signal,
        ready) times and after(h)."""
        with httpd.Load(h, paths) as load:
            self.admitted(load, {p: before for p in paths})
            h.write_conf(new_site)
            t_signal = time.monotonic()
            h.signal(signal.SIGUSR1)
            h.wait_ready(generation=2)
            t_ready = time.monotonic()
            want = after(h)
            self.admitted(load, want)
            t_admitted = time.monotonic()
            load.wait(lambda l: len(l.snapshot(t_admitted)) >= 300)
        return load, t_signal, t_ready, want

    def assertAllDecided(self, h, load):
        """Every request the load made was decided by its table: none
        was let through by TkshmOnError (%{tkshm}n "error")."""
        answered = [r for r in load.snapshot() if r[2] is not None]
        rows = h.access_log(lambda r: r[4] != "/healthz",
                            rows=len(answered))
        self.assertGreaterEqual(len(rows), len(answered))
        self.assertEqual([r for r in rows if r[3] == "error"], [])

    def report(self, what, load, t_signal, t_ready):
        every = load.snapshot()
        print("%s, %s: %d requests (%d while the restart ran, %.0f ms; "
              "%d after), %d failed; %s"
              % (self.mpm, what, len(every),
                 len([r for r in every if t_signal <= r[0] <= t_ready]),
                 (t_ready - t_signal) * 1000,
                 len(load.snapshot(t_ready)), len(load.failures()),
                 {p: dict(load.counts(p)) for p in load.paths}))

    def test_graceful_in_place_under_load(self):
        site = FIXED + locations("api", "anon")
        h = self.make(FIXED % {"limit": 20, "w": FOREVER}, ["api", "anon"])
        paths = ["/api/", "/anon/"]
        # the old policy's 20 before the restart, 20 more (40 - 20 kept)
        # after it: 40 in all, not 60
        load, t_signal, t_ready, _ = self.graceful_under_load(
            h, paths, 20, lambda h: {p: 40 for p in paths},
            site % {"limit": 40, "w": FOREVER})
        self.report("in place", load, t_signal, t_ready)
        self.assertEqual(load.failures(), [])
        self.assertAllDecided(h, load)
        for p in paths:
            self.assertEqual(load.counts(p)[200], 40, p)
            self.assertEqual(
                len([r for r in load.snapshot() if r[1] == p and
                     r[2] == 200 and r[0] < t_signal]), 20, p)
        said = changes(h)
        self.assertEqual(said["api"], "limit 20 -> 40, states kept")
        self.assertEqual(said["anon"], "limit 20 -> 40, states kept")

    @unittest.skipUnless(shutil.which("wrk"), "wrk is not installed")
    def test_graceful_under_wrk(self):
        """wrk (8 keep-alive connections) through a graceful restart that
        raises a file table's limit from 20 to 40: no socket error and no
        answer but 200 and 429, 40 admitted in all.  wrk waits 10 s for
        an answer: with the event MPM and this harness's ServerLimit 2,
        httpd starts the new generation's children at its next
        once-a-second maintenance pass, so some answers wait 1-2 s (the
        latency printed), which wrk's default 2 s would call timeouts."""
        h = self.make(FIXED % {"limit": 20, "w": FOREVER}, ["api"])
        site = FIXED + locations("api")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "wrk_status.lua")
        wrk = subprocess.Popen(
            ["wrk", "-t2", "-c8", "-d4s", "--timeout", "10s", "-s", script,
             "http://127.0.0.1:%d/api/" % h.port],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1.5)
        h.write_conf(site % {"limit": 40, "w": FOREVER})
        h.signal(signal.SIGUSR1)
        h.wait_ready(generation=2)
        out, _ = wrk.communicate(timeout=30)
        self.assertEqual(wrk.returncode, 0, out)
        self.assertNotIn("Socket errors", out, out)
        statuses = re.search(r"statuses 200=(\d+) 429=(\d+) other=(\d+)",
                             out)
        self.assertIsNotNone(statuses, out)
        ok, denied, other = map(int, statuses.groups())
        self.assertEqual((ok, other), (40, 0), out)
        worst = re.search(r"Latency\s+\S+\s+\S+\s+(\S+)", out)
        print("%s, wrk through a graceful restart: %d requests, 0 socket "
              "errors, 40 x 200, %d x 429, 0 other, slowest answer %s"
              % (self.mpm, ok + denied, denied,
                 worst.group(1) if worst else "?"))

    def test_graceful_replacement_under_load(self):
        tables = ["kind", "grow", "akind", "agrow"]
        h = self.make(REPLACED_BEFORE % {"d": DAY, "a": children_access()},
                      tables)
        paths = ["/%s/" % t for t in tables]

        def after(h):
            # a new kind: 30 more when the library says the keys start
            # afresh (gcra's state is no window count), 10 more when it
            # converts them (the 20 spent count against the 30); more
            # slots: the spent key carried over, nothing more that day
            said = changes(h)
            return {"/kind/": 20 + (30 if said["kind"].endswith(
                        "keys start afresh") else 10),
                    "/akind/": 20 + (30 if said["akind"].endswith(
                        "keys start afresh") else 10),
                    "/grow/": 20, "/agrow/": 20}

        load, t_signal, t_ready, want = self.graceful_under_load(
            h, paths, 20, after,
            REPLACED_AFTER % {"d": DAY, "a": children_access()} +
            locations(*tables))
        self.report("replaced", load, t_signal, t_ready)
        self.assertEqual(load.failures(), [])
        self.assertAllDecided(h, load)
        said = changes(h)
        status = test_status.auto_tables(h.get("/tkshm-status?auto")[2])
        for t in tables:
            self.assertEqual(load.counts("/%s/" % t)[200],
                             want["/%s/" % t], said[t])
        for t in ("kind", "akind"):
            self.assertIn("kind gcra -> slidingWindow", said[t])
            self.assertIn(": replaced, ", said[t])
            self.assertTrue(status[t]["Policy"].startswith(
                "slidingWindow:"), status[t])
        for t in ("grow", "agrow"):
            self.assertEqual(said[t], "slots 64 -> 1024: replaced, states "
                             "carried over")
            self.assertEqual(status[t]["Slots"], "1024")

    def test_restart_applies(self):
        h = self.make(FIXED % {"limit": 20, "w": FOREVER}, ["api", "anon"])
        paths = ["/api/", "/anon/"]
        with httpd.Load(h, paths) as load:
            self.admitted(load, {p: 20 for p in paths})
            h.write_conf(FIXED % {"limit": 40, "w": FOREVER} +
                         locations("api", "anon"))
            t_signal = time.monotonic()
            h.signal(signal.SIGHUP)  # children are stopped at once
            h.wait_ready(generation=2)
            t_ready = time.monotonic()
            self.admitted(load, {p: 40 for p in paths})
            t_admitted = time.monotonic()
            load.wait(lambda l: len(l.snapshot(t_admitted)) >= 300)
        self.report("restart", load, t_signal, t_ready)
        # a restart ends the connections its children were serving (httpd
        # does, whatever the modules): those fail, nothing else does
        for r in load.failures():
            self.assertIsNone(r[2], r)
            self.assertTrue(t_signal <= r[0] <= t_ready, r)
        for p in paths:
            self.assertEqual(load.counts(p)[200], 40, p)
        self.assertAllDecided(h, load)
        said = changes(h)
        self.assertEqual(said["api"], "limit 20 -> 40, states kept")
        self.assertEqual(said["anon"], "limit 20 -> 40, states kept")


class EventChangeTest(ChangeTest):
    """The same under the event MPM: threads of a process decide on the
    table while its parent changes it."""
    mpm = "event"


class FollowTest(unittest.TestCase):
    """A child of the generation before a graceful restart that checks a
    request after the change: it decides on the changed table (a file
    changed in place, an anonymous table changed in place), or on the old
    anonymous table (replaced for the new generation only), or follows a
    replaced file, which it may open only if mode= and group= let it
    (the module warns when they do not).  Prefork: the event MPM of these
    tests has no scoreboard room for a new generation while the old one
    holds connections."""

    TABLES = ["inpl", "ainpl", "akind", "shared", "private"]
    SITE = """
TkshmTable inpl {dir}/inpl.tkshm gcra:limit=%(l)d,periodMs=%(d)d
TkshmTable ainpl anonymous gcra:limit=%(l)d,periodMs=%(d)d
TkshmTable akind anonymous %(kind)s
TkshmTable shared {dir}/shared.tkshm %(kind)s %(access)s
TkshmTable private {dir}/private.tkshm %(kind)s
"""

    def site(self, limit, kind):
        return self.SITE % {"l": limit, "d": DAY, "kind": kind,
                            "access": self.access} + \
            locations(*self.TABLES)

    def setUp(self):
        self.access = children_access()
        self.httpd = httpd.Httpd(
            self.site(20, "gcra:limit=20,periodMs=%d" % DAY),
            files={"%s/index.html" % t: t + "\n" for t in self.TABLES})
        self.addCleanup(self.httpd.cleanup)

    def held(self, path):
        """A connection to a child, which reads the request's headers
        until release() sends their end."""
        s = socket.create_connection(("127.0.0.1", self.httpd.port),
                                     timeout=20)
        s.sendall(b"GET %s HTTP/1.1\r\nHost: t\r\n" % path.encode())
        self.addCleanup(s.close)
        return s

    @staticmethod
    def release(s):
        s.sendall(b"Connection: close\r\n\r\n")
        return s.recv(64).split(b"\r\n")[0]

    def test_old_generation_after_the_change(self):
        h = self.httpd
        h.start()
        for t in self.TABLES:  # 19 of 20 spent
            self.assertEqual([h.get("/%s/" % t)[0] for _ in range(19)],
                             [200] * 19)
        held = {t: self.held("/%s/" % t) for t in self.TABLES}
        # every held request is read by a child of generation 1
        time.sleep(0.3)
        h.write_conf(self.site(
            40, "slidingWindow:limit=30,windowMs=%d" % DAY))
        h.signal(signal.SIGUSR1)
        h.wait_ready(generation=2)
        for t in self.TABLES:
            self.assertEqual(self.release(held[t]), b"HTTP/1.1 200 OK", t)
        notes = {t: h.access_log(lambda r, t=t: r[4].startswith("/%s/" % t),
                                 rows=20)[-1][3] for t in self.TABLES}
        # in place: the 20th of 40; the old anonymous table: its 20th of
        # 20; the shared file followed: the first of a new window
        for t in ("inpl", "ainpl", "akind", "shared"):
            self.assertEqual(notes[t], "allowed", t)
        if self.access:
            self.assertRegex(h.output(), r"TkshmTable private at \S+: the "
                             r"children of the previous generation cannot "
                             r"open \S+ \(mode 0600\) to follow its "
                             r"replacement")
            self.assertNotRegex(h.output(), r"TkshmTable shared at \S+: "
                                r"the children of the previous")
        print("old generation's checks after the change: %s" % notes)


if __name__ == "__main__":
    httpd.skip_without_httpd()
    unittest.main(verbosity=2)
