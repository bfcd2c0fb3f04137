"""Unit tests of the Python extension.  Run as a script (ctest's python_unit
runs it with the interpreter of the venv the wheel is installed in)."""

import gc
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest

import tkshm

FW = "fixedWindow:limit=5,windowMs=1000"
T0 = 1_000_000_000_000.0  # an epoch ms on a window boundary


class TableTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tkshm-py-")
        self.path = os.path.join(self.dir, "t.tkshm")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_check_counts_down_then_denies(self):
        with tkshm.Table(self.path, FW, slots=64) as t:
            for i in range(5):
                d = t.check("k", now_ms=T0 + i)
                self.assertTrue(d)
                self.assertTrue(d.allowed)
                self.assertEqual(d.limit, 5)
                self.assertEqual(d.remaining, 4 - i)
                self.assertEqual(d.retry_after_ms, 0)
            d = t.check("k", now_ms=T0 + 10)
            self.assertFalse(d)
            self.assertFalse(d.allowed)
            self.assertEqual(d.remaining, 0)
            self.assertEqual(d.reset_at, int(T0) + 1000)
            self.assertEqual(d.retry_after_ms, 990)
            # the next window admits again
            self.assertTrue(t.check("k", now_ms=T0 + 1000))

    def test_cost_bytes_and_str_keys_are_the_same(self):
        with tkshm.Table(self.path, FW) as t:
            self.assertEqual(t.check("é", 3, T0).remaining, 2)
            self.assertEqual(t.check("é".encode(), now_ms=T0).remaining, 1)
            self.assertFalse(t.check(b"\xc3\xa9", cost=2.0, now_ms=T0))

    def test_peek_consumes_nothing(self):
        with tkshm.Table(self.path, FW) as t:
            t.check("k", now_ms=T0)
            for _ in range(3):
                d = t.peek("k", now_ms=T0 + 1)
                self.assertTrue(d)
                self.assertEqual(d.remaining, 4)
            self.assertEqual(t.peek("k").limit, 5)  # system clock

    def test_reset(self):
        with tkshm.Table(self.path, FW) as t:
            t.check("k", 5, T0)
            self.assertFalse(t.check("k", now_ms=T0))
            self.assertIsNone(t.reset("k"))
            self.assertEqual(t.check("k", now_ms=T0).remaining, 4)
            t.reset(b"absent")

    def test_stats_and_policy(self):
        with tkshm.Table(self.path, FW, slots=100) as t:
            self.assertEqual(t.policy, "fixedWindow:limit=5,windowMs=1000")
            for _ in range(7):
                t.check("k", now_ms=T0)
            t.reset("k")
            s = t.stats()
            self.assertEqual(s["allowed"], 5)
            self.assertEqual(s["denied"], 2)
            self.assertEqual(s["resets"], 1)
            self.assertEqual(s["slots"], 128)
            self.assertEqual(s["policy"], t.policy)
            # A local table: the cross-host tier's counters are all zero.
            g = s["global"]
            self.assertEqual(g["redis_calls"], 0)
            self.assertEqual(g["leases"], 0)
            self.assertIs(g["redis_up"], False)
            self.assertEqual(g["agent_pid"], 0)
            self.assertEqual(len(g), 16)
            self.assertFalse(s["anonymous"])
            self.assertGreater(s["file_bytes"], 0)
            for k in ("inserts", "evictions", "cas_retries", "refusals",
                      "layout_version", "created_ms", "on_full"):
                self.assertIn(k, s)

    def test_canonical_policy_and_attach(self):
        t = tkshm.Table(self.path, "slidingWindow:limit=10,windowMs=1000")
        self.assertEqual(t.policy,
                         "slidingWindow:limit=10,windowMs=1000,buckets=10")
        t.check("k", now_ms=T0)
        # a second handle adopts the table's policy and sees its state
        with tkshm.Table(self.path) as u:
            self.assertEqual(u.policy, t.policy)
            self.assertEqual(u.peek("k", now_ms=T0).remaining, 9)
        t.close()

    def test_anonymous_shared_with_forked_child(self):
        with tkshm.Table(None, FW, slots=64) as t:
            self.assertTrue(t.stats()["anonymous"])
            pid = os.fork()
            if pid == 0:
                code = 0 if t.check("k", 3, T0).remaining == 2 else 1
                os._exit(code)
            _, status = os.waitpid(pid, 0)
            self.assertEqual(os.waitstatus_to_exitcode(status), 0)
            self.assertEqual(t.check("k", now_ms=T0).remaining, 1)

    def test_decision_is_frozen(self):
        with tkshm.Table(self.path, FW) as t:
            d = t.check("k", now_ms=T0)
        for name in ("allowed", "limit", "remaining", "reset_at",
                     "retry_after_ms", "flags"):
            with self.assertRaises(AttributeError):
                setattr(d, name, 1)
        with self.assertRaises(AttributeError):
            d.other = 1
        with self.assertRaises(TypeError):
            tkshm.Decision()
        self.assertIn("remaining=4", repr(d))
        self.assertIsInstance(d, tkshm.Decision)
        self.assertEqual(hash(d), hash(d))

    def test_context_manager_and_close(self):
        t = tkshm.Table(self.path, FW)
        with t as u:
            self.assertIs(t, u)
            self.assertFalse(t.closed)
        self.assertTrue(t.closed)
        with self.assertRaises(ValueError):
            t.check("k")
        with self.assertRaises(ValueError):
            t.stats()
        t.close()  # twice is fine
        with self.assertRaises(ValueError):
            with t:
                pass
        # a table dropped without close is closed by the collector
        tkshm.Table(self.path)
        gc.collect()

    def test_errors(self):
        with tkshm.Table(self.path, FW) as t:
            with self.assertRaises(tkshm.Error) as cm:
                t.check("")
            e = cm.exception
            self.assertEqual(e.code, tkshm.EKEYEMPTY)
            self.assertEqual(e.code, -30902)
            self.assertEqual(e.name, "TKSHM_EKEYEMPTY")
            self.assertEqual(str(e), tkshm.strerror(tkshm.EKEYEMPTY))
            with self.assertRaises(tkshm.Error) as cm:
                t.check(b"x" * (tkshm.KEY_MAX + 1))
            self.assertEqual(cm.exception.code, tkshm.EKEYLONG)
            for cost in (0, -1, float("nan"), float("inf")):
                with self.assertRaises(tkshm.Error) as cm:
                    t.check("k", cost)
                self.assertEqual(cm.exception.code, tkshm.ECOST)
            with self.assertRaises(tkshm.Error) as cm:
                t.check("k", now_ms=-1)
            self.assertEqual(cm.exception.code, tkshm.ENOW)
            with self.assertRaises(tkshm.Error) as cm:
                t.peek(b"")
            self.assertEqual(cm.exception.code, tkshm.EKEYEMPTY)
            with self.assertRaises(tkshm.Error) as cm:
                t.reset("")
            self.assertEqual(cm.exception.code, tkshm.EKEYEMPTY)
        with self.assertRaises(tkshm.Error) as cm:
            tkshm.Table(self.path + "2", "fixedWindow:limit=0,windowMs=1")
        self.assertEqual(cm.exception.code, tkshm.EPOLICY)
        self.assertEqual(cm.exception.name, "TKSHM_EPOLICY")
        with self.assertRaises(tkshm.Error) as cm:
            tkshm.Table(self.path, "gcra:limit=1,periodMs=1000", keep=True)
        self.assertEqual(cm.exception.code, tkshm.EMISMATCH)
        with self.assertRaises(tkshm.Error) as cm:
            tkshm.Table(os.path.join(self.dir, "absent"), FW, create=False)
        self.assertEqual(cm.exception.code, tkshm.ENOENT)
        self.assertTrue(issubclass(tkshm.Error, Exception))

    def test_bad_input_types(self):
        with tkshm.Table(self.path, FW) as t:
            for key in (1, None, 1.5, ["k"], bytearray(b"k")):
                with self.assertRaises(TypeError):
                    t.check(key)
            with self.assertRaises(TypeError):
                t.check("k", "1")
            with self.assertRaises(TypeError):
                t.check("k", now_ms="now")
            with self.assertRaises(TypeError):
                t.check()
            with self.assertRaises(TypeError):
                t.reset(3)
            with self.assertRaises(UnicodeEncodeError):
                t.check("\ud800")
        with self.assertRaises(TypeError):
            tkshm.Table(self.path, 5)
        with self.assertRaises(TypeError):
            tkshm.Table()
        with self.assertRaises(OverflowError):
            tkshm.Table(self.path, FW, slots=-1)
        with self.assertRaises(TypeError):
            tkshm.Table(self.path, FW, slots="8")
        with self.assertRaises(ValueError):
            tkshm.Table(self.path, FW, mode=0o10000)

    def test_mode(self):
        p = os.path.join(self.dir, "m.tkshm")
        tkshm.Table(p, FW, slots=8, mode=0o640).close()
        self.assertEqual(os.stat(p).st_mode & 0o777, 0o640)

    def test_mode_outside_0o777_refused(self):
        # Issue 18: a setuid, setgid or sticky bit made such a file; now
        # refused, naming the bits, and nothing is created.
        for m in (0o4600, 0o2660, 0o1600, 0o7777, 0xFFFFFFFF):
            p = os.path.join(self.dir, "m%o.tkshm" % m)
            with self.assertRaisesRegex(
                    ValueError, "mode 0o%o has bits outside 0o777" % m):
                tkshm.Table(p, FW, slots=8, mode=m)
            self.assertFalse(os.path.exists(p), oct(m))


