#!/usr/bin/env python3
"""make bench, MPI part: FSDP and DDP steps on N ranks of this machine,
input order vs Inductor's pipeline vs the best pipeline available, measured
by `commsched run` against the simulator's prediction (docs/RUNTIME.md,
docs/PERFORMANCE.md "MPI runtime").

usage: mpi_bench.py --cli PATH [--np 4] [--iters 15] [--repeat 3]
                    [--ratio 1.0] [--work DIR] [--json OUT] [--quick]
                    [--realtime]

1. Generate each workload with the collectives' sizes fixed.
2. Calibrate: run the input order once with --calibrate; every collective's
   solo time on this machine becomes its runtime_ns in the graph, and the
   compute runtimes are set so that compute is `ratio` x the communication
   of a layer (the workload is "scaled to this machine").
3. Schedules: the input order; `commsched optimize` with Inductor's default
   pipeline; the candidate pipeline this build lists with the lowest
   simulated makespan (on the calibrated runtimes) whose per-step peak
   memory stays within the Inductor pipeline's own (listed only when its
   order differs from Inductor's); and, when another candidate is faster
   at any memory, that one too.
4. Run each schedule `repeat` times under mpirun; report the median of the
   measured step medians, their spread (the standard deviation over a
   run's iterations, % of its mean; median over the runs), the predicted
   step (calibrated simulation) and the error, and the speed-up over the
   input order.
With Open MPI everything runs twice: with its single-copy transfers (CMA:
the receiving rank copies a whole message inside one MPI_Test, so compute
nodes that test stretch by the copy) and with copy-in/copy-out through
shared-memory fragments (btl_vader_single_copy_mechanism none: slower
transfers, bounded work per test). Each transport is calibrated on its
own, so compute is balanced against that transport's communication.
--realtime runs mpirun under `chrt -f 1` (SCHED_FIFO, priority 1): on a
machine shared with builds and tests the ranks then get a core when they
wake up, and the figures describe the schedule rather than the neighbours
(the kernel's RT throttle still leaves others 5% of every core; the ranks
sleep through their compute, so they take far less).
Prints a Markdown table; exits 0 with a note when MPI is not available.
Standard library only.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def is_open_mpi():
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    return bool(mpirun) and "Open MPI" in subprocess.run(
        [mpirun, "--version"], capture_output=True, text=True).stdout


def realtime_ok():
    return bool(shutil.which("chrt")) and subprocess.run(
        ["chrt", "-f", "1", "true"], capture_output=True).returncode == 0


def mpirun_cmd(np_, realtime=False, extra=()):
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    if not mpirun:
        return None, None
    env = dict(os.environ)
    cmd = [mpirun]
    if realtime:
        cmd = ["chrt", "-f", "1", mpirun]
    if is_open_mpi():
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        cmd += ["--oversubscribe", "--mca", "btl", "self,vader"]
    return cmd + list(extra) + ["-np", str(np_)], env


# ---- workloads ---------------------------------------------------------------


def node(name, kind, inputs, outputs, **kw):
    n = {"name": name, "kind": kind, "inputs": inputs, "outputs": outputs}
    n.update(kw)
    return n


def out(name, size):
    return {"name": name, "size": size}


def alias(name, of):
    return {"name": name, "alias_of": of}


def fsdp(world, layers, w_bytes, act_bytes, fwd_ns, bwd_ns):
    """FSDP (ZeRO-3): every layer's weights are all-gathered before its
    forward and again before its backward; weight gradients are
    reduce-scattered. Input order: every wait right after its collective,
    i.e. no prefetch (eager FSDP without forward/backward prefetch)."""
    g = {"format": "commsched-graph", "version": 1,
         "name": "fsdp-%dx%d" % (layers, world),
         "groups": [{"name": "dp", "size": world}],
         "inputs": [{"name": "x", "size": act_bytes, "freeable": True}],
         "outputs": [], "nodes": []}
    N = g["nodes"]
    for i in range(layers):
        g["inputs"].append({"name": "w%d_shard" % i,
                            "size": w_bytes // world})
    prev = "x"
    for i in range(layers):
        N.append(node("ag_f%d" % i, "collective", ["w%d_shard" % i],
                      [out("agf%d" % i, w_bytes)], op="all_gather",
                      group="dp", dtype="bfloat16"))
        N.append(node("ag_f%d_wait" % i, "wait", ["agf%d" % i],
                      [alias("wf%d" % i, "agf%d" % i)]))
        N.append(node("fwd%d" % i, "compute", [prev, "wf%d" % i],
                      [out("h%d" % i, act_bytes)], op="mm", gemm_like=True,
                      runtime_ns=fwd_ns))
        prev = "h%d" % i
    N.append(node("loss", "compute", [prev], [out("dh%d" % layers, act_bytes)],
                  runtime_ns=fwd_ns // 10))
    for i in reversed(range(layers)):
        N.append(node("ag_b%d" % i, "collective", ["w%d_shard" % i],
                      [out("agb%d" % i, w_bytes)], op="all_gather",
                      group="dp", dtype="bfloat16"))
        N.append(node("ag_b%d_wait" % i, "wait", ["agb%d" % i],
                      [alias("wb%d" % i, "agb%d" % i)]))
        below = "h%d" % (i - 1) if i > 0 else "x"
        N.append(node("bwd%d" % i, "compute",
                      ["dh%d" % (i + 1), below, "wb%d" % i],
                      [out("dh%d" % i, act_bytes), out("dw%d" % i, w_bytes)],
                      op="mm", gemm_like=True, runtime_ns=bwd_ns))
        N.append(node("rs%d" % i, "collective", ["dw%d" % i],
                      [out("rso%d" % i, w_bytes // world)],
                      op="reduce_scatter", group="dp", dtype="bfloat16",
                      reduce_op="sum"))
        N.append(node("rs%d_wait" % i, "wait", ["rso%d" % i],
                      [alias("gs%d" % i, "rso%d" % i)]))
        g["outputs"].append("gs%d" % i)
    g["outputs"].append("dh0")
    return g


def ddp(world, layers, grad_bytes, act_bytes, fwd_ns, bwd_ns):
    """DDP: one gradient bucket per layer, all-reduced as soon as the
    layer's backward produced it; the optimizer reads every bucket. Input
    order: every wait right after its all-reduce (no overlap)."""
    g = {"format": "commsched-graph", "version": 1,
         "name": "ddp-%dx%d" % (layers, world),
         "groups": [{"name": "dp", "size": world}],
         "inputs": [{"name": "x", "size": act_bytes, "freeable": True}],
         "outputs": ["params"], "nodes": []}
    N = g["nodes"]
    prev = "x"
    for i in range(layers):
        N.append(node("fwd%d" % i, "compute", [prev],
                      [out("h%d" % i, act_bytes)], op="mm", gemm_like=True,
                      runtime_ns=fwd_ns))
        prev = "h%d" % i
    N.append(node("loss", "compute", [prev], [out("dh%d" % layers, act_bytes)],
                  runtime_ns=fwd_ns // 10))
    reduced = []
    for i in reversed(range(layers)):
        below = "h%d" % (i - 1) if i > 0 else "x"
        N.append(node("bwd%d" % i, "compute", ["dh%d" % (i + 1), below],
                      [out("dh%d" % i, act_bytes),
                       out("grad%d" % i, grad_bytes)],
                      op="mm", gemm_like=True, runtime_ns=bwd_ns))
        N.append(node("ar%d" % i, "collective", ["grad%d" % i],
                      [out("aro%d" % i, grad_bytes)], op="all_reduce",
                      group="dp", dtype="float32", reduce_op="avg"))
        N.append(node("ar%d_wait" % i, "wait", ["aro%d" % i],
                      [alias("gr%d" % i, "aro%d" % i)]))
        reduced.append("gr%d" % i)
    N.append(node("optimizer", "compute", reduced + ["dh0"],
                  [out("params", 64)], runtime_ns=fwd_ns // 5))
    return g


# ---- running ----------------------------------------------------------------


class Bench:
    def __init__(self, args, work, extra=()):
        self.cli = args.cli
        self.np = args.np
        self.iters = args.iters
        self.repeat = args.repeat
        self.work = work
        os.makedirs(work, exist_ok=True)
        self.mpirun, self.env = mpirun_cmd(args.np, args.realtime, extra)

    def run(self, graph_path, calibrate=5, iters=None, warmup=3):
        out = graph_path + ".run.json"
        cmd = self.mpirun + [self.cli, "run", "--format", "json", "-o", out,
                             "--no-progress", "--iters",
                             str(iters or self.iters), "--warmup",
                             str(warmup), "--calibrate", str(calibrate),
                             "--timeout", "120", graph_path]
        p = subprocess.run(cmd, capture_output=True, text=True, env=self.env,
                           timeout=900)
        if p.returncode != 0:
            sys.exit("mpi_bench: %s failed:\n%s" % (" ".join(cmd), p.stderr))
        with open(out) as f:
            return json.load(f)

    def cli_json(self, *argv):
        p = subprocess.run([self.cli] + list(argv), capture_output=True,
                           text=True, timeout=300)
        if p.returncode != 0:
            sys.exit("mpi_bench: commsched %s failed:\n%s" %
                     (" ".join(argv), p.stderr))
        return p.stdout

    def optimize(self, src, dst, passes=None, sets=()):
        argv = ["optimize", src, "-o", dst]
        if passes:
            argv += ["--passes", passes]
        for s in sets:
            argv += ["--set", s]
        self.cli_json(*argv)
        return dst

    def simulate(self, path):
        """(makespan, per-step peak memory) of the file's order."""
        r = json.loads(self.cli_json("simulate", "--format", "json", path))
        return r["totals"]["makespan_ns"], r["memory"]["peak_per_step"]


