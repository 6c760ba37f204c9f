"""make bench: the Inductor plugin at real size, against torch's own
schedulers on the same programs (docs/PERFORMANCE.md, "The Inductor
plugin at real size").

Each program of graphs/torch/transformer_steps.py (FSDP, TP+SP, 2D, MoE
transformer training steps) is compiled by a real torch.compile (torch
2.13.0, CPU, fake process group of 8 ranks, compile only) at the layer
counts whose scheduler-node lists reach about 1K, 10K and 36K nodes, four
times:

1. plain Inductor with a hook as its comm reordering pass, and in the
   hook, on the same scheduler nodes of each graph (forward, backward):
   - commsched's plugin as a user calls it (``commsched.inductor.reorder``,
     the default pipeline, Inductor's CPU estimates of 0 so commsched's
     cost model prices the nodes), its time split (reading the nodes,
     loading the graph, the C pipeline, mapping back);
   - each of torch's comms passes (raise_comms, sink_waits,
     reorder_compute_for_overlap, reorder_communication_preserving_peak_
     memory, sink_waits_iterative; each stopped at --cap seconds and then
     reported as "> cap", and not run at a larger size of the same
     program) and commsched's pass of the same name through the plugin,
     both fed the same runtimes (commsched's cost model's, through
     ``config.estimate_op_runtime``), and whether the orders are equal;
2. torch 2.13's FX overlap scheduler with its collective bucketing
   (``aten_distributed_optimizations``, commsched's runtimes:
   commsched.fx.torch_bucketing), timed, the scheduler nodes Inductor then
   hands over judged in Inductor's order, and again after commsched's
   plugin (default pipeline) reordered them;
3. commsched at the FX level (``commsched.fx.post_grad_pass``), timed, the
   scheduler nodes judged the same way, as Inductor hands them and after
   commsched's plugin (with the fourth compile's backward: what
   ``post_grad_pass(bucket=FX_BUCKETING, bucket_graphs="backward")``
   gives a step);
4. commsched's bucketing at the FX level in front of it
   (``post_grad_pass(bucket=FX_BUCKETING)``: commsched's bucket plan
   merged by torch's bucketing helpers), timed, the scheduler nodes judged
   as Inductor hands them and after commsched's plugin.

Every order is judged by commsched's simulator with the same cost model
(h100): makespan, exposed communication, the per-step peak and the peak
over simulated time.

Usage (bench/run.sh runs it with the release library):
  COMMSCHED_LIBRARY=build/release/libcommsched.so PYTHONPATH=python \\
    build/venv/bin/python bench/torch_scale.py [--sizes 1k,10k,36k]
    [--kinds fsdp,tp,2d,moe] [--big-kinds tp] [--cap 600]
    [--over-cap fsdp:reorder_communication_preserving_peak_memory,...]
    [--json build/release/torch_scale.json] [--update-doc docs/PERFORMANCE.md]
  ... bench/torch_scale.py --from-json A.json,B.json --cap 300 \
    --made-by "..." --update-doc docs/PERFORMANCE.md   (tables of runs
    made apart, e.g. one size at a time)
"""
import argparse
import json
import os
import platform
import signal
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "graphs", "torch"))
sys.path.insert(0, HERE)

PASSES = ("raise_comms", "sink_waits", "reorder_compute_for_overlap",
          "reorder_communication_preserving_peak_memory",
          "sink_waits_iterative")
# commsched's bucketing at the FX level: DDP's 25 MiB cap, the setting
# measured (the passes' default is Inductor's 2000 MB, not measured here)
FX_BUCKETING = {"bucket_cap_mb": 25}
SHORT = {"reorder_communication_preserving_peak_memory": "RCPPM",
         "reorder_compute_for_overlap": "reorder_compute_for_overlap"}
BEGIN = "<!-- BEGIN torch_scale.py -->"
END = "<!-- END torch_scale.py -->"


class Cap(Exception):
    """A torch pass ran past the cap."""


def capped(seconds, fn, *args):
    """fn(*args) stopped after ``seconds`` (SIGALRM, main thread: the
    compile and its hook run there). Returns (result or None, seconds)."""
    def ring(_sig, _frame):
        raise Cap()
    old = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    t0 = time.perf_counter()
    try:
        return fn(*args), time.perf_counter() - t0
    except Cap:
        return None, None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def judge(order):
    """commsched's simulator on an order of scheduler nodes."""
    import commsched
    import commsched.inductor as ci
    s = commsched.simulate(ci.to_graph(order))
    return {"makespan_ns": s.makespan_ns, "exposed_ns": s.exposed_ns,
            "peak_step": s.peak_memory_step, "peak_time": s.peak_memory,
            "bound_ns": s.bound_stream_ns}


