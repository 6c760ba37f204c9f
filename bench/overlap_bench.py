#!/usr/bin/env python3
"""commsched overlap benchmark: schedule quality at equal memory budgets.

For every workload (the corpus under graphs/ and generated chains) it runs,
through the CLI:

  input                    the file's own order
  inductor b=X             Inductor's recommended pipeline (optimize's
                           former default: decide_global_ordering_of_comms,
                           RCPPM, sink_waits_iterative, RCPPM) with both
                           per-pass peak budgets at X (0, 0.05, 0.1, 0.2)
  raise_comms,sink_waits   the heap scheduler pair
  reorder_compute_for_overlap
  overlap B=Y              the overlap pass with overlap_peak_budget=Y
                           (1.0, 1.25, 1.5, inf)
  tune B=Y                 `commsched tune --budget Y` (best pipeline found)
  torch-fx-overlap         on graphs/torch only: torch 2.13's FX overlap
                           scheduler's order of the same program
                           (anchors/*.torch-fx-overlap.order)

and reports, per memory budget (1.0, 1.25, 1.5 and unbounded x the input
order's per-step peak): the makespan, the share of the gap to the lower
bound closed, (input - x) / (input - stream bound), and the peak, for the
input order, the best anchor that fits the budget (the Inductor variants,
raise_comms,sink_waits, reorder_compute_for_overlap, simple_overlap,
the bucketed ones, torch-fx-overlap), overlap and tune.
The gap is measured against the stream bound (docs/REPORTS.md, "Lower
bound"), which no order of the graph can beat; the old bound (the input
order's compute/comm loads and critical path) is shown beside it, with
the figures measured against it, so the change of yardstick hides
nothing.

Prints the tables, writes JSON (--json), and with --update-doc rewrites
its own section of docs/PERFORMANCE.md (between its markers). Standard
library only. Usage: overlap_bench.py --cli build/release/tools/commsched
"""
import argparse
import concurrent.futures
import glob
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

from benchdoc import cpu_name, replace_block

INDUCTOR = ("decide_global_ordering_of_comms,"
            "reorder_communication_preserving_peak_memory,"
            "sink_waits_iterative,"
            "reorder_communication_preserving_peak_memory")
INDUCTOR_BUDGETS = ["0", "0.05", "0.1", "0.2"]
BUDGETS = ["1.0", "1.25", "1.5", "inf"]


# PyTorch's 2026 defaults (pull requests 184225/184235: simple_overlap;
# 179935: pre-bucketing FSDP collectives to the smallest size that
# saturates the group's bandwidth, clipped to [50, 2000] MB).
SIMPLE = "simple_overlap"
BUCKETED_SIMPLE = "bucket_all_gather,bucket_reduce_scatter,simple_overlap"
SATURATION = 0.9          # target efficiency of compute_min_saturation_bytes
PRE_BUCKET_CLIP_MB = (50.0, 2000.0)


