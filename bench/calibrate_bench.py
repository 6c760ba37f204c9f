#!/usr/bin/env python3
"""Validation of `commsched calibrate` on real traces (docs/COST.md,
"Validation on held-out steps"; issue 47): for every kept Kineto trace with
3 profiler steps or more, each step but the last held out in turn, fitted
on the trace's other steps and predicted in the run's own order. Prints one
row per trace: the mean |error| of the prediction against the measured step
and against its replay, the replay's own error range, and the h100 / a100
analytical collectives' mean |error| (the same calibrated kernels); then
the time of one fit per trace.

usage: calibrate_bench.py --cli build/release/tools/commsched [TRACE...]
(default: tests/import/data/kineto/nccl_data.json.gz and kineto/hta/*)"""

import argparse
import glob
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "import", "data", "kineto")
ROW = re.compile(
    r"^(ProfilerStep#\d+)\s+(\d+)\s+([\d.]+ \S+)\s+([\d.]+ \S+)\s+"
    r"([+-][\d.]+)%\s+([\d.]+ \S+)\s+([+-][\d.]+)%\s+([+-][\d.]+)%\s+"
    r"([\d.]+ \S+)\s+([+-][\d.]+)%\s+([\d.]+ \S+)\s+([+-][\d.]+)%\s+"
    r"([\d.]+)%$", re.M)


def mean_abs(xs):
    return sum(abs(x) for x in xs) / len(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("traces", nargs="*")
    a = ap.parse_args()
    traces = a.traces or ([os.path.join(DATA, "nccl_data.json.gz")] +
                          sorted(glob.glob(os.path.join(DATA, "hta",
                                                        "*.json.gz"))))
    print("| trace | held-out steps | mean \\|error\\| vs measured step | "
          "vs its replay | replay vs measured | h100 collectives | "
          "a100 collectives | fit (s) |")
    print("|---|---|---|---|---|---|---|---|")
    failed = 0
    for t in traces:
        p = subprocess.run([a.cli, "calibrate", "--check", t],
                           capture_output=True, text=True)
        if p.returncode != 0:
            print("calibrate --check %s: exit %d\n%s" %
                  (t, p.returncode, p.stderr[-2000:]), file=sys.stderr)
            failed = 1
            continue
        rows = ROW.findall(p.stdout)
        if not rows:
            print("| %s | 0 | | | | | | |" % os.path.basename(t))
            continue
        pred = [float(r[6]) for r in rows]
        vs_replay = [float(r[7]) for r in rows]
        replay = [float(r[4]) for r in rows]
        h100 = [float(r[9]) for r in rows]
        a100 = [float(r[11]) for r in rows]
        t0 = time.perf_counter()
        subprocess.run([a.cli, "calibrate", t, "-o", os.devnull],
                       capture_output=True, check=True)
        fit_s = time.perf_counter() - t0
        print("| %s | %d | %.1f%% | %.1f%% | %+.0f..%+.0f%% | %.1f%% | "
              "%.1f%% | %.2f |" %
              (os.path.basename(t).replace(".json.gz", ""), len(rows),
               mean_abs(pred), mean_abs(vs_replay), min(replay),
               max(replay), mean_abs(h100), mean_abs(a100), fit_s))
    return failed


sys.exit(main())
