#!/usr/bin/env python3
"""commsched generate: every family x preset validates, is deterministic,
has the expected collectives per layer, grows linearly with layers, and
llama2-70b --fine has the documented size (docs/WORKLOADS.md).

usage: test_generate.py CLI SCRATCH_DIR
Standard library only.
"""
import collections
import json
import os
import shutil
import subprocess
import sys

CLI, SCRATCH = sys.argv[1], sys.argv[2]
FAILURES = []

# Published configurations (docs/WORKLOADS.md) and what the generator must
# derive from them.
PRESETS = {
    # name: (params per dense layer, layernorm, recipe checkpoints layers)
    "llama3-8b": (9, False, False),
    "llama2-70b": (9, False, True),
    "mixtral-8x7b": (9, False, False),
    "gpt3-175b": (10, True, True),
}
# llama2-70b --fine, every layer: the size of the graph Inductor's
# maintainers profiled is about 36K nodes (PRs #183551, #183557).
LLAMA70B_FINE_NODES = 33213


def fail(msg):
    FAILURES.append(msg)
    print("FAIL:", msg, file=sys.stderr)


def run(args, expect=0):
    p = subprocess.run([CLI] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode != expect:
        fail(f"commsched {' '.join(args)}: exit {p.returncode}, expected "
             f"{expect}: {p.stderr.decode().strip()}")
    return p


def generate(args, path):
    run(["generate"] + args + ["-o", path])
    with open(path, "rb") as f:
        return f.read()


def counts(graph):
    c = collections.Counter()
    for n in graph["nodes"]:
        if n["kind"] == "collective":
            c[(n["op"], n["group"])] += 1
    return c


def expected_per_layer(family, preset, fine, sp):
    """Collectives one more layer adds, by (op, group)."""
    dense, _, ac = PRESETS[preset]
    e = collections.Counter()
    fsdp_params = 7 if family == "moe" else dense  # experts stay local
    if family in ("fsdp", "moe", "2d"):
        e[("all_gather", "dp")] = 2 * fsdp_params if fine else 2
        e[("reduce_scatter", "dp")] = fsdp_params if fine else 1
    if family == "ddp":
        e[("all_reduce", "dp")] = dense
    if family in ("tp", "2d"):
        recompute = 2 if ac else 0  # forward collectives run again
        if sp:
            e[("all_gather", "tp")] = 4 + recompute
            e[("reduce_scatter", "tp")] = 4 + recompute
        else:
            e[("all_reduce", "tp")] = 4 + recompute
    if family == "moe":
        e[("all_to_all", "ep")] = 4 + (2 if ac else 0)
    return e


def check_graph(label, g):
    """Properties every generated step has (docs/WORKLOADS.md)."""
    inputs = {i["name"]: i for i in g["inputs"]}
    for name in ("tokens", "labels"):
        if not inputs.get(name, {}).get("freeable"):
            fail(f"{label}: the batch input {name} is not freeable")
    params = [i for i in g["inputs"] if i["name"].endswith((".shard", ".master"))]
    if not params or any(i.get("freeable") for i in params):
        fail(f"{label}: parameters must be non-freeable inputs")
    if "head.loss" not in g["outputs"]:
        fail(f"{label}: the loss is not a graph output")
    if not any(o.endswith((".rs.wait", ".ar.wait", ".grad_cast"))
               for o in g["outputs"]):
        fail(f"{label}: no reduced gradient among the graph outputs")
    names = {n["name"]: i for i, n in enumerate(g["nodes"])}
    for i, n in enumerate(g["nodes"]):
        if n["kind"] == "collective":
            if "dtype" not in n:
                fail(f"{label}: collective {n['name']} has no dtype")
            if n["op"] in ("all_reduce", "reduce_scatter") and \
                    "reduce_op" not in n:
                fail(f"{label}: {n['name']} has no reduce_op")
            # the naive order: each collective is waited right away
            nxt = g["nodes"][i + 1] if i + 1 < len(g["nodes"]) else None
            if not nxt or nxt["kind"] != "wait" or \
                    nxt["inputs"] != [n["outputs"][0]["name"]]:
                fail(f"{label}: {n['name']} is not followed by its wait")
        if n["kind"] == "compute" and "flops" not in n and \
                "runtime_ns" not in n:
            fail(f"{label}: compute node {n['name']} has no flops")
    if len(names) != len(g["nodes"]):
        fail(f"{label}: duplicate node names")


def main():
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    configs = []
    for preset in PRESETS:
        fams = ["fsdp", "ddp", "tp", "2d"]
        if preset == "mixtral-8x7b":
            fams = ["moe"]
        for fam in fams:
            for fine in (False, True):
                configs.append((fam, preset, fine, False))
                if fam in ("tp", "2d"):
                    configs.append((fam, preset, fine, True))
    for fam, preset, fine, sp in configs:
        label = f"{fam} --preset {preset}{' --fine' if fine else ''}" \
                f"{' --sp' if sp else ''}"
        base = [fam, "--preset", preset] + (["--fine"] if fine else []) + \
               (["--sp"] if sp else [])
        sizes, per_layer = [], []
        for layers in (1, 2, 3):
            path = os.path.join(SCRATCH, f"g{layers}.json")
            data = generate(base + ["--layers", str(layers)], path)
            if layers == 2:
                again = generate(base + ["--layers", "2"],
                                 os.path.join(SCRATCH, "again.json"))
                if data != again:
                    fail(f"{label}: two runs differ (not deterministic)")
                run(["validate", path])
            try:
                g = json.loads(data)
            except ValueError as e:
                fail(f"{label}: output is not JSON: {e}")
                break
            if layers == 2:
                check_graph(label, g)
            sizes.append(len(g["nodes"]))
            per_layer.append(counts(g))
        if len(sizes) != 3:
            continue
        if sizes[2] - sizes[1] != sizes[1] - sizes[0] or sizes[1] <= sizes[0]:
            fail(f"{label}: node count not linear in layers: {sizes}")
        d1 = per_layer[1] - per_layer[0]
        d2 = per_layer[2] - per_layer[1]
        want = expected_per_layer(fam, preset, fine, sp)
        if d1 != want or d2 != want:
            fail(f"{label}: collectives per layer {dict(d1)} / {dict(d2)}, "
                 f"expected {dict(want)}")

    # The ~36K-node graph.
    path = os.path.join(SCRATCH, "llama2-70b-fine.json")
    g = json.loads(generate(["fsdp", "--preset", "llama2-70b", "--fine"],
                            path))
    n = len(g["nodes"])
    if n != LLAMA70B_FINE_NODES:
        fail(f"llama2-70b --fine: {n} nodes, docs/WORKLOADS.md says "
             f"{LLAMA70B_FINE_NODES}")
    if abs(n - 36000) > 0.1 * 36000:
        fail(f"llama2-70b --fine: {n} nodes is not within 10% of 36K")
    run(["validate", path])

    # The chain generator other tests and the bench rely on is unchanged.
    g = json.loads(generate(["chain", "--layers", "4"],
                            os.path.join(SCRATCH, "chain.json")))
    if len(g["nodes"]) != 37:
        fail(f"generate chain --layers 4: {len(g['nodes'])} nodes, not 37")

    # The family word may come anywhere among the options.
    for args in (["--no-clip", "fsdp", "--layers", "1"],
                 ["--layers", "1", "--fine", "ddp"],
                 ["--sp", "tp", "--layers", "1"]):
        p = run(["generate"] + args)
        if p.returncode == 0 and b'"format": "commsched-graph"' not in \
                p.stdout[:200]:
            fail(f"generate {' '.join(args)}: no graph on stdout")

    # Bad options are usage errors (exit 2) and write nothing.
    out = os.path.join(SCRATCH, "bad.json")
    for bad in (["fsdp", "--preset", "llama9"], ["fsdp", "--sp"],
                ["moe", "--preset", "llama3-8b"], ["tp", "--tp", "7"],
                ["fsdp", "--preset", "mixtral-8x7b"],
                ["ddp", "--layers", "0"], ["fsdp", "--ac", "some"],
                ["fsdp", "--dtype", "float7"]):
        p = run(["generate"] + bad + ["-o", out], expect=2)
        if os.path.exists(out) or p.stdout:
            fail(f"generate {' '.join(bad)} wrote output")

    if FAILURES:
        print(f"{len(FAILURES)} failure(s)", file=sys.stderr)
        return 1
    print(f"ok: {len(configs)} configurations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
