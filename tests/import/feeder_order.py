#!/usr/bin/env python3
"""import chakra orders the nodes as ASTRA-sim's feeder issues them:
Kahn's algorithm, the smallest ready Id first (docs/WORKLOADS.md). The
importer compares indices instead of Ids when the records list their Ids
in ascending order, and keeps the records' own order when each also
follows its dependencies (chakra_common.c, order_nodes): this checks
those cases, Ids ascending with dependencies listed later, and records
listed in descending and in shuffled order, against the order computed
here from the trace itself.

    feeder_order.py CLI SCRATCH_DIR
"""
import heapq
import json
import os
import random
import subprocess
import sys


def expected(recs):
    ids = {r["Id"] for r in recs}
    users = {i: [] for i in ids}
    indeg = {}
    for r in recs:
        deps = set(r["data_deps"])
        indeg[r["Id"]] = len(deps)
        for d in deps:
            users[d].append(r["Id"])
    ready = [i for i in ids if indeg[i] == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        v = heapq.heappop(ready)
        out.append(v)
        for u in users[v]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, u)
    return out


def main():
    cli, scratch = sys.argv[1], sys.argv[2]
    os.makedirs(scratch, exist_ok=True)
    rng = random.Random(7)
    # 40 compute nodes; node k may read up to two nodes of smaller Id, so
    # many are ready at once and the Id rule decides their order.
    base = []
    for k in range(40):
        nid = 1000 + 7 * k
        deps = sorted({1000 + 7 * rng.randrange(k) for _ in range(rng.randrange(3))}) if k else []
        base.append({"Id": nid, "Name": "op%d" % k, "NodeType": 4,
                     "ctrlDeps": [], "data_deps": deps,
                     "runtime": 100 + k})
    want = expected(base)
    shuffled = base[:]
    rng.shuffle(shuffled)
    layouts = {"ascending": (base, want), "descending": (base[::-1], want),
               "shuffled": (shuffled, want)}
    # Ids ascending but nodes reading nodes listed after them: the
    # importer's shortcut for records already in feeder order (every one
    # after its dependencies) must not apply.
    fwd = []
    for k in range(40):
        deps = sorted({1000 + 7 * rng.randrange(k + 1, 40) for _ in range(rng.randrange(3))}) if k < 39 else []
        fwd.append({"Id": 1000 + 7 * k, "Name": "op%d" % k, "NodeType": 4,
                    "ctrlDeps": [], "data_deps": deps, "runtime": 100 + k})
    layouts["ascending-forward"] = (fwd, expected(fwd))
    failed = 0
    for name, (recs, want) in layouts.items():
        src = os.path.join(scratch, name + ".json")
        dst = os.path.join(scratch, name + ".graph.json")
        with open(src, "w") as f:
            json.dump({"workload_graph": recs, "workload_name": name,
                       "ngpus": 1}, f)
        r = subprocess.run([cli, "import", "chakra", src, "-o", dst],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print("FAIL %s: exit %d: %s" % (name, r.returncode, r.stderr))
            failed = 1
            continue
        with open(dst) as f:
            got = [int(n["name"].split(":")[0]) for n in json.load(f)["nodes"]]
        if got != want:
            print("FAIL %s: order %s, want %s" % (name, got, want))
            failed = 1
        else:
            print("ok %s: %d nodes in feeder order" % (name, len(got)))
    return failed


if __name__ == "__main__":
    sys.exit(main())
