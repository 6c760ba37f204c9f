#!/bin/sh
# Remakes graphs/xla with JAX (make_xla_graphs.py, CPU, 8 fake devices)
# into a scratch directory and compares every file with the committed one:
# the dumps are what JAX 0.10.2's XLA makes of the programs, the graphs
# what the importer makes of them.
#   xla_remake.sh JAX_PYTHON CLI GRAPHS_XLA SCRATCH_DIR
set -u
py=$1
cli=$2
dir=$3
scratch=$4
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
"$py" "$dir/make_xla_graphs.py" "$scratch" --cli "$cli" > "$scratch.log" 2>&1 || {
    echo "FAIL: make_xla_graphs.py: $(cat "$scratch.log")" >&2
    exit 1
}
failed=0
for f in "$dir"/*.hlo.txt "$dir"/*.json; do
    b=$(basename "$f")
    if ! cmp -s "$f" "$scratch/$b"; then
        echo "FAIL: $b differs from what JAX makes now (diff $f $scratch/$b)" >&2
        failed=1
    fi
done
n=$(ls "$scratch" | wc -l)
m=$(ls "$dir"/*.hlo.txt "$dir"/*.json | wc -l)
if [ "$n" -ne "$m" ]; then
    echo "FAIL: JAX made $n files, graphs/xla holds $m" >&2
    failed=1
fi
exit $failed
