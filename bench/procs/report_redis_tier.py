#!/usr/bin/env python3
"""Writes the Redis tier's section of RESULTS.md from redis_tier.jsonl.

    python3 bench/procs/report_redis_tier.py [--results DIR]

Reads DIR/redis_tier.jsonl (tkshm_bench_redis_tier) and puts its tables
into DIR/RESULTS.md between the lines <!-- bench:redis-tier:begin --> and
<!-- bench:redis-tier:end -->: in place when they are there, else before
"## Plots" (bench/report.py rewrites RESULTS.md without them), else at
the end.  Nothing else in the file is touched.  Every figure comes from
the JSON lines; without them the section says "not measured".

Records of strict and lease cases say where Redis ran: "topology" is
"single" (one redis-server per case) or "cluster" (the Redis Cluster the
benchmark starts); a record without it, as written before the cluster
cases, is "single".  The healthy and down tables are the single rows; a
third table puts the cluster's rows beside them.

Standard library only.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from section_report import fmt_rate, md_table, split_machine  # noqa: E402
import section_report  # noqa: E402
BEGIN, END = "<!-- bench:redis-tier:begin -->", "<!-- bench:redis-tier:end -->"


def fmt_ns(ns):
    if ns is None:
        return "-"
    if ns >= 1e6:
        return "%.3g ms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.3g µs" % (ns / 1e3)
    return "%.3g ns" % ns


def fmt_pct(part, whole):
    if not whole:
        return "-"
    p = 100.0 * part / whole
    # Small shares matter here (out-of-credit denials): more digits.
    return ("%.3g%%" if p < 10 else "%.1f%%") % p


def fmt_per_1000(x):
    if x is None:
        return "-"
    if x >= 100:
        return "%.0f" % x
    return "%.3g" % x


def fmt_cores(x):
    return "-" if x is None else "%.2f" % x


def topology(r):
    """Where Redis ran: "single" or "cluster" (no field: "single")."""
    return r.get("topology") or "single"


def case_key(r):
    return (r.get("mode"), r.get("algo"), r.get("keys"), r.get("procs"),
            topology(r))


def pair_key(r):
    """A case with its topology left out: its single and cluster rows
    share it."""
    return case_key(r)[:4]


def case_label(r):
    keys = r.get("keys")
    what = "1 hot key" if keys == 1 else "{:,} keys".format(keys)
    # The mode has its own column; the cross-host options (failure
    # policy, key prefix) are the same for every case and said in the text.
    return [r.get("mode"), "`%s`" % r.get("policy", "").split(";")[0], what,
            str(r.get("procs"))]


def suspect(r, cpus):
    """True when workers that never wait got well under the cores left
    to them (the vCPUs less what redis-server and the agent used, one per
    worker at most): other work took the machine and the row's figures
    are doubtful.  A strict key set's workers wait on Redis by design."""
    if r.get("mode") == "strict" and r.get("keys", 0) > 1 and \
            r.get("phase") == "healthy":
        return False
    procs = r.get("procs", 1)
    left = (cpus or procs) - (r.get("redis_cpu_cores") or 0) - \
        (r.get("agent_cpu_cores") or 0)
    return r.get("cpu_cores", 0) < 0.8 * min(procs, left)


def machine_line(m):
    if not m:
        return "Machine: not recorded."
    redis = m.get("redis_server", "")
    # "Redis server v=7.0.15 sha=..." -> "7.0.15"
    ver = next((w[2:] for w in redis.split() if w.startswith("v=")), "")
    load = m.get("load_avg_1m")
    return ("Machine: %s, %d vCPU, %s, Linux %s; redis-server %s; %s%s." % (
        m.get("cpu_model") or "unknown CPU", m.get("cpus", 0),
        m.get("os") or "unknown OS", m.get("kernel", "?"), ver or "?",
        m.get("date", "?"),
        ", load average %.1f at the start" % load if load is not None
        else ""))


