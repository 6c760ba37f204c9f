#!/usr/bin/env python3
"""commsched optimality benchmark (issue 42): how far overlap, tune and the
best anchor are from the best order there is, under a memory budget, on
the corpus's small graphs.

An exact reference: a constraint model of the simulator's semantics
(docs/REPORTS.md, "What the figures mean"), solved with OR-tools' CP-SAT
(bench/run.sh installs ortools==9.15.6755 into build/bench-venv), on every
graph of at most --max-nodes nodes (150) with a collective, at budgets 1.0,
1.25, 1.5 and inf x the input order's per-step peak:

  order      pos[v], a permutation of the nodes respecting every data,
             `after`, `after_fake` and in-place write edge (docs/FORMAT.md)
  compute    the compute stream runs compute nodes, waits and sync
             collectives in order, each of its runtime: pos[x] < pos[y]
             implies start[y] >= end[x]
  issue      a collective issued after a compute-stream node starts after
             that node ends (the host issues in order)
  comm       one stream per group, in issue order: pos[a] < pos[b] implies
             start[b] >= end[a]
  waits      a wait starts when the collectives it waits for have ended
  memory     the per-step peak (docs/FORMAT.md, "Memory model"): each
             buffer lives over the positions from its producer to its last
             reader (unread: its producer's only; graph outputs: to the
             end; freeable inputs from the start), and a cumulative over
             positions keeps the sum <= budget x the input order's peak
  objective  the makespan, the last end

The simulator's times are the earliest a given order allows, so the model's
optimum is the best makespan of any order. Runtimes are the cost model's
(`commsched estimate`), floored to integer units of 1/SCALE ns, so the
model's bound is a lower bound of the true optimum; the solution's order is
simulated by commsched for its exact makespan. A cell is solved when CP-SAT
proves optimality within --time-limit seconds (its order then simulates to
within n units of the bound); otherwise its best order and bound are
reported. overlap and tune run with the per-step model alone
(overlap_peak_model=step, tune --peak-model step), the model's; the best
anchor is the fastest of the input order, Inductor's pipeline at per-pass
budgets 0 .. 0.2, raise_comms,sink_waits, reorder_compute_for_overlap and
simple_overlap whose per-step peak fits.

Usage: build/bench-venv/bin/python bench/optimum_bench.py --cli
build/release/tools/commsched [--update-doc docs/PERFORMANCE.md]
"""
import argparse
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

try:
    from ortools.sat.python import cp_model
except ImportError:  # bench/run.sh makes the environment
    cp_model = None

INDUCTOR = ("decide_global_ordering_of_comms,"
            "reorder_communication_preserving_peak_memory,"
            "sink_waits_iterative,"
            "reorder_communication_preserving_peak_memory")
ANCHORS = [("inductor b=%s" % b, INDUCTOR,
            ["reorder_iterative_peak_memory_budget=%s" % b,
             "sink_iterative_peak_memory_budget=%s" % b])
           for b in ("0", "0.05", "0.1", "0.2")] + [
    ("raise_comms,sink_waits", "raise_comms,sink_waits", []),
    ("reorder_compute_for_overlap", "reorder_compute_for_overlap", []),
    ("simple_overlap", "simple_overlap", []),
    ("input", "none", [])]
BUDGETS = ["1.0", "1.25", "1.5", "inf"]


