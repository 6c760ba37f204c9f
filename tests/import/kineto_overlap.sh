#!/bin/sh
# `commsched info --measured TRACE` prints the comm/comp overlap by Holistic
# Trace Analysis's definition; this computes it independently from the
# trace (Python, the definition spelt out) and requires the two to agree
# within 0.1 percentage point. HTA's own figure for the shared sample is
# recorded in docs/WORKLOADS.md.
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
import sys

path, got = sys.argv[1], float(sys.argv[2])
with open(path, "rb") as f:
    raw = f.read()
if raw[:2] == b"\x1f\x8b":
    raw = gzip.decompress(raw)
events = json.loads(raw)["traceEvents"]
launch = {e["args"]["correlation"]: e["ts"] for e in events
          if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
# HTA reads the profiler steps but the last (often cut short), or all.
steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
               if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#"))
if len(steps) > 1:
    steps = steps[:-1]
gpu = [e for e in events if e.get("ph") == "X"
       and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def in_scope(e):
    t = launch.get(e["args"].get("correlation"), e["ts"])
    return not steps or any(a <= t <= b for a, b in steps)


gpu = [e for e in gpu if in_scope(e)]


def union(intervals):
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def kind(name):
    n = name.lower()
    return "comm" if "nccl" in n else "mem" if "memcpy" in n or "memset" in n else "comp"


comm = union([(e["ts"], e["ts"] + e["dur"]) for e in gpu if kind(e["name"]) == "comm"])
comp = union([(e["ts"], e["ts"] + e["dur"]) for e in gpu if kind(e["name"]) == "comp"])
both = sum(max(0.0, min(b, d) - max(a, c)) for a, b in comm for c, d in comp)
want = 100 * both / sum(b - a for a, b in comm)
print("definition: %.4f%%, commsched: %.2f%%" % (want, got))
if abs(want - got) > 0.1:
    sys.exit("FAIL: more than 0.1 percentage point apart")
PY