def names(order):
    return [str(sn.get_name()) for sn in order]


def measure(kind, size, layers, cap, timed_out, log):
    """The four compiles of one program at one size; returns its
    record."""
    import torch._inductor.config as icfg
    from torch._inductor import comms
    from torch._inductor.fx_passes import overlap_scheduling as osch
    import commsched
    import commsched.fx as cfx
    import commsched.inductor as ci
    import transformer_steps as ts

    rec = {"kind": kind, "size": size, "layers": layers, "graphs": []}
    captured, runtimes = [], {}

    def plugin_level(snodes):
        gname = "%s-%s-%s" % (kind, size, ("fw", "bw")[len(rec["graphs"])])
        g = {"graph": gname, "nodes": len(snodes)}
        rec["graphs"].append(g)
        split = {}
        t0, c0 = time.perf_counter(), time.process_time()
        out = ci.reorder(snodes, timings=split)
        g["plugin_s"] = time.perf_counter() - t0
        # CPU seconds too (the process's, threads included): on a shared
        # machine the wall clock counts the time others held the cores
        g["plugin_cpu_s"] = time.process_time() - c0
        g["plugin_split_s"] = split
        doc = ci.document(snodes)
        g["collectives"] = sum(n["kind"] == "collective" for n in doc["nodes"])
        g["orders"] = {"input": judge(snodes), "commsched": judge(out)}
        log("  %s: %d nodes, %d collectives; plugin %.3f s (%s)"
            % (gname, len(snodes), g["collectives"], g["plugin_s"],
               ", ".join("%s %.3f" % kv for kv in split.items())))
        rt = commsched.optimize(ci.to_graph(snodes), "none").runtime_ns
        est = {n: rt[n] * 1e-6 for n in rt}
        g["passes"] = {}
        with icfg.patch(estimate_op_runtime=lambda sn: est[sn.get_name()]):
            for p in PASSES:
                row, split = {}, {}
                t0 = time.perf_counter()
                mine = ci.reorder(snodes, passes=[p], timings=split)
                row["commsched_s"] = time.perf_counter() - t0
                # where a slow call's time went (the library's pass or the
                # reading beside it) is in the record, not only the total
                row["commsched_split_s"] = split
                row["commsched"] = judge(mine)
                if (kind, p) in timed_out:
                    row["torch_s"] = None
                    row["not_run"] = True
                else:
                    theirs, secs = capped(cap, getattr(comms, p),
                                          list(snodes))
                    row["torch_s"] = secs
                    if theirs is None:
                        timed_out.add((kind, p))
                    else:
                        row["equal"] = names(theirs) == names(mine)
                        row["torch"] = judge(theirs)
                g["passes"][p] = row
                log("    %-45s torch %s  commsched %.3f s (pipeline %.3f) %s"
                    % (p, "%.2f s" % row["torch_s"]
                       if row["torch_s"] is not None
                       else "> %d s%s" % (cap, " (not run)"
                                          if row.get("not_run") else ""),
                       row["commsched_s"], split["pipeline"],
                       "" if "equal" not in row else
                       ("order-equal" if row["equal"] else "ORDERS DIFFER")))
        runtimes[gname] = cfx.fx_runtimes_ms(captured[-1], snodes, rt)
        return out
    t0 = time.perf_counter()
    with cfx.capture_overlap_input(captured):
        ts.compile_step(kind, layers, plugin_level)
    rec["compile_s"] = time.perf_counter() - t0

    # torch's FX overlap scheduler + bucketer, timed, on the same program
    graphs = iter(g["graph"] for g in rec["graphs"])
    current = [None]
    fx_times = []
    real = osch.schedule_overlap_bucketing_from_inductor_configs

    def timed_torch(gm, *a, **k):
        current[0] = next(graphs)
        t0 = time.perf_counter()
        try:
            return real(gm, *a, **k)
        finally:
            fx_times.append(time.perf_counter() - t0)

    def bucketed_level(snodes):
        g = rec["graphs"][len(fx_times) - 1]
        g["torch_fx_s"] = fx_times[-1]
        g["torch_fx_nodes"] = len(snodes)
        g["orders"]["torch-fx-bucketed"] = judge(snodes)
        # commsched's plugin on the nodes torch's bucketing leaves: the
        # plugin reorders, it does not bucket, so this is how a user gets
        # both
        t0 = time.perf_counter()
        mine = ci.reorder(snodes)
        g["torch_fx_commsched_s"] = time.perf_counter() - t0
        g["orders"]["torch-fx-bucketed+commsched"] = judge(mine)
        log("  %s: torch FX overlap + bucketing %.2f s (%d scheduler nodes "
            "after), commsched's plugin on them %.3f s"
            % (g["graph"], fx_times[-1], len(snodes),
               g["torch_fx_commsched_s"]))
        return mine
    osch.schedule_overlap_bucketing_from_inductor_configs = timed_torch
    try:
        with cfx.torch_bucketing(lambda: current[0], runtimes):
            ts.compile_step(kind, layers, bucketed_level)
    finally:
        osch.schedule_overlap_bucketing_from_inductor_configs = real

    # commsched at the FX level, timed: reordering only, then with
    # commsched's bucketing in front (its bucket plan, merged by torch's
    # helpers) and commsched's plugin after it, as a user gets both
    def fx_compile(key, label, fx_pass, plugin):
        took = []
        inner = fx_pass.__class__.__call__

        def timed(self, graph):
            t0 = time.perf_counter()
            try:
                return inner(self, graph)
            finally:
                took.append(time.perf_counter() - t0)
        fx_pass.__class__.__call__ = timed

        base = key.replace("-", "_")   # the record's keys of seconds

        def fx_level(snodes):
            g = rec["graphs"][len(took) - 1]
            g[base + "_s"] = took[-1]
            g["orders"][key] = judge(snodes)
            line = "  %s: %s %.3f s (%d scheduler nodes after)" % (
                g["graph"], label, took[-1], len(snodes))
            if plugin:
                t0 = time.perf_counter()
                snodes = ci.reorder(snodes)
                g[base + "_commsched_s"] = time.perf_counter() - t0
                g["orders"][key + "+commsched"] = judge(snodes)
                line += ", commsched's plugin on them %.3f s" % (
                    g[base + "_commsched_s"])
            log(line)
            return snodes
        try:
            ts.compile_step(kind, layers, fx_level,
                            config={"post_grad_custom_post_pass": fx_pass})
        finally:
            fx_pass.__class__.__call__ = inner
    fx_compile("commsched-fx", "commsched FX pass", cfx.post_grad_pass(),
               True)
    fx_compile("commsched-fx-bucketed", "commsched FX bucketing + FX pass",
               cfx.post_grad_pass(bucket=FX_BUCKETING), True)
    return rec


