#!/usr/bin/env python3
"""commsched benchmark: speed of every stage and quality of every pipeline.

Speed. For generated graphs of each --sizes node count (`commsched generate
chain --nodes N`, the FSDP-like chain) and for the ~36K-node llama2-70b step
(`commsched generate fsdp --preset llama2-70b --fine`), it measures, as the
median of --repeat runs (1M-node and larger graphs: one run):
  load      `commsched validate`                  (parse + every check)
  passes    each pass of the default pipeline: its own wall_ms from
            `commsched optimize --stats=json`, and the moves it made
  simulate  the simulator alone (`commsched simulate --verbose`'s figure),
            and the whole command
  save      `optimize --passes none --verbose -o OUT`'s own save figure:
            opening, writing and renaming the output (graph and schedule)
  pipeline  the whole `commsched optimize --stats=json` command
  optimize ÷ load   plain `optimize -o OUT` over `validate`, back to back
and the peak RSS of each command (wait4 of the child). A pipeline that runs
past --cap seconds is killed; graphs over --stepwise-above nodes run the
pipeline one pass per process (each output feeding the next), so a pass that
runs past the cap is reported as capped and the ones after it as not run,
instead of hanging the bench. Consecutive sizes 10x apart give the scaling
ratio (time ratio per 10x nodes; 10 is linear, 100 quadratic).

Builder. The same sizes built node by node through the public builder API
(bench/builder_bench.c: a DDP-shaped step) and optimized with one
commsched_optimize call, as a compiler would, with no JSON in the way:
build and optimize times and peak RSS.

Quality. For every workload of the corpus (graphs/**/*.json), the
simulator's makespan, exposed communication, efficiency (lower bound /
makespan), the share of the gap to the input's lower bound closed and peak
memory for: the input order; raise_comms,sink_waits;
reorder_compute_for_overlap; Inductor's recommended pipeline at per-pass
budgets 0, 0.05, 0.1 and 0.2 (its default); overlap and `commsched tune` at
memory budgets 1.0, 1.25, 1.5 and inf x the input's peak; on the graphs a
real torch.compile made (graphs/torch), torch 2.13's FX overlap scheduler
(torch-fx-overlap: the order graphs/torch/make_torch_graphs.py computed
under torch, stored in graphs/torch/anchors/) and commsched at torch's FX
level (commsched-fx: the same program compiled with
commsched.fx.post_grad_pass) and torch 2.13's FX overlap scheduler with
its bucketing (torch-fx-bucketed: compiled with it on, the merged
collectives real nodes), each the graph Inductor then made, stored in
graphs/torch/anchors/ and simulated as it stands; and every other
pass beyond the seed's that `optimize --list-passes` shows (each alone), so
later schedulers join the table by existing. A second table puts, per
workload and budget, overlap and tune beside the fastest of Inductor's
variants, raise_comms,sink_waits and reorder_compute_for_overlap that fits
the same budget (bench/overlap_bench.py, which also runs on its own).

Prints both tables, writes bench/results.json, and with --update-doc
rewrites the bench's own sections of docs/PERFORMANCE.md (between its
markers), leaving the rest of the file alone. Standard library only.
"""
import argparse
import glob
import json
import os
import platform
import re
import shutil
import statistics
import signal
import subprocess
import sys
import tempfile
import threading
import time

from benchdoc import cpu_name, replace_block

INDUCTOR = ("decide_global_ordering_of_comms,"
            "reorder_communication_preserving_peak_memory,"
            "sink_waits_iterative,"
            "reorder_communication_preserving_peak_memory")
INDUCTOR_BUDGETS = ["0", "0.05", "0.1", "0.2"]
MEMORY_BUDGETS = ["1.0", "1.25", "1.5", "inf"]

SEED_PASSES = {
    "decide_global_ordering_of_comms", "raise_comms", "sink_waits",
    "reorder_compute_for_overlap",
    "reorder_communication_preserving_peak_memory", "sink_waits_iterative",
}
PASS_SHORT = {
    "decide_global_ordering_of_comms": "decide",
    "reorder_communication_preserving_peak_memory": "rcppm",
    "sink_waits_iterative": "sink_iter",
    "reorder_compute_for_overlap": "rcfo",
}


