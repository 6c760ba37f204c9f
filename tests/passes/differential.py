#!/usr/bin/env python3
"""Differential test: the C passes (through the CLI) against the seed
transliteration (seed_reference.py) on deterministic random graphs.

For every seed and the chosen pipeline it runs
    commsched optimize G --passes P --set ... --verify-memory --stats=json -o OUT
and seed_reference.run(G, P, knobs), and requires:
  * the same final node order;
  * per pass: the same fake edges added and peak memory before/after;
  * the same statistics rows in the same order: node, moves, grouped, the
    limiting factor's first line, the overlap_info and moves_info texts,
    comm/comp time and initial/final exposed time (relative tolerance
    1e-9).

Usage:
  differential.py --cli PATH [--pipeline LABEL ... | --all] [--seeds N]
                  [--first SEED] [--big N] [--list]
Exit status 0 when everything matches, 1 on any mismatch (each one printed
with the command that reproduces it).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import random_graph  # noqa: E402
import seed_reference  # noqa: E402

RCPPM = "reorder_communication_preserving_peak_memory"
SINK = "sink_waits_iterative"
DECIDE = "decide_global_ordering_of_comms"
DEFAULT = seed_reference.DEFAULT_PIPELINE

# label -> (passes, knobs)
PIPELINES = {
    "raise_comms": ("raise_comms", []),
    "sink_waits": ("sink_waits", []),
    "reorder_compute_for_overlap": ("reorder_compute_for_overlap", []),
    "decide_global_ordering_of_comms": (DECIDE, []),
    "rcppm": (RCPPM, []),
    "sink_waits_iterative": (SINK, []),
    "default": (DEFAULT, []),
    "raise_comms+sink_waits": ("raise_comms,sink_waits", []),
    "decide+reorder_compute_for_overlap":
        (DECIDE + ",reorder_compute_for_overlap", []),
    "heap-after-iterative":
        (DECIDE + "," + SINK + "," + RCPPM + ",raise_comms,sink_waits", []),
    "decide-after-iterative":
        (RCPPM + "," + SINK + "," + DECIDE + ",reorder_compute_for_overlap",
         []),
    "rcppm-runtime": (RCPPM, [("reorder_iterative_use_runtime_estimations",
                               "true")]),
    "sink-runtime": (SINK, [("sink_iterative_use_runtime_estimations",
                             "true")]),
    "default-runtime": (DEFAULT, [
        ("reorder_iterative_use_runtime_estimations", "true"),
        ("sink_iterative_use_runtime_estimations", "true"),
        ("reorder_iterative_extra_comm_comp_overlap", "0"),
        ("sink_iterative_extra_comm_comp_overlap", "0.25"),
        ("reorder_sink_runtime_estimations_comm_mult", "1.5")]),
    "default-budget0": (DEFAULT, [
        ("reorder_iterative_peak_memory_budget", "0"),
        ("sink_iterative_peak_memory_budget", "0")]),
    "default-budget1": (DEFAULT, [
        ("reorder_iterative_peak_memory_budget", "1.0"),
        ("sink_iterative_peak_memory_budget", "1.0")]),
    "rcppm-safe": (RCPPM, [("reorder_iterative_unsafe_collectives_reorder",
                            "false")]),
    "rcppm-group-colls": (RCPPM, [
        ("reorder_iterative_group_with_collectives", "true")]),
    "rcppm-group-colls-runtime": (RCPPM, [
        ("reorder_iterative_group_with_collectives", "true"),
        ("reorder_iterative_use_runtime_estimations", "true")]),
    "sink-swap-colls": (SINK, [
        ("sink_waits_iterative_swap_with_collectives", "true")]),
    "sink-swap-colls-runtime-safe": (SINK, [
        ("sink_waits_iterative_swap_with_collectives", "true"),
        ("sink_iterative_use_runtime_estimations", "true"),
        ("sink_waits_iterative_unsafe_collectives_reorder", "false")]),
    "debug-limits": (DEFAULT, [
        ("reorder_iterative_debug_limit_to_reorder", "1"),
        ("sink_waits_iterative_debug_limit_to_sink", "2")]),
}

STAT_TIMES = ("comm_time_ns", "comp_time_ns", "initial_exposed_ns",
              "final_exposed_ns")


def first_line(s):
    return s.split("\n", 1)[0]


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def compare(c_order, c_passes, ref):
    """Returns a list of difference descriptions (empty when equal)."""
    diffs = []
    if c_order != ref["order"]:
        diffs.append(f"order:\n   C:  {c_order}\n   py: {ref['order']}")
    if len(c_passes) != len(ref["passes"]):
        diffs.append(f"{len(c_passes)} pass records vs {len(ref['passes'])}")
        return diffs
    for cp, rp in zip(c_passes, ref["passes"]):
        where = rp["pass"]
        if cp["pass"] != rp["pass"]:
            diffs.append(f"pass {cp['pass']} vs {rp['pass']}")
            continue
        for key in ("fake_edges_added", "peak_memory_before",
                    "peak_memory_after"):
            if cp[key] != rp[key]:
                diffs.append(f"{where}: {key} C {cp[key]} py {rp[key]}")
        cn = [r["node"] for r in cp["nodes"]]
        rn = [r["node"] for r in rp["nodes"]]
        if cn != rn:
            diffs.append(f"{where}: rows C {cn} py {rn}")
            continue
        for cr, rr in zip(cp["nodes"], rp["nodes"]):
            w = f"{where}[{cr['node']}]"
            for key in ("moves", "grouped"):
                if cr[key] != rr[key]:
                    diffs.append(f"{w}: {key} C {cr[key]} py {rr[key]}")
            # the JSON's null is the seed's "None"
            cl, rl = (first_line(cr["limiting_factor"] or "None"),
                      first_line(rr["limiting_factor"]))
            if cl != rl:
                diffs.append(f"{w}: limiting factor\n   C:  {cl!r}\n"
                             f"   py: {rl!r}")
            for key in ("overlap_info", "moves_info"):
                if key in cr and cr[key] != capped(key, rr[key]):
                    diffs.append(f"{w}: {key}\n   C:  {cr[key]!r}\n"
                                 f"   py: {rr[key]!r}")
            for key in STAT_TIMES:
                if not close(cr[key], rr[key]):
                    diffs.append(f"{w}: {key} C {cr[key]!r} py {rr[key]!r}")
    return diffs


# The C passes keep the first CS_OVERLAP_INFO_TERMS terms of overlap_info
# and moves_info (passes/passes_internal.h) and say how many they left out;
# the reference keeps the seed's full text, so cut it the same way.
INFO_TERMS = 32


def capped(key, text):
    if key == "moves_info":
        names = [t for t in text.split("+") if t]
        if len(names) <= INFO_TERMS:
            return text
        return ("".join("+" + t for t in names[:INFO_TERMS]) +
                f"+...({len(names) - INFO_TERMS} more)")
    terms = re.findall(r"\+[^\[]*\[[^\]]*\]", text)
    stop = re.search(r"->[WC]\[[^\]]*\]$", text)
    if len(terms) <= INFO_TERMS:
        return text
    return ("".join(terms[:INFO_TERMS]) +
            f"+...({len(terms) - INFO_TERMS} more)" +
            (stop.group(0) if stop else ""))


def run_c(cli, path, passes, knobs, tmpdir):
    out = os.path.join(tmpdir, "out.json")
    cmd = [cli, "optimize", path, "--passes", passes, "--verify-memory",
           "--stats=json", "-o", out]
    for k, v in knobs:
        cmd += ["--set", f"{k}={v}"]
    for attempt in range(6):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=60)
            break
        except subprocess.TimeoutExpired:
            return None, None, "no answer within 60 s", cmd
        except OSError as e:  # the CLI is being relinked: wait for it
            if attempt == 5:
                return None, None, f"cannot run the CLI: {e}", cmd
            time.sleep(1)
    if p.returncode != 0:
        return None, None, f"exit {p.returncode}: {p.stderr.strip()}", cmd
    with open(out) as f:
        order = [n["name"] for n in json.load(f)["nodes"]]
    return order, json.loads(p.stdout), None, cmd


BIG_FIRST = 100001  # seeds from here on get BIG_NODES nodes
BIG_NODES = 64


def graph_for(seed):
    if seed >= BIG_FIRST:
        return random_graph.random_graph(seed, BIG_NODES)
    return random_graph.random_graph(seed)


def check_one(cli, seed, label, tmpdir):
    passes, knobs = PIPELINES[label]
    doc = graph_for(seed)
    path = os.path.join(tmpdir, f"g{seed}.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    c_order, c_passes, err, cmd = run_c(cli, path, passes, knobs, tmpdir)
    if err:
        diffs = [f"C failed: {err}"]
    else:
        try:
            ref = seed_reference.run(doc, passes, knobs)
        except Exception as e:  # a reference crash is a mismatch too
            diffs = [f"reference failed: {type(e).__name__}: {e}"]
        else:
            diffs = compare(c_order, c_passes, ref)
    os.unlink(path)
    return diffs, cmd


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=False)
    ap.add_argument("--pipeline", action="append", default=[])
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--seeds", type=int, default=120)
    ap.add_argument("--first", type=int, default=1)
    ap.add_argument("--big", type=int, default=0,
                    help=f"also this many {BIG_NODES}-node graphs "
                    f"(seeds from {BIG_FIRST})")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--expect-labels", metavar="A;B;...",
                    help="check that the labels registered with ctest are "
                    "exactly the pipelines defined here")
    a = ap.parse_args(argv)
    if a.expect_labels is not None:
        want = a.expect_labels.split(";")
        if sorted(want) != sorted(PIPELINES):
            print("ctest labels and PIPELINES differ:",
                  sorted(set(want) ^ set(PIPELINES)))
            return 1
        print(f"{len(want)} pipeline labels registered")
        return 0
    if a.list:
        for label, (p, k) in PIPELINES.items():
            print(label, p, " ".join(f"{x}={y}" for x, y in k))
        return 0
    if not a.cli:
        ap.error("--cli is required")
    labels = list(PIPELINES) if a.all else a.pipeline
    for label in labels:
        if label not in PIPELINES:
            ap.error(f"unknown pipeline {label!r} (see --list)")
    failures = 0
    compared = 0
    with tempfile.TemporaryDirectory() as tmpdir:
        for label in labels:
            seeds = list(range(a.first, a.first + a.seeds)) + \
                list(range(BIG_FIRST, BIG_FIRST + a.big))
            for seed in seeds:
                diffs, cmd = check_one(a.cli, seed, label, tmpdir)
                compared += 1
                if diffs:
                    failures += 1
                    print(f"MISMATCH {label} seed {seed}:")
                    for d in diffs[:8]:
                        print("  " + d)
                    n = f" {BIG_NODES}" if seed >= BIG_FIRST else ""
                    print("  reproduce: python3 " +
                          os.path.join(HERE, "random_graph.py") +
                          f" {seed}{n} > g.json && " +
                          " ".join(cmd).replace(
                              os.path.join(tmpdir, f"g{seed}.json"), "g.json"))
    print(f"{compared} graph x pipeline comparisons, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
