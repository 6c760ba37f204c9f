#!/usr/bin/env python3
"""CLI tests for `commsched estimate`, `simulate`, the Chrome trace, and the
simulator figures in `optimize --report` and `info` (python3 stdlib only).

usage: report_cli.py COMMSCHED SOURCE_DIR SCRATCH_DIR

Each check prints what it ran when it fails; the script exits 1 on the
first failure. The trace checks are the structure Perfetto and
chrome://tracing rely on: metadata naming the process and every thread,
complete events with non-negative durations, a memory counter track, and
flow start/finish pairs that bind to the collective's and the wait's
slices."""

import json
import math
import os
import re
import shutil
import subprocess
import sys

CLI, SRC, SCRATCH = sys.argv[1], sys.argv[2], sys.argv[3]


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


def write(name, text):
    with open(path(name), "w") as f:
        f.write(text)
    return path(name)


def check_trace(trace, n_nodes):
    if not isinstance(trace.get("traceEvents"), list):
        fail("trace without a traceEvents array")
    ev = trace["traceEvents"]
    phases = {}
    threads = {}
    process_named = False
    for i, e in enumerate(ev):
        for key in ("ph", "pid", "name"):
            if key not in e:
                fail("event %d lacks %r: %r" % (i, key, e))
        phases[e["ph"]] = phases.get(e["ph"], 0) + 1
        if e["ph"] == "M":
            if e["name"] == "process_name":
                process_named = True
            if e["name"] == "thread_name":
                threads[e["tid"]] = e["args"]["name"]
    if not process_named:
        fail("no process_name metadata")
    if threads.get(0) != "compute":
        fail("thread 0 is not named compute: %r" % threads)
    for ph in ("X", "C", "s", "f", "M"):
        if phases.get(ph, 0) == 0:
            fail("no %r events in the trace (%r)" % (ph, phases))
    if phases["X"] < n_nodes:
        fail("%d complete events for %d nodes" % (phases["X"], n_nodes))
    if phases["s"] != phases["f"]:
        fail("%d flow starts, %d flow ends" % (phases["s"], phases["f"]))
    slices = {}
    for e in ev:
        if e["ph"] == "X":
            if e["dur"] < 0 or e["ts"] < 0:
                fail("bad complete event %r" % e)
            if e["tid"] not in threads:
                fail("slice on unnamed thread %r" % e)
            slices.setdefault(e["tid"], []).append(e)
        if e["ph"] == "C" and "bytes" not in e.get("args", {}):
            fail("memory counter without bytes: %r" % e)
    # Per thread, slices never overlap (empty slices aside).
    for tid, xs in slices.items():
        xs = sorted(xs, key=lambda e: (e["ts"], e["dur"]))
        for a, b in zip(xs, xs[1:]):
            if b["ts"] < a["ts"] + a["dur"] - 1e-6:
                fail("thread %d: %r overlaps %r" % (tid, a, b))
    # Flow pairs: same id, "s" strictly inside its collective's slice on a
    # comm thread, "f" inside (bp e) or right before (no bp) a wait slice.
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    for i, e in enumerate(ev):
        if e["ph"] != "f":
            continue
        s = starts.get(e["id"])
        if s is None:
            fail("flow end without a start: %r" % e)
        if s["tid"] == 0 or e["tid"] != 0:
            fail("flow not from a comm thread to compute: %r %r" % (s, e))
        src = [x for x in slices[s["tid"]] if x["name"] == s["name"] and
               x["ts"] <= s["ts"] <= x["ts"] + x["dur"]]
        if len(src) != 1:
            fail("flow start %r binds to %d slices" % (s, len(src)))
        if e.get("bp") == "e":
            dst = [x for x in slices[0]
                   if x["ts"] < e["ts"] < x["ts"] + x["dur"]]
        else:
            nxt = [x for x in ev[i + 1:] if x["ph"] == "X" and x["tid"] == 0]
            dst = nxt[:1]
        if len(dst) != 1 or dst[0]["cat"] != "wait":
            fail("flow end %r binds to %r, not one wait" % (e, dst))


