#!/bin/sh
# One malformed-input case: tests/import/<case>/{input,args,error}.
#
#   run_case.sh CLI CASE_DIR SCRATCH_DIR
#
# `args` holds the format and options (e.g. "astra" or "chakra --gpu-only");
# `error` holds one line: what the CLI prints after "commsched: <input path>",
# e.g. `:3:42: weight-gradient comm type: unknown type ...` (ASTRA-sim text:
# line[:column]) or `: workload_graph[1].data_deps[1]: unknown node 99`
# (Chakra: JSON path). The CLI runs as
#   commsched import ARGS CASE_DIR/input -o SCRATCH/out.json
# and must exit 2 (or the status in CASE_DIR/status: 1 for a resource
# limit), print that exact line on stderr, nothing on stdout, and leave
# SCRATCH empty (no output file, no temporary).
set -u

if [ $# -ne 3 ]; then
    echo "usage: $0 CLI CASE_DIR SCRATCH_DIR" >&2
    exit 2
fi
cli=$1
input=$2/input
errfile=$2/error
argsfile=$2/args
scratch=$3
capture=$scratch.stdout

for f in "$input" "$errfile" "$argsfile"; do
    if [ ! -f "$f" ]; then
        echo "FAIL: $2 needs input, args and error" >&2
        exit 1
    fi
done
if [ "$(wc -l < "$errfile")" -ne 1 ]; then
    echo "FAIL: $errfile must hold exactly one line" >&2
    exit 1
fi
expected="commsched: $input$(cat "$errfile")"

rm -rf "$scratch" "$capture" || exit 1
mkdir -p "$scratch" || exit 1
failed=0

# shellcheck disable=SC2046 # args are words on purpose
err=$("$cli" import $(cat "$argsfile") "$input" -o "$scratch/out.json" 2>&1 > "$capture")
status=$?
want=2
[ -f "$2/status" ] && want=$(cat "$2/status")
if [ "$status" -ne "$want" ]; then
    echo "FAIL: exit status $status, expected $want" >&2
    failed=1
fi
if ! printf '%s\n' "$err" | grep -F -x -q -e "$expected"; then
    echo "FAIL: stderr differs" >&2
    echo "--- expected" >&2
    printf '%s\n' "$expected" >&2
    echo "+++ actual" >&2
    printf '%s\n' "$err" >&2
    failed=1
fi
if [ -s "$capture" ]; then
    echo "FAIL: wrote to standard output:" >&2
    cat "$capture" >&2
    failed=1
fi
left=$(ls -A "$scratch")
if [ -n "$left" ]; then
    echo "FAIL: left files in $scratch:" >&2
    printf '%s\n' "$left" >&2
    failed=1
fi
rm -f "$capture"
exit $failed