DAY = "fixedWindow:limit=%d,windowMs=86400000"
T0 = 1.0e12


def spend(t, key, n=1000):
    """Checks of key at T0 until a denial; the admissions."""
    got = 0
    while got < n and t.check(key, now_ms=T0):
        got += 1
    return got


class LifecycleTest(unittest.TestCase):
    """A table's policy and size change while handles are open
    (docs/lifecycle.md)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tkshm-py-life-")
        self.path = os.path.join(self.dir, "t")

    def tearDown(self):
        gc.collect()
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_changed_policy_applies_in_place(self):
        with tkshm.Table(self.path, DAY % 20, slots=64) as a:
            self.assertEqual(a.change.kind, "create")
            self.assertEqual((a.change.slots_before, a.change.slots_after),
                             (0, 64))
            self.assertEqual(spend(a, "k"), 20)
            with tkshm.Table(self.path, DAY % 40) as b:
                self.assertEqual(b.change, tkshm.Change(
                    ("in_place", True, 64, 64,
                     "limit 20 -> 40, states kept")))
                # The handle opened before follows: 20 more, not 40.
                self.assertEqual(spend(a, "k"), 20)
                self.assertEqual(a.policy, b.policy)
            with tkshm.Table(self.path, DAY % 40) as c:
                self.assertEqual(c.change.kind, "none")
            # keep=True: the old refusal, and nothing changed.
            with self.assertRaises(tkshm.Error) as cm:
                tkshm.Table(self.path, DAY % 80, keep=True)
            self.assertEqual(cm.exception.code, tkshm.EMISMATCH)
            self.assertEqual(a.policy, tkshm.Table(self.path).policy)
            self.assertIn("limit=40,", a.policy)

    def test_change_is_a_named_tuple(self):
        with tkshm.Table(self.path, DAY % 5, slots=64) as a:
            kind, kept, before, after, text = a.change
            self.assertEqual((kind, kept, before, after),
                             ("create", False, 0, 64))
            self.assertEqual(a.change.text, text)
            self.assertIn("kind='create'", repr(a.change))
            with self.assertRaises(AttributeError):
                a.change.kind = "none"

    def test_plan_and_apply(self):
        with tkshm.Table(self.path, DAY % 5, slots=64) as a:
            self.assertEqual(spend(a, "k", 3), 3)
            p = tkshm.plan(self.path, None, 1024)
            self.assertEqual(p.kind, "replace")
            self.assertEqual((p.slots_before, p.slots_after), (64, 1024))
            self.assertEqual(a.stats()["slots"], 64)  # plan changed nothing
            c = a.apply(slots=1024)
            self.assertEqual(c.kind, "replace")
            self.assertTrue(c.states_kept)
            self.assertEqual(a.change, c)
            self.assertEqual(a.stats()["slots"], 1024)
            self.assertEqual(spend(a, "k"), 2)  # the key was carried
            with self.assertRaises(tkshm.Error) as cm:
                a.apply(slots=64)
            self.assertEqual(cm.exception.code, tkshm.EINVAL)
            with self.assertRaises(tkshm.Error) as cm:
                a.apply("gcra:limit=-1,periodMs=1")
            self.assertEqual(cm.exception.code, tkshm.EPOLICY)
            p = tkshm.plan(self.path, DAY % 10)
            self.assertEqual(p.kind, "in_place")
            self.assertIn("limit=5,", a.policy)  # plan changed nothing
            c = a.apply(DAY % 10)
            self.assertEqual(c, p)
            self.assertEqual(spend(a, "k"), 5)  # 5 used of 10
            c = a.apply("gcra:limit=5,periodMs=86400000")
            self.assertEqual(c.kind, "replace")
            self.assertFalse(c.states_kept)
        p = tkshm.plan(os.path.join(self.dir, "none"), DAY % 5)
        self.assertEqual(p.kind, "create")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "none")))

    def test_anonymous_after_fork_is_an_error(self):
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                try:
                    tkshm.Table(None, DAY % 5)
                except RuntimeError as e:
                    code = 0 if "private to this worker" in str(e) else 2
                else:
                    code = 1
                with tkshm.Table(None, DAY % 5, private=True):
                    pass
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        with tkshm.Table(None, DAY % 5) as t:  # not forked: fine
            self.assertTrue(t.stats()["anonymous"])

    def run_script(self, script):
        """The output of `script` run by a fresh interpreter, which has
        not imported tkshm (as a gunicorn master without --preload)."""
        path = os.path.join(self.dir, "script.py")  # spawn re-imports it
        with open(path, "w") as f:
            f.write(textwrap.dedent(script))
        r = subprocess.run([sys.executable, path], capture_output=True,
                           text=True, timeout=60, cwd=self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.split()

    def test_anonymous_after_fork_detected_without_import(self):
        # tkshm imported only after the fork: the fork is recognised by
        # the child's auxiliary vector, a copy of its parent's.  A child
        # that exec'd a new interpreter has its own: no error there.
        out = self.run_script("""
            import os, subprocess, sys
            pid = os.fork()
            if pid == 0:
                import tkshm
                try:
                    tkshm.Table(None, "gcra:limit=5,periodMs=1000")
                    print("forked:none")
                except RuntimeError as e:
                    print("forked:" + ("ok" if "after fork()" in str(e)
                                       else "other"))
                os._exit(0)
            os.waitpid(pid, 0)
            sys.stdout.flush()
            subprocess.run([sys.executable, "-c", "import tkshm; "
                            "tkshm.Table(None, 'gcra:limit=5,periodMs=1000');"
                            "print('exec:ok')"], check=True)
        """)
        with open("/proc/sys/kernel/randomize_va_space") as f:
            aslr = f.read().strip() != "0"
        self.assertEqual(out, ["forked:ok" if aslr else "forked:none",
                               "exec:ok"])

    def test_anonymous_in_a_spawned_worker_is_an_error(self):
        out = self.run_script("""
            import multiprocessing

            def worker(q):
                import tkshm
                try:
                    tkshm.Table(None, "gcra:limit=5,periodMs=1000")
                    q.put("none")
                except RuntimeError as e:
                    q.put("ok" if "multiprocessing child" in str(e)
                          else "other")
                with tkshm.Table(None, "gcra:limit=5,periodMs=1000",
                                 private=True):
                    q.put("private")

            if __name__ == "__main__":
                ctx = multiprocessing.get_context("spawn")
                q = ctx.Queue()
                p = ctx.Process(target=worker, args=(q,))
                p.start()
                print(q.get(timeout=30), q.get(timeout=30))
                p.join()
        """)
        self.assertEqual(out, ["ok", "private"])

    def with_runtime_dir(self, value):
        old = os.environ.get("XDG_RUNTIME_DIR")
        os.environ["XDG_RUNTIME_DIR"] = value

        def restore():
            if old is None:
                del os.environ["XDG_RUNTIME_DIR"]
            else:
                os.environ["XDG_RUNTIME_DIR"] = old
        self.addCleanup(restore)

    def test_default_table_path(self):
        self.with_runtime_dir(self.dir)
        path = tkshm.default_table_path("my app/v1")
        self.assertEqual(path, os.path.join(self.dir, "tkshm", "my_app_v1"))
        self.assertEqual(os.stat(os.path.dirname(path)).st_mode & 0o777,
                         0o700)
        name = tkshm.app_table_name(spend)
        self.assertTrue(name.startswith(__name__ + ".spend-"), name)
        self.assertEqual(tkshm.app_table_name(spend), name)  # stable

    def test_run_dir_refuses_a_symlink(self):
        self.with_runtime_dir(self.dir)
        os.mkdir(os.path.join(self.dir, "elsewhere"), 0o700)
        os.symlink("elsewhere", os.path.join(self.dir, "tkshm"))
        with self.assertRaises(tkshm.Error) as cm:
            tkshm.run_dir()
        self.assertEqual(cm.exception.code, tkshm.ESYMLINK)
        self.assertIn("symbolic link", str(cm.exception))

    def test_run_dir_skips_a_directory_others_can_write(self):
        self.with_runtime_dir(self.dir)
        os.mkdir(os.path.join(self.dir, "tkshm"), 0o700)
        os.chmod(os.path.join(self.dir, "tkshm"), 0o777)
        self.assertNotEqual(tkshm.run_dir(), os.path.join(self.dir, "tkshm"))
        os.chmod(os.path.join(self.dir, "tkshm"), 0o700)
        self.assertEqual(tkshm.run_dir(), os.path.join(self.dir, "tkshm"))

    def test_run_dir_without_a_usable_runtime_dir(self):
        # $XDG_RUNTIME_DIR absent: /run/tkshm as root, else /dev/shm with
        # the uid in the table's name.
        self.with_runtime_dir(os.path.join(self.dir, "absent"))
        made = not os.path.lexists("/run/tkshm")
        # One made by someone else counts only if it is ours and nobody
        # else may write it (the package's tmpfiles.d entry makes it
        # root:www-data 0770: not usable for default tables).
        ours = made or _only_ours("/run/tkshm")
        d = tkshm.run_dir()
        if made and os.path.isdir("/run/tkshm"):
            self.addCleanup(os.rmdir, "/run/tkshm")  # leave /run as it was
        if os.geteuid() == 0 and ours:
            self.assertEqual(d, "/run/tkshm")
            self.assertFalse(os.path.islink(d))
            if made:
                self.assertEqual(os.stat(d).st_mode & 0o777, 0o700)
        elif os.geteuid() == 0:
            self.assertEqual(d, "/dev/shm")
        else:  # /run/tkshm only if an operator made it ours
            self.assertIn(d, ("/run/tkshm", "/dev/shm"))
        if d == "/dev/shm":
            self.assertEqual(tkshm.default_table_path("a"),
                             "/dev/shm/tkshm-%d-a" % os.geteuid())


def _only_ours(path):
    """True when path is a directory (not a link) of this user that
    nobody else may write."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()
            and not st.st_mode & 0o022)


