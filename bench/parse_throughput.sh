#!/usr/bin/env bash
# Parse throughput and peak memory of `profilednn report` on a >= 1 GB real-format log.
#
# Builds bench-data/big.log by repeating the corpus' real PyTorch training logs (their
# application lines included), then times the report on 1 thread and on all cores, with
# `wc -l` on the same cached file as the same-run baseline. Prints medians of N runs.
# Optional: VERBOSE_CONVERTER=/path/to/verbose_converter.py also times oneDNN's converter
# (breakdown generator) on a 100 MB prefix, for the speed-up ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
SIZE_MB=${SIZE_MB:-1100}
mkdir -p bench-data
BIG=bench-data/big.log
if [ ! -f "$BIG" ] || [ "$(stat -c %s "$BIG")" -lt $((SIZE_MB * 1000000)) ]; then
    echo "building $BIG (${SIZE_MB} MB) from fixtures/corpus/pytorch/*.log.gz ..." >&2
    python3 - "$BIG" "$SIZE_MB" <<'PY'
import gzip, glob, sys
out, size = sys.argv[1], int(sys.argv[2]) * 1_000_000
chunk = b"".join(gzip.open(f).read() for f in sorted(glob.glob("fixtures/corpus/pytorch/*.log.gz")))
with open(out, "wb") as f:
    n = 0
    while n < size:
        f.write(chunk); n += len(chunk)
PY
fi
cargo build --release -q
BIN=target/release/profilednn
BYTES=$(stat -c %s "$BIG")
cat "$BIG" > /dev/null  # warm the page cache
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
measure() { # prints "seconds peak_kb" of one run of "$@"
    /usr/bin/time -f "%e %M" -o bench-data/time.txt "$@" > /dev/null
    cat bench-data/time.txt
}
run() { # label, command...
    local label=$1; shift
    local secs=() kbs=()
    for _ in $(seq "$RUNS"); do
        read -r s k < <(measure "$@")
        secs+=("$s"); kbs+=("$k")
    done
    local s k
    s=$(printf '%s\n' "${secs[@]}" | median)
    k=$(printf '%s\n' "${kbs[@]}" | median)
    local mbs
    mbs=$(awk -v b="$BYTES" -v s="$s" 'BEGIN { printf "%.0f", b / 1e6 / s }')
    printf '%-34s %8.2f s %8s MB/s %8.1f MB peak RSS\n' "$label" "$s" "$mbs" "$(awk -v k="$k" 'BEGIN{print k/1024}')"
    echo "$mbs"  > "bench-data/last_${label// /_}.mbs"
}
GZ=bench-data/big.log.gz
if [ ! -f "$GZ" ] || [ "$GZ" -ot "$BIG" ]; then
    echo "compressing $BIG to $GZ (gzip -1) ..." >&2
    gzip -1 -c "$BIG" > "$GZ"
fi
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "log: $BIG, $((BYTES / 1000000)) MB, $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
run "wc -l (baseline)" wc -l "$BIG"
run "profilednn report -j 1" "$BIN" report "$BIG" --format json -j 1 --no-progress
run "profilednn report -j $(nproc)" "$BIN" report "$BIG" --format json --no-progress
# Pipes: the same bytes through `cat |` (a pipe hands out 64 KiB per read), against `wc -l` on
# the same pipe; and gzip through `zcat |` against zcat alone (MB/s of uncompressed bytes).
run "cat | wc -l (pipe baseline)" sh -c "cat $BIG | wc -l"
run "cat | report - -j 1" sh -c "cat $BIG | $BIN report - --format json --no-progress -j 1"
run "cat | report - -j $(nproc)" sh -c "cat $BIG | $BIN report - --format json --no-progress"
run "zcat alone (gzip baseline)" sh -c "zcat $GZ > /dev/null"
run "zcat | cat (gzip into a pipe)" sh -c "zcat $GZ | cat > /dev/null"
run "zcat | report - -j $(nproc)" sh -c "zcat $GZ | $BIN report - --format json --no-progress"
# The compressed bytes themselves, decompressed in process (zlib-rs): from a pipe and a file.
run "cat .gz | report - -j $(nproc)" sh -c "cat $GZ | $BIN report - --format json --no-progress"
run "report .gz -j $(nproc)" "$BIN" report "$GZ" --format json --no-progress
mbs() { cat "bench-data/last_${1// /_}.mbs"; }
WC=$(mbs "wc -l (baseline)")
ONE=$(mbs "profilednn report -j 1")
ALL=$(mbs "profilednn report -j $(nproc)")
awk -v w="$WC" -v o="$ONE" -v a="$ALL" 'BEGIN { printf "ratios: 1 thread / wc -l = %.2f; all cores / 1 thread = %.2f\n", o / w, a / o }'
PWC=$(mbs "cat | wc -l (pipe baseline)")
P1=$(mbs "cat | report - -j 1")
PN=$(mbs "cat | report - -j $(nproc)")
ZB=$(mbs "zcat alone (gzip baseline)")
ZP=$(mbs "zcat | cat (gzip into a pipe)")
ZN=$(mbs "zcat | report - -j $(nproc)")
GP=$(mbs "cat .gz | report - -j $(nproc)")
GF=$(mbs "report .gz -j $(nproc)")
awk -v w="$PWC" -v o="$P1" -v a="$PN" -v zb="$ZB" -v zp="$ZP" -v zn="$ZN" -v gp="$GP" -v gf="$GF" -v m="$ALL" 'BEGIN {
    printf "pipe: report -j 1 / wc -l on the pipe = %.2f; -j all / wc -l = %.2f (target >= 0.80); pipe / mapped file (all cores) = %.2f\n", o / w, a / w, a / m
    printf "gzip pipe: report / zcat alone = %.2f (target: gzip'"'"'s own speed, ~1.0); report / zcat | cat = %.2f\n", zn / zb, zn / zp
    printf "compressed bytes: cat .gz | report - / zcat alone = %.2f; report .gz / zcat alone = %.2f\n", gp / zb, gf / zb }'
if [ -n "${VERBOSE_CONVERTER:-}" ]; then
    head -c 100000000 "$BIG" > bench-data/prefix.log
    PB=$(stat -c %s bench-data/prefix.log)
    read -r s k < <(measure python3 "$VERBOSE_CONVERTER" -i bench-data/prefix.log -g breakdown)
    awk -v b="$PB" -v s="$s" -v k="$k" -v o="$ONE" 'BEGIN { c = b / 1e6 / s; printf "verbose_converter (breakdown, 100 MB): %.1f MB/s, %.0f MB peak; profilednn 1 thread is %.0fx faster\n", c, k / 1024, o / c }'
else
    echo "(set VERBOSE_CONVERTER=path/to/verbose_converter.py to time oneDNN's converter in the same run;"
    echo " the recorded anchor on this machine kind is 13.8 MB/s with 1.4 GB peak on a 300 MB log)"
fi
