#!/usr/bin/env python3
"""Deterministic random commsched graphs (format v1) for differential tests.

random_graph(seed) builds a valid graph whose node array is a topological
order of every edge kind. It mixes:
  * compute nodes (some gemm_like), reading 0-3 available buffers (rarely
    one twice), producing 1-2 outputs (some never read; rarely none),
    occasionally a view (alias_of an input);
  * async collectives on one of two groups, each completed by a later wait
    that outputs an alias of the collective's output (consumers read the
    alias); sometimes one wait completes two collectives; some all_reduces
    are in place (output alias_of their input), and nodes read the
    buffer before the in-place write and, by its own name, after its wait;
    the file order is race-free (docs/FORMAT.md, "In-place writes"): no
    node reads a buffer an in-flight collective writes in place, and no
    collective writes in place what an in-flight collective reads;
  * sync collectives (async: false) whose output anyone may read, sometimes
    also completed by a wait;
  * freeable and non-freeable graph inputs, some unread; graph outputs
    (compute outputs, wait aliases, occasionally an input);
  * `after` and `after_fake` edges to earlier nodes (collectives included);
  * compute nodes whose outputs carry a "from" (a fused kernel's outputs,
    each computed from some of its inputs: a subset, possibly empty),
    drawn from a second generator so that the graphs are otherwise those
    the seeds made before "from" existed;
  * sizes and runtimes from small sets, with zeros and exact ties, so the
    passes' tie-breaking and zero-runtime branches are exercised; a
    collective's sizes fit its op and group (docs/FORMAT.md, "Collective
    sizes": fitted_size), where its input has bytes.
Every node carries runtime_ns, so no cost model is involved.

Usage: random_graph.py SEED [N_NODES]  -> the graph JSON on stdout.
"""
import json
import random
import sys

SIZES = [0, 1, 4, 16, 16, 64, 100, 256, 1000, 4096]
RUNTIMES = [0, 0, 1, 1, 2, 3, 5, 5, 10, 20, 50, 100, 0.5, 0.1, 2.5]
COMM_RUNTIMES = [0, 1, 5, 10, 20, 40, 50, 100, 200, 7.5, 0.3]
GATHER_LIMIT = 1 << 20  # gathers of gathers would grow k-fold each time


def fitted_size(op, in_size, k, drawn):
    """(op, output size) for a collective reading in_size bytes on k ranks:
    an all_gather writes k x its input, a reduce_scatter 1/k of it, an
    all_reduce or broadcast as much. An all_gather past GATHER_LIMIT or a
    reduce_scatter of bytes k does not divide becomes an all_reduce.
    all_to_all (uneven splits are real) and a 0-byte input (unknown) keep
    the drawn size."""
    if in_size == 0 or op == "all_to_all":
        return op, drawn
    if op == "all_gather" and in_size * k <= GATHER_LIMIT:
        return op, in_size * k
    if op == "reduce_scatter" and in_size % k == 0:
        return op, in_size // k
    if op in ("all_gather", "reduce_scatter"):
        op = "all_reduce"
    return op, in_size


