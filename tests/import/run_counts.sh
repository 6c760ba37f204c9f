#!/bin/sh
# Imports FILE and checks the collective count `info` reports: each
# collective once, however many levels of the trace record it.
#
#   run_counts.sh CLI FORMAT FILE COLLECTIVES SCRATCH_DIR
set -u
cli=$1
fmt=$2
file=$3
want=$4
scratch=$5
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
"$cli" import "$fmt" "$file" -o "$scratch/g.json" 2> "$scratch/notes" || {
    echo "FAIL: import: $(cat "$scratch/notes")" >&2
    exit 1
}
line=$("$cli" info "$scratch/g.json" | grep '^nodes:')
case "$line" in
*"collective $want,"*) exit 0 ;;
esac
echo "FAIL: expected $want collectives: $line" >&2
exit 1
