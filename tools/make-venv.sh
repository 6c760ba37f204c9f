#!/bin/sh
# Makes (once) the virtual environment the Inductor plugin's tests run in:
# torch==2.13.0 (always pinned: an unpinned torch pulls a CUDA build of
# several GB; the machines this project targets hold the CPU build on
# disk) and numpy, then installs the binding from python/ into it (every
# time: it is the copy the tests import). Used by `make test`.
#   tools/make-venv.sh build/venv
set -eu
venv=${1:-build/venv}
here=$(cd "$(dirname "$0")/.." && pwd)
if ! "$venv/bin/python" -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null; then
  echo "commsched: making $venv with torch==2.13.0" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check torch==2.13.0 numpy
fi
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps \
  --no-build-isolation --no-index --force-reinstall "$here/python"