def main():
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)

    chain = path("chain.json")
    run("generate", "chain", "--layers", "3", "-o", chain)
    n_nodes = 3 * 9 + 1

    # Table: the per-collective rows and the totals, within 120 columns.
    t = run("simulate", "--format", "table", chain).stdout
    for needle in ("collective", "fwd_ag1", "reduce_scatter", "makespan",
                   "lower bound", "efficiency", "exposed", "overlap",
                   "peak memory", "estimates"):
        if needle not in t:
            fail("table lacks %r:\n%s" % (needle, t))
    for line in t.splitlines():
        if len(line) > 120:
            fail("table line over 120 columns: %r" % line)

    # JSON: the same figures; stdout is not a terminal, so JSON is default.
    rep = json.loads(run("simulate", chain).stdout)
    if rep["format"] != "commsched-simulation" or rep["version"] != 1:
        fail("JSON report header: %r" % rep)
    tot = rep["totals"]
    if not tot["makespan_ns"] >= tot["lower_bound_ns"] > 0:
        fail("makespan below the lower bound: %r" % tot)
    if not 0 <= tot["exposed_ns"] <= tot["comm_ns"] * (1 + 1e-9):
        fail("exposed above comm: %r" % tot)
    if len(rep["collectives"]) != 9 or tot["collectives"] != 9:
        fail("expected 9 collectives: %r" % tot)
    if rep["memory"]["peak_simulated"] < rep["memory"]["peak_per_step"] * 0:
        fail("memory figures missing")
    if rep["estimates"] != {"file": 0, "model": 19, "none": 9}:
        fail("estimate sources: %r" % rep["estimates"])

    # The trace, the report to a file, atomically, in one run.
    trace_path, out_path = path("trace.json"), path("report.json")
    p = run("simulate", "--trace", trace_path, "-o", out_path, "--verbose",
            chain)
    if "simulate" not in p.stderr or p.stdout:
        fail("--verbose timing line missing or stdout not empty: %r" %
             p.stderr)
    with open(trace_path) as f:
        check_trace(json.load(f), n_nodes)
    with open(out_path) as f:
        json.load(f)

    # A pipe named by a path (/dev/stdin, a shell's <(...)) is read once,
    # as JSON: deciding whether a file is a Chakra trace must not eat it.
    with open(chain) as f:
        run("validate", "/dev/stdin", stdin=f.read())

    # optimize --verbose: one line of stage times on stderr, whose passes
    # figure is the sum of the passes' own wall_ms in --stats=json.
    p = run("optimize", "--verbose", "--stats=json", "-o", path("opt.json"),
            chain)
    m = re.search(r"commsched optimize: (\d+) nodes; load ([\d.]+) ms, "
                  r"passes ([\d.]+) ms, the rest of optimizing (-?[\d.]+) "
                  r"ms, save ([\d.]+) ms", p.stderr)
    if not m or int(m.group(1)) != n_nodes:
        fail("optimize --verbose: no stage line for %d nodes: %r"
             % (n_nodes, p.stderr))
    walls = sum(ps["wall_ms"] for ps in json.loads(p.stdout))
    if abs(float(m.group(3)) - walls) > 0.1 + 1e-3 * walls:
        fail("optimize --verbose: passes %s ms, their wall_ms sum to %.3f"
             % (m.group(3), walls))

    # The bundled example, if present: table and a trace that checks out.
    example = os.path.join(SRC, "graphs", "examples", "fsdp_2layer.json")
    if os.path.exists(example):
        run("simulate", "--format", "table", example)
        ex_trace = path("example.trace.json")
        run("simulate", "--trace", ex_trace, "-o", path("example.json"),
            example)
        with open(ex_trace) as f:
            tr = json.load(f)
        g = json.load(open(example))
        check_trace(tr, len(g["nodes"]))

    # One comm stream for every collective.
    single = json.loads(run("simulate", "--comm-streams", "single",
                            chain).stdout)
    if [s["name"] for s in single["streams"]] != ["compute", "comm"]:
        fail("single stream mode: %r" % single["streams"])
    run("simulate", "--comm-streams", "two", chain, code=2)

    # Summary and row limits.
    s = run("simulate", "--format", "table", "--summary", chain).stdout
    if "fwd_ag1" in s or "makespan" not in s:
        fail("--summary:\n" + s)
    s = run("simulate", "--format", "table", "--rows", "2", chain).stdout
    if "... 7 more collectives" not in s:
        fail("--rows 2:\n" + s)

    # The canonical model reproduces Inductor's worked value through the
    # CLI: all-gather of 64 MiB over 8 ranks on Hopper = 0.3987 ms.
    ag = write("ag.json", json.dumps({
        "format": "commsched-graph", "version": 1,
        "groups": [{"name": "dp", "size": 8}],
        "inputs": [{"name": "shard", "size": 8388608}],
        "outputs": ["full_w"],
        "nodes": [
            {"name": "ag", "kind": "collective", "op": "all_gather",
             "group": "dp", "inputs": ["shard"],
             "outputs": [{"name": "full", "size": 67108864}]},
            {"name": "ag_wait", "kind": "wait", "inputs": ["full"],
             "outputs": [{"name": "full_w", "alias_of": "full"}]}]}))
    est = json.loads(run("estimate", "--cost-model", "inductor", "--format",
                         "json", ag).stdout)
    agn = est["nodes"][0]
    if abs(agn["runtime_ns"] / 1e6 - 0.3987) > 0.00005 or \
            agn["source"] != "model" or agn["bytes"] != 67108864:
        fail("inductor AG 64 MiB / 8: %r" % agn)
    if abs(agn["latency_ns"] - 10800) > 1e-6 or agn["protocol"] != "LL":
        fail("inductor latency: %r" % agn)
    if est["nodes"][1]["source"] != "none":
        fail("a wait's source: %r" % est["nodes"][1])
    a100 = json.loads(run("estimate", "--cost-model", "inductor", "--device",
                          "a100", "--format", "json", ag).stdout)
    if abs(a100["nodes"][0]["runtime_ns"] / 1e6 - 0.6344) > 0.00005:
        fail("inductor AG on Ampere: %r" % a100["nodes"][0])
    tab = run("estimate", "--format", "table", chain).stdout
    for needle in ("latency", "bandwidth", "compute", "mem", "model", "none",
                   "a wait costs 0", "ring/"):
        if needle not in tab:
            fail("estimate table lacks %r:\n%s" % (needle, tab))

    # Device profiles: a file works; bad ones are located errors, exit 2.
    prof = write("fast.json", json.dumps(
        {"format": "commsched-device", "version": 1, "base": "h100",
         "name": "h100-fast", "nccl": {"bus_bw_intra": 740}}))
    fast = json.loads(run("simulate", "--device", prof, chain).stdout)
    if fast["device"] != "h100-fast" or \
            not fast["totals"]["comm_ns"] < rep["totals"]["comm_ns"]:
        fail("a faster profile file: %r" % fast["totals"])
    bad = write("bad.json", '{"base": "h100",\n "nccl": {"chanels": 4}}')
    p = run("simulate", "--device", bad, chain, code=2)
    if "bad.json: nccl.chanels: unknown field" not in p.stderr:
        fail("unknown profile field: %r" % p.stderr)
    syn = write("syntax.json", '{"base": "h100",\n "name": }')
    p = run("estimate", "--device", syn, chain, code=2)
    if "syntax.json:2:" not in p.stderr:
        fail("profile syntax error: %r" % p.stderr)
    rng = write("range.json", '{"base": "h100", "mem_bw": -1}')
    p = run("simulate", "--device", rng, chain, code=2)
    if "range.json: mem_bw:" not in p.stderr:
        fail("profile range error: %r" % p.stderr)
    p = run("simulate", "--device", "h200", chain, code=2)
    if "unknown device" not in p.stderr:
        fail("unknown device name: %r" % p.stderr)
    run("simulate", "--device", path("missing.json"), chain, code=2)
    run("simulate", "--cost-model", "astra", chain, code=2)

    # A failed run leaves no report or trace behind.
    broken = write("broken.json", '{"format": "commsched-graph"')
    run("simulate", "-o", path("never.json"), "--trace", path("never.trace"),
        broken, code=2)
    for f in ("never.json", "never.trace"):
        if os.path.exists(path(f)):
            fail("a failed run left %s" % f)

    # Standard input, as `commsched optimize a.json | commsched simulate -`.
    with open(chain) as f:
        piped = json.loads(run("simulate", "-", stdin=f.read()).stdout)
    if piped["totals"] != rep["totals"]:
        fail("stdin gives other totals")

    # optimize --report and info show the simulator's figures.
    p = run("optimize", chain, "-o", path("opt.json"), "--report")
    for needle in ("makespan", "lower bound", "efficiency", "exposed comm",
                   "overlap", "peak memory (sim)", "before", "after"):
        if needle not in p.stdout:
            fail("optimize --report lacks %r:\n%s" % (needle, p.stdout))
    after = json.loads(run("simulate", path("opt.json")).stdout)
    if after["totals"]["comm_ns"] != rep["totals"]["comm_ns"] and \
            abs(after["totals"]["comm_ns"] / rep["totals"]["comm_ns"] - 1) > 1e-9:
        fail("reordering changed the total comm time: %r" % after["totals"])
    p = run("info", chain)
    if "; runtimes from the cost model (h100, nccl)" not in p.stdout:
        fail("info lacks the critical path in time:\n" + p.stdout)

    print("ok")


main()
