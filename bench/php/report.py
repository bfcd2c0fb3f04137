#!/usr/bin/env python3
"""Writes the PHP benchmark's section of RESULTS.md from php.jsonl.

    python3 bench/php/report.py [--results DIR]

Reads DIR/php.jsonl (bench/php/run.sh, one line per case of
bench/php/bench.php) and puts its tables into DIR/RESULTS.md between the
lines <!-- bench:php:begin --> and <!-- bench:php:end -->: in place when
they are there, else before "## Plots", else at the end.  Nothing else in
the file is touched.  Every figure and every pass/MISS comes from the JSON
lines; without them the section says "not measured".

Standard library only.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from section_report import cores, fmt_rate, md_table, split_machine  # noqa: E402
import section_report  # noqa: E402
BEGIN, END = "<!-- bench:php:begin -->", "<!-- bench:php:end -->"

# The targets: tkshm's checks/s against each peer's.
TARGETS = (("apcu_gcra", 1.5), ("symfony", 20.0))
LABEL = {
    "tkshm": "tkshm extension (`Tkshm\\Table::check`)",
    "apcu_gcra": "GCRA over APCu (`apcu_fetch` + `apcu_cas`)",
    "symfony": "Symfony RateLimiter token_bucket, ApcuAdapter, no lock",
    "symfony_tkshm": "the same Symfony code on tkshm (`Tkshm\\Symfony`"
                     " factory, tokenBucket table)",
    "loop": "the loop alone (key, no limiter)",
}


def suspect(r, procs):
    """The workers used well under one core each: other work took the
    machine while the case ran, or they slept waiting for a lock."""
    c = cores(r)
    return c is not None and c < 0.8 * min(procs, r.get("procs", procs))


def machine_line(m):
    return section_report.machine_line(m, m and (
        "PHP %s, APCu %s, Symfony RateLimiter %s" % (
            m.get("php") or "?", m.get("apcu") or "?",
            m.get("symfony") or "?")))


def section(machine, rows, bad):
    out = [BEGIN, "## PHP: the extension beside APCu and Symfony", "",
           "Written by `bench/php/report.py` from `php.jsonl`"
           " (`bench/php/run.sh`, which runs `bench/php/bench.php`).", "",
           machine_line(machine), ""]
    cases = [r for r in rows if not r.get("skipped")]
    if not cases:
        out += ["not measured (no php.jsonl)", END]
        return "\n".join(out)
    procs = (machine or {}).get("procs", 2)
    seconds = (machine or {}).get("seconds")
    out += ["%d PHP processes (`pcntl_fork`) each check keys"
            " `'k' . mt_rand(1, N)` in a loop for %s s through one limiter"
            " whose state they share; one policy for all: a burst of 100,"
            " then 10 per second (tkshm and APCu: GCRA, T = 100 ms;"
            " Symfony: token_bucket limit 100, 10 per 1 second, over APCu"
            " and, with the same options and the same"
            " `$factory->create($key)->consume(1)->isAccepted()`, on tkshm's"
            " adapter: `tokenBucket:capacity=100,refillPerSec=10`).  With"
            " 100k keys every key is checked once before the timed loop."
            "  `php -n` with only the extensions a case needs (APCu:"
            " `apc.enable_cli=1`, `apc.shm_size=128M`).%s" % (
                procs, "%g" % seconds if seconds else "?",
                "  (A --quick run: a smoke, not a measurement.)"
                if (machine or {}).get("quick") else ""), ""]
    if bad:
        out += ["(%d unreadable lines ignored)" % bad, ""]

    by = {(r["mode"], r["keys"]): r for r in cases}
    marks = [0]

    def rate(r):
        cell = fmt_rate(r.get("checks_per_sec"))
        if suspect(r, procs):
            marks[0] += 1
            cell += " ¹"
        return cell

    t = []
    for keys in sorted({r["keys"] for r in cases}, reverse=True):
        tk = by.get(("tkshm", keys))
        for mode in ("tkshm", "apcu_gcra", "symfony", "symfony_tkshm",
                     "loop"):
            r = by.get((mode, keys))
            if not r:
                continue
            ratio = "-"
            if tk and mode not in ("tkshm", "loop") and \
                    r.get("checks_per_sec"):
                ratio = "%.1fx" % (tk["checks_per_sec"] /
                                   r["checks_per_sec"])
            c = cores(r)
            per_cpu = (fmt_rate(r["checks"] / r["cpu_s"])
                       if r.get("cpu_s") else "-")
            t.append(["1 hot key" if keys == 1 else "{:,}".format(keys),
                      LABEL.get(mode, mode), rate(r), ratio,
                      "-" if c is None else "%.2f" % c, per_cpu])
    out += ["### Checks per second", "",
            "`checks/s`: the sum of the processes' rates.  `tkshm is`:"
            " tkshm's checks/s over this row's.  `cores`: CPU time of the"
            " processes over the run's wall time.  `per CPU-second`:"
            " checks over the CPU time they took, less sensitive to other"
            " work on the machine (but blind to time spent waiting for a"
            " lock, APCu's).", "",
            md_table(["keys", "limiter", "checks/s", "tkshm is", "cores",
                      "per CPU-second"], t), ""]

    t = []
    for keys in sorted({r["keys"] for r in cases}, reverse=True):
        tk = by.get(("tkshm", keys))
        for mode, want in TARGETS:
            r = by.get((mode, keys))
            if not tk or not r or not r.get("checks_per_sec"):
                continue
            got = tk["checks_per_sec"] / r["checks_per_sec"]
            t.append(["1 hot key" if keys == 1 else "{:,}".format(keys),
                      "tkshm >= %gx %s" % (want, mode),
                      "%.1fx" % got, "pass" if got >= want else "MISS"])
    out += ["### Targets", "", md_table(["keys", "target", "measured",
                                         "result"], t) if t else
            "not measured", ""]

    t = []
    for keys in sorted({r["keys"] for r in cases}, reverse=True):
        a, b = by.get(("symfony_tkshm", keys)), by.get(("symfony", keys))
        if not a or not b or not a.get("checks_per_sec") or \
                not b.get("checks_per_sec"):
            continue
        cpu = "-"
        if a.get("cpu_s") and b.get("cpu_s"):
            cpu = "%.1fx" % ((a["checks"] / a["cpu_s"]) /
                             (b["checks"] / b["cpu_s"]))
        t.append(["1 hot key" if keys == 1 else "{:,}".format(keys),
                  fmt_rate(a["checks_per_sec"]),
                  fmt_rate(b["checks_per_sec"]),
                  "%.1fx" % (a["checks_per_sec"] / b["checks_per_sec"]),
                  cpu])
    if t:
        out += ["### Symfony's RateLimiter API: on tkshm and over APCu", "",
                "The same factory options and calling code; only the"
                " factory differs.  `per CPU-second`: the ratio of checks"
                " per CPU-second, as in the first table.", "",
                md_table(["keys", "on tkshm (checks/s)",
                          "over APCu (checks/s)", "tkshm's is",
                          "per CPU-second"], t), ""]

    t = []
    for mode in ("tkshm", "apcu_gcra", "symfony", "symfony_tkshm"):
        r = by.get((mode, 1))
        if not r or r.get("policy_admits") is None:
            continue
        want = r["policy_admits"]
        got = r.get("allowed", 0)
        verdict = "-"
        if mode in ("tkshm", "symfony_tkshm"):
            verdict = "pass" if got == want else "MISS"
        t.append([LABEL.get(mode, mode), "%.3f s" % r.get("wall_s", 0),
                  str(want), str(got),
                  "%+d (%.2fx)" % (got - want, got / want if want else 0),
                  verdict])
    out += ["### Exactness on one hot key", "",
            "The key is cold at the start; `the policy admits`: 100 +"
            " floor(E / 100 ms) for GCRA and tkshm's token bucket (it"
            " refills continuously), 100 + 10 x floor(E / 1 s) for"
            " Symfony's token bucket (it refills whole intervals), E being"
            " the time from the first check to the last.  Target: tkshm,"
            " directly and under Symfony's API, admits exactly that"
            " number.", "",
            md_table(["limiter", "E", "the policy admits", "admitted",
                      "over", "exact"], t) if t else "not measured", ""]
    if marks[0]:
        out += ["¹ The processes used less than 80% of a core each while"
                " timed: other work took the machine, or they waited"
                " (APCu's lock puts waiters to sleep), so compare the rate"
                " with care; `per CPU-second` is not affected by the"
                " former.", ""]
    out += section_report.skipped_lines(rows)
    out.append(END)
    return "\n".join(out)


def make_section(records, bad):
    machine, rows = split_machine(records)
    return section(machine, rows, bad)


if __name__ == "__main__":
    sys.exit(section_report.main(__doc__, "php", "php.jsonl", BEGIN, END,
                                 make_section))
