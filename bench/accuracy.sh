#!/usr/bin/env bash
# Accuracy checks: the measurements whose bounds depend on timing, run on their own (never in
# `cargo test`, where other tests share the cores) and printed with every figure.
#   - the compute-peak kernels fall in the plausible envelope of this CPU's frequency;
#   - a report of a 200k-dimension problem line takes ~10x (not ~100x) one of 20k dimensions;
#   - the same-machine projection (sequence replay) of the C training program within 20 % of
#     the logged oneDNN time at 1 and 2 threads; the projection issue's targets (10 % overall,
#     groups with >= 5 % of the time within 25 %) printed as met or MISSED;
#   - the what-if projections (--layout channels-last, --as bf16, --threads 1, --batch 4) of a
#     PyTorch resnet18 f32 NCHW run against real runs of each (20 % printed as MET/MISSED; the
#     direction of the bf16 change enforced; on a CPU with bf16 units the bf16 pair also with
#     oneDNN capped below them, ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI, whose slow-down must be
#     predicted as one). Recorded afresh with PROFILEDNN_TORCH_PYTHON (or
#     a python3 that imports torch and torchvision), else the committed fixtures/whatif logs;
#   - the whole step (`replay --torch-trace`) of a live GPT-style transformer and an MLP, as
#     recorded and as bf16 / 1-thread / half-batch what-ifs, against real runs (10 % / 20 % printed as
#     MET/MISSED, up to 3 attempts; a pair off by > 40 % at every attempt fails; SKIPPED without
#     PROFILEDNN_TORCH_PYTHON);
#   - `profilednn plan` of a live torchrun ResNet-18 run (1 rank x 2 threads, global batch 16)
#     against real 1x2 and 2x1 runs: the same order, each within 20 % (SKIPPED without torchrun);
#   - `plan --torch-trace` of a live GPT run against torchrun runs of the same model at 1x2 and
#     2x1 (printed MET/MISSED, not enforced yet: issue 38).
# Needs oneDNN 3.x with headers (PROFILEDNN_DNNL_LIB, or pip's onednn-cpu-gomp/-devel) and gcc.
# Usage: bash bench/accuracy.sh        (exit status non-zero when a bound is missed)
set -euo pipefail
cd "$(dirname "$0")/.."
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
cargo build --release -q
status=0
cargo test --release -q -p profilednn-machine --lib -- --ignored --nocapture --test-threads 1 \
  measured_peaks_fall_in_the_plausible_envelope 2>&1 | grep -E "peak envelope|SKIPPED|panicked|test result" || status=1
cargo test --release -q -p profilednn-report --test long_lines -- --ignored --nocapture \
  long_problem_descriptor_reports_in_linear_time 2>&1 | grep -E "long lines|panicked|test result" || status=1
cargo test --release -q -p profilednn --test replay_same_machine -- --ignored --nocapture --test-threads 1 \
  same_machine_projection 2>&1 | grep -vE "^\s*$|^running" || status=1
if [ -z "${PROFILEDNN_TORCH_PYTHON:-}" ] && python3 -c "import torch, torchvision" 2>/dev/null; then
  export PROFILEDNN_TORCH_PYTHON=python3
fi
cargo test --release -q -p profilednn --test whatif_accuracy -- --ignored --nocapture --test-threads 1 \
  what_if_projections_against_real_runs 2>&1 | grep -vE "^\s*$|^running" || status=1
cargo test --release -q -p profilednn --test whole_step_accuracy -- --ignored --nocapture --test-threads 1 \
  whole_step_projections_against_real_runs 2>&1 | grep -vE "^\s*$|^running" || status=1
cargo test --release -q -p profilednn --test plan_accuracy -- --ignored --nocapture --test-threads 1 \
  --exact plan_against_real_torchrun_splits 2>&1 | grep -vE "^\s*$|^running" || status=1
cargo test --release -q -p profilednn --test plan_accuracy -- --ignored --nocapture --test-threads 1 \
  whole_step_plan_against_real_torchrun_splits 2>&1 | grep -vE "^\s*$|^running" || status=1
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
