"""tkshm.check_multi (several limits as one decision), rate strings
("10/second") wherever a policy is taken, and the one header vocabulary
("draft", "legacy", "none") of the middlewares and tkshm.headers."""

import os
import shutil
import tempfile
import unittest

import tkshm
from tkshm.route import KeySource, Limit, RouteLimits
from tkshm.wsgi import RateLimitMiddleware

T0 = 1_000_000_000_000.0  # an epoch ms on a window boundary


def private(policy):
    return tkshm.Table(None, policy, private=True)


class CheckMultiTest(unittest.TestCase):
    def test_all_admits_together_or_consumes_nothing(self):
        wide = private("fixedWindow:limit=5,windowMs=1000")
        narrow = private("fixedWindow:limit=2,windowMs=1000")
        for i in range(2):
            d, binding, each = tkshm.check_multi(
                [(wide, "k"), (narrow, "k", 1)], now_ms=T0)
            self.assertTrue(d.allowed)
            self.assertEqual(binding, 1)  # the smaller remaining
            self.assertEqual([e.remaining for e in each], [4 - i, 1 - i])
        d, binding, each = tkshm.check_multi([(wide, "k"), (narrow, "k")],
                                             now_ms=T0)
        self.assertFalse(d.allowed)
        self.assertEqual(binding, 1)
        self.assertTrue(each[0].allowed)  # what it would have decided
        # The denial consumed nothing in the table that would admit.
        self.assertEqual(wide.peek("k", now_ms=T0).remaining, 3)

    def test_any_mode_and_cost(self):
        a = private("fixedWindow:limit=5,windowMs=1000")
        b = private("fixedWindow:limit=1,windowMs=1000")
        d, binding, _ = tkshm.check_multi([(a, "k", 2), (b, "k", 3)],
                                          mode="any", now_ms=T0)
        self.assertTrue(d.allowed)
        self.assertEqual(binding, 0)
        self.assertEqual(a.peek("k", now_ms=T0).remaining, 3)
        self.assertEqual(b.peek("k", now_ms=T0).remaining, 1)

    def test_bad_input(self):
        t = private("fixedWindow:limit=5,windowMs=1000")
        for dims, exc in (([], ValueError), ([(t, "k")] * 17, ValueError),
                          ([t], TypeError), ([(t,)], TypeError),
                          ([("x", "k")], TypeError),
                          ([(t, "k", "1")], TypeError),
                          ([(t, 5)], TypeError), (None, TypeError)):
            with self.assertRaises(exc, msg=repr(dims)[:60]):
                tkshm.check_multi(dims, now_ms=T0)
        with self.assertRaises(ValueError):
            tkshm.check_multi([(t, "k")], mode="most")
        with self.assertRaises(tkshm.Error) as cm:
            tkshm.check_multi([(t, "")], now_ms=T0)
        self.assertEqual(cm.exception.code, tkshm.EKEYEMPTY)
        # Nothing was consumed by any refused call.
        self.assertEqual(t.peek("k", now_ms=T0).remaining, 5)
        t.close()
        with self.assertRaises(ValueError):
            tkshm.check_multi([(t, "k")], now_ms=T0)


class RateStringTest(unittest.TestCase):
    def test_rate_strings_are_gcra_policies(self):
        for rate, canon in (
                ("10/second", "gcra:limit=10,periodMs=1000,burst=10"),
                ("100 per minute", "gcra:limit=100,periodMs=60000,burst=100"),
                ("5/min,burst=10", "gcra:limit=5,periodMs=60000,burst=10"),
                ("3 per 2 hours", "gcra:limit=3,periodMs=7200000,burst=3")):
            self.assertEqual(private(rate).policy, canon)

    def test_bad_rates_say_why(self):
        for rate, says in (("10/fortnight", "unknown unit"),
                           ("10 per", "unit is missing"),
                           ("10/second,100/minute", "several rates")):
            with self.assertRaises(tkshm.Error) as cm:
                private(rate)
            self.assertEqual(cm.exception.code, tkshm.EPOLICY)
            self.assertIn(says, str(cm.exception))

    def test_a_rate_admits_its_burst_then_paces(self):
        t = private("5 per minute")
        self.assertEqual(sum(t.check("k", now_ms=T0).allowed
                             for _ in range(8)), 5)
        self.assertFalse(t.check("k", now_ms=T0 + 11999).allowed)
        self.assertTrue(t.check("k", now_ms=T0 + 12000).allowed)


class HeaderVocabularyTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tkshm-hv-")
        os.chmod(self.dir, 0o700)
        self.old = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = self.dir

    def tearDown(self):
        if self.old is None:
            del os.environ["XDG_RUNTIME_DIR"]
        else:
            os.environ["XDG_RUNTIME_DIR"] = self.old
        shutil.rmtree(self.dir)

    def test_one_vocabulary(self):
        d = private("fixedWindow:limit=1,windowMs=1000").check("k", now_ms=T0)
        names = {style: [n for n, _ in tkshm.headers(d, style=style,
                                                     now=T0)]
                 for style in ("draft", "legacy", "none")}
        self.assertEqual(names["draft"], ["RateLimit-Policy", "RateLimit"])
        self.assertEqual(names["legacy"], ["RateLimit-Limit",
                                           "RateLimit-Remaining",
                                           "RateLimit-Reset"])
        self.assertEqual(names["none"], [])
        # The old spellings are refused, saying the words.
        for old in (True, False, "off", None):
            with self.assertRaises(ValueError) as cm:
                tkshm.headers(d, style=old)
            self.assertIn("'draft', 'legacy' or 'none'", str(cm.exception))
            with self.assertRaises(ValueError):
                RateLimitMiddleware(lambda e, s: [], private("10/second"),
                                    headers=old)
            with self.assertRaises(ValueError):
                RouteLimits("m.v", [Limit("10/second")], headers=old)


class Source(KeySource):
    def client_addr(self, request):
        return request["addr"]

    def header(self, request, name):
        return request.get(name)

    def user(self, request):
        return request.get("user")


