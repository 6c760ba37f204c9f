"""commsched's Inductor-named passes against torch 2.13's own, on real
compiled programs: for every anchors/<graph>.torch-<pass>.order under the
given directory (written by graphs/torch/make_transformer_graphs.py from
torch._inductor.comms' function of that name on the graph's scheduler
nodes, with commsched's runtimes), `commsched optimize <graph>.json
--passes <pass>` must give exactly that order. Prints one line per
(graph, pass); exit 1 at the first difference, with where it is.

  torch_orders.py --cli build/debug/tools/commsched graphs/torch
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def read_order(path):
    with open(path) as fh:
        return [line.strip() for line in fh
                if line.strip() and not line.startswith("#")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("dir")
    args = ap.parse_args()
    anchors = sorted(glob.glob(os.path.join(args.dir, "anchors",
                                            "*.torch-*.order")))
    anchors = [a for a in anchors
               if not a.endswith(".torch-fx-overlap.order")]
    if not anchors:
        print("no torch pass orders under %s/anchors" % args.dir)
        return 1
    bad = 0
    for path in anchors:
        base, _, rest = os.path.basename(path).rpartition(".torch-")
        pname = rest[:-len(".order")]
        graph = os.path.join(args.dir, base + ".json")
        out = subprocess.run([args.cli, "optimize", graph, "--passes", pname,
                              "-o", "-"], capture_output=True, text=True)
        if out.returncode != 0:
            print("%s --passes %s: exit %d: %s" % (graph, pname,
                                                   out.returncode,
                                                   out.stderr.strip()))
            return 1
        mine = [n["name"] for n in json.loads(out.stdout)["nodes"]]
        theirs = read_order(path)
        if mine == theirs:
            print("%s %s: equal (%d nodes)" % (base, pname, len(mine)))
            continue
        at = next((i for i, (a, b) in enumerate(zip(mine, theirs))
                   if a != b), min(len(mine), len(theirs)))
        print("%s %s: DIFFERENT from position %d: torch %s, commsched %s"
              % (base, pname, at, theirs[at:at + 4], mine[at:at + 4]))
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
