#!/usr/bin/env bash
# Multi-rank logs at scale: speed, peak memory and the size of the terminal report.
#
# Builds torchrun-labelled logs (`[rank17]:onednn_verbose,…`) of 64 and 1,024 ranks from the
# bundled RetinaNet log (examples/retinanet_rnx50_fp32.log.gz), its 3 iterations repeated,
# with timestamps: every rank runs the same calls, rank STRAGGLER's times ×1.3, the ranks'
# lines interleaved line by line as a launcher's output is, and each iteration marker waits
# for the slowest rank (the all-reduce). Then times `profilednn report` on each, from the file
# and from a pipe, and prints MB/s, peak RSS, the terminal report's line count and its longest
# line, and whether `advise` names the straggler.
#
#   bash bench/rank_scale.sh                 # 64 ranks ~200 MB, 1,024 ranks ~0.9 GB
#   SIZES="64:2000" bash bench/rank_scale.sh # 64 ranks, ~2 GB
#
# SIZES is a list of RANKS:MB (MB is a floor: at least one whole repetition per rank).
# Generated logs go to $DIR (default /tmp/profilednn-rank-scale), never into the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-"64:200 1024:200"}
DIR=${DIR:-/tmp/profilednn-rank-scale}
STRAGGLER=${STRAGGLER:-17}
STOPPED=${STOPPED:-}   # a rank that stops one iteration early (none by default)
RUNS=${RUNS:-1}
mkdir -p "$DIR"
BIN=${BIN:-${CARGO_TARGET_DIR:-target}/release/profilednn}
if [ -z "${NO_BUILD:-}" ]; then cargo build --release -q -p profilednn; fi

generate() { # ranks, MB, out
    python3 - "$1" "$2" "$3" "$STRAGGLER" "$STOPPED" <<'PY'
import gzip, sys
ranks, mb, out, straggler = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
stopped = int(sys.argv[5]) if sys.argv[5] else None
lines = gzip.open("examples/retinanet_rnx50_fp32.log.gz", "rt").read().splitlines()
# Template: (kind, text before the time or whole line, time ms)
tpl = []
for l in lines:
    if l.startswith("onednn_verbose,v1,primitive,exec,"):
        head, t = l.rsplit(",", 1)
        tpl.append(("exec", head[len("onednn_verbose,v1,"):], float(t)))
    elif l.startswith("### ITER ") and l.endswith("BEGIN"):
        tpl.append(("marker", l, 0.0))
    elif l.startswith("onednn_verbose,"):
        tpl.append(("info", l, 0.0))
    else:
        tpl.append(("other", l, 0.0))
per_rep = sum(len(l) + 12 for l in lines) + 20 * sum(k == "exec" for k, _, _ in tpl)
reps = max(1, -(-mb * 1_000_000 // (per_rep * ranks)))
iters = sum(k == "marker" for k, _, _ in tpl)
labels = [f"[rank{r}]:" for r in range(ranks)]
scale = [1.3 if r == straggler else 1.0 for r in range(ranks)]
clock = [1_700_000_000_000.0] * ranks
GAP = 0.02  # ms of framework work between two primitives
with open(out, "w") as f:
    for rep in range(reps):
        it = rep * iters - 1
        for kind, text, t in tpl:
            buf = []
            if kind == "marker":
                it += 1
                # The all-reduce: every rank waits for the slowest before the next step.
                m = max(clock)
                clock = [m + 1.0] * ranks
                text = f"### ITER {it} BEGIN"
            if kind == "info" and rep > 0:
                continue
            for r in range(ranks):
                if stopped == r and rep == reps - 1 and it == reps * iters - 1:
                    continue  # this rank died before its last iteration
                if kind == "exec":
                    d = t * scale[r]
                    buf.append(f"{labels[r]}onednn_verbose,v1,{clock[r]:.3f},{text},{d:.6g}\n")
                    clock[r] += d + GAP
                elif kind == "other" and text.startswith("### ITER") and "END" in text:
                    buf.append(f"{labels[r]}### ITER {it} END\n")
                else:
                    buf.append(f"{labels[r]}{text}\n")
            f.write("".join(buf))
print(f"{out}: {ranks} ranks x {reps * iters} iterations", file=sys.stderr)
PY
}

longest() { python3 -c 'import sys; print(max((len(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8")), default=0))' "$1"; }

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
for spec in $SIZES; do
    ranks=${spec%%:*}; mb=${spec##*:}
    LOG=$DIR/ranks${ranks}_${mb}mb${STOPPED:+_stop$STOPPED}.log
    if [ ! -f "$LOG" ]; then
        echo "generating $LOG ..." >&2
        generate "$ranks" "$mb" "$LOG"
    fi
    BYTES=$(stat -c %s "$LOG")
    cat "$LOG" > /dev/null  # warm the page cache
    for how in file pipe; do
        best=""
        for _ in $(seq "$RUNS"); do
            if [ $how = file ]; then
                /usr/bin/time -f "%e %M" -o "$DIR/time.txt" "$BIN" report "$LOG" --no-progress > "$DIR/report.txt"
            else
                /usr/bin/time -f "%e %M" -o "$DIR/time.txt" sh -c "cat '$LOG' | '$BIN' report - --no-progress > '$DIR/report.txt'"
            fi
            read -r s k < "$DIR/time.txt"
            if [ -z "$best" ] || awk -v a="$s" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then best="$s $k"; fi
        done
        read -r s k <<< "$best"
        printf '%5s ranks %6.0f MB %-4s %7.2f s %7.0f MB/s %7.1f MB peak RSS; report: %s lines, longest %s chars\n' \
            "$ranks" "$(awk -v b="$BYTES" 'BEGIN { print b / 1e6 }')" "$how" "$s" \
            "$(awk -v b="$BYTES" -v s="$s" 'BEGIN { printf "%.0f", b / 1e6 / s }')" \
            "$(awk -v k="$k" 'BEGIN { print k / 1024 }')" \
            "$(wc -l < "$DIR/report.txt")" "$(longest "$DIR/report.txt")"
    done
    "$BIN" advise "$LOG" --no-progress > "$DIR/advise.txt" || true
    if grep -q "\[rank $STRAGGLER\] is the straggler" "$DIR/advise.txt"; then
        echo "      advise: $(grep -m1 'is the straggler' "$DIR/advise.txt" | sed 's/.*\(\[rank [0-9]*\] is the straggler\)/\1/' | cut -c1-300)"
    else
        echo "      advise does NOT name rank $STRAGGLER as the straggler (see $DIR/advise.txt)"
    fi
done
