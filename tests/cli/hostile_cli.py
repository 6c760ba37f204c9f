#!/usr/bin/env python3
"""Hostile input, second round (issue 43), through the built CLI (python3
stdlib only): each case once hung, took unbounded memory or exited 0 with
a meaningless result.

usage: hostile_cli.py COMMSCHED SOURCE_DIR SCRATCH_DIR

- names: CJK names cut between characters in tables (and aligned by
  columns), a 100-character CJK graph name in simulate --trace;
- memory and time: a 100,000-deep PyTorch ET parent chain imports in
  linear time (a hang guard: the quadratic walk took minutes); a trace
  under an address-space limit says "out of memory" (exit 1); generate
  and export refuse sizes before allocating, naming the option and the
  limit;
- nonsense: out-of-range knobs, a measured run's impossible figures,
  export -o -, a collective whose size a trace does not give and kernels
  that overlap on one stream (warnings), float noise and "None"/"none" in
  the statistics JSON, empty standard input at column 1.
Each check prints what it ran when it fails; exit 1 on the first failure."""

import gzip
import json
import os
import resource
import shutil
import subprocess
import sys

CLI, SRC, SCRATCH = sys.argv[1], sys.argv[2], sys.argv[3]
GRAPH = os.path.join(SRC, "graphs", "examples", "fsdp_2layer.json")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def path(name):
    return os.path.join(SCRATCH, name)


def run(*args, code=0, stdin=None, limit_as=None, timeout=120):
    def limit():
        if limit_as:
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
    p = subprocess.run([CLI, *args], capture_output=True, input=stdin,
                       timeout=timeout, preexec_fn=limit if limit_as else None)
    if p.returncode != code:
        fail("commsched %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s" %
             (" ".join(args), p.returncode, code,
              p.stdout[-2000:].decode("utf-8", "replace"),
              p.stderr[-2000:].decode("utf-8", "replace")))
    return p


def has(p, *want, stream="stderr"):
    text = getattr(p, stream).decode("utf-8", "replace")
    for w in want:
        if w not in text:
            fail("output lacks %r:\n%s" % (w, text[-3000:]))
    return text


def names():
    g = json.load(open(GRAPH))
    rename = {n["name"]: "\u5c64" * 30 + n["name"] for n in g["nodes"]}
    for n in g["nodes"]:
        n["name"] = rename[n["name"]]
    g["name"] = "\u56f3" * 100
    cjk = path("cjk.json")
    with open(cjk, "w") as f:
        json.dump(g, f, ensure_ascii=False)
    for args in (["estimate", cjk, "--format", "table"],
                 ["simulate", cjk, "--format", "table"],
                 ["optimize", cjk, "--stats", "-o", os.devnull]):
        out = run(*args).stdout
        try:
            text = out.decode("utf-8")
        except UnicodeDecodeError as e:
            fail("commsched %s: not valid UTF-8: %s" % (" ".join(args), e))
        if args[0] != "optimize":
            # cut names take the same columns (CJK two each) on every row
            rows = [l for l in text.split("\n") if "\u5c64" in l]
            if not rows or len({width(l.split(" all_")[0]) for l in rows
                                if " all_" in l}) != 1:
                fail("%s: collective rows not aligned:\n%s" % (args[0],
                                                              text[:2000]))
    run("simulate", cjk, "--trace", path("cjk.trace.json"))
    with open(path("cjk.trace.json"), encoding="utf-8") as f:
        json.load(f)


def width(s):
    import unicodedata
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1
               for c in s)


