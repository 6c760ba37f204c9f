#!/bin/sh
# Collective sizes from Chakra's comm_size and the group sizes a .et does
# not carry (docs/WORKLOADS.md, "import chakra"): comm_size is what each
# rank puts in, as ASTRA-sim reads it, so an all-gather writes comm_size x
# k and a reduce-scatter comm_size / k, k being the group's size from
# --group-size, --comm-group (ASTRA-sim's comm-group file) or --ranks; a
# size the trace and the options do not give is assumed with a warning.
#
#   group_sizes.sh CLI PYTHON SHARED_DATA GRAPHS_DIR SCRATCH_DIR
set -u

if [ $# -ne 5 ]; then
    echo "usage: $0 CLI PYTHON SHARED_DATA GRAPHS_DIR SCRATCH_DIR" >&2
    exit 2
fi
cli=$1
py=$2
data=$3
graphs=$4
scratch=$5
ag=$data/chakra-et/all_gather_4npus.0.et
mlp=$data/chakra-et/MLP_ModelParallel.0.et
if [ ! -f "$ag" ] || [ ! -f "$mlp" ]; then
    echo "SKIP: $ag or $mlp not found" >&2
    exit 77
fi
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# outputs GRAPH: "op group k out_bytes" for each collective
outputs() {
    "$py" - "$1" <<'PY'
import json
import sys
g = json.load(open(sys.argv[1]))
size = {x["name"]: x["size"] for x in g["groups"]}
for n in g["nodes"]:
    if n["kind"] == "collective":
        print(n["op"], n["group"], size[n["group"]],
              sum(o.get("size", 0) for o in n["outputs"]))
PY
}

# all_gather_4npus: one 1 MiB all-gather on 4 NPUs (the file names them,
# the trace does not): each NPU puts in 1 MiB and gets 4 MiB back.
"$cli" import chakra "$ag" -o "$scratch/ag8.json" 2> "$scratch/notes" ||
    fail "import $ag: $(cat "$scratch/notes")"
grep -q '^commsched import: warning: .*group "world": 8 ranks assumed' \
    "$scratch/notes" || fail "no warning about the assumed size: $(cat "$scratch/notes")"
for opt in "--group-size world=4" "--ranks 4"; do
    # shellcheck disable=SC2086 # two words on purpose
    "$cli" import chakra $opt "$ag" -o "$scratch/ag4.json" \
        2> "$scratch/notes" || fail "import $opt: $(cat "$scratch/notes")"
    ! grep -q warning "$scratch/notes" ||
        fail "$opt: still a warning: $(cat "$scratch/notes")"
    got=$(outputs "$scratch/ag4.json")
    [ "$got" = "all_gather world 4 4194304" ] ||
        fail "$opt: expected a 4 MiB all-gather output on 4 ranks, got: $got"
    "$cli" validate "$scratch/ag4.json" || fail "$opt: does not validate"
done

# MLP_ModelParallel: rank 0 of 32; comm_size 37632 for the first
# all-gather, 65536 for the first all-reduce (as the .et stores them).
"$cli" import chakra --ranks 32 "$mlp" -o "$scratch/mlp.json" \
    2> "$scratch/notes" || fail "import --ranks 32 $mlp: $(cat "$scratch/notes")"
first_ag=$(outputs "$scratch/mlp.json" | grep '^all_gather' | head -1)
[ "$first_ag" = "all_gather world 32 1204224" ] ||
    fail "first all-gather: expected 37632 x 32 bytes out, got: $first_ag"
first_ar=$(outputs "$scratch/mlp.json" | grep '^all_reduce' | head -1)
[ "$first_ar" = "all_reduce world 32 65536" ] ||
    fail "first all-reduce: expected 65536 bytes out, got: $first_ar"
"$cli" validate "$scratch/mlp.json" || fail "MLP import does not validate"

# Two groups of different sizes (dp 4, tp 2) through ASTRA-sim's
# comm-group file: the fields-only import gives back every collective's
# output size, reduce-scatters (comm_size / 4) and all-gathers included.
src=$graphs/examples/fsdp_tp_1block.json
"$cli" export chakra "$src" -o "$scratch/t" 2> "$scratch/notes" ||
    fail "export: $(cat "$scratch/notes")"
printf '{"dp": [0, 2, 4, 6], "tp": [0, 1]}\n' > "$scratch/groups.json"
"$cli" import chakra --chakra-fields-only --comm-group "$scratch/groups.json" \
    "$scratch/t.0.et" -o "$scratch/back.json" 2> "$scratch/notes" ||
    fail "import --comm-group: $(cat "$scratch/notes")"
! grep -q warning "$scratch/notes" ||
    fail "--comm-group: still a warning: $(cat "$scratch/notes")"
outputs "$src" > "$scratch/want"
outputs "$scratch/back.json" > "$scratch/got"
cmp -s "$scratch/want" "$scratch/got" ||
    fail "collective outputs differ: $(diff "$scratch/want" "$scratch/got")"
grep -q '^reduce_scatter dp 4 ' "$scratch/got" ||
    fail "expected reduce-scatters on dp (4 ranks): $(cat "$scratch/got")"

# A comm-group file that is not one: located in that file, exit 2.
printf '{"dp": 4}\n' > "$scratch/bad.json"
"$cli" import chakra --chakra-fields-only --comm-group "$scratch/bad.json" \
    "$scratch/t.0.et" -o "$scratch/bad-out.json" 2> "$scratch/notes"
status=$?
[ $status -eq 2 ] || fail "bad comm-group file: exit status $status"
grep -q -x "commsched: $scratch/bad.json: dp: expected a list of 1 to 16777216 NPU ids" \
    "$scratch/notes" || fail "bad comm-group file: $(cat "$scratch/notes")"
[ ! -e "$scratch/bad-out.json" ] || fail "bad comm-group file: output written"
exit 0
