//! The units a whole-step replay runs, on real traces (fixtures/torch), against counts derived
//! by hand from the models of `fixtures/torch/train_transformer.py`.

use profilednn_torchtrace::read_trace;
use profilednn_torchtrace::step_units::{steady_iteration, step_units, StepUnits};
use std::path::PathBuf;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/torch")
        .join(rel)
}

fn units(v: &str) -> StepUnits {
    let path = fixture(&format!("{v}.trace.json.gz"));
    let t = read_trace(&path).unwrap();
    let range = steady_iteration(&t).expect("the trace marks its iterations");
    step_units(&path, &range).unwrap()
}

fn count(s: &StepUnits, name: &str, phase: &str) -> usize {
    s.units
        .iter()
        .filter(|u| u.name == name && u.phase.as_str() == phase)
        .count()
}

/// The GPT: 2 blocks of q, k, v, out, fc1, fc2 and the head are 13 linears in forward; each
/// backward runs two mm (the input's gradient and the weight's: the embeddings' output
/// requires grad, so every linear has both); AdamW's for-loop runs one lerp_ per parameter,
/// 37 of them (2 embeddings, 16 per block, the final LayerNorm's 2, the head's weight).
#[test]
fn the_gpt_step_has_the_calls_of_its_model() {
    let s = units("gpt-f32");
    // 4 iterations recorded; the first is left out, the median of the other three replayed.
    assert_eq!(s.iteration.iterations, 4);
    assert_eq!(s.iteration.steady, 3);
    assert_ne!(s.iteration.index, 0);
    assert_eq!(count(&s, "aten::linear", "forward"), 13);
    assert_eq!(count(&s, "aten::addmm", "forward"), 0, "inside the linears");
    assert_eq!(count(&s, "aten::mm", "backward"), 26);
    assert_eq!(count(&s, "aten::lerp_", "optimizer"), 37);
    assert_eq!(
        count(
            &s,
            "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
            "backward"
        ),
        2
    );
    let linear = s.units.iter().find(|u| u.name == "aten::linear").unwrap();
    assert_eq!(linear.family.as_deref(), Some("gemm"));
    assert_eq!(linear.dims[0], serde_json::json!([4, 64, 128]));
    assert_eq!(linear.types[0], "float");
    // The units are within the iteration, and leave its Python and engine time outside.
    let inside: f64 = s.units.iter().map(|u| u.logged_ms).sum();
    assert!(inside > 0.3 * s.iteration.wall_ms && inside < s.iteration.wall_ms);
    assert!((s.outside_units_ms() - (s.iteration.wall_ms - inside)).abs() < 1e-9);
}

/// The MLP: 5 linears; backward has 5 weight gradients and 4 input gradients (the first
/// layer's input is data, which needs none); 10 parameters for AdamW.
#[test]
fn the_mlp_step_has_the_calls_of_its_model() {
    let s = units("mlp-f32");
    assert_eq!(count(&s, "aten::linear", "forward"), 5);
    assert_eq!(count(&s, "aten::mm", "backward"), 9);
    assert_eq!(count(&s, "aten::lerp_", "optimizer"), 10);
    assert_eq!(count(&s, "aten::mse_loss", "loss"), 1);
}

/// A trace without iteration ranges (recorded without `profilednn.profile`) has no steady
/// iteration to replay.
#[test]
fn no_iteration_ranges_no_steady_iteration() {
    let t = profilednn_torchtrace::read_trace_from(
        &br#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2, "tid": 1}]}"#[..],
        "t",
    )
    .unwrap();
    assert!(steady_iteration(&t).is_none());
}

/// The gradients the plan all-reduces, from the AccumulateGrad nodes, against the parameters
/// counted by hand (`train_transformer.py`'s defaults: vocab 512, seq 64, d 128, 2 layers).
/// GPT: embeddings 512·128 + 64·128; per block 2 LayerNorms (2·128 each), q/k/v/out
/// (128·128 + 128 each), fc1 128·512 + 512, fc2 512·128 + 128; final LayerNorm 2·128; the
/// head 128·512 without bias: 536,064 f32 parameters in 37 tensors. MLP: 2 × (128·512 + 512 +
/// 512·128 + 128) + 128·128 + 128 = 279,936 in 10 tensors.
#[test]
fn gradients_are_the_models_parameters() {
    use profilednn_torchtrace::step_params::gradients;
    let per_block = 2 * 256 + 4 * (128 * 128 + 128) + (128 * 512 + 512) + (512 * 128 + 128);
    let gpt = 512 * 128 + 64 * 128 + 2 * per_block + 256 + 128 * 512;
    assert_eq!(gpt, 536_064);
    let g = gradients(&units("gpt-f32")).expect("the GPT's backward accumulates gradients");
    assert_eq!((g.tensors, g.bytes), (37, 4 * gpt));
    let mlp = 2 * (128 * 512 + 512 + 512 * 128 + 128) + 128 * 128 + 128;
    let g = gradients(&units("mlp-f32")).unwrap();
    assert_eq!((g.tensors, g.bytes), (10, 4 * mlp));
}

