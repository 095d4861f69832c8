#!/usr/bin/env bash
# Behaviour unchanged: runs two builds of profilednn over every bundled and fixture log
# (report, advise, diff, trace, project, plan --dry-run, benchdnn export, in their terminal,
# JSON and HTML forms, none of which needs oneDNN) and compares each output byte for byte.
#
#   bench/outputs_identical.sh BEFORE_BINARY AFTER_BINARY
#
# Prints one line per output that differs, then "N compared, M differ"; exits 1 if any differs.
# Build BEFORE from the commit to compare against, e.g.
#   git worktree add /tmp/before HEAD~1 && (cd /tmp/before && cargo build --release)
set -u
before=$1 after=$2
cd "$(dirname "$0")/.."
work=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "outputs in $work" || trap 'rm -rf "$work"' EXIT
export PROFILEDNN_MACHINE=/nonexistent/profilednn-machine.json NO_COLOR=1
logs=$(ls examples/*.log.gz fixtures/advice/*.log fixtures/forms/*.log fixtures/replay/*.log \
          fixtures/whatif/*.log.gz fixtures/torch/*.log.gz fixtures/multirank/*.log.gz 2>/dev/null)
machine=fixtures/machine/xeon-8480-spec.json
n=0 bad=0
run() { # name, then the command's arguments; {OUT} in them is the output file's place
  local name=$1; shift
  for side in before after; do
    local bin=$before; [ $side = after ] && bin=$after
    local dir=$work/$side; mkdir -p "$dir"
    local args=("${@//\{OUT\}/$dir/$name.file}")
    # Paths of the two sides differ only in before/after: name both alike.
    "$bin" "${args[@]}" 2>&1 | sed "s#$work/$side#OUT#g" >"$dir/$name.out"
    echo "exit ${PIPESTATUS[0]}" >>"$dir/$name.out"
    if [ -d "$dir/$name.file" ]; then # a directory of outputs: its files in name order
      (cd "$dir/$name.file" && for f in $(ls | sort); do echo "== $f"; cat "$f"; done) >"$dir/$name.all"
      rm -rf "$dir/$name.file" && mv "$dir/$name.all" "$dir/$name.file"
    fi
    [ -f "$dir/$name.file" ] && sed -i "s#$work/$side#OUT#g" "$dir/$name.file"
  done
  for f in out file; do
    [ -f "$work/before/$name.$f" ] || continue
    n=$((n + 1))
    if ! cmp -s "$work/before/$name.$f" "$work/after/$name.$f"; then
      bad=$((bad + 1)); echo "DIFFERS: $name.$f ($*)"
    fi
  done
}
i=0
for log in $logs; do
  i=$((i + 1)); k="$i-$(basename "$log")"
  run "$k.report" report "$log" --no-progress
  run "$k.report-json" report "$log" --format json --no-progress
  run "$k.report-machine" report "$log" --machine "$machine" --no-progress
  run "$k.report-html" report "$log" --machine "$machine" --html "{OUT}" --no-progress
  run "$k.advise" advise "$log"
  run "$k.advise-json" advise "$log" --format json
  run "$k.trace" trace "$log" -o "{OUT}"
  run "$k.project" project "$log" --machine "$machine"
  run "$k.project-json" project "$log" --machine "$machine" --json
  run "$k.plan" plan "$log" --cores 2 --dry-run
  run "$k.plan-json" plan "$log" --cores 2 --dry-run --format json
  run "$k.benchdnn" benchdnn "$log" -o "{OUT}"
done
for r in fixtures/whatif/replays/*.json; do
  k=$(basename "$r")
  run "project-$k" project fixtures/whatif/f32-nchw-1t.log.gz --replay "$r"
  run "project-json-$k" project fixtures/whatif/f32-nchw-1t.log.gz --replay "$r" --json
  run "advise-project-$k" advise fixtures/whatif/f32-nchw-1t.log.gz --replay "$r"
done
run project-bf16-replay project fixtures/replay/../advice/bf16_without_bf16_units.log \
  --replay fixtures/replay/bf16_without_bf16_units.replay.json --json
run diff-whatif diff fixtures/whatif/f32-nchw.log.gz fixtures/whatif/bf16-cl.log.gz --ignore-dtype
run diff-whatif-json diff fixtures/whatif/f32-nchw.log.gz fixtures/whatif/bf16-cl.log.gz --ignore-dtype --format json
run diff-torch diff fixtures/torch/retinanet-reference.log.gz fixtures/torch/retinanet-fused.log.gz --ignore-dtype
run report-torch report fixtures/torch/fused.log.gz --torch-trace fixtures/torch/fused.trace.json.gz --format json
run advise-torch advise fixtures/torch/fused.log.gz --torch-trace fixtures/torch/fused.trace.json.gz
run report-ranks report fixtures/multirank/torchrun_2ranks.log.gz fixtures/multirank/mpich_2ranks.log.gz
run report-logdir report fixtures/multirank/torchrun_log_dir --format json
echo "$n compared, $bad differ"
[ "$bad" = 0 ]