class Graph:
    """What the model needs of a graph file: nodes in file order, edges,
    streams, waits' collectives and buffer lifetimes."""

    def __init__(self, path, runtimes):
        g = json.load(open(path))
        self.path = path
        self.nodes = [n["name"] for n in g["nodes"]]
        self.idx = {v: i for i, v in enumerate(self.nodes)}
        nd = g["nodes"]
        self.kind = [n["kind"] for n in nd]
        self.sync = [n["kind"] == "collective" and n.get("async", True) is
                     False for n in nd]
        self.group = [n.get("group") for n in nd]
        self.rt = [runtimes[v] for v in self.nodes]
        root, producer, size = {}, {}, {}
        inputs = {i["name"]: i for i in g.get("inputs", [])}
        for name in inputs:
            root[name] = name
            size[name] = inputs[name]["size"]
        for i, n in enumerate(nd):
            for o in n.get("outputs", []):
                producer[o["name"]] = i
                if "alias_of" in o:
                    root[o["name"]] = root[o["alias_of"]]
                else:
                    root[o["name"]] = o["name"]
                    size[o["name"]] = o["size"]
        keep = {root[o] for o in g.get("outputs", [])}
        readers = {}
        deps = [set() for _ in nd]
        for i, n in enumerate(nd):
            for x in n.get("inputs", []):
                readers.setdefault(root[x], set()).add(i)
                if x in producer and producer[x] != i:
                    deps[i].add(producer[x])
            for key in ("after", "after_fake"):
                for a in n.get(key, []):
                    deps[i].add(self.idx[a])
        # In-place writes (src/graph/mutation.c): a collective whose output
        # aliases a root it did not create writes it; earlier readers go
        # before its issue, later ones after its first wait.
        self.multi_writer = False
        writers = {}
        for i, n in enumerate(nd):
            if n["kind"] != "collective":
                continue
            for o in n.get("outputs", []):
                r = root[o["name"]]
                if "alias_of" in o and producer.get(r) != i:
                    writers.setdefault(r, []).append(i)
        for r, ws in writers.items():
            if len(ws) > 1:
                self.multi_writer = True
            for c in ws:
                outs = {o["name"] for o in nd[c].get("outputs", [])}
                waits = [j for j in range(c + 1, len(nd))
                         if nd[j]["kind"] == "wait" and
                         outs & set(nd[j].get("inputs", []))]
                done = waits[0] if waits and not self.sync[c] else c
                for j in readers.get(r, ()):
                    if j == c or j in waits:
                        continue
                    if j < c:
                        deps[c].add(j)
                    elif j != done:
                        deps[j].add(done)
        self.deps = [sorted(d) for d in deps]
        self.wcoll = []
        for i, n in enumerate(nd):
            cs = set()
            if n["kind"] == "wait":
                for x in n.get("inputs", []):
                    p = producer.get(x)
                    if p is not None and nd[p]["kind"] == "collective":
                        cs.add(p)
            self.wcoll.append(sorted(cs))
        # buffers: (producer or None for a freeable input, readers, size,
        # kept)
        self.buffers = []
        for b, s in size.items():
            r = sorted(readers.get(b, ()))
            if b in inputs:
                if not inputs[b].get("freeable") or not r:
                    continue
                self.buffers.append((None, r, s, b in keep))
            else:
                self.buffers.append((producer[b], r, s, b in keep))