class Capped(Exception):
    pass


GNU_TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None


def run(cmd, cap=None, stdout_path=None):
    """Runs cmd; returns (seconds, peak RSS in MiB, stdout bytes, stderr).
    Raises Capped when it runs past cap seconds (the child is killed).
    Peak RSS comes from GNU time when installed: a child's own ru_maxrss
    starts at its parent's RSS (Linux keeps it across fork), and this
    script holds large JSON at times, so wait4's figure would be ours."""
    out = open(stdout_path, "wb") if stdout_path else tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    full = ([GNU_TIME, "-f", "bench-rss-kib %M"] + cmd) if GNU_TIME else cmd
    t0 = time.perf_counter()
    # Its own process group: a capped run is killed with GNU time's child,
    # not only GNU time (the command went on running).
    p = subprocess.Popen(full, stdout=out, stderr=err, start_new_session=True)
    killed = []
    timer = None
    if cap:
        def kill():
            killed.append(1)
            os.killpg(p.pid, signal.SIGKILL)
        timer = threading.Timer(cap, kill)
        timer.start()
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    if timer:
        timer.cancel()
    p.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    err.seek(0)
    data = b"" if stdout_path else out.read()
    text = err.read().decode(errors="replace")
    out.close()
    err.close()
    if killed:
        raise Capped(f"{' '.join(cmd)}: killed after {cap} s")
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode}):\n{text}")
    rss = ru.ru_maxrss / 1024.0
    m = re.search(r"^bench-rss-kib (\d+)$", text, re.M)
    if m:
        rss = int(m.group(1)) / 1024.0
        text = text[:m.start()] + text[m.end():]
    return dt, rss, data, text


def median_run(cmd, repeat, cap=None):
    """Median time, max RSS and the last run's outputs over repeat runs."""
    times, rss, data, text = [], 0.0, b"", ""
    for _ in range(repeat):
        dt, r, data, text = run(cmd, cap)
        times.append(dt)
        rss = max(rss, r)
    return statistics.median(times), rss, data, text


def machine():
    cpu = cpu_name()
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    kb = int(line.split()[1])
                    mem = f"{kb / 1024 / 1024:.1f} GiB memory"
                    break
    except OSError:
        pass
    load = ""
    try:
        load = "load average %.2f %.2f %.2f at start" % os.getloadavg()
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory": mem,
            "system": f"{platform.system()} {platform.release()}",
            "load": load}


def moves(stat):
    # overlap's rows count places a collective moved, not swaps; only the
    # iterative passes' moves are comparable
    if "collectives" in stat:
        return 0
    return sum(n.get("moves", 0) for n in (stat.get("nodes") or []))


def pipeline_passes(cli):
    text = subprocess.run([cli, "optimize", "--list-passes"], check=True,
                          stdout=subprocess.PIPE).stdout.decode()
    passes, default, section = [], "", None
    for line in text.splitlines():
        if line.startswith("passes:"):
            section = "passes"
        elif line.startswith("default pipeline:"):
            section = "default"
        elif line.startswith("knobs"):
            section = None
        elif line.startswith("  ") and section == "passes":
            passes.append(line.split()[0])
        elif line.startswith("  ") and section == "default":
            default = line.strip()
    return passes, default


# ---------------------------------------------------------------------------
# Speed


