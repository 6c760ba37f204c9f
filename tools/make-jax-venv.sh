#!/bin/sh
# Makes (once) the virtual environment the XLA tests run in: jax[cpu]
# 0.10.2 (always pinned: graphs/xla's dumps are what that version's XLA
# makes, and the test that remakes them compares bytes). Used by `make
# test`; graphs/xla/make_xla_graphs.py runs in it.
#   tools/make-jax-venv.sh build/jax-venv
set -eu
venv=${1:-build/jax-venv}
if ! "$venv/bin/python" -c 'import jax, sys; sys.exit(jax.__version__ != "0.10.2")' 2>/dev/null; then
  echo "commsched: making $venv with jax[cpu]==0.10.2" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "jax[cpu]==0.10.2"
fi
