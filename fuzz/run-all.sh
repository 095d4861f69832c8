#!/usr/bin/env bash
# Runs every fuzz target for MINUTES each and prints a table of runs, coverage and crashes.
#
#   fuzz/run-all.sh MINUTES [TARGET…]
#   fuzz/run-all.sh --table [TARGET…]     (the table of the last run again)
#
# Corpora are kept in fuzz/corpus/<target> (gitignored) and grow from run to run; seeds come
# from fuzz/seeds_<target> (fuzz/seeds for classify_line). Targets run one after another, or
# JOBS=2 at a time; everything runs under `nice -n 19`. Crash inputs land in
# fuzz/artifacts/<target>/ (libFuzzer stops a target at its first crash). Needs cargo-fuzz
# (`cargo install cargo-fuzz`); RUSTC_BOOTSTRAP=1 lets it use a stable toolchain.
set -u

logs=fuzz/target/run-all

run_one() {
    local t=$1 seconds=$2 seeds=fuzz/seeds_$1
    [ "$t" = classify_line ] && seeds=fuzz/seeds
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    [ -d "$seeds" ] || seeds=
    ls "fuzz/artifacts/$t" >"$logs/$t.before" 2>/dev/null
    # Structured inputs are decoded, not read as text: no need to start short.
    local extra=
    [ "$t" = structured_line ] && extra=-len_control=0
    nice -n 19 cargo fuzz run "$t" "fuzz/corpus/$t" $seeds -- \
        -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 $extra >"$logs/$t.log" 2>&1
    echo $? >"$logs/$t.rc"
}

table() {
    printf '%-16s %10s %6s %6s %8s %7s %5s  %s\n' target runs cov ft exec/s crashes slow "new artifacts"
    local t log runs cov ft speed new crashes slow
    for t in "$@"; do
        log=$logs/$t.log
        [ -f "$log" ] || continue
        runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
        speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | tail -1 | awk '{print $2}')
        # From the last status line (`#N DONE cov: X ft: Y …`, or the last before a crash).
        cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
        ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | awk '{print $2}')
        if [ -z "$runs" ]; then
            runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
        fi
        new=$(comm -13 <(sort "$logs/$t.before" 2>/dev/null) <(ls "fuzz/artifacts/$t" 2>/dev/null | sort) | tr '\n' ' ')
        # libFuzzer also keeps inputs slower than -report_slow_units (10 s) as `slow-unit-*`:
        # not failures (a loaded machine makes any input slow), counted apart — rerun one alone
        # (`fuzz/target/*/release/TARGET fuzz/artifacts/TARGET/slow-unit-…`) to see its real time.
        slow=$(printf '%s' "$new" | tr ' ' '\n' | grep -c '^slow-unit-')
        crashes=$(($(printf '%s' "$new" | wc -w) - slow))
        printf '%-16s %10s %6s %6s %8s %7s %5s  %s\n' "$t" "${runs:-?}" "${cov:-?}" "${ft:-?}" "${speed:-?}" "$crashes" "$slow" "$new"
    done
}

main() {
    cd "$(dirname "$0")/.."
    local minutes=${1:?usage: fuzz/run-all.sh MINUTES|--table [TARGET...]}
    shift
    export RUSTC_BOOTSTRAP=1
    local targets
    if [ $# -gt 0 ]; then
        targets=("$@")
    else
        mapfile -t targets < <(cargo fuzz list)
    fi
    mkdir -p "$logs"
    if [ "$minutes" = --table ]; then
        table "${targets[@]}"
        return
    fi
    local seconds jobs=${JOBS:-1} running=0 t
    seconds=$(awk "BEGIN { printf \"%d\", $minutes * 60 }")
    # Build first, so the time limit is all fuzzing.
    if ! nice -n 19 cargo fuzz build >"$logs/build.log" 2>&1; then
        tail -30 "$logs/build.log"
        return 1
    fi
    for t in "${targets[@]}"; do
        run_one "$t" "$seconds" &
        running=$((running + 1))
        if [ "$running" -ge "$jobs" ]; then
            wait -n
            running=$((running - 1))
        fi
    done
    wait
    table "${targets[@]}"
}

# The whole script is read before it runs (editing it during a run is safe).
main "$@"
exit
