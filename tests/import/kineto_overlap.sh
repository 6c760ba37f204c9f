#!/bin/sh
# `commsched info --measured TRACE` prints the comm/comp overlap by Holistic
# Trace Analysis's definition; this computes it independently from the
# trace (Python, HTA 0.5.0's rules spelt out) and requires the two to
# agree within 0.01 percentage point. tests/python/test_hta.py compares
# with HTA itself.
#
# `commsched report --measured TRACE` prints the same figures per rank
# (one trace per rank; the same trace twice here is two ranks) and writes
# the page of the first.
#
#   kineto_overlap.sh CLI TRACE [SCRATCH_DIR]
set -u
cli=$1
trace=$2
scratch=${3:-}
if [ ! -f "$trace" ]; then
    echo "SKIP: $trace not found" >&2
    exit 77
fi
got=$("$cli" info --measured "$trace" 2>/dev/null | sed -n 's/^  measured (the trace): *\([0-9.]*\)%$/\1/p')
[ -n "$got" ] || { echo "FAIL: no measured line from info --measured" >&2; exit 1; }
if [ -n "$scratch" ]; then
    rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
    "$cli" report --measured "$trace" --measured "$trace" \
        -o "$scratch/page.html" > "$scratch/out" 2> "$scratch/err" ||
        { echo "FAIL: report --measured: $(cat "$scratch/err")" >&2; exit 1; }
    [ "$(grep -c "^  measured (the trace): *$got%$" "$scratch/out")" = 2 ] ||
        { echo "FAIL: report --measured: not two ranks at $got%: $(cat "$scratch/out")" >&2; exit 1; }
    [ "$(grep -c '^  your run overlapped [0-9]*%; this order would overlap [0-9]*%$' "$scratch/out")" = 2 ] ||
        { echo "FAIL: report --measured: no summary line" >&2; exit 1; }
    grep -q '<html' "$scratch/page.html" ||
        { echo "FAIL: report --measured wrote no page" >&2; exit 1; }
    # the page goes to standard output, the figures to standard error
    "$cli" report --measured "$trace" > "$scratch/page2.html" 2> "$scratch/err2" &&
        grep -q "^  measured (the trace): *$got%$" "$scratch/err2" &&
        grep -q '<html' "$scratch/page2.html" ||
        { echo "FAIL: report --measured to standard output" >&2; exit 1; }
fi
python3 - "$trace" "$got" <<'PY'
import gzip
import json
import math
import re
import sys

path, got = sys.argv[1], float(sys.argv[2])
with open(path, "rb") as f:
    raw = f.read()
if raw[:2] == b"\x1f\x8b":
    raw = gzip.decompress(raw)
events = json.loads(raw)["traceEvents"]
# HolisticTraceAnalysis 0.5.0's rules (tests/python/test_hta.py runs HTA
# itself): times rounded as its parser does (start up, end down), GPU
# events launched (the CPU call with their correlation id) before the
# last ProfilerStep starts when there are two step names or more, kinds
# by name, each kind merged, the time both run over the comm time.
launch = {}
for e in events:
    c = e.get("args", {}).get("correlation") if isinstance(e.get("args"), dict) else None
    if e.get("cat") in ("cuda_runtime", "cuda_driver") and c is not None:
        launch[c] = min(launch.get(c, math.inf), math.ceil(e["ts"]))
steps = [e for e in events if e.get("ph") == "X"
         and e.get("cat") in ("cpu_op", "user_annotation")
         and "ProfilerStep" in e.get("name", "")]
last = max((math.ceil(e["ts"]) for e in steps), default=None)
scoped = len({e["name"] for e in steps}) >= 2
gpu = [e for e in events if e.get("ph") == "X"
       and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
if scoped:
    gpu = [e for e in gpu if launch.get(e["args"].get("correlation"), math.inf) < last]


def merged(intervals):
    out, top = [], -math.inf
    for a, b in sorted(intervals):
        if not out or a > top:
            out.append([a, b])
        else:
            out[-1][1] = max(out[-1][1], b)
        top = max(top, b)
    return out


def comm_kernel(name):
    return re.match(r"^nccl.*Kernel", name) is not None


def comp_kernel(name):
    return re.match(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)", name) is None


def rounded(e):
    return math.ceil(e["ts"]), math.floor(e["ts"] + e["dur"])


comm = merged([rounded(e) for e in gpu if comm_kernel(e["name"])])
comp = merged([rounded(e) for e in gpu if comp_kernel(e["name"])])
edges = sorted([(a, 1) for a, b in comm] + [(b, -1) for a, b in comm] +
               [(a, 2) for a, b in comp] + [(b, -2) for a, b in comp])
both, level = 0, 0
for i, (t, d) in enumerate(edges):
    level += d
    if level == 3 and i + 1 < len(edges):
        both += edges[i + 1][0] - t
want = 100 * both / sum(b - a for a, b in comm)
print("definition: %.4f%%, commsched: %.2f%%" % (want, got))
if abs(want - got) > 0.01:
    sys.exit("FAIL: more than 0.01 percentage point apart")
PY