def random_graph(seed, n_nodes=None, group_sizes=(8, 16)):
    """The graph of seed; group_sizes: the ranks of g0 and g1 (the
    collectives' sizes are fitted to them)."""
    rng = random.Random(seed)
    fused = random.Random(seed * 2654435761 + 1)  # the outputs' "from"
    if n_nodes is None:
        n_nodes = rng.randint(6, 36)
    groups = [{"name": "g0", "size": group_sizes[0], "hosts": 1},
              {"name": "g1", "size": group_sizes[1],
               "hosts": min(2, group_sizes[1])}]
    ranks = {"g0": group_sizes[0], "g1": group_sizes[1]}
    inputs = []
    readable = []  # buffers anyone may read
    root = {}  # buffer -> the root of its alias chain
    size = {}  # root buffer -> its size
    writing = set()  # roots an in-flight collective writes in place
    reading = []  # roots in-flight (or never waited) collectives read
    effects = {}  # collective -> (root it reads or None, root it writes)
    for i in range(rng.randint(1, 4)):
        name = f"in{i}"
        inp = {"name": name, "size": rng.choice(SIZES)}
        r = rng.random()
        if r < 0.5:
            inp["freeable"] = True
        elif r < 0.75:
            inp["freeable"] = False
        inputs.append(inp)
        root[name] = name
        size[name] = inp["size"]
        if rng.random() < 0.85:
            readable.append(name)
    nodes = []
    pending = []  # [due index, [(coll name, coll out buffer)...]]
    wait_aliases = []
    n_coll = 0

    def pick_inputs(k):
        cands = [b for b in readable if root[b] not in writing]
        if not cands:
            return []
        return rng.sample(cands, min(k, len(cands)))

    def add_edges(node):
        if nodes and rng.random() < 0.25:
            node["after"] = sorted({rng.choice(nodes)["name"]
                                    for _ in range(rng.randint(1, 2))})
        if nodes and rng.random() < 0.2:
            cand = [n["name"] for n in nodes
                    if n["name"] not in node.get("after", [])]
            if cand:
                node["after_fake"] = sorted({rng.choice(cand)
                                             for _ in range(rng.randint(1, 2))})

    def runtime(comm=False):
        return rng.choice(COMM_RUNTIMES if comm else RUNTIMES)

    i = 0
    while len(nodes) < n_nodes or pending:
        idx = len(nodes)
        due = [p for p in pending if p[0] <= idx]
        if due or (len(nodes) >= n_nodes and pending):
            p = due[0] if due else pending[0]
            pending.remove(p)
            for c, _ in p[1]:
                rd, wr = effects.pop(c)
                if rd is not None:
                    reading.remove(rd)
                writing.discard(wr)
            name = f"w{idx}"
            ins = [b for _, b in p[1]]
            outs = [{"name": f"{name}_{k}", "alias_of": b}
                    for k, (_, b) in enumerate(p[1])]
            node = {"name": name, "kind": "wait", "op": "wait_tensor",
                    "inputs": ins, "outputs": outs,
                    "runtime_ns": rng.choice([0, 0, 0, 1, 0.5])}
            add_edges(node)
            nodes.append(node)
            for o in outs:
                root[o["name"]] = root[o["alias_of"]]
                readable.append(o["name"])
                wait_aliases.append(o["name"])
            continue
        r = rng.random()
        if r < 0.22 and len(nodes) < n_nodes:
            # async collective
            name = f"c{idx}"
            n_coll += 1
            op = rng.choice(["all_reduce", "all_gather", "reduce_scatter",
                             "all_to_all"])
            ins = pick_inputs(1)
            node = {"name": name, "kind": "collective", "op": op,
                    "group": rng.choice(["g0", "g1"]), "inputs": ins,
                    "runtime_ns": runtime(comm=True)}
            if op == "all_reduce" and ins and rng.random() < 0.5 and \
                    root[ins[0]] not in reading:
                out = {"name": f"{name}_out", "alias_of": ins[0]}
                root[out["name"]] = root[ins[0]]
                writing.add(root[ins[0]])
                effects[name] = (root[ins[0]], root[ins[0]])
            else:
                in_size = size[root[ins[0]]] if ins else 0
                k = ranks[node["group"]]
                node["op"], out_size = fitted_size(op, in_size, k,
                                                   rng.choice(SIZES))
                out = {"name": f"{name}_out", "size": out_size}
                root[out["name"]] = out["name"]
                size[out["name"]] = out_size
                effects[name] = (root[ins[0]] if ins else None, None)
            if ins:
                reading.append(root[ins[0]])
            node["outputs"] = [out]
            add_edges(node)
            nodes.append(node)
            if rng.random() < 0.95:
                due_at = idx + 1 + rng.randint(0, 8)
                # sometimes share the wait of a pending collective
                if pending and rng.random() < 0.15:
                    pending[-1][1].append((name, out["name"]))
                else:
                    pending.append([due_at, [(name, out["name"])]])
                    pending.sort(key=lambda p: p[0])
            continue
        if r < 0.28 and len(nodes) < n_nodes:
            # sync collective
            name = f"s{idx}"
            node = {"name": name, "kind": "collective",
                    "op": rng.choice(["all_to_all", "all_reduce",
                                      "broadcast"]),
                    "group": rng.choice(["g0", "g1"]), "async": False,
                    "inputs": pick_inputs(1),
                    "outputs": [{"name": f"{name}_out",
                                 "size": rng.choice(SIZES)}],
                    "runtime_ns": runtime(comm=True)}
            ins = node["inputs"]
            node["op"], node["outputs"][0]["size"] = fitted_size(
                node["op"], size[root[ins[0]]] if ins else 0,
                ranks[node["group"]],
                node["outputs"][0]["size"])
            root[f"{name}_out"] = f"{name}_out"
            size[f"{name}_out"] = node["outputs"][0]["size"]
            effects[name] = (None, None)
            add_edges(node)
            nodes.append(node)
            if rng.random() < 0.2:
                pending.append([idx + 1 + rng.randint(0, 3),
                                [(name, f"{name}_out")]])
                pending.sort(key=lambda p: p[0])
            else:
                readable.append(f"{name}_out")
            continue
        # compute
        name = f"n{idx}"
        ins = pick_inputs(rng.choice([0, 1, 1, 2, 2, 3]))
        if ins and rng.random() < 0.05:
            ins.append(ins[0])  # a buffer read twice
        outs = [{"name": f"{name}_o", "size": rng.choice(SIZES)}]
        if rng.random() < 0.05:
            outs = []  # no outputs: reachable only through `after` edges
        if rng.random() < 0.25:
            outs.append({"name": f"{name}_x", "size": rng.choice(SIZES)})
        if ins and rng.random() < 0.1:
            outs.append({"name": f"{name}_v", "alias_of": ins[0]})
        for o in outs:
            root[o["name"]] = root[o["alias_of"]] if "alias_of" in o \
                else o["name"]
            if "size" in o:
                size[o["name"]] = o["size"]
        if ins and fused.random() < 0.4:
            distinct = sorted(set(ins))
            for o in outs:
                if fused.random() < 0.7:
                    o["from"] = fused.sample(
                        distinct, fused.randint(0, len(distinct)))
        node = {"name": name, "kind": "compute",
                "op": rng.choice(["mm", "relu", "add", "mul"]),
                "inputs": ins, "outputs": outs, "runtime_ns": runtime()}
        if rng.random() < 0.3:
            node["gemm_like"] = True
        add_edges(node)
        nodes.append(node)
        for k, o in enumerate(outs):
            # the second real output is read less often (unread buffers)
            if k == 0 or rng.random() < 0.4:
                readable.append(o["name"])
        i += 1
    outputs = []
    cands = [b for n in nodes if n["kind"] != "collective"
             for b in (o["name"] for o in n["outputs"])]
    if inputs and rng.random() < 0.1:
        cands.append(inputs[0]["name"])  # an input listed as an output
    for b in rng.sample(cands, min(len(cands), rng.randint(0, 3))):
        outputs.append(b)
    if wait_aliases and rng.random() < 0.3:
        b = rng.choice(wait_aliases)
        if b not in outputs:
            outputs.append(b)
    return {"format": "commsched-graph", "version": 1,
            "name": f"random-{seed}", "groups": groups, "inputs": inputs,
            "outputs": outputs, "nodes": nodes}


def main(argv):
    seed = int(argv[0])
    n = int(argv[1]) if len(argv) > 1 else None
    json.dump(random_graph(seed, n), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