class HeadersTest(unittest.TestCase):
    def setUp(self):
        self.t = tkshm.Table(None, FW, slots=8)

    def tearDown(self):
        self.t.close()

    def test_draft_allowed(self):
        d = self.t.check("k", now_ms=T0)
        h = tkshm.headers(d, now=T0)
        self.assertEqual(h, [
            ("RateLimit-Policy", '"default";q=5'),
            ("RateLimit", '"default";r=4;t=1'),
        ])
        h = tkshm.headers(d, "api", window_s=1, now=T0 + 500)
        self.assertEqual(h[0], ("RateLimit-Policy", '"api";q=5;w=1'))
        self.assertEqual(h[1], ("RateLimit", '"api";r=4;t=1'))

    def test_legacy_denied(self):
        self.t.check("k", 5, T0)
        d = self.t.check("k", now_ms=T0 + 100)
        h = dict(tkshm.headers(d, style="legacy", now=T0 + 100))
        self.assertEqual(h, {
            "RateLimit-Limit": "5",
            "RateLimit-Remaining": "0",
            "RateLimit-Reset": "1",
            "Retry-After": "1",
        })
        h = dict(tkshm.headers(d, now=T0 + 100))
        self.assertEqual(h["Retry-After"], "1")
        self.assertEqual(h["RateLimit"], '"default";r=0;t=1')

    def test_none_style_and_bad_input(self):
        self.t.check("k", 5, T0)
        d = self.t.check("k", now_ms=T0 + 100)
        self.assertEqual(tkshm.headers(d, style="none", now=T0 + 100),
                         [("Retry-After", "1")])
        with self.assertRaises(ValueError):
            tkshm.headers(d, style="html")
        # A CR LF in the policy name would split the response's headers.
        with self.assertRaises(tkshm.Error) as cm:
            tkshm.headers(d, "a\r\nSet-Cookie: x")
        self.assertEqual(cm.exception.code, tkshm.EINVAL)
        self.assertEqual(tkshm.headers(d, 'say "hi"', now=T0)[0][1],
                         '"say \\"hi\\"";q=5')

    def test_bad_decision(self):
        with self.assertRaises(TypeError):
            tkshm.headers(None)


