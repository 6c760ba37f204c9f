#!/bin/sh
# One invalid-graph case: tests/graphs/invalid/<case>/{input.json,error}.
#
#   run_invalid.sh CLI CASE_DIR SCRATCH_DIR
#
# `error` holds one line: what the CLI prints after "commsched: <input path>",
# e.g. `: nodes[1].inputs[1]: unknown buffer "w9"` (semantic error, JSON
# path) or `:5:37: string or '}' expected near '}'` (syntax error,
# line:col). The whole stderr line must match, so a changed location or
# message fails the test.
#
# For both `validate` and `optimize -o SCRATCH/out.json`: exit status 2, the
# expected line on stderr, nothing on stdout. After the failed optimize,
# SCRATCH must be empty (no output file, no leftover temporary). Standard
# output is captured in SCRATCH.stdout, beside the scratch directory.
set -u

if [ $# -ne 3 ]; then
    echo "usage: $0 CLI CASE_DIR SCRATCH_DIR" >&2
    exit 2
fi
cli=$1
input=$2/input.json
errfile=$2/error
scratch=$3
capture=$scratch.stdout

if [ ! -f "$input" ] || [ ! -f "$errfile" ]; then
    echo "FAIL: $2 needs input.json and error" >&2
    exit 1
fi
if [ "$(wc -l < "$errfile")" -ne 1 ]; then
    echo "FAIL: $errfile must hold exactly one line" >&2
    exit 1
fi
expected="commsched: $input$(cat "$errfile")"

rm -rf "$scratch" "$capture" || exit 1
mkdir -p "$scratch" || exit 1
failed=0

# check WHAT STATUS STDERR
check() {
    if [ "$2" -ne 2 ]; then
        echo "FAIL: $1: exit status $2, expected 2" >&2
        failed=1
    fi
    if ! printf '%s\n' "$3" | grep -F -x -q -e "$expected"; then
        echo "FAIL: $1: stderr differs" >&2
        echo "--- expected" >&2
        printf '%s\n' "$expected" >&2
        echo "+++ actual" >&2
        printf '%s\n' "$3" >&2
        failed=1
    fi
    if [ -s "$capture" ]; then
        echo "FAIL: $1: wrote to standard output:" >&2
        cat "$capture" >&2
        failed=1
    fi
}

cmd="commsched validate $input"
err=$("$cli" validate "$input" 2>&1 > "$capture")
check "$cmd" $? "$err"

cmd="commsched optimize $input -o $scratch/out.json"
err=$("$cli" optimize "$input" -o "$scratch/out.json" 2>&1 > "$capture")
check "$cmd" $? "$err"

left=$(ls -A "$scratch")
if [ -n "$left" ]; then
    echo "FAIL: $cmd left files in $scratch:" >&2
    printf '%s\n' "$left" >&2
    failed=1
fi

rm -f "$capture"
exit $failed
