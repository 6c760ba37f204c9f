#!/bin/sh
# Rebuilds every generated and imported graph of the corpus from its source
# (graphs/README.md lists the same commands). The hand-made examples/ are
# their own source and are left alone.
#
#   graphs/regenerate.sh [CLI] [SHARED_DATA]
#
# CLI defaults to build/release/tools/commsched, SHARED_DATA to
# ../shared/data (relative to the repository root). Deterministic: running
# it twice changes nothing.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cli=${1:-$root/build/release/tools/commsched}
data=${2:-$root/../shared/data}
g=$root/graphs

mkdir -p "$g/generated" "$g/astra" "$g/chakra"
gen() {
    out=$1
    shift
    "$cli" generate "$@" -o "$g/generated/$out"
}
gen llama3-8b-fsdp.json            fsdp --preset llama3-8b
gen llama3-8b-fsdp-fine-4L.json    fsdp --preset llama3-8b --fine --layers 4
gen llama3-8b-ddp.json             ddp --preset llama3-8b
gen llama3-8b-tp.json              tp --preset llama3-8b
gen llama3-8b-tp-sp.json           tp --preset llama3-8b --sp
gen mixtral-8x7b-moe.json          moe --preset mixtral-8x7b
gen llama2-70b-fsdp.json           fsdp --preset llama2-70b
gen llama2-70b-fsdp-fine-8L.json   fsdp --preset llama2-70b --fine --layers 8
gen llama2-70b-2d-sp.json          2d --preset llama2-70b --sp
gen gpt3-175b-fsdp.json            fsdp --preset gpt3-175b

for f in "$data"/astra-sim/*.txt; do
    name=$(basename "$f" .txt)
    "$cli" import astra "$f" -o "$g/astra/$name.json" 2>/dev/null
done
for f in "$data"/chakra/*.json; do
    name=$(basename "$f" .json)
    "$cli" import chakra "$f" -o "$g/chakra/$name.json" 2>/dev/null
done
mkdir -p "$g/chakra-et" "$g/kineto" "$g/pytorch-et"
for f in "$data"/pytorch-et/*_et.json.gz; do
    name=$(basename "$f" _et.json.gz)
    "$cli" import pytorch-et "$f" -o "$g/pytorch-et/$name.json" 2>/dev/null
done
for f in "$data"/kineto/*.json.gz; do
    name=$(basename "$f" .json.gz)
    "$cli" import kineto "$f" -o "$g/kineto/$name.json" 2>/dev/null
done
for f in "$data"/pytorch-et/*_trace.json.gz; do
    name=$(basename "$f" _trace.json.gz)
    "$cli" import kineto "$f" -o "$g/kineto/$name.json" 2>/dev/null
done
for f in "$data"/chakra-et/*.et; do
    name=$(basename "$f" .et)
    "$cli" import chakra "$f" -o "$g/chakra-et/$name.json" 2>/dev/null
done