def solve(G, budget_bytes, time_limit, hint=None, workers=2,
          stream_bound=0.0):
    """CP-SAT on G within budget_bytes (None: no limit). stream_bound:
    commsched's stream bound (docs/REPORTS.md, "Lower bound"), which no
    order beats: a cut for the model. Returns (status, order, bound in
    units, scale)."""
    n = len(G.nodes)
    total = sum(G.rt)
    scale = 1.0
    while total * scale * 10 <= 1e12:
        scale *= 10
    d = [int(math.floor(r * scale)) for r in G.rt]
    horizon = sum(d) + 1
    m = cp_model.CpModel()
    pos = [m.NewIntVar(0, n - 1, "p%d" % i) for i in range(n)]
    m.AddAllDifferent(pos)
    for v in range(n):
        for u in G.deps[v]:
            m.Add(pos[u] < pos[v])
    start = [m.NewIntVar(0, horizon, "s%d" % i) for i in range(n)]
    end = [start[i] + d[i] for i in range(n)]
    frame = [i for i in range(n)
             if G.kind[i] in ("compute", "wait") or G.sync[i]]
    colls = [i for i in range(n) if G.kind[i] == "collective"]

    def before(a, b):
        """A literal: a comes before b in the order."""
        x = m.NewBoolVar("b%d_%d" % (a, b))
        m.Add(pos[a] < pos[b]).OnlyEnforceIf(x)
        m.Add(pos[a] > pos[b]).OnlyEnforceIf(x.Not())
        return x

    for i, x in enumerate(frame):  # the compute stream, in order
        for y in frame[i + 1:]:
            lit = before(x, y)
            m.Add(start[y] >= end[x]).OnlyEnforceIf(lit)
            m.Add(start[x] >= end[y]).OnlyEnforceIf(lit.Not())
    for c in colls:  # issued after the compute-stream nodes before it
        if G.sync[c]:
            continue
        for x in frame:
            lit = before(x, c)
            m.Add(start[c] >= end[x]).OnlyEnforceIf(lit)
    for i, a in enumerate(colls):  # each group's stream, in issue order
        for b in colls[i + 1:]:
            if G.group[a] != G.group[b]:
                continue
            lit = before(a, b)
            m.Add(start[b] >= end[a]).OnlyEnforceIf(lit)
            m.Add(start[a] >= end[b]).OnlyEnforceIf(lit.Not())
    for w in range(n):
        for c in G.wcoll[w]:
            m.Add(start[w] >= end[c])
    span = m.NewIntVar(0, horizon, "makespan")
    for i in range(n):
        m.Add(span >= end[i])
    # Floored runtimes lose at most a unit a node on any path.
    m.Add(span >= max(0, int(math.floor(stream_bound * scale)) - n))
    if budget_bytes is not None:
        ivs, dem = [], []
        for p, r, s, kept in G.buffers:
            if s == 0:
                continue
            lo = 0 if p is None else pos[p]
            if kept:
                hi = n
            elif not r:
                hi = pos[p] + 1
            else:
                last = m.NewIntVar(0, n - 1, "")
                m.AddMaxEquality(last, [pos[j] for j in r])
                hi = last + 1
            length = m.NewIntVar(1, n, "")
            m.Add(length == hi - lo)
            ivs.append(m.NewIntervalVar(lo, length, hi, ""))
            dem.append(s)
        m.AddCumulative(ivs, dem, budget_bytes)
    m.Minimize(span)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    if hint:
        # A complete solution to start from: the same model with the hint
        # order's positions fixed (solved at once), every variable's value
        # handed over, so CP-SAT begins at that order's makespan.
        fixed = m.clone()
        for k, v in enumerate(hint):
            fixed.Add(fixed.get_int_var_from_proto_index(pos[G.idx[v]].Index())
                      == k)
        solver.parameters.max_time_in_seconds = max(5.0, time_limit / 3)
        if solver.Solve(fixed) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            for i in range(len(m.Proto().variables)):
                var = m.get_int_var_from_proto_index(i)
                m.AddHint(var, solver.Value(
                    fixed.get_int_var_from_proto_index(i)))
    solver.parameters.max_time_in_seconds = time_limit
    st = solver.Solve(m)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return solver.StatusName(st), None, solver.BestObjectiveBound(), scale
    order = sorted(range(n), key=lambda i: solver.Value(pos[i]))
    return (solver.StatusName(st), [G.nodes[i] for i in order],
            solver.BestObjectiveBound(), scale)


def simulate(cli, path, bound=False):
    p = subprocess.run([cli, "simulate", "--format", "json", path],
                       check=True, stdout=subprocess.PIPE)
    d = json.loads(p.stdout)
    if bound:
        return d["lower_bound"]["stream_bound_ns"]
    return d["totals"]["makespan_ns"], d["memory"]["peak_per_step"]


def with_order(graph_path, order, out):
    g = json.load(open(graph_path))
    by = {n["name"]: n for n in g["nodes"]}
    g["nodes"] = [by[v] for v in order]
    with open(out, "w") as f:
        json.dump(g, f)


def run_pipeline(cli, graph, passes, sets, tmp):
    out = os.path.join(tmp, "o.json")
    cmd = [cli, "optimize", graph, "--passes", passes, "-o", out]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    ms, pk = simulate(cli, out)
    names = [n["name"] for n in json.load(open(out))["nodes"]]
    return ms, pk, names


