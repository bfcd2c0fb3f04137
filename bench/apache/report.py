#!/usr/bin/env python3
"""Writes the server modules' section of RESULTS.md from apache.jsonl:
mod_tkshm (Apache httpd) and ngx_http_tkshm_module (nginx), beside nginx's
limit_req.

    python3 bench/apache/report.py [--results DIR]

Reads DIR/apache.jsonl (bench/apache/bench.py) and puts its tables into
DIR/RESULTS.md between the lines <!-- bench:apache:begin --> and
<!-- bench:apache:end -->: in place when they are there, else before
"## Plots" (bench/report.py rewrites RESULTS.md without them), else at the
end.  Nothing else in the file is touched.  Every figure and every
pass/MISS comes from the JSON lines; without them the section says "not
measured".

Standard library only.
"""

import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from section_report import md_table  # noqa: E402
import section_report  # noqa: E402
BEGIN, END = "<!-- bench:apache:begin -->", "<!-- bench:apache:end -->"

# The overhead a module may add to a request: the bar the Apache and nginx
# issues set ("at most 2%" of the server's own cost per request).
MAX_OVERHEAD = 0.02
# A paced key must get at least this share of what its policy allows.
MIN_PACED_SHARE = 0.95
# With 10x more clients than table slots, mod_tkshm may admit at most this
# multiple of what the policy allows every key (issue 8; an evicted key's
# debt is remembered, so the table should stay near the bound where nginx's
# undersized zone forgets its keys and admits many times it).
MAX_CROWD_RATIO = 1.1

# Each limited case against the unlimited case of the same server and the
# same requests.
BASELINE = {"hot": "none", "keys": "keys_none", "deny": "none"}
WHAT = {
    "none": "no limit",
    "hot": "limit, 1 key, always admitted",
    "keys_none": "no limit, X-Key from 100k keys",
    "keys": "limit per X-Key, 100k keys, always admitted",
    "deny": "limit, every request denied (429)",
}
LIMITER = {"apache": "mod_tkshm", "apache-plain": "(module not loaded)",
           "nginx": "limit_req", "nginx-tkshm": "ngx_http_tkshm_module"}
# The servers whose limiter is a tkshm table: the paced and crowd targets
# are judged for them, reported for limit_req.
TKSHM_SERVERS = ("apache", "nginx-tkshm")
# The servers in the order of the tables.
SERVERS = ("apache-plain", "apache", "nginx", "nginx-tkshm")


def fmt_rate(x):
    if x is None:
        return "-"
    if x >= 1e3:
        return "%.1f k/s" % (x / 1e3)
    return "%.0f /s" % x


def fmt_ms(x):
    if x is None:
        return "-"
    if x < 1:
        return "%.0f µs" % (x * 1e3)
    return "%.2f ms" % x


def fmt_us(x):
    return "-" if x is None else "%.1f µs" % x


def fmt_pct(x):
    return "-" if x is None else "%+.1f%%" % (100 * x)


def load(records):
    """The records by kind: machine, runs, paced, crowd, hooks, and how
    many are of no known kind."""
    machine, runs, paced, crowd, hooks, bad = None, [], [], [], [], 0
    # the nginx module's handler timed inside nginx: a hook record too
    lists = {"run": runs, "paced": paced, "crowd": crowd, "hook": hooks,
             "handler": hooks}
    for o in records:
        kind = o.get("record")
        if kind == "machine":
            machine = o
        elif kind in lists:
            lists[kind].append(o)
        else:
            bad += 1
    return machine, runs, paced, crowd, hooks, bad


def by_case(runs):
    """{(server, case): {round: run}}"""
    out = {}
    for r in runs:
        out.setdefault((r["server"], r["case"]), {})[r["round"]] = r
    return out


def ratio(cases, server, case, field, base_key=None):
    """case / baseline of `field`: the median over rounds of each round's
    pair (the two runs of a round are seconds apart), or None.  The
    baseline is the same server's unlimited case, or base_key (server,
    case)."""
    base = cases.get(base_key or (server, BASELINE.get(case)), {})
    mine = cases.get((server, case), {})
    ratios = [mine[k][field] / base[k][field] for k in mine
              if k in base and mine[k].get(field) is not None and
              base[k].get(field)]
    return statistics.median(ratios) if ratios else None


