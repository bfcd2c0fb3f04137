#!/usr/bin/env python3
"""Writes the C API's man pages (section 3) from the public headers.

    scripts/gen-man3.py OUTDIR VERSION include/tkshm.h [more headers...]

The headers are the contract: every function declared `TKSHM_API` has a
`/** ... */` comment above it, and that comment is the page.  One page per
function (tkshm_open.3, ...), plus tkshm.3: the first header's opening
comment (its conventions) and the list of every page.  Nothing is written
by hand, so a page cannot drift from its header; the build runs this
script (CMakeLists.txt), and a function without a comment stops it.

In a comment: `@param NAME text` and `@return text` become the ARGUMENTS
and RETURN VALUE sections; the fixed fields that end a contract
(`Threads:`, `Processes:`, `Crash:`, `Threads and processes:`) become
CONCURRENCY AND CRASHES; lines starting with `- ` are a list; a line
indented further than the comment's text is shown as written (code).
"""

import os
import re
import sys

DATE = ""  # no date: a page is a function of its header alone
FIELD_RE = re.compile(
    r"(?:(?<=[.;:)\s])|^)\s*((?:Threads and processes|Threads|Processes|Crash):)"
)
DECL_RE = re.compile(r"^TKSHM_API\b(.*?);", re.S | re.M)
FUNC_NAME_RE = re.compile(r"\b(tkshm_[a-z0-9_]+)\s*\(")
BANNER_RE = re.compile(r"/\* -{20,}\n \* (.+?)\n \* -{20,} \*/")


class Failed(Exception):
    pass


def comment_lines(raw):
    """The text lines of a /** ... */ comment, without its frame."""
    body = raw[3:-2]
    lines = []
    for line in body.split("\n"):
        line = re.sub(r"^\s*\*( |$)", "", line, count=1)
        lines.append(line.rstrip())
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def declarations(path):
    """(group, name, prototype, comment lines) for every TKSHM_API function
    of a header, in its order."""
    text = open(path, encoding="utf-8").read()
    banners = [(m.start(), m.group(1).strip()) for m in BANNER_RE.finditer(text)]
    out = []
    for m in DECL_RE.finditer(text):
        decl = m.group(1)
        name = FUNC_NAME_RE.search(decl)
        if not name:
            raise Failed("%s: a TKSHM_API declaration names no function: %s"
                         % (path, " ".join(decl.split())))
        before = text[: m.start()].rstrip()
        if not before.endswith("*/"):
            raise Failed("%s: %s has no comment above it" % (path, name.group(1)))
        start = before.rfind("/**")
        if start < 0 or before.rfind("*/", 0, len(before) - 2) > start:
            raise Failed("%s: %s has no /** comment" % (path, name.group(1)))
        group = ""
        for pos, title in banners:
            if pos < m.start():
                group = title
        proto = " ".join(decl.split())
        out.append((group, name.group(1), proto + ";", comment_lines(before[start:])))
    return out


def roff_text(s):
    """Escapes text for a roff line and marks function names bold."""
    s = s.replace("\\", "\\e")
    s = re.sub(r"\b(tkshm_[a-z0-9_]+)\(\)", r"\\fB\1\\fP()", s)
    return s


def roff_line(s):
    """A text line: one starting with '.' or \"'\" is escaped."""
    s = roff_text(s)
    if s.startswith((".", "'")):
        s = "\\&" + s
    return s


def split_fields(lines):
    """(text lines, concurrency text): the contract's fixed fields are cut
    from the first `Threads:`/`Processes:`/`Crash:` on."""
    joined = "\n".join(lines)
    m = FIELD_RE.search(joined)
    if not m:
        return lines, ""
    head = joined[: m.start(1)].rstrip()
    return (head.split("\n") if head else []), " ".join(joined[m.start(1) :].split())