class ClientKeyTest(unittest.TestCase):
    def test_same_as_ipaddress(self):
        """The C key equals Python's ipaddress text for random addresses,
        prefixes and zero runs (RFC 5952 on both sides)."""
        import ipaddress
        import random
        rng = random.Random(8)
        for _ in range(20000):
            groups = [rng.choice((0, 0, 0, 1, 0xffff, rng.getrandbits(16)))
                      for _ in range(8)]
            ip = ipaddress.IPv6Address(
                int.from_bytes(b"".join(g.to_bytes(2, "big")
                                        for g in groups), "big"))
            bits = rng.choice((1, 7, 48, 56, 63, 64, 64, 65, 127, 128))
            if ip.ipv4_mapped is not None:
                want = str(ip.ipv4_mapped)
            else:
                want = str(ipaddress.ip_network((ip, bits), strict=False))
            self.assertEqual(tkshm.client_key(ip.exploded, bits), want)
            self.assertEqual(tkshm.client_key(str(ip), bits), want)
        for _ in range(1000):
            v4 = ipaddress.IPv4Address(rng.getrandbits(32))
            self.assertEqual(tkshm.client_key(str(v4)), str(v4))

    def test_errors(self):
        for bad in ("", "example.org", "1.2.3", "::g"):
            with self.assertRaises(tkshm.Error) as cm:
                tkshm.client_key(bad)
            self.assertEqual(cm.exception.code, tkshm.EINVAL)
        with self.assertRaises(tkshm.Error):
            tkshm.client_key("::1", 0)
        self.assertEqual(tkshm.client_key("2001:db8::1", v6_prefix=48),
                         "2001:db8::/48")


