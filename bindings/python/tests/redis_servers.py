"""Private Redis processes for the Python tests: one server, a Redis
Cluster, a Sentinel-managed primary.  Python's counterpart of
tests/redis/support/ (redis_server.c, redis_cluster.c), with its
conventions:

- every process is Debian's redis-server in the foreground on 127.0.0.1,
  on a free port below 45536 (a cluster node also binds port + 10000, its
  bus, which Redis wants below 65536 and the kernel's range keeps below
  55536), with no persistence, also listening on a unix socket in its own
  directory: commands go there, where only our process can have made it
  (another server that took the port first never answers there);
- it is its own process group (setsid): a stop signals the group, so a
  child it forked (a replication sync) goes too; and it gets SIGKILL when
  the test process dies without its teardown (PR_SET_PDEATHSIG);
- only the process that started a set stops it (a forked worker that
  inherits the object never does), and a start that fails stops what it
  started before raising.

Commands use a small RESP2 client over the unix socket (no redis-py in
Debian's python3 by default, and redis-cli per poll would be slow).
"""

import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

REDIS_SERVER = "/usr/bin/redis-server"
REDIS_CLI = "/usr/bin/redis-cli"
PORT_CEILING = 45536
BUS_OFFSET = 10000
CLUSTER_SLOTS = 16384
SENTINEL_NAME = "mymaster"

START_WAIT_S = 10.0
FORM_WAIT_S = 30.0
AGREE_WAIT_S = 10.0
FAILOVER_WAIT_S = 20.0
POLL_S = 0.02


def available():
    """True when redis-server and redis-cli (which makes a cluster) are
    both installed."""
    return all(os.access(p, os.X_OK) for p in (REDIS_SERVER, REDIS_CLI))


def _bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(bus=False):
    """A port the kernel says is free now (bind to 0), below 45536; with
    bus, port + 10000 free too."""
    for _ in range(500):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < PORT_CEILING and (not bus or _bindable(port + BUS_OFFSET)):
            return port
    raise RuntimeError("no free port below %d" % PORT_CEILING)


def child_setup(parent):
    """preexec_fn of every process started here: SIGKILL when the test
    dies without its teardown (a ctest timeout), PR_SET_PDEATHSIG; exit
    at once if it already did between the fork and the prctl."""
    def setup():
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(127)
    return setup


