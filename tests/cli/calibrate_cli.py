#!/usr/bin/env python3
"""CLI tests for `commsched calibrate` and the measured costs it writes
(docs/COST.md, "Measured costs"), on real Kineto traces written by other
projects (tests/import/data/README.md; python3 stdlib only).

usage: calibrate_cli.py COMMSCHED SOURCE_DIR SCRATCH_DIR SHARED_DATA

- a profile fitted from a 2-rank DDP trace loads as a device profile and
  prices the trace's own step graph from its tables;
- two ranks of one run: every matched collective's time is the shorter of
  the ranks' (the last arrival), never a mean or the first rank's;
- the held-out validation (--check) on a 5-step trace: the prediction
  within 1% of the step's replay and 5% of the measured step;
- --costs TRACE prices a graph from the trace over its runtime_ns;
- bad input: located errors, exit 2, no profile left behind."""

import json
import os
import re
import shutil
import subprocess
import sys

CLI, SRC, SCRATCH, SHARED = sys.argv[1:5]
KINETO = os.path.join(SRC, "tests", "import", "data", "kineto")
NCCL = os.path.join(KINETO, "nccl_data.json.gz")
STEPS5 = os.path.join(KINETO, "hta", "ns_resolution_rank-0.json.gz")
RANK0 = os.path.join(KINETO, "sampled_rank-0.json.gz")
RANK1 = os.path.join(SHARED, "kineto", "sampled_rank-1.json.gz")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(*args, code=0):
    p = subprocess.run([CLI, *args], capture_output=True, text=True)
    if p.returncode != code:
        fail("commsched %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s" %
             (" ".join(args), p.returncode, code, p.stdout[-3000:],
              p.stderr[-3000:]))
    return p


def path(name):
    return os.path.join(SCRATCH, name)


def profile(*traces, name):
    out = path(name)
    p = run("calibrate", *traces, "-o", out)
    with open(out) as f:
        return json.load(f), p.stdout


def points(prof):
    """{(op, ranks, bytes): ns} of a profile's collective tables."""
    return {(r["op"], r["ranks"], p["bytes"]): p["ns"]
            for r in prof["measured"]["collectives"] for p in r["points"]}


def check_profile():
    prof, out = profile(NCCL, name="nccl.json")
    if prof["format"] != "commsched-device" or "measured" not in prof:
        fail("not a device profile with tables: %r" % list(prof))
    if not prof["name"].startswith("calibrated"):
        fail("the profile's name should say it was measured: %r" %
             prof["name"])
    rows = {(r["op"], r["ranks"]): r for r in prof["measured"]["collectives"]}
    ar = rows.get(("all_reduce", 2))
    if not ar or len(ar["points"]) < 2 or "latency_ns" not in ar:
        fail("no fitted all_reduce over 2 ranks (the kernels' own sizes): %r"
             % rows)
    sizes = [p["bytes"] for p in ar["points"]]
    if sizes != sorted(sizes) or len(set(sizes)) != len(sizes):
        fail("points not sorted by size: %r" % sizes)
    if not re.search(r"^all_reduce\s+2\s+%d\s" % len(sizes), out, re.M):
        fail("the fit's table lacks the all_reduce row:\n" + out)
    kernels = prof["measured"]["kernels"]
    keys = [(k["name"], k.get("position", -1)) for k in kernels]
    if keys != sorted(keys):
        fail("kernel rows not sorted by (name, position)")
    # the profile is a device profile any command takes, and its tables
    # price the step's own graph (estimate's "measured" source)
    graph = path("step1.json")
    run("import", "kineto", NCCL, "--step", "1", "-o", graph)
    est = json.loads(run("estimate", "--format", "json", "--device",
                         path("nccl.json"), graph).stdout)
    srcs = {}
    for n in est["nodes"]:
        srcs[n["source"]] = srcs.get(n["source"], 0) + 1
    if srcs.get("file", 0) == 0 or "measured" in srcs:
        fail("with --device PROFILE the file's runtimes still win: %r" % srcs)
    est = json.loads(run("estimate", "--format", "json", "--costs", NCCL,
                         graph).stdout)
    srcs = {}
    for n in est["nodes"]:
        srcs[n["source"]] = srcs.get(n["source"], 0) + 1
    computed = sum(v for k, v in srcs.items() if k != "none")
    if srcs.get("measured", 0) < 0.9 * computed:
        fail("--costs TRACE should price the step's nodes from the trace: %r"
             % srcs)
    table = run("estimate", "--format", "table", "--costs", NCCL,
                graph).stdout
    if not re.search(r"\d+ measured, \d+ fitted, ", table):
        fail("estimate's table should count measured nodes:\n" +
             table[-500:])


