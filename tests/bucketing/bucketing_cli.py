#!/usr/bin/env python3
"""CLI tests for the bucketing passes (python3 stdlib only).

usage: bucketing_cli.py COMMSCHED SOURCE_DIR SCRATCH_DIR

The graph is graphs/examples/fsdp_2layer.json: two all-gathers whose waits
are adjacent (they merge into one bucket, closed on the memory budget when
the third would not fit) and two reduce-scatters. Exits 1 on the first
failure, printing what it ran."""

import json
import os
import shutil
import subprocess
import sys

CLI, SRC, SCRATCH = sys.argv[1], sys.argv[2], sys.argv[3]
EXAMPLE = os.path.join(SRC, "graphs", "examples", "fsdp_2layer.json")
PASSES = "bucket_all_gather,bucket_reduce_scatter,bucket_all_reduce"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(*args, code=0, stdin=None):
    p = subprocess.run([CLI, *args], capture_output=True, text=True,
                       input=stdin)
    if p.returncode != code:
        fail("commsched %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s" %
             (" ".join(args), p.returncode, code, p.stdout[-3000:],
              p.stderr[-3000:]))
    return p


def path(name):
    return os.path.join(SCRATCH, name)


def kinds(graph):
    count = {}
    for n in graph["nodes"]:
        count[n["kind"]] = count.get(n["kind"], 0) + 1
    return count


shutil.rmtree(SCRATCH, ignore_errors=True)
os.makedirs(SCRATCH)
with open(EXAMPLE) as f:
    before = json.load(f)

# ---- --list-passes shows the passes and their knobs ------------------------
out = run("optimize", "--list-passes").stdout
for name in PASSES.split(",") + ["bucket_cap_mb", "bucket_max_ops",
                                 "bucket_multidtype", "bucket_mode",
                                 "bucket_peak_memory_budget"]:
    if name not in out:
        fail("--list-passes does not list %s" % name)

# ---- the table --------------------------------------------------------------
opt = path("bucketed.json")
p = run("optimize", EXAMPLE, "--passes", PASSES, "--stats", "-o", opt)
table = p.stdout
for want in ["== bucket_all_gather", "Bucket", "closed by", "bucket_ag_0",
             "bucket_rs_0", "bucket_all_reduce: no bucket formed"]:
    if want not in table:
        fail("--stats table lacks %r:\n%s" % (want, table))
row = [l for l in table.splitlines() if l.startswith("bucket_ag_0 ")]
if len(row) != 1 or " 2 " not in row[0]:
    fail("bucket_ag_0 row: %r" % row)

# ---- the rewritten graph ----------------------------------------------------
run("validate", opt)
with open(opt) as f:
    after = json.load(f)
kb, ka = kinds(before), kinds(after)
if ka["collective"] != kb["collective"] - 2 or ka["wait"] != kb["wait"] - 2:
    fail("collectives %d -> %d, waits %d -> %d (want 2 fewer each)" %
         (kb["collective"], ka["collective"], kb["wait"], ka["wait"]))
names = {n["name"]: n for n in after["nodes"]}
for n in ["bucket_ag_0", "bucket_ag_0_copy_in", "bucket_ag_0_wait"]:
    if n not in names:
        fail("output has no node %s" % n)
copy_in = names["bucket_ag_0_copy_in"]
if "runtime_ns" in copy_in or "flops" in copy_in or "bytes" not in copy_in:
    fail("the copy-in is priced by the cost model from its bytes: %r" %
         copy_in)
# consumers keep reading the members' result names
produced = {o["name"] for n in after["nodes"] for o in n["outputs"]}
produced |= {i["name"] for i in after.get("inputs", [])}
for n in after["nodes"]:
    for b in n["inputs"]:
        if b not in produced:
            fail("%s reads unknown %s" % (n["name"], b))

# ---- JSON statistics, in --stats=json and in the file's schedule ------------
p = run("optimize", EXAMPLE, "--passes", PASSES, "--stats=json", "-o",
        path("b2.json"))
