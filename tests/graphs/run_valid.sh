#!/bin/sh
# One valid-graph case: tests/graphs/valid/<case>/input.json.
#
#   run_valid.sh CLI CASE_DIR SCRATCH_DIR
#
# 1. `validate input.json` exits 0 and prints nothing at all;
# 2. `validate - < input.json` (standard input) does the same;
# 3. `optimize --passes none input.json -o SCRATCH/a.json` exits 0 and
#    `validate SCRATCH/a.json` accepts what it wrote;
# 4. `optimize --passes none SCRATCH/a.json -o SCRATCH/b.json` writes a
#    byte-identical b.json: saving is idempotent (a saved file loads back to
#    the same graph and order, and the "schedule" object is regenerated the
#    same);
# 5. the default pipeline with --verify-memory writes c.json, which
#    validates, and running it again writes the same bytes (deterministic);
# 6. SCRATCH then holds exactly a.json, b.json, c.json and d.json (no
#    leftover temporary).
set -u

if [ $# -ne 3 ]; then
    echo "usage: $0 CLI CASE_DIR SCRATCH_DIR" >&2
    exit 2
fi
cli=$1
input=$2/input.json
scratch=$3
out=$scratch.out
err=$scratch.err

if [ ! -f "$input" ]; then
    echo "FAIL: $input does not exist" >&2
    exit 1
fi
rm -rf "$scratch" "$out" "$err" || exit 1
mkdir -p "$scratch" || exit 1
failed=0

# expect STATUS QUIET WHAT: the last command's exit status must be 0; when
# QUIET is 1, stdout and stderr must both be empty, otherwise only stderr.
expect() {
    if [ "$1" -ne 0 ]; then
        echo "FAIL: $3: exit status $1, expected 0" >&2
        failed=1
    fi
    if [ "$2" -eq 1 ] && [ -s "$out" ]; then
        echo "FAIL: $3: unexpected standard output:" >&2
        cat "$out" >&2
        failed=1
    fi
    if [ -s "$err" ]; then
        echo "FAIL: $3: unexpected standard error:" >&2
        cat "$err" >&2
        failed=1
    fi
}

"$cli" validate "$input" > "$out" 2> "$err"
expect $? 1 "commsched validate $input"

"$cli" validate - < "$input" > "$out" 2> "$err"
expect $? 1 "commsched validate - < $input"

"$cli" optimize --passes none "$input" -o "$scratch/a.json" > "$out" 2> "$err"
expect $? 1 "commsched optimize --passes none $input -o $scratch/a.json"

if [ -f "$scratch/a.json" ]; then
    "$cli" validate "$scratch/a.json" > "$out" 2> "$err"
    expect $? 1 "commsched validate $scratch/a.json"

    "$cli" optimize --passes none "$scratch/a.json" -o "$scratch/b.json" \
        > "$out" 2> "$err"
    expect $? 1 "commsched optimize --passes none $scratch/a.json -o $scratch/b.json"

    if [ -f "$scratch/b.json" ] &&
        ! cmp -s "$scratch/a.json" "$scratch/b.json"; then
        echo "FAIL: saving is not idempotent: a.json and b.json differ" >&2
        diff -u "$scratch/a.json" "$scratch/b.json" >&2
        failed=1
    fi
else
    echo "FAIL: $scratch/a.json was not written" >&2
    failed=1
fi

for f in c d; do
    "$cli" optimize --verify-memory "$input" -o "$scratch/$f.json" \
        > "$out" 2> "$err"
    expect $? 1 "commsched optimize --verify-memory $input -o $scratch/$f.json"
done
"$cli" validate "$scratch/c.json" > "$out" 2> "$err"
expect $? 1 "commsched validate $scratch/c.json (default pipeline output)"
if ! cmp -s "$scratch/c.json" "$scratch/d.json"; then
    echo "FAIL: the default pipeline is not deterministic: c.json and d.json differ" >&2
    diff -u "$scratch/c.json" "$scratch/d.json" >&2
    failed=1
fi

for f in "$scratch"/* "$scratch"/.[!.]*; do
    [ -e "$f" ] || continue
    case ${f##*/} in
    a.json | b.json | c.json | d.json) ;;
    *)
        echo "FAIL: unexpected file left in $scratch: ${f##*/}" >&2
        failed=1
        ;;
    esac
done

rm -f "$out" "$err"
exit $failed
