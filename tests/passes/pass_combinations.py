#!/usr/bin/env python3
"""Every pass `optimize --list-passes` lists, alone and followed by every
other (ordered pairs), plus the issue-20 triple, runs clean under
--verify-memory on the valid corpus and on random graphs. An earlier pass
may legitimately cross fake edges (RCPPM, sink_waits_iterative); a later
pass that checked them anyway failed valid graphs with an ordering error.

In one process through the Python binding (commsched.optimize with
verify=True: what --verify-memory sets); the first --cli-graphs graphs
also end to end through the CLI (a process start per graph and list).

usage: pass_combinations.py --cli CLI --corpus DIR --seeds N [--cli-graphs M]
  (COMMSCHED_LIBRARY: the build's library)
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "python"))
import commsched  # noqa: E402

TRIPLE = ("decide_global_ordering_of_comms,"
          "reorder_communication_preserving_peak_memory,overlap")


def list_passes(cli):
    out = subprocess.run([cli, "optimize", "--list-passes"], check=True,
                         capture_output=True, text=True).stdout
    names, on = [], False
    for line in out.splitlines():
        if line.startswith("passes:"):
            on = True
        elif on and not line.strip():
            break
        elif on:
            names.append(line.split()[0])
    if len(names) < 2:
        raise SystemExit(f"--list-passes listed {names}")
    return names


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--cli-graphs", type=int, default=2)
    a = ap.parse_args(argv)
    passes = list_passes(a.cli)
    lists = passes + [f"{x},{y}" for x in passes for y in passes] + [TRIPLE]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        graphs = sorted(glob.glob(os.path.join(a.corpus, "*", "input.json")))
        for seed in range(1, a.seeds + 1):
            path = os.path.join(tmp, f"r{seed}.json")
            with open(path, "w") as f:
                json.dump(random_graph.random_graph(seed), f)
            graphs.append(path)
        out = os.path.join(tmp, "out.json")
        for k, g in enumerate(graphs):
            graph = commsched.Graph.load(g)
            for pl in lists:
                why = None
                try:
                    commsched.optimize(graph, pl, verify=True)
                except commsched.Error as e:
                    why = f"{e.status}: {e}"
                if why is None and k < a.cli_graphs:
                    r = subprocess.run([a.cli, "optimize", "--verify-memory",
                                        "--passes", pl, g, "-o", out],
                                       capture_output=True, text=True)
                    if r.returncode != 0:
                        why = (f"CLI rc={r.returncode} "
                               f"{r.stderr.strip().splitlines()[:1]}")
                if why is not None:
                    failures += 1
                    if failures <= 20:
                        print(f"FAIL --passes {pl} {g}: {why}")
    print(f"{len(graphs)} graphs x {len(lists)} pass lists "
          f"({min(len(graphs), a.cli_graphs)} graphs also through the CLI), "
          f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
