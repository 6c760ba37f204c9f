#!/usr/bin/env python3
"""Every document a user is pointed to exists, and so does the section.

usage: doc_refs.py COMMSCHED SOURCE_DIR SCRATCH_DIR SHARED_DATA

Collects the text of `commsched --help`, every subcommand's --help and
the HTML pages and SVG timelines the CLI writes (the example optimized
with pass statistics, with a measured run, a report of a graph without
collectives, an imported Chakra trace without sizes), and what those
point on to: docs/*.md, the installed headers include/commsched/*.h and
the Python package's docstrings. Extracts each reference to a Markdown
file (`docs/REPORTS.md`, `FORMAT.md` from docs/, ...) and checks:
- the file is in the repository (a user has the repository, not the
  design notes it was built from), relative to the citing file's folder
  or to SOURCE_DIR;
- a cited section exists as a heading of that file: a quoted title
  (`docs/REPORTS.md "Measured runs"`, curly quotes too), a numbered
  section (`§3`, `section 3`: a heading numbered 3) or an anchor
  (`#measured-runs`, GitHub's slug of a heading). A quoted title may be
  the start of a longer heading ("Fuzzing" for "Fuzzing (issue 21)").
EXTERNAL lists the sources outside the repository docs still cite.
Also checks that the collection found the references it must (so the
extraction cannot silently find nothing)."""

import html
import os
import re
import shutil
import subprocess
import sys

CLI, SRC, SCRATCH, DATA = sys.argv[1:5]
EXAMPLE = os.path.join(SRC, "graphs", "examples", "fsdp_2layer.json")
CHAKRA = os.path.join(DATA, "chakra", "small_chakra.0.json")

# Cited by docs/ as the origin of constants and scenarios, outside the
# repository: the project's reference notes and the shared test data's
# README (tests read that data from COMMSCHED_SHARED_DATA). Only docs/ may
# cite them; --help, pages, headers and docstrings may not.
EXTERNAL = {"reference/inductor-overlap-passes.md",
            "reference/overlap-landscape.md", "../shared/data/README.md"}

# A Markdown file, then optionally a section: "Title", “Title”, §3 (or a
# list: §3/§5, §3 and §5), section 3, #anchor.
REF = re.compile(
    r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.md)\b"
    r"(?:,?\s*(?:\"([^\"]+)\"|\u201c([^\u201d]+)\u201d"
    r"|((?:\s*(?:/|,|and)?\s*\u00a7\s*\d+)+)"
    r"|section\s+(\d+)|#([\w-]+)))?")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(*args, ok=(0,)):
    p = subprocess.run([CLI, *args], capture_output=True, text=True)
    if p.returncode not in ok:
        fail("commsched %s: exit %d\n%s" % (" ".join(args), p.returncode,
                                            p.stderr[-2000:]))
    return p


def norm(s):
    return " ".join(s.replace("`", "").split()).lower()


def slug(heading):
    s = heading.strip().lower().replace("`", "")
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def headings(path):
    out, fence = [], False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
            elif not fence and re.match(r"#{1,6} ", line):
                out.append(line.lstrip("#").strip())
    return out


def resolve(where, name):
    """The cited file: beside the citing file, else from the repository's
    root; None outside the repository or missing."""
    root = os.path.realpath(SRC)
    for base in (os.path.dirname(os.path.join(SRC, where)), SRC):
        path = os.path.realpath(os.path.join(base, name))
        if path.startswith(root + os.sep) and os.path.isfile(path):
            return path
    return None


def check_ref(where, ref, errors):
    name, quoted, curly, paras, section, anchor = ref
    if name in EXTERNAL and where.startswith("docs/"):
        return
    path = resolve(where, name)
    if path is None:
        errors.append("%s cites %s, which is not in the repository"
                      % (where, name))
        return
    hs = headings(path)
    want = []
    if quoted or curly:
        title = quoted or curly
        t = norm(title)
        if not any(norm(h) == t or (norm(h).startswith(t) and
                                    not norm(h)[len(t)].isalnum())
                   for h in hs):
            errors.append("%s cites %s \"%s\": no such heading (%s has: %s)"
                          % (where, name, title, name,
                             "; ".join(hs)))
    for n in re.findall(r"\d+", paras or "") + ([section] if section else []):
        want.append(n)
    for n in want:
        if not any(re.match(r"%s[.) ]" % n, h) for h in hs):
            errors.append("%s cites %s section %s: no heading numbered %s"
                          % (where, name, n, n))
    if anchor and not any(slug(h) == anchor for h in hs):
        errors.append("%s cites %s#%s: no such heading" % (where, name,
                                                         anchor))