def cluster_table(healthy_single, healthy_cluster, cpus, marks):
    """The key sets of strict and lease on one redis-server and on the
    cluster, side by side (markdown lines)."""
    def redis_case(r):
        return r.get("mode") in ("strict", "lease") and r.get("keys", 0) > 1

    single = {pair_key(r): r for r in healthy_single if redis_case(r)}
    cluster = {pair_key(r): r for r in healthy_cluster if redis_case(r)}
    order = [k for k in single] + [k for k in cluster if k not in single]

    def rate(r):
        if r is None:
            return "-"
        cell = fmt_rate(r.get("decisions_per_sec"))
        if suspect(r, cpus):
            marks[0] += 1
            cell += " ¹"
        return cell

    def get(r, field, fmt):
        return "-" if r is None else fmt(r.get(field))

    def admitted(r):
        return "-" if r is None else fmt_pct(r.get("allowed", 0),
                                             r.get("decisions", 0))

    def spread(r):
        per = (r or {}).get("keys_per_master")
        return " / ".join("{:,}".format(n) for n in per) if per else "-"

    t = []
    for k in order:
        a, b = single.get(k), cluster.get(k)
        t.append(case_label(a or b) + [
            rate(a), rate(b),
            get(a, "p99_ns", fmt_ns), get(b, "p99_ns", fmt_ns),
            get(a, "redis_calls_per_1000", fmt_per_1000),
            get(b, "redis_calls_per_1000", fmt_per_1000),
            get(a, "round_trips_per_1000", fmt_per_1000),
            get(b, "round_trips_per_1000", fmt_per_1000),
            "%s / %s" % (admitted(a), admitted(b)),
            spread(b)])
    out = ["### One redis-server and a Redis Cluster", "",
           "The key sets of strict and lease again on a Redis Cluster of 3"
           " masters with one replica each (redis-server on 127.0.0.1,"
           " `cluster-node-timeout` 1000, no persistence), which the"
           " benchmark starts once for these cases and empties (FLUSHALL"
           " on every master) before each.  The workers' handles"
           " (`tkshm_redis_options.cluster`) and the agent"
           " (`redis.cluster`) get the masters as seeds; each key,"
           " `prefix:user:NNNNNN`, goes to the master of its slot, and the"
           " key set hashes to all three (`keys per master`).  Healthy"
           " Redis only: no node is killed.  `decisions/s`: all workers"
           " together.  Redis calls and round trips per 1,000 decisions as"
           " above; on the cluster one round trip is one batch of the"
           " agent, which it sends as one pipeline per master, in turn.", ""]
    if not cluster:
        out += ["cluster: not measured (no cluster rows measured: skipped"
                " (below), a file written before the cluster cases, or a"
                " run with --skip-cluster)", ""]
        return out
    out += [md_table(["mode", "policy", "keys", "workers",
                      "decisions/s single", "decisions/s cluster",
                      "p99 single", "p99 cluster",
                      "Redis calls / 1,000 single",
                      "Redis calls / 1,000 cluster",
                      "round trips / 1,000 single",
                      "round trips / 1,000 cluster",
                      "admitted single / cluster", "keys per master"], t),
            ""]
    return out


