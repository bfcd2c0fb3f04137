"""Strict tables across hosts: two httpd (prefork), each with its own table
file, stand for two hosts sharing one limit through one redis-server
(TkshmRedis).  80 requests spread over both from 8 client threads must
give exactly 20 x 200 in all: every decision is one script on Redis,
whose key is ThrottleKit's ("prefix:key").  The test starts and stops
redis-server and both httpd itself.

Run as a script (ctest does): exits 77 (skipped) without httpd or
redis-server."""

import concurrent.futures
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import httpd

REDIS_SERVER = "/usr/bin/redis-server"
LIMIT = 20
REQUESTS = 80
PREFIX = "tkshm-apache-%d" % os.getpid()
SITE = """
TkshmRedis host=127.0.0.1 port=%d timeoutMs=2000
TkshmTable login {dir}/login.tk \
    gcra:limit=%d,periodMs=86400000;mode=strict,prefix=%s
<Location /login>
    TkshmLimit login
</Location>
"""


def resp(args):
    """A command in RESP."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a.encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def redis_command(port, *args):
    """One RESP command; the reply's first line."""
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.sendall(resp(args))
        return s.makefile("rb").readline().decode().strip()


class StrictTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tkshm-redis-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.port = httpd.free_port()
        self.redis = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", self.dir, "--save", "", "--appendonly", "no",
             "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.addCleanup(self.stop_redis)
        deadline = time.monotonic() + 10
        while True:
            try:
                if redis_command(self.port, "PING") == "+PONG":
                    break
            except OSError:
                pass
            self.assertLess(time.monotonic(), deadline, "no redis-server")
            time.sleep(0.02)
        self.hosts = []
        for _ in range(2):
            h = httpd.Httpd(SITE % (self.port, LIMIT, PREFIX),
                            mpm="prefork",
                            files={"login/index.html": "login\n"})
            self.addCleanup(h.cleanup)
            self.hosts.append(h)

    def stop_redis(self):
        self.redis.kill()
        self.redis.wait()

    def test_two_hosts_share_one_limit(self):
        for h in self.hosts:
            h.start()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(
                lambda i: self.hosts[i % 2].get("/login/"),
                range(REQUESTS)))
        codes = [s for s, _, _ in results]
        self.assertEqual(codes.count(200), LIMIT, codes)
        self.assertEqual(codes.count(429), REQUESTS - LIMIT, codes)
        # both hosts admitted some: the limit is theirs together
        served = [[s for s, _, _ in results[i::2]].count(200)
                  for i in range(2)]
        self.assertTrue(all(served), served)
        remaining = sorted(int(hd["RateLimit"].split(";r=")[1]
                               .split(";")[0])
                           for s, hd, _ in results if s == 200)
        self.assertEqual(remaining, list(range(LIMIT)))
        self.assertEqual(redis_command(self.port, "EXISTS",
                                       PREFIX + ":127.0.0.1"), ":1")
        print("strict: %d + %d x 200 on two hosts, %d x 429"
              % (served[0], served[1], codes.count(429)), file=sys.stderr)


FAIL_CLOSED_SITE = """
TkshmRedis host=127.0.0.1 port=%d timeoutMs=500
TkshmTable login {dir}/login.tk \
    gcra:limit=5,periodMs=1000;mode=strict,failure=fail-closed
<Location /login>
    TkshmLimit login
</Location>
"""


def busy_redis(sock):
    """A server that connects and answers, but never decides: SCRIPT LOAD
    gets a sha1, every script -BUSY, anything else +OK."""
    def serve(conn):
        f = conn.makefile("rb")
        with conn:
            while True:
                head = f.readline()
                if not head.startswith(b"*"):
                    return
                args = []
                for _ in range(int(head[1:])):
                    n = int(f.readline()[1:])
                    args.append(f.read(n + 2)[:n])
                name = args[0].upper()
                if name == b"SCRIPT":
                    conn.sendall(b"$40\r\n" + b"0" * 40 + b"\r\n")
                elif name == b"EVALSHA":
                    conn.sendall(b"-BUSY Redis is busy running a script\r\n")
                else:
                    conn.sendall(b"+OK\r\n")

    while True:
        try:
            conn, _ = sock.accept()
        except OSError:
            return
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


