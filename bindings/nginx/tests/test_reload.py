"""The state of the tables across "nginx -s reload" under load (file and
anonymous tables, and a reload that changes a policy in place), and a
worker killed with SIGKILL under load: no request fails at a reload, and
exactly the limit is admitted over it; the same over a binary upgrade
(SIGUSR2, then SIGQUIT to the old master)."""

import collections
import os
import signal
import threading
import time

from nginx import Nginx, check, child_pids, main

SERVER = """
    server {
        listen 127.0.0.1:{port} reuseport;
        root html;
        location /file { try_files /index.html =404; tkshm_limit f; }
        location /anon { try_files /index.html =404; tkshm_limit a; }
    }
"""


def conf(file_policy, anon_policy):
    return ("tkshm_table f file={dir}/f.tbl policy=%s;\n"
            "tkshm_table a anonymous policy=%s;\n" % (file_policy,
                                                      anon_policy)
            + SERVER)


class Load:
    """Threads sending requests to `paths` in turn until stopped."""

    def __init__(self, n, paths, threads=8):
        self.n = n
        self.counts = {p: collections.Counter() for p in paths}
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.threads = [threading.Thread(target=self.client, args=(paths,))
                        for _ in range(threads)]
        for t in self.threads:
            t.start()

    def client(self, paths):
        i = 0
        while not self.stopped.is_set():
            path = paths[i % len(paths)]
            i += 1
            try:
                status = self.n.get(path)[0]
            except OSError:
                status = 0
            with self.lock:
                self.counts[path][status] += 1
            time.sleep(0.002)

    def total(self, path, status=None):
        with self.lock:
            c = self.counts[path]
            return c[status] if status is not None else sum(c.values())

    def wait(self, until, timeout=20):
        deadline = time.time() + timeout
        while not until():
            if time.time() > deadline:
                raise AssertionError("load: timed out")
            time.sleep(0.01)

    def stop(self):
        self.stopped.set()
        for t in self.threads:
            t.join()


def reload_under_load(n, load, new_conf=None):
    """Reloads while the load runs; returns when the new workers have
    served for a while and the old ones are gone."""
    old = set(n.workers())
    if new_conf:
        n.write_conf(new_conf)
    n.reload()
    wait_generation(n, old)
    served = {p: load.total(p) for p in load.counts}
    load.wait(lambda: all(load.total(p) >= served[p] + 100
                          for p in load.counts))
    return set(n.workers())


def admitted_by(n, pids, path):
    """Requests to `path` admitted by the workers `pids` (access log)."""
    return sum(1 for row in n.access_log()
               if row[0] in {str(p) for p in pids} and row[1] == "200"
               and row[3] == path)


def test_reload_keeps_state():
    n = Nginx(conf("300/day", "300/day"))
    try:
        n.start()
        load = Load(n, ["/file", "/anon"])
        try:
            load.wait(lambda: load.total("/file", 200) >= 150
                      and load.total("/anon", 200) >= 150)
            new = reload_under_load(n, load)
        finally:
            load.stop()
        for p in ("/file", "/anon"):
            c = load.counts[p]
            by_new = admitted_by(n, new, p)
            check(by_new > 0, "%s: the new workers admitted %d" % (p, by_new))
            check(c[0] == 0, "%s: no request failed at the reload" % p)
            check(c[200] == 300 and set(c) == {200, 429},
                  "%s: exactly 300 admitted over the reload: %s"
                  % (p, dict(c)))
    finally:
        n.cleanup()


def test_reload_changes_policy():
    """fixedWindow 300 -> 400 per day, in place: every key keeps its
    count, so exactly 400 are admitted in all."""
    before = "fixedWindow:limit=300,windowMs=86400000"
    after = "fixedWindow:limit=400,windowMs=86400000"
    n = Nginx(conf(before, before))
    try:
        n.start()
        load = Load(n, ["/file", "/anon"])
        try:
            load.wait(lambda: load.total("/file", 429) >= 20
                      and load.total("/anon", 429) >= 20)
            reload_under_load(n, load, conf(after, after))
        finally:
            load.stop()
        for p in ("/file", "/anon"):
            c = load.counts[p]
            check(c[0] == 0 and c[200] == 400 and set(c) == {200, 429},
                  "%s: 300 then 100 more after the reload: %s"
                  % (p, dict(c)))
        with open(n.path("error.log")) as f:
            log = f.read()
        check("tkshm_table f: in_place: limit 300 -> 400" in log,
              "the reload logged the change")
    finally:
        n.cleanup()


def wait_generation(n, old, timeout=20):
    """Waits for 4 workers none of which is in `old`."""
    deadline = time.time() + timeout
    while old & set(n.workers()) or len(n.workers()) < 4:
        if time.time() > deadline:
            raise AssertionError("the old workers did not go")
        time.sleep(0.05)


def refused_reload(n, conf_text, says):
    """SIGHUP with a configuration the master refuses (the signaller of
    "nginx -s reload" would refuse some of them itself): the running
    workers stay."""
    old = set(n.workers())
    n.write_conf(conf_text)
    n.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 20
    while says not in n.output():
        if time.time() > deadline:
            raise AssertionError("the master did not refuse: %s" % says)
        time.sleep(0.05)
    time.sleep(0.3)
    check(set(n.workers()) == old, "a refused reload (%s) kept the workers"
          % says)


