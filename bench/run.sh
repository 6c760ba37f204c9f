#!/bin/sh
# make bench: speed of load, passes and save on generated graphs. Never part
# of `make test`. Usage: bench/run.sh BUILD_DIR [SIZES...]
set -eu
build=${1:-build/release}
shift || true
python3 "$(dirname "$0")/mpi_bench.py" --cli "$build/tools/commsched" --json "$build/mpi_bench.json" --realtime || echo "bench/run.sh: the MPI benchmark failed" >&2
exec python3 "$(dirname "$0")/bench.py" --cli "$build/tools/commsched" "$@"
