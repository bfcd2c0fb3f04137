# ctest: TIMEOUT 240
"""tkshm.Redis on a Redis Cluster and on a Sentinel-managed primary, with
real processes (issue 21, item 6; the C tests' scenarios,
tests/redis/test_redis_cluster.c and test_redis_sentinel.c, from Python):

- a cluster of 3 masters with a replica each (redis-cli --cluster
  create): a strict table admits exactly its limit for a key on each
  master, checked at once by forked processes (two hosts opening their
  own tkshm.Redis after the fork, two sharing the parent's, already
  connected); a slot moved under load (ASK, then MOVED): still exactly
  the limit, no failure; a master killed: fail-closed denies until its
  replica is promoted, then the key goes on from the replica's count; a
  caller's hash tag places the keys; check_multi across slots raises
  ECROSSSLOT, nothing sent, and with one tag is one script;
- a lease table on the cluster, two hosts (two table files, each served
  by its own tkshm-syncd): at most the limit in every window;
- a primary, its replica and 3 sentinels: exactly the limit; the primary
  killed: fail-closed denies during the outage and admits nothing there,
  the checks go on after the promotion, the limit exact overall.

Run by ctest (python_redis_cluster) in the wheel's venv; exits 77
(skipped) without redis-server and redis-cli or without the library's
Redis tier.  tkshm-syncd is $TKSHM_SYNCD, or the build's
($TKSHM_BUILD_DIR/tools/...); without it the lease test is skipped.
Every server is this process's own (redis_servers.py): 127.0.0.1, free
ports below 45536, stopped by pid and process group, directories
removed.  The figures are printed.
"""

import multiprocessing
import os
import shutil
import signal
import sys
import time
import unittest

import tkshm

import redis_servers as rs

# Workers are forked: they inherit the tables and Redis objects made
# before (the binding gives each process its own connection), and no
# interpreter is started (which would have to be sys.executable, the
# venv's).
MP = multiprocessing.get_context("fork")

# No refill during a test: one unit per 27 hours.
STRICT = ("gcra:limit=%d,periodMs=4000000000;mode=strict,prefix=%s,"
          "failure=fail-closed")
LEASE = "fixedWindow:limit=%d,windowMs=1000;mode=lease,prefix=%s"
# Short timeouts: a dead node costs a check 200 ms at most, then the
# breaker (100 ms) answers at once.
TIMEOUTS = dict(connect_timeout_ms=200, command_timeout_ms=200,
                breaker_open_ms=100)
# After the limit is reached the workers go on this long: an admission
# too many would show.
OVERRUN_S = 0.3
WAIT_S = 15.0

CLUSTER = None


def setUpModule():
    global CLUSTER
    CLUSTER = rs.Cluster(masters=3, replicas=1)
    unittest.addModuleCleanup(CLUSTER.stop)  # also after a failed start
    t0 = time.monotonic()
    CLUSTER.start()
    print("\ncluster of 3 masters (and 3 replicas) %s up in %.1f s"
          % (",".join(CLUSTER.seeds), time.monotonic() - t0))


# --------------------------------------------------------------------------
# Workers
# --------------------------------------------------------------------------

def own_host(path, policy, **redis):
    """A worker that is a host of its own: its table file and its
    tkshm.Redis, both opened in the worker, after the fork."""
    def open_():
        return tkshm.Table(path, policy, slots=256,
                           redis=tkshm.Redis(**redis, **TIMEOUTS))
    return open_


def inherited(table):
    """A worker using the parent's table and Redis as the fork left
    them (the parent's connections already open)."""
    return lambda: table