def et_chain():
    """A 100,000-deep parent chain: linear (it took 37 s at 40,000 deep)."""
    n = 100000
    nodes = [{"id": 1, "name": "[pytorch|profiler|execution_trace|thread]",
              "parent": 1}]
    for i in range(2, n + 2):
        nodes.append({"id": i, "name": "aten::add", "parent": i - 1,
                      "op_schema": "aten::add(Tensor self) -> Tensor"})
    et = path("chain_et.json")
    with open(et, "w") as f:
        json.dump({"schema": "1.0.1", "nodes": nodes}, f)
    run("import", "pytorch-et", et, "-o", path("chain.json"), timeout=60)
    # a cycle of the same depth: a located error, not a hang
    nodes = [{"id": i, "name": "aten::add", "parent": i % n + 1,
              "op_schema": "x"} for i in range(1, n + 1)]
    with open(et, "w") as f:
        json.dump({"schema": "1.0.1", "nodes": nodes}, f)
    p = run("import", "pytorch-et", et, "-o", path("cycle.json"), code=2,
            timeout=60)
    has(p, "parents form a cycle", "(100000 nodes)")


def et_unsized():
    """A collective with no tensor argument: a warning names it."""
    et = path("unsized_et.json")
    with open(et, "w") as f:
        json.dump({"schema": "1.0.1", "nodes": [
            {"id": 1, "name": "[pytorch|profiler|execution_trace|thread]",
             "parent": 1},
            {"id": 2, "name": "nccl:all_reduce", "parent": 1}]}, f)
    p = run("import", "pytorch-et", et, "-o", path("unsized.json"))
    has(p, "warning:", "1 collective whose size the trace does not give",
        "2:nccl:all_reduce")


def kineto_overlapping():
    """Two kernels on one stream that overlap by 30 us: a warning."""
    ev = [{"ph": "X", "cat": "kernel", "name": "k%d" % i, "ts": t, "dur": 50,
           "pid": 0, "tid": 7, "args": {"device": 0, "stream": 7}}
          for i, t in enumerate((100, 120, 400))]
    tr = path("overlap_trace.json")
    with open(tr, "w") as f:
        json.dump({"traceEvents": ev}, f)
    p = run("import", "kineto", tr, "-o", path("ov.json"))
    has(p, "warning:", "1 GPU event starts before the previous one",
        "traceEvents[1] (stream 7, 30.000 us before traceEvents[0] ends)")


