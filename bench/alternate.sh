#!/usr/bin/env bash
# Two (or more) builds timed on one log, alternated run by run, so that a shared machine's load
# falls on each alike: medians of wall time and CPU time (user + sys), and peak RSS.
#
#   bench/alternate.sh RUNS LOG "label=COMMAND ARGS" ...
#   bench/alternate.sh 7 /tmp/profilednn-rank-scale/ranks64_200mb.log \
#       "before=/tmp/profilednn.before report" "after=target/release/profilednn report -j 1"
#
# Each COMMAND is run as `COMMAND LOG --no-progress > /dev/null` (ENV=value words in front are
# passed through `env`). Logs: bench/rank_scale.sh generates the multi-rank ones.
set -euo pipefail
RUNS=$1; shift; LOG=$1; shift
BYTES=$(stat -c %s "$LOG")
T=$(mktemp)
trap 'rm -f "$T"' EXIT
declare -A E U M
cat "$LOG" > /dev/null  # warm the page cache
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$RUNS"); do
  for spec in "$@"; do
    label=${spec%%=*}; cmd=${spec#*=}
    # shellcheck disable=SC2086 # the command's words
    /usr/bin/time -f "%e %U %S %M" -o "$T" env $cmd "$LOG" --no-progress > /dev/null
    read -r e u s m < "$T"
    E[$label]+="$e "; U[$label]+="$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }') "; M[$label]+="$m "
  done
done
median() { tr ' ' '\n' | grep . | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
for spec in "$@"; do
  label=${spec%%=*}
  e=$(echo "${E[$label]}" | median); u=$(echo "${U[$label]}" | median); m=$(echo "${M[$label]}" | median)
  printf '%-12s median %5.2f s = %5.0f MB/s; CPU %5.2f s; peak RSS %6.1f MB   (runs: %s)\n' "$label" "$e" \
    "$(awk -v b="$BYTES" -v e="$e" 'BEGIN { print b / 1e6 / e }')" "$u" "$(awk -v m="$m" 'BEGIN { print m / 1024 }')" "${E[$label]}"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
