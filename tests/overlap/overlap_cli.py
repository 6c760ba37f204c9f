#!/usr/bin/env python3
"""CLI tests for the overlap pass and `commsched tune` (python3 stdlib only).

usage: overlap_cli.py COMMSCHED SOURCE_DIR SCRATCH_DIR

Graphs: graphs/examples/fsdp_2layer.json, fsdp_tp_1block.json and
graphs/torch/fsdp-mlp-4L-0.json. Exits 1
on the first failure, printing what it ran."""

import json
import os
import shutil
import subprocess
import sys

CLI, SRC, SCRATCH = sys.argv[1], sys.argv[2], sys.argv[3]
EX = os.path.join(SRC, "graphs", "examples")
FSDP = os.path.join(EX, "fsdp_2layer.json")
TP = os.path.join(EX, "fsdp_tp_1block.json")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(*args, code=0, env=None):
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run([CLI, *args], capture_output=True, text=True, env=e)
    if p.returncode != code:
        fail("commsched %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s" %
             (" ".join(args), p.returncode, code, p.stdout[-3000:],
              p.stderr[-3000:]))
    return p


def path(name):
    return os.path.join(SCRATCH, name)


def simulate(f):
    d = json.loads(run("simulate", "--format", "json", f).stdout)
    return d["totals"]["makespan_ns"], d["memory"]["peak_per_step"]


def peak_in_time(f):
    d = json.loads(run("simulate", "--format", "json", f).stdout)
    return d["memory"]["peak_simulated"]


shutil.rmtree(SCRATCH, ignore_errors=True)
os.makedirs(SCRATCH)

# ---- the pass and its knobs are listed -------------------------------------
out = run("optimize", "--list-passes").stdout
for name in ["overlap", "overlap_peak_budget", "overlap_max_in_flight_bytes",
             "overlap_collective_order", "overlap_reorder_window",
             "overlap_search", "overlap_peak_model", "overlap_seeds"]:
    if name not in out:
        fail("--list-passes does not list %s" % name)

# ---- optimize --passes overlap: faster, within budget, stats ---------------
ms_in, pk_in = simulate(FSDP)
p = run("optimize", FSDP, "--passes", "overlap", "--stats", "-o",
        path("ov.json"))
if "limited by" not in p.stdout or "ag_w2" not in p.stdout:
    fail("overlap --stats table:\n" + p.stdout)
ms, pk = simulate(path("ov.json"))
if not ms < ms_in or pk > pk_in:
    fail("overlap: makespan %g (input %g), peak %d (input %d)" %
         (ms, ms_in, pk, pk_in))
p = run("optimize", FSDP, "--passes", "overlap", "--stats=json", "-o",
        path("ov.json"))
st = json.loads(p.stdout)[0]
tpk_in = peak_in_time(FSDP)
if st["pass"] != "overlap" or len(st["collectives"]) != 7 or \
        st["budget_bytes"] != pk_in or st["time_budget_bytes"] != tpk_in or \
        st["peak_time_after"] > tpk_in or \
        st["peak_time_after"] != peak_in_time(path("ov.json")) or \
        st["binds"] not in ("none", "step", "time", "step and time"):
    fail("overlap --stats=json: %s" % json.dumps(st)[:2000])
# the budget holds over time too (the flagship example: 192 MiB both ways),
# and the per-step model alone is one knob away
if "in time; binds:" not in run("optimize", FSDP, "--stats", "-o",
                                path("ov.json")).stdout:
    fail("overlap --stats: no time budget")
st = json.loads(run("optimize", FSDP, "--stats=json", "--set",
                    "overlap_peak_model=step", "-o",
                    path("ov.json")).stdout)[0]
if st["time_budget_bytes"] is not None or st["peak_time_after"] is not None:
    fail("overlap_peak_model=step: %s" % json.dumps(st)[:2000])
row = st["collectives"][0]
for k in ["node", "wait", "issue_before", "issue_after", "wait_before",
          "wait_after", "hidden_before", "hidden_after", "limit"]:
    if k not in row:
        fail("overlap stats row lacks %s" % k)
