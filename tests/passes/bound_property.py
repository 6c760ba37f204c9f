#!/usr/bin/env python3
"""The stream bound (docs/REPORTS.md, "Lower bound") holds for every
schedule the tool makes: on random graphs (random_graph.py), the valid
corpus and the bench's workload suite, every pass alone, the anchor
pipelines of bench/overlap_bench.py (Inductor's at each budget,
simple_overlap, bucketed, TBB), overlap at every budget and its search
modes, and `tune`. For each output:
  * an order of the same graph (no bucketing pass ran): its makespan is
    at least the INPUT's stream bound, and its own stream bound equals the
    input's (the bound does not depend on the order);
  * a bucketed graph (another graph): its makespan is at least its own
    stream bound.
The bound is never below the old terms (compute stream load, busiest
comm stream). Random orders of one graph (every order of small ones) are
tests/unit/test_bound.c's: an order written back to a file is another
program when it moves a read across an in-place write (docs/FORMAT.md,
"In-place writes"), so this test keeps to the orders the passes make.

usage: bound_property.py --cli CLI --corpus DIR [--suite DIR] --seeds N
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_graph  # noqa: E402

INDUCTOR = ("decide_global_ordering_of_comms,"
            "reorder_communication_preserving_peak_memory,"
            "sink_waits_iterative,"
            "reorder_communication_preserving_peak_memory")
BUCKETING = ("bucket_all_gather", "bucket_reduce_scatter",
             "bucket_all_reduce", "bucket_transformer_blocks")


def pipelines(passes):
    out = [(p, []) for p in passes]
    out += [(INDUCTOR, ["reorder_iterative_peak_memory_budget=%s" % b,
                        "sink_iterative_peak_memory_budget=%s" % b])
            for b in ("0", "0.1")]
    out += [("raise_comms,sink_waits", []),
            ("bucket_all_gather,bucket_reduce_scatter,simple_overlap",
             ["bucket_cap_mb=500"])]
    out += [("overlap", ["overlap_peak_budget=%s" % b])
            for b in ("1.0", "1.25", "inf")]
    out += [("overlap", ["overlap_search=full"])]
    return out


def simulate(cli, path):
    p = subprocess.run([cli, "simulate", "--format", "json", path],
                       check=True, capture_output=True, text=True)
    d = json.loads(p.stdout)
    return d["totals"]["makespan_ns"], d["lower_bound"]


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--suite", default=None,
                    help="also these workloads (graphs/{examples,astra,"
                         "generated,torch}/*.json, one transformer step)")
    ap.add_argument("--seeds", type=int, default=20)
    a = ap.parse_args(argv)
    lst = subprocess.run([a.cli, "optimize", "--list-passes"], check=True,
                         capture_output=True, text=True).stdout
    passes, on = [], False
    for line in lst.splitlines():
        if line.startswith("passes:"):
            on = True
        elif on and not line.strip():
            break
        elif on:
            passes.append(line.split()[0])
    failures, checked, tighter = [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        graphs = sorted(glob.glob(os.path.join(a.corpus, "*", "input.json")))
        if a.suite:
            for sub in ("examples", "astra", "torch"):
                graphs += sorted(
                    g for g in glob.glob(os.path.join(a.suite, sub, "*.json"))
                    if "/transformer-" not in g)
            # one of the ~1K-node compiled transformer steps (each costs
            # ~20 s of CLI runs here; the others are in the anchor and
            # torch-order properties)
            graphs.append(os.path.join(a.suite, "torch",
                                       "transformer-fsdp-16L-1.json"))
            graphs += [os.path.join(a.suite, "generated", x) for x in
                       ("llama3-8b-fsdp-fine-4L.json", "llama3-8b-tp.json")]
        for seed in range(1, a.seeds + 1):
            path = os.path.join(tmp, "r%d.json" % seed)
            with open(path, "w") as f:
                json.dump(random_graph.random_graph(seed), f)
            graphs.append(path)
        out = os.path.join(tmp, "out.json")
        for g in graphs:
            mk, lb = simulate(a.cli, g)
            bound = lb["stream_bound_ns"]
            if bound < lb["compute_stream_ns"] * (1 - 1e-12) or \
               bound < lb["busiest_comm_stream_ns"] * (1 - 1e-12):
                failures.append("%s: stream bound %r below a load term %r"
                                % (g, bound, lb))
            if bound > mk:
                failures.append("%s: input makespan %r < stream bound %r"
                                % (g, mk, bound))
            if bound > max(lb["compute_stream_ns"],
                           lb["busiest_comm_stream_ns"],
                           lb["critical_path_ns"]) * (1 + 1e-9):
                tighter += 1
            cases = pipelines(passes) + [("tune", None)]
            for name, sets in cases:
                if name == "tune":
                    subprocess.run([a.cli, "tune", g, "--budget", "inf",
                                    "-o", out], check=True,
                                   capture_output=True)
                else:
                    cmd = [a.cli, "optimize", "--passes", name, g, "-o", out]
                    for s in sets:
                        cmd += ["--set", s]
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    if r.returncode != 0:
                        failures.append("%s %s: rc %d %s" % (
                            g, name, r.returncode, r.stderr.strip()[:200]))
                        continue
                omk, olb = simulate(a.cli, out)
                checked += 1
                same_graph = not any(b in name for b in BUCKETING) and \
                    name != "tune"
                if omk < olb["stream_bound_ns"]:
                    failures.append("%s %s: makespan %r below its own stream "
                                    "bound %r" % (g, name, omk,
                                                  olb["stream_bound_ns"]))
                if same_graph and omk < bound:
                    failures.append("%s %s: makespan %r below the input's "
                                    "stream bound %r" % (g, name, omk, bound))
                if same_graph and not close(olb["stream_bound_ns"], bound):
                    failures.append("%s %s: stream bound %r, input's %r "
                                    "(order-dependent)" % (
                                        g, name, olb["stream_bound_ns"],
                                        bound))
    for f in failures[:20]:
        print("FAIL", f)
    print("%d graphs, %d schedules checked, stream bound above the old terms "
          "on %d graphs, %d failures" % (len(graphs), checked, tighter,
                                         len(failures)))
    return 1 if failures or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
