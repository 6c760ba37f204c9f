#!/bin/sh
# make bench: speed (load, every pass, simulate, save, on generated graphs
# of 10k, 100k and 1M nodes and the ~36K-node llama2-70b step) and schedule
# quality (every corpus workload under every pipeline). Never part of
# `make test`. Prints both tables, writes bench/results.json and refreshes
# the bench's sections of docs/PERFORMANCE.md.
# bench/io_bench.py measures load (against jansson's parse alone) and save
# in MB/s and peak RSS (docs/PERFORMANCE.md, "Load and save");
# bench/et_bench.py a 1M-node Chakra .et import (CPU, wall, peak RSS);
# bench/growth.py time and peak RSS per size and per stage (every pass of
# the default pipeline, the bucketing passes, simulate, tune) with the
# growth per 10x nodes (docs/PERFORMANCE.md, "growth per pass");
# bench/torch_scale.py the Inductor plugin on real transformer programs of
# ~1K, ~10K and ~36K scheduler nodes beside torch's own schedulers
# (docs/PERFORMANCE.md, "The Inductor plugin at real size").
# bench/optimum_bench.py the distance of overlap, tune and the anchors to
# the optimum CP-SAT proves on the small graphs (issue 42).
# bench/calibrate_bench.py commsched calibrate --check on real multi-step
# Kineto traces (docs/COST.md, "Validation on held-out steps"; issue 47).
# bench/tune_ranks_bench.py tune on 1 and 2 MPI ranks and a model of 8 and
# 64 from measured candidate times (docs/PERFORMANCE.md, "tune over MPI
# ranks"; issue 48).
# Usage: bench/run.sh BUILD_DIR [bench.py options, e.g. --sizes 10000]
set -eu
build=${1:-build/release}
shift || true
python3 "$(dirname "$0")/mpi_bench.py" --cli "$build/tools/commsched" --json "$build/mpi_bench.json" --realtime || echo "bench/run.sh: the MPI benchmark failed" >&2
here=$(dirname "$0")
python3 "$here/tune_ranks_bench.py" --cli "$build/tools/commsched" --json "$build/tune_ranks_bench.json" \
    --update-doc "$here/../docs/PERFORMANCE.md" || echo "bench/run.sh: the tune-over-ranks benchmark failed" >&2
python3 "$here/io_bench.py" --build "$build" || echo "bench/run.sh: the load/save benchmark failed" >&2
python3 "$here/et_bench.py" --build "$build" || echo "bench/run.sh: the Chakra .et import benchmark failed" >&2
python3 "$here/calibrate_bench.py" --cli "$build/tools/commsched" || echo "bench/run.sh: the calibration benchmark failed" >&2
python3 "$here/growth.py" --cli "$build/tools/commsched" --json "$build/growth.json" \
    --tune-max 1000000 --tune-cap 300 --repeat 3 --update-doc "$here/../docs/PERFORMANCE.md" || echo "bench/run.sh: the growth benchmark failed" >&2
# The Inductor plugin at real size against torch's own schedulers
# (bench/torch_scale.py; needs the torch environment `make venv` makes).
venv_python="$here/../build/venv/bin/python"
if [ -x "$venv_python" ]; then
  COMMSCHED_LIBRARY="$build/libcommsched.so" COMMSCHED_BENCH=1 \
    PYTHONPATH="$here/../python" "$venv_python" "$here/torch_scale.py" \
    --json "$build/torch_scale.json" --update-doc "$here/../docs/PERFORMANCE.md" ||
    echo "bench/run.sh: the plugin-at-scale benchmark failed" >&2
else
  echo "bench/run.sh: no $venv_python (make venv): the plugin-at-scale benchmark is left out" >&2
fi
# The exact reference (bench/optimum_bench.py): CP-SAT from OR-tools,
# pinned, in a virtual environment of its own under build/.
venv=$here/../build/bench-venv
if ! "$venv/bin/python" -c 'import ortools, sys; sys.exit(ortools.__version__ != "9.15.6755")' 2>/dev/null; then
    python3 -m venv "$venv" &&
        "$venv/bin/pip" install -q --disable-pip-version-check ortools==9.15.6755 ||
        echo "bench/run.sh: could not install ortools==9.15.6755" >&2
fi
"$venv/bin/python" "$here/optimum_bench.py" --cli "$build/tools/commsched" \
    --time-limit 60 --update-doc "$here/../docs/PERFORMANCE.md" ||
    echo "bench/run.sh: the optimality benchmark failed" >&2
exec python3 "$here/bench.py" --cli "$build/tools/commsched" \
    --update-doc "$here/../docs/PERFORMANCE.md" "$@"
