#!/usr/bin/env python3
"""The HTML report in a real browser: headless Chromium (python3 stdlib).

usage: browser_report.py COMMSCHED SOURCE_DIR SCRATCH_DIR SHOT_DIR FIND_BROWSER
                         SHARED_DATA

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
- the timeline and table hover targets carry what the tooltip reads;
- in a 1,400 px window (scrollbars shown, as a reader has them) nothing
  scrolls sideways: not the page (document.scrollingElement) and not
  one table, for the example, the widest table (before, both Inductor
  passes' statistics, a measured run) and an imported Chakra trace
  (SHARED_DATA/chakra, whose long kernel names must wrap);
- the limiting-factor columns say something in words, never "None";
- the memory panel of that Chakra trace, which has no sizes, says why
  there is no curve instead of drawing an empty chart.
Screenshots of the example (whole step and zoomed) and, 1,400 px wide
and tall enough for the table, of the widest page and the Chakra page
go to SHOT_DIR."""

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

CLI, SRC, SCRATCH, SHOTS, FIND, DATA = sys.argv[1:7]
CHAKRA = os.path.join(DATA, "chakra", "small_chakra.0.json")
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
    """Runs headless Chromium on url with a fresh profile; returns stdout.
    Scrollbars are hidden unless mode asks for them ("scrollbars")."""
    profile = tempfile.mkdtemp(prefix="commsched-chromium-")
    bars = "scrollbars" in mode
    mode = [m for m in mode if m != "scrollbars"]
    try:
        p = subprocess.run(
            [exe, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-extensions",
             *([] if bars else ["--hide-scrollbars"]),
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


# Appended to a copy of a page, after its own script: records the widths
# the layout came to (the page is otherwise the one the CLI wrote).
MEASURE = """<script>(function () {
  var se = document.scrollingElement, out = {page: [se.scrollWidth, se.clientWidth],
    view: window.innerWidth, tables: []};
  document.querySelectorAll('table').forEach(function (t) {
    var w = t.parentElement;
    out.tables.push({id: t.id, right: t.getBoundingClientRect().right,
      wrap: [w.scrollWidth, w.clientWidth], table: t.scrollWidth});
  });
  document.documentElement.setAttribute('data-measure', JSON.stringify(out));
}());</script>"""


def measured_copy(page):
    with open(page, encoding="utf-8") as f:
        text = f.read()
    check(text.count("</body>") == 1, "%s: no single </body>" % page)
    out = page[:-len(".html")] + ".measure.html"
    with open(out, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", MEASURE + "</body>"))
    return out


def check_width(name, root):
    """Nothing scrolls sideways in the 1,400 px window."""
    m = json.loads(root.find("html").get("data-measure") or "null")
    check(m is not None, "%s: the measuring script did not run" % name)
    check(m["view"] == 1400, "%s: window %r px, not 1400" % (name, m["view"]))
    sw, cw = m["page"]
    check(sw <= cw, "%s: the page scrolls sideways at 1,400 px (%d > %d)"
          % (name, sw, cw))
    check(m["tables"], "%s: no table measured" % name)
    for t in m["tables"]:
        check(t["wrap"][0] <= t["wrap"][1] and t["right"] <= cw + 0.5,
              "%s: table %s scrolls sideways at 1,400 px (%r)"
              % (name, t["id"], t))
    print("%s at 1400 px: page %d/%d, tables %s" % (
        name, sw, cw, ", ".join("%s %d/%d" % (t["id"], t["wrap"][0],
                                              t["wrap"][1])
                                for t in m["tables"])))


def check_factors(name, root):
    """The limiting-factor cells say what limited the node, in words."""
    cells = [e for e in root.iter() if e.tag == "td" and "lf" in e.classes()]
    said = [c for c in cells if c.get("title")]
    check(said, "%s: no limiting factor shown" % name)
    for c in cells:
        t = c.all_text().strip()
        check("None" not in t and "None" not in (c.get("title") or ""),
              "%s: a limiting factor reads %r" % (name, t))
        check(bool(t) == bool(c.get("title")),
              "%s: a limiting-factor cell %r without words" % (name, t))


def check_memory(name, root):
    """The memory panel draws a curve or says why it cannot."""
    sec = root.by_id("memory")
    check(sec is not None, "%s: no memory section" % name)
    text = " ".join(sec.all_text().split())
    paths = [e for e in sec.iter() if e.tag == "path" and
             "nan" not in (e.get("d") or "").lower()]
    check(not any("nan" in " ".join(e.attrs.values()).lower()
                  for e in sec.iter()), "%s: NaN in the memory chart" % name)
    check(paths or "No memory to draw" in text,
          "%s: the memory panel is blank: %r" % (name, text))
    return text


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

    # The widest collectives table: before and after, the statistics of
    # both Inductor passes (collective and wait columns), a measured run.
    inductor = ("decide_global_ordering_of_comms,"
                "reorder_communication_preserving_peak_memory,"
                "sink_waits_iterative")
    ind, sim, wide = path("ind.json"), path("sim.json"), path("wide.html")
    run("optimize", EXAMPLE, "--passes", inductor, "-o", ind)
    with open(sim, "w") as f:
        f.write(run("simulate", "--format", "json", ind).stdout)
    run("report", ind, "--before", EXAMPLE, "--measured", sim, "-o", wide)
    widths = {"example": measured_copy(html), "wide": measured_copy(wide)}
    chakra = None
    if os.path.isfile(CHAKRA):
        cg, chakra = path("chakra.json"), path("chakra.html")
        run("import", "chakra", CHAKRA, "-o", cg)
        run("optimize", cg, "-o", path("chakra.opt.json"), "--html", chakra)
        widths["chakra"] = measured_copy(chakra)
    else:
        print("note: no %s (shared data): the Chakra page is not checked"
              % CHAKRA)

    # Chromium's start-up dominates: the loads run side by side.
    shots = [shot_path("example.png"), shot_path("example-zoomed.png"),
             shot_path("wide-1400.png")]
    jobs = {
        "whole": (url_of(html), ["--dump-dom"]),
        "zoomed": (url_of(html, frag), ["--dump-dom"]),
        "big": (url_of(big_html, big_frag), ["--dump-dom"]),
        "shot": (url_of(html), ["--screenshot=" + shots[0],
                                "--window-size=1400,1000"]),
        "shot-zoomed": (url_of(html, frag), ["--screenshot=" + shots[1],
                                             "--window-size=1400,1000"]),
        "shot-wide": (url_of(wide), ["--screenshot=" + shots[2],
                                     "--window-size=1400,2600",
                                     "scrollbars"]),
    }
    for k, page in widths.items():
        jobs["width-" + k] = (url_of(page), ["--dump-dom",
                                             "--window-size=1400,1000",
                                             "scrollbars"])
    if chakra:
        shots.append(shot_path("chakra-1400.png"))
        jobs["shot-chakra"] = (url_of(chakra), ["--screenshot=" + shots[3],
                                                "--window-size=1400,1600",
                                                "scrollbars"])
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

    # A 1,400 px window: no sideways scrolling, factors in words, and a
    # memory panel that is never blank.
    for k in widths:
        root = dom(jobs["width-" + k][0], out["width-" + k])
        check_width(k, root)
        check_factors(k, root)
        text = check_memory(k, root)
        # A change that rounds to zero reads "0.0%", never "-0.0%" (the
        # Chakra page's unchanged makespan printed "\u22120.0%").
        page = root.all_text()
        check("\u22120.0%" not in page and "-0.0%" not in page
              and "\u22120.0 pt" not in page and "-0.0 pt" not in page,
              "%s: a change of -0.0 on the page" % k)
        if k == "chakra":
            check("0 B" in text and "tensor_size" in text,
                  "chakra: the memory panel does not say why it is empty: %r"
                  % text)

    # A graph whose lanes are aggregated at the whole step (report/html
    # checks the bins) draws nodes one by one when zoomed in far enough.
    root = dom(jobs["big"][0], out["big"])
    dyn = [e for e in group(root, "cs-tl", "dyn").iter()
           if e.tag == "rect" and "bar" in e.classes()]
    check(len(dyn) > 20, "large graph zoomed: %d bars" % len(dyn))
    print("ok")


if __name__ == "__main__":
    main()
