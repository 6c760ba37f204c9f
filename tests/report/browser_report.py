#!/usr/bin/env python3
"""The HTML report in a real browser: headless Chromium (python3 stdlib).

usage: browser_report.py COMMSCHED SOURCE_DIR SCRATCH_DIR SHOT_DIR FIND_BROWSER

FIND_BROWSER prints a Chromium path, installing Debian's chromium with
apt-get when none is present; when it exits 77 (no browser can be had)
this test exits 77 too, which ctest reports as skipped.

Chromium loads each page from disk (file://, no network) and --dump-dom
gives the DOM after the page's script ran. Checked:
- the script ran to the end (data-ready on <html>);
- the bundled example draws one bar per scheduled node, before and after;
- the summary's figures equal `simulate --format json` for both files;
- a zoomed view (#view=t0,t1) hides the first view and draws the window
  from the data block, on the example and on a graph large enough to be
  aggregated;
- the timeline and table hover targets carry what the tooltip reads.
Screenshots of the example (whole step and zoomed) go to SHOT_DIR."""

import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import htmlcheck as hc  # noqa: E402

CLI, SRC, SCRATCH, SHOTS, FIND = sys.argv[1:6]
EXAMPLE = os.path.join(SRC, "graphs", "examples", "fsdp_2layer.json")
SKIP = 77


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True)
    if p.returncode != 0:
        fail("commsched %s: exit %d\n%s" % (" ".join(args), p.returncode,
                                            p.stderr[-3000:]))
    return p


def path(name):
    return os.path.join(SCRATCH, name)


def browser():
    p = subprocess.run(["sh", FIND], capture_output=True, text=True)
    if p.returncode == SKIP:
        print("SKIP: no browser:", p.stderr.strip())
        sys.exit(SKIP)
    if p.returncode != 0 or not p.stdout.strip():
        fail("find_browser.sh: exit %d: %s" % (p.returncode, p.stderr))
    return p.stdout.strip()


