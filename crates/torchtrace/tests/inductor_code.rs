//! Inductor's kernels costed from the output code kept beside a real compiled run's trace
//! (fixtures/torch/gpt-compiled-code.*: `train_transformer.py --variant f32 --compile`, recorded
//! with `profilednn record --torch`).

use profilednn_torchtrace::{join, read_trace, TorchJoin};
use std::path::PathBuf;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/torch")
        .join(rel)
}

/// The run has no oneDNN line: the trace alone.
fn joined(trace: &std::path::Path) -> TorchJoin {
    join(&read_trace(trace).unwrap(), |_| {})
}

/// With its code, most of the compiled step has a cost: the extern GEMMs and attention from the
/// trace's shapes, the fused kernels from the code.
#[test]
fn the_compiled_gpt_is_costed_with_its_output_code() {
    let j = joined(&fixture("gpt-compiled-code.trace.json.gz"));
    let f = &j.framework;
    assert!(!f.inductor_kernels.is_empty());
    let uncosted: Vec<_> = f
        .inductor_kernels
        .iter()
        .filter(|k| k.cost.is_none())
        .map(|k| (&k.name, &k.uncosted))
        .collect();
    assert!(uncosted.is_empty(), "{uncosted:?}");
    let share = f.costed_share.unwrap();
    assert!(share >= 0.8, "costed share {share}");
}

/// `cpp_fused__unsafe_view_gelu_2(buf20, buf21)` in the forward's `call`: `buf20 =
/// empty_strided_cpu((256, 512), …, torch.float32)` read, `buf21 = empty_strided_cpu((4, 64,
/// 512), …, torch.float32)` written: 2 × 131072 × 4 = 1 MiB a call; one GELU per element (the
/// view is none): 131072 operations a call.
#[test]
fn the_gelu_kernel_is_its_buffers_by_hand() {
    let j = joined(&fixture("gpt-compiled-code.trace.json.gz"));
    let k = j
        .framework
        .inductor_kernels
        .iter()
        .find(|k| k.name == "graph_0_cpp_fused__unsafe_view_gelu_2")
        .expect("the GELU kernel is in the trace");
    assert_eq!(k.fused, ["_unsafe_view", "gelu"]);
    assert_eq!(k.bytes, k.calls * 2 * 131072 * 4);
    assert_eq!(k.flops, k.calls * 131072);
    assert_eq!(k.precision.as_deref(), Some("f32"));
    assert_eq!(k.cost, Some("estimated from Inductor's code"));
}

/// The trace without its code beside it: the kernels stay uncosted and say why.
#[test]
fn without_the_code_the_kernels_say_why() {
    let dir = std::env::temp_dir().join(format!("profilednn-nocode-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("gpt.trace.json.gz");
    std::fs::copy(fixture("gpt-compiled-code.trace.json.gz"), &trace).unwrap();
    let j = joined(&trace);
    let _ = std::fs::remove_dir_all(&dir);
    let k = &j.framework.inductor_kernels[0];
    assert!(k.cost.is_none());
    assert!(
        k.uncosted.as_deref().unwrap().contains("no output code"),
        "{k:?}"
    );
    assert!(j.framework.costed_share.unwrap() < 0.8);
}
