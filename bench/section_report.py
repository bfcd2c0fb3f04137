"""What the benchmark reports that write one section of RESULTS.md share.

bench/report.py rewrites RESULTS.md whole; the Redis tier's, Apache's and
PHP's reports (bench/procs/report_redis_tier.py, bench/apache/report.py,
bench/php/report.py) then each put their own section back between their
markers, from their own JSON Lines file.  This module is that common
part: reading the records, placing the section, the command line.

Standard library only.
"""

import argparse
import json
import os


def read_records(path, suite):
    """The JSON objects of `path` whose "suite" is `suite`, and how many
    lines were not (unparsable, or another suite's)."""
    records, bad = [], 0
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                o = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if isinstance(o, dict) and o.get("suite") == suite:
                records.append(o)
            else:
                bad += 1
    return records, bad


def split_machine(records):
    """(the last "machine" record or None, every other record)."""
    machine, rows = None, []
    for o in records:
        if o.get("record") == "machine":
            machine = o
        else:
            rows.append(o)
    return machine, rows


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def fmt_rate(x):
    if x is None:
        return "-"
    for div, unit in ((1e6, "M/s"), (1e3, "k/s")):
        if x >= div:
            return "%.3g %s" % (x / div, unit)
    return "%.3g /s" % x


def cores(r):
    """The CPU a case's processes used per second of wall time, or None."""
    wall = r.get("wall_s") or 0
    return r.get("cpu_s", 0) / wall if wall else None


def machine_line(m, versions):
    """The "Machine: ..." sentence of a section: the machine record `m`
    (None: not recorded) with `versions` (the suite's software, e.g.
    "PHP 8.2, APCu 5.1") after the kernel."""
    if not m:
        return "Machine: not recorded."
    load = m.get("load_avg_1m")
    return "Machine: %s, %d vCPU, %s, Linux %s; %s; %s%s." % (
        m.get("cpu_model") or "unknown CPU", m.get("cpus") or 0,
        m.get("os") or "unknown OS", m.get("kernel", "?"), versions,
        m.get("date", "?"),
        ", load average %.1f at the start" % load if load is not None
        else "")


def skipped_lines(rows):
    """The "Skipped:" list of the rows a run recorded as skipped (mode,
    keys and why), with its blank lines; [] when there are none."""
    skipped = [r for r in rows if r.get("skipped")]
    if not skipped:
        return []
    return (["Skipped:", ""] +
            ["- %s, %s keys: %s" % (r.get("mode"), r.get("keys"),
                                    r["skipped"]) for r in skipped] + [""])


def place(text, sec, begin, end):
    """`text` with the section `sec` (which starts with `begin` and ends
    with `end`) in place of the old one; else before "## Plots"; else at
    the end."""
    i, j = text.find(begin), text.find(end)
    if i >= 0 and j > i:
        return text[:i] + sec + text[j + len(end):]
    k = text.find("\n## Plots")
    if k >= 0:
        return text[:k + 1] + sec + "\n\n" + text[k + 1:]
    return text.rstrip("\n") + "\n\n" + sec + "\n"


def main(doc, suite, jsonl, begin, end, make_section):
    """The command line of a section report: reads RESULTS_DIR/`jsonl`
    (records of `suite`), calls make_section(records, bad) for the
    section's text and puts it into RESULTS_DIR/RESULTS.md."""
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--results", default=os.path.join(here, "results"),
                    help="directory of %s and RESULTS.md "
                         "(default bench/results)" % jsonl)
    a = ap.parse_args()
    src = os.path.join(a.results, jsonl)
    md = os.path.join(a.results, "RESULTS.md")
    records, bad = (read_records(src, suite) if os.path.exists(src)
                    else ([], 0))
    sec = make_section(records, bad)
    text = ""
    if os.path.exists(md):
        with open(md) as f:
            text = f.read()
    with open(md, "w") as f:
        f.write(place(text, sec, begin, end))
    print(sec)
    return 0
