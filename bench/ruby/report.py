#!/usr/bin/env python3
"""Writes the Ruby benchmark's section of RESULTS.md from ruby.jsonl.

    python3 bench/ruby/report.py [--results DIR]

Reads DIR/ruby.jsonl (bench/ruby/run.sh, one line per case of
bench/ruby/bench.rb) and puts its tables into DIR/RESULTS.md between the
lines <!-- bench:ruby:begin --> and <!-- bench:ruby:end -->: in place when
they are there, else before "## Plots", else at the end.  Nothing else in
the file is touched.  Every figure comes from the JSON lines of one run;
without them the section says "not measured".

Standard library only.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from section_report import cores, fmt_rate, md_table, split_machine  # noqa: E402
import section_report  # noqa: E402

BEGIN, END = "<!-- bench:ruby:begin -->", "<!-- bench:ruby:end -->"
MODES = ("tkshm", "attack_tkshm", "attack_memory", "attack_redis", "loop")
LABEL = {
    "tkshm": "tkshm gem (`Tkshm::Table#check`, GCRA)",
    "attack_tkshm": "Rack::Attack throttle over `Tkshm::RackAttackStore`",
    "attack_memory": "Rack::Attack throttle over ActiveSupport MemoryStore"
                     " (per process)",
    "attack_redis": "Rack::Attack throttle over redis-server (RedisProxy)",
    "loop": "the loop alone (key, no limiter)",
}
# Whose rate each row is compared with: tkshm's own row for the peers.
PEERS = ("attack_memory", "attack_redis")


def per_cpu(r):
    return r["checks"] / r["cpu_s"] if r.get("cpu_s") else None


def keys_label(keys):
    return "1 hot key" if keys == 1 else "{:,}".format(keys)


def machine_line(m):
    return section_report.machine_line(m, m and (
        "Ruby %s, Rack::Attack %s, ActiveSupport %s, Redis %s" % (
            m.get("ruby") or "?", m.get("rack_attack") or "?",
            m.get("activesupport") or "?", m.get("redis") or "?")))


def rate_table(cases, by):
    rows = []
    for keys in sorted({r["keys"] for r in cases}, reverse=True):
        for mode in MODES:
            r = by.get((mode, keys))
            if not r:
                continue
            vs = []
            for base in ("tkshm", "attack_tkshm"):
                b = by.get((base, keys))
                if mode in PEERS and b and r.get("checks_per_sec"):
                    vs.append("%.1fx" % (b["checks_per_sec"] /
                                         r["checks_per_sec"]))
                else:
                    vs.append("-")
            c = cores(r)
            rows.append([keys_label(keys), LABEL.get(mode, mode),
                         fmt_rate(r.get("checks_per_sec")), vs[0], vs[1],
                         "-" if c is None else "%.2f" % c,
                         fmt_rate(per_cpu(r))])
    return md_table(["keys", "limiter", "checks/s", "tkshm gem is",
                     "tkshm store is", "cores", "per CPU-second"], rows)


def exact_table(by):
    rows = []
    for mode in MODES:
        r = by.get((mode, 1))
        if not r or r.get("policy_admits") is None:
            continue
        want, got = r["policy_admits"], r.get("allowed", 0)
        rows.append([LABEL.get(mode, mode), "%.3f s" % r.get("wall_s", 0),
                     str(want), str(got),
                     "%+d (%.2fx)" % (got - want, got / want if want else 0),
                     "yes" if got == want else "no"])
    return md_table(["limiter", "E", "the policy admits", "admitted",
                     "over", "exact"], rows) if rows else "not measured"


def section(machine, rows, bad):
    out = [BEGIN, "## Ruby: the gem beside Rack::Attack", "",
           "Written by `bench/ruby/report.py` from `ruby.jsonl`"
           " (`bench/ruby/run.sh`, which runs `bench/ruby/bench.rb`).", "",
           machine_line(machine), ""]
    cases = [r for r in rows if not r.get("skipped")]
    if not cases:
        out += ["not measured (no ruby.jsonl)", END]
        return "\n".join(out)
    m = machine or {}
    out += ["%d Ruby processes (`fork`) each check keys `\"k#{rand(1..N)}\"`"
            " in a loop for %s s.  `tkshm`: `Tkshm::Table#check` on"
            " `gcra:limit=10,periodMs=1000,burst=100` (a file table,"
            " 262144 slots).  The Rack::Attack rows run what one"
            " `throttle` (limit 100, period 3600 s) does per request,"
            " `Rack::Attack.cache.count(key, period)`, over each store:"
            " MemoryStore counts in each process's own memory (as each"
            " Puma worker does), redis-server is the test's own on"
            " loopback, one connection per process.  With 100k keys the"
            " tables and the MemoryStore are warmed with every key"
            " first.%s" % (m.get("procs", 2),
                           "%g" % m["seconds"] if m.get("seconds") else "?",
                           "  (A --quick run: a smoke, not a measurement.)"
                           if m.get("quick") else ""), ""]
    if bad:
        out += ["(%d unreadable lines ignored)" % bad, ""]
    by = {(r["mode"], r["keys"]): r for r in cases}
    out += ["### Checks per second", "",
            "`checks/s`: the sum of the processes' rates.  `tkshm gem is`,"
            " `tkshm store is`: the `tkshm` row's, and the"
            " `Tkshm::RackAttackStore` row's, checks/s over this row's."
            "  `cores`: CPU time over wall time.  `per CPU-second`: checks"
            " over the CPU time they took (the Redis rows leave out"
            " redis-server's).", "", rate_table(cases, by), ""]
    out += ["### Exactness on one hot key", "",
            "The key is cold at the start; `the policy admits`: 100 +"
            " floor(E / 100 ms) for the GCRA, 100 per epoch-aligned hour"
            " the run spans for the throttle, E being the time from the"
            " first check to the last.", "", exact_table(by), ""]
    out += section_report.skipped_lines(rows)
    out.append(END)
    return "\n".join(out)


def make_section(records, bad):
    machine, rows = split_machine(records)
    return section(machine, rows, bad)


if __name__ == "__main__":
    sys.exit(section_report.main(__doc__, "ruby", "ruby.jsonl", BEGIN, END,
                                 make_section))
