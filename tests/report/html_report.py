#!/usr/bin/env python3
"""CLI tests of the HTML report without a browser (python3 stdlib only).

usage: html_report.py COMMSCHED SOURCE_DIR SCRATCH_DIR

`commsched report` and `optimize --html`: every page and SVG is well formed
and refers to nothing outside itself; the bundled example draws one bar per
scheduled node, before and after; the summary carries the figures of
`simulate --format json`; pass statistics, the budget line, measured runs
(a simulation report, the MPI runtime's shape with ranks) and hostile names
appear as they should; a large graph is aggregated and its size bounded;
bad input is a located error with exit status 2 and leaves no file."""

import json
import math
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import htmlcheck as hc  # noqa: E402

CLI, SRC, SCRATCH = sys.argv[1], sys.argv[2], sys.argv[3]
EXAMPLE = os.path.join(SRC, "graphs", "examples", "fsdp_2layer.json")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(*args, code=0):
    p = subprocess.run([CLI, *args], capture_output=True, text=True)
    if p.returncode != code:
        fail("commsched %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s" %
             (" ".join(args), p.returncode, code, p.stdout[-3000:],
              p.stderr[-3000:]))
    return p


def path(name):
    return os.path.join(SCRATCH, name)


def write(name, text):
    with open(path(name), "w") as f:
        f.write(text)
    return path(name)


def page(file):
    """Parses and checks a page; returns (tree, data block, text)."""
    with open(file, encoding="utf-8") as f:
        text = f.read()
    try:
        root = hc.parse(text)
        hc.no_external(text)
        data = json.loads(hc.data_block(root))
    except (hc.CheckError, ValueError) as e:
        fail("%s: %s" % (file, e))
    return root, data, text


def simulate(file):
    return json.loads(run("simulate", "--format", "json", file).stdout)


def check(cond, msg):
    if not cond:
        fail(msg)


def leftovers(directory):
    return [f for f in os.listdir(directory) if ".tmp" in f]