class FailClosedTest(unittest.TestCase):
    """Redis answers every script -BUSY: a fail-closed table denies each
    request by its failure policy (TkshmOnError is allow by default, and
    must not let it through)."""

    def test_busy_redis_is_denied(self):
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        self.addCleanup(sock.close)
        threading.Thread(target=busy_redis, args=(sock,),
                         daemon=True).start()
        h = httpd.Httpd(FAIL_CLOSED_SITE % sock.getsockname()[1],
                        mpm="prefork",
                        files={"login/index.html": "login\n"})
        self.addCleanup(h.cleanup)
        h.start()
        codes = [h.get("/login/")[0] for _ in range(4)]
        self.assertNotIn(200, codes)
        self.assertEqual(codes, [429] * 4)


REDIS_CLI = "/usr/bin/redis-cli"
CLUSTER_SITE = """
TkshmRedis cluster=%s timeoutMs=2000
TkshmTable login {dir}/login.tk \
    gcra:limit=%d,periodMs=86400000;mode=strict,prefix=%s
<Location /login>
    TkshmLimit login
</Location>
"""


class ClusterTest(unittest.TestCase):
    """The two hosts of StrictTest on a Redis Cluster of 3 masters
    (TkshmRedis cluster=): the key's slot is on one of them, found
    through the slot map, and the limit is exact."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tkshm-cluster-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.nodes, self.ports = [], []
        for i in range(3):
            port = free_cluster_port()
            d = os.path.join(self.dir, str(port))
            os.mkdir(d)
            self.nodes.append(subprocess.Popen(
                [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1",
                 "--cluster-enabled", "yes", "--cluster-config-file",
                 "nodes.conf", "--cluster-node-timeout", "1000", "--dir", d,
                 "--save", "", "--appendonly", "no", "--loglevel",
                 "warning"],
                stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
            self.ports.append(port)
        self.addCleanup(self.stop_nodes)
        for port in self.ports:
            wait_for(lambda: redis_command(port, "PING") == "+PONG")
        subprocess.run([REDIS_CLI, "--cluster", "create"] +
                       ["127.0.0.1:%d" % p for p in self.ports] +
                       ["--cluster-yes"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        for port in self.ports:
            wait_for(lambda: "cluster_state:ok" in
                     redis_info(port, "CLUSTER", "INFO"))

    def stop_nodes(self):
        for n in self.nodes:
            n.kill()
            n.wait()

    def test_two_hosts_share_one_limit(self):
        seeds = ",".join("127.0.0.1:%d" % p for p in self.ports)
        hosts = []
        for _ in range(2):
            h = httpd.Httpd(CLUSTER_SITE % (seeds, LIMIT, PREFIX),
                            mpm="prefork",
                            files={"login/index.html": "login\n"})
            self.addCleanup(h.cleanup)
            h.start()
            hosts.append(h)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = list(pool.map(lambda i: hosts[i % 2].get("/login/"),
                                    range(REQUESTS)))
        codes = [s for s, _, _ in results]
        self.assertEqual(codes.count(200), LIMIT, codes)
        self.assertEqual(codes.count(429), REQUESTS - LIMIT, codes)
        print("strict on a 3-master cluster: %d x 200, %d x 429"
              % (codes.count(200), codes.count(429)), file=sys.stderr)


def free_cluster_port():
    """A free port whose bus port (+10000) is free too, below 45536."""
    while True:
        p = httpd.free_port()
        if p >= 45536:
            continue
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", p + 10000))
            return p
        except OSError:
            continue


def wait_for(ready, seconds=15):
    deadline = time.monotonic() + seconds
    while True:
        try:
            if ready():
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError("not ready in %d s" % seconds)
        time.sleep(0.05)


def redis_info(port, *args):
    """A bulk reply's text (CLUSTER INFO)."""
    with socket.create_connection(("127.0.0.1", port), 5) as s:
        s.sendall(resp(args))
        f = s.makefile("rb")
        head = f.readline()
        if not head.startswith(b"$"):
            return head.decode()
        return f.read(int(head[1:])).decode()


if __name__ == "__main__":
    httpd.skip_without_httpd()
    if not os.access(REDIS_SERVER, os.X_OK):
        print("skipped: %s is not installed (apt-get install redis-server)"
              % REDIS_SERVER, file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
