"""Tkshm\\Redis with real servers (issue 23, point 3): strict and lease
tables from PHP, with the options of the cluster issue.  ctest
php_redis_tiers; the PHP side is redis_tiers_app.php, run as
`php -n -d extension=$TKSHM_PHP_SO`.

- a Redis Cluster of 3 masters (redis-cli --cluster create): a strict
  table, `new Tkshm\\Redis(['cluster' => seeds])`, a key on each master;
  4 forked PHP processes (2 other hosts, with their own table file and
  Tkshm\\Redis opened after the fork; 2 on the parent's handles, already
  connected to every master) check the 3 keys at once: exactly the limit
  admitted per key, the rest denied, each key counted on its master only;
- a primary, its replica and 3 sentinels: a strict table,
  `new Tkshm\\Redis(['sentinels' => addrs, 'sentinelMaster' => 'mymaster'])`:
  exactly the limit across 4 processes; then the primary killed (kill
  -9, its replica caught up first): fail-closed denies, admits nothing,
  until the sentinels promote the replica, then the checks go on from
  the replica's count to exactly the limit;
- a lease table (fixedWindow, limit 50 a day) created by PHP and served
  by tkshm-syncd on one redis-server: 4 PHP processes admit exactly 50 in
  all; and a lease table served by tkshm-syncd on the cluster
  (`redis_cluster = ...`): exactly 50 per key, a key on each master.

Every server is this process's own (bindings/python/tests/redis_servers.py):
127.0.0.1, free ports below 45536, stopped by pid and process group,
directories removed.  Exits 77 (skipped) without redis-server and
redis-cli, php, the extension ($TKSHM_PHP_SO), pcntl, the library's Redis
tier or tkshm-syncd ($TKSHM_SYNCD).  The figures are printed.
"""

import json
import os
import signal
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "tests"))
import redis_servers as rs  # noqa: E402

APP = os.path.join(HERE, "redis_tiers_app.php")
PHP = os.environ.get("TKSHM_PHP") or shutil.which("php")
PHP_SO = os.environ.get("TKSHM_PHP_SO", "")
SYNCD = os.environ.get("TKSHM_SYNCD", "")

# No refill during the test: one unit per 46 days.
STRICT = ("gcra:limit=%d,periodMs=4000000000;mode=strict,prefix=%s,"
          "failure=fail-closed")
LEASE = "fixedWindow:limit=%d,windowMs=86400000;mode=lease,prefix=%s"
# Generous: on a loaded machine a check that timed out would be a
# fail-closed denial, and the count of admissions no longer the limit's.
EXACT = {"connectTimeoutMs": 2000, "commandTimeoutMs": 2000}
# During the outage: a dead primary costs a check 200 ms at most.
SHORT = {"connectTimeoutMs": 200, "commandTimeoutMs": 200,
         "breakerOpenMs": 100}
PROCS = 4