saved = json.load(open(path("ov.json")))
if saved["schedule"]["knobs"]["overlap_peak_budget"] != "1":
    fail("the output does not record overlap_peak_budget")
# a bad budget is bad input
p = run("optimize", FSDP, "--passes", "overlap", "--set",
        "overlap_peak_budget=0.5", "-o", path("bad.json"), code=2)
if "overlap_peak_budget" not in p.stderr or os.path.exists(path("bad.json")):
    fail("overlap_peak_budget=0.5: " + p.stderr)

# ---- a wait that unlocks the next all-gather (Inductor's fake edge) -------
# graphs/torch/fsdp-mlp-4L-0.json: each all-gather has a fake edge from the
# previous one's wait. Placing that wait right before the matmul that reads
# it must feed the stream again, before the matmul: the all-gathers then run
# back to back and the step reaches its lower bound at the input's peak
# (before the fix: op4 issued after the matmul, 156.0 us for 151.7 us).
TORCH_FSDP = os.path.join(SRC, "graphs", "torch", "fsdp-mlp-4L-0.json")
run("optimize", TORCH_FSDP, "--passes", "overlap", "-o", path("tf.json"))
d = json.loads(run("simulate", "--format", "json", path("tf.json")).stdout)
_, pk_tf = simulate(TORCH_FSDP)
if d["totals"]["makespan_ns"] > d["totals"]["lower_bound_ns"] * (1 + 1e-9) \
        or d["memory"]["peak_per_step"] > pk_tf:
    fail("overlap on fsdp-mlp-4L-0: makespan %r, lower bound %r, peak %d "
         "(input %d)" % (d["totals"]["makespan_ns"],
                         d["totals"]["lower_bound_ns"],
                         d["memory"]["peak_per_step"], pk_tf))
names = [n["name"] for n in json.load(open(path("tf.json")))["nodes"]]
if names.index("op4") > names.index("op2"):
    fail("overlap on fsdp-mlp-4L-0: op4 issued after op2: %s" % names)

# ---- a fake edge onto a wait binds the collective order, not the wait --------
# graphs/torch/fsdp-mlp-4L-1.json (the backward): each reduce-scatter has a
# fake edge from the previous one's wait (Inductor's wait mutates the
# collective's output, so the ordering dep lands on it). Kept on the wait it
# forbade issuing op8 before op4 (the wait of op3): 161.8 us where torch's
# own FX scheduler reaches 158.6 us, the stream bound. The collectives must
# keep their order.
TORCH_BWD = os.path.join(SRC, "graphs", "torch", "fsdp-mlp-4L-1.json")
run("optimize", TORCH_BWD, "--passes", "overlap", "-o", path("tb.json"))
d = json.loads(run("simulate", "--format", "json", path("tb.json")).stdout)
_, pk_tb = simulate(TORCH_BWD)
lb = d["lower_bound"]
if d["totals"]["makespan_ns"] > lb["stream_bound_ns"] * (1 + 1e-9) or \
        d["memory"]["peak_per_step"] > pk_tb:
    fail("overlap on fsdp-mlp-4L-1: makespan %r, stream bound %r, peak %d "
         "(input %d)" % (d["totals"]["makespan_ns"], lb["stream_bound_ns"],
                         d["memory"]["peak_per_step"], pk_tb))
names = [n["name"] for n in json.load(open(path("tb.json")))["nodes"]]
colls = [n for n in names if n in ("op3", "op8", "op13", "op17")]
if names.index("op8") > names.index("op4") or \
        colls != ["op3", "op8", "op13", "op17"]:
    fail("overlap on fsdp-mlp-4L-1: %s" % names)

# ---- the critical-path frame rule --------------------------------------------
# graphs/generated/llama3-8b-tp.json: in the backward each layer's MLP
# all-reduce window took all of the layer's ready weight-gradient work, and
# the attention all-reduce after it stayed 45% exposed. Critical chain first
# leaves what the MLP window does not need for the attention window: the
# variant wins, and the step is at most 116.3 ms (116.98 ms without it).
TP32 = os.path.join(SRC, "graphs", "generated", "llama3-8b-tp.json")
p = run("optimize", TP32, "--passes", "overlap", "--stats=json", "-o",
        path("tp32.json"))