/// The parameters' shapes, also where the optimizer shows none: the `bn` fixture trains with
/// ProfileDNN's fused SGD (one op, not ATen's), so only autograd's `AccumulateGrad` nodes name
/// them. By hand from `train_small.py --variant bn`: ResNet-18's conv1 and layer1 are frozen
/// (no gradient: no 64×3×7×7, no 64×64×3×3); layer2 and layer3 train 5 convolutions and 5
/// batch norms (weight and bias) each, 15 tensors; the head 2 convolutions with bias, 4; the
/// stem's batch norm 2: 36. The MLP's five layers (d 128, hidden 512) are its ten weight and
/// bias shapes.
#[test]
fn parameter_shapes_are_the_accumulated_gradients() {
    use profilednn_torchtrace::step_params::{gradients, parameter_shapes};
    let bn = units("bn");
    let shapes = parameter_shapes(&bn);
    assert_eq!(shapes.len(), 15 + 15 + 4 + 2);
    assert_eq!(shapes.len() as u64, gradients(&bn).unwrap().tensors);
    assert!(!shapes.contains(&vec![64, 3, 7, 7]), "{shapes:?}");
    assert!(!shapes.contains(&vec![64, 64, 3, 3]), "{shapes:?}");
    for trained in [
        vec![128, 64, 3, 3],
        vec![256, 128, 1, 1],
        vec![819, 256, 3, 3],
        vec![819],
    ] {
        assert!(shapes.contains(&trained), "{trained:?} in {shapes:?}");
    }
    let mut mlp = parameter_shapes(&units("mlp-f32"));
    mlp.sort();
    let mut by_hand: Vec<Vec<u64>> = vec![
        vec![512, 128],
        vec![512],
        vec![128, 512],
        vec![128],
        vec![512, 128],
        vec![512],
        vec![128, 512],
        vec![128],
        vec![128, 128],
        vec![128],
    ];
    by_hand.sort();
    assert_eq!(mlp, by_hand);
}

/// The recorded batch as the replay's `--batch` reads it: the GPT's tensors lead with its
/// batch (4), the MLP's with its rows (batch 4 × seq 64).
#[test]
fn the_recorded_batch_is_the_commonest_outer_dimension() {
    use profilednn_torchtrace::step_batch::recorded_batch;
    assert_eq!(recorded_batch(&units("gpt-f32")), Some(4));
    assert_eq!(recorded_batch(&units("gpt-bf16")), Some(4));
    assert_eq!(recorded_batch(&units("mlp-f32")), Some(256));
}

/// The bf16 fixture ran forward and loss under autocast: its `aten::linear` calls recorded
/// with an f32 argument (the weights; the first layer's input) cast them inside (nested `aten::copy_` to bf16), so they are marked; the
/// f32 fixture has none, and a backward op never is (autocast is off there).
#[test]
fn calls_that_cast_inside_are_marked_autocast() {
    let bf16 = units("gpt-bf16");
    let f32_args =
        |u: &&&profilednn_torchtrace::step_units::Unit| u.types.iter().any(|t| t == "float");
    let linears: Vec<_> = bf16
        .units
        .iter()
        .filter(|u| u.name == "aten::linear" && u.phase.as_str() == "forward")
        .collect();
    let with_f32 = linears.iter().filter(f32_args).count();
    assert!(with_f32 > 0, "the linears take the f32 weights");
    let marked = linears
        .iter()
        .filter(|u| u.autocast.as_deref() == Some("bf16"))
        .count();
    assert_eq!(marked, with_f32, "each f32-argument linear casts inside");
    assert!(bf16
        .units
        .iter()
        .filter(|u| u.phase.as_str() == "backward")
        .all(|u| u.autocast.is_none()));
    assert!(units("gpt-f32").units.iter().all(|u| u.autocast.is_none()));
}
