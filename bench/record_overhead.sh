#!/usr/bin/env bash
# Overhead of `profilednn record` on a program that prints a million verbose lines (and 10,000
# lines of its own output): wall time of the program alone (stdout to /dev/null) against the
# same program under `record` (log to a file, program output to /dev/null). Medians of 3 runs,
# same session, so the ratio is what matters on a shared machine.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
BIN=target/release/profilednn
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/gen.py" <<'PY'
import sys
line = "onednn_verbose,v1,primitive,exec,cpu,convolution,brg:avx512_core_amx,forward_training,src:bf16::blocked:acdb::f0 wei:bf16:a:blocked:ABcd16b16a2b::f0 bia:f32::blocked:a::f0 dst:bf16::blocked:acdb::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc64_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1,0.1234\n"
w = sys.stdout.write
for i in range(1_000_000):
    w(line)
    if i % 100 == 0:
        w(f"step {i} loss 0.{i % 997}\n")
PY
median() { sort -n | sed -n 2p; }
t() { local s e; s=$(date +%s.%N); "$@" > /dev/null; e=$(date +%s.%N); echo "$e - $s" | bc; }
base=$(for i in 1 2 3; do t python3 "$TMP/gen.py"; done | median)
rec=$(for i in 1 2 3; do t $BIN record --no-report -o "$TMP/r.log" -- python3 "$TMP/gen.py" 2>/dev/null; done | median)
recgz=$(for i in 1 2 3; do t $BIN record --no-report -o "$TMP/r.log.gz" -- python3 "$TMP/gen.py" 2>/dev/null; done | median)
echo "program alone            ${base} s"
echo "under record (plain log) ${rec} s   ratio $(echo "scale=2; $rec / $base" | bc)"
echo "under record (gzip log)  ${recgz} s   ratio $(echo "scale=2; $recgz / $base" | bc)"
echo "log: $(wc -l < "$TMP/r.log") lines, $(du -h "$TMP/r.log" | cut -f1); gz $(du -h "$TMP/r.log.gz" | cut -f1)"