def speed_row(cli, label, graph, repeat, cap, stepwise_above, tmp):
    sims, nodes = [], 0
    while not sims or len(sims) < repeat:
        dt, rss, _, text = run([cli, "simulate", "--format", "json",
                                "--verbose", "-o", os.devnull, graph])
        m = re.search(r"simulate ([0-9.]+) ms", text)
        sims.append((float(m.group(1)) if m else float("nan"), dt, rss))
        m = re.search(r"simulate: ([0-9]+) nodes", text)
        nodes = int(m.group(1)) if m else 0
        if nodes >= 1000000:
            repeat = 1  # one run for the largest graphs
    row = {"graph": label, "nodes": nodes, "repeat": repeat,
           "size_bytes": os.path.getsize(graph)}
    # save: the command's own figure (`optimize --passes none --verbose`,
    # cli_out_open to the rename), in pairs with validate; it was the
    # difference of the two commands, seconds apart at 1M nodes, which the
    # shared machine's drift moved by more than the save itself.
    out = os.path.join(tmp, "out.json")
    loads, saves, ratios, load_rss = [], [], [], 0.0
    # The "optimize end to end <= 1.3 x loading alone": the plain
    # command (load, default pipeline, save; no --stats) over validate,
    # in the same pairs, below the stepwise sizes.
    whole = nodes <= stepwise_above
    # Seven pairs up to 100K nodes (a second or two each): one pair's
    # ratio moves by +-0.05 on a shared 2-core VM, a median of three by
    # nearly as much.
    for _ in range(max(repeat, 7 if nodes <= 100000 else 2)):
        dt, r, _, _ = run([cli, "validate", graph])
        _, _, _, text = run([cli, "optimize", graph, "--passes", "none",
                             "--verbose", "-o", out])
        m = re.search(r"save ([0-9.]+) ms", text)
        if whole:
            try:
                do, _, _, _ = run([cli, "optimize", graph, "-o", out], cap)
                ratios.append(do / dt)
            except Capped:  # the pipeline's own run below reports it
                whole, ratios = False, []
        loads.append(dt)
        saves.append(float(m.group(1)) / 1e3 if m else float("nan"))
        load_rss = max(load_rss, r)
    row["load_s"] = statistics.median(loads)
    row["load_rss_mib"] = load_rss
    row["save_s"] = statistics.median(saves)
    if ratios:
        row["optimize_over_load"] = statistics.median(ratios)
    row["simulate_ms"] = statistics.median(s[0] for s in sims)
    row["simulate_cmd_s"] = statistics.median(s[1] for s in sims)
    row["simulate_rss_mib"] = max(s[2] for s in sims)
    _, default = pipeline_passes(cli)
    passes = default.split(",")
    per_pass = []
    if nodes <= stepwise_above:
        try:
            runs = []
            for _ in range(repeat):
                dt, rss, data, _ = run([cli, "optimize", graph, "-o", out,
                                        "--stats=json"], cap)
                runs.append((dt, rss, json.loads(data)))
            row["pipeline_s"] = statistics.median(r[0] for r in runs)
            row["pipeline_rss_mib"] = max(r[1] for r in runs)
            for i, p in enumerate(passes):
                per_pass.append({
                    "pass": p,
                    "wall_ms": statistics.median(r[2][i]["wall_ms"]
                                                 for r in runs),
                    "moves": moves(runs[-1][2][i])})
        except Capped:
            row["pipeline_s"] = None
            row["pipeline_capped_s"] = cap
            per_pass = [{"pass": p, "capped_s": cap} for p in passes]
    else:
        # One pass per process: each may be capped without losing the rest.
        cur, total, rss, capped = graph, 0.0, 0.0, False
        for i, p in enumerate(passes):
            if capped:
                per_pass.append({"pass": p, "not_run": True})
                continue
            nxt = os.path.join(tmp, f"step{i}.json")
            try:
                dt, r, data, _ = run([cli, "optimize", cur, "--passes", p,
                                      "-o", nxt, "--stats=json"], cap)
                stat = json.loads(data)[0]
                per_pass.append({"pass": p, "wall_ms": stat["wall_ms"],
                                 "moves": moves(stat)})
                total += dt
                rss = max(rss, r)
                if cur != graph:
                    os.remove(cur)
                cur = nxt
            except Capped:
                per_pass.append({"pass": p, "capped_s": cap})
                capped = True
        row["pipeline_s"] = None if capped else total
        row["pipeline_stepwise"] = True
        row["pipeline_rss_mib"] = rss
        if capped:
            row["pipeline_capped_s"] = cap
    row["per_pass"] = per_pass
    return row


def fmt_s(v):
    if v is None:
        return "-"
    if v < 0.01:
        return f"{v * 1000:.2f} ms"
    if v < 1:
        return f"{v * 1000:.0f} ms"
    return f"{v:.2f} s"


def fmt_pass(p):
    if "capped_s" in p:
        return f">{p['capped_s']:.0f} s cap"
    if p.get("not_run"):
        return "not run"
    return fmt_s(p["wall_ms"] / 1000.0)