def calibrated(b, g, path, ratio, layer_colls, fwd_share):
    """Times every collective alone on this machine, writes the times into
    the graph and sizes the compute so that a layer's compute is `ratio`
    times its communication."""
    with open(path, "w") as f:
        json.dump(g, f)
    rep = b.run(path, calibrate=5, iters=1, warmup=1)
    solo = {c["name"]: c["solo_ns"] for c in rep["collectives"]}
    comm_per_layer = sum(solo.values()) / layer_colls
    compute = ratio * comm_per_layer
    fwd = int(compute * fwd_share)
    bwd = int(compute - fwd)
    for n in g["nodes"]:
        if n["kind"] == "collective":
            n["runtime_ns"] = int(solo[n["name"]])
        elif n["name"].startswith("fwd"):
            n["runtime_ns"] = fwd
        elif n["name"].startswith("bwd"):
            n["runtime_ns"] = bwd
        elif n["name"] == "loss":
            n["runtime_ns"] = fwd // 10
        elif n["name"] == "optimizer":
            n["runtime_ns"] = fwd // 5
    with open(path, "w") as f:
        json.dump(g, f, indent=1)
    return comm_per_layer, fwd, bwd


def order_of(path):
    with open(path) as f:
        return [n["name"] for n in json.load(f)["nodes"]]