st = json.loads(p.stdout)[0]
ms_tp, pk_tp = simulate(path("tp32.json"))
_, pk_tp_in = simulate(TP32)
if st["variant"] != "critical/jit" or ms_tp > 116.3e6 or pk_tp > pk_tp_in:
    fail("overlap on llama3-8b-tp: variant %s, makespan %r, peak %d "
         "(input %d)" % (st["variant"], ms_tp, pk_tp, pk_tp_in))

# ---- overlap: the same order with 1 and 2 threads ---------------------------
# Its variants run on every core from 10,000 nodes up, each thread keeping
# its best; the answer must not depend on which thread ran which variant,
# nor on how many ran.
CHAIN12K = path("chain12k.json")
run("generate", "chain", "--nodes", "12000", "-o", CHAIN12K)
for graph, knobs in [(CHAIN12K, []), (TP32, []),
                     (CHAIN12K, ["--set", "overlap_search=full"]),
                     (CHAIN12K, ["--set", "overlap_peak_budget=inf"])]:
    outs = []
    for threads in ("1", "2", "3"):
        out = path("thr%s.json" % threads)
        run("optimize", graph, "--passes", "overlap", *knobs, "-o", out,
            env={"OMP_NUM_THREADS": threads})
        with open(out, "rb") as fh:
            outs.append(fh.read())
    if outs[0] != outs[1] or outs[0] != outs[2]:
        fail("overlap on %s %s differs with 1, 2 and 3 threads" %
             (graph, knobs))

# ---- tune: same answer with 1 and 2 threads ---------------------------------


def strip_timing(d):
    for c in d["candidates"]:
        c.pop("wall_ms")
    if d["best"]:
        d["best"].pop("wall_ms")
    d.pop("threads")
    return d


def tune_json(*extra, env=None):
    return strip_timing(json.loads(run("tune", TP, "--format", "json", *extra,
                                       env=env).stdout))


base = tune_json(env={"OMP_NUM_THREADS": "1"})
for extra, env in [((), {"OMP_NUM_THREADS": "2"}), (("--threads", "1"), None),
                   (("--threads", "2"), None)]:
    if tune_json(*extra, env=env) != base:
        fail("tune differs with %s %s" % (extra, env))
if base["candidates"][0]["passes"] != "none" or base["best"] is None:
    fail("tune: %s" % json.dumps(base)[:2000])
best = base["best"]
if best["makespan_ns"] > base["input"]["makespan_ns"] or \
        best["peak_memory"] > base["budget_bytes"]:
    fail("tune best: %s" % best)

# fits = both peaks within their budgets (issue 42); --peak-model step
# judges the per-step peak alone and gives no time budget
for model in ("both", "step"):
    d = tune_json("--peak-model", model, env={"OMP_NUM_THREADS": "2"})
    tb = d["time_budget_bytes"]
    if (model == "step") != (tb == -1):
        fail("tune --peak-model %s: time budget %s" % (model, tb))
    for c in d["candidates"]:
        if c["status"] != "OK":
            continue
        over = (c["peak_memory"] > d["budget_bytes"],
                tb >= 0 and c["peak_memory_time"] > tb)
        want = {(0, 0): None, (1, 0): "step", (0, 1): "time",
                (1, 1): "both"}[tuple(int(x) for x in over)]
        if c["fits"] != (not any(over)) or c["over"] != want:
            fail("tune --peak-model %s: %s" % (model, c))
    if model == "step" and not all("overlap_peak_model=step" in c["knobs"]
                                   for c in d["candidates"]
                                   if "overlap" in c["passes"].split(",")):
        fail("tune --peak-model step: an overlap candidate without it")

# -o writes the best order; it simulates to the best's makespan
p = run("tune", TP, "-o", path("tuned.json"))
if "best: #" not in p.stdout or "rank" not in p.stdout:
    fail("tune table:\n" + p.stdout)