class Workers:
    """Forked processes checking `keys` in turn, `gap_s` between rounds,
    until stopped; what each decided in shared memory (one writer per
    cell).  A context manager: they are stopped (and killed, by pid, if
    they do not stop) however the test ends."""

    FALLBACK, FALLBACK_ADMITTED, ERRORS, CHECKS, PAUSED, EXTRA = range(6)

    def __init__(self, keys, openers, gap_s):
        self.keys = list(keys)
        self.gap_s = gap_s
        self.stride = 2 * len(self.keys) + self.EXTRA
        self.cells = MP.RawArray("q", len(openers) * self.stride)
        self.ctl = MP.RawArray("i", 2)  # stop, pause
        self.messages = MP.SimpleQueue()
        self.procs = [MP.Process(target=self._main, args=(i, o), daemon=True)
                      for i, o in enumerate(openers)]
        self.exitcodes = None

    def __enter__(self):
        self.parent = os.getpid()
        try:
            for p in self.procs:
                p.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    # In the worker.

    def _main(self, i, opener):
        rs.child_setup(self.parent)()  # never outlives the test
        row = i * self.stride
        try:
            table = opener()
        except Exception as e:  # noqa: BLE001 - reported to the parent
            self.messages.put("worker %d: opening: %r" % (i, e))
            os._exit(1)
        self._loop(row, table)

    def _loop(self, row, table):
        c, ctl = self.cells, self.ctl
        while not ctl[0]:
            if ctl[1]:  # paused between rounds: no check in flight
                c[row + 2 * len(self.keys) + self.PAUSED] = 1
                time.sleep(0.001)
                continue
            c[row + 2 * len(self.keys) + self.PAUSED] = 0
            for k, key in enumerate(self.keys):
                self._check(row, k, table, key)
            time.sleep(self.gap_s)

    def _check(self, row, k, table, key):
        c, x = self.cells, row + 2 * len(self.keys)
        try:
            d, now = self._decide(table, key)
        except tkshm.Error as e:
            c[x + self.ERRORS] += 1
            if c[x + self.ERRORS] == 1:
                self.messages.put("%s: %s (%s)" % (key, e, e.name))
            return
        c[x + self.CHECKS] += 1
        if d.flags & tkshm.DECISION_FALLBACK:
            c[x + self.FALLBACK] += 1
            c[x + self.FALLBACK_ADMITTED] += d.allowed
        else:
            c[row + 2 * k + (0 if d.allowed else 1)] += 1
            self._decided(row // self.stride, k, d, now)

    def _decide(self, table, key):
        return table.check(key), None

    def _decided(self, worker, k, d, now):
        """A decision Redis (or a lease) made, for subclasses."""

    # In the parent.

    def admitted(self, k):
        return sum(self.cells[i * self.stride + 2 * k]
                   for i in range(len(self.procs)))

    def total(self, field):
        x = 2 * len(self.keys) + field
        return sum(self.cells[i * self.stride + x]
                   for i in range(len(self.procs)))

    def per_worker(self, field):
        x = 2 * len(self.keys) + field
        return [self.cells[i * self.stride + x]
                for i in range(len(self.procs))]

    def wait_admitted(self, k, n, timeout_s=WAIT_S):
        """True once key k has had n admissions (False after timeout_s,
        or when every worker has exited)."""
        deadline = time.monotonic() + timeout_s
        while self.admitted(k) < n:
            if (time.monotonic() > deadline or
                    not any(p.is_alive() for p in self.procs)):
                return False
            time.sleep(0.002)
        return True

    def run_to_limit(self, limit):
        """Waits for every key to reach `limit` (the callers assert the
        counts), then OVERRUN_S more."""
        for k in range(len(self.keys)):
            self.wait_admitted(k, limit)
        time.sleep(OVERRUN_S)

    def pause(self):
        """Returns once every worker is between rounds."""
        self.ctl[1] = 1
        deadline = time.monotonic() + WAIT_S
        while not all(self.per_worker(self.PAUSED)):
            if time.monotonic() > deadline:
                raise AssertionError("the workers did not pause")
            time.sleep(0.001)

    def resume(self):
        self.ctl[1] = 0

    def stop(self):
        if self.exitcodes is not None:
            return self.exitcodes
        self.ctl[0] = 1
        for p in self.procs:
            if p.pid is None:  # never started
                continue
            p.join(10)
            if p.is_alive():
                p.kill()  # by its pid: ours, not reaped yet
                p.join()
        self.exitcodes = [p.exitcode for p in self.procs]
        return self.exitcodes

    def errors(self):
        out = []
        while not self.messages.empty():
            out.append(self.messages.get())
        return out


class Case(unittest.TestCase):
    """A temporary directory for the tables of each test."""

    def setUp(self):
        self.dir = rs.private_dir("tkshm-py-tables-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def assert_clean(self, w, fallback=True):
        """Every worker exited 0, no check raised, and (fallback) none
        was decided by the failure policy."""
        self.assertEqual(w.stop(), [0] * len(w.procs), w.errors())
        self.assertEqual(w.total(w.ERRORS), 0, w.errors())
        if fallback:
            self.assertEqual(w.total(w.FALLBACK), 0)
        self.assertTrue(all(w.per_worker(w.CHECKS)),
                        "a worker made no check: %s"
                        % w.per_worker(w.CHECKS))


# --------------------------------------------------------------------------
# Cluster: strict tables
# --------------------------------------------------------------------------

class ClusterStrictTest(Case):

    def cluster_redis(self):
        r = tkshm.Redis(cluster=CLUSTER.seeds, **TIMEOUTS)
        self.addCleanup(r.close)
        return r

    def keys_on_masters(self, tag, prefix):
        """A key per master (prefix:key in a slot it serves)."""
        masters = CLUSTER.masters()
        self.assertEqual(len(masters), 3)
        return masters, [CLUSTER.key_on("%s%d-%%d" % (tag, i), m, prefix)
                         for i, m in enumerate(masters)]

    def test_exact_on_every_master(self):
        """limit 40, a key on each master, 4 forked workers: two hosts
        of their own, two on the parent's handles (which have
        connections to all 3 masters before the fork): exactly 40 per
        key, each key on its master and nowhere else."""
        limit = 40
        policy = STRICT % (limit, "cl")
        masters, keys = self.keys_on_masters("x", "cl")
        _, warm = self.keys_on_masters("w", "cl")
        parent = tkshm.Table(self.path("shared.tk"), policy, slots=256,
                             redis=self.cluster_redis())
        self.addCleanup(parent.close)
        for key in warm:  # the parent connects to every master
            d = parent.check(key)
            self.assertTrue(d.allowed)
            self.assertFalse(d.flags & tkshm.DECISION_FALLBACK)
        openers = [own_host(self.path("host0.tk"), policy,
                            cluster=CLUSTER.seeds),
                   own_host(self.path("host1.tk"), policy,
                            cluster=",".join(CLUSTER.seeds)),
                   inherited(parent), inherited(parent)]
        with Workers(keys, openers, 0.001) as w:
            w.run_to_limit(limit)
            self.assert_clean(w)
        for k, (key, m) in enumerate(zip(keys, masters)):
            print("  key %s (master :%d): %d admitted of %d"
                  % (key, m.port, w.admitted(k), limit))
        for k, (key, m) in enumerate(zip(keys, masters)):
            self.assertEqual(w.admitted(k), limit, key)
            # Counted on its master, nowhere else.
            self.assertEqual([CLUSTER.holds(n, "cl:" + key) for n in masters],
                             [n is m for n in masters], key)
        self.assertFalse(parent.check(keys[0]).allowed)  # the parent agrees

    def test_slot_moved_under_load(self):
        """limit 600 per key, 3 hosts checking a key per master: the
        first key's slot moved to another master under load, the key
        first (its checks then follow ASK to the target), then the slot
        (MOVED).  Each phase admits some, every key exactly 600, no
        check fails or falls back."""
        limit = 600
        policy = STRICT % (limit, "cl")
        masters, keys = self.keys_on_masters("m", "cl")
        rkey = "cl:" + keys[0]
        slot = rs.key_slot(rkey)
        source = CLUSTER.master_of(slot)
        target = next(m for m in masters if m is not source)
        openers = [own_host(self.path("mh%d.tk" % h), policy,
                            cluster=CLUSTER.seeds) for h in range(3)]
        with Workers(keys, openers, 0.004) as w:
            self.assertTrue(w.wait_admitted(0, limit // 4), w.errors())
            CLUSTER.migrate_begin(slot, target)
            CLUSTER.migrate_key(rkey)
            at_ask = w.admitted(0)
            # The key is on the target, its slot still the source's.
            self.assertFalse(CLUSTER.holds(source, rkey))
            self.assertTrue(CLUSTER.holds(target, rkey, asking=True))
            self.assertTrue(w.wait_admitted(0, at_ask + limit // 4),
                            "no admission through ASK: %s" % w.errors())
            CLUSTER.migrate_end()
            at_moved = w.admitted(0)
            w.run_to_limit(limit)
            self.assert_clean(w)
        print("  slot %d moved :%d -> :%d under load: %d admitted before, "
              "%d through ASK, %d after (MOVED); %d of %d in all"
              % (slot, source.port, target.port, at_ask, at_moved - at_ask,
                 w.admitted(0) - at_moved, w.admitted(0), limit))
        self.assertIs(CLUSTER.master_of(slot), target)
        self.assertTrue(CLUSTER.holds(target, rkey))
        self.assertLess(at_moved, limit, "the limit was spent before the "
                        "move: the MOVED phase decided nothing")
        for k in range(len(keys)):
            self.assertEqual(w.admitted(k), limit, keys[k])

    def test_master_killed(self):
        """limit 300 per key, fail-closed, 3 hosts checking a key per
        master; kill -9 of the first key's master with a third of its
        limit spent (the hosts paused and its replica caught up: no write
        lost to asynchronous replication).  Documented
        (docs/redis-cluster.md): until the promotion every key's checks
        are decided by the failure policy (denied, none admitted); then
        the replica's count goes on: exactly the limit per key."""
        limit = 300
        policy = STRICT % (limit, "cl")
        masters, keys = self.keys_on_masters("f", "cl")
        openers = [own_host(self.path("fh%d.tk" % h), policy,
                            cluster=CLUSTER.seeds) for h in range(3)]
        with Workers(keys, openers, 0.005) as w:
            self.assertTrue(w.wait_admitted(0, limit // 3), w.errors())
            w.pause()
            at_kill = w.admitted(0)
            replica, ranges = CLUSTER.kill_master(masters[0])
            t_kill = time.monotonic()
            w.resume()
            CLUSTER.wait_promoted(replica, ranges)
            gap = time.monotonic() - t_kill
            w.run_to_limit(limit)
            self.assert_clean(w, fallback=False)
        print("  master :%d killed at %d admitted; %.1f s to the promotion "
              "of :%d (%d fail-closed denials); %s of %d"
              % (masters[0].port, at_kill, gap, replica.port,
                 w.total(w.FALLBACK), [w.admitted(k) for k in range(3)],
                 limit))
        self.assertGreater(w.total(w.FALLBACK), 0)
        self.assertEqual(w.total(w.FALLBACK_ADMITTED), 0)
        self.assertGreater(w.admitted(0), at_kill)
        for k in range(len(keys)):
            self.assertEqual(w.admitted(k), limit, keys[k])
        self.assertTrue(CLUSTER.holds(replica, "cl:" + keys[0]))

    def test_hash_tags_place_keys(self):
        """The Redis key of a check is prefix:key: a tag in the key (or
        in the prefix) is the caller's, and decides the slot."""
        r = self.cluster_redis()
        t = tkshm.Table(self.path("tag.tk"), STRICT % (5, "tg"), redis=r)
        p = tkshm.Table(self.path("ptag.tk"), STRICT % (5, "{tenant3}"),
                        redis=r)
        self.addCleanup(t.close)
        self.addCleanup(p.close)
        for table, key in ((t, "{acct7}:a"), (t, "{acct7}:b"), (p, "x"),
                           (p, "y")):
            self.assertTrue(table.check(key).allowed)
        for tag, rkeys in (("acct7", ["tg:{acct7}:a", "tg:{acct7}:b"]),
                           ("tenant3", ["{tenant3}:x", "{tenant3}:y"])):
            slot = rs.key_slot(tag)
            found = CLUSTER.master_of(slot).cmd(
                "CLUSTER", "GETKEYSINSLOT", slot, 10)
            print("  slot %d of {%s}: %s" % (slot, tag, sorted(found)))
            self.assertEqual(sorted(found), rkeys)

    def test_multi_dimensions_and_slots(self):
        """check_multi of two strict tables on one Redis: ThrottleKit's
        keys prefix:{key}, so dimensions of one key share a slot and run
        as one script; keys of different slots raise ECROSSSLOT with
        nothing sent (documented: docs/redis-cluster.md)."""
        r = self.cluster_redis()
        minute = tkshm.Table(self.path("min.tk"), STRICT % (3, "mm"), redis=r)
        day = tkshm.Table(self.path("day.tk"), STRICT % (5, "md"), redis=r)
        self.addCleanup(minute.close)
        self.addCleanup(day.close)
        self.assert_cross_slot_refused(minute, day)
        # One key in both: one slot, one script; all-mode admits while
        # both do (the lower limit, 3).
        got = [tkshm.check_multi([(minute, "u1"), (day, "u1")])[0].allowed
               for _ in range(6)]
        print("  one key, limits 3 and 5: %s" % got)
        self.assertEqual(got, [True] * 3 + [False] * 3)
        home = CLUSTER.master_of(rs.key_slot("u1"))
        self.assertTrue(CLUSTER.holds(home, "mm:{u1}"))
        self.assertTrue(CLUSTER.holds(home, "md:{u1}"))
        # Different keys with one tag: the tag is kept as given.
        d, _, each = tkshm.check_multi([(minute, "{t9}:minute"),
                                        (day, "{t9}:day")])
        self.assertTrue(d.allowed)
        self.assertEqual([e.remaining for e in each], [2, 4])
        home = CLUSTER.master_of(rs.key_slot("t9"))
        self.assertTrue(CLUSTER.holds(home, "mm:{t9}:minute"))
        for table in (minute, day):
            self.assertEqual(table.stats()["global"]["redis_errors"], 0)

    def assert_cross_slot_refused(self, minute, day):
        a, b = "mm:{a}", "md:{b}"
        self.assertNotEqual(rs.key_slot(a), rs.key_slot(b))
        calls = [t.stats()["global"]["redis_calls"] for t in (minute, day)]
        with self.assertRaises(tkshm.Error) as cm:
            tkshm.check_multi([(minute, "a"), (day, "b")])
        e = cm.exception
        print("  keys of slots %d and %d: %s: %s"
              % (rs.key_slot(a), rs.key_slot(b), e.name, e))
        self.assertEqual(e.code, tkshm.ECROSSSLOT)
        self.assertEqual(e.name, "TKSHM_ECROSSSLOT")
        self.assertIn("hash tag", str(e))
        # Nothing sent: no call, no error for the breaker, no key made.
        self.assertEqual([t.stats()["global"]["redis_calls"]
                          for t in (minute, day)], calls)
        self.assertEqual(minute.stats()["global"]["redis_errors"], 0)
        for rkey in (a, b):
            self.assertFalse(CLUSTER.holds(
                CLUSTER.master_of(rs.key_slot(rkey)), rkey))


# --------------------------------------------------------------------------
# Cluster: a lease table, two hosts
# --------------------------------------------------------------------------

def find_syncd():
    """tkshm-syncd: $TKSHM_SYNCD, the build's (ctest gives
    $TKSHM_BUILD_DIR), the build tree the imported tkshm comes from (a
    plain build's python/ directory), or the PATH."""
    build = os.environ.get("TKSHM_BUILD_DIR")
    here = os.path.dirname(os.path.dirname(os.path.abspath(tkshm.__file__)))
    tail = os.path.join("tools", "tkshm-syncd", "tkshm-syncd")
    candidates = [os.environ.get("TKSHM_SYNCD"),
                  build and os.path.join(build, tail),
                  os.path.join(os.path.dirname(here), tail),
                  shutil.which("tkshm-syncd")]
    return next((c for c in candidates if c and os.access(c, os.X_OK)),
                None)


class LeaseWorkers(Workers):
    """Workers of a lease table recording each admission under the
    window (1 s, of the clock the check decided on) it fell in."""

    WINDOWS = 64

    def __init__(self, keys, openers, gap_s):
        super().__init__(keys, openers, gap_s)
        self.w0 = int(tkshm.now_ms() // 1000)
        self.windows = MP.RawArray(
            "q", len(openers) * len(self.keys) * self.WINDOWS)

    def _decide(self, table, key):
        # The check's own clock: the window it is counted in is the one
        # its lease was spent in.
        now = tkshm.now_ms()
        return table.check(key, now_ms=now), now

    def _decided(self, worker, k, d, now):
        w = int(now // 1000) - self.w0
        if d.allowed and 0 <= w < self.WINDOWS:
            self.windows[(worker * len(self.keys) + k) * self.WINDOWS + w] += 1

    def per_window(self, k, workers):
        """Key k's admissions per window, summed over `workers`."""
        return [sum(self.windows[(i * len(self.keys) + k) * self.WINDOWS + w]
                    for i in workers) for w in range(self.WINDOWS)]


class ClusterLeaseTest(Case):
    """fixedWindow limit 100 per second, mode=lease, on the cluster: two
    hosts (a table file each, served by its own tkshm-syncd with its
    host_id), two workers each, a key per master.  Documented
    (docs/cross-host.md, Lease): at most the limit per window, for any number of
    hosts."""

    LIMIT = 100

    def setUp(self):
        super().setUp()
        self.syncd = find_syncd()
        if not self.syncd:
            self.skipTest("no tkshm-syncd ($TKSHM_SYNCD or a build's)")

    def start_agent(self, name, table_path):
        conf = self.path(name + ".conf")
        with open(os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600),
                  "w") as f:
            f.write("redis_cluster = %s\n"
                    "table = %s\n"
                    "host_id = py-%s\n"
                    "poll_ms = 2\n"
                    "heartbeat_ms = 500\n"
                    "connect_timeout_ms = 200\n"
                    "command_timeout_ms = 100\n"
                    "breaker_open_ms = 100\n"
                    % (",".join(CLUSTER.seeds), table_path, name))
        proc = rs.start_process(
            [self.syncd, "-f", "-c", conf, "-p", self.path(name + ".pid")],
            self.dir, self.path(name + ".log"))
        self.addCleanup(rs.stop_group, proc, signal.SIGKILL)
        return proc

    def wait_attached(self, name, table, proc):
        deadline = time.monotonic() + WAIT_S
        while table.stats()["global"]["agent_pid"] != proc.pid:
            if proc.poll() is not None or time.monotonic() > deadline:
                with open(self.path(name + ".log"), errors="replace") as f:
                    self.fail("tkshm-syncd did not attach: %s" % f.read())
            time.sleep(0.01)

    def test_two_hosts_within_the_limit_per_window(self):
        policy = LEASE % (self.LIMIT, "ls")
        masters = CLUSTER.masters()
        keys = [CLUSTER.key_on("l%d-%%d" % i, m, "ls")
                for i, m in enumerate(masters)]
        hosts = {}
        for name in ("a", "b"):
            path = self.path("lease-%s.tk" % name)
            table = tkshm.Table(path, policy, slots=64)
            self.addCleanup(table.close)
            hosts[name] = (path, table, self.start_agent(name, path))
        for name, (_, table, proc) in hosts.items():
            self.wait_attached(name, table, proc)
        openers = [(lambda p=path: tkshm.Table(p))
                   for path, _, _ in hosts.values() for _ in range(2)]
        with LeaseWorkers(keys, openers, 0.001) as w:
            # Leases flow once the agents' settling time and a window
            # boundary have passed; then three windows more.
            self.assertTrue(all(w.wait_admitted(k, 1) for k in range(3)),
                            "no lease on some master: %s"
                            % [w.admitted(k) for k in range(3)])
            time.sleep(3.0)
            self.assert_clean(w)
        self.check_windows(w, keys, masters)
        stats = {name: table.stats()["global"]
                 for name, (_, table, _) in hosts.items()}
        for name, (_, _, proc) in hosts.items():
            rs.stop_group(proc)
            self.assertEqual(proc.returncode, 0, "tkshm-syncd on SIGTERM")
        for name, g in stats.items():
            print("  host %s: %d leases, %d units, hosts seen %d"
                  % (name, g["leases"], g["lease_units"], g["hosts"]))
            self.assertEqual(g["fallback_allowed"], 0)
            self.assertEqual(g["hosts"], 2)  # both registered on the cluster

    def check_windows(self, w, keys, masters):
        for k, (key, m) in enumerate(zip(keys, masters)):
            both = w.per_window(k, range(4))
            used = [n for n in both if n]
            by_host = [sum(w.per_window(k, h)) for h in ((0, 1), (2, 3))]
            print("  lease key %s (master :%d): per window %s, by host %s"
                  % (key, m.port, used, by_host))
            self.assertLessEqual(max(both), self.LIMIT, key)
            # Leases flowed from this key's master to both hosts, for more
            # than one window's worth.
            self.assertGreater(sum(both), self.LIMIT, key)
            self.assertTrue(all(by_host), key)


# --------------------------------------------------------------------------
# Sentinel
# --------------------------------------------------------------------------

class SentinelTest(Case):
    """A primary, its replica, 3 sentinels; strict tables found through
    them (tkshm.Redis(sentinels=..., sentinel_master="mymaster"))."""

    @classmethod
    def setUpClass(cls):
        cls.set = rs.SentinelSet()
        cls.addClassCleanup(cls.set.stop)
        t0 = time.monotonic()
        cls.set.start()
        print("\nsentinels %s up in %.1f s"
              % (",".join(cls.set.addrs), time.monotonic() - t0))

    def hosts(self, name, policy, n=3):
        return [own_host(self.path("%s%d.tk" % (name, h)), policy,
                         sentinels=self.set.addrs,
                         sentinel_master=rs.SENTINEL_NAME)
                for h in range(n)]

    def redis(self):
        r = tkshm.Redis(sentinels=",".join(self.set.addrs),
                        sentinel_master=rs.SENTINEL_NAME, **TIMEOUTS)
        self.addCleanup(r.close)
        return r

    def test_1_exact(self):
        """limit 30, 3 hosts on one key: exactly 30."""
        limit = 30
        with Workers(["exact"], self.hosts("ex", STRICT % (limit, "se")),
                     0.001) as w:
            w.run_to_limit(limit)
            self.assert_clean(w)
        print("  sentinel primary :%d: %d admitted of %d"
              % (self.set.primary.port, w.admitted(0), limit))
        self.assertEqual(w.admitted(0), limit)

    def test_2_primary_killed(self):
        """limit 300, fail-closed, 3 hosts on one key: kill -9 of the
        primary with a third of the limit spent (the hosts paused and
        the replica caught up, so no write is lost to asynchronous
        replication: the client is measured, not Redis).  During the
        outage fail-closed decides: denials, no admission; after the
        promotion the checks go on from the replica's count, to exactly
        the limit, which Redis's count confirms."""
        limit = 300
        policy = STRICT % (limit, "sk")
        killed = self.set.primary
        with Workers(["api"], self.hosts("kh", policy), 0.005) as w:
            self.assertTrue(w.wait_admitted(0, limit // 3), w.errors())
            w.pause()
            self.set.wait_replicated()
            at_kill = w.admitted(0)
            self.set.kill_primary()
            t_kill = time.monotonic()
            w.resume()
            self.set.wait_promoted()
            outage = time.monotonic() - t_kill
            at_promotion = w.admitted(0)
            w.run_to_limit(limit)
            self.assert_clean(w, fallback=False)
        print("  primary :%d killed at %d admitted; %.1f s to the "
              "promotion of :%d (%d fail-closed denials, %d admitted "
              "meanwhile); %d of %d in all"
              % (killed.port, at_kill, outage, self.set.primary.port,
                 w.total(w.FALLBACK), at_promotion - at_kill,
                 w.admitted(0), limit))
        self.assertGreater(w.total(w.FALLBACK), 0)
        self.assertEqual(w.total(w.FALLBACK_ADMITTED), 0)
        self.assertGreater(w.admitted(0), at_kill, "no admission after "
                           "the failover")
        self.assertEqual(w.admitted(0), limit)
        # Redis's own count (the promoted replica's) agrees: it holds
        # every admission, nothing admitted beside it.
        t = tkshm.Table(self.path("peek.tk"), policy, redis=self.redis())
        self.addCleanup(t.close)
        self.assertEqual(t.peek("api").remaining, limit - w.admitted(0))


def main():
    if not rs.available():
        print("skipped: no %s or %s (Debian's redis-server, redis-tools)"
              % (rs.REDIS_SERVER, rs.REDIS_CLI))
        return 77
    try:
        tkshm.Redis().close()
    except tkshm.Error as e:
        if e.code != tkshm.ENOTSUP:
            raise
        print("skipped: %s" % e)
        return 77
    t0 = time.monotonic()
    prog = unittest.main(exit=False, verbosity=2)
    print("%.1f s" % (time.monotonic() - t0))
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
