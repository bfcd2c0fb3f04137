"""What the bindings' Python test harnesses (bindings/*/tests) share about
the processes and ports of the servers they start: a free loopback port,
and a server's children read from /proc.  Standard library only."""

import os
import socket


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    """A port the kernel says is free now on `host`."""
    with socket.socket(family) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def child_pids(pid, zombies=True):
    """The processes whose parent is `pid`, in /proc's order (zombies
    left out when `zombies` is false)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and (zombies or fields[0] != "Z"):
            out.append(int(name))
    return out
