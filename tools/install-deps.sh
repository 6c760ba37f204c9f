#!/bin/sh
# Installs the Debian packages commsched needs, only if any is missing.
# Runs `apt-get update` once before installing. Used by `make run`, `make
# test` and `make bench`; safe to run again (it does nothing then).
# Arguments name extra packages one target needs: `make test` adds
# chromium, the headless browser the HTML report is tested in
# (tests/report/browser_report.py), which a build does not need.
set -eu
# python3-pip: the Python binding's install test (pip install ./python; the
# binding's build backend needs nothing else). python3-venv: the virtual
# environment with torch==2.13.0 the Inductor plugin is tested in
# (tools/make-venv.sh).
# libprotobuf-c-dev + protobuf-c-compiler: Chakra's binary traces (the C
# decoder is generated from src/import/chakra_et.proto at build time).
# zlib1g-dev: gzip-compressed traces.
# clang, libclang-rt-dev: the clang build with ASan + UBSan that `make test`
# runs the fast tiers under, and the libFuzzer harnesses (`make fuzz`).
PKGS="build-essential cmake pkg-config python3 python3-pip python3-venv time libjansson-dev libigraph-dev libcmocka-dev libopenmpi-dev openmpi-bin libprotobuf-c-dev protobuf-c-compiler zlib1g-dev clang libclang-rt-dev"
missing=""
for p in $PKGS "$@"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0
echo "commsched: installing missing packages:$missing" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "commsched: need root (or sudo) to install:$missing" >&2; exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