def cpu_overhead(cases, server, case, base_key=None):
    """What the limit adds to the server's CPU time per request (against
    base_key when given)."""
    r = ratio(cases, server, case, "cpu_us_per_request", base_key)
    return None if r is None else r - 1


def rps_overhead(cases, server, case):
    """What the limit takes from the requests served per second."""
    r = ratio(cases, server, case, "rps")
    return None if r is None else 1 - r


def median_rps(cases, key):
    rounds = cases.get(key, {})
    if not rounds:
        return None
    return statistics.median(r["rps"] for r in rounds.values())


def median_of(cases, key, field):
    vals = [r[field] for r in cases.get(key, {}).values()
            if r.get(field) is not None]
    return statistics.median(vals) if vals else None


def machine_line(m):
    if not m:
        return "Machine: not recorded."
    parts = ["%s, %d vCPU, %s, Linux %s" % (
        m.get("cpu_model") or "unknown CPU", m.get("cpus", 0),
        m.get("os") or "unknown OS", m.get("kernel", "?"))]
    # "Server version: Apache/2.4.71 (Debian)", "nginx version:
    # nginx/1.22.1", "wrk debian/4.1.0-3+b2 [epoll] Copyright ..."
    for tool in ("httpd", "nginx", "wrk"):
        if m.get(tool):
            parts.append(m[tool].split(": ")[-1].split(" [")[0])
    load = "load average %.1f at the start" % m["load_avg_1m"] \
        if m.get("load_avg_1m") is not None else ""
    if m.get("load_avg_1m_end") is not None:
        load += (", %.1f at the end (the benchmark's own threads included)"
                 % m["load_avg_1m_end"])
    return "Machine: %s; %s%s." % ("; ".join(parts), m.get("date", "?"),
                                   ", " + load if load else "")


def verdict(ok):
    return "**pass**" if ok else "**MISS**"