class WsgiTest(unittest.TestCase):
    def test_client_key(self):
        from tkshm.wsgi import client_key
        self.assertEqual(client_key({"REMOTE_ADDR": "10.0.0.1"}), "10.0.0.1")
        self.assertEqual(client_key({"REMOTE_ADDR": "2001:db8:1:2:3:4:5:6"}),
                         "2001:db8:1:2::/64")
        self.assertEqual(client_key({"REMOTE_ADDR": "::ffff:10.0.0.2"}),
                         "10.0.0.2")
        self.assertEqual(client_key({}), "-")
        self.assertEqual(client_key({"REMOTE_ADDR": "unix:/run/a.sock"}),
                         "unix:/run/a.sock")

    def test_client_chosen_keys_cannot_skip_the_limit(self):
        """An empty or over-long key from the request is limited like any
        other: it is fitted, not refused (which would fail open)."""
        from tkshm.wsgi import RateLimitMiddleware, fit_key

        def app(environ, start_response):
            start_response("200 OK", [])
            return [b"ok"]

        seen = []

        def sr(status, headers, exc_info=None):
            seen.append(status[:3])

        # A day-long window: the real clock never crosses it here.
        with tkshm.Table(None, "fixedWindow:limit=5,windowMs=86400000",
                         slots=64) as t:
            mw = RateLimitMiddleware(
                app, t, key_func=lambda e: e.get("HTTP_X_API_KEY", ""))
            long_a = "a" * 5000
            long_b = "a" * 4999 + "b"
            for key in ("", long_a, long_b):
                seen.clear()
                for _ in range(7):
                    mw({"HTTP_X_API_KEY": key}, sr)
                self.assertEqual(seen, ["200"] * 5 + ["429"] * 2, key[:8])
        self.assertEqual(fit_key("k"), b"k")
        self.assertEqual(len(fit_key("x" * tkshm.LEASE_KEY_MAX)),
                         tkshm.LEASE_KEY_MAX)
        self.assertNotEqual(fit_key(long_a), fit_key(long_b))
        self.assertLessEqual(len(fit_key(long_a)), tkshm.LEASE_KEY_MAX)

    def test_middleware(self):
        from tkshm.wsgi import RateLimitMiddleware

        def app(environ, start_response):
            start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"ok"]

        with tkshm.Table(None, "fixedWindow:limit=2,windowMs=86400000",
                         slots=8) as t:
            mw = RateLimitMiddleware(app, t)
            seen = []

            def sr(status, headers, exc_info=None):
                seen.append((status, dict(headers)))

            env = {"REMOTE_ADDR": "192.0.2.1"}
            for _ in range(3):
                mw(env, sr)
            self.assertEqual([s for s, _ in seen],
                             ["200 OK", "200 OK", "429 Too Many Requests"])
            self.assertIn("RateLimit", seen[0][1])
            self.assertNotIn("Retry-After", seen[0][1])
            self.assertIn("Retry-After", seen[2][1])
            self.assertTrue(seen[2][1]["RateLimit"].startswith(
                '"default";r=0;t='))

    def test_fail_closed_table_never_admits_on_error(self):
        """A check the library cannot decide (here a strict table with no
        Redis connection: tkshm.ENOREDIS) falls back to fail_open=True,
        except for a table whose failure policy is fail-closed."""
        from tkshm.wsgi import RateLimitMiddleware

        calls = []

        def app(environ, start_response):
            calls.append(1)
            start_response("200 OK", [])
            return [b"ok"]

        seen = []

        def sr(status, headers, exc_info=None):
            seen.append(status[:3])

        env = {"REMOTE_ADDR": "192.0.2.1"}
        spec = "gcra:limit=5,periodMs=1000;mode=strict,failure=%s"
        with tkshm.Table(None, spec % "fail-closed", slots=8) as t:
            with self.assertRaises(tkshm.Error):
                t.check("k")
            RateLimitMiddleware(app, t, fail_open=True)(env, sr)
        self.assertEqual((seen, calls), (["503"], []))
        with tkshm.Table(None, spec % "fail-open", slots=8) as t:
            RateLimitMiddleware(app, t, fail_open=True)(env, sr)
        self.assertEqual((seen, calls), (["503", "200"], [1]))


if __name__ == "__main__":
    unittest.main(verbosity=2)