def blocks(lines):
    """Paragraphs, list items and code blocks of comment lines:
    ('p', text), ('li', text), ('code', [lines])."""
    out = []
    cur = None
    base = min(
        (len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0
    )
    for line in lines:
        indent = len(line) - len(line.lstrip())
        s = line.strip()
        if not s:
            cur = None
            continue
        if re.fullmatch(r"-{3,}", s) and cur and cur[0] == "p":
            cur[0] = "h"  # the line above, underlined: a heading
            cur = None
        elif s.startswith("- "):
            cur = ["li", s[2:]]
            out.append(cur)
        elif cur and cur[0] == "li" and indent >= base + 4:
            cur.append(line[base + 2 :])  # a line of its own in the item
        elif cur and cur[0] == "li" and indent > base:
            if len(cur) > 2:  # after lines of its own: one more
                cur.append(line[base + 2 :])
            else:
                cur[1] += " " + s
        elif indent >= base + 2:
            if cur and cur[0] == "code":
                cur[1].append(line[base:])
            else:
                cur = ["code", [line[base:]]]
                out.append(cur)
        elif cur and cur[0] == "p":
            cur[1] += " " + s
        else:
            cur = ["p", s]
            out.append(cur)
    return out


def render_blocks(bl):
    out = []
    for kind, body, *sub in bl:
        if kind == "h":
            out += [".SS %s" % roff_text(body)]
        elif kind == "p":
            out += [".PP", roff_line(body)]
        elif kind == "li":
            out += [".IP \\(bu 2", roff_line(body)]
            if sub:
                out += [".nf"] + [roff_line(l) for l in sub] + [".fi"]
        else:
            out += [".PP", ".nf", ".RS 4"]
            out += [roff_line(l) for l in body]
            out += [".RE", ".fi"]
    return out


def parse_tags(lines):
    """(description lines, [[param, text]], return text).  A tag's text
    runs to the next tag or the end of its paragraph."""
    desc, params, ret = [], [], []
    target = None  # the list the current tag's text goes to
    for line in lines:
        s = line.strip()
        m = re.match(r"@param\s+(\S+)\s*(.*)", s)
        if m:
            params.append([m.group(1), m.group(2)])
            target = params[-1]
        elif s.startswith("@return"):
            ret.append(s[len("@return"):].strip())
            target = ret
        elif not s:
            target = None
            desc.append(line)
        elif target is ret:
            ret.append(s)
        elif target is not None:
            target[1] += " " + s
        else:
            desc.append(line)
    return desc, params, " ".join(ret)


def render_fields(fields):
    """The contract's fixed fields, one tagged paragraph each."""
    out = []
    parts = FIELD_RE.split(fields)  # [before, label, text, label, text...]
    for i in range(1, len(parts) - 1, 2):
        out += [".TP", "\\fB%s\\fP" % parts[i].rstrip(":"),
                roff_line(parts[i + 1].strip())]
    return out


def wrap_prototype(proto, width=66):
    """The prototype on lines of at most `width` characters, broken after
    its commas, its arguments aligned after the '('."""
    head, _, args = proto.partition("(")
    lines, cur = [], head + "("
    indent = " " * len(cur)
    for part in args.split(", "):
        piece = part if cur.endswith("(") else ", " + part
        if len(cur) + len(piece) > width and not cur.endswith("("):
            lines.append(cur + ",")
            cur = indent + part
        else:
            cur += piece
    return lines + [cur]


def header_name(path):
    return os.path.basename(path)


def page(name, proto, header, lines, version, see_also):
    text, fields = split_fields(lines)
    desc, params, ret = parse_tags(text)
    first = next((b[1] for b in blocks(desc) if b[0] == "p"), "")
    summary = re.split(r"(?<=[.:;])\s", first)[0].rstrip(".:;")
    out = [
        '.TH %s 3 "%s" "tkshm %s" "tkshm C API"' % (name.upper(), DATE, version),
        ".SH NAME",
        "%s \\- %s" % (name, roff_text(summary[:1].lower() + summary[1:]) if summary else name),
        ".SH SYNOPSIS",
        ".nf",
        ".B #include <%s>" % header,
        ".PP",
        *[roff_line(l) for l in wrap_prototype(proto)],
        ".fi",
        ".PP",
        "Link with \\fI\\-ltkshm\\fP (\\fBpkg\\-config \\-\\-libs tkshm\\fP).",
        ".SH DESCRIPTION",
    ]
    out += render_blocks(blocks(desc)) or [".PP", "(no description)"]
    if params:
        out.append(".SH ARGUMENTS")
        for pname, ptext in params:
            out += [".TP", "\\fI%s\\fP" % roff_text(pname), roff_line(ptext)]
    if ret:
        out += [".SH RETURN VALUE", roff_line(ret)]
    if fields:
        out.append(".SH CONCURRENCY AND CRASHES")
        out += render_fields(fields)
    out.append(".SH SEE ALSO")
    out.append(",\n".join("\\fB%s\\fP(3)" % s for s in see_also))
    return "\n".join(out) + "\n"


def overview(header_path, decls, version):
    text = open(header_path, encoding="utf-8").read()
    m = re.match(r"\s*/\*(.*?)\*/", text, re.S)
    lines = comment_lines("/**" + m.group(1) + "*/") if m else []
    if lines and " - " in lines[0]:
        lines = lines[1:]
    out = [
        '.TH TKSHM 3 "%s" "tkshm %s" "tkshm C API"' % (DATE, version),
        ".SH NAME",
        "tkshm \\- shared-memory rate limiting for the processes of one host",
        ".SH SYNOPSIS",
        ".nf",
        ".B #include <tkshm.h>",
        ".fi",
        ".PP",
        "Link with \\fI\\-ltkshm\\fP (\\fBpkg\\-config \\-\\-cflags \\-\\-libs tkshm\\fP,",
        "or CMake's \\fBfind_package(tkshm)\\fP and the target \\fBtkshm::tkshm\\fP).",
        ".SH DESCRIPTION",
    ]
    out += render_blocks(blocks(lines))
    out.append(".SH FUNCTIONS")
    group = None
    for g, name, _, _, hdr in decls:
        if (g, hdr) != group:
            group = (g, hdr)
            out += [".SS %s" % roff_text("%s (%s)" % (g, hdr) if g else hdr)]
        out += [".TP", "\\fB%s\\fP(3)" % name]
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) < 4:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    outdir, version, headers = argv[1], argv[2], argv[3:]
    decls = []
    for h in headers:
        for group, name, proto, lines in declarations(h):
            decls.append((group, name, proto, lines, header_name(h)))
    names = [d[1] for d in decls]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise Failed("declared twice: %s" % ", ".join(sorted(dup)))
    os.makedirs(outdir, exist_ok=True)
    written = {"tkshm.3"}
    for group, name, proto, lines, hdr in decls:
        same = [d[1] for d in decls if d[0] == group and d[4] == hdr and d[1] != name]
        see = ["tkshm"] + same
        with open(os.path.join(outdir, name + ".3"), "w", encoding="utf-8") as f:
            f.write(page(name, proto, hdr, lines, version, see))
        written.add(name + ".3")
    with open(os.path.join(outdir, "tkshm.3"), "w", encoding="utf-8") as f:
        f.write(overview(headers[0], decls, version))
    # Pages of functions that are gone are removed, not installed.
    for old in os.listdir(outdir):
        if old.endswith(".3") and old not in written:
            os.remove(os.path.join(outdir, old))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Failed as e:
        print("gen-man3: %s" % e, file=sys.stderr)
        sys.exit(1)