ms, pk = simulate(path("tuned.json"))
if abs(ms - best["makespan_ns"]) > 1e-9 * ms or pk > base["budget_bytes"]:
    fail("tune -o: makespan %r (best %r), peak %d" %
         (ms, best["makespan_ns"], pk))
tuned = json.load(open(path("tuned.json")))
if tuned["schedule"]["tune"]["candidate"] != best["index"]:
    fail("tune -o: schedule.tune %s" % tuned["schedule"]["tune"])
run("validate", path("tuned.json"))

# budgets: inf allows more, never slower
inf = tune_json("--budget", "inf", env={"OMP_NUM_THREADS": "2"})
if inf["best"]["makespan_ns"] > best["makespan_ns"] or \
        inf["budget_bytes"] != -1:
    fail("tune --budget inf: %s" % inf["best"])

# own candidates only; a bad one is bad input naming it
d = json.loads(run("tune", TP, "--format", "json", "--no-builtin",
                   "--candidate", "overlap|overlap_peak_budget=1.25",
                   "--candidate", "raise_comms,sink_waits").stdout)
if [c["passes"] for c in d["candidates"]] != ["overlap",
                                              "raise_comms,sink_waits"]:
    fail("tune --no-builtin: %s" % d["candidates"])
p = run("tune", TP, "--candidate", "overlapp", code=2)
if "overlapp" not in p.stderr:
    fail("tune --candidate overlapp: " + p.stderr)
run("tune", TP, "--budget", "0.5", code=2)

# Splits: on the FSDP backward from torch.compile the four reduce-scatters
# in pairs (134.0 us) beat one bucket of four (151.8 us), a split neither
# the size cap nor cost mode makes; and the split search finds torch's own
# (its FX bucketer leaves the first two alone: 1 + 1 + 2, bucket_cuts=3),
# so tune is never slower than torch's bucketed schedule there.
d = json.loads(run("tune", TORCH_BWD, "--format", "json").stdout)
pairs = [c for c in d["candidates"] if "bucket_max_ops=2" in c["knobs"]]
if len(pairs) != 1 or pairs[0]["makespan_ns"] > 134.1e3:
    fail("tune on fsdp-mlp-4L-1, buckets of two: %s" % pairs)
torch_ms, _ = simulate(os.path.join(SRC, "graphs", "torch", "anchors",
                                    "fsdp-mlp-4L-1.torch-fx-bucketed.json"))
# (simulate's text rounds to a microsecond's millionth: 1e-3 ns)
if d["best"]["makespan_ns"] > torch_ms + 1e-3 or \
        "bucket_cuts=3," not in d["best"]["knobs"]:
    fail("tune on fsdp-mlp-4L-1: %s, torch's FX bucketing %s ns"
         % (d["best"], torch_ms))
splits = [c for c in d["candidates"] if "bucket_cuts=" in c["knobs"]]
if len(splits) != 6:  # four reduce-scatters: 2^3 - 2 splits
    fail("tune on fsdp-mlp-4L-1: %d split candidates" % len(splits))

# Inductor's pipeline is in the built-in set at every size (its passes
# grow as n log n); up to 50,000 nodes a graph with 3 to 6 collectives of
# one op also gets every cut of them into buckets (each one more overlap
# run), above it not; a --candidate always runs. A compute chain with
# four all-reduces keeps this cheap.


def flat(n):
    """n nodes: a compute chain, four of its buffers all-reduced"""
    nodes = []
    for i in range(n - 8):
        nodes.append({"name": "n%d" % i, "kind": "compute", "runtime_ns": 10,
                      "inputs": ["b%d" % (i - 1)] if i else [],
                      "outputs": [{"name": "b%d" % i, "size": 64}]})
        if i % 1000 == 999 and i < 4000:
            k = i // 1000
            nodes.append({"name": "ar%d" % k, "kind": "collective",
                          "op": "all_reduce", "group": "dp",
                          "inputs": ["b%d" % i],
                          "outputs": [{"name": "r%d" % k, "size": 64}]})
            nodes.append({"name": "ar%d_wait" % k, "kind": "wait",
                          "inputs": ["r%d" % k],
                          "outputs": [{"name": "w%d" % k,
                                       "alias_of": "r%d" % k}]})
    f = path("flat%d.json" % n)
    with open(f, "w") as fh:
        json.dump({"format": "commsched-graph", "version": 1, "name": "flat",
                   "groups": [{"name": "dp", "size": 8, "hosts": 1}],
                   "nodes": nodes}, fh)
    return f


