"""A private httpd for the tests of mod_tkshm: its own directory, its own
configuration (the site's body given by the test), a free port on
127.0.0.1, started in the foreground and always stopped.

The environment (set by ctest, from the build) names what is used:
  TKSHM_HTTPD          the httpd binary (/usr/sbin/apache2)
  TKSHM_HTTPD_MODULES  httpd's module directory (the MPMs, mod_dir...)
  TKSHM_APACHE_MODULE  the mod_tkshm.so under test
Without the httpd binary a test exits 77 (skipped); without the module it
fails.  Standard library only.
"""

import collections
import http.client
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

# tests/support/procfs.py: free_port, child_pids
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "..", "tests", "support"))
from procfs import child_pids, free_port  # noqa: E402

HTTPD = os.environ.get("TKSHM_HTTPD", "/usr/sbin/apache2")
MODULES = os.environ.get("TKSHM_HTTPD_MODULES", "/usr/lib/apache2/modules")
MODULE = os.environ.get("TKSHM_APACHE_MODULE", "")

# The MPMs the tests run, sized for a 2-core machine: several processes
# (prefork) or several processes of several threads (event).
MPMS = {
    "prefork": """
LoadModule mpm_prefork_module {modules}/mod_mpm_prefork.so
StartServers 4
MinSpareServers 4
MaxSpareServers 8
ServerLimit 8
MaxRequestWorkers 8
""",
    "event": """
LoadModule mpm_event_module {modules}/mod_mpm_event.so
StartServers 2
ServerLimit 2
ThreadsPerChild 8
ThreadLimit 8
MaxRequestWorkers 16
MinSpareThreads 8
MaxSpareThreads 16
""",
}

# Where a test httpd lives and logs: the head of every configuration.
SERVER = """
ServerRoot "{dir}"
ServerName 127.0.0.1
Listen 127.0.0.1:{port}
PidFile "{dir}/httpd.pid"
DefaultRuntimeDir "{dir}"
Mutex file:{dir} default
ErrorLog "{dir}/error.log"
"""

BASE = SERVER + """LogLevel warn tkshm:info
{user}
{mpm}
LoadModule authz_core_module {modules}/mod_authz_core.so
LoadModule dir_module {modules}/mod_dir.so
{extra_modules}
LoadModule tkshm_module "{module}"
DocumentRoot "{dir}/htdocs"
DirectoryIndex index.html
<Directory "{dir}/htdocs">
    Require all granted
</Directory>
# the process and thread that served, the final status, the module's note
# on the request the client sent (an ErrorDocument is a redirect of it)
LogFormat "%P %{{tid}}P %>s %<{{tkshm}}n %U" tk
CustomLog "{dir}/access.log" tk
KeepAlive Off
<Location /healthz>
    TkshmLimit off
</Location>
"""


def skip_without_httpd():
    """Exit 77 when httpd is not installed; fail when the module is
    missing (the build makes it)."""
    if not os.access(HTTPD, os.X_OK):
        print("skipped: %s is not installed (apt-get install apache2)"
              % HTTPD, file=sys.stderr)
        sys.exit(77)
    if not os.path.isfile(MODULE):
        print("TKSHM_APACHE_MODULE=%r is not a file: build mod_tkshm "
              "(ctest sets it)" % MODULE, file=sys.stderr)
        sys.exit(1)