class RouteLimitsTest(HeaderVocabularyTest):
    def test_key_kinds(self):
        rl = RouteLimits("tests.ip", [Limit("2 per day")], headers="none")
        same64 = [{"addr": "2001:db8::1"}, {"addr": "2001:db8::ffff"}]
        self.assertEqual([rl.decide(r, Source()).allowed for r in same64],
                         [True, True])
        self.assertFalse(rl.decide({"addr": "2001:db8::9"}, Source()))
        self.assertTrue(rl.decide({"addr": "2001:db8:0:1::1"}, Source()))
        # A missing header is keyed by the address: leaving it out never
        # skips the limit; a header value never names an address's bucket.
        rh = RouteLimits("tests.h", [Limit("1 per day", key="header:X-K")])
        self.assertTrue(rh.decide({"addr": "10.0.0.1", "X-K": "a"}, Source()))
        self.assertFalse(rh.decide({"addr": "10.0.0.2", "X-K": "a"},
                                   Source()))
        self.assertTrue(rh.decide({"addr": "10.0.0.1"}, Source()))
        self.assertFalse(rh.decide({"addr": "10.0.0.1"}, Source()))
        self.assertTrue(rh.decide({"addr": "10.0.0.3",
                                   "X-K": "a:10.0.0.1"}, Source()))
        ru = RouteLimits("tests.u", [Limit("1 per day", key="user")])
        self.assertTrue(ru.decide({"addr": "10.0.0.1", "user": 7}, Source()))
        self.assertFalse(ru.decide({"addr": "10.0.0.2", "user": 7},
                                   Source()))
        self.assertTrue(ru.decide({"addr": "10.0.0.2"}, Source()))
        with self.assertRaises(ValueError):
            Limit("1/day", key="cookie")

    def test_costs_are_finite_numbers(self):
        for bad in (-1, float("nan"), float("inf"), True, "2"):
            with self.assertRaises(ValueError, msg=repr(bad)):
                Limit("1/day", cost=bad)
        # A cost function's bad answer is raised (the application's bug),
        # never taken for a failed check that a fail-open limit admits.
        rl = RouteLimits("tests.cost", [Limit("5 per day",
                                              cost=lambda r: r["cost"])])
        for bad in (float("nan"), -2, None):
            with self.assertRaises(ValueError, msg=repr(bad)):
                rl.decide({"addr": "192.0.2.9", "cost": bad}, Source())
        self.assertTrue(rl.decide({"addr": "192.0.2.9", "cost": 5},
                                  Source()))
        self.assertFalse(rl.decide({"addr": "192.0.2.9", "cost": 1},
                                   Source()))

    def test_all_or_nothing_and_shared_names(self):
        a = RouteLimits("tests.a", [Limit("3 per day"),
                                    Limit("1 per day", name="shared")])
        b = RouteLimits("tests.b", [Limit("1 per day", name="shared")])
        req = {"addr": "192.0.2.1"}
        self.assertTrue(a.decide(req, Source()))
        self.assertFalse(b.decide(req, Source()))  # one shared bucket
        denied = a.decide(req, Source())
        self.assertFalse(denied)
        self.assertEqual(denied.status, 429)
        self.assertIn(("Retry-After", str(-(-denied.decision.retry_after_ms
                                            // 1000))), denied.headers)
        # The denial by the shared limit consumed nothing in the other.
        self.assertEqual(a.tables[0].peek("a:192.0.2.1").remaining, 2)
        with self.assertRaises(ValueError):
            RouteLimits("tests.c", [Limit("2 per day", name="shared")])

    def test_attacker_input_is_never_a_failed_check(self):
        """A key function that raises on a client's garbage (here
        tkshm.client_key on a header) is the application's error, raised,
        never a failed check that a fail-open limit would admit; huge and
        tiny costs are decided, not refused; a NUL in an address keys."""
        rl = RouteLimits("tests.garbage", [Limit(
            "2 per day", key=lambda r: tkshm.client_key(r["X-Real-IP"]))])
        for _ in range(2):
            self.assertTrue(rl.decide({"addr": "-", "X-Real-IP": "10.0.0.1"},
                                      Source()))
        with self.assertRaises(tkshm.Error):
            rl.decide({"addr": "-", "X-Real-IP": "garbage"}, Source())
        huge = RouteLimits("tests.huge", [Limit(
            "2 per day", cost=lambda r: r["cost"])])
        self.assertFalse(huge.decide({"addr": "10.0.0.2", "cost": 2 ** 60},
                                     Source()))
        tiny = RouteLimits("tests.tiny", [Limit(
            "tokenBucket:capacity=2,refillPerSec=0.0001",
            cost=lambda r: r["cost"])])
        seen = [tiny.decide({"addr": "10.0.0.3", "cost": 1e-300},
                            Source()).allowed for _ in range(4)]
        self.assertEqual(seen, [True, True, False, False])
        self.assertTrue(RouteLimits("tests.nul", [Limit("1 per day")]).decide(
            {"addr": "bad\x00addr"}, Source()))
        with self.assertRaises(ValueError):
            Limit("1 per day", policy_name="caf\u00e9")

    def test_table_names_never_collide_by_spelling(self):
        a = RouteLimits("tests.x[GET /a/b]", [Limit("1 per day")])
        b = RouteLimits("tests.x[GET /a_b]", [Limit("1 per day")])
        req = {"addr": "192.0.2.77"}
        self.assertTrue(a.decide(req, Source()))
        self.assertTrue(b.decide(req, Source()))

    def test_wsgi_costs_and_options(self):
        calls = []

        def app(environ, start_response):
            calls.append(1)
            start_response("200 OK", [])
            return [b"ok"]

        t = private("fixedWindow:limit=2,windowMs=86400000")
        mw = RateLimitMiddleware(app, t, cost=lambda e: e["cost"])
        seen = []

        def sr(status, headers, exc_info=None):
            seen.append(status[:3])

        for cost in (2, 2 ** 60, 1e-300):
            mw({"REMOTE_ADDR": "192.0.2.1", "cost": cost}, sr)
        self.assertEqual(seen, ["200", "429", "429"])
        for cost in (float("nan"), -1):
            with self.assertRaises(ValueError):
                mw({"REMOTE_ADDR": "192.0.2.1", "cost": cost}, sr)
        for bad in ({"cost": -1}, {"status": 200}, {"status": "429"},
                    {"policy_name": "caf\u00e9"}):
            with self.assertRaises(ValueError, msg=repr(bad)):
                RateLimitMiddleware(app, t, **bad)

    def test_failure_fails_open_unless_told(self):
        """A check the library cannot decide (a strict table with no
        Redis: ENOREDIS) lets the request through, unless fail_open=False
        or the table's policy fails closed: then 503."""
        spec = "10 per second;mode=strict,failure=%s"
        req = {"addr": "192.0.2.1"}
        for failure, fail_open, want in (("fail-open", True, (True, None)),
                                         ("fail-open", False, (False, 503)),
                                         ("fail-closed", True,
                                          (False, 503))):
            t = tkshm.Table(None, spec % failure, private=True)
            rl = RouteLimits("tests.f", [Limit(None, table=t)],
                             fail_open=fail_open)
            v = rl.decide(req, Source())
            self.assertEqual((v.allowed, v.status), want, failure)


if __name__ == "__main__":
    unittest.main(verbosity=2)
