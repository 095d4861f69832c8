#!/usr/bin/env bash
# Runs every fuzz target for MINUTES each and prints a table of runs, coverage and crashes.
#
#   fuzz/run-all.sh MINUTES [TARGET…]
#
# Corpora are kept in fuzz/corpus/<target> (gitignored) and grow from run to run; seeds come
# from fuzz/seeds_<target> (fuzz/seeds for classify_line). Targets run one after another, or
# JOBS=2 at a time; everything runs under `nice -n 19`. Crash inputs land in
# fuzz/artifacts/<target>/ (libFuzzer stops a target at its first crash). Needs cargo-fuzz
# (`cargo install cargo-fuzz`); RUSTC_BOOTSTRAP=1 lets it use a stable toolchain.
set -u
cd "$(dirname "$0")/.."
minutes=${1:?usage: fuzz/run-all.sh MINUTES [TARGET...]}
shift
jobs=${JOBS:-1}
export RUSTC_BOOTSTRAP=1
if [ $# -gt 0 ]; then
    targets=("$@")
else
    mapfile -t targets < <(cargo fuzz list)
fi
seconds=$(awk "BEGIN { printf \"%d\", $minutes * 60 }")
logs=fuzz/target/run-all
mkdir -p "$logs"
# Build first, so the time limit is all fuzzing.
nice -n 19 cargo fuzz build >"$logs/build.log" 2>&1 || {
    tail -30 "$logs/build.log"
    exit 1
}

run_one() {
    local t=$1 seeds=fuzz/seeds_$1
    [ "$t" = classify_line ] && seeds=fuzz/seeds
    mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
    [ -d "$seeds" ] || seeds=
    ls "fuzz/artifacts/$t" >"$logs/$t.before" 2>/dev/null
    nice -n 19 cargo fuzz run "$t" "fuzz/corpus/$t" $seeds -- \
        -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 >"$logs/$t.log" 2>&1
    echo $? >"$logs/$t.rc"
}

running=0
for t in "${targets[@]}"; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait

printf '%-18s %12s %8s %8s %8s  %s\n' target runs cov ft crashes "new artifacts"
for t in "${targets[@]}"; do
    log=$logs/$t.log
    runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -1 | awk '{print $2}')
    # The last status line (`#N DONE cov: X ft: Y …`, or the last `pulse`/`NEW` line).
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | awk '{print $2}')
    ft=$(grep -oE 'ft: [0-9]+' "$log" | tail -1 | awk '{print $2}')
    new=$(comm -13 <(sort "$logs/$t.before") <(ls "fuzz/artifacts/$t" | sort) | tr '\n' ' ')
    crashes=$(printf '%s' "$new" | wc -w)
    printf '%-18s %12s %8s %8s %8s  %s\n' "$t" "${runs:-?}" "${cov:-?}" "${ft:-?}" "$crashes" "$new"
done
