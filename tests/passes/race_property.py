#!/usr/bin/env python3
"""Property (issue 20, part 1): on random graphs that hold an in-place
collective and another node reading the buffer it writes, every pipeline's
output order passes `commsched validate --races` (and, in debug builds, the
race checker the pipeline runs between passes). Graphs without such a pair
are skipped and do not count toward --graphs.

usage: race_property.py --cli CLI --graphs N
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import random_graph  # noqa: E402

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


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--graphs", type=int, default=1000)
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
            with open(path, "w") as f:
                json.dump(doc, f)
            for pl in PIPELINES:
                r = subprocess.run([a.cli, "optimize", "--passes", pl, path,
                                    "-o", out], capture_output=True, text=True)
                if r.returncode == 0:
                    r = subprocess.run([a.cli, "validate", "--races", out],
                                       capture_output=True, text=True)
                if r.returncode != 0:
                    failures += 1
                    if failures <= 20:
                        print(f"FAIL seed {seed} --passes {pl}: "
                              f"{r.stderr.strip().splitlines()[:1]}")
    print(f"{counted} graphs with in-place readers (seeds 1..{seed}) x "
          f"{len(PIPELINES)} pipelines, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