def ms(ns):
    return "%.2f ms" % (ns / 1e6)


def mib(b):
    return "%.1f MiB" % (b / 2**20)


def secs(s):
    if s is None:
        return "n/a"
    return "%.3f s" % s if s < 10 else "%.1f s" % s


def tables(results, cap, machine, command):
    out = [BEGIN, "",
           "Made by %s on %s (2 cores shared with other work: compare "
           "figures within a row, measured in the same run). torch 2.13.0 "
           "CPU, fake process group of 8 ranks, compile only. Times are "
           "wall-clock seconds; orders judged by commsched's simulator with "
           "the h100 cost model." % (command, machine), ""]
    out += ["### The plugin's cost per node", "",
            "| graph | layers | scheduler nodes | collectives | plugin call "
            "| µs per node | CPU µs per node | reading | loading | pipeline "
            "| mapping back |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for g in r["graphs"]:
            sp = g["plugin_split_s"]
            cpu = g.get("plugin_cpu_s")
            out.append("| %s | %d | %d | %d | %s | %.1f | %s | %.1f | %.1f | "
                       "%.1f | %.1f |" % (
                           g["graph"], r["layers"], g["nodes"],
                           g["collectives"], secs(g["plugin_s"]),
                           g["plugin_s"] / g["nodes"] * 1e6,
                           "%.1f" % (cpu / g["nodes"] * 1e6)
                           if cpu is not None else "n/a",
                           sp["read"] / g["nodes"] * 1e6,
                           sp["load"] / g["nodes"] * 1e6,
                           sp["pipeline"] / g["nodes"] * 1e6,
                           sp["map"] / g["nodes"] * 1e6))
    out += ["", "µs per node: the whole call in wall-clock time, then in "
            "the process's CPU time (n/a: a run from before it was "
            "recorded); the last four columns split the wall-clock time "
            "(µs per node).", ""]
    for r in results:
        for g in r["graphs"]:
            out += ["### %s (%d layers, %d scheduler nodes)"
                    % (g["graph"], r["layers"], g["nodes"]), "",
                    "| order | time | order-equal | makespan | exposed comm "
                    "| peak (step) | peak (time) |",
                    "|---|---|---|---|---|---|---|"]

            def row(label, t, eq, j):
                out.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                    label, t, eq, ms(j["makespan_ns"]), ms(j["exposed_ns"]),
                    mib(j["peak_step"]), mib(j["peak_time"])))
            o = g["orders"]
            row("input (Inductor's)", "", "", o["input"])
            row("commsched plugin, default pipeline", secs(g["plugin_s"]),
                "", o["commsched"])
            for p in PASSES:
                pr = g["passes"][p]
                name = SHORT.get(p, p)
                if "torch" in pr:
                    row("torch %s" % name, secs(pr["torch_s"]),
                        "yes" if pr["equal"] else "**no**", pr["torch"])
                else:
                    out.append("| torch %s | > %d s%s | | | | | |" % (
                        name, cap, " (not run: past it on a smaller graph of "
                        "this program)" if pr.get("not_run") else ""))
                row("commsched %s" % name, secs(pr["commsched_s"]), "",
                    pr["commsched"])
            if "torch-fx-bucketed" in o:
                row("torch FX overlap scheduler + bucketing",
                    secs(g.get("torch_fx_s")), "", o["torch-fx-bucketed"])
            if "torch-fx-bucketed+commsched" in o:
                row("torch FX overlap scheduler + bucketing, then the "
                    "commsched plugin", secs(g.get("torch_fx_commsched_s")),
                    "", o["torch-fx-bucketed+commsched"])
            if "commsched-fx" in o:
                row("commsched FX pass", secs(g.get("commsched_fx_s")), "",
                    o["commsched-fx"])
            if "commsched-fx+commsched" in o:
                row("commsched FX pass, then the commsched plugin",
                    secs(g.get("commsched_fx_commsched_s")), "",
                    o["commsched-fx+commsched"])
            if "commsched-fx-bucketed" in o:
                row("commsched FX bucketing (%s) + FX pass" % ", ".join(
                    "%s=%s" % kv for kv in sorted(FX_BUCKETING.items())),
                    secs(g.get("commsched_fx_bucketed_s")), "",
                    o["commsched-fx-bucketed"])
                row("commsched FX bucketing + FX pass, then the commsched "
                    "plugin", secs(g.get("commsched_fx_bucketed_commsched_s")),
                    "", o["commsched-fx-bucketed+commsched"])
            out.append("")
    out.append(END)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1k,10k,36k")
    ap.add_argument("--kinds", default="fsdp,tp,2d,moe")
    ap.add_argument("--big-kinds", default="tp",
                    help="the program kinds compiled at 36k (compile time)")
    ap.add_argument("--cap", type=int, default=600)
    ap.add_argument("--layers", type=int,
                    help="every program at this layer count instead (a "
                    "quick look; one size)")
    ap.add_argument("--over-cap", default="",
                    help="comma-separated KIND:PASS pairs an earlier run "
                    "found past the cap at a smaller size of the program "
                    "(e.g. fsdp:reorder_communication_preserving_peak_memory"
                    "): not run, reported as such, as within one run")
    ap.add_argument("--json")
    ap.add_argument("--update-doc")
    ap.add_argument("--from-json",
                    help="comma-separated --json files of earlier runs: "
                    "their tables, nothing measured (--cap: the one they "
                    "ran with; --made-by: their commands)")
    ap.add_argument("--made-by", help="what made the tables, named above "
                    "them (Markdown: mark commands as code)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    import torch
    import transformer_steps as ts
    ts.init_fake_world()
    sizes = [s for s in args.sizes.split(",") if s]
    kinds = [k for k in args.kinds.split(",") if k]
    big = set(k for k in args.big_kinds.split(",") if k)
    machine = "%s, %d cores, %s, torch %s" % (
        __import__("benchdoc").cpu_name(), os.cpu_count(),
        platform.python_version(), torch.__version__.split("+")[0])
    results, timed_out = [], set()
    for pair in (x for x in args.over_cap.split(",") if x):
        kind, _, p = pair.partition(":")
        if kind not in ts.KINDS or p not in PASSES:
            ap.error("--over-cap: %r is not KIND:PASS (kinds %s; passes %s)"
                     % (pair, ",".join(ts.KINDS), ",".join(PASSES)))
        timed_out.add((kind, p))

    def log(line):
        print(line, flush=True)
    if args.from_json:
        for path in args.from_json.split(","):
            with open(path) as f:
                results += json.load(f)
        sizes = []
    for size in sizes:
        for kind in kinds:
            if size == "36k" and kind not in big:
                continue
            layers = args.layers or ts.LAYERS[kind][size]
            log("%s at %s (%d layers)" % (kind, size, layers))
            results.append(measure(kind, size, layers, args.cap, timed_out,
                                   log))
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(results, f, indent=1)
    # --made-by is prose that marks its own commands; a command is marked
    command = args.made_by or "`%s`" % ("make bench" if os.environ.get(
        "COMMSCHED_BENCH") else "build/venv/bin/python bench/torch_scale.py "
        + " ".join(sys.argv[1:]))
    lines = tables(results, args.cap, machine, command)
    print("\n".join(lines))
    if args.update_doc:
        from benchdoc import replace_block
        replace_block(args.update_doc, BEGIN, END, lines)


if __name__ == "__main__":
    main()