def test_failed_reload_keeps_state():
    """Reloads the master refuses change no table: one whose policy
    change comes with an unknown variable (refused after every table
    directive was read), one with a table file that is not a table.  The
    next good reload finds every state as it was."""
    n = Nginx(conf("5/day", "5/day"))
    try:
        n.start()
        first = [n.get(p)[0] for p in ("/file", "/anon") for _ in range(3)]
        check(first == [200] * 6, "3 admitted on each")
        refused_reload(n, conf("10/day", "10/day").replace(
            "tkshm_limit a;", "tkshm_limit a key=$nosuchvar;"),
            'unknown "nosuchvar" variable')
        with open(n.path("bad.tbl"), "wb") as f:
            f.write(b"not a table" * 100)
        refused_reload(n, conf("10/day", "10/day")
                       + "tkshm_table bad file={dir}/bad.tbl policy=1/s;",
                       "tkshm_table bad (")
        after = [n.get("/file")[0] for _ in range(3)]
        check(after == [200, 200, 429],
              "the refused reloads left the policy at 5/day: %s" % after)
        old = set(n.workers())
        n.write_conf(conf("5/day", "5/day"))
        n.reload()
        wait_generation(n, old)
        after = {p: [n.get(p)[0] for _ in range(3)]
                 for p in ("/file", "/anon")}
        check(after == {"/file": [429] * 3, "/anon": [200, 200, 429]},
              "the good reload kept both states: %s" % after)
    finally:
        n.cleanup()


def read_pid(path, timeout=20, other_than=None):
    """The pid in `path` once it exists and differs from `other_than`."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path) as f:
                pid = int(f.read().strip() or 0)
            if pid and pid != other_than:
                return pid
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError("no pid in %s" % path)


def quit_master(n, pid, timeout=20):
    """SIGQUIT to a master that is not our child; waits until it is gone
    (or a zombie) and remembers its workers for reap_orphans()."""
    n.seen.update(child_pids(pid))
    try:
        os.kill(pid, signal.SIGQUIT)
    except ProcessLookupError:
        return
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except OSError:
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)


def test_binary_upgrade():
    """nginx's binary upgrade under load: SIGUSR2 starts a new master
    (the same binary, exec'd with the listening sockets), which opens the
    table file again; the old master is told to quit.  No request fails
    and exactly the limit is admitted over the two generations.  (An
    anonymous table starts afresh in the new master: bindings/nginx/README.md, Lifecycle.)
    nginx ignores SIGUSR2 in a master whose parent is the process that
    started it (as a new binary's is), so this nginx daemonizes."""
    n = Nginx(conf("300/day", "300/day"))
    masters = []
    try:
        with open(n.path("nginx.conf")) as f:
            text = f.read()
        with open(n.path("nginx.conf"), "w") as f:
            f.write(text.replace("daemon off;", "daemon on;"))
        r = n.run()
        check(r.returncode == 0, "nginx started as a daemon: " + r.stderr)
        masters.append(read_pid(n.path("nginx.pid")))
        deadline = time.time() + 20
        while len(child_pids(masters[0])) < 4 or not n.answers():
            if time.time() > deadline:
                raise AssertionError("nginx did not start: " + n.output())
            time.sleep(0.05)
        load = Load(n, ["/file"])
        try:
            load.wait(lambda: load.total("/file", 200) >= 150)
            os.kill(masters[0], signal.SIGUSR2)
            masters.append(read_pid(n.path("nginx.pid"),
                                    other_than=masters[0]))
            check(read_pid(n.path("nginx.pid.oldbin")) == masters[0],
                  "the old master's pid moved to nginx.pid.oldbin")
            deadline = time.time() + 20
            while len(child_pids(masters[1])) < 4:
                if time.time() > deadline:
                    raise AssertionError("the new master has no workers: "
                                         + n.output())
                time.sleep(0.05)
            new = set(child_pids(masters[1]))
            quit_master(n, masters[0])
            served = load.total("/file")
            load.wait(lambda: load.total("/file") >= served + 200)
        finally:
            load.stop()
        c = load.counts["/file"]
        check(c[0] == 0, "no request failed over the upgrade: %s" % dict(c))
        check(c[200] == 300 and set(c) == {200, 429},
              "exactly 300 admitted over the two masters: %s" % dict(c))
        rows = n.access_log()
        check(any(r[0] in {str(p) for p in new} for r in rows),
              "the new master's workers served")
        check(n.get("/file")[0] == 429, "the new master's table is full")
    finally:
        for pid in masters:
            quit_master(n, pid)
        n.cleanup()


def test_worker_killed():
    """A worker killed with SIGKILL mid-load: requests it had in flight
    fail, the master forks another, and no more than the limit is ever
    admitted (a killed request may have been counted before it died)."""
    n = Nginx(conf("300/day", "300/day"))
    try:
        n.start()
        load = Load(n, ["/file", "/anon"])
        try:
            load.wait(lambda: load.total("/file", 200) >= 150)
            victim = n.workers()[0]
            os.kill(victim, signal.SIGKILL)
            deadline = time.time() + 20
            while victim in n.workers() or len(n.workers()) < 4:
                if time.time() > deadline:
                    raise AssertionError("no worker replaced the killed one")
                time.sleep(0.05)
            load.wait(lambda: load.total("/file", 429) >= 100
                      and load.total("/anon", 429) >= 100)
        finally:
            load.stop()
        for p in ("/file", "/anon"):
            c = load.counts[p]
            check(c[200] <= 300 and c[200] + c[0] >= 300
                  and set(c) <= {0, 200, 429},
                  "%s: at most 300 admitted, none lost but the killed "
                  "worker's: %s" % (p, dict(c)))
        status = n.get("/file")[0]
        check(status == 429, "the table is still full after the kill")
    finally:
        n.cleanup()


if __name__ == "__main__":
    main([test_reload_keeps_state, test_reload_changes_policy,
          test_failed_reload_keeps_state, test_binary_upgrade,
          test_worker_killed])
