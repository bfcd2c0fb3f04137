"""A PHP-FPM pool (pm = static, 4 workers) loading the built tkshm.so,
driven over FastCGI (fastcgi.py) by this test, which starts and stops
php-fpm itself on a free loopback port.  The application is fpm_app.php.

- Exact admission across workers: 4 keys x 60 requests from 8 client
  threads against a gcra burst of 20 (then one unit per 3 minutes):
  exactly 20 x 200 and 40 x 429 per key, whichever workers served them,
  with the RateLimit headers.
- Opened once per worker: every response reports Table::openCount() == 1
  and a handle opened by its own pid, though the script constructs the
  Table in every request and workers serve many requests.
- A worker killed with SIGKILL in the middle of a request (after its
  check, while it sleeps) leaves the pool serving and the limits exact:
  its admission counts, nothing is lost or given twice, and the master's
  new worker opens the table once.

FpmPool (the pool, without tests) is shared with test_fpm_change.py.

Run as a script (ctest does) with TKSHM_PHP_SO (the built extension) and
TKSHM_PHP_FPM (php-fpm8.2) in the environment; exits 77 (skipped) when
php-fpm is not installed."""

import collections
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import fastcgi

# tests/support/procfs.py: free_port, child_pids
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "tests", "support"))
from procfs import child_pids, free_port  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "fpm_app.php")
FPM = os.environ.get("TKSHM_PHP_FPM", "")
SO = os.environ.get("TKSHM_PHP_SO", "")

WORKERS = 4
BURST = 20
POLICY = "gcra:limit=%d,periodMs=3600000" % BURST
KEYS = ["k0", "k1", "k2", "k3"]
PER_KEY = 60
CLIENTS = 8
KILLS = 2

POOL = """\
[global]
pid = {dir}/fpm.pid
error_log = {dir}/fpm.log
log_level = notice
daemonize = no
{globals}
[tkshm]
{user}listen = 127.0.0.1:{port}
listen.allowed_clients = 127.0.0.1
pm = static
pm.max_children = {workers}
catch_workers_output = yes
"""


def children_of(pid):
    """The live pids whose parent is `pid`, sorted."""
    return sorted(child_pids(pid, zombies=False))