def speed_table(rows):
    passes = [p["pass"] for p in rows[0]["per_pass"]] if rows else []
    names = []
    for i, p in enumerate(passes):
        short = PASS_SHORT.get(p, p)
        names.append(f"{short}#{passes[:i + 1].count(p)}"
                     if passes.count(p) > 1 else short)
    head = ["graph", "nodes", "runs", "load", *names, "simulate", "save",
            "pipeline", "optimize ÷ load", "RSS load", "RSS pipeline"]
    lines = [head]
    for r in rows:
        lines.append([
            r["graph"], f"{r['nodes']:,}", str(r["repeat"]), fmt_s(r["load_s"]),
            *[fmt_pass(p) for p in r["per_pass"]],
            f"{r['simulate_ms']:.1f} ms",
            fmt_s(r["save_s"]) if r["save_s"] > 0 else "-",
            (f">{r['pipeline_capped_s']:.0f} s cap" if r.get("pipeline_capped_s")
             else fmt_s(r["pipeline_s"]) + (" (stepwise)"
                                             if r.get("pipeline_stepwise")
                                             else "")),
            f"{r['optimize_over_load']:.2f}x" if "optimize_over_load" in r
            else "-",
            f"{r['load_rss_mib']:.0f} MiB",
            f"{r['pipeline_rss_mib']:.0f} MiB" if r.get("pipeline_rss_mib")
            else "-"])
    moves_line = []
    for r in rows:
        mv = ", ".join(f"{n} {p.get('moves', 0):,}" for n, p in
                       zip(names, r["per_pass"]) if p.get("moves"))
        if mv:
            moves_line.append(f"{r['graph']}: moves {mv}")
    return lines, moves_line


def scaling(rows):
    """Time ratio per 10x nodes between consecutive chain sizes."""
    out = []
    chain = [r for r in rows if r["graph"].startswith("chain")]
    for a, b in zip(chain, chain[1:]):
        ratio = b["nodes"] / a["nodes"]
        if not 9 <= ratio <= 11:
            continue
        entry = {"from": a["nodes"], "to": b["nodes"],
                 "load": b["load_s"] / a["load_s"],
                 "simulate": b["simulate_ms"] / a["simulate_ms"]
                 if a["simulate_ms"] else None,
                 "save": b["save_s"] / a["save_s"]
                 if a["save_s"] > 0 and b["save_s"] > 0 else None}
        for pa, pb in zip(a["per_pass"], b["per_pass"]):
            key = pa["pass"]
            if "wall_ms" in pa and "wall_ms" in pb and pa["wall_ms"] > 0.05:
                entry.setdefault("passes", []).append(
                    (key, pb["wall_ms"] / pa["wall_ms"]))
            else:
                entry.setdefault("passes", []).append((key, None))
        out.append(entry)
    return out


# ---------------------------------------------------------------------------
# Quality


def corpus(root):
    files = []
    for sub in ("examples", "astra", "chakra", "generated", "independent",
                "torch", "xla"):
        files += sorted(f for f in glob.glob(os.path.join(root, sub, "*.json"))
                        if os.path.basename(f) != "provenance.json")
    return files


# The input order's row. On graphs/xla it is XLA's own order (its CPU
# scheduler's, the entry computation as dumped): named so in the table.
XLA_INPUT = "xla-input"


def input_row(f):
    return XLA_INPUT if os.sep + "xla" + os.sep in f else "input"


