#!/usr/bin/env python3
"""commsched's measured comm/comp overlap against Holistic Trace Analysis
itself (issue 43): HolisticTraceAnalysis (the version
tests/python/hta-requirements.txt pins, in build/hta-venv) runs
TraceAnalysis(...).get_comm_comp_overlap() on each real Kineto trace, and
`commsched info --measured TRACE` must print the same percentage to
+-0.01 point.

usage: test_hta.py COMMSCHED SCRATCH TRACE...   (run by the HTA venv's
python; a TRACE that is missing is skipped, all missing: exit 77)

The traces: HTA's own test data (a 2-rank NCCL all-reduce/broadcast job
with NCCL LL kernels and three profiler steps, where commsched once read
14.76% for HTA's 14.31%: HTA rounds each event to whole microseconds;
a 128-rank job's ranks 0 and 1)."""

import logging
import os
import re
import shutil
import subprocess
import sys

CLI, SCRATCH, TRACES = sys.argv[1], sys.argv[2], sys.argv[3:]

logging.disable(logging.WARNING)  # HTA logs every trace it parses
from hta.trace_analysis import TraceAnalysis  # noqa: E402


def hta_overlap(trace, where):
    """HTA's figure for one trace: a directory holding it alone."""
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    shutil.copy(trace, os.path.join(where, os.path.basename(trace)))
    df = TraceAnalysis(trace_dir=where).get_comm_comp_overlap(visualize=False)
    if len(df) != 1:
        sys.exit("FAIL: %s: HTA read %d ranks" % (trace, len(df)))
    return float(df["comp_comm_overlap_pctg"].iloc[0])


def commsched_overlap(trace):
    p = subprocess.run([CLI, "info", "--measured", trace],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: commsched info --measured %s: exit %d\n%s" %
                 (trace, p.returncode, p.stderr))
    m = re.search(r"^  measured \(the trace\): *([0-9.]+)%$", p.stdout, re.M)
    if not m:
        sys.exit("FAIL: no measured line:\n" + p.stdout)
    return float(m.group(1))


found = 0
for i, trace in enumerate(TRACES):
    if not os.path.isfile(trace):
        print("skip (missing):", trace)
        continue
    found += 1
    want = hta_overlap(trace, os.path.join(SCRATCH, "t%d" % i))
    got = commsched_overlap(trace)
    print("%s: HTA %.2f%%, commsched %.2f%%" % (os.path.basename(trace),
                                               want, got))
    if abs(want - got) > 0.01 + 1e-9:
        sys.exit("FAIL: %s differs from HTA by %.2f points" %
                 (trace, got - want))
if not found:
    sys.exit(77)
print("%d traces agree with HTA" % found)
