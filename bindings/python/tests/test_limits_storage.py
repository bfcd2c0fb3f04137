"""tkshm.limits_storage, the tkshm:// storage of the `limits` library
(Debian's python3-limits), driven through limits' own strategies:

- fixed window: hits, test() and get_window_stats() agreeing with the hits,
  epoch-aligned windows, costs (a denied hit consumes nothing), clear,
  several rate items on one key, keys that are not limits' (a counter),
  elastic expiry refused;
- moving window: the exact log up to 128, the window sliding, costs; above
  128 a widened sliding window that never admits more than the limit in
  any trailing window (checked on random traffic against an exact log);
- the storage: reset() for every process, check(), the URI and its
  options, bad URIs, where the default tables live;
- exactness across real processes: 8 forked processes hammering one key
  admit exactly the limit, for each strategy, with the storage made in
  each child or inherited; memory:// in the same processes admits the
  limit once per process.

Run as a script (ctest does): exits 77 (skipped) without python3-limits."""

import bisect
import multiprocessing
import os
import random
import shutil
import stat
import sys
import tempfile
import time
import unittest

try:
    from limits import parse, parse_many, strategies
    from limits.errors import ConfigurationError
    from limits.storage import SCHEMES, MemoryStorage, storage_from_string
except ImportError:  # the script exits 77 below
    strategies = None
else:
    import tkshm
    from tkshm.limits_storage import TkshmStorage, URIError

HOUR_MS = 3600000
PROCS = 8
HITS = 40


def wait_clear_of_edge(window_s, margin_s=5):
    """Sleeps past an epoch-aligned window's end if it is near, so that a
    test's hits fall in one fixed window."""
    left = window_s - time.time() % window_s
    if left < margin_s:
        time.sleep(left + 0.05)