def run_tune(cli, graph, budget, tmp):
    out = os.path.join(tmp, "t.json")
    subprocess.run([cli, "tune", graph, "--budget", budget, "--peak-model",
                    "step", "-o", out], check=True, stdout=subprocess.DEVNULL)
    return simulate(cli, out)[0]


def workloads(root, max_nodes):
    files = []
    for sub in ("examples", "astra", "chakra", "chakra-et", "independent",
                "torch", "xla", "kineto", "pytorch-et"):
        files += sorted(f for f in glob.glob(os.path.join(root, sub, "*.json"))
                        if os.path.basename(f) != "provenance.json")
    out = []
    for f in files:
        g = json.load(open(f))
        n = len(g["nodes"])
        nc = sum(1 for x in g["nodes"] if x["kind"] == "collective")
        if n <= max_nodes and nc > 0:
            out.append(f)
    return out


def fmt_ns(ns):
    if ns is None:
        return "-"
    if ns >= 1e6:
        return "%.3f ms" % (ns / 1e6)
    return "%.2f us" % (ns / 1e3)


def pct(x, ref):
    if x is None or ref is None or not ref > 0:
        return "-"
    return "%+.2f%%" % (100 * (x / ref - 1))


BEGIN = "<!-- optimum_bench.py: begin (generated; edits here are lost) -->"
END = "<!-- optimum_bench.py: end -->"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(here),
                                                     "graphs"))
    ap.add_argument("--graphs", nargs="*")
    ap.add_argument("--max-nodes", type=int, default=150)
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--update-doc")
    a = ap.parse_args()
    if cp_model is None:
        sys.exit("optimum_bench.py: ortools is not installed (bench/run.sh "
                 "makes build/bench-venv with ortools==9.15.6755)")
    tmp = tempfile.mkdtemp(prefix="commsched-optimum-")
    files = a.graphs or workloads(a.corpus, a.max_nodes)
    # An independent FSDP x TP step small enough for the model: two
    # layers of graphs/independent/make_fsdp_tp.py.
    if not a.graphs:
        small = os.path.join(tmp, "fsdp-tp-2L.json")
        subprocess.run([sys.executable, os.path.join(
            os.path.dirname(here), "graphs", "independent", "make_fsdp_tp.py"),
            small, "--layers", "2"], check=True)
        files.append(small)
    rows = []
    t0 = time.time()
    for f in files:
        est = json.loads(subprocess.run(
            [a.cli, "estimate", "--format", "json", f], check=True,
            stdout=subprocess.PIPE).stdout)
        G = Graph(f, {x["name"]: x["runtime_ns"] for x in est["nodes"]})
        if G.multi_writer:
            print("skipping %s: a root written in place twice" % f)
            continue
        anchors = {name: run_pipeline(a.cli, f, p, s, tmp)
                   for name, p, s in ANCHORS}
        sb = simulate(a.cli, f, bound=True)
        ms_in, pk_in = anchors["input"][:2]
        for b in BUDGETS:
            lim = None if b == "inf" else int(math.floor(float(b) * pk_in))
            fit = [(ms, name) for name, (ms, pk, _) in anchors.items()
                   if lim is None or pk <= lim]
            best_anchor = min(fit)
            ov_ms, ov_pk, ov_order = run_pipeline(
                a.cli, f, "overlap", ["overlap_peak_budget=" + b,
                                      "overlap_peak_model=step"], tmp)
            tune_ms = run_tune(a.cli, f, b, tmp)
            ts = time.time()
            status, order, bound, scale = solve(G, lim, a.time_limit,
                                                hint=ov_order,
                                                workers=a.workers,
                                                stream_bound=sb)
            solve_s = time.time() - ts
            opt = ov_ms  # with no solution, the best known is overlap's
            if order:
                p = os.path.join(tmp, "cp.json")
                with_order(f, order, p)
                opt, pk = simulate(a.cli, p)
                assert lim is None or pk <= lim, (f, b, pk, lim)
            # both lower bounds of the true optimum: the model's (floored
            # runtimes) and the stream bound
            lb = max(bound / scale if order else 0.0, sb)
            solved = status == "OPTIMAL"
            row = {"workload": os.path.basename(f)[:-5], "budget": b,
                   "nodes": len(G.nodes), "status": status,
                   "solved": solved, "optimum_ns": opt if solved else None,
                   "best_found_ns": opt, "bound_ns": lb,
                   "overlap_ns": ov_ms, "tune_ns": tune_ms,
                   "anchor_ns": best_anchor[0], "anchor": best_anchor[1],
                   "solve_s": solve_s}
            rows.append(row)
            ref = opt if solved else lb
            print("%-32s %-4s %3d nodes %-8s opt %-12s bound %-12s overlap "
                  "%-12s (%s) tune %-12s (%s) anchor %-12s %s  %.1f s" % (
                      row["workload"], b, row["nodes"], status,
                      fmt_ns(opt), fmt_ns(lb), fmt_ns(ov_ms),
                      pct(ov_ms, ref), fmt_ns(tune_ms), pct(tune_ms, ref),
                      fmt_ns(best_anchor[0]), best_anchor[1], solve_s),
                  flush=True)
    wall = time.time() - t0
    solved = [r for r in rows if r["solved"]]
    ov1 = [r for r in solved if r["overlap_ns"] <= r["optimum_ns"] * 1.01]
    tu1 = [r for r in solved if r["tune_ns"] <= r["optimum_ns"] * 1.01]
    summary = ("%d cells (%d workloads of at most %d nodes x %d budgets); "
               "%d solved to optimality within %g s each; overlap within 1%% "
               "of the optimum in %d of them, tune in %d. Wall time %.0f s." % (
                   len(rows), len(rows) // len(BUDGETS), a.max_nodes,
                   len(BUDGETS), len(solved), a.time_limit, len(ov1),
                   len(tu1), wall))
    print(summary)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"rows": rows, "summary": summary}, fh, indent=1)
    if a.update_doc:
        head = ["workload", "budget", "nodes", "CP-SAT", "optimum (or best "
                "found)", "bound", "overlap", "vs opt", "tune", "vs opt",
                "best anchor", "vs opt"]
        lines = ["| " + " | ".join(head) + " |",
                 "|" + "|".join("---" for _ in head) + "|"]
        last = None
        for r in rows:
            ref = r["optimum_ns"] if r["solved"] else r["bound_ns"]
            w = r["workload"] if r["workload"] != last else ""
            last = r["workload"]
            lines.append("| " + " | ".join([
                w, r["budget"], str(r["nodes"]) if w else "",
                "optimal" if r["solved"] else r["status"].lower(),
                fmt_ns(r["best_found_ns"]), fmt_ns(r["bound_ns"]),
                fmt_ns(r["overlap_ns"]), pct(r["overlap_ns"], ref),
                fmt_ns(r["tune_ns"]), pct(r["tune_ns"], ref),
                "%s (%s)" % (fmt_ns(r["anchor_ns"]), r["anchor"]),
                pct(r["anchor_ns"], ref)]) + " |")
        cmd = ("build/bench-venv/bin/python bench/optimum_bench.py " +
               " ".join(sys.argv[1:]))
        parts = [BEGIN, "", "## Benchmark: distance to the proven optimum "
                 "(make bench, issue 42)", "", "```sh", cmd, "```", "",
                 "Machine: %s, %d cores, %s %s; %s; ortools %s (CP-SAT, %d "
                 "workers). Per-step model (overlap_peak_model=step, tune "
                 "--peak-model step), budgets x the input order's per-step "
                 "peak; `vs opt` against the optimum where CP-SAT proved "
                 "it, else against its lower bound. A bucketing tune "
                 "changes the graph and can pass the optimum of its order." % (
                     cpu_name(), os.cpu_count(), platform.system(),
                     platform.release(), time.strftime("%Y-%m-%d"),
                     __import__("ortools").__version__, a.workers),
                 "", "\n".join(lines), "", summary, "", END]
        replace_block(a.update_doc, BEGIN, END, parts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
