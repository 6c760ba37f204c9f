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
# The binding alone (COMMSCHED_PURE_WHEEL): the tests that use this venv
# point COMMSCHED_LIBRARY at the build under test, which `make test` makes
# after this.
COMMSCHED_PURE_WHEEL=1 "$venv/bin/pip" install -q --disable-pip-version-check --no-deps \
  --no-build-isolation --no-index --force-reinstall "$here/python"
# A CUDA toolkit without NCCL (the build machines have CUDA 13's compiler
# but no NCCL): NCCL's wheel, the one PyTorch's CUDA builds depend on, goes
# into the environment, and cmake/cuda.cmake finds it through this Python
# (the debug build passes it as COMMSCHED_TORCH_PYTHON). The debug build
# then compiles the CUDA runtime adaptor against the real CUDA and NCCL
# headers and links it, and cuda/no-device runs the adaptor itself. Not
# fatal: without it the adaptor is simply not built.
nvcc=$(command -v nvcc || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -n "$nvcc" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so' &&
   ! "$venv/bin/python" -c 'import nvidia.nccl' 2>/dev/null; then
  major=$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\)\..*/\1/p')
  case "$major" in
    12|13)
      echo "commsched: adding NCCL (nvidia-nccl-cu$major) to $venv for CUDA $major" >&2
      "$venv/bin/pip" install -q --disable-pip-version-check --no-deps \
        "nvidia-nccl-cu$major==2.27.7" ||
        echo "commsched: could not install NCCL's wheel; the CUDA adaptor is left out" >&2 ;;
  esac
fi
