#!/bin/sh
# One toposort case: tests/graphs/toposort/<case>/input.json is acyclic but
# its node order is not topological.
#
#   run_toposort.sh CLI CASE_DIR SCRATCH_DIR
#
# 1. plain `validate` rejects it: exit 2, one "not topological" error that
#    points at the reordering option;
# 2. `validate --toposort` accepts it silently;
# 3. `optimize --toposort -o SCRATCH/a.json` writes a repaired order that
#    plain `validate` accepts.
set -u

if [ $# -ne 3 ]; then
    echo "usage: $0 CLI CASE_DIR SCRATCH_DIR" >&2
    exit 2
fi
cli=$1
input=$2/input.json
scratch=$3
out=$scratch.out

if [ ! -f "$input" ]; then
    echo "FAIL: $input does not exist" >&2
    exit 1
fi
rm -rf "$scratch" "$out" || exit 1
mkdir -p "$scratch" || exit 1
failed=0

fail() {
    echo "FAIL: $*" >&2
    failed=1
}

msg=$("$cli" validate "$input" 2>&1 > "$out")
st=$?
[ $st -eq 2 ] || fail "commsched validate $input: exit status $st, expected 2"
[ -s "$out" ] && fail "commsched validate $input wrote to standard output"
case $msg in
"commsched: $input: nodes["*"the node order is not topological (--toposort repairs it)") ;;
*) fail "commsched validate $input: expected a 'not topological' error, got: $msg" ;;
esac

msg=$("$cli" validate --toposort "$input" 2>&1)
st=$?
[ $st -eq 0 ] || fail "commsched validate --toposort $input: exit status $st"
[ -n "$msg" ] && fail "commsched validate --toposort $input printed: $msg"

msg=$("$cli" optimize --toposort "$input" -o "$scratch/a.json" 2>&1)
st=$?
[ $st -eq 0 ] || fail "commsched optimize --toposort $input: exit status $st: $msg"
msg=$("$cli" validate "$scratch/a.json" 2>&1)
st=$?
[ $st -eq 0 ] || fail "the repaired order does not validate: $msg"

rm -f "$out"
exit $failed