def saturation_cap_mb(cli, graph):
    """The pre-bucketing cap (PyTorch PR 179935) for graph's largest
    all-gather group on the default device: the smallest all-gather whose
    bandwidth term is SATURATION of its modelled time, in MiB, clipped.
    One `commsched estimate` call over a geometric ladder of sizes."""
    with open(graph) as fh:
        g = json.load(fh)
    groups = {x["name"]: x for x in g.get("groups", [])}
    use = {}
    for n in g.get("nodes", []):
        if n.get("kind") == "collective" and n.get("op") == "all_gather":
            use[n["group"]] = use.get(n["group"], 0) + 1
    if not use:
        return None
    grp = dict(groups[max(use, key=lambda k: (use[k], k))])
    grp["name"] = "g"
    # all-gather outputs of 1 MiB-8 GiB, each a whole number of shards (an
    # all-gather writes group size x what it reads: docs/FORMAT.md)
    k = max(int(grp.get("size", 1)), 1)
    sizes = [int(2 ** (20 + i / 16)) // k * k for i in range(0, 16 * 13)]
    nodes, outs, ins = [], [], []
    for i, b in enumerate(sizes):
        nodes.append({"name": "ag%d" % i, "kind": "collective",
                      "op": "all_gather", "group": "g",
                      "inputs": ["x%d" % i],
                      "outputs": [{"name": "o%d" % i, "size": b}]})
        ins.append({"name": "x%d" % i, "size": b // k})
        outs.append("o%d" % i)
    probe = {"format": "commsched-graph", "version": 1, "groups": [grp],
             "inputs": ins, "outputs": outs, "nodes": nodes}
    p = subprocess.run([cli, "estimate", "--format", "json", "-"],
                       input=json.dumps(probe).encode(), check=True,
                       stdout=subprocess.PIPE)
    est = json.loads(p.stdout)["nodes"]
    cap = sizes[-1]
    for b, e in zip(sizes, est):
        if e["runtime_ns"] > 0 and e["bandwidth_ns"] >= SATURATION * e["runtime_ns"]:
            cap = b
            break
    lo, hi = PRE_BUCKET_CLIP_MB
    return max(lo, min(hi, cap / (1024.0 * 1024.0)))


def anchors(cli=None, graph=None):
    """(name, passes, --set values) of every anchor schedule. With cli and
    graph, the pre-bucketed anchor gets the graph's saturation cap."""
    out = [("inductor b=%s" % b, INDUCTOR,
            ["reorder_iterative_peak_memory_budget=%s" % b,
             "sink_iterative_peak_memory_budget=%s" % b])
           for b in INDUCTOR_BUDGETS]
    out.append(("raise_comms,sink_waits", "raise_comms,sink_waits", []))
    out.append(("reorder_compute_for_overlap", "reorder_compute_for_overlap",
                []))
    out.append(("simple_overlap", SIMPLE, []))
    out.append(("500MiB buckets+simple_overlap", BUCKETED_SIMPLE,
                ["bucket_cap_mb=500"]))
    # What experts write by hand (SimpleFSDP's transformer-block bucketing,
    # TBB): a bucket per block, prefetched one block ahead.
    out.append(("transformer blocks (TBB)", "bucket_transformer_blocks", []))
    cap = saturation_cap_mb(cli, graph) if cli and graph else None
    if cap is not None:
        out.append(("pre-bucketed+simple_overlap", BUCKETED_SIMPLE,
                    ["bucket_cap_mb=%.6g" % cap]))
    order = torch_order_file(graph) if graph else None
    if order:
        out.append((TORCH_FX, "@order:" + order, []))
    for name, path in anchor_graphs(graph) if graph else ():
        out.append((name, "@graph:" + path, []))
    return out


# torch 2.13's FX overlap scheduler on a graph a real torch.compile made
# (graphs/torch): its order, computed by graphs/torch/make_torch_graphs.py
# under torch, lies beside the graph as anchors/<graph>.torch-fx-overlap.order
# (node names, one a line; '#' lines are comments). The bench itself needs
# no torch: it only applies that order.
TORCH_FX = "torch-fx-overlap"
TORCH_FX_BUCKETED = "torch-fx-bucketed"


def torch_order_file(graph):
    d, base = os.path.split(graph)
    path = os.path.join(d, "anchors", base[:-5] + ".torch-fx-overlap.order")
    return path if base.endswith(".json") and os.path.exists(path) else None


# The same program compiled another way (graphs/torch/make_torch_graphs.py
# stores it as anchors/<graph>.<name>.json): commsched at torch's FX level
# (commsched-fx: post_grad_custom_post_pass), and torch 2.13's FX overlap
# scheduler with its collective bucketing on (torch-fx-bucketed), whose
# merged collectives are real scheduler nodes there. Inductor names the
# nodes anew (and bucketing changes them), so each is a graph of its own,
# simulated as it stands. commsched-fx, being commsched's, is a row of the
# tables but not among the anchors (ANCHOR_NAMES) that overlap and tune
# are judged against.
GRAPH_ANCHORS = ("commsched-fx", TORCH_FX_BUCKETED)


def anchor_graphs(graph):
    d, base = os.path.split(graph)
    out = []
    for name in GRAPH_ANCHORS:
        path = os.path.join(d, "anchors", base[:-5] + "." + name + ".json")
        if base.endswith(".json") and os.path.exists(path):
            out.append((name, path))
    return out


def apply_order(graph, order_path, out):
    """Writes graph with its nodes in the order order_path lists (every
    node exactly once) to out, less the after_fake edges that order breaks
    (as `optimize` drops them: Inductor derives them from the order it
    lowers in, commsched.fx says more); the simulator checks the rest is
    topological."""
    with open(graph) as fh:
        g = json.load(fh)
    with open(order_path) as fh:
        names = [x.strip() for x in fh if x.strip() and
                 not x.startswith("#")]
    by = {n["name"]: n for n in g["nodes"]}
    if sorted(names) != sorted(by):
        raise ValueError("%s does not list each node of %s once"
                         % (order_path, graph))
    g["nodes"] = [by[n] for n in names]
    pos = {n: k for k, n in enumerate(names)}
    for n in g["nodes"]:
        if "after_fake" in n:
            n["after_fake"] = [d for d in n["after_fake"]
                               if pos[d] < pos[n["name"]]]
    with open(out, "w") as fh:
        json.dump(g, fh)


ANCHOR_NAMES = {a[0] for a in anchors()} | {"pre-bucketed+simple_overlap",
                                            TORCH_FX, TORCH_FX_BUCKETED}


def simulate(cli, path):
    p = subprocess.run([cli, "simulate", "--format", "json", path],
                       check=True, stdout=subprocess.PIPE)
    d = json.loads(p.stdout)
    t, m, lb = d["totals"], d["memory"], d["lower_bound"]
    return {"nodes": d["nodes"], "makespan_ns": t["makespan_ns"],
            "lower_bound_ns": t["lower_bound_ns"],
            "old_bound_ns": max(lb["compute_stream_ns"],
                                lb["busiest_comm_stream_ns"],
                                lb["critical_path_ns"]),
            "stream_bound_ns": lb["stream_bound_ns"],
            "peak": m["peak_per_step"], "peak_time": m["peak_simulated"]}


def run_case(cli, graph, name, passes, sets, tmp, extra=None):
    """One pipeline (or 'input', or tune) on one graph: its figures."""
    out = os.path.join(tmp, "%d.json" % abs(hash((graph, name))))
    t0 = time.perf_counter()
    if passes is None:
        target = graph
    elif passes.startswith("@order:"):
        apply_order(graph, passes[len("@order:"):], out)
        target = out
    elif passes.startswith("@graph:"):
        target = passes[len("@graph:"):]
    elif passes == "@tune":
        cmd = [cli, "tune", graph, "--format", "json", "-o", out] + extra
        p = subprocess.run(cmd, check=True, stdout=subprocess.PIPE)
        target = out
        b = json.loads(p.stdout).get("best") or {}
        best = b.get("passes", "") + (" | " + b["knobs"] if b.get("knobs")
                                      else "")
    else:
        cmd = [cli, "optimize", graph, "--passes", passes, "-o", out]
        for s in sets:
            cmd += ["--set", s]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        target = out
    wall = time.perf_counter() - t0
    r = simulate(cli, target)
    r["wall_s"] = wall
    if passes == "@tune":
        r["tune_best"] = best
    if target == out:
        os.remove(target)
    return name, r


def workloads(root):
    files = []
    for sub in ("examples", "astra", "chakra", "generated", "independent",
                "torch", "xla"):
        files += sorted(f for f in glob.glob(os.path.join(root, sub, "*.json"))
                        if os.path.basename(f) != "provenance.json")
    return files


def gap(inp, x, bound="stream_bound_ns"):
    d = inp["makespan_ns"] - inp[bound]
    if d <= 0:
        return None
    return (inp["makespan_ns"] - x["makespan_ns"]) / d


def fmt_ns(ns):
    if ns >= 1e9:
        return "%.3f s" % (ns / 1e9)
    if ns >= 1e6:
        return "%.2f ms" % (ns / 1e6)
    if ns >= 1e3:
        return "%.1f us" % (ns / 1e3)
    return "%.0f ns" % ns


def fmt_gap(g):
    return "-" if g is None else "%.1f%%" % (100 * g)


def budget_value(b):
    return math.inf if b == "inf" else float(b)


def summarize(label, res):
    """Rows for one workload: per budget, input / best anchor / overlap /
    tune."""
    inp = res["input"]
    rows = []
    for b in BUDGETS:
        # both peaks, as overlap and tune keep them (issue 42)
        lim = math.inf if b == "inf" else budget_value(b) * inp["peak"]
        tlim = (math.inf if b == "inf" or "peak_time" not in inp else
                budget_value(b) * inp["peak_time"])
        fit = [(n, r) for n, r in res.items()
               if n in ANCHOR_NAMES and r["peak"] <= lim and
               r.get("peak_time", 0) <= tlim]
        best = min(fit, key=lambda nr: (nr[1]["makespan_ns"], nr[0]),
                   default=(None, None))
        ov = res.get("overlap B=%s" % b)
        tu = res.get("tune B=%s" % b)
        rows.append({
            "workload": label, "budget": b,
            "input_ms": inp["makespan_ns"], "lb": inp["stream_bound_ns"],
            "lb_old": inp["old_bound_ns"],
            "anchor": best[0], "anchor_ms": best[1]["makespan_ns"]
            if best[1] else None,
            "anchor_gap": gap(inp, best[1]) if best[1] else None,
            "anchor_peak": best[1]["peak"] / inp["peak"]
            if best[1] and inp["peak"] else None,
            "overlap_ms": ov["makespan_ns"] if ov else None,
            "overlap_gap": gap(inp, ov) if ov else None,
            "overlap_peak": ov["peak"] / inp["peak"]
            if ov and inp["peak"] else None,
            "tune_ms": tu["makespan_ns"] if tu else None,
            "tune_gap": gap(inp, tu) if tu else None,
            "tune_peak": tu["peak"] / inp["peak"]
            if tu and inp["peak"] else None,
            "tune_best": tu.get("tune_best") if tu else None,
            "anchor_gap_old": gap(inp, best[1], "old_bound_ns")
            if best[1] else None,
            "overlap_gap_old": gap(inp, ov, "old_bound_ns") if ov else None,
            "tune_gap_old": gap(inp, tu, "old_bound_ns") if tu else None,
        })
    return rows


def verdict(r):
    if r["overlap_ms"] is None:
        return ""
    if r["anchor_ms"] is None:
        return "only"
    a, o = r["anchor_ms"], r["overlap_ms"]
    if o < a * (1 - 1e-9):
        return "faster"
    if o <= a * (1 + 1e-9):
        return "equal"
    return "SLOWER"


def table(rows):
    head = ["workload", "budget", "input", "old bound", "stream bound",
            "best anchor (fits)",
            "anchor", "gap", "peak", "overlap", "gap", "peak", "tune", "gap",
            "peak", "overlap vs anchor"]
    lines = [head]
    last = None
    for r in rows:
        w = r["workload"] if r["workload"] != last else ""
        last = r["workload"]
        pk = lambda v: "-" if v is None else "%.2fx" % v
        lines.append([
            w, r["budget"] if r["budget"] != "inf" else "inf",
            fmt_ns(r["input_ms"]) if w else "",
            fmt_ns(r["lb_old"]) if w else "", fmt_ns(r["lb"]) if w else "",
            r["anchor"] or "(none fits)",
            fmt_ns(r["anchor_ms"]) if r["anchor_ms"] is not None else "-",
            fmt_gap(r["anchor_gap"]), pk(r["anchor_peak"]),
            fmt_ns(r["overlap_ms"]) if r["overlap_ms"] is not None else "-",
            fmt_gap(r["overlap_gap"]), pk(r["overlap_peak"]),
            fmt_ns(r["tune_ms"]) if r["tune_ms"] is not None else "-",
            fmt_gap(r["tune_gap"]), pk(r["tune_peak"]), verdict(r)])
    return lines


def totals_line(rows):
    v = [verdict(r) for r in rows]
    line = ("overlap against the fastest anchor that fits the same budget: "
            "%d faster, %d equal, %d slower, %d where no anchor fits (%d "
            "workload x budget cells)" % (v.count("faster"), v.count("equal"),
                                          v.count("SLOWER"), v.count("only"),
                                          len(rows)))
    # Issue 23's yardsticks: among the cells where the best anchor leaves
    # part of the gap open, how often overlap and tune beat it, and the mean
    # share of the gap each closes (capped at 1: bucketing changes the graph
    # and can pass the input's lower bound).
    # Against the stream bound, then (for comparison) the old one.
    for suffix, what in (("", "stream bound"), ("_old", "old bound")):
        open_cells = [r for r in rows if r["anchor_gap" + suffix] is not None
                      and r["anchor_gap" + suffix] < 0.999]
        if not open_cells:
            continue

        def faster(key):
            return sum(1 for r in open_cells if r[key] is not None
                       and r[key] < r["anchor_ms"] * (1 - 1e-9))

        def mean_gap(key):
            g = [min(r[key + suffix], 1.0) for r in open_cells
                 if r[key + suffix] is not None]
            return sum(g) / len(g) if g else float("nan")
        line += (
            ".\nAgainst the %s, where the best anchor leaves part of the gap "
            "open (%d cells): overlap faster in %d, tune faster in %d; mean "
            "gap closed: best anchor %.3f, overlap %.3f, tune %.3f" % (
                what, len(open_cells), faster("overlap_ms"),
                faster("tune_ms"), mean_gap("anchor_gap"),
                mean_gap("overlap_gap"), mean_gap("tune_gap")))
    return line


def text_table(lines):
    widths = [max(len(str(l[i])) for l in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(str(c).ljust(w) if i in (0, 4) else
                               str(c).rjust(w)
                               for i, (c, w) in enumerate(zip(l, widths)))
                     for l in lines)


def md_table(lines):
    out = ["| " + " | ".join(lines[0]) + " |",
           "|" + "|".join("---" for _ in lines[0]) + "|"]
    for l in lines[1:]:
        out.append("| " + " | ".join(str(c) for c in l) + " |")
    return "\n".join(out)


def machine_line():
    cpu = cpu_name()
    return "%s, %d cores, %s %s" % (cpu, os.cpu_count(), platform.system(),
                                    platform.release())


BEGIN = "<!-- overlap_bench.py: begin (generated; edits here are lost) -->"
END = "<!-- overlap_bench.py: end -->"


def update_doc(path, lines, totals, command, load=None):
    parts = [BEGIN, "", "## Benchmark: overlap and tune at equal memory "
             "(make bench)", "", "```sh", command, "```", "",
             "Machine: %s; %s. Simulated on the h100 profile, NCCL model. "
             "`gap` = share of the gap between the input order and the "
             "stream bound that the order closes, "
             "(input - x) / (input - stream bound); the stream bound "
             "(docs/REPORTS.md, \"Lower bound\") holds for every order of "
             "the graph, `old bound` = the input order's compute/comm loads "
             "and critical path, the yardstick before issue 23 (the totals "
             "below give the figures against both; a bucketing `tune` "
             "changes the graph and can pass either bound, its gap is "
             "capped at 100%% in the means); `peak` = per-step peak / "
             "the input order's. An order fits a budget when its per-step "
             "peak and its peak over simulated time are both within it x "
             "the input order's (issue 42). `best anchor (fits)` = the "
             "fastest of "
             "Inductor's pipeline at per-pass budgets %s, "
             "raise_comms,sink_waits, reorder_compute_for_overlap, PyTorch's "
             "simple_overlap alone, after 500 MiB buckets and after "
             "pre-bucketing to the bandwidth-saturating size "
             "(clipped to [50, 2000] MiB), and the hand-written "
             "transformer-block plan (bucket_transformer_blocks), and on "
             "the graphs a real torch.compile made (graphs/torch) torch "
             "2.13's FX overlap scheduler (torch-fx-overlap: its order of "
             "the same program, made by graphs/torch/make_torch_graphs.py) "
             "and the same scheduler with its collective bucketing "
             "(torch-fx-bucketed: the program compiled again that way, its "
             "own graph), whose peak fits the budget. The verdict column "
             "is overlap's, which only reorders; tune may bucket.%s" % (
                 machine_line(), time.strftime("%Y-%m-%d"),
                 ", ".join(INDUCTOR_BUDGETS),
                 " Load (1-minute average) %s while it ran: the machine "
                 "was shared, which changes no figure of the table (each "
                 "is simulated), only the time it took." % load
                 if load else ""),
             "", md_table(lines), "", totals, "", END]
    replace_block(path, BEGIN, END, parts)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(here),
                                                     "graphs"))
    ap.add_argument("--graphs", nargs="*", help="graph files instead of "
                    "the corpus")
    ap.add_argument("--chain", default="2000",
                    help="also generated chains of these node counts")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-tune", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--update-doc", default=None)
    ap.add_argument("--cache", default=None,
                    help="JSON file remembering the input and anchor rows "
                         "(they do not depend on overlap or tune)")
    a = ap.parse_args()
    cache = {}
    if a.cache and os.path.exists(a.cache):
        with open(a.cache) as fh:
            cache = json.load(fh)
    load0 = os.getloadavg()[0]
    tmp = tempfile.mkdtemp(prefix="commsched-ovbench-")
    files = a.graphs if a.graphs else workloads(a.corpus)
    for n in [x for x in a.chain.split(",") if x]:
        path = os.path.join(tmp, "chain-%s.json" % n)
        subprocess.run([a.cli, "generate", "chain", "--nodes", n, "-o", path],
                       check=True)
        files.append(path)
    jobs = []
    for f in files:
        jobs.append((f, "input", None, []))
        for name, passes, sets in anchors(a.cli, f):
            jobs.append((f, name, passes, sets))
        for b in BUDGETS:
            jobs.append((f, "overlap B=%s" % b, "overlap",
                         ["overlap_peak_budget=%s" % b]))
            if not a.no_tune:
                jobs.append((f, "tune B=%s" % b, "@tune", ["--budget", b]))
    results = {}
    anchor_names = {"input"} | ANCHOR_NAMES

    def key(f, name):
        return "v3|%s|%s|%d" % (os.path.basename(f), name,
                             os.path.getsize(f))
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        futs = {}
        for f, name, passes, sets in jobs:
            if name in anchor_names and key(f, name) in cache:
                results.setdefault(f, {})[name] = cache[key(f, name)]
                continue
            if passes == "@tune":
                futs[ex.submit(run_case, a.cli, f, name, passes, [], tmp,
                               sets)] = f
            else:
                futs[ex.submit(run_case, a.cli, f, name, passes, sets,
                               tmp)] = f
        for fu in concurrent.futures.as_completed(futs):
            name, r = fu.result()
            results.setdefault(futs[fu], {})[name] = r
            if name in anchor_names:
                cache[key(futs[fu], name)] = r
    if a.cache:
        with open(a.cache, "w") as fh:
            json.dump(cache, fh)
    rows = []
    for f in files:
        label = os.path.basename(f)[:-5]
        rows += summarize(label, results[f])
    lines = table(rows)
    print(text_table(lines))
    verdicts = [verdict(r) for r in rows]
    totals = totals_line(rows)
    print("\n" + totals)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"machine": machine_line(), "rows": rows,
                       "raw": {os.path.basename(k): v
                               for k, v in results.items()}}, fh, indent=1)
    if a.update_doc:
        # The command as run (the CLI's build type changes the wall time
        # only, never a figure of the table).
        update_doc(a.update_doc, lines, totals,
                   "nice -n 19 python3 bench/overlap_bench.py " +
                   " ".join(sys.argv[1:]),
                   "%.1f at the start, %.1f at the end" % (
                       load0, os.getloadavg()[0]))
    return 1 if "SLOWER" in verdicts else 0


if __name__ == "__main__":
    sys.exit(main())