def address_space():
    """The CLI's own address space before it reads anything (its shared
    libraries: a build with the CUDA adaptor maps CUDA and NCCL): a
    process waiting on an empty pipe, read from /proc."""
    p = subprocess.Popen([CLI, "import", "kineto", "-", "-o", os.devnull],
                         stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            with open("/proc/%d/status" % p.pid) as f:
                vm = [l for l in f if l.startswith("VmSize:")]
            if vm and int(vm[0].split()[1]) > 4096:
                size = int(vm[0].split()[1]) * 1024
                break
            import time
            time.sleep(0.01)
        else:
            fail("could not read the CLI's address space")
    finally:
        p.kill()
        p.wait()
    return size


def trace_oom():
    """Under an address-space limit: out of memory, exit 1 (it was an empty
    message and exit 2)."""
    tr = path("big_trace.json.gz")
    ev = [{"ph": "X", "cat": "kernel", "name": "void kernel_%d" % i,
           "ts": i, "dur": 1, "args": {"device": 0, "stream": 7}}
          for i in range(200000)]
    with gzip.open(tr, "wt") as f:
        json.dump({"traceEvents": ev}, f)
    # 96 MiB above what the process maps at start; the tree needs ~450 MB
    p = run("import", "kineto", tr, "-o", path("big.json"), code=1,
            limit_as=address_space() + (96 << 20))
    has(p, "out of memory")


def sizes():
    # past the format: exit 2, the option named; no allocation (256 MiB
    # above what the process maps at start)
    cap = address_space() + (256 << 20)
    p = run("generate", "fsdp", "--layers", "100000000", "-o",
            path("g.json"), code=2, limit_as=cap)
    has(p, "--layers: the graph would have 5.1e+09 nodes, past the "
           "format's limit of 2^32 - 2")
    # within the format, past any machine's memory: exit 1
    p = run("generate", "fsdp", "--layers", "80000000", "-o",
            path("g.json"), code=1, limit_as=cap)
    has(p, "--layers: the graph would have", "more than this machine's")
    if os.path.exists(path("g.json")):
        fail("generate left an output")
    # export: -o -, and a group of 2^24 ranks without --ranks
    p = run("export", "chakra", GRAPH, "-o", "-", code=2)
    has(p, "-o -: export writes one file per rank")
    big = {"format": "commsched-graph", "version": 1, "name": "wide",
           "groups": [{"name": "world", "size": 1 << 24}],
           "inputs": [{"name": "g", "size": 4096}], "outputs": ["r"],
           "nodes": [{"name": "ar", "kind": "collective", "op": "all_reduce",
                      "group": "world", "inputs": ["g"],
                      "outputs": [{"name": "o", "size": 4096}]},
                     {"name": "w", "kind": "wait", "inputs": ["o"],
                      "outputs": [{"name": "r", "alias_of": "o"}]}]}
    with open(path("huge_group.json"), "w") as f:
        json.dump(big, f)
    os.makedirs(path("exp"), exist_ok=True)
    p = run("export", "chakra", path("huge_group.json"), "-o",
            path("exp/x"), code=1)
    has(p, "largest group has more than 1048576 ranks", "--ranks N")
    if os.listdir(path("exp")):
        fail("export left files: %r" % os.listdir(path("exp"))[:5])


def knobs():
    for kv, want in (("overlap_peak_budget=1e308", "out of range"),
                     ("reorder_iterative_peak_memory_budget=-1",
                      "out of range"),
                     ("reorder_sink_runtime_estimations_comm_mult=inf",
                      "above 0, at most 1000000")):
        p = run("optimize", GRAPH, "--set", kv, "-o", path("k.json"),
                code=2)
        has(p, "--set " + kv.split("=")[0] + ": ", want)


def measured():
    sim = json.loads(run("simulate", GRAPH, "--format", "json").stdout)
    bad = dict(sim, totals=dict(sim["totals"], overlap=5))
    with open(path("m1.json"), "w") as f:
        json.dump(bad, f)
    p = run("report", GRAPH, "--measured", path("m1.json"), "-o",
            path("m.html"), code=2)
    has(p, "totals.overlap: expected a share in 0..1")
    rows = [dict(r) for r in sim["collectives"]]
    rows[0]["end_ns"] = 1e300
    with open(path("m2.json"), "w") as f:
        json.dump(dict(sim, collectives=rows), f)
    p = run("report", GRAPH, "--measured", path("m2.json"), "-o",
            path("m.html"), code=2)
    has(p, "collectives[0].end_ns: expected a number of ns in 0..1e+30")
    p = run("report", GRAPH, "--measured", path("nothere.json"), "-o",
            path("m.html"), code=2)
    has(p, "nothere.json: cannot open: No such file or directory")
    if os.path.exists(path("m.html")):
        fail("report left a page")


def stats_json():
    gen = path("l70.json")
    run("generate", "fsdp", "--preset", "llama2-70b", "--fine", "-o", gen)
    for passes in ("overlap", "decide_global_ordering_of_comms,"
                   "reorder_communication_preserving_peak_memory,"
                   "sink_waits_iterative"):
        stats = json.loads(run("optimize", gen, "--passes", passes,
                               "--stats=json", "-o", os.devnull).stdout)
        for p in stats:
            for row in p.get("nodes", []) + p.get("collectives", []):
                for k, v in row.items():
                    if isinstance(v, float) and v != 0 and abs(v) < 1e-6:
                        fail("%s: %s %s = %r (noise)" % (p["pass"],
                                                         row["node"], k, v))
                    if k in ("limit", "limiting_factor") and v in ("None",
                                                                   "none"):
                        fail("%s: %s %s = %r, not null" % (
                            p["pass"], row["node"], k, v))


def empty_stdin():
    p = run("validate", "-", code=2, stdin=b"")
    has(p, "<stdin>:1:1: ")


def main():
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    for check in (names, et_chain, et_unsized, kineto_overlapping, trace_oom,
                  sizes, knobs, measured, stats_json, empty_stdin):
        check()
        print("ok:", check.__name__)


main()