def inductor(cands):
    return [c for c in cands
            if "reorder_communication_preserving_peak_memory" in c["passes"]]


def cuts(cands):
    return [c for c in cands if "bucket_cuts=" in c["knobs"]]


at = json.loads(run("tune", flat(50000), "--format", "json").stdout)
above = json.loads(run("tune", flat(50001), "--format", "json",
                       "--candidate", "reorder_communication_preserving_"
                       "peak_memory").stdout)
if len(inductor(at["candidates"])) != 5 or \
        len(inductor(above["candidates"])) != 6 or \
        len(cuts(at["candidates"])) != 6 or cuts(above["candidates"]) or \
        len(above["candidates"]) != len(at["candidates"]) - 6 + 1:
    fail("tune's built-in set at 50,000 / 50,001 nodes: %s / %s" %
         ([c["passes"] + "|" + c["knobs"] for c in at["candidates"]],
          [c["passes"] + "|" + c["knobs"] for c in above["candidates"]]))
# The heap scheduler's orders are overlap's seeds: at a budget their order
# fits, overlap is never slower than raise_comms,sink_waits or
# reorder_compute_for_overlap. On Transformer_HybridParallel at 1.0 its
# sweeps alone were 202 ns of 550.5 ms behind raise_comms,sink_waits.
HYBRID = os.path.join(SRC, "graphs", "astra",
                      "Transformer_HybridParallel.json")
for g in (HYBRID, FSDP, TP, TORCH_BWD):
    ms_in, pk_in = simulate(g)
    tpk_in = peak_in_time(g)
    run("optimize", g, "--passes", "overlap", "-o", path("seeded.json"))
    ms_ov, pk_ov = simulate(path("seeded.json"))
    for anchor in ("raise_comms,sink_waits", "reorder_compute_for_overlap",
                   "simple_overlap"):
        run("optimize", g, "--passes", anchor, "-o", path("anchor.json"))
        ms_a, pk_a = simulate(path("anchor.json"))
        if pk_a <= pk_in and peak_in_time(path("anchor.json")) <= tpk_in \
                and ms_ov > ms_a:
            fail("overlap on %s: %s ns, %s: %s ns" % (g, ms_ov, anchor, ms_a))
# Since the sweeps price a reduce-scatter's feeders against the budget
# before pulling them along, their own order wins there (550.456 ms).
d = json.loads(run("optimize", HYBRID, "--passes", "overlap", "--stats=json",
                   "-o", path("seeded.json")).stdout)
if d[0]["variant"] in ("raise_comms,sink_waits", "reorder_compute_for_overlap"):
    fail("overlap on Transformer_HybridParallel: variant %s" % d[0]["variant"])
# An 8-layer FSDP x TP step written without commsched's generators
# (graphs/independent). The search alone (overlap_seeds=none): per step at
# 1.0 it kept the input order (145.81 ms; every sweep's reduce-scatter
# pulled its weight-gradient matmul ahead of the input gradient's, which
# frees the gathered weight, past the budget) where Inductor's pipeline at
# per-pass budget 0 reached 113.68 ms; with both peaks, every sweep was
# over the time peak's budget (a reduce-scatter's input lives until it
# ends) until the sweeps wait for those frees before an allocation that
# would not fit (make_room). The stream bound is 107.34 ms.
INDEP = os.path.join(SRC, "graphs", "independent", "fsdp-tp-8L.json")
ms_in, pk_in = simulate(INDEP)
tpk_in = peak_in_time(INDEP)
for model, limit in (("step", 108.2e6), ("both", 109.5e6)):
    run("optimize", INDEP, "--set", "overlap_seeds=none", "--set",
        "overlap_peak_model=" + model, "-o", path("indep.json"))
    ms, pk = simulate(path("indep.json"))
    if ms > limit or pk > pk_in or \
            (model == "both" and peak_in_time(path("indep.json")) > tpk_in):
        fail("the search alone on fsdp-tp-8L, %s: %r ns, peak %d" %
             (model, ms, pk))