class Failure(AssertionError):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def php(cfg, timeout=90):
    """One step of redis_tiers_app.php; its JSON line."""
    argv = [PHP, "-n", "-d", "extension=" + PHP_SO,
            "-d", "display_errors=stderr", "-d", "error_reporting=-1",
            APP, json.dumps(cfg)]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                       cwd=HERE)
    if p.returncode != 0:
        raise Failure("php %s: exit %d\n%s%s" % (cfg["op"], p.returncode,
                                                 p.stdout, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def show(counts):
    return ", ".join("%s: %s" % (k, " ".join(
        "%s=%d" % (f, n) for f, n in c.items() if n))
        for k, c in counts.items())


def check_exact(counts, limit, checks, what):
    """Every key: exactly `limit` admitted of `checks`, the rest denied by
    Redis (or its negative cache), no fallback, no error."""
    for key, c in counts.items():
        check(c["errors"] == 0 and c["fallback"] == 0,
              "%s %s: errors or fallback: %s" % (what, key, c))
        check(c["admitted"] == limit and
              c["admitted"] + c["denied"] == checks,
              "%s %s: %d admitted of %d checks, limit %d: %s"
              % (what, key, c["admitted"], checks, limit, c))


class Run:
    def __init__(self):
        self.dir = rs.private_dir("tkshm-php-tiers-")
        self.sets = []
        self.agents = []

    def path(self, name):
        return os.path.join(self.dir, name)

    def start(self, s, what):
        self.sets.append(s)
        t0 = time.monotonic()
        s.start()
        print("%s up in %.1f s" % (what, time.monotonic() - t0), flush=True)
        return s

    def stop(self):
        for proc in self.agents:
            rs.stop_group(proc, signal.SIGKILL)
        for s in reversed(self.sets):
            s.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ------------------------------------------------------------------

    def strict(self, name, redis, policy, keys, warm, checks, own=2):
        return php({"op": "strict", "path": self.path(name), "policy": policy,
                    "redis": redis, "keys": keys, "warm": warm,
                    "procs": PROCS, "own": own, "checks": checks,
                    "dir": self.dir})

    def cluster_strict(self, cluster):
        limit, checks, prefix = 100, 50, "phpcl"
        masters = cluster.masters()
        check(len(masters) == 3, "3 masters: %s" % masters)
        keys = [cluster.key_on("k%d-%%d" % i, m, prefix)
                for i, m in enumerate(masters)]
        warm = [cluster.key_on("w%d-%%d" % i, m, prefix)
                for i, m in enumerate(masters)]
        r = self.strict("cl.tk", dict(EXACT, cluster=cluster.seeds),
                        STRICT % (limit, prefix), keys, warm, checks)
        print("a. strict on the cluster, limit %d, %d processes x %d checks "
              "per key (%.2f s): %s; admitted by each process %s"
              % (limit, PROCS, checks, r["seconds"], show(r["counts"]),
                 r["perChild"]))
        check_exact(r["counts"], limit, PROCS * checks, "cluster")
        check(not any(r["parentAfter"].values()),
              "the parent still admitted: %s" % r["parentAfter"])
        for key, m in zip(keys, masters):
            rkey = "%s:%s" % (prefix, key)
            where = [cluster.holds(n, rkey) for n in masters]
            print("   %s on master :%d (slot %d); held by %s"
                  % (key, m.port, rs.key_slot(rkey),
                     [n.port for n, h in zip(masters, where) if h]))
            check(where == [n is m for n in masters],
                  "%s counted on its master only: %s" % (rkey, where))

    def sentinel_strict(self, sset):
        limit, checks = 60, 30
        opts = {"sentinels": sset.addrs, "sentinelMaster": rs.SENTINEL_NAME}
        r = self.strict("se.tk", dict(EXACT, **opts),
                        STRICT % (limit, "phpse"), ["exact"], ["warm"], checks)
        print("b. strict through the sentinels (primary :%d), limit %d, "
              "%d processes x %d checks (%.2f s): %s; by each process %s"
              % (sset.primary.port, limit, PROCS, checks, r["seconds"],
                 show(r["counts"]), r["perChild"]))
        check_exact(r["counts"], limit, PROCS * checks, "sentinel")

        # The primary killed: fail-closed until the promotion, then on.
        limit, key = 20, "failover"
        policy = STRICT % (limit, "phpfo")
        first = php({"op": "checks", "path": self.path("fo.tk"),
                     "policy": policy, "redis": dict(SHORT, **opts),
                     "key": key, "n": limit // 2})["counts"][key]
        check(first["admitted"] == limit // 2, "before the kill: %s" % first)
        sset.wait_replicated()
        killed = sset.primary
        sset.kill_primary()
        t_kill = time.monotonic()
        # the sentinels given as one "h:p,h:p" string this time
        down = php({"op": "checks", "path": self.path("fo.tk"),
                    "policy": policy, "redis": dict(
                        SHORT, sentinels=",".join(sset.addrs),
                        sentinelMaster=rs.SENTINEL_NAME),
                    "key": key, "n": 5, "gapMs": 20})
        c = down["counts"][key]
        print("   primary :%d killed at %d admitted; 5 checks, 20 ms apart "
              "(%.2f s): %s" % (killed.port, first["admitted"],
                                down["seconds"], show(down["counts"])))
        check(c["fallback"] > 0 and c["fallbackAdmitted"] == 0 and
              c["errors"] == 0, "fail-closed during the outage: %s" % c)
        sset.wait_promoted()
        outage = time.monotonic() - t_kill
        after = self.strict("fo.tk", dict(EXACT, **opts), policy, [key],
                            ["warm-after"], 10, own=2)
        a = after["counts"][key]
        total = first["admitted"] + c["admitted"] + a["admitted"]
        print("   replica :%d promoted %.1f s after the kill; then %d "
              "processes x 10 checks: %s; %d of %d admitted in all"
              % (sset.primary.port, outage, PROCS, show(after["counts"]),
                 total, limit))
        check(a["errors"] == 0 and a["fallback"] == 0,
              "after the promotion: %s" % a)
        check(a["admitted"] > 0, "no admission after the promotion")
        check(total == limit, "%d admitted in all, limit %d" % (total, limit))

    # ------------------------------------------------------------------

    def agent(self, name, table, redis_lines):
        conf = self.path(name + ".conf")
        with open(os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600),
                  "w") as f:
            f.write(redis_lines +
                    "table = %s\n"
                    "host_id = php-%s\n"
                    "poll_ms = 2\n"
                    "heartbeat_ms = 500\n"
                    "connect_timeout_ms = 1000\n"
                    "command_timeout_ms = 1000\n" % (table, name))
        proc = rs.start_process(
            [SYNCD, "-f", "-c", conf, "-p", self.path(name + ".pid")],
            self.dir, self.path(name + ".log"))
        self.agents.append(proc)
        return proc

    def lease(self, name, redis_lines, keys, limit, prefix, what):
        table = self.path(name + ".tk")
        policy = LEASE % (limit, prefix)
        php({"op": "create", "path": table, "policy": policy})
        proc = self.agent(name, table, redis_lines)
        try:
            r = php({"op": "lease", "path": table, "policy": policy,
                     "keys": keys, "limit": limit, "procs": PROCS,
                     "dir": self.dir, "timeoutS": 30, "overrunS": 0.5})
        finally:
            alive = proc.poll() is None
            rs.stop_group(proc)
            with open(self.path(name + ".log"), errors="replace") as f:
                log = f.read()
        print("%s, limit %d, %d processes (%.2f s, first lease after %s s, "
              "%d rounds): %s; by each process %s; the table counted %d "
              "allowed" % (what, limit, PROCS, r["seconds"], r["firstLeaseS"],
                           r["rounds"], show(r["counts"]), r["perChild"],
                           r["tableAllowed"]))
        check(alive, "tkshm-syncd exited during the run:\n" + log[-2000:])
        check(proc.returncode == 0,
              "tkshm-syncd on SIGTERM: %s\n%s" % (proc.returncode,
                                                  log[-2000:]))
        for key, c in r["counts"].items():
            check(c["errors"] == 0 and c["fallbackAdmitted"] == 0,
                  "%s %s: %s\n%s" % (what, key, c, log[-2000:]))
            check(c["admitted"] == limit,
                  "%s %s: %d admitted, limit %d: %s\n%s"
                  % (what, key, c["admitted"], limit, c, log[-2000:]))
        check(r["tableAllowed"] == limit * len(keys),
              "the table's allowed: %d" % r["tableAllowed"])
        return r

    def lease_single(self, server):
        self.lease("lease1", "redis_host = 127.0.0.1\nredis_port = %d\n"
                   % server.port, ["api"], 50, "phpls",
                   "c. lease, tkshm-syncd on redis-server :%d" % server.port)

    def lease_cluster(self, cluster):
        prefix = "phplc"
        masters = cluster.masters()
        keys = [cluster.key_on("l%d-%%d" % i, m, prefix)
                for i, m in enumerate(masters)]
        self.lease("lease2", "redis_cluster = %s\n" % ",".join(cluster.seeds),
                   keys, 50, prefix,
                   "   lease, tkshm-syncd on the cluster, a key per master")
        for key, m in zip(keys, masters):
            rkey = "%s:%s" % (prefix, key)
            where = [cluster.holds(n, rkey) for n in masters]
            check(where == [n is m for n in masters],
                  "lease key %s on its master only: %s" % (rkey, where))


def main():
    missing = []
    if not rs.available():
        missing.append("%s and %s (redis-server, redis-tools)"
                       % (rs.REDIS_SERVER, rs.REDIS_CLI))
    if not PHP or not os.access(PHP, os.X_OK):
        missing.append("php")
    if not os.path.isfile(PHP_SO):
        missing.append("the extension ($TKSHM_PHP_SO)")
    if not os.access(SYNCD, os.X_OK):
        missing.append("tkshm-syncd ($TKSHM_SYNCD)")
    if missing:
        print("skipped: no " + ", no ".join(missing))
        return 77
    p = subprocess.run([PHP, "-n", "-d", "extension=" + PHP_SO, APP,
                        '{"op": "probe"}'], capture_output=True, text=True,
                       timeout=60)
    if p.returncode == 77:
        print(p.stdout.strip())
        return 77
    if p.returncode != 0:
        print("probe: exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))
        return 1
    print("PHP %s" % json.loads(p.stdout)["php"])
    t0 = time.monotonic()
    run = Run()
    try:
        cluster = run.start(rs.Cluster(masters=3, replicas=0),
                            "cluster of 3 masters")
        print("   seeds %s" % ",".join(cluster.seeds))
        run.cluster_strict(cluster)
        run.lease_cluster(cluster)
        server = run.start(rs.Server(), "redis-server")
        run.lease_single(server)
        sset = run.start(rs.SentinelSet(), "primary, replica, 3 sentinels")
        run.sentinel_strict(sset)
    except (Failure, RuntimeError, subprocess.TimeoutExpired) as e:
        print("FAILED: %s" % e)
        for s in run.sets:
            print(s.logs()[-3000:])
        return 1
    finally:
        run.stop()
    print("passed in %.1f s" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