def quality(cli, files, cap, tmp):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import overlap_bench
    all_passes, default = pipeline_passes(cli)

    # (row name, passes, extra arguments) for one graph; passes "@tune"
    # runs `commsched tune` instead of optimize. The anchors are
    # overlap_bench's, so both tables judge against the same schedules.
    def pipelines_for(f):
        out = [(input_row(f), None, [])]
        for name, passes, sets in overlap_bench.anchors(cli, f):
            out.append((name, passes, [x for kv in sets for x in ("--set", kv)]))
        for b in MEMORY_BUDGETS:
            out.append((f"overlap B={b}", "overlap",
                        ["--set", f"overlap_peak_budget={b}"]))
        for b in MEMORY_BUDGETS:
            out.append((f"tune B={b}", "@tune", ["--budget", b]))
        if default not in (INDUCTOR, "overlap"):
            out.append(("default", default, []))
        named = {x[0] for x in out}
        for p in all_passes:
            if p not in SEED_PASSES and p != "overlap" and p not in named:
                out.append((p, p, []))
        return out
    pipelines = pipelines_for(files[0]) if files else []
    rows = []
    for f in files:
        label = os.path.relpath(f, os.path.dirname(os.path.dirname(f)))
        for name, passes, extra in pipelines_for(f):
            row = {"workload": label, "pipeline": name, "passes": passes}
            if extra:
                row["args"] = extra
            target = f
            try:
                if passes and passes.startswith("@graph:"):
                    # the program compiled another way (commsched-fx,
                    # torch-fx-bucketed)
                    target = passes[len("@graph:"):]
                elif passes and passes.startswith("@order:"):
                    # an order made outside commsched (torch-fx-overlap)
                    target = os.path.join(tmp, "q.json")
                    overlap_bench.apply_order(f, passes[len("@order:"):],
                                              target)
                elif passes == "@tune":
                    target = os.path.join(tmp, "q.json")
                    dt, _, data, _ = run([cli, "tune", f, "--format", "json",
                                          "-o", target] + extra, cap)
                    row["optimize_s"] = dt
                    best = json.loads(data).get("best") or {}
                    row["tune_best"] = (best.get("passes", "") +
                                        (" | " + best["knobs"]
                                         if best.get("knobs") else ""))
                elif passes:
                    target = os.path.join(tmp, "q.json")
                    dt, _, _, _ = run([cli, "optimize", f, "--passes", passes,
                                       "-o", target] + extra, cap)
                    row["optimize_s"] = dt
                sim = json.loads(run([cli, "simulate", "--format", "json",
                                      target], cap)[2])
            except Capped:
                row["capped_s"] = cap
                rows.append(row)
                continue
            t, m, lb = sim["totals"], sim["memory"], sim["lower_bound"]
            row.update({"nodes": sim["nodes"],
                        "old_bound_ns": max(lb["compute_stream_ns"],
                                            lb["busiest_comm_stream_ns"],
                                            lb["critical_path_ns"]),
                        "stream_bound_ns": lb["stream_bound_ns"],
                        "makespan_ns": t["makespan_ns"],
                        "exposed_ns": t["exposed_ns"],
                        "comm_ns": t["comm_ns"],
                        "lower_bound_ns": t["lower_bound_ns"],
                        "efficiency": t["efficiency"],
                        "peak_per_step": m["peak_per_step"],
                        "peak_simulated": m["peak_simulated"]})
            rows.append(row)
    return pipelines, rows


def builder_rows(cli, sizes, cap):
    """bench/builder_bench.c beside the CLI: a DDP-shaped step built node by
    node through the builder API, then one commsched_optimize call (cost
    model, simulation before and after, the default pipeline)."""
    exe = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(cli))),
                       "bench", "commsched_builder_bench")
    rows = []
    for n in sizes:
        try:
            dt, rss, out, _ = run([exe, str(n)], cap)
        except Capped:
            rows.append({"nodes": n, "capped_s": cap})
            continue
        r = json.loads(out)
        r["rss_mib"] = rss
        rows.append(r)
    return rows


def builder_table(rows):
    lines = [["nodes", "build", "optimize (default pipeline + 2 simulations)",
              "total", "RSS built", "RSS peak"]]
    for r in rows:
        if "capped_s" in r:
            lines.append([f"{r['nodes']:,}", f"capped at {r['capped_s']:.0f} s",
                          "", "", "", ""])
            continue
        lines.append([f"{r['nodes']:,}", fmt_s(r["build_s"]),
                      fmt_s(r["optimize_s"]), fmt_s(r["total_s"]),
                      f"{r['rss_built_mib']:.0f} MiB",
                      f"{r['rss_peak_mib']:.0f} MiB"])
    return lines


def fmt_ns(ns):
    if ns >= 1e9:
        return f"{ns / 1e9:.3f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def fmt_bytes(b):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if b < 1024 or unit == "TiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.2f} {unit}"
        b /= 1024.0
    return str(b)