def section(machine, rows, bad):
    out = [BEGIN, "## Redis tier: strict and lease modes", "",
           "Written by `bench/procs/report_redis_tier.py` from"
           " `redis_tier.jsonl` (tkshm_bench_redis_tier,"
           " [bench/procs/README.md](../procs/README.md)); `bench/run.sh`"
           " makes both.", "", machine_line(machine), ""]
    if machine is None and not rows:
        out += ["not measured (no redis_tier.jsonl)", END]
        return "\n".join(out)
    if machine:
        out += ["Each phase %.1f s; worker processes check a key set with"
                " `tkshm_check()` as fast as they can; every case has its"
                " own table and its own redis-server on 127.0.0.1%s%s." % (
                    machine.get("seconds", 0),
                    " (the cluster's cases: one cluster for them all,"
                    " last table)" if any(topology(r) == "cluster"
                                          for r in rows) else "",
                    " (a --quick run: figures are a smoke, not a"
                    " measurement)" if machine.get("quick") else ""), ""]
    if bad:
        out += ["(%d unreadable lines ignored)" % bad, ""]

    cpus = (machine or {}).get("cpus", 0)
    marks = [0]

    def rate(r):
        cell = fmt_rate(r.get("per_worker_per_sec"))
        if suspect(r, cpus):
            marks[0] += 1
            cell += " ¹"
        return cell

    healthy_all = [r for r in rows if r.get("phase") == "healthy"]
    healthy = [r for r in healthy_all if topology(r) == "single"]
    healthy_cluster = [r for r in healthy_all if topology(r) == "cluster"]
    down = {case_key(r): r for r in rows if r.get("phase") == "redis_down"}
    skipped = [r for r in rows if r.get("skipped")]

    t = []
    for r in healthy:
        d = r.get("decisions", 0)
        cpu = "%s / %s / %s" % (fmt_cores(r.get("cpu_cores")),
                                fmt_cores(r.get("redis_cpu_cores")),
                                fmt_cores(r.get("agent_cpu_cores")))
        t.append(case_label(r) + [
            rate(r),
            fmt_pct(r.get("allowed", 0), d),
            fmt_ns(r.get("p50_ns")), fmt_ns(r.get("p99_ns")),
            fmt_ns(r.get("p999_ns")),
            fmt_per_1000(r.get("redis_calls_per_1000")),
            fmt_per_1000(r.get("round_trips_per_1000")),
            fmt_ns(down[case_key(r)].get("p99_ns"))
            if case_key(r) in down else "-",
            cpu])
    out += ["### Redis healthy", "",
            "`decisions/s per worker`: each worker's rate (the machine has"
            " the cores the line above says; redis-server and the agent"
            " share them).  Strict and lease tables run with"
            " `failure=safe-share` (the default) and their own key prefix."
            "  `Redis calls`: scripts sent to Redis (by the"
            " workers in strict mode, by the agent in lease mode: leases"
            " and host registrations).  `round trips`: the agent's"
            " pipelined exchanges (`tkshm_stats` global.lease_round_trips)."
            "  Both per 1,000 decisions: the lease table's allowed + denied;"
            " for strict, the workers' own count (a strict table's counters"
            " also count the negative cache's inserts of keys it stores a"
            " reply for)."
            "  `p99 down`: the same workers after redis-server was killed"
            " (next table).  CPU: cores used by the workers /"
            " redis-server / the agent.", ""]
    out += [md_table(["mode", "policy", "keys", "workers",
                      "decisions/s per worker", "admitted", "p50", "p99",
                      "p99.9", "Redis calls / 1,000 decisions",
                      "round trips / 1,000 decisions", "p99 down",
                      "CPU"], t) if t else "not measured", ""]

    t = []
    for r in healthy:
        k = case_key(r)
        if k not in down:
            continue
        x = down[k]
        d = x.get("decisions", 0)
        ratio = (x["p99_ns"] / r["p99_ns"]
                 if r.get("p99_ns") and x.get("p99_ns") else None)
        t.append(case_label(x) + [
            rate(x),
            fmt_pct(x.get("allowed", 0), d),
            fmt_pct(x.get("fallback", 0), d),
            fmt_ns(x.get("p50_ns")), fmt_ns(x.get("p99_ns")),
            fmt_ns(x.get("p999_ns")), fmt_ns(x.get("max_ns")),
            "-" if ratio is None else ("%.2fx" if ratio >= 0.1
                                       else "%.2gx") % ratio,
            "%s / %s" % (fmt_cores(x.get("cpu_cores")),
                         fmt_cores(x.get("agent_cpu_cores")))])
    out += ["### Redis down", "",
            "Timed from the moment redis-server is killed (SIGKILL), the"
            " workers still running: lease tables spend the credit they"
            " hold, then the failure policy (safe-share: limit / hosts,"
            " here one host) decides; strict tables' circuit breaker opens"
            " after the first failed calls and the failure policy decides"
            " locally.  `by failure policy`: decisions flagged"
            " TKSHM_DECISION_FALLBACK.  CPU: cores used by the workers /"
            " the agent.", ""]
    header = ["mode", "policy", "keys", "workers", "decisions/s per worker",
              "admitted", "by failure policy", "p50", "p99", "p99.9", "max",
              "p99 down / healthy", "CPU"]
    out += [md_table(header, t) if t else "not measured", ""]
    out += cluster_table(healthy, healthy_cluster, cpus, marks)
    if marks[0]:
        out += ["¹ The workers got less than 80% of the cores left to them"
                " while timed (`cpu_cores` against the vCPUs less what"
                " redis-server and the agent used, one per worker at most):"
                " other work took the machine, so the row's figures are"
                " doubtful.", ""]
    if skipped:
        out += ["Skipped:", ""]
        out += ["- %s %s%s, %s workers: %s" % (
            r.get("mode"), r.get("policy"),
            " (cluster)" if topology(r) == "cluster" else "",
            r.get("procs"), r["skipped"]) for r in skipped]
        out.append("")
    out.append(END)
    return "\n".join(out)


def make_section(records, bad):
    machine, rows = split_machine(records)
    return section(machine, rows, bad)


if __name__ == "__main__":
    sys.exit(section_report.main(__doc__, "redis_tier", "redis_tier.jsonl",
                                 BEGIN, END, make_section))