def page_text(path):
    with open(path, encoding="utf-8") as f:
        s = f.read()
    # What a reader sees, and the tooltips (title attributes) too.
    titles = " ".join(re.findall(r'title="([^"]*)"', s))
    s = re.sub(r"<script\b.*?</script>", " ", s, flags=re.S)
    s = re.sub(r"<[^>]+>", "", s)
    return html.unescape(s + " " + html.unescape(titles))


def main():
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    texts = {}
    top = run("--help").stdout
    texts["commsched --help"] = top
    cmds = re.findall(r"^  ([a-z][a-z-]*)\s{2,}", top, flags=re.M)
    if len(cmds) < 8:
        fail("found only %r in commsched --help" % cmds)
    for c in cmds:
        texts["commsched %s --help" % c] = run(c, "--help").stdout

    def p(name):
        return os.path.join(SCRATCH, name)

    opt = p("ex.opt.json")
    run("optimize", EXAMPLE, "-o", opt, "--html", p("ex.html"))
    inductor = ("decide_global_ordering_of_comms,"
                "reorder_communication_preserving_peak_memory,"
                "sink_waits_iterative")
    run("optimize", EXAMPLE, "--passes", inductor, "-o", p("ind.json"))
    with open(p("sim.json"), "w") as f:
        f.write(run("simulate", "--format", "json", opt).stdout)
    run("report", p("ind.json"), "--before", EXAMPLE, "--measured",
        p("sim.json"), "-o", p("measured.html"))
    run("report", opt, "--format", "svg", "-o", p("ex.svg"))
    run("generate", "chain", "--nodes", "20", "-o", p("chain.json"))
    run("report", p("chain.json"), "-o", p("chain.html"))
    if os.path.isfile(CHAKRA):
        run("import", "chakra", CHAKRA, "-o", p("chakra.json"))
        run("report", p("chakra.json"), "-o", p("chakra.html"))
    else:
        print("note: no %s (shared data): its page is not checked" % CHAKRA)
    for f in sorted(os.listdir(SCRATCH)):
        if f.endswith((".html", ".svg")):
            texts[f] = page_text(p(f))

    # What the CLI's texts point to, and the API's own documentation.
    for sub, ext in (("docs", ".md"), ("include/commsched", ".h"),
                     ("python/commsched", ".py")):
        for f in sorted(os.listdir(os.path.join(SRC, sub))):
            if f.endswith(ext):
                with open(os.path.join(SRC, sub, f), encoding="utf-8") as fh:
                    text = fh.read()
                if ext == ".h":  # a title may wrap inside a comment
                    text = re.sub(r"^\s*\*+ ?", "", text, flags=re.M)
                texts[sub + "/" + f] = text

    errors, seen = [], set()
    for where, text in texts.items():
        for m in REF.finditer(text):
            seen.add((where, m.group(1)))
            check_ref(where, m.groups(), errors)
    # The extraction must see the references we know are there.
    for where, name in (("commsched --help", "docs/FORMAT.md"),
                        ("commsched report --help", "docs/REPORTS.md"),
                        ("commsched info --help", "docs/FORMAT.md"),
                        ("ex.html", "docs/REPORTS.md"),
                        ("docs/API.md", "FORMAT.md")):
        if (where, name) not in seen:
            errors.append("found no reference to %s in %s" % (name, where))
    for e in errors:
        print("FAIL:", e)
    if errors:
        sys.exit(1)
    print("ok: %d references in %d texts" % (len(seen), len(texts)))


if __name__ == "__main__":
    main()
