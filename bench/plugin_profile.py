"""Where the Inductor plugin's time goes on one real program: compiles a
program of graphs/torch/transformer_steps.py (torch 2.13.0, CPU, fake
process group of 8 ranks, compile only) and, on the scheduler nodes
Inductor hands its reorder hook (forward, then backward), measures in
CPU seconds (the process's: on a shared machine the wall clock counts the
time others held the cores):

- commsched.inductor.document() with Python's cyclic collector on and
  off, called in the hook's own thread (the plugin pauses the collector:
  a full collection over the compile's millions of tracked objects costs
  more than the adapter), then as the plugin calls it, in a thread of its
  own (CPython 3.11's frame-chunk faults at the hook's depth, see
  _on_fresh_stack in python/commsched/inductor.py), with the page faults
  of each call;
- three commsched.inductor.reorder() calls in a row (the default
  pipeline), with their phases;
- at each hook, the graph's size and the process's peak resident memory
  so far;
- with --plugin-only, only the calls the plugin makes (document() in its
  own thread, reorder()): at 36K nodes the hook's-thread calls with the
  collector on cost minutes over a compile's tens of millions of tracked
  objects;
- with --profile, cProfile of one document() call (process-time timer,
  in the adapter's own thread), the functions that take the most time;
- with --fx, the same program compiled again with commsched's FX pass
  (commsched.fx.post_grad_pass): each FX graph's size, from_fx() in the
  pass's thread and in its own (as the pass calls it) with their page
  faults, and the pass's CPU time (and, with --profile, its cProfile);
- with --bucket, the program compiled again with commsched's FX
  bucketing ahead of the FX pass (post_grad_pass(bucket={"bucket_cap_mb":
  25})): per FX graph the FX level's simulated makespans of the default
  pipeline before and after bucketing, bucket_fx's time split into
  from_fx, the library's bucketing and torch's merge helpers (with
  --profile its cProfile), and at the hook the scheduler nodes'
  makespans as handed over and after the plugin, with their compute.

  COMMSCHED_LIBRARY=build/release/libcommsched.so PYTHONPATH=python \\
    build/venv/bin/python bench/plugin_profile.py tp 29 [--profile] [--fx]
    [--plugin-only] [--bucket]

docs/PERFORMANCE.md, "The Inductor plugin at real size", quotes it.
"""
import argparse
import cProfile
import gc
import io
import os
import pstats
import resource
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "graphs", "torch"))


def faults():
    """The process's minor page faults so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def per_node(seconds, n):
    return "%.1f" % (seconds / n * 1e6)


def profiled(fn, *args):
    """fn(*args) under cProfile (process-time timer); the top functions.
    ``fn`` is the undecorated function (``__wrapped__``): it runs in a
    thread of its own as the plugin runs it (inductor._on_fresh_stack),
    the profiler enabled inside that thread (cProfile sees only the
    thread it is enabled in: profiling the decorated call from the hook's
    thread times only the wait for the worker)."""
    import commsched.inductor as ci
    pr = cProfile.Profile(time.process_time)

    def inside():
        pr.enable()
        try:
            fn(*args)
        finally:
            pr.disable()
    ci._on_fresh_stack(inside)()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(15)
    return out.getvalue()


def fx_level(ts, kind, layers, profile):
    """Compiles again with commsched's FX pass, timing each call."""
    import commsched.fx as cfx
    fx_pass = cfx.post_grad_pass()
    inner = fx_pass.__class__.__call__

    def timed(self, graph):
        n = sum(1 for _ in graph.nodes)
        if profile:
            # from_fx runs in a thread of its own inside the pass, which
            # the pass's profile cannot see: profiled apart, then the pass
            print("  from_fx():\n" + profiled(cfx.from_fx.__wrapped__,
                                               graph), flush=True)
            print("  the FX pass, from_fx's thread left out:\n" +
                  profiled(inner, self, graph), flush=True)
            return
        for mode in ("hook's thread", "own thread"):
            # from_fx as it ran before (in the pass's thread, collector
            # paused) and as the pass calls it (a thread of its own)
            f0, c0 = faults(), time.process_time()
            if mode == "own thread":
                cfx.from_fx(graph)
            else:
                gc.disable()
                cfx.from_fx.__wrapped__(graph)
                gc.enable()
            dt = time.process_time() - c0
            print("  from_fx(), %s: %s us of CPU an FX node, %d page faults"
                  % (mode, per_node(dt, n), faults() - f0), flush=True)
        c0 = time.process_time()
        inner(self, graph)
        dt = time.process_time() - c0
        print("FX pass: %d FX nodes, %.2f s of CPU (%s us a node)"
              % (n, dt, per_node(dt, n)), flush=True)
    fx_pass.__class__.__call__ = timed
    ts.compile_step(kind, layers, lambda snodes: snodes,
                    config={"post_grad_custom_post_pass": fx_pass})


def fx_makespans(result):
    """'input X, pipeline Y ms (compute C)' of an optimize() Result."""
    return "input %.2f, pipeline %.2f ms (compute %.2f)" % (
        result.before.makespan_ns / 1e6, result.after.makespan_ns / 1e6,
        result.after.compute_ns / 1e6)