def candidates(b):
    text = b.cli_json("optimize", "--list-passes")
    names = set()
    for line in text.splitlines():
        if line.startswith("  ") and line.split():
            names.add(line.split()[0])
    cands = [("default", None, ()),
             ("default, runtime estimates", None,
              ("reorder_iterative_use_runtime_estimations=true",
               "sink_iterative_use_runtime_estimations=true")),
             ("default, budget 1.0", None,
              ("reorder_iterative_peak_memory_budget=1.0",
               "sink_iterative_peak_memory_budget=1.0"))]
    for p in ("reorder_compute_for_overlap", "raise_comms,sink_waits",
              "overlap", "overlap,sink_waits_iterative", "tune"):
        if all(x in names for x in p.split(",")):
            cands.append((p, p, ()))
    return cands


def bench_workload(b, label, g, ratio, layer_colls, fwd_share):
    base = os.path.join(b.work, label)
    path = base + ".input.json"
    comm, fwd, bwd = calibrated(b, g, path, ratio, layer_colls, fwd_share)
    schedules = [("input order", path),
                 ("Inductor pipeline",
                  b.optimize(path, base + ".inductor.json"))]
    # Inductor's passes each allow +20% over their input, so the pipeline
    # may end well above 1.2x the input's peak; "best" may use no more
    # memory than the Inductor pipeline does.
    _, budget = b.simulate(schedules[1][1])
    best = fastest = None
    for i, (name, passes, sets) in enumerate(candidates(b)):
        dst = "%s.cand%d.json" % (base, i)
        try:
            b.optimize(path, dst, passes, sets)
        except SystemExit:
            continue
        mk, peak = b.simulate(dst)
        if peak <= budget and (best is None or mk < best[0]):
            best = (mk, name, dst)
        if fastest is None or mk < fastest[0]:
            fastest = (mk, name, dst)
    same = best and order_of(best[2]) == order_of(schedules[1][1])
    if best and not same:
        schedules.append(("best within Inductor's memory: " + best[1],
                          best[2]))
    if fastest and (not best or fastest[2] != best[2]) and \
            order_of(fastest[2]) != order_of(schedules[1][1]):
        schedules.append(("fastest at any memory: " + fastest[1],
                          fastest[2]))
    rows = []
    for name, p in schedules:
        steps, preds, exposed, peaks, sds = [], [], [], [], []
        for _ in range(b.repeat):
            rep = b.run(p)
            steps.append(rep["step"]["median_ns"])
            sds.append(100.0 * (rep["step"]["stddev_ns"] or 0) /
                       rep["step"]["mean_ns"])
            preds.append(rep["step"]["predicted_ns"])
            exposed.append(rep["totals"]["exposed_ns"])
            peaks.append(rep["memory"]["peak"])
        rows.append({"workload": label, "schedule": name, "graph": p,
                     "measured_ns": statistics.median(steps),
                     "measured_all_ns": steps,
                     "spread_pct": statistics.median(sds),
                     "predicted_ns": statistics.median(preds),
                     "exposed_ns": statistics.median(exposed),
                     "peak_bytes": max(peaks)})
    for r in rows:
        r["error_pct"] = 100.0 * (r["measured_ns"] - r["predicted_ns"]) / \
            r["predicted_ns"]
        r["speedup"] = rows[0]["measured_ns"] / r["measured_ns"]
        r["predicted_speedup"] = rows[0]["predicted_ns"] / r["predicted_ns"]
    return rows, {"comm_per_layer_ns": comm, "fwd_ns": fwd, "bwd_ns": bwd}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True)
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--iters", type=int, default=15)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ratio", type=float, default=1.0,
                    help="a layer's compute / its communication")
    ap.add_argument("--work", default=None)
    ap.add_argument("--json", default=None, help="write the rows here")
    ap.add_argument("--realtime", action="store_true",
                    help="run mpirun under chrt -f 1 (shared machines)")
    ap.add_argument("--quick", action="store_true",
                    help="fewer iterations and one repetition")
    args = ap.parse_args()
    if args.quick:
        args.iters, args.repeat = 5, 1
    h = subprocess.run([args.cli, "run", "--help"], capture_output=True,
                       text=True)
    if "has: mpi" not in h.stdout.replace("\n", " "):
        print("mpi_bench: this build has no MPI runtime; skipped")
        return 0
    if not mpirun_cmd(args.np)[0]:
        print("mpi_bench: no mpirun; skipped")
        return 0
    args.work = args.work or tempfile.mkdtemp(prefix="commsched-mpi-bench-")
    os.makedirs(args.work, exist_ok=True)
    if args.realtime and not realtime_ok():
        print("mpi_bench: chrt -f 1 is not permitted here; running without "
              "--realtime")
        args.realtime = False
    transports = [("default", ())]
    if is_open_mpi():
        transports = [("single-copy (CMA)", ()),
                      ("copy-in/copy-out", ("--mca",
                                            "btl_vader_single_copy_mechanism",
                                            "none"))]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    ncpu = os.cpu_count() or 1
    print("## MPI runtime: %d ranks on %d cores (load %.1f), %d iterations x "
          "%d runs%s" % (args.np, ncpu, load, args.iters, args.repeat,
                         ", SCHED_FIFO" if args.realtime else ""))
    if load > ncpu * 0.75 and not args.realtime:
        print("(warning: the machine is busy; timings will be noisy; "
              "--realtime isolates the ranks)")
    all_rows, notes = [], {}
    L = 6
    for ti, (tname, extra) in enumerate(transports):
        b = Bench(args, os.path.join(args.work, "t%d" % ti), extra)
        # FSDP: 3 MiB of bf16 weights per layer gathered twice, gradients
        # reduce-scattered; activations 1 MiB. Backward = 2/3 of compute.
        rows, n = bench_workload(b, "fsdp", fsdp(args.np, L, 3 << 20, 1 << 20,
                                                 0, 0), args.ratio, L, 1.0 / 3)
        # DDP: a 2 MiB fp32 gradient bucket per layer.
        rows2, n2 = bench_workload(b, "ddp", ddp(args.np, L, 2 << 20, 1 << 20,
                                                 0, 0), args.ratio, L, 1.0 / 3)
        for r in rows + rows2:
            r["transport"] = tname
        all_rows += rows + rows2
        notes["fsdp, " + tname] = n
        notes["ddp, " + tname] = n2
    print()
    print("| transport | workload | schedule | measured step | spread | "
          "predicted | error | speed-up (measured) | speed-up (predicted) | "
          "exposed comm | peak memory |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in all_rows:
        print("| %s | %s | %s | %.2f ms | %.1f%% | %.2f ms | %+.1f%% | %.2fx | "
              "%.2fx | %.2f ms | %.1f MiB |" % (
                  r["transport"], r["workload"], r["schedule"],
                  r["measured_ns"] / 1e6, r["spread_pct"],
                  r["predicted_ns"] / 1e6, r["error_pct"], r["speedup"],
                  r["predicted_speedup"], r["exposed_ns"] / 1e6,
                  r["peak_bytes"] / 2**20))
    print()
    for k, v in notes.items():
        print("%s: collectives of a layer %.2f ms alone; forward %.2f ms, "
              "backward %.2f ms per layer" % (
                  k, v["comm_per_layer_ns"] / 1e6, v["fwd_ns"] / 1e6,
                  v["bwd_ns"] / 1e6))
    print("graphs and reports: %s" % args.work)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"np": args.np, "load": load, "cores": ncpu,
                       "realtime": args.realtime, "rows": all_rows,
                       "notes": notes}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
