"""tkshm.Redis: strict tables decided on a real redis-server.

Run by ctest (python_redis) in the wheel's venv; exits 77 (skipped) without
/usr/bin/redis-server or without the library's Redis tier.  Each server is
this process's own (redis_servers.py): 127.0.0.1 on a free port below
45536, no persistence, stopped by its pid and process group in teardown.
"""

import os
import shutil
import sys
import tempfile
import threading
import unittest

import tkshm
from tkshm.wsgi import RateLimitMiddleware

from redis_servers import REDIS_SERVER, Server

STRICT = "gcra:limit=%d,periodMs=3600000;mode=strict,prefix=%s,failure=%s"


class StrictTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server().start()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tkshm-py-strict-")
        self.redis = tkshm.Redis(port=self.server.port,
                                 command_timeout_ms=2000)

    def tearDown(self):
        self.redis.close()
        shutil.rmtree(self.dir)

    def table(self, limit, prefix, failure="fail-closed", **kw):
        return tkshm.Table(os.path.join(self.dir, prefix),
                           STRICT % (limit, prefix, failure), slots=64, **kw)

    def test_strict_without_redis_is_enoredis(self):
        with self.table(5, "none") as t:
            self.assertIsNone(t.redis)
            with self.assertRaises(tkshm.Error) as cm:
                t.check("k")
            self.assertEqual(cm.exception.code, tkshm.ENOREDIS)

    def test_attach_decides_on_redis(self):
        with self.table(3, "att") as t:
            t.attach(self.redis)
            self.assertIs(t.redis, self.redis)
            got = [t.check("k").allowed for _ in range(5)]
            self.assertEqual(got, [True] * 3 + [False] * 2)
            self.assertEqual(t.peek("other").remaining, 3)
            self.assertGreaterEqual(t.stats()["global"]["redis_calls"], 3)
            t.attach(None)
            self.assertIsNone(t.redis)
            with self.assertRaises(tkshm.Error) as cm:
                t.check("k")
            self.assertEqual(cm.exception.code, tkshm.ENOREDIS)
            t.attach(None)  # detaching twice is fine

    def test_redis_keyword_and_the_reference_kept(self):
        r = tkshm.Redis(port=self.server.port, command_timeout_ms=2000)
        t = self.table(2, "kw", redis=r)
        self.assertIs(t.redis, r)
        del r  # the table keeps it alive
        self.assertEqual([t.check("k").allowed for _ in range(3)],
                         [True, True, False])
        t.close()
        self.assertIsNone(t.redis)

    def test_exact_across_four_forked_processes(self):
        """limit 10, 4 processes x 25 checks of one key, each on the
        inherited Table and Redis (the parent's connection already
        open): exactly 10 admitted in all."""
        limit, procs, checks = 10, 4, 25
        t = self.table(limit, "fork", redis=self.redis)
        self.assertTrue(t.check("warm").allowed)  # parent connects first
        r_fd, w_fd = os.pipe()
        pids = []
        for _ in range(procs):
            pid = os.fork()
            if pid == 0:  # the child: its count on the pipe, always exit
                code = 1
                try:
                    os.close(r_fd)
                    n = sum(t.check("hot").allowed for _ in range(checks))
                    os.write(w_fd, b"%d\n" % n)
                    code = 0
                finally:
                    os._exit(code)
            pids.append(pid)
        os.close(w_fd)
        for pid in pids:
            _, status = os.waitpid(pid, 0)
            self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        with os.fdopen(r_fd) as f:
            counts = [int(x) for x in f.read().split()]
        self.assertEqual(len(counts), procs)
        self.assertEqual(sum(counts), limit, counts)
        self.assertFalse(t.check("hot").allowed)  # the parent agrees
        g = t.stats()["global"]
        self.assertEqual(g["fallback_allowed"] + g["fallback_denied"], 0)
        t.close()

    def test_threads_share_one_redis(self):
        """8 threads checking one key through tables attached to one
        Redis take turns on its lock: exactly the limit, no error."""
        limit = 20
        tables = [self.table(limit, "thr", redis=self.redis)
                  for _ in range(2)]
        admitted, errors = [], []

        def work(t):
            try:
                admitted.append(sum(t.check("hot").allowed
                                    for _ in range(25)))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(tables[i % 2],))
                   for i in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(errors, [])
        self.assertEqual(sum(admitted), limit)
        for t in tables:
            t.close()

    def test_close_detaches_every_table(self):
        r = tkshm.Redis(port=self.server.port)
        with r:
            a = self.table(5, "cl1", redis=r)
            b = self.table(5, "cl2", redis=r)
            self.assertTrue(a.check("k") and b.check("k"))
        self.assertTrue(r.closed)
        for t in (a, b):
            self.assertIsNone(t.redis)
            with self.assertRaises(tkshm.Error) as cm:
                t.check("k")
            self.assertEqual(cm.exception.code, tkshm.ENOREDIS)
        r.close()  # twice is fine
        with self.assertRaises(ValueError):
            a.attach(r)
        with self.assertRaises(ValueError):
            self.table(5, "cl3", redis=r)
        with self.assertRaises(ValueError):
            with r:
                pass
        a.attach(self.redis)  # another one
        self.assertEqual(a.check("k").remaining, 3)
        a.close()
        b.close()

    def test_non_strict_table_is_enotsup(self):
        path = os.path.join(self.dir, "local")
        with tkshm.Table(path, "gcra:limit=5,periodMs=1000") as t:
            with self.assertRaises(tkshm.Error) as cm:
                t.attach(self.redis)
            self.assertEqual(cm.exception.code, tkshm.ENOTSUP)
            self.assertEqual(cm.exception.name, "TKSHM_ENOTSUP")
            self.assertIsNone(t.redis)
            self.assertTrue(t.check("k"))  # still a local table
        with self.assertRaises(tkshm.Error) as cm:
            tkshm.Table(path, "gcra:limit=5,periodMs=1000",
                        redis=self.redis)
        self.assertEqual(cm.exception.code, tkshm.ENOTSUP)
        # refused before the open: no file made
        with self.assertRaises(tkshm.Error) as cm:
            tkshm.Table(path + "2", "gcra:limit=5,periodMs=1000",
                        redis=self.redis)
        self.assertEqual(cm.exception.code, tkshm.ENOTSUP)
        self.assertFalse(os.path.exists(path + "2"))
        # no policy given: the table's own decides, after the open
        with self.assertRaises(tkshm.Error) as cm:
            tkshm.Table(path, redis=self.redis)
        self.assertEqual(cm.exception.code, tkshm.ENOTSUP)
        with self.assertRaises(tkshm.Error) as cm:
            tkshm.Table(None, "fixedWindow:limit=5,windowMs=1000",
                        private=True, redis=self.redis)
        self.assertEqual(cm.exception.code, tkshm.ENOTSUP)

    def test_bad_options_raise_einval_and_change_nothing(self):
        t = self.table(4, "bad", redis=self.redis)
        self.assertTrue(t.check("k"))
        bad = [
            dict(port=0),
            dict(port=70000),
            dict(port=-1),
            dict(cluster="127.0.0.1:7000", sentinels="127.0.0.1:26379",
                 sentinel_master="m"),
            dict(sentinels=["127.0.0.1:26379"]),
            dict(sentinel_master="m"),
            dict(cluster=[]),
            dict(cluster=""),
            dict(cluster="127.0.0.1:7000", port=6379),
            dict(host="h", unix_path="/tmp/x.sock"),
            dict(connect_timeout_ms=-1),
            dict(command_timeout_ms=0.5),
            dict(breaker_open_ms=3600001),
            dict(breaker_failures=-1),
            dict(db=-1),
            dict(host="h" * 4096),
            dict(cluster="not an address"),
        ]
        for opts in bad:
            with self.assertRaises(tkshm.Error, msg=opts) as cm:
                tkshm.Redis(**opts)
            self.assertEqual(cm.exception.code, tkshm.EINVAL, opts)
        for opts, exc in ((dict(port="6379"), TypeError),
                          (dict(cluster=5), TypeError),
                          (dict(cluster=["a:1", 2]), TypeError),
                          (dict(host="a\0b"), ValueError),
                          (dict(cluster="a:1\0"), ValueError),
                          (dict(nosuch=1), TypeError)):
            with self.assertRaises(exc, msg=opts):
                tkshm.Redis(**opts)
        with self.assertRaises(TypeError):
            tkshm.Redis("127.0.0.1")  # keyword-only
        with self.assertRaises(TypeError):
            t.attach("redis://127.0.0.1")
        # nothing changed: still attached, still deciding on Redis
        self.assertIs(t.redis, self.redis)
        self.assertEqual(t.check("k").remaining, 2)
        t.close()

    def test_good_options_and_repr(self):
        cases = [
            (dict(), "<tkshm.Redis 127.0.0.1:6379>"),
            (dict(host="localhost", port=7000), "<tkshm.Redis localhost:7000>"),
            (dict(unix_path="/run/redis.sock"),
             "<tkshm.Redis unix:/run/redis.sock>"),
            (dict(cluster=["10.0.0.1:7000", "10.0.0.2:7000"]),
             "<tkshm.Redis cluster=10.0.0.1:7000,10.0.0.2:7000>"),
            (dict(sentinels="10.0.0.1:26379", sentinel_master="mymaster",
                  password="secret"),
             "<tkshm.Redis sentinels=10.0.0.1:26379 master=mymaster>"),
        ]
        for opts, want in cases:
            r = tkshm.Redis(**opts)
            self.assertEqual(repr(r), want)
            self.assertFalse(r.closed)
            r.close()
            self.assertEqual(repr(r), "<tkshm.Redis closed>")

    def test_wsgi_middleware_redis_option(self):
        calls = []

        def app(environ, start_response):
            calls.append(1)
            start_response("200 OK", [])
            return [b"ok"]

        seen = []

        def sr(status, headers, exc_info=None):
            seen.append(status[:3])

        env = {"REMOTE_ADDR": "192.0.2.7"}
        t = self.table(2, "wsgi")
        mw = RateLimitMiddleware(app, t, redis={"port": self.server.port})
        self.assertIsInstance(t.redis, tkshm.Redis)
        for _ in range(3):
            mw(env, sr)
        self.assertEqual(seen, ["200", "200", "429"])
        RateLimitMiddleware(app, t, redis=self.redis)  # an object too
        self.assertIs(t.redis, self.redis)
        # not strict: the option is ignored
        local = tkshm.Table(os.path.join(self.dir, "wl"),
                            "gcra:limit=2,periodMs=1000", slots=8)
        RateLimitMiddleware(app, local, redis=self.redis)
        self.assertIsNone(local.redis)
        t.close()
        local.close()


