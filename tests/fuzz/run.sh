#!/bin/sh
# Runs every libFuzzer harness for SECONDS each, one at a time (one core):
#   tests/fuzz/run.sh BUILD_DIR SECONDS [HARNESS...]
# The working corpus grows in BUILD_DIR/corpus/<harness>; crash, leak and
# timeout inputs land in BUILD_DIR/artifacts/<harness>/. Prints one line
# per harness: executions, executions per second, corpus size, findings.
# Exits 1 when any harness found something.
set -u
build=$1
seconds=$2
shift 2
src=$(cd "$(dirname "$0")/../.." && pwd)
harnesses=${*:-load builder pipeline astra chakra kineto pytorch_et hlo}
found=0
for h in $harnesses; do
    bin=$build/tests/fuzz/fuzz_$h
    corpus=$build/corpus/$h
    art=$build/artifacts/$h
    mkdir -p "$corpus" "$art"
    case $h in
    load) seeds="$src/graphs/examples $src/graphs/torch $src/tests/graphs $src/tests/fuzz/seeds/load" ;;
    pipeline) # also the graphs the importers made from real traces
        seeds="$src/graphs/examples $src/graphs/torch $src/tests/graphs"
        for d in astra chakra chakra-et kineto pytorch-et xla; do
            seeds="$seeds $src/graphs/$d"
        done ;;
    builder) seeds="$src/tests/fuzz/seeds/builder" ;;
    astra) seeds="$src/tests/import $src/tests/fuzz/corpus/import" ;;
    chakra | kineto | pytorch_et)
        seeds="$src/tests/import $src/tests/fuzz/corpus/import $src/tests/fuzz/seeds/$h" ;;
    hlo) seeds="$src/tests/import $src/tests/fuzz/corpus/import $src/graphs/xla" ;;
    esac
    regress=$src/tests/fuzz/regressions/$h
    [ -d "$regress" ] && seeds="$seeds $regress"
    log=$build/fuzz_$h.log
    # The importers print nothing (their errors go to commsched_error),
    # so stderr stays open for the fuzzer's own reports.
    start=$(date +%s)
    # shellcheck disable=SC2086
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
        -max_len=8192 -print_final_stats=1 \
        -artifact_prefix="$art/" "$corpus" $seeds >"$log" 2>&1
    rc=$?
    # the time it ran: a finding stops a harness before its SECONDS
    took=$(($(date +%s) - start))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    units=$(ls "$corpus" | wc -l)
    crashes=$(ls "$art" | wc -l)
    echo "fuzz $h: ${execs:-?} executions (${rate:-?}/s) in ${took}s (asked ${seconds}s), corpus $units, findings $crashes (exit $rc; log $log)"
    [ "$crashes" -eq 0 ] && [ "$rc" -eq 0 ] || found=1
done
exit $found
