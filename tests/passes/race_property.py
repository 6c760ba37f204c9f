#!/usr/bin/env python3
"""Property (issue 20, part 1): on random graphs that hold an in-place
collective and another node reading the buffer it writes, every pipeline's
output order passes the race check (and, in debug builds, the race checker
the pipeline runs between passes). Graphs without such a pair are skipped
and do not count toward --graphs.

Through the Python binding, in one process (commsched.optimize, then
commsched.check_order: the library calls `commsched validate --races`
makes); the first --cli-graphs graphs also end to end through the CLI
(`optimize -o`, then `validate --races` on the file written), which costs
two process starts per graph and pipeline.

usage: race_property.py --cli CLI --graphs N [--cli-graphs M]
  (PYTHONPATH: the source tree's python/; COMMSCHED_LIBRARY: the library)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_graph  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
import commsched  # noqa: E402

PIPELINES = ["overlap", "raise_comms", "sink_waits",
             "reorder_compute_for_overlap",
             "decide_global_ordering_of_comms,"
             "reorder_communication_preserving_peak_memory",
             "sink_waits_iterative", "simple_overlap",
             "decide_global_ordering_of_comms,"
             "reorder_communication_preserving_peak_memory,"
             "sink_waits_iterative,overlap"]


def has_inplace_reader(doc):
    """An in-place collective output (alias_of a buffer the collective did
    not create) whose root another node also reads."""
    root, made = {}, {}
    for i in doc.get("inputs", []):
        root[i["name"]] = i["name"]
    for n in doc["nodes"]:
        for o in n.get("outputs", []):
            root[o["name"]] = root.get(o.get("alias_of"), o["name"])
            made[o["name"]] = n["name"]
    written = {}
    for n in doc["nodes"]:
        if n["kind"] != "collective":
            continue
        for o in n.get("outputs", []):
            if "alias_of" in o and made.get(root[o["name"]]) != n["name"]:
                written[root[o["name"]]] = n["name"]
    for n in doc["nodes"]:
        for b in n.get("inputs", []):
            r = root.get(b)
            if r in written and written[r] != n["name"] and \
                    n["kind"] != "wait":
                return True
    return False


def in_process(g, pl):
    """None when the pipeline's order passes the race check, else why."""
    try:
        commsched.check_order(g, commsched.optimize(g, pl).indices)
    except commsched.Error as e:
        return f"{e.status} {e.path}: {e}"
    return None


def through_cli(cli, pl, path, out):
    r = subprocess.run([cli, "optimize", "--passes", pl, path, "-o", out],
                       capture_output=True, text=True)
    if r.returncode == 0:
        r = subprocess.run([cli, "validate", "--races", out],
                           capture_output=True, text=True)
    if r.returncode != 0:
        return f"CLI: {r.stderr.strip().splitlines()[:1]}"
    return None


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--graphs", type=int, default=1000)
    ap.add_argument("--cli-graphs", type=int, default=25)
    a = ap.parse_args(argv)
    counted, seed, failures = 0, 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        path, out = os.path.join(tmp, "g.json"), os.path.join(tmp, "o.json")
        while counted < a.graphs:
            seed += 1
            if seed > 50 * a.graphs:
                print(f"only {counted} graphs with in-place readers")
                return 1
            doc = random_graph.random_graph(seed)
            if not has_inplace_reader(doc):
                continue
            counted += 1
            if counted <= a.cli_graphs:
                with open(path, "w") as f:
                    json.dump(doc, f)
            g = commsched.Graph.from_document(doc)
            for pl in PIPELINES:
                err = in_process(g, pl)
                if err is None and counted <= a.cli_graphs:
                    err = through_cli(a.cli, pl, path, out)
                if err is not None:
                    failures += 1
                    if failures <= 20:
                        print(f"FAIL seed {seed} --passes {pl}: {err}")
    print(f"{counted} graphs with in-place readers (seeds 1..{seed}) x "
          f"{len(PIPELINES)} pipelines ({min(counted, a.cli_graphs)} also "
          f"through the CLI), {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