def check_last_arrival():
    if not os.path.exists(RANK1):
        print("skip: no", RANK1)
        return
    both, out = profile(RANK0, RANK1, name="both.json")
    if not re.search(r"\((\d+) found on every rank", out) or \
            int(re.search(r"\((\d+) found on every rank", out).group(1)) < 1:
        fail("no collective matched across the two ranks:\n" + out)
    r0 = points(profile(RANK0, name="r0.json")[0])
    r1 = points(profile(RANK1, name="r1.json")[0])
    pb = points(both)
    common = [k for k in pb if k in r0 and k in r1]
    if not common:
        fail("no collective size both ranks measured: %r %r" % (r0, r1))
    for k in common:
        want = min(r0[k], r1[k])
        if pb[k] != want:
            fail("%r: %g ns over both ranks, want the shorter %g (rank 0 "
                 "%g, rank 1 %g): the last arrival's time" %
                 (k, pb[k], want, r0[k], r1[k]))
    if all(r0[k] == r1[k] for k in common):
        fail("the ranks' durations never differ: the check proves nothing")


def check_holdout():
    out = run("calibrate", "--check", STEPS5).stdout
    m = re.search(r"mean \|error\| of the prediction: ([\d.]+)% of the "
                  r"measured step, ([\d.]+)% of its replay, over (\d+) "
                  r"held-out steps", out)
    if not m:
        fail("no summary line:\n" + out)
    measured, replay, steps = float(m.group(1)), float(m.group(2)), \
        int(m.group(3))
    if steps != 4:
        fail("5 profiler steps: 4 to hold out (the last is out of scope), "
             "got %d" % steps)
    if replay > 1.0 or measured > 5.0:
        fail("held-out steps predicted %.1f%% off their replay, %.1f%% off "
             "the measured step (measured on this trace: 0.1%%, 1.7%%)\n%s"
             % (replay, measured, out))
    rows = re.findall(r"^ProfilerStep#\d+\s+\d+\s.*\s([\d.]+)%$", out, re.M)
    if len(rows) != 4 or any(float(r) < 99 for r in rows):
        fail("every held-out step's nodes should come from the tables:\n"
             + out)


def check_errors():
    run("calibrate", code=2)
    run("calibrate", "--check", "-o", path("x.json"), STEPS5, code=2)
    run("calibrate", "--rank", "-1", NCCL, code=2)
    bad = path("bad.json.gz")
    with open(bad, "wb") as f:
        f.write(b"not gzip")
    out = path("left.json")
    p = run("calibrate", NCCL, bad, "-o", out, code=2)
    if "bad.json.gz" not in p.stderr:
        fail("the error should name the bad trace: " + p.stderr)
    if os.path.exists(out):
        fail("a failed calibrate left a profile behind")
    p = run("import", "kineto", NCCL, "--step", "9", code=2)
    if "no profiler step 9" not in p.stderr:
        fail("--step past the trace's steps: " + p.stderr)
    p = run("estimate", "--costs", bad, path("step1.json"), code=2)
    # a profile whose tables are wrong: the field's path, exit 2
    prof = json.load(open(path("nccl.json")))
    prof["measured"]["kernels"][0]["ns"] = -5
    with open(path("badprof.json"), "w") as f:
        json.dump(prof, f)
    p = run("estimate", "--device", path("badprof.json"),
            path("step1.json"), code=2)
    if "measured.kernels[0].ns" not in p.stderr:
        fail("a bad table entry should be located: " + p.stderr)


def main():
    shutil.rmtree(SCRATCH, ignore_errors=True)
    os.makedirs(SCRATCH)
    check_profile()
    check_last_arrival()
    check_holdout()
    check_errors()
    print("ok")


main()
