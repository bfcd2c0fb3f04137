"""Web servers for the Python tests: gunicorn or uvicorn (Debian's, run
with this interpreter) serving an app from a fresh directory on a free
127.0.0.1 port, and concurrent clients that count what answered.

- a server's directory holds its app, its log and (unless told not to)
  its run directory, $XDG_RUNTIME_DIR for the server; it is removed by
  stop();
- the server is its own process group (setsid): stop() signals the group
  by the leader's pid, SIGTERM then SIGKILL, so no worker outlives it;
- wait_booted() waits for the log to show every worker booted and for a
  request to the health path to answer 200."""

import collections
import concurrent.futures
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

DAY_MS = 86400000


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url):
    """GET url: (status, headers, body), errors statuses included."""
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def fetch_all(base, paths, clients):
    """GETs base + each of paths from `clients` threads at once:
    [(path, status, headers)], in the order of paths."""
    def one(path):
        status, headers, _ = fetch(base + path)
        return path, status, headers

    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        return list(pool.map(one, paths))


def worker_pid(headers, name="X-Worker"):
    """The header `name` (in any case) of a response: the pid of the worker
    that served it, or None."""
    for k, v in headers.items():
        if k.lower() == name.lower():
            return v
    return None


def tally(results):
    """fetch_all()'s results counted: (how many of each status, how many
    each worker served: Counters; None counts responses without a pid)."""
    return (collections.Counter(s for _, s, _ in results),
            collections.Counter(worker_pid(h) for _, _, h in results))


class Server:
    """A server command (start()) run from a fresh directory, `files`
    written in it first.  Subclasses name it (in messages, and its log)
    and say what its log shows once per worker booted."""

    name = "server"
    booted = "Booting worker"
    health = "/healthz"

    def __init__(self, prefix, files, run_dir=True):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.run = os.path.join(self.dir, "run") if run_dir else None
        if run_dir:
            os.mkdir(self.run, 0o700)
        for name, text in files.items():
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.log = open(os.path.join(self.dir, self.name + ".log"), "w+")
        self.proc = None

    def gunicorn(self, app, workers, worker_class="sync", options=()):
        return [sys.executable, "-m", "gunicorn", "--workers", str(workers),
                "--worker-class", worker_class, "--bind",
                "127.0.0.1:%d" % self.port, "--chdir", self.dir,
                "--graceful-timeout", "5"] + list(options) + [app]

    def uvicorn(self, app, workers, options=()):
        return [sys.executable, "-m", "uvicorn", "--workers", str(workers)] \
            + list(options) + ["--host", "127.0.0.1", "--port",
                               str(self.port), "--app-dir", self.dir, app]

    def start(self, command, **env):
        """Runs command with os.environ, $XDG_RUNTIME_DIR the run directory
        (if any) and env, its output in the log."""
        env = dict(os.environ, **env)
        if self.run:
            env["XDG_RUNTIME_DIR"] = self.run
        self.proc = subprocess.Popen(
            # cwd: python -m puts it first on sys.path, where a source
            # tree's tkshm/ (no extension built in it) must not be.
            command, cwd=self.dir, env=env, stdout=self.log,
            stderr=subprocess.STDOUT, start_new_session=True)

    def text(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def wait_booted(self, workers, timeout):
        """Until the log counts `workers` boots and the health path answers
        200; AssertionError if the server exits or times out first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("%s exited:\n%s" % (self.name,
                                                         self.text()))
            if self.text().count(self.booted) >= workers:
                try:
                    if fetch(self.base + self.health)[0] == 200:
                        return
                except OSError:
                    pass
            time.sleep(0.05)
        raise AssertionError("%s did not start:\n%s" % (self.name,
                                                        self.text()))

    def stop(self, timeout=30):
        """SIGTERM to the server's process group, SIGKILL if it lingers
        past timeout; then the directory goes."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
            except ProcessLookupError:
                self.proc.wait()
            try:  # the leader gone, no worker of its group may outlive it
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir)