def main():
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)

    # ---- optimize --html on the bundled example --------------------------
    opt, html = path("ex.opt.json"), path("ex.html")
    run("optimize", EXAMPLE, "-o", opt, "--html", html)
    root, data, text = page(html)
    n = simulate(EXAMPLE)["nodes"]
    for r in ("before", "after"):
        b = hc.bars(root, r)
        check(sorted(b) == list(range(n)),
              "%s: want one bar per node 0..%d, got %r" % (r, n - 1, sorted(b)))
    try:
        fig = hc.summary(root)
        hc.compare_summary(fig, "before", simulate(EXAMPLE))
        hc.compare_summary(fig, "after", simulate(opt))
    except hc.CheckError as e:
        fail("optimize --html summary: %s" % e)
    check(data["graphs"][0]["n"] == n and data["graphs"][0]["sel"] is None,
          "data block graph table: %r" % data["graphs"][0].get("n"))
    check([r["key"] for r in data["runs"]] == ["before", "after"],
          "runs in the data block: %r" % [r["key"] for r in data["runs"]])
    for r in data["runs"]:
        for k in ("lane", "s", "d", "q", "x"):
            check(len(r[k]) == n, "run %s: %s has %d entries" %
                  (r["key"], k, len(r[k])))
        check(r["mem"] and len(r["mem"]["t"]) == len(r["mem"]["b"]) > 1,
              "run %s: no memory curve" % r["key"])
    # Pass statistics: every collective row has moves and a limiting factor.
    tab = root.by_id("cs-collectives")
    check(tab is not None, "no collectives table")
    heads = [th.all_text() for th in tab.find_all("th")]
    for h in ("limiting factor", "moves", "exposed before", "exposed after"):
        check(h in heads, "collectives table lacks %r: %r" % (h, heads))
    rows = tab.find_all("tr")[1:]
    check(len(rows) == 7, "%d collective rows, want 7" % len(rows))
    # The budget of the default pipeline (the overlap pass), on the curve
    # over simulated time: the before order's peak over time x
    # overlap_peak_budget (1.0, its default; the pass keeps both peaks).
    sim_in = json.loads(run("simulate", "--format", "json", EXAMPLE).stdout)
    sched = json.load(open(opt))["schedule"]
    line = root.find("line", cls="budget")
    check(line is not None, "no budget line")
    want = math.floor(sim_in["memory"]["peak_simulated"] * 1.0)
    check(int(line.get("data-value")) == want,
          "budget %s, want %d" % (line.get("data-value"), want))
    check("overlap_peak_budget" in text,
          "the page does not say how the budget was derived")
    # A knob set on the command line moves the line.
    run("optimize", EXAMPLE, "-o", path("ex5.opt.json"), "--html",
        path("ex5.html"), "--set", "overlap_peak_budget=1.5")
    root5, _, _ = page(path("ex5.html"))
    check(int(root5.find("line", cls="budget").get("data-value")) ==
          math.floor(sim_in["memory"]["peak_simulated"] * 1.5),
          "--set overlap_peak_budget=1.5 did not move the budget line")
    want5 = math.floor(sched["before"]["peak_memory"] * 1.5)
    # Inductor's pipeline: before peak x (1 + its per-pass budget).
    inductor = ("decide_global_ordering_of_comms,"
                "reorder_communication_preserving_peak_memory,"
                "sink_waits_iterative,"
                "reorder_communication_preserving_peak_memory")
    run("optimize", EXAMPLE, "--passes", inductor, "-o",
        path("ex7.opt.json"), "--html", path("ex7.html"), "--set",
        "reorder_iterative_peak_memory_budget=0.5")
    root7, _, text7 = page(path("ex7.html"))
    check(int(root7.find("line", cls="budget").get("data-value")) == want5,
          "--set budget=0.5 did not move Inductor's budget line")
    check("reorder_iterative_peak_memory_budget" in text7,
          "the page does not say how Inductor's budget was derived")
    rep7 = path("rep7.html")
    run("report", path("ex7.opt.json"), "-o", rep7)
    check(int(page(rep7)[0].find("line", cls="budget").get("data-value")) ==
          want5, "report did not take Inductor's recorded budget")

    # ---- commsched report ---------------------------------------------------
    rep = path("rep.html")
    run("report", opt, "--before", EXAMPLE, "-o", rep)
    root2, data2, _ = page(rep)
    check(sorted(hc.bars(root2, "before")) == list(range(n)),
          "report --before: before bars")
    try:
        hc.compare_summary(hc.summary(root2), "after", simulate(opt))
        hc.compare_summary(hc.summary(root2), "before", simulate(EXAMPLE))
    except hc.CheckError as e:
        fail("report summary: %s" % e)
    check(len(data2["graphs"]) == 1,
          "the before file's nodes should share the after graph's table")
    check(root2.find("line", cls="budget") is not None,
          "report: no budget line from the schedule object")
    # Without --before the schedule object still gives the budget; the
    # summary has the after column only.
    run("report", opt, "-o", path("after-only.html"))
    root3, data3, _ = page(path("after-only.html"))
    check(hc.bars(root3, "before") == [] if root3.by_id("cs-tl") else False,
          "after-only page has before bars")
    check([r["key"] for r in data3["runs"]] == ["after"], "after-only runs")
    check(root3.find("line", cls="budget") is not None,
          "after-only: the schedule object's before peak gives the budget")
    # report reads the budget optimize recorded in schedule.knobs, so the
    # line matches the run that made the file without --budget.
    rep5 = path("rep5.html")
    run("report", path("ex5.opt.json"), "-o", rep5)
    root6, _, _ = page(rep5)
    check(int(root6.find("line", cls="budget").get("data-value")) == want5,
          "report did not take the budget from the file's recorded knobs")
    # A plain graph file: no pipeline, no before, no budget line.
    run("report", EXAMPLE, "-o", path("plain.html"))
    root4, _, text4 = page(path("plain.html"))
    check(root4.find("line", cls="budget") is None, "plain file: budget line")
    check("No budget line" in text4, "plain file: no note about the budget")
    run("report", opt, "--before", EXAMPLE, "--budget", "none", "-o",
        path("nobudget.html"))
    check(page(path("nobudget.html"))[0].find("line", cls="budget") is None,
          "--budget none drew a line")
    # To standard output.
    p = run("report", opt)
    check(p.stdout.startswith("<!DOCTYPE html>"), "report to stdout")

    # ---- SVG -------------------------------------------------------------------
    svg = path("ex.svg")
    run("report", opt, "--before", EXAMPLE, "--format", "svg", "-o", svg)
    svg_text = open(svg, encoding="utf-8").read()
    try:
        hc.no_external(svg_text, standalone_svg=True)
        tree = ET.fromstring(svg_text)
    except (hc.CheckError, ET.ParseError) as e:
        fail("svg: %s" % e)
    ns = "{http://www.w3.org/2000/svg}"
    check(tree.tag == ns + "svg", "svg root is %r" % tree.tag)
    svg_bars = [e for e in tree.iter(ns + "rect")
                if "bar" in (e.get("class") or "").split()]
    check(len(svg_bars) == 2 * n, "svg: %d bars, want %d" % (len(svg_bars),
                                                             2 * n))
    check(all(e.find(ns + "title") is not None for e in svg_bars),
          "svg bars without a <title>")

    # ---- measured runs ------------------------------------------------------
    # A simulation report is a measured run with zero error.
    sim_after = path("sim-after.json")
    with open(sim_after, "w") as f:
        f.write(run("simulate", "--format", "json", opt).stdout)
    run("report", opt, "--before", EXAMPLE, "--measured", sim_after, "-o",
        path("meas.html"))
    rootm, datam, _ = page(path("meas.html"))
    mt = rootm.by_id("cs-measured")
    check(mt is not None, "no measured table")
    for tr in mt.find_all("tr")[1:]:
        cells = tr.find_all("td")
        if cells and cells[0].get("data-value") and cells[1].get("data-value"):
            a, b = float(cells[0].get("data-value")), float(
                cells[1].get("data-value"))
            check(abs(a - b) <= 1e-6 * max(1, abs(a)),
                  "measured %s: %r vs predicted %r" % (tr.get("data-key"), b, a))
    check([r["key"] for r in datam["runs"]] == ["before", "after", "measured"],
          "measured run missing from the data block")
    check(len(hc.bars(rootm, "measured")) == 7,
          "a simulation report times the 7 collectives")
    # The MPI runtime's shape: every node, kinds, extra keys, ranks with
    # their own totals and peaks; times from a real clock.
    sim = simulate(opt)
    nodes = []
    g = json.load(open(opt))
    t = 0.0
    for nd in g["nodes"]:
        d = 5000.0 if nd["kind"] != "wait" else 1200.0
        row = {"name": nd["name"], "kind": nd["kind"], "start_ns": t,
               "end_ns": t + d}
        if nd["kind"] == "collective":
            row.update(issue_ns=t, exposed_ns=100.0)
        nodes.append(row)
        t += d
    runtime = {
        "format": "commsched-measured", "version": 1,
        "graph": g["name"], "node_count": n, "runtime": "mpi",
        "library": "Open MPI",
        "options": {"compute": "sleep", "time_scale": 1, "size_scale": 0.01,
                    "iters": 3},
        "prediction": {"source": "calibrated", "device": "h100",
                       "totals": {"makespan_ns": t * 1.1, "compute_ns": 1,
                                  "comm_ns": 2, "exposed_ns": 3,
                                  "overlap": 0.5},
                       "lower_bound_ns": 1},
        "totals": {"makespan_ns": t, "compute_ns": None, "comm_ns": 35000,
                   "exposed_ns": 700, "overlap": 0.98},
        "step": {"median_ns": t},
        "memory": {"peak": 123456789, "per_rank": [1, 2]},
        "ranks": [{"rank": 0, "totals": {"makespan_ns": t * 0.99},
                   "peak_memory": 123456789},
                  {"rank": 1, "totals": {"makespan_ns": t},
                   "peak_memory": 123456000}],
        "nodes": nodes,
        "collectives": [dict(r, op="x", predicted_ns=1.0) for r in nodes
                        if r["kind"] == "collective"],
        "wall_s": 1.5}
    mpi = write("mpi.json", json.dumps(runtime))
    run("report", opt, "--measured", mpi, "-o", path("mpi.html"))
    rootr, datar, textr = page(path("mpi.html"))
    check(sorted(hc.bars(rootr, "measured")) == list(range(n)),
          "the runtime's run should draw every node")
    ranks = rootr.by_id("cs-ranks")
    check(ranks is not None and len(ranks.find_all("tr")) == 3,
          "per-rank table")
    check("117.74 MiB" in textr, "the measured peak memory is not shown")
    check("the run's prediction (calibrated)" in textr and
          "size scale 0.01" in textr,
          "the run's own prediction and options are not shown")
    # A run that made no prediction writes "totals": null there.
    nopred = dict(runtime, prediction={"source": "none", "totals": None})
    run("report", opt, "--measured", write("nopred.json", json.dumps(nopred)),
        "-o", path("nopred.html"))
    check("error vs the run" not in page(path("nopred.html"))[2],
          "a run without a prediction got its column")
    # Errors name the place, exit 2, and leave no file behind.
    bad = dict(runtime, nodes=[{"name": "nope", "start_ns": 0, "end_ns": 1}])
    badf = write("bad-node.json", json.dumps(bad))
    out = path("bad.html")
    p = run("report", opt, "--measured", badf, "-o", out, code=2)
    check("bad-node.json: nodes[0].name: no node \"nope\"" in p.stderr,
          "unknown node error: %r" % p.stderr)
    check(not os.path.exists(out) and not leftovers(SCRATCH),
          "a failed report left a file")
    bad = dict(runtime, nodes=[{"name": nodes[0]["name"], "start_ns": 5,
                                "end_ns": 1}])
    p = run("report", opt, "--measured", write("bad-end.json",
                                              json.dumps(bad)), code=2)
    check("nodes[0].end_ns: " in p.stderr, "end before start: %r" % p.stderr)
    p = run("report", opt, "--measured",
            write("bad-syntax.json", '{"format": "commsched-measured",\n x}'),
            code=2)
    check("bad-syntax.json:2:" in p.stderr, "syntax error: %r" % p.stderr)
    p = run("report", opt, "--measured",
            write("bad-format.json", '{"format": "other"}'), code=2)
    check("bad-format.json: format: " in p.stderr, "format: %r" % p.stderr)
    run("report", opt, "--budget", "lots", code=2)
    run("report", opt, "--format", "pdf", code=2)
    run("report", path("missing.json"), code=2)
    run("report", code=2)
    run("optimize", EXAMPLE, "-o", path("x.json"), "--html", "-", code=2)
    p = run("report", opt, "-o", os.path.join(SCRATCH, "no", "such", "dir.html"),
            code=2)

    # ---- hostile names ---------------------------------------------------------
    evil = {
        "format": "commsched-graph", "version": 1,
        "name": "</script><b>x</b> & 'q' \"//evil\" \u00e9\u2260",
        "groups": [{"name": "dp</g>//", "size": 4}],
        "inputs": [{"name": "w", "size": 1024}],
        "outputs": ["y"],
        "nodes": [
            {"name": "ag</script>", "kind": "collective", "op": "all_gather",
             "group": "dp</g>//", "inputs": ["w"],
             "outputs": [{"name": "ag_out", "size": 4096}],
             "runtime_ns": 1000},
            {"name": "wait&<>\"'", "kind": "wait", "inputs": ["ag_out"],
             "outputs": [{"name": "w_full", "alias_of": "ag_out"}]},
            {"name": "mm//http://x", "kind": "compute", "op": "a//b<c>",
             "inputs": ["w_full"], "outputs": [{"name": "y", "size": 64}],
             "runtime_ns": 3000}]}
    ev = write("evil.json", json.dumps(evil))
    run("report", ev, "-o", path("evil.html"))
    roote, datae, texte = page(path("evil.html"))
    names = datae["graphs"][0]["name"]
    check(names == [x["name"] for x in evil["nodes"]],
          "names do not round-trip through the data block: %r" % names)
    check(roote.find("title").all_text() == "commsched: " + evil["name"],
          "title: %r" % roote.find("title").all_text())
    run("report", ev, "--format", "svg", "-o", path("evil.svg"))
    try:
        svg_text = open(path("evil.svg"), encoding="utf-8").read()
        hc.no_external(svg_text, standalone_svg=True)
        ET.fromstring(svg_text)
    except (hc.CheckError, ET.ParseError) as e:
        fail("evil.svg: %s" % e)

    # ---- a large graph: aggregated, bounded -----------------------------------
    # 9000 nodes: both lanes hold more than 2000 nodes, all narrower than
    # 3 px at the whole step. The file's own order is enough (no passes).
    big, big_html = path("chain.json"), path("chain.html")
    run("generate", "chain", "--nodes", "9000", "-o", big)
    run("report", big, "-o", big_html)
    rootb, datab, textb = page(big_html)
    nb = datab["graphs"][0]["n"]
    static_bars = hc.bars(rootb, "after")
    bins = [e for e in rootb.by_id("cs-tl").iter()
            if e.tag == "rect" and "bn" in e.classes()]
    check(len(static_bars) < nb // 4 and bins,
          "%d nodes: %d static bars, %d bins; the busy lanes should be "
          "aggregated" % (nb, len(static_bars), len(bins)))
    check(all(int(b.get("data-n")) >= 1 for b in bins), "bins without counts")
    check(datab["graphs"][0]["sel"] is None and all(
        r["bins"] is None for r in datab["runs"]),
        "below max_bars every node goes to the page")
    size = os.path.getsize(big_html)
    print("chain %d nodes: page %d bytes, %d static bars, %d bins" %
          (nb, size, len(static_bars), len(bins)))
    check(size < 1200 * nb, "page of %d bytes for %d nodes" % (size, nb))
    # Above --max-bars: the longest nodes and per-lane bins.
    run("report", big, "--before", big, "--max-bars", "500", "--rows",
        "50", "-o", path("chain-capped.html"))
    _, datac, _ = page(path("chain-capped.html"))
    g0 = datac["graphs"][0]
    check(g0["sel"] is not None and len(g0["sel"]) == 500 and
          len(g0["name"]) == 500, "--max-bars 500: %r" % len(g0["sel"] or []))
    check(g0["sel"] == sorted(g0["sel"]), "selection not in node order")
    for r in datac["runs"]:
        check(r["bins"] and len(r["bins"]["busy"]) == len(r["lanes"]),
              "capped run %s without per-lane bins" % r["key"])
        check(len(r["s"]) == 500, "capped run %s sends %d nodes" %
              (r["key"], len(r["s"])))
    rowsc = page(path("chain-capped.html"))[0].by_id(
        "cs-collectives").find_all("tr")
    check(len(rowsc) == 51, "--rows 50 gave %d rows" % (len(rowsc) - 1))
    print("ok")


if __name__ == "__main__":
    main()