stats = json.loads(p.stdout)
ag = [s for s in stats if s["pass"] == "bucket_all_gather"][0]
if len(ag["buckets"]) != 1:
    fail("bucket_all_gather JSON buckets: %r" % ag["buckets"])
b = ag["buckets"][0]
for key in ["node", "copy_in", "wait", "members", "bytes", "time_before_ns",
            "time_after_ns", "closed_by"]:
    if key not in b:
        fail("bucket JSON lacks %s: %r" % (key, b))
if b["node"] != "bucket_ag_0" or len(b["members"]) != 2:
    fail("bucket JSON: %r" % b)
with open(path("b2.json")) as f:
    saved = json.load(f)["schedule"]["stats"]
if [s["buckets"] for s in saved if s["pass"] == "bucket_all_gather"] != \
        [ag["buckets"]]:
    fail("the output's schedule.stats differs from --stats=json")

# ---- presets as --set, the cost mode, --report, composition -----------------
run("optimize", EXAMPLE, "--passes", "bucket_all_reduce", "--set",
    "bucket_cap_mb=25", "-o", path("ddp.json"))
run("optimize", EXAMPLE, "--passes", PASSES, "--set",
    "bucket_cap_mb=30.00000667572021484375", "--set", "bucket_max_ops=256",
    "-o", path("xla.json"))
p = run("optimize", EXAMPLE, "--passes", PASSES, "--set", "bucket_mode=cost",
        "--report", "--verify-memory", "-o", path("cost.json"))
if "makespan" not in p.stdout:
    fail("--report after a rewrite:\n%s" % p.stdout)
p = run("optimize", EXAMPLE, "--passes",
        PASSES + ",decide_global_ordering_of_comms,"
        "reorder_communication_preserving_peak_memory,sink_waits_iterative")
run("simulate", "-", stdin=p.stdout)
p = run("optimize", EXAMPLE, "--set", "bucket_mode=fast", code=2)
if "expected greedy or cost" not in p.stderr:
    fail("bad bucket_mode message: %s" % p.stderr)

# ---- incremental pricing (issue 22) ------------------------------------------
# Greedy mode prices each merge's peak incrementally (passes/bucketing_incr.c);
# --verify-memory prices every merge the full way as well and fails on any
# difference. Generated graphs with many buckets, some closed on memory, in
# their input order and after overlap (collectives issued early).
run("generate", "chain", "--nodes", "700", "-o", path("chain.json"))
run("generate", "fsdp", "--preset", "llama3-8b", "--fine", "--layers", "2",
    "-o", path("fine.json"))
# Cost mode prices each merge's simulated step from its window too
# (passes/bucketing_time.c); --verify-memory requires the full figure within
# the estimate's rounding bound, and the statistics say how many merges
# needed the whole graph (an interval that could not decide, or a window
# the incremental peak could not price).
priced = full = 0
for graph in (path("chain.json"), path("fine.json")):
    for pre in ("", "overlap,"):
        for knob in ("bucket_cap_mb=2000", "bucket_cap_mb=100",
                     "bucket_peak_memory_budget=0.05", "bucket_max_ops=5"):
            for mode in ("greedy", "cost"):
                p = run("optimize", graph, "--passes", pre + PASSES, "--set",
                        knob, "--set", "bucket_mode=" + mode,
                        "--verify-memory", "--stats=json", "-o", path("v.json"))
                stats = json.loads(p.stdout)
                # after overlap, cost mode may refuse every merge: a
                # bucket would wait for inputs overlap issued early
                if mode == "greedy" and \
                        not any(st.get("buckets") for st in stats):
                    fail("%s %s%s %s: no bucket formed" %
                         (graph, pre, knob, mode))
                if mode == "cost":
                    priced += sum(st.get("merges_priced", 0) for st in stats)
                    full += sum(st.get("full_pricings", 0) for st in stats)
if priced < 500 or full * 20 > priced:
    fail("cost mode: %d merges priced, %d times on the whole graph" %
         (priced, full))

print("ok")