def stop_group(proc, sig=signal.SIGTERM, wait_s=5.0):
    """Signals proc's process group (it is the leader, by setsid), waits
    up to wait_s, then SIGKILLs the group.  Only while proc is unreaped,
    so its pid (and group id) cannot have been reused."""
    if proc is None or proc.poll() is not None:
        return
    for s in (sig, signal.SIGKILL):
        try:
            os.killpg(proc.pid, s)
        except ProcessLookupError:
            pass
        try:
            proc.wait(wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


def start_process(argv, cwd, log_path):
    """argv in its own process group, output to log_path, stdin from
    /dev/null, dying with this process."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True, preexec_fn=child_setup(os.getpid()))


# --------------------------------------------------------------------------
# RESP2
# --------------------------------------------------------------------------

class ReplyError(Exception):
    """An error reply (-ERR ..., -MOVED ..., -NOGOODSLAVE ...)."""


def _encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


def _read_reply(f):
    line = f.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError("the connection closed mid-reply")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        return ReplyError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2].decode(
            "utf-8", "surrogateescape")
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise ConnectionError("not a RESP2 reply: %r" % line[:40])


def commands(unix_path, *cmds, timeout=5.0):
    """Commands (tuples of arguments) over one new connection to a unix
    socket, in order (ASKING then the command it is for); their replies
    (str, int, None, a list, or a ReplyError).  OSError when nothing
    answers."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(timeout)
        s.connect(unix_path)
        s.sendall(b"".join(_encode(c) for c in cmds))
        with s.makefile("rb") as f:
            return [_read_reply(f) for _ in cmds]


def command(unix_path, *args, timeout=5.0):
    """One command; its reply, or its ReplyError raised."""
    reply = commands(unix_path, args, timeout=timeout)[0]
    if isinstance(reply, ReplyError):
        raise reply
    return reply


def info_field(text, field):
    """The value of the line field:value of an INFO reply, or None."""
    for line in (text or "").splitlines():
        name, sep, value = line.partition(":")
        if sep and name == field:
            return value
    return None


def pairs(flat):
    """A flat [name, value, ...] reply (SENTINEL MASTER) as a dict."""
    return dict(zip(flat[::2], flat[1::2]))


def _wait(what, ready, timeout_s, on_timeout=None):
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            detail = on_timeout() if on_timeout else ""
            raise RuntimeError("%s: not within %.0f s%s" % (what, timeout_s,
                                                              detail))
        time.sleep(POLL_S)


def wait_replicated(primary, replica):
    """Returns once replica has applied every write primary had made when
    called (the replica's own count: the primary's view of it is only
    refreshed by its ACK each second).  Before a kill, so that no write
    is lost to asynchronous replication, which is not what a test of the
    client measures."""
    want = int(info_field(primary.info("replication"), "master_repl_offset"))

    def applied():
        got = info_field(replica.info("replication"), "slave_repl_offset")
        return got is not None and int(got) >= want
    _wait("port %d: the replica at offset %d" % (replica.port, want),
          applied, AGREE_WAIT_S)


# --------------------------------------------------------------------------
# One process
# --------------------------------------------------------------------------

class RedisProc:
    """One redis-server (or sentinel) in the directory root/name."""

    def __init__(self, root, name, args=(), conf=None, cluster=False):
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.sock = os.path.join(self.dir, "redis.sock")
        self.log = os.path.join(self.dir, "redis.log")
        self.args = list(args)
        self.conf = conf  # written by the caller before start(), if any
        self.cluster = cluster
        self.port = None
        self.proc = None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def _argv(self):
        argv = [REDIS_SERVER]
        if self.conf:
            argv.append(self.conf)
        argv += ["--port", str(self.port), "--bind", "127.0.0.1",
                 "--dir", self.dir, "--save", "", "--appendonly", "no",
                 "--daemonize", "no", "--unixsocket", self.sock,
                 "--unixsocketperm", "700", "--loglevel", "notice"]
        if self.cluster:
            argv += ["--cluster-enabled", "yes",
                     "--cluster-config-file", "nodes.conf"]
        return argv + self.args

    def start(self):
        """Started on a free port, and answering PING on its socket.  A
        server that found its port taken exits: tried again elsewhere."""
        for _ in range(10):
            self.port = free_port(bus=self.cluster)
            self.proc = start_process(self._argv(), self.dir, self.log)
            if self._wait_up():
                return self
            self.kill()
        raise RuntimeError("redis-server did not start:%s" % self.tail())

    def _wait_up(self):
        deadline = time.monotonic() + START_WAIT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False  # the port was taken: it exited
            if self.try_cmd("PING", timeout=1.0) == "PONG":
                return True
            time.sleep(POLL_S)
        return False

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def cmd(self, *args, timeout=5.0):
        return command(self.sock, *args, timeout=timeout)

    def try_cmd(self, *args, timeout=1.0):
        """The reply, or None when the process does not answer (being
        killed, or not up yet) or answers with an error."""
        try:
            return self.cmd(*args, timeout=timeout)
        except (OSError, ReplyError):
            return None

    def info(self, section):
        return self.try_cmd("INFO", section) or ""

    def is_master(self):
        role = self.try_cmd("ROLE")
        return bool(role) and role[0] == "master"

    def replicates(self, primary):
        """ROLE says: a replica of primary, its link up."""
        role = self.try_cmd("ROLE")
        return (bool(role) and role[0] == "slave" and
                role[2] == primary.port and role[3] == "connected")

    def tail(self, lines=15):
        try:
            with open(self.log, errors="replace") as f:
                return "\n  " + "\n  ".join(f.read().splitlines()[-lines:])
        except OSError:
            return ""

    def kill(self):
        """kill -9 of the group, reaped; the directory kept."""
        stop_group(self.proc, signal.SIGKILL)

    def stop(self):
        stop_group(self.proc)


def _sweep(prefix):
    """Removes the directories a killed test left (its processes died
    with it, PR_SET_PDEATHSIG): those whose `owner` file names a process
    that no longer exists."""
    tmp = tempfile.gettempdir()
    for name in os.listdir(tmp):
        path = os.path.join(tmp, name)
        if not name.startswith(prefix) or os.path.islink(path):
            continue
        try:
            with open(os.path.join(path, "owner")) as f:
                os.kill(int(f.read()), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except (OSError, ValueError):
            pass  # not ours, alive, or being made: kept


def private_dir(prefix):
    """mkdtemp(prefix=prefix) naming this process in a file `owner`, so
    that a later run removes it if this one is killed; the stale ones of
    the same prefix removed first."""
    _sweep(prefix)
    path = tempfile.mkdtemp(prefix=prefix)
    with open(os.path.join(path, "owner"), "w") as f:
        f.write(str(os.getpid()))
    return path


class ProcessSet:
    """Processes under one private directory, stopped together by the
    process that started them (also when its start fails)."""

    prefix = "tkshm-py-redis-"

    def __init__(self):
        self.owner = os.getpid()
        self.root = private_dir(self.prefix)
        self.procs = []

    def add(self, *args, **kw):
        p = RedisProc(self.root, "n%d" % len(self.procs), *args, **kw)
        self.procs.append(p)
        return p

    def start(self):
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self):
        raise NotImplementedError

    def stop(self):
        """SIGTERM to each group (SIGKILL after 5 s), the directory
        removed; nothing in another process."""
        if os.getpid() != self.owner or self.root is None:
            return
        for p in self._stop_order():
            p.stop()
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def _stop_order(self):
        return self.procs

    def logs(self):
        return "".join("\n port %s:%s" % (p.port, p.tail())
                       for p in self.procs)


class Server(ProcessSet):
    """One plain redis-server (test_redis.py's)."""

    def _start(self):
        self.server = self.add(args=("--loglevel", "warning")).start()
        self.port = self.server.port


# --------------------------------------------------------------------------
# Cluster
# --------------------------------------------------------------------------

def crc16_xmodem(data):
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xFFFF
    return crc


def key_slot(key):
    """The cluster's slot of a key: CRC16 of its hash tag (the bytes
    between the first '{' and the first '}' after it, if not empty) or
    of the whole key, modulo 16384."""
    b = key.encode() if isinstance(key, str) else key
    open_ = b.find(b"{")
    if open_ >= 0:
        close = b.find(b"}", open_ + 1)
        if close > open_ + 1:
            b = b[open_ + 1:close]
    return crc16_xmodem(b) % CLUSTER_SLOTS


class Cluster(ProcessSet):
    """A Redis Cluster of `masters` masters with `replicas` replicas each,
    made by redis-cli --cluster create, cluster-node-timeout 1000."""

    prefix = "tkshm-py-cluster-"

    def __init__(self, masters=3, replicas=0):
        super().__init__()
        self.nmasters = masters
        self.nreplicas = replicas
        self.ids = {}  # RedisProc -> its cluster node id
        self.migration = None

    def _start(self):
        args = ("--cluster-node-timeout", "1000",
                "--repl-diskless-sync-delay", "0")
        for _ in range(self.nmasters * (1 + self.nreplicas)):
            self.add(args=args, cluster=True).start()
        self._create()
        total = str(len(self.procs))
        for p in self.procs:
            _wait("port %d: cluster_state ok with %s nodes" % (p.port, total),
                  lambda p=p: self._formed(p, total), FORM_WAIT_S,
                  lambda: self.logs())
        for p in self.procs:
            self.ids[p] = p.cmd("CLUSTER", "MYID")
        # A replica never synced cannot fail over.
        for m in self.masters():
            _wait("port %d: its replicas' links up" % m.port,
                  lambda m=m: len(self.replicas_of(m)) == self.nreplicas,
                  FORM_WAIT_S, lambda: self.logs())
        self.seeds = [p.addr for p in self.masters()]

    def _create(self):
        log = os.path.join(self.root, "cli.log")
        argv = [REDIS_CLI, "--cluster", "create"]
        argv += [p.addr for p in self.procs]
        argv += ["--cluster-replicas", str(self.nreplicas), "--cluster-yes"]
        cli = start_process(argv, self.root, log)
        try:
            rc = cli.wait(FORM_WAIT_S)
        except subprocess.TimeoutExpired:
            stop_group(cli, signal.SIGKILL)
            rc = "timed out"
        if rc != 0:
            with open(log, errors="replace") as f:
                raise RuntimeError("redis-cli --cluster create: %s\n%s"
                                   % (rc, f.read()[-2000:]))

    @staticmethod
    def _formed(p, total):
        info = p.try_cmd("CLUSTER", "INFO") or ""
        return (info_field(info, "cluster_state") == "ok" and
                info_field(info, "cluster_known_nodes") == total and
                info_field(info, "cluster_slots_ok") == str(CLUSTER_SLOTS))

    def live(self):
        return [p for p in self.procs if p.running()]

    def masters(self):
        return [p for p in self.live() if p.is_master()]

    def node_by_port(self, port):
        return next(p for p in self.procs if p.port == port)

    def slot_map(self, node=None):
        """[(lo, hi, master)] as CLUSTER SLOTS of node (the first live
        one) says."""
        node = node or self.live()[0]
        return [(e[0], e[1], self.node_by_port(e[2][1]))
                for e in node.cmd("CLUSTER", "SLOTS")]

    @staticmethod
    def _serving(slots, slot):
        return next((m for lo, hi, m in slots if lo <= slot <= hi), None)

    def master_on(self, node, slot):
        """The node that `node` says serves slot, None if none does."""
        return self._serving(self.slot_map(node), slot)

    def master_of(self, slot):
        return self._serving(self.slot_map(), slot)

    def replicas_of(self, master):
        return [p for p in self.live() if p.replicates(master)]

    def all_agree(self, slot, node):
        """Every live node says cluster_state ok and gives slot to node."""
        return all(self._formed_ok(p) and self.master_on(p, slot) is node
                   for p in self.live())

    @staticmethod
    def _formed_ok(p):
        info = p.try_cmd("CLUSTER", "INFO") or ""
        return info_field(info, "cluster_state") == "ok"

    def kill_master(self, master):
        """kill -9 of a master whose replica has every write it made;
        returns (the replica, the slot ranges it is to take over)."""
        replica = self.replicas_of(master)[0]
        ranges = [(lo, hi) for lo, hi, m in self.slot_map() if m is master]
        wait_replicated(master, replica)
        master.kill()
        return replica, ranges

    def wait_promoted(self, replica, ranges):
        """The replica is a master and every live node gives it the dead
        master's slots (cluster_state ok)."""
        _wait("port %d promoted" % replica.port,
              lambda: replica.is_master() and
              all(self.all_agree(lo, replica) for lo, _ in ranges),
              FAILOVER_WAIT_S, lambda: self.logs())

    def key_on(self, fmt, master, prefix):
        """The first key fmt % n whose Redis key prefix:key the master
        serves."""
        slots = self.slot_map()
        for n in range(100000):
            key = fmt % n
            if self._serving(slots, key_slot("%s:%s" % (prefix, key))) \
                    is master:
                return key
        raise RuntimeError("no key on port %d" % master.port)

    @staticmethod
    def holds(node, redis_key, asking=False):
        """The node has the key.  A plain EXISTS of a slot the node does
        not serve is a MOVED (or, for a key migrated away, ASK) error:
        False.  With asking, an importing node answers for its slot."""
        cmds = (("ASKING",),) if asking else ()
        reply = commands(node.sock, *cmds, ("EXISTS", redis_key))[-1]
        return reply == 1

    # A slot moved as redis-cli --cluster reshard does, in steps a test
    # can run between: IMPORTING on the target, MIGRATING on the source,
    # keys MIGRATEd, then SETSLOT NODE on every master.

    def migrate_begin(self, slot, to):
        source = self.master_of(slot)
        if source is None or source is to:
            raise RuntimeError("slot %d: served by %s" % (slot, source))
        # The target first: a client the source sends there with ASK
        # must find the slot importing.
        to.cmd("CLUSTER", "SETSLOT", slot, "IMPORTING", self.ids[source])
        source.cmd("CLUSTER", "SETSLOT", slot, "MIGRATING", self.ids[to])
        self.migration = (slot, source, to)
        return source

    def migrate_key(self, redis_key):
        slot, source, to = self.migration
        if key_slot(redis_key) != slot:
            raise ValueError("%r is not in slot %d" % (redis_key, slot))
        reply = source.cmd("MIGRATE", "127.0.0.1", to.port, redis_key, 0,
                           5000)
        if reply != "OK":
            raise RuntimeError("MIGRATE %s: %r" % (redis_key, reply))

    def migrate_end(self):
        slot, source, to = self.migration
        while True:
            keys = source.cmd("CLUSTER", "GETKEYSINSLOT", slot, 100)
            if not keys:
                break
            source.cmd("MIGRATE", "127.0.0.1", to.port, "", 0, 5000,
                       "KEYS", *keys)
        # The target first, then the source (it then answers MOVED to a
        # node that owns the slot), then the other masters.
        others = [m for m in self.masters() if m not in (source, to)]
        for m in [to, source] + others:
            m.cmd("CLUSTER", "SETSLOT", slot, "NODE", self.ids[to])
        self.migration = None
        _wait("slot %d on port %d for every node" % (slot, to.port),
              lambda: self.all_agree(slot, to), AGREE_WAIT_S)


# --------------------------------------------------------------------------
# Sentinel
# --------------------------------------------------------------------------

class SentinelSet(ProcessSet):
    """A primary, its replica and 3 sentinels monitoring it as mymaster
    (quorum 2, down after 1 s, failover timeout 3 s), tuned as the C
    tests' set: TILT 2 s instead of 30, hellos every 0.5 s."""

    prefix = "tkshm-py-sentinel-"
    SENTINELS = 3

    def _start(self):
        data = ("--repl-diskless-sync-delay", "0")
        self.primary = self.add(args=data).start()
        self.replica = self.add(args=data).start()
        self.replica.cmd("REPLICAOF", "127.0.0.1", self.primary.port)
        self.sentinels = []
        for _ in range(self.SENTINELS):
            s = self.add(args=("--sentinel",))
            s.conf = self._write_conf(s)
            s.start()
            # SENTINEL DEBUG is 7.0's; an older server keeps defaults.
            s.try_cmd("SENTINEL", "DEBUG", "tilt-period", 2000,
                      "publish-period", 500)
            self.sentinels.append(s)
        _wait("the sentinels settled", self._settled, FAILOVER_WAIT_S,
              lambda: self.logs())
        self.addrs = [s.addr for s in self.sentinels]

    def _write_conf(self, s):
        path = os.path.join(s.dir, "sentinel.conf")
        with open(path, "w") as f:  # the sentinel rewrites it
            f.write("sentinel monitor %s 127.0.0.1 %d 2\n"
                    "sentinel down-after-milliseconds %s 1000\n"
                    "sentinel failover-timeout %s 3000\n"
                    "sentinel parallel-syncs %s 1\n"
                    % (SENTINEL_NAME, self.primary.port, SENTINEL_NAME,
                       SENTINEL_NAME, SENTINEL_NAME))
        return path

    def _stop_order(self):
        # Sentinels first: none fails over a primary stopping first.
        def key(p):
            return "--sentinel" not in p.args
        return sorted(self.procs, key=key)

    def names(self, s, node):
        addr = s.try_cmd("SENTINEL", "get-master-addr-by-name",
                         SENTINEL_NAME)
        return bool(addr) and int(addr[1]) == node.port

    def _settled(self):
        info = self.replica.info("replication")
        if (info_field(info, "master_port") != str(self.primary.port) or
                info_field(info, "master_link_status") != "up"):
            return False
        for s in self.sentinels:
            m = s.try_cmd("SENTINEL", "MASTER", SENTINEL_NAME)
            if not (m and self.names(s, self.primary)):
                return False
            m = pairs(m)
            if (m.get("flags") != "master" or
                    m.get("num-other-sentinels") != "2" or
                    m.get("num-slaves") != "1" or
                    not s.try_cmd("SENTINEL", "CKQUORUM", SENTINEL_NAME)):
                return False
        return True

    def wait_replicated(self):
        wait_replicated(self.primary, self.replica)

    def kill_primary(self):
        self.primary.kill()

    def wait_promoted(self):
        """Every sentinel names the replica, which says ROLE master."""
        new = self.replica

        def switched():
            return new.is_master() and all(self.names(s, new)
                                           for s in self.sentinels)
        _wait("the replica promoted", switched, FAILOVER_WAIT_S,
              lambda: self.logs())
        self.primary, self.replica = new, self.primary
