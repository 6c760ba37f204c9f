#!/bin/sh
# Makes (once) the virtual environment the Python tier compares Kineto
# overlap figures in: HolisticTraceAnalysis from PyPI at the version
# tests/python/hta-requirements.txt pins, with the eleven packages its
# TraceAnalysis imports, each pinned too (--no-deps: HTA's own
# requirements pull in JupyterLab and a hundred more packages that the
# analysis never imports). Used by `make test`.
#   tools/make-hta-venv.sh build/hta-venv
set -eu
venv=${1:-build/hta-venv}
here=$(cd "$(dirname "$0")/.." && pwd)
req=$here/tests/python/hta-requirements.txt
stamp=$venv/.requirements
if [ -f "$stamp" ] && cmp -s "$stamp" "$req" && "$venv/bin/python" -c 'import hta' 2>/dev/null; then
  exit 0
fi
echo "commsched: making $venv with $(grep -i holistic "$req")" >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps -r "$req"
cp "$req" "$stamp"
