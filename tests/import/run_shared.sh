#!/bin/sh
# Imports one real third-party file (../shared/data) and checks that the
# graph validates, simulates, and survives the default pipeline; when the
# corpus holds a committed copy (graphs/...), the import must equal it byte
# for byte, so a change to the importer shows up as a corpus diff.
#
#   run_shared.sh CLI FORMAT FILE SCRATCH_DIR [CORPUS_JSON]
#
# Exits 77 (skipped) when FILE is absent: the shared data sits outside the
# repository.
set -u

if [ $# -lt 4 ]; then
    echo "usage: $0 CLI FORMAT FILE SCRATCH_DIR [CORPUS_JSON]" >&2
    exit 2
fi
cli=$1
fmt=$2
file=$3
scratch=$4
corpus=${5:-}

if [ ! -f "$file" ]; then
    echo "SKIP: $file not found" >&2
    exit 77
fi
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
out=$scratch/graph.json

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

"$cli" import "$fmt" "$file" -o "$out" 2> "$scratch/notes" ||
    fail "import $fmt $file: exit status $?: $(cat "$scratch/notes")"
grep -q "^commsched import: note: " "$scratch/notes" ||
    fail "import printed no note about sizes: $(cat "$scratch/notes")"
"$cli" validate "$out" || fail "the imported graph does not validate"
"$cli" simulate --format json "$out" -o "$scratch/sim.json" ||
    fail "the imported graph does not simulate"
grep -q '"makespan_ns":[1-9]' "$scratch/sim.json" ||
    fail "makespan is not positive: $(grep totals "$scratch/sim.json")"
"$cli" optimize "$out" -o "$scratch/opt.json" ||
    fail "the default pipeline fails on the imported graph"
"$cli" simulate --format json "$scratch/opt.json" -o "$scratch/opt_sim.json" ||
    fail "the optimized graph does not simulate"
# Every command that reads a graph reads a binary Chakra trace too, as the
# importer does with its defaults: optimizing the trace itself gives what
# optimizing its import gives, byte for byte.
case "$file" in
*.et)
    "$cli" optimize "$file" -o "$scratch/opt_direct.json" 2> "$scratch/notes" ||
        fail "optimize $file: exit status $?: $(cat "$scratch/notes")"
    cmp -s "$scratch/opt.json" "$scratch/opt_direct.json" ||
        fail "optimize of the trace differs from optimize of its import"
    "$cli" simulate --format json "$file" -o "$scratch/sim_direct.json" \
        2> "$scratch/notes" || fail "simulate $file: $(cat "$scratch/notes")"
    cmp -s "$scratch/sim.json" "$scratch/sim_direct.json" ||
        fail "simulate of the trace differs from simulate of its import"
    ;;
esac
if [ -n "$corpus" ]; then
    cmp -s "$out" "$corpus" ||
        fail "import differs from the corpus copy $corpus (regenerate it: graphs/README.md)"
fi
exit 0