def quality_table(rows):
    lines = [["workload", "nodes", "pipeline", "makespan", "exposed comm",
              "efficiency", "gap closed", "peak (step)", "peak x input",
              "peak (sim)"]]
    last = None
    inputs = {r["workload"]: r for r in rows
              if r["pipeline"] in ("input", XLA_INPUT) and "capped_s" not in r}
    for r in rows:
        w = r["workload"] if r["workload"] != last else ""
        last = r["workload"]
        if "capped_s" in r:
            lines.append([w, "", r["pipeline"], f">{r['capped_s']:.0f} s cap",
                          "", "", "", "", "", ""])
            continue
        inp = inputs.get(r["workload"])
        gap, px = "-", "-"
        if inp:
            d = inp["makespan_ns"] - inp["lower_bound_ns"]
            if d > 0:
                gap = (f"{100 * (inp['makespan_ns'] - r['makespan_ns']) / d:.1f}%")
            if inp["peak_per_step"] > 0:
                px = f"{r['peak_per_step'] / inp['peak_per_step']:.2f}x"
        lines.append([w, f"{r['nodes']:,}" if w else "", r["pipeline"],
                      fmt_ns(r["makespan_ns"]), fmt_ns(r["exposed_ns"]),
                      f"{100 * r['efficiency']:.1f}%", gap,
                      fmt_bytes(r["peak_per_step"]), px,
                      fmt_bytes(r["peak_simulated"])])
    return lines