class StorageCase(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tkshm-limits-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.tables = os.path.join(self.dir, "tables")
        self.uri = "tkshm://%s/" % self.tables
        self.storage = storage_from_string(self.uri, slots=1024)

    def files(self):
        return sorted(os.listdir(self.tables))


class FixedWindowTest(StorageCase):
    def setUp(self):
        super().setUp()
        self.limiter = strategies.FixedWindowRateLimiter(self.storage)
        wait_clear_of_edge(86400)

    def test_registered_under_tkshm(self):
        self.assertIs(SCHEMES["tkshm"], TkshmStorage)
        self.assertIsInstance(self.storage, TkshmStorage)

    def test_hits_then_denials(self):
        item = parse("5/hour")
        hits = [self.limiter.hit(item, "a") for _ in range(8)]
        self.assertEqual(hits, [True] * 5 + [False] * 3)
        self.assertFalse(self.limiter.test(item, "a"))
        reset, remaining = self.limiter.get_window_stats(item, "a")
        self.assertEqual(remaining, 0)
        # tkshm's fixed window is aligned to the epoch, not to the first hit
        self.assertEqual(reset, (int(time.time()) // 3600 + 1) * 3600)
        self.assertEqual(self.files(), ["fixed-5-per-3600000ms"])
        self.assertTrue(self.limiter.hit(item, "b"))  # another key

    def test_test_and_stats_predict_the_hit(self):
        item = parse("4/hour")
        for used in range(6):
            before = self.limiter.test(item, "k")
            _, remaining = self.limiter.get_window_stats(item, "k")
            self.assertEqual(remaining, max(0, 4 - used))
            self.assertEqual(self.limiter.hit(item, "k"), before)

    def test_a_denied_cost_consumes_nothing(self):
        item = parse("10/hour")
        self.assertTrue(self.limiter.hit(item, "c", cost=4))
        self.assertTrue(self.limiter.hit(item, "c", cost=4))
        self.assertFalse(self.limiter.hit(item, "c", cost=4))  # 12 > 10
        self.assertEqual(self.limiter.get_window_stats(item, "c")[1], 2)
        self.assertTrue(self.limiter.hit(item, "c", cost=2))
        self.assertFalse(self.limiter.hit(item, "c"))
        self.assertFalse(self.limiter.hit(item, "c", cost=11))
        # The README's difference: limits' memory storage counts the denied
        # 4, so the hit of 2 that fits here is denied there.
        memory = strategies.FixedWindowRateLimiter(MemoryStorage())
        self.assertEqual([memory.hit(item, "c", cost=c) for c in (4, 4, 4, 2)],
                         [True, True, False, False])

    def test_clear(self):
        item = parse("2/hour")
        for _ in range(3):
            self.limiter.hit(item, "d")
        self.assertFalse(self.limiter.test(item, "d"))
        self.limiter.clear(item, "d")
        self.assertTrue(self.limiter.test(item, "d"))
        self.assertEqual([self.limiter.hit(item, "d") for _ in range(3)],
                         [True, True, False])

    def test_several_items_on_one_key(self):
        # As Flask-Limiter does for "2/hour;5/day": each item is hit on its
        # own table, and a denial by one does not undo the other's hit.
        items = parse_many("2/hour;5/day")
        rows = [[self.limiter.hit(i, "e") for i in items] for _ in range(6)]
        self.assertEqual([r[0] for r in rows], [True, True] + [False] * 4)
        self.assertEqual([r[1] for r in rows], [True] * 5 + [False])
        self.assertEqual(self.files(), ["fixed-2-per-3600000ms",
                                        "fixed-5-per-86400000ms"])
        self.assertEqual(self.limiter.get_window_stats(items[1], "e")[1], 0)

    def test_a_zero_limit_denies(self):
        item = parse("0/hour")
        self.assertFalse(self.limiter.hit(item, "z"))
        self.assertFalse(self.limiter.test(item, "z"))

    def test_long_keys_stay_apart(self):
        item = parse("1/hour")
        long_a, long_b = "x" * 3000 + "a", "x" * 3000 + "b"
        self.assertTrue(self.limiter.hit(item, long_a))
        self.assertFalse(self.limiter.hit(item, long_a))
        self.assertTrue(self.limiter.hit(item, long_b))

    def test_costs_and_amounts_beyond_a_table_decide(self):
        # A cost above 2^53-1 would be refused by the table (tkshm.Error:
        # a 500, or an admission under Flask-Limiter's swallow_errors):
        # above the limit it is denied, consuming nothing.  An amount of
        # 2^50 or more would make a table that refuses every cost of 1: an
        # amount above 2^40 counts as 2^40.
        item = parse("5/hour")
        self.assertTrue(self.limiter.hit(item, "c"))
        self.assertFalse(self.limiter.hit(item, "c", cost=2 ** 60))
        self.assertFalse(self.limiter.hit(item, "c", cost=6))
        self.assertEqual(self.limiter.get_window_stats(item, "c")[1], 4)
        self.assertEqual(self.storage.incr("plain", 60, amount=2 ** 60),
                         2 ** 60)
        self.assertEqual(self.storage.incr("plain", 60), 1)
        for amount in (2 ** 50, 10 ** 20):
            huge = parse("%d/hour" % amount)
            self.assertTrue(self.limiter.hit(huge, "c"))
            self.assertTrue(self.limiter.hit(huge, "c", cost=2 ** 30))
            self.assertTrue(self.limiter.test(huge, "c"))
            self.assertFalse(self.limiter.hit(huge, "c", cost=2 ** 41))

    def test_elastic_expiry_is_refused(self):
        elastic = strategies.FixedWindowElasticExpiryRateLimiter(self.storage)
        with self.assertRaises(NotImplementedError) as e:
            elastic.hit(parse("5/hour"), "f")
        self.assertIn("fixed-window-elastic-expiry", str(e.exception))

    def test_a_full_table_refuses_new_keys_and_keeps_the_others(self):
        # A fixed window never evicts a live key: with more keys than a
        # 64-slot table holds, the hits that find no room raise EFULL
        # (Flask-Limiter's swallow_errors or in-memory fallback decide),
        # and the keys it holds stay exact.
        storage = storage_from_string(self.uri, slots=64)
        limiter = strategies.FixedWindowRateLimiter(storage)
        item = parse("2/day")
        held, refused = [], 0
        for i in range(300):
            try:
                self.assertTrue(limiter.hit(item, "full", str(i)))
                held.append(str(i))
            except tkshm.Error as e:
                self.assertEqual(e.code, tkshm.EFULL)
                refused += 1
        self.assertGreater(refused, 0)
        self.assertGreater(len(held), 0)
        for k in held:
            self.assertTrue(limiter.hit(item, "full", k))
            self.assertFalse(limiter.hit(item, "full", k))

    def test_keys_that_are_not_limits_are_counted(self):
        # A counter, as limits' Redis storage keeps: every incr adds.
        s = self.storage
        self.assertEqual([s.incr("plain", 60), s.incr("plain", 60, amount=3),
                          s.incr("plain", 60)], [1, 4, 5])
        self.assertEqual(s.get("plain"), 5)
        self.assertEqual(s.get_expiry("plain"),
                         (int(time.time()) // 60 + 1) * 60)
        # limits' shape with an expiry that is not its window: a counter too
        key = "LIMITER/g/5/1/minute"
        self.assertEqual([s.incr(key, 30) for _ in range(7)],
                         list(range(1, 8)))
        self.assertEqual(self.files(), ["count-per-30000ms",
                                        "count-per-60000ms"])
        s.clear("plain")
        self.assertEqual(s.get("plain"), 0)
        with self.assertRaises(ValueError):
            s.incr("plain", 60, amount=-1)


class MovingWindowTest(StorageCase):
    def setUp(self):
        super().setUp()
        self.limiter = strategies.MovingWindowRateLimiter(self.storage)

    def test_hits_then_denials(self):
        item = parse("3/hour")
        first = int(time.time())
        hits = [self.limiter.hit(item, "a") for _ in range(5)]
        self.assertEqual(hits, [True] * 3 + [False] * 2)
        self.assertFalse(self.limiter.test(item, "a"))
        reset, remaining = self.limiter.get_window_stats(item, "a")
        self.assertEqual(remaining, 0)
        # the oldest hit's time plus the window, as limits says
        self.assertIn(reset, (first + 3600, int(time.time()) + 3600))
        self.assertEqual(self.files(), ["log-3-per-3600000ms"])

    def test_the_window_slides(self):
        item = parse("2/second")
        t0 = time.time()
        self.assertEqual([self.limiter.hit(item, "s") for _ in range(3)],
                         [True, True, False])
        time.sleep(max(0, t0 + 1.05 - time.time()))
        self.assertTrue(self.limiter.test(item, "s"))
        self.assertEqual([self.limiter.hit(item, "s") for _ in range(3)],
                         [True, True, False])

    def test_costs_and_clear(self):
        item = parse("5/hour")
        self.assertTrue(self.limiter.hit(item, "c", cost=3))
        self.assertFalse(self.limiter.hit(item, "c", cost=3))
        self.assertTrue(self.limiter.hit(item, "c", cost=2))
        self.assertEqual(self.limiter.get_window_stats(item, "c")[1], 0)
        self.assertFalse(self.limiter.hit(item, "c"))
        self.limiter.clear(item, "c")
        self.assertEqual(self.limiter.get_window_stats(item, "c")[1], 5)
        self.assertTrue(self.limiter.hit(item, "c", cost=5))

    def test_test_predicts_the_hit(self):
        item = parse("3/hour")
        for _ in range(5):
            before = self.limiter.test(item, "t")
            self.assertEqual(self.limiter.hit(item, "t"), before)

    def test_above_128_a_burst_admits_the_limit(self):
        item = parse("200/hour")
        admitted = sum(self.limiter.hit(item, "b") for _ in range(260))
        self.assertEqual(admitted, 200)
        self.assertFalse(self.limiter.test(item, "b"))
        self.assertEqual(self.limiter.get_window_stats(item, "b")[1], 0)
        self.assertEqual(self.files(), ["sliding-200-per-3600000ms"])

    def test_above_128_never_more_than_the_limit_in_a_window(self):
        # The table the storage decides on, driven with injected times:
        # Poisson traffic at 0.5 to 4 times the limit.  No trailing window
        # may ever hold more than the limit; an exact log of the same
        # traffic admits at most a few percent more.
        limit, window = 150, 60000
        self.limiter.hit(parse("150/minute"), "create")
        table = tkshm.Table(os.path.join(self.tables,
                                         "sliding-150-per-60000ms"), None)
        admitted = exact = 0
        for n, rate in enumerate((0.5, 1, 2, 4)):
            rng, now, mine, log = random.Random(n), 4e12 + n * 1e9, [], []
            for _ in range(int(limit * rate * 15)):
                now += rng.expovariate(limit * rate / window)
                if len(log) - bisect.bisect_right(log, now - window) < limit:
                    log.append(now)
                if table.check("r%d" % n, 1, now_ms=now).allowed:
                    mine.append(now)
                    in_window = len(mine) - bisect.bisect_right(
                        mine, now - window)
                    self.assertLessEqual(in_window, limit)
            admitted, exact = admitted + len(mine), exact + len(log)
        # Admitting whenever a log allows is the most any admission set
        # within the bound can hold, so the estimate can only admit less.
        self.assertLessEqual(admitted, exact)
        self.assertGreater(admitted, 0.95 * exact)
        print("\nabove 128 (limit %d per minute, random traffic): %d "
              "admitted, an exact log %d (%.1f%%)" % (
                  limit, admitted, exact, 100.0 * admitted / exact),
              file=sys.stderr)


class StorageTest(StorageCase):
    def test_reset_during_another_reset(self):
        # Another process's reset() is between its two replacements (the
        # table on its passing policy) when this one runs: this one puts
        # the table back on the policy its name says, not on that one.
        fixed = strategies.FixedWindowRateLimiter(self.storage)
        moving = strategies.MovingWindowRateLimiter(self.storage)
        fixed.hit(parse("2/hour"), "r")
        moving.hit(parse("2/hour"), "r")
        moving.hit(parse("130/hour"), "r")
        self.storage.incr("plain", 60)
        expected = {}
        for name in self.files():
            table = tkshm.Table(os.path.join(self.tables, name), None)
            expected[name] = table.policy
            table.apply(tkshm.limits_storage._unconverted(name))
            self.assertNotEqual(table.policy, expected[name])
        self.assertEqual(self.storage.reset(), 4)
        for name in self.files():
            table = tkshm.Table(os.path.join(self.tables, name), None)
            self.assertEqual(table.policy, expected[name], name)

    def test_moving_window_above_amount_max(self):
        # The huge amounts a fixed window takes, for the moving window.
        moving = strategies.MovingWindowRateLimiter(self.storage)
        huge = parse("%d/hour" % 10 ** 20)
        self.assertTrue(moving.hit(huge, "m"))
        self.assertTrue(moving.test(huge, "m"))
        self.assertFalse(moving.hit(parse("5/hour"), "m", cost=2 ** 60))
        self.assertFalse(moving.hit(parse("500/hour"), "m", cost=2 ** 60))

    def test_reset_reaches_every_process(self):
        wait_clear_of_edge(3600)
        fixed = strategies.FixedWindowRateLimiter(self.storage)
        moving = strategies.MovingWindowRateLimiter(self.storage)
        items = [parse("2/hour"), parse("2/day")]
        big = parse("130/hour")
        for limiter in (fixed, moving):
            for item in items:
                for _ in range(2):
                    limiter.hit(item, "r")
        for _ in range(130):
            moving.hit(big, "r")
        self.storage.incr("plain", 60)
        # Another storage on the same tables: another process's view.
        other = storage_from_string(self.uri)
        o_fixed = strategies.FixedWindowRateLimiter(other)
        self.assertFalse(o_fixed.test(items[0], "r"))
        self.assertEqual(self.storage.reset(), 6)
        for limiter in (fixed, moving, o_fixed):
            for item in items:
                self.assertTrue(limiter.test(item, "r"))
        self.assertTrue(moving.test(big, "r"))
        self.assertEqual(other.get("plain"), 0)
        self.assertEqual([o_fixed.hit(items[0], "r") for _ in range(3)],
                         [True, True, False])
        # Every table is back on its own policy.
        policies = {n: tkshm.Table(os.path.join(self.tables, n), None).policy
                    for n in self.files()}
        self.assertEqual(policies["log-2-per-3600000ms"],
                         "slidingWindowLog:limit=2,windowMs=3600000")
        self.assertEqual(policies["fixed-2-per-86400000ms"],
                         "fixedWindow:limit=2,windowMs=86400000")

    def test_check(self):
        self.assertTrue(self.storage.check())
        strategies.FixedWindowRateLimiter(self.storage).hit(parse("1/hour"))
        self.assertTrue(self.storage.check())
        shutil.rmtree(self.tables)
        self.assertFalse(self.storage.check())

    def test_options_in_the_uri_and_as_keywords(self):
        uri = "tkshm://%s/?slots=2048&mode=0640" % self.tables
        s = storage_from_string(uri)
        strategies.FixedWindowRateLimiter(s).hit(parse("1/hour"), "o")
        st = os.stat(os.path.join(self.tables, "fixed-1-per-3600000ms"))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o640)
        table = tkshm.Table(os.path.join(self.tables,
                                         "fixed-1-per-3600000ms"), None)
        self.assertEqual(table.stats()["slots"], 2048)
        same = storage_from_string(uri, slots=2048, mode=0o640)
        self.assertEqual(same.location, s.location)

    def test_a_directory_to_make_takes_the_mode(self):
        where = os.path.join(self.dir, "made")
        storage_from_string("tkshm://%s/?mode=0640" % where)
        self.assertEqual(stat.S_IMODE(os.stat(where).st_mode), 0o750)

    def test_a_prefix(self):
        s = storage_from_string("tkshm://%s/app" % self.dir)
        strategies.MovingWindowRateLimiter(s).hit(parse("1/hour"))
        self.assertIn("app.log-1-per-3600000ms", os.listdir(self.dir))
        self.assertTrue(s.check())
        os.mkdir(os.path.join(self.dir, "app"))  # an existing directory
        d = storage_from_string("tkshm://%s/app" % self.dir)
        self.assertEqual(d.location.directory, os.path.join(self.dir, "app"))

    def test_default_tables_live_in_the_run_directory(self):
        old = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = self.dir
        try:
            for uri, prefix in (("tkshm://", "limits."),
                                ("tkshm://myapp", "myapp.")):
                s = storage_from_string(uri)
                strategies.FixedWindowRateLimiter(s).hit(parse("3/hour"))
                self.assertIn(prefix + "fixed-3-per-3600000ms",
                              os.listdir(os.path.join(self.dir, "tkshm")))
                self.assertEqual(s.location.directory, tkshm.run_dir())
        finally:
            if old is None:
                del os.environ["XDG_RUNTIME_DIR"]
            else:
                os.environ["XDG_RUNTIME_DIR"] = old

    def test_bad_uris_say_what_is_wrong(self):
        where = self.tables
        cases = [
            ("tkshm://host:80", {}, "no user, password or port"),
            ("tkshm://user@host", {}, "no user, password or port"),
            ("tkshm://host:port", {}, "is not a URI tkshm:// can use"),
            ("tkshm:relative", {}, "the path must be absolute"),
            ("tkshm://name" + where, {}, "not both"),
            ("tkshm://.hidden", {}, "must be 1 to 64 of"),
            ("tkshm://a%2Fb", {}, "must be 1 to 64 of"),
            ("tkshm://%s/#x" % where, {}, "no #fragment"),
            ("tkshm://%s/?slots=many" % where, {}, "slots='many'"),
            ("tkshm://%s/?slots=0" % where, {}, "from 1 to 2^36"),
            ("tkshm://%s/?mode=0999" % where, {}, "octal 0 to 0777"),
            ("tkshm://%s/?mode=01777" % where, {}, "octal 0 to 0777"),
            ("tkshm://%s/?size=1" % where, {}, "unknown option 'size'"),
            ("tkshm://%s/?slots=8&slots=8" % where, {}, "given twice"),
            ("tkshm://%s/?slots" % where, {}, "name=value pairs"),
            ("tkshm://%s/" % where, {"slot": 8}, "option(s) slot"),
            ("tkshm://%s/" % where, {"slots": True}, "slots=True"),
            ("tkshm://%s/?slots=8" % where, {"slots": 16},
             "slots=8 in the URI and slots=16"),
            ("tkshm://%s/no/such/prefix" % self.dir, {}, "is not a directory"),
            # A control character is refused, not dropped (urlsplit drops
            # a newline: tkshm://a\nb would be tkshm://ab) or passed to a
            # system call (%00: a ValueError that is no URIError).
            ("tkshm://a\nb", {}, "no control characters"),
            ("tkshm://%s/x%%00y/" % where, {}, "no control characters"),
            ("tkshm://%s/x%%0Ay/" % where, {}, "no control characters"),
        ]
        for uri, options, says in cases:
            with self.subTest(uri=uri, options=options):
                with self.assertRaises(URIError) as e:
                    storage_from_string(uri, **options)
                self.assertIn(says, str(e.exception))
                self.assertIsInstance(e.exception, ConfigurationError)
                self.assertIsInstance(e.exception, ValueError)


def _hammer(make_storage, strategy, item, barrier, out):
    storage = make_storage()  # a strategy holds only a weak reference
    limiter = strategy(storage)
    barrier.wait()
    out.put(sum(limiter.hit(item, "one-client") for _ in range(HITS)))


class ProcessesTest(StorageCase):
    """PROCS forked processes, HITS hits each on one key, all at once."""

    def run_processes(self, make_storage, strategy, item):
        ctx = multiprocessing.get_context("fork")
        barrier, out = ctx.Barrier(PROCS), ctx.Queue()
        procs = [ctx.Process(target=_hammer, args=(make_storage, strategy,
                                                   item, barrier, out))
                 for _ in range(PROCS)]
        for p in procs:
            p.start()
        for p in procs:  # small results: a child never blocks on the queue
            p.join(60)
        self.assertEqual([p.exitcode for p in procs], [0] * PROCS)
        return sum(out.get(timeout=10) for _ in procs)

    def exact(self, strategy, text, inherited=False):
        wait_clear_of_edge(3600)
        item = parse(text)
        if inherited:  # made, and its table opened, before the fork
            strategy(self.storage).test(item, "one-client")
            admitted = self.run_processes(lambda: self.storage, strategy,
                                          item)
        else:
            admitted = self.run_processes(
                lambda: storage_from_string(self.uri), strategy, item)
        self.assertEqual(admitted, item.amount)
        print("\n%s, %s: %d of %d hits admitted by %d processes" % (
            strategy.__name__, text, admitted, PROCS * HITS, PROCS),
            file=sys.stderr)

    def test_fixed_window(self):
        self.exact(strategies.FixedWindowRateLimiter, "37/hour")

    def test_fixed_window_inherited(self):
        self.exact(strategies.FixedWindowRateLimiter, "37/hour", True)

    def test_moving_window(self):
        self.exact(strategies.MovingWindowRateLimiter, "37/hour")

    def test_moving_window_inherited(self):
        self.exact(strategies.MovingWindowRateLimiter, "37/hour", True)

    def test_moving_window_above_128(self):
        self.exact(strategies.MovingWindowRateLimiter, "150/hour")

    def test_memory_admits_the_limit_per_process(self):
        # The control: limits' memory:// storage in the same processes
        # keeps one count per process.
        item = parse("37/hour")
        for strategy in (strategies.FixedWindowRateLimiter,
                         strategies.MovingWindowRateLimiter):
            admitted = self.run_processes(MemoryStorage, strategy, item)
            self.assertEqual(admitted, PROCS * min(HITS, item.amount))
            print("\n%s, memory://: %d of %d hits admitted by %d processes "
                  "(limit 37)" % (strategy.__name__, admitted, PROCS * HITS,
                                  PROCS), file=sys.stderr)


if __name__ == "__main__":
    if strategies is None:
        print("skipped: the limits library is not installed (apt-get "
              "install python3-limits)", file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