def bucket_level(ts, kind, layers, profile, cap_mb=25):
    """Compiles again with commsched's FX bucketing ahead of its FX pass
    (post_grad_pass(bucket={"bucket_cap_mb": cap_mb}), as
    bench/torch_scale.py's fourth compile): for each FX graph, what the FX
    level's simulation says of the default pipeline before and after the
    bucketing, bucket_fx's wall time split (from_fx, the library's
    bucketing, torch's merge helpers; with --profile its cProfile); then,
    at the reorder hook, the scheduler nodes' makespan and compute as
    Inductor hands them over and after commsched's plugin."""
    import commsched
    import commsched.fx as cfx
    import commsched.inductor as ci
    import torch._inductor.fx_passes.bucketing as tb
    from torch._inductor.custom_graph_pass import CustomGraphPass
    spent = {}

    def timed(name, fn):
        def call(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + \
                    time.perf_counter() - t0
        return call
    # bucket_fx looks these names up in its module at each call
    cfx.from_fx = timed("from_fx", cfx.from_fx)
    cfx.optimize = timed("library", cfx.optimize)
    for merge in ("merge_all_gather_bucket", "merge_reduce_scatter_bucket",
                  "merge_all_reduce_bucket"):
        setattr(tb, merge, timed("torch's merges", getattr(tb, merge)))

    class Bucketing(CustomGraphPass):
        def __call__(self, graph):
            n = sum(1 for _ in graph.nodes)
            print("FX graph: %d FX nodes; unbucketed: %s"
                  % (n, fx_makespans(commsched.optimize(
                      cfx.from_fx(graph)))), flush=True)
            spent.clear()
            t0 = time.perf_counter()
            if profile:
                pr = cProfile.Profile()
                pr.enable()
            got = cfx.bucket_fx(graph, bucket_cap_mb=cap_mb)
            if profile:
                pr.disable()
            dt = time.perf_counter() - t0
            print("  bucket_fx: %d buckets in %.2f s wall (%s)"
                  % (sum(len(ps.buckets or ()) for ps in got.stats), dt,
                     ", ".join("%s %.2f s" % kv for kv in spent.items())),
                  flush=True)
            if profile:
                out = io.StringIO()
                pstats.Stats(pr, stream=out).sort_stats(
                    "cumtime").print_stats(25)
                print(out.getvalue(), flush=True)
            print("  bucketed: %s" % fx_makespans(commsched.optimize(
                cfx.from_fx(graph))), flush=True)
            cfx.reorder_fx(graph)

        def uuid(self):
            return None

    def hook(snodes):
        before = commsched.simulate(ci.to_graph(snodes))
        out = ci.reorder(snodes)
        after = commsched.simulate(ci.to_graph(out))
        print("scheduler nodes: %d; as handed over %.2f ms, after the "
              "plugin %.2f ms (compute %.2f)"
              % (len(snodes), before.makespan_ns / 1e6,
                 after.makespan_ns / 1e6, after.compute_ns / 1e6),
              flush=True)
        return out
    ts.compile_step(kind, layers, hook,
                    config={"post_grad_custom_post_pass": Bucketing()})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kind", choices=("fsdp", "tp", "2d", "moe"))
    ap.add_argument("layers", type=int)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--fx", action="store_true")
    ap.add_argument("--plugin-only", action="store_true")
    ap.add_argument("--bucket", action="store_true")
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    import transformer_steps as ts
    import commsched.inductor as ci
    ts.init_fake_world()
    seen = []

    def hook(snodes):
        n = len(snodes)
        # (the tracked objects' count walks them all: not with
        # --plugin-only, where the compile may be partly in swap)
        print("graph %d: %d scheduler nodes, %s objects tracked by the "
              "collector, peak RSS so far %.1f GiB"
              % (len(seen), n, "(not counted)" if a.plugin_only else
                 len(gc.get_objects()),
                 resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20),
              flush=True)
        seen.append(n)
        modes = ("own thread", "own thread") if a.plugin_only else \
            ("on", "off", "on", "off", "own thread", "own thread")
        for mode in modes:
            was = gc.isenabled()
            if mode == "off":
                gc.disable()
            f0 = faults()
            c0 = time.process_time()
            if mode == "own thread":
                ci.document(snodes)     # as the plugin calls it
            else:
                # the undecorated function, in this thread: the collector
                # as `mode` says
                ci.document.__wrapped__(snodes)
            dt = time.process_time() - c0
            if was:
                gc.enable()
            print("  document(), %-14s: %s us of CPU a node, %d page "
                  "faults" % ("own thread" if mode == "own thread" else
                              "collector " + mode, per_node(dt, n),
                              faults() - f0), flush=True)
        for i in range(3):
            split = {}
            c0 = time.process_time()
            ci.reorder(snodes, timings=split)
            print("  reorder() call %d: %s us of CPU a node (wall, us a "
                  "node: %s)" % (i, per_node(time.process_time() - c0, n),
                                 ", ".join("%s %s" % (k, per_node(v, n))
                                           for k, v in split.items())),
                  flush=True)
        if a.profile:
            print(profiled(ci.document.__wrapped__, snodes), flush=True)
        return snodes
    ts.compile_step(a.kind, a.layers, hook)
    if a.fx:
        fx_level(ts, a.kind, a.layers, a.profile)
    if a.bucket:
        bucket_level(ts, a.kind, a.layers, a.profile)


if __name__ == "__main__":
    main()