def equal_memory_table(rows):
    """Per workload and memory budget: input, the fastest anchor that fits,
    overlap and tune (bench/overlap_bench.py's table), and its totals line."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import overlap_bench
    by = {}
    for r in rows:
        if "capped_s" in r:
            continue
        # XLA's order is the input the other orders are judged against
        name = "input" if r["pipeline"] == XLA_INPUT else r["pipeline"]
        by.setdefault(r["workload"], {})[name] = {
            "makespan_ns": r["makespan_ns"],
            "lower_bound_ns": r["lower_bound_ns"],
            "old_bound_ns": r["old_bound_ns"],
            "stream_bound_ns": r["stream_bound_ns"],
            "peak": r["peak_per_step"],
            "tune_best": r.get("tune_best")}
    summary = []
    for w, res in by.items():
        if "input" in res:
            summary += overlap_bench.summarize(w, res)
    return overlap_bench.table(summary), overlap_bench.totals_line(summary)


# ---------------------------------------------------------------------------
# Output


def text_table(lines):
    """Aligned columns: the first left, the others right."""
    widths = [max(len(str(l[i])) for l in lines) for i in range(len(lines[0]))]
    out = []
    for l in lines:
        out.append("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                             for i, (c, w) in enumerate(zip(l, widths))))
    return "\n".join(out)


def md_table(lines):
    out = ["| " + " | ".join(lines[0]) + " |",
           "|" + "|".join("---" for _ in lines[0]) + "|"]
    for l in lines[1:]:
        out.append("| " + " | ".join(str(c) for c in l) + " |")
    return "\n".join(out)


def machine_line(m):
    return (f"{m['cpu']}, {m['cores']} cores, {m['memory']}, {m['system']}"
            + (f"; {m['load']}" if m.get("load") else ""))


BEGIN = "<!-- bench.py: begin (generated by make bench; edits here are lost) -->"
END = "<!-- bench.py: end -->"


def update_doc(path, results, speed_lines, moves_lines, scal, qual_lines,
               command, equal_lines=None, equal_totals="", builder_lines=None):
    m = results["machine"]
    parts = [BEGIN, "",
             "## Benchmark: speed (make bench)", "",
             "```sh", command, "```", "",
             f"Machine: {machine_line(m)}. Measured "
             f"{results['date']}; times are medians of the stated runs, "
             "wall clock, release build.", "",
             md_table(speed_lines), ""]
    parts += ["Columns: `load` = `commsched validate`; one column per pass of "
              "the default pipeline (its own `wall_ms`); `simulate` = the "
              "simulator alone (`simulate --verbose`); `save` = the save's own "
              "time in `optimize --passes none --verbose -o OUT` (opening, "
              "writing and renaming the output), the median of at least two "
              "runs; `pipeline` = the "
              "whole `commsched optimize --stats=json` command (which also "
              "prints every pass's statistics); `optimize ÷ load` = plain "
              "`commsched optimize -o OUT` (load, default pipeline, save) "
              "over `validate`, the median of the same back-to-back pairs' "
              "ratios (seven pairs up to 100K nodes; not run stepwise); RSS = peak resident set of "
              "the command. A pass that ran past the cap was killed: the "
              "cell says so and the passes after it did not run.", ""]
    if moves_lines:
        parts += ["Moves made by the iterative passes:", ""]
        parts += [f"- {l}" for l in moves_lines] + [""]
    if scal:
        parts += ["Scaling, time ratio for 10x the nodes (10 = linear, "
                  "100 = quadratic):", ""]
        for s in scal:
            pp = ", ".join(f"{PASS_SHORT.get(k, k)} "
                           + (f"x{v:.1f}" if v is not None else "n/a")
                           for k, v in s.get("passes", []))
            parts.append(
                f"- {s['from']:,} -> {s['to']:,} nodes: load x{s['load']:.1f}"
                + (f", simulate x{s['simulate']:.1f}" if s['simulate'] else "")
                + (f", save x{s['save']:.1f}" if s['save'] else "")
                + (f"; passes: {pp}" if pp else ""))
        parts.append("")
    if builder_lines:
        parts += ["### Through the builder API (as a compiler calls it)", "",
                  "`bench/builder_bench.c`: a DDP-shaped step (matmul, async "
                  "all-reduce, wait per layer) built node by node through "
                  "the public builder API, then one `commsched_optimize` "
                  "call: the cost model, a simulation of the input order, "
                  "the default pipeline and a simulation of its order. No "
                  "JSON anywhere; RSS = peak resident set of the process.",
                  "", md_table(builder_lines), ""]
    parts += ["## Benchmark: schedule quality (make bench)", "",
              "Every corpus workload (graphs/README.md) under each pipeline, "
              "judged by the simulator (h100 profile, NCCL model): makespan, "
              "exposed communication, efficiency = lower bound / makespan, "
              "peak memory per step (the scheduling memory model) and over "
              "simulated time. `input` is the file's own order (the naive "
              "compiler order for generated and imported graphs); passes "
              "beyond the seed's that `optimize --list-passes` shows run "
              "alone, each in its own row. The lower bound counts the fake "
              "edges an order respects (decide_global_ordering_of_comms, "
              "first in Inductor's pipeline, adds them), so a pipeline can "
              "raise its own bound: compare makespans across pipelines, "
              "efficiencies within one. `gap closed` = (input - x) / (input "
              "- the input's lower bound); `peak x input` = per-step peak / "
              "the input order's. `inductor b=X` is Inductor's pipeline with "
              "both per-pass budgets at X (0.2 is its default); `overlap "
              "B=Y` the overlap pass with overlap_peak_budget=Y; `tune B=Y` "
              "`commsched tune --budget Y`.", "",
              md_table(qual_lines), ""]
    if equal_lines:
        parts += ["### At equal memory: overlap and tune against the anchors",
                  "", "Per workload and memory budget (x the input order's "
                  "per-step peak): the fastest of Inductor's variants, "
                  "raise_comms,sink_waits and reorder_compute_for_overlap "
                  "whose peak fits the budget, beside overlap and tune at "
                  "that budget.", "", md_table(equal_lines), "",
                  equal_totals, ""]
    parts += [END]
    replace_block(path, BEGIN, END, parts)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--sizes", default="10000,100000,1000000",
                    help="chain graph sizes (nodes) for the speed table")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(here, "results.json"))
    ap.add_argument("--cap", type=float, default=180.0,
                    help="seconds a pipeline or pass may run before it is "
                         "killed and reported as capped")
    ap.add_argument("--stepwise-above", type=int, default=200000,
                    help="run the pipeline pass by pass above this many "
                         "nodes")
    ap.add_argument("--no-llama", action="store_true",
                    help="skip the llama2-70b --fine speed row")
    ap.add_argument("--sections", default="speed,builder,quality")
    ap.add_argument("--corpus", default=os.path.join(root, "graphs"))
    ap.add_argument("--update-doc", default=None,
                    help="rewrite the bench's sections of this file "
                         "(docs/PERFORMANCE.md)")
    a = ap.parse_args()
    cli = a.cli
    sections = a.sections.split(",")
    # The generated block holds every section: rewriting it from some
    # would drop the others' tables from the document.
    every = {"speed", "builder", "quality"}
    if a.update_doc and not every <= set(sections):
        ap.error("--update-doc rewrites every section's tables; run it with "
                 "--sections speed,builder,quality (got %s)" % a.sections)
    results = {"machine": machine(),
               "cli": os.path.relpath(cli, root)
               if os.path.abspath(cli).startswith(root + os.sep) else cli,
               "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "cap_s": a.cap, "speed": [], "quality": []}
    print("machine:", machine_line(results["machine"]), flush=True)
    tmp = tempfile.mkdtemp(prefix="commsched-bench-")
    speed_lines, moves_lines, scal, qual_lines = [["-"]], [], [], [["-"]]
    equal_lines, equal_totals, builder_lines = None, "", None
    try:
        if "speed" in sections:
            graphs = []
            for n in [int(s) for s in a.sizes.split(",") if s]:
                graphs.append((f"chain {n // 1000}k" if n < 1000000 else
                               f"chain {n // 1000000}M",
                               ["generate", "chain", "--nodes", str(n)]))
            if not a.no_llama:
                graphs.append(("llama2-70b fsdp --fine",
                               ["generate", "fsdp", "--preset", "llama2-70b",
                                "--fine"]))
            for label, gen in graphs:
                g = os.path.join(tmp, "graph.json")
                gen_s, gen_rss, _, _ = run([cli] + gen + ["-o", g])
                row = speed_row(cli, label, g, a.repeat, a.cap,
                                a.stepwise_above, tmp)
                row["command"] = "commsched " + " ".join(gen)
                row["generate_s"] = gen_s
                row["generate_rss_mib"] = gen_rss
                results["speed"].append(row)
                os.remove(g)
                print(f"{label:>24}: {row['nodes']:,} nodes, load "
                      f"{fmt_s(row['load_s'])}, passes "
                      f"{', '.join(fmt_pass(p) for p in row['per_pass'])}, "
                      f"simulate {row['simulate_ms']:.1f} ms, save "
                      f"{fmt_s(row['save_s'])}", flush=True)
            speed_lines, moves_lines = speed_table(results["speed"])
            scal = scaling(results["speed"])
            results["scaling"] = [
                {**s, "passes": [{"pass": k, "ratio": v}
                                 for k, v in s.get("passes", [])]}
                for s in scal]
            print("\nspeed (" + machine_line(results["machine"]) + ")")
            print(text_table(speed_lines))
            for l in moves_lines:
                print("  " + l)
            for s in scal:
                print(f"  scaling {s['from']:,} -> {s['to']:,} nodes: load "
                      f"x{s['load']:.1f}, "
                      + ", ".join(f"{PASS_SHORT.get(k, k)} "
                                  + (f"x{v:.1f}" if v else "n/a")
                                  for k, v in s.get("passes", [])))
        if "builder" in sections:
            results["builder"] = builder_rows(
                cli, [int(x) for x in a.sizes.split(",") if x], a.cap)
            builder_lines = builder_table(results["builder"])
            print("\nthrough the builder API (bench/builder_bench.c)")
            print(text_table(builder_lines))
        if "quality" in sections:
            files = corpus(a.corpus)
            pipelines, rows = quality(cli, files, a.cap, tmp)
            results["pipelines"] = [{"name": n, "passes": p, "args": x}
                                    for n, p, x in pipelines]
            results["quality"] = rows
            qual_lines = quality_table(rows)
            print("\nquality (simulated on h100, nccl model)")
            print(text_table(qual_lines))
            equal_lines, equal_totals = equal_memory_table(rows)
            print("\nat equal memory budgets (x the input's per-step peak)")
            print(text_table(equal_lines))
            print(equal_totals)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    print("\nresults written to", a.out)
    if a.update_doc:
        cmd = "make bench   # = sh bench/run.sh build/release"
        update_doc(a.update_doc, results, speed_lines, moves_lines, scal,
                   qual_lines, cmd, equal_lines, equal_totals, builder_lines)
        print("tables written to", a.update_doc)


if __name__ == "__main__":
    main()