class Httpd:
    """One httpd.  `site` is configuration appended to the base (tables,
    locations); `files` maps paths under htdocs to their content."""

    def __init__(self, site, mpm="prefork", files=None, extra_modules=()):
        self.dir = tempfile.mkdtemp(prefix="tkshm-httpd-")
        # httpd's children run as www-data when started as root: they
        # read the documents.
        os.chmod(self.dir, 0o755)
        self.port = free_port()
        self.proc = None
        self.log_file = None
        self.signalled_children = set()
        docs = {"healthz": "ok\n", "index.html": "index\n"}
        docs.update(files or {})
        for path, text in docs.items():
            full = os.path.join(self.dir, "htdocs", path)
            os.makedirs(os.path.dirname(full), mode=0o755, exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
            os.chmod(full, 0o644)
        user = ""
        if os.geteuid() == 0:
            name = self.child_user()
            user = "User %s\nGroup #%d" % (name, pwd.getpwnam(name).pw_gid)
        self.mpm = mpm
        self.extra_modules = "\n".join(
            "LoadModule %s_module %s/mod_%s.so" % (m, MODULES, m)
            for m in extra_modules)
        self.user = user
        self.write_conf(site)

    @staticmethod
    def child_user():
        """The user httpd's children run as when it starts as root (in
        the group of that user)."""
        try:
            pwd.getpwnam("www-data")
            return "www-data"
        except KeyError:
            return "nobody"

    # -- configuration --------------------------------------------------
    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def write_conf(self, site):
        text = BASE.format(dir=self.dir, port=self.port, user=self.user,
                           mpm=MPMS[self.mpm].format(modules=MODULES),
                           modules=MODULES, module=MODULE,
                           extra_modules=self.extra_modules)
        self.conf = self.path("httpd.conf")
        with open(self.conf, "w") as f:
            f.write(text + site.replace("{dir}", self.dir))

    def configtest(self):
        """(exit status, output) of httpd -t."""
        p = subprocess.run([HTTPD, "-t", "-f", self.conf],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=20)
        return p.returncode, p.stdout

    # -- running --------------------------------------------------------
    def start(self, wait=True):
        self.log_file = open(self.path("stdout.log"), "a+")
        self.proc = subprocess.Popen(
            [HTTPD, "-f", self.conf, "-DFOREGROUND"],
            stdout=self.log_file, stderr=subprocess.STDOUT,
            start_new_session=True)
        if wait:
            self.wait_ready()

    def output(self):
        """What httpd printed and logged."""
        text = ""
        for name in ("stdout.log", "error.log"):
            try:
                with open(self.path(name)) as f:
                    text += f.read()
            except OSError:
                pass
        return text

    def wait_exit(self, timeout=20):
        """httpd's exit status, waiting for it to stop by itself."""
        return self.proc.wait(timeout)

    def wait_ready(self, generation=1, timeout=20, old_gone=False):
        """Until /healthz answers and the MPM's first children run (and,
        after a restart, the generation's log line is written).  old_gone:
        also until every child that ran when the restart was signalled has
        exited, so that no request is answered by the old generation (an
        idle old child can still accept one connection after a graceful
        restart, before it reads the news)."""
        want = 4 if self.mpm == "prefork" else 2
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("httpd exited (%d):\n%s"
                                     % (self.proc.returncode, self.output()))
            up = self.output().count("resuming normal operations")
            children = child_pids(self.proc.pid)
            if old_gone and set(children) & self.signalled_children:
                time.sleep(0.05)
                continue
            if up >= generation and len(children) >= want:
                try:
                    if self.get("/healthz")[0] == 200:
                        return
                except OSError:
                    pass
            time.sleep(0.05)
        raise AssertionError("httpd did not start:\n" + self.output())

    def signal(self, sig):
        # The children of the generation being replaced (wait_ready's
        # old_gone).
        self.signalled_children = set(child_pids(self.proc.pid))
        os.kill(self.proc.pid, sig)

    def stop(self):
        """Stops httpd and every child (SIGTERM, then SIGKILL of the
        process group); safe to call twice."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc is not None:
            # children left by a parent that died first
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.log_file:
            self.log_file.close()
            self.log_file = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- requests -------------------------------------------------------
    def get(self, path, headers=None, source=None):
        """(status, {header: value}, body) of one GET on a new
        connection, from the loopback address `source` if given (every
        127.0.0.0/8 address is the loopback: distinct clients)."""
        c = http.client.HTTPConnection(
            "127.0.0.1", self.port, timeout=20,
            source_address=(source, 0) if source else None)
        try:
            c.request("GET", path, headers=headers or {})
            r = c.getresponse()
            body = r.read()
            return r.status, {k: v for k, v in r.getheaders()}, body
        finally:
            c.close()

    def access_log(self, where=lambda row: True, rows=0, timeout=10):
        """[(pid, tid, status, note, path)] of the requests served for
        which where(row) holds, once there are at least `rows` of them: a
        child writes its line after the response, so a client may read
        its answer before the line is there."""
        deadline = time.monotonic() + timeout
        while True:
            found = []
            with open(self.path("access.log")) as f:
                for line in f:
                    pid, tid, status, note, path = line.split()
                    row = (int(pid), int(tid), int(status), note, path)
                    if where(row):
                        found.append(row)
            if len(found) >= rows or time.monotonic() > deadline:
                return found
            time.sleep(0.02)


class Load:
    """Clients issuing GETs in a loop, each on a new connection, from
    `threads` threads, over `paths` in turn, until stop(): the load a
    restart must serve through.  Every answer and every failure (a
    connection refused or reset, a malformed answer) is kept with the
    monotonic time it ended."""

    def __init__(self, h, paths, threads=4, source=None):
        self.httpd = h
        self.paths = list(paths)
        self.source = source
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.results = []  # (time, path, status or None, error or None)
        self.threads = [threading.Thread(target=self._client, args=(i,))
                        for i in range(threads)]

    def _client(self, first):
        i = first
        while not self.done.is_set():
            path = self.paths[i % len(self.paths)]
            i += 1
            try:
                status, error = self.httpd.get(path, source=self.source)[0], \
                    None
            except (OSError, http.client.HTTPException) as e:
                status, error = None, repr(e)
            with self.lock:
                self.results.append((time.monotonic(), path, status, error))

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        self.done.set()
        for t in self.threads:
            t.join()

    def snapshot(self, since=0.0):
        """The results ended at or after `since`."""
        with self.lock:
            return [r for r in self.results if r[0] >= since]

    def counts(self, path=None, since=0.0):
        """{status or error text: n} of `path` (all paths if None)."""
        return collections.Counter(
            r[2] if r[2] is not None else r[3]
            for r in self.snapshot(since) if path is None or r[1] == path)

    def failures(self):
        """Every result that is neither an admission (200) nor a denial
        (429): 5xx, other statuses, connection errors."""
        return [r for r in self.snapshot() if r[2] not in (200, 429)]

    def wait(self, until, timeout=10):
        """Until until(self) holds; AssertionError after `timeout` s."""
        deadline = time.monotonic() + timeout
        while not until(self):
            if time.monotonic() > deadline:
                raise AssertionError(
                    "the load did not get there: %s"
                    % {p: dict(self.counts(p)) for p in self.paths})
            time.sleep(0.01)