class FpmPool(unittest.TestCase):
    """A php-fpm of WORKERS static workers on a free loopback port, in a
    temporary directory (self.dir), and the means to talk to it.  start()
    launches it; subclasses' tests use it.  The application is `app` (a
    class attribute; test_fpm_change.py serves a copy it edits)."""

    app = APP

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tkshm-fpm-")
        self.port = free_port()
        self.addr = ("127.0.0.1", self.port)
        self.proc = None
        self.out = None

    def start(self, php_args=(), env=None, globals_=""):
        """Starts php-fpm with the extension, `php_args` (more -d
        settings), the pool's env[] entries (default: the table and
        policy fpm_app.php reads) and `globals_` (more lines of its
        [global] section)."""
        user = ""
        args = [FPM, "-n", "-d", "extension=" + SO, "-d",
                "display_errors=stderr"]
        for a in php_args:
            args += ["-d", a]
        args += ["-y", os.path.join(self.dir, "fpm.conf"), "-F"]
        if os.geteuid() == 0:
            # FPM refuses root unless told; the workers then need a user.
            user = "user = root\ngroup = root\n"
            args.append("-R")
        if env is None:
            env = {"TKSHM_TEST_TABLE": os.path.join(self.dir, "rl.tkshm"),
                   "TKSHM_TEST_POLICY": POLICY}
        with open(os.path.join(self.dir, "fpm.conf"), "w") as f:
            f.write(POOL.format(dir=self.dir, port=self.port, user=user,
                                workers=WORKERS, globals=globals_))
            for name, value in env.items():
                f.write('env[%s] = "%s"\n' % (name, value))
        self.out = open(os.path.join(self.dir, "fpm.out"), "w+")
        self.proc = subprocess.Popen(args, stdout=self.out,
                                     stderr=subprocess.STDOUT)

    def tearDown(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.out is not None:
            self.out.close()
        shutil.rmtree(self.dir)

    def fpm_log(self):
        text = ""
        for name in ("fpm.out", "fpm.log"):
            try:
                with open(os.path.join(self.dir, name)) as f:
                    text += "--- %s\n%s" % (name, f.read())
            except OSError:
                pass
        return text

    def params(self, query):
        return {
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REQUEST_METHOD": "GET",
            "SCRIPT_FILENAME": self.app,
            "SCRIPT_NAME": "/" + os.path.basename(self.app),
            "REQUEST_URI": "/%s?%s" % (os.path.basename(self.app), query),
            "QUERY_STRING": query,
            "REMOTE_ADDR": "127.0.0.1",
            "SERVER_NAME": "localhost",
            "SERVER_PORT": str(self.port),
        }

    def get(self, query):
        r = fastcgi.request(self.addr, self.params(query))
        self.assertEqual(r.stderr, b"", r.stderr)
        try:
            r.json = json.loads(r.body)
        except ValueError:
            self.fail("not JSON: %r\n%s" % (r.body, self.fpm_log()))
        return r

    def wait_ready(self):
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            self.assertIsNone(self.proc.poll(),
                              "php-fpm exited:\n" + self.fpm_log())
            if len(children_of(self.proc.pid)) == WORKERS:
                try:
                    return self.get("op=ping")
                except OSError:
                    pass
            time.sleep(0.05)
        self.fail("php-fpm did not start:\n" + self.fpm_log())

    def check_all(self, keys, per_key):
        """per_key checks of each key, interleaved, from CLIENTS threads."""
        queries = ["op=check&key=" + k for _ in range(per_key) for k in keys]
        with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
            return list(pool.map(self.get, queries))

    def assert_once_per_worker(self, responses):
        for r in responses:
            self.assertEqual(r.json["opens"], 1, r.json)
            self.assertEqual(r.json["handle_pid"], r.json["pid"], r.json)



class FpmTest(FpmPool):
    def setUp(self):
        super().setUp()
        self.start()

    def hold_and_kill(self, key):
        """Sends op=hold, reads the worker's answer (sent before it
        sleeps), kills that worker with SIGKILL; returns the answer."""
        stream = fastcgi.request_stream(self.addr,
                                        self.params("op=hold&key=" + key))
        out = b""
        for kind, data in stream:
            self.assertEqual(kind, "stdout", data)
            out += data
            if out.endswith(b"\n") and b"\r\n\r\n" in out:
                break
        answer = json.loads(out.partition(b"\r\n\r\n")[2])
        os.kill(answer["pid"], signal.SIGKILL)
        # the connection ends without END_REQUEST: the request died
        with self.assertRaises(fastcgi.ProtocolError):
            for _ in stream:
                pass
        return answer

    def test_pool(self):
        t0 = time.monotonic()
        self.wait_ready()
        first_workers = set(children_of(self.proc.pid))

        # 1. Exact admission across workers.  check_all() sends the keys
        # in turn, so response i is for KEYS[i % len(KEYS)].
        rs = self.check_all(KEYS, PER_KEY)
        counts = collections.Counter(
            (KEYS[i % len(KEYS)], r.status) for i, r in enumerate(rs))
        for k in KEYS:
            self.assertEqual(counts[(k, 200)], BURST, counts)
            self.assertEqual(counts[(k, 429)], PER_KEY - BURST, counts)
        pids = collections.Counter(r.json["pid"] for r in rs)
        self.assertGreaterEqual(len(pids), 2, "one worker served all")
        self.assertTrue(set(pids) <= first_workers, (pids, first_workers))
        self.assertGreater(max(pids.values()), 1)
        self.assert_once_per_worker(rs)
        for r in rs:
            self.assertEqual(r.headers["RateLimit-Policy"],
                             '"default";q=%d' % BURST)
            if r.status == 200:
                self.assertTrue(r.json["allowed"])
                self.assertNotIn("Retry-After", r.headers)
            else:
                self.assertFalse(r.json["allowed"])
                self.assertTrue(r.headers["RateLimit"].startswith(
                    '"default";r=0;t='), r.headers)
                # the next unit is due in (at most) 180 s
                self.assertTrue(1 <= int(r.headers["Retry-After"]) <= 180,
                                r.headers)
        # each key's admissions saw remaining 19 .. 0 once each
        remaining = collections.defaultdict(list)
        for i, r in enumerate(rs):
            if r.status == 200:
                remaining[KEYS[i % len(KEYS)]].append(r.json["remaining"])
        for k in KEYS:
            self.assertEqual(sorted(remaining[k]), list(range(BURST)), k)

        # 2. Workers killed with SIGKILL in the middle of a request.
        killed = []
        for _ in range(KILLS):
            answer = self.hold_and_kill("victim")
            self.assertTrue(answer["allowed"], answer)
            self.assertEqual(answer["opens"], 1, answer)
            killed.append(answer["pid"])
        # the master replaces them: 4 workers again, none of the killed
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            workers = set(children_of(self.proc.pid))
            if len(workers) == WORKERS and not workers & set(killed):
                break
            time.sleep(0.05)
        else:
            self.fail("the pool did not recover: %s\n%s"
                      % (workers, self.fpm_log()))
        self.assertIsNone(self.proc.poll(), self.fpm_log())

        # 3. The limits are exact after the kills: the killed requests'
        # admissions stand (victim has BURST - KILLS left), the other keys
        # stay exhausted, and the new workers opened the table once.
        after = ["victim"] + KEYS
        rs = self.check_all(after, 30)
        statuses = collections.Counter(
            (after[i % len(after)], r.status) for i, r in enumerate(rs))
        self.assertEqual(statuses[("victim", 200)], BURST - KILLS, statuses)
        self.assertEqual(statuses[("victim", 429)], 30 - (BURST - KILLS),
                         statuses)
        for k in KEYS:
            self.assertEqual(statuses[(k, 429)], 30, statuses)
        self.assert_once_per_worker(rs)
        served = set(r.json["pid"] for r in rs)
        self.assertFalse(served & set(killed), "a killed worker answered")
        self.assertTrue(served & (workers - first_workers),
                        "no new worker served")
        with open(os.path.join(self.dir, "fpm.log")) as f:
            log = f.read()
        for pid in killed:
            self.assertIn("child %d exited on signal 9" % pid, log)

        # 4. Stop: SIGQUIT, a graceful stop of master and workers.
        self.proc.send_signal(signal.SIGQUIT)
        self.assertEqual(self.proc.wait(10), 0, self.fpm_log())
        print("php-fpm: %d workers served %d requests; %d killed "
              "mid-request, replaced; %.1f s"
              % (len(pids), len(rs) + PER_KEY * len(KEYS) + KILLS,
                 KILLS, time.monotonic() - t0), file=sys.stderr)


if __name__ == "__main__":
    if not FPM or not os.access(FPM, os.X_OK):
        print("skipped: php-fpm is not installed (apt-get install "
              "php8.2-fpm)", file=sys.stderr)
        sys.exit(77)
    if not SO or not os.path.exists(SO):
        print("TKSHM_PHP_SO must name the built tkshm.so", file=sys.stderr)
        sys.exit(2)
    unittest.main(verbosity=2)