class RedisDownTest(unittest.TestCase):
    """redis-server stopped: fail-closed denies, fail-open admits, both
    flagged DECISION_FALLBACK and counted."""

    def test_failure_policy_decides(self):
        server = Server().start()
        d = tempfile.mkdtemp(prefix="tkshm-py-down-")
        try:
            r = tkshm.Redis(port=server.port, connect_timeout_ms=200,
                            command_timeout_ms=200, breaker_open_ms=60000)
            closed = tkshm.Table(os.path.join(d, "c"),
                                 STRICT % (100, "dc", "fail-closed"),
                                 slots=64, redis=r)
            opened = tkshm.Table(os.path.join(d, "o"),
                                 STRICT % (100, "do", "fail-open"),
                                 slots=64, redis=r)
            for t in (closed, opened):  # Redis up: decided there
                x = t.check("k")
                self.assertTrue(x.allowed)
                self.assertFalse(x.flags & tkshm.DECISION_FALLBACK)
            server.stop()
            for _ in range(5):
                x = closed.check("k")
                self.assertFalse(x.allowed)
                self.assertTrue(x.flags & tkshm.DECISION_FALLBACK)
                y = opened.check("k")
                self.assertTrue(y.allowed)
                self.assertTrue(y.flags & tkshm.DECISION_FALLBACK)
            self.assertEqual(closed.stats()["global"]["fallback_denied"], 5)
            self.assertEqual(opened.stats()["global"]["fallback_allowed"],
                             5)
            closed.close()
            opened.close()
            r.close()
        finally:
            server.stop()
            shutil.rmtree(d)


def main():
    if not os.access(REDIS_SERVER, os.X_OK):
        print("skipped: no %s (Debian's redis-server)" % REDIS_SERVER)
        return 77
    try:
        tkshm.Redis().close()
    except tkshm.Error as e:
        if e.code != tkshm.ENOTSUP:
            raise
        print("skipped: %s" % e)
        return 77
    prog = unittest.main(exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
