#!/bin/sh
# Valid non-ASCII names import and save intact (issue 21): the Chakra
# importer cut names at 80 bytes inside a character, and saving then failed
# with partial JSON on standard output.
#
#   run_utf8.sh CLI CASE_DIR SCRATCH_DIR
set -u
cli=$1
dir=$2
scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
failed=0
check() { # FORMAT INPUT EXPECTED-NAME...
    fmt=$1 in=$2
    shift 2
    for to in file stdout; do
        if [ $to = file ]; then
            "$cli" import "$fmt" "$in" -o "$scratch/$fmt.json" 2>"$scratch/err"
        else
            "$cli" import "$fmt" "$in" >"$scratch/$fmt.json" 2>"$scratch/err"
        fi || { echo "FAIL: import $fmt ($to): $(cat "$scratch/err")" >&2
                failed=1; continue; }
        "$cli" validate "$scratch/$fmt.json" ||
            { echo "FAIL: $fmt ($to): saved graph does not load" >&2; failed=1; }
        for name in "$@"; do
            grep -q -F "\"$name\"" "$scratch/$fmt.json" ||
                { echo "FAIL: $fmt ($to): no node \"$name\"" >&2; failed=1; }
        done
    done
}
x79=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
check chakra "$dir/chakra.json" "1:$x79" "2:ncclDevKernel_AllGather_ünïcode" \
    "chakra-wörkload"
check astra "$dir/astra.txt" "L0.convé→🚀.fwd"
exit $failed