def crowd_what(c):
    """The table or zone of a crowd record, in words."""
    if c.get("slots") is not None:
        return "a table of {:,} slots".format(c["slots"])
    if c.get("zone_bytes") is not None:
        return "a %d KiB zone" % (c["zone_bytes"] // 1024)
    return "?"


def fmt_count(x):
    return "-" if x is None else "{:,}".format(x)


def targets(cases, paced, crowd, hooks):
    rows = []
    # what httpd spends on a request without a limit
    base_us = median_of(cases, ("apache", "none"), "cpu_us_per_request")
    hook = {h["case"]: h for h in hooks if h.get("record") == "hook"}
    for case, what in (("hot", "one client"),
                       ("ips", "100k client addresses"),
                       ("v6", "100k IPv6 clients (/64 keys)")):
        h = hook.get(case)
        target = ("mod_tkshm's hook, %s: at most %.0f%% of the CPU httpd "
                  "spends on a request without a limit"
                  % (what, MAX_OVERHEAD * 100))
        if h is None or not base_us:
            rows.append([target, "-", "-", "not measured"])
            continue
        share = h["ns_per_request"] / (base_us * 1e3)
        rows.append([target, "%.2f%%" % (100 * share),
                     "%.0f ns vs %s" % (h["ns_per_request"],
                                        fmt_us(base_us)),
                     verdict(share <= MAX_OVERHEAD)])
    for case, what in (("hot", "one hot key"),
                       ("keys", "100k keys (X-Key)")):
        o = cpu_overhead(cases, "apache", case)
        rows.append([
            "mod_tkshm through the server, %s: httpd's CPU per request "
            "against the same server without a limit" % what,
            "-" if o is None else "%+.1f%%" % (100 * o),
            "%s vs %s of CPU per request; %s vs %s" % (
                fmt_us(median_of(cases, ("apache", case),
                                 "cpu_us_per_request")),
                fmt_us(median_of(cases, ("apache", BASELINE[case]),
                                 "cpu_us_per_request")),
                fmt_rate(median_rps(cases, ("apache", case))),
                fmt_rate(median_rps(cases, ("apache", BASELINE[case])))),
            "reported"])
    # ngx_http_tkshm_module: its handler timed inside nginx (the module
    # built with TKSHM_NGINX_TIMING) against the CPU plain nginx spends on
    # the same requests without a limit
    handler = {h["case"]: h for h in hooks if h.get("record") == "handler"}
    for case, what in (("hot", "one hot key"),
                       ("keys", "100k keys (X-Key)")):
        base = ("nginx", BASELINE[case])
        base_us = median_of(cases, base, "cpu_us_per_request")
        h = handler.get(case)
        target = ("ngx_http_tkshm_module's handler, %s: at most %.0f%% of "
                  "the CPU plain nginx spends on a request without a limit"
                  % (what, MAX_OVERHEAD * 100))
        if h is None or not base_us or not h.get("ns_per_request"):
            rows.append([target, "-", "-", "not measured"])
            continue
        share = h["ns_per_request"] / (base_us * 1e3)
        rows.append([target, "%.2f%%" % (100 * share),
                     "%.0f ns vs %s (%s calls timed over %d workers)" % (
                         h["ns_per_request"], fmt_us(base_us),
                         fmt_count(h["calls"]), h["workers"]),
                     verdict(share <= MAX_OVERHEAD)])
    for case, what in (("hot", "one hot key"),
                       ("keys", "100k keys (X-Key)")):
        base = ("nginx", BASELINE[case])
        o = cpu_overhead(cases, "nginx-tkshm", case, base)
        same = cpu_overhead(cases, "nginx-tkshm", case)
        loaded = cpu_overhead(cases, "nginx-tkshm", BASELINE[case], base)
        lreq = cpu_overhead(cases, "nginx", case)
        rows.append([
            "ngx_http_tkshm_module through the server, %s: nginx's CPU per "
            "request against plain nginx without a limit" % what,
            "-" if o is None else "%+.1f%%" % (100 * o),
            "%s vs %s of CPU per request; %s vs %s; against the same "
            "nginx (module loaded) without a limit %s; the module loaded, "
            "no limit, against plain nginx %s; limit_req against plain "
            "nginx %s" % (
                fmt_us(median_of(cases, ("nginx-tkshm", case),
                                 "cpu_us_per_request")),
                fmt_us(median_of(cases, base, "cpu_us_per_request")),
                fmt_rate(median_rps(cases, ("nginx-tkshm", case))),
                fmt_rate(median_rps(cases, base)),
                fmt_pct(same), fmt_pct(loaded), fmt_pct(lreq)),
            "reported"])
    for server in TKSHM_SERVERS + ("nginx",):
        p = next((x for x in paced if x.get("server") == server), None)
        judged = server in TKSHM_SERVERS
        if p is None:
            rows.append(["%s, a paced key under load: admissions within "
                         "burst + rate x time" % LIMITER[server], "-", "-",
                         "not measured"])
            if judged:
                rows.append(["... and at least %.0f%% of it"
                             % (MIN_PACED_SHARE * 100), "-", "-",
                             "not measured"])
            continue
        share = p["admitted"] / p["ideal"] if p["ideal"] else 0
        if not judged:
            rows.append([
                "%s, a paced key under load (%d r/s, burst %d nodelay): "
                "admitted / (burst + rate x time)"
                % (LIMITER[server], p["rate"], p["burst"]),
                "%.3f" % (p["admitted"] / p["bound"]) if p["bound"]
                else "-",
                "%d admitted, bound %.0f over %.2f s; %.1f%% of %.0f"
                % (p["admitted"], p["bound"], p["wall_s"], 100 * share,
                   p["ideal"]),
                "reported"])
            continue
        rows.append([
            "%s, a paced key under load (gcra %d/s, burst %d): "
            "admissions within burst + rate x time"
            % (LIMITER[server], p["rate"], p["burst"]),
            "%d admitted" % p["admitted"],
            "bound %.0f over %.2f s" % (p["bound"], p["wall_s"]),
            verdict(p["admitted"] <= p["bound"])])
        rows.append([
            "... and at least %.0f%% of what the policy allows while wrk "
            "runs" % (MIN_PACED_SHARE * 100),
            "%.1f%%" % (100 * share),
            "%d of %.0f" % (p["admitted"], p["ideal"]),
            verdict(share >= MIN_PACED_SHARE)])
    for server in TKSHM_SERVERS + ("nginx",):
        judged = server in TKSHM_SERVERS
        c = next((x for x in crowd if x.get("server") == server), None)
        target = ("%s, 10x more clients than %s: admitted / (keys x (burst"
                  " + rate x time))%s" % (
                      LIMITER[server],
                      "table slots" if judged else "its zone holds",
                      " at most %.1f" % MAX_CROWD_RATIO if judged else ""))
        if c is None:
            rows.append([target, "-", "-", "not measured"])
            continue
        r = c["admitted"] / c["bound"] if c["bound"] else None
        rows.append([
            target, "-" if r is None else "%.2f" % r,
            "{:,} admitted of a bound of {:,.0f}; {:,} keys, {}{}".format(
                c["admitted"], c["bound"], c["keys"], crowd_what(c),
                "; %s evictions, %s in debt" % (
                    fmt_count(c.get("evictions")),
                    fmt_count(c.get("evictions_in_debt")))
                if judged else ""),
            (verdict(r is not None and r <= MAX_CROWD_RATIO)
             if judged else "reported")])
    return md_table(["target", "measured", "figures", "result"], rows)


def section(machine, runs, paced, crowd, hooks, bad):
    out = [BEGIN, "## Apache httpd and nginx: mod_tkshm and "
           "ngx_http_tkshm_module", "",
           "Written by `bench/apache/report.py` from `apache.jsonl`"
           " (`bench/apache/bench.py`); `bench/apache/run.sh` makes both.",
           "", machine_line(machine), ""]
    if machine is None and not runs:
        out += ["not measured (no apache.jsonl)", END]
        return "\n".join(out)
    if machine:
        out += ["Apache httpd (event MPM, 2 processes of 32 threads) and"
                " nginx (2 workers; `nginx` with `limit_req` and without"
                " the module, `nginx-tkshm` with ngx_http_tkshm_module"
                " loaded) serve a 2-byte static file, without an"
                " access log, to `wrk -t%d -c%d` (keep-alive) on the same"
                " machine; each case ran %d round(s) of %d s, the rounds"
                " alternating servers and cases%s.  The load generator and"
                " the server share the vCPUs, so a figure means something"
                " against its baseline on the same server only (each"
                " comparison is the median over rounds of case / baseline,"
                " the two runs of a round seconds apart); CPU time per"
                " request is what other work on the machine disturbs"
                " least." % (
                    machine.get("threads", 0), machine.get("connections", 0),
                    machine.get("rounds", 0), machine.get("seconds", 0),
                    " (a --quick run: a smoke, not a measurement)"
                    if machine.get("quick") else ""), ""]
    if bad:
        out += ["(%d unreadable lines ignored)" % bad, ""]
    cases = by_case(runs)
    out += ["### Targets", "",
            "The hook's share: the CPU time mod_tkshm's request hook takes"
            " (`hook_bench.c`: the module's own `tkap_limit_request()` on"
            " admitted requests built as httpd builds them, outside httpd,"
            " the median of 5 runs) against the CPU time httpd spends on a"
            " request without a limit (below).  Through the server, the"
            " same difference is within what other work on the machine"
            " does to each round (see the rounds' spread below): reported,"
            " not judged.  ngx_http_tkshm_module's share: its preaccess"
            " handler timed inside nginx (the module built with"
            " `TKSHM_NGINX_TIMING`, its own nginx serving wrk for the case;"
            " the monotonic clock read before and after each call, about"
            " one read's cost subtracted, calls preempted for over 50 us"
            " left out), with the default `tkshm_headers` (draft: two"
            " headers on every response, as mod_tkshm's default), against"
            " the CPU time plain nginx (`nginx`, the module not loaded)"
            " spends on the same requests without a limit.  Through"
            " nginx, nginx-tkshm's CPU per request against plain nginx's"
            " is reported; `the module loaded, no limit, against plain"
            " nginx` is the same comparison of two unlimited runs, a"
            " measure of the noise.", "",
            targets(cases, paced, crowd, hooks), ""]

    rows = []
    for server in SERVERS:
        for case in ("none", "hot", "keys_none", "keys", "deny"):
            key = (server, case)
            if key not in cases:
                continue
            rps = [r["rps"] for r in cases[key].values()]
            non2xx = sum(r["non2xx"] for r in cases[key].values())
            total = sum(r["requests"] for r in cases[key].values())
            limited = case in BASELINE
            rows.append([
                server, LIMITER[server] if limited else "-",
                WHAT[case], fmt_rate(median_rps(cases, key)),
                "%s - %s" % (fmt_rate(min(rps)), fmt_rate(max(rps))),
                fmt_pct(rps_overhead(cases, server, case))
                if limited else "-",
                fmt_us(median_of(cases, key, "cpu_us_per_request")),
                fmt_pct(cpu_overhead(cases, server, case))
                if limited else "-",
                fmt_ms(median_of(cases, key, "p50_ms")),
                fmt_ms(median_of(cases, key, "p99_ms")),
                "%.1f%%" % (100.0 * non2xx / total) if total else "-"])
    out += ["### Requests per second and CPU per request", "",
            "Each limited row against the same server's `no limit` row"
            " with the same requests: `req/s lost` (1 - req/s / baseline)"
            " and `CPU added` (CPU per request / baseline - 1; negative:"
            " cheaper, as a denial skips the file).  `CPU per request`:"
            " the user and system time of all the server's processes"
            " while wrk ran, over the requests served.  `apache-plain` is"
            " httpd without the module; `nginx` is nginx without the"
            " module (its limited rows: `limit_req`), `nginx-tkshm` nginx"
            " with ngx_http_tkshm_module loaded.", "",
            md_table(["server", "limiter", "case", "req/s (median)",
                      "rounds min - max", "req/s lost", "CPU per request",
                      "CPU added", "p50", "p99", "non-2xx"], rows)
            if rows else "not measured", ""]

    rows = []
    for p in paced:
        rows.append([p["server"], LIMITER.get(p["server"], "?"),
                     "%d/s, burst %d" % (p["rate"], p["burst"]),
                     "{:,}".format(p["requests"]),
                     "{:,}".format(p["admitted"]),
                     "%.0f" % p["bound"],
                     "%.3f" % (p["admitted"] / p["bound"])])
    out += ["### A paced key under load", "",
            "One key (the client's address) with a policy of 1,000/s"
            " after a burst of 100, hammered by wrk: `bound` is burst +"
            " rate x the wall time of the wrk run, the most the policy"
            " allows.", "",
            md_table(["server", "limiter", "policy", "requests", "admitted",
                      "bound", "admitted / bound"], rows)
            if rows else "not measured", ""]

    rows = []
    for c in crowd:
        rows.append([
            c["server"], LIMITER.get(c["server"], "?"), crowd_what(c),
            "{:,}".format(c["keys"]),
            "%d/s, burst %d" % (c["rate"], c["burst"])
            if c["server"] != "nginx" else "%dr/s, burst 0" % c["rate"],
            "%.2f s" % c["wall_s"], "{:,}".format(c["requests"]),
            "{:,}".format(c["admitted"]), "{:,.0f}".format(c["bound"]),
            "%.2f" % (c["admitted"] / c["bound"]),
            fmt_count(c.get("evictions")),
            fmt_count(c.get("evictions_in_debt"))])
    out += ["### 10x more clients than table slots", "",
            "wrk sends X-Key drawn from 10 times as many keys as"
            " the tkshm tables have slots, to a limit of 1 request per"
            " second per key (mod_tkshm and ngx_http_tkshm_module: gcra"
            " burst 1, a table of the same slots, full: evicting; nginx:"
            " `limit_req` burst 0 `nodelay` on a 32 KiB zone, about 200"
            " states, a zone sized too small for its clients): `bound` is"
            " keys x (burst + rate x the wall time of the wrk run), the most the"
            " policy allows; limit_req's burst 0 admits a key's first"
            " request, the same allowance as burst 1.  Evictions: live keys"
            " the full table pushed out (`tkshm-inspect stats`), of which"
            " in debt (their debt remembered for their return).", "",
            md_table(["server", "limiter", "state", "keys", "policy",
                      "wall time", "requests", "admitted", "bound",
                      "admitted / bound", "evictions", "in debt"], rows)
            if rows else "not measured", "", END]
    return "\n".join(out)


def make_section(records, bad):
    machine, runs, paced, crowd, hooks, unknown = load(records)
    return section(machine, runs, paced, crowd, hooks, bad + unknown)


if __name__ == "__main__":
    sys.exit(section_report.main(__doc__, "apache", "apache.jsonl", BEGIN,
                                 END, make_section))