# ---- tune over many graphs in one process ----------------------------------
# Two files and a folder: one row per graph in the summary, each row the
# best that tuning the graph alone finds, and with -o a folder of result
# files: NAME.json the same bytes as `tune NAME -o`, NAME.tune.json the
# candidates of `--format json` without the timings. Name clashes, -o a
# file, an empty folder and a bad graph are refused or reported (exit 2).
TORCH = os.path.join(SRC, "graphs", "torch")
many_dir = path("many")
p = run("tune", FSDP, TP, TORCH, "--threads", "2", "-o", many_dir)
torch_graphs = sorted(f for f in os.listdir(TORCH) if f.endswith(".json"))
every = [FSDP, TP] + [os.path.join(TORCH, f) for f in torch_graphs]
rows = [l for l in p.stdout.splitlines() if l.startswith(tuple(every))]
if len(rows) != len(every) or "%d graphs, %d tuned" % (len(every),
                                                       len(every)) \
        not in p.stdout:
    fail("tune of many graphs: summary\n" + p.stdout)
for g, row in zip(every, rows):
    name = os.path.basename(g)[:-5]
    alone = json.loads(run("tune", g, "--format", "json", "-o",
                           path("alone.json")).stdout)
    if not row.startswith(g + " ") or \
            (" #%d " % alone["best"]["index"]) not in row:
        fail("tune of many graphs: %s's row %r, alone best #%d" %
             (g, row, alone["best"]["index"]))
    with open(os.path.join(many_dir, name + ".json"), "rb") as f, \
            open(path("alone.json"), "rb") as h:
        if f.read() != h.read():
            fail("tune of many graphs: %s.json differs from tune -o" % name)
    doc = json.load(open(os.path.join(many_dir, name + ".tune.json")))
    if "threads" in doc or any("wall_ms" in c for c in doc["candidates"]):
        fail("tune of many graphs: %s.tune.json has timings" % name)
    if doc != strip_timing(alone):
        fail("tune of many graphs: %s.tune.json differs from --format json"
             % name)
sj = json.loads(run("tune", FSDP, TORCH, "--format", "json").stdout)
if [g["file"] for g in sj["graphs"]] != [FSDP] + every[2:] or \
        sj["graphs"][0]["best"]["index"] != \
        json.loads(run("tune", FSDP, "--format", "json").stdout)["best"][
            "index"]:
    fail("tune of many graphs --format json: %s" % json.dumps(sj)[:1000])
os.makedirs(path("other"), exist_ok=True)
shutil.copy(FSDP, path("other"))
p = run("tune", FSDP, path("other"), code=2)
if "would both write fsdp_2layer.json" not in p.stderr:
    fail("tune: two graphs of one name: " + p.stderr)
p = run("tune", FSDP, TP, "-o", FSDP, code=2)
if "names a folder" not in p.stderr:
    fail("tune of many graphs -o FILE: " + p.stderr)
bad = path("bad-graph.json")
with open(bad, "w") as f:
    f.write('{"format": "commsched-graph",\n "version": 1, "nodes": [}\n')
p = run("tune", FSDP, bad, code=2)
if bad + ":2:" not in p.stderr or "(bad input)" not in p.stdout or \
        "2 graphs, 1 tuned" not in p.stdout:
    fail("tune of many graphs with a bad one:\n%s\n%s" % (p.stdout,
                                                         p.stderr))
p = run("tune", "-", TP, code=2)
if "standard input" not in p.stderr:
    fail("tune - with another graph: " + p.stderr)

print("overlap/tune CLI: all checks passed")