def chromium(exe, url, *mode):
    """Runs headless Chromium on url with a fresh profile; returns stdout."""
    profile = tempfile.mkdtemp(prefix="commsched-chromium-")
    try:
        p = subprocess.run(
            [exe, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-extensions", "--hide-scrollbars",
             "--user-data-dir=" + profile, "--virtual-time-budget=5000",
             *mode, url],
            capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail("chromium timed out on %s" % url)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    if p.returncode != 0:
        fail("chromium %s: exit %d\n%s" % (url, p.returncode, p.stderr[-2000:]))
    return p.stdout


def url_of(file, fragment=""):
    return "file://" + os.path.abspath(file) + fragment


def dom(url, text):
    """Parses a --dump-dom result and checks the script ran."""
    try:
        root = hc.parse(text)
    except hc.CheckError as e:
        fail("DOM of %s: %s" % (url, e))
    html = root.find("html")
    check(html is not None and html.get("data-ready") == "1",
          "%s: the page's script did not run to the end" % url)
    return root


def group(root, svg_id, cls):
    svg = root.by_id(svg_id)
    check(svg is not None, "no <svg id=%s>" % svg_id)
    gs = [g for g in svg.children if g.tag == "g" and cls in g.classes()]
    check(len(gs) == 1, "%s: %d %s groups" % (svg_id, len(gs), cls))
    return gs[0]


def hidden(e):
    return "display: none" in (e.get("style") or "").replace(":none",
                                                             ": none")


def shot_path(name):
    os.makedirs(SHOTS, exist_ok=True)
    out = os.path.join(SHOTS, name)
    if os.path.exists(out):
        os.unlink(out)
    return out


def check_shot(out):
    check(os.path.exists(out) and os.path.getsize(out) > 10000,
          "no screenshot %s" % out)
    with open(out, "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", "%s is not a PNG" % out)
    print("screenshot:", out)


def main():
    exe = browser()
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    opt, html = path("example.opt.json"), path("example.html")
    run("optimize", EXAMPLE, "-o", opt, "--html", html)
    sim_before = json.loads(run("simulate", "--format", "json",
                                EXAMPLE).stdout)
    sim_after = json.loads(run("simulate", "--format", "json", opt).stdout)
    n = sim_after["nodes"]
    t0, t1 = 0.25 * sim_after["totals"]["makespan_ns"], \
        0.6 * sim_after["totals"]["makespan_ns"]
    frag = "#view=%d,%d" % (t0, t1)
    big, big_html = path("chain.json"), path("chain.html")
    run("generate", "chain", "--nodes", "9000", "-o", big)
    run("report", big, "-o", big_html)
    mk = json.loads(run("simulate", "--format", "json",
                        big).stdout)["totals"]["makespan_ns"]
    big_frag = "#view=%d,%d" % (0.5 * mk, 0.51 * mk)

    # Chromium's start-up dominates: the loads run side by side.
    shots = [shot_path("example.png"), shot_path("example-zoomed.png")]
    jobs = {
        "whole": (url_of(html), ["--dump-dom"]),
        "zoomed": (url_of(html, frag), ["--dump-dom"]),
        "big": (url_of(big_html, big_frag), ["--dump-dom"]),
        "shot": (url_of(html), ["--screenshot=" + shots[0],
                                "--window-size=1400,1000"]),
        "shot-zoomed": (url_of(html, frag), ["--screenshot=" + shots[1],
                                             "--window-size=1400,1000"]),
    }
    with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
        futs = {k: pool.submit(chromium, exe, u, *m)
                for k, (u, m) in jobs.items()}
        out = {k: f.result() for k, f in futs.items()}

    # The whole step: one bar per scheduled node, the simulator's figures.
    root = dom(jobs["whole"][0], out["whole"])
    for r in ("before", "after"):
        b = hc.bars(root, r)
        check(sorted(b) == list(range(n)),
              "%s: %d bars for %d nodes (%r)" % (r, len(b), n, sorted(b)))
    try:
        fig = hc.summary(root)
        hc.compare_summary(fig, "before", sim_before)
        hc.compare_summary(fig, "after", sim_after)
    except hc.CheckError as e:
        fail("summary in the browser: %s" % e)
    check(not hidden(group(root, "cs-tl", "static")),
          "the first view is hidden at the whole step")
    check(not group(root, "cs-tl", "dyn").children,
          "the zoom layer drew at the whole step")
    win = root.by_id("cs-window")
    check(win is not None and "whole step" in win.all_text(),
          "the window label: %r" % (win.all_text() if win else None))
    # Every bar's data-node names a node the tooltip can find.
    data = json.loads(hc.data_block(root))
    names = data["graphs"][0]["name"]
    coll = {c["name"] for c in sim_after["collectives"]}
    drawn = {names[i] for i in hc.bars(root, "after")}
    check(coll <= drawn, "collectives without a bar: %r" % (coll - drawn))

    # Zoomed: the window is drawn by the script from the data block.
    root = dom(jobs["zoomed"][0], out["zoomed"])
    check(hidden(group(root, "cs-tl", "static")),
          "zoomed: the first view is still shown")
    dyn = [e for e in group(root, "cs-tl", "dyn").iter()
           if e.tag == "rect" and "bar" in e.classes()]
    check(dyn, "zoomed: no bars drawn")
    check(all(e.get("data-run") in ("before", "after") and
              0 <= int(e.get("data-node")) < n for e in dyn),
          "zoomed bars without hover data")
    for e in dyn:
        x, w = float(e.get("x")), float(e.get("width"))
        check(data["L"] - 3 <= x and x + w <= data["L"] + data["W"] + 3,
              "zoomed bar outside the plot: x=%r w=%r" % (x, w))
    mem = [e for e in group(root, "cs-mem", "dyn").iter() if e.tag == "path"]
    check(len(mem) == 2, "zoomed memory: %d curves, want 2" % len(mem))

    for s in shots:
        check_shot(s)

    # A graph whose lanes are aggregated at the whole step (report/html
    # checks the bins) draws nodes one by one when zoomed in far enough.
    root = dom(jobs["big"][0], out["big"])
    dyn = [e for e in group(root, "cs-tl", "dyn").iter()
           if e.tag == "rect" and "bar" in e.classes()]
    check(len(dyn) > 20, "large graph zoomed: %d bars" % len(dyn))
    print("ok")


if __name__ == "__main__":
    main()
