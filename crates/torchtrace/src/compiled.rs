//! What `torch.compile` leaves in a trace: the compilation (Dynamo and Inductor's own events,
//! seconds long, in the iteration that first runs the model), and the generated C++ kernels that
//! run in its place afterwards.
//!
//! Compilation is not training: averaged into the per-iteration figures, a 29 s compile over
//! 4 iterations showed a 20 ms step as a 7 s one with "dynamo" as its largest op. So the
//! iterations that compile are set apart ([`compiling_iterations`]): every per-iteration figure
//! of the PyTorch view divides over the others, and the compile time is reported on its own.
//!
//! Inductor names each kernel after the ops it fused (`cpp_fused_gelu_native_layer_norm_0`);
//! with `torch._inductor.config.cpp.enable_kernel_profile` (which `profilednn.profile` and
//! `profilednn record --torch` turn on) each call is a trace event of that name, prefixed with
//! its graph (`graph_0_…`). Without it, the trace has only the opaque compiled region.

use super::{Op, TorchTrace, ITERATION_RANGE};

/// Whether an event is part of compiling (not of running) a compiled model: Dynamo's outermost
/// event (`dynamo`), and the phases its `dynamo_timed` helper marks (`… (dynamo_timed)`),
/// which also cover the backward graph's compilation on the first backward.
pub fn is_compilation(name: &str) -> bool {
    name == "dynamo" || name == "entire_frame_compile" || name.ends_with("(dynamo_timed)")
}

/// An iteration that compiled: its index, its range on the trace's clock (µs) and the time of
/// its compile events (outermost ones, so that nested phases count once).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Compiling {
    pub index: u64,
    #[serde(skip)]
    pub start: f64,
    #[serde(skip)]
    pub end: f64,
    pub compile_ms: f64,
}

/// The iterations (`profilednn.iteration#N` ranges) that hold compile events, in index order.
/// `ops` is in start order.
pub fn compiling_iterations(ops: &[Op]) -> Vec<Compiling> {
    let mut out: Vec<Compiling> = Vec::new();
    for r in ops.iter().filter(|o| o.annotation) {
        let Some(index) = r
            .name
            .strip_prefix(ITERATION_RANGE)
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        let from = ops.partition_point(|o| o.start < r.start);
        let mut compile_ms = 0.0;
        let mut covered_to = f64::NEG_INFINITY;
        for o in ops[from..].iter().take_while(|o| o.start < r.end) {
            if o.annotation || o.python || !is_compilation(&o.name) || o.start < covered_to {
                continue;
            }
            compile_ms += (o.end.min(r.end) - o.start).max(0.0) / 1e3;
            covered_to = o.end;
        }
        if compile_ms > 0.0 {
            out.push(Compiling {
                index,
                start: r.start,
                end: r.end,
                compile_ms,
            });
        }
    }
    out.sort_by_key(|c| c.index);
    out
}

/// Whether the trace time `t` (µs) falls in one of `ranges` (sorted by start, disjoint).
pub fn within(ranges: &[Compiling], t: f64) -> bool {
    let k = ranges.partition_point(|c| c.start <= t);
    k > 0 && t < ranges[k - 1].end
}

/// What Dynamo did in a compiled run: the frames it compiled, the graph breaks (each one ends a
/// graph, runs the rest of the function eagerly up to a resume frame, and splits what Inductor
/// could fuse) and the recompilations (a guard failed: another compile, in a later step).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Dynamo {
    /// Distinct frames compiled (the `F` of compile ids `F/A`).
    pub frames: usize,
    /// Frames that resume a function after a graph break (`torch_dynamo_resume_in_…`).
    pub resume_frames: Vec<String>,
    /// Each graph break's reason, with how often it happened.
    pub graph_breaks: Vec<GraphBreak>,
    /// Each recompilation: its compile id, the frame, and Dynamo's reason.
    pub recompiles: Vec<Recompile>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GraphBreak {
    pub reason: String,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Recompile {
    pub id: String,
    pub frame: Option<String>,
    pub reason: String,
}

impl Dynamo {
    /// The graph breaks counted.
    pub fn breaks(&self) -> u64 {
        self.graph_breaks.iter().map(|b| b.count).sum()
    }
}

/// What Dynamo did, from what `profilednn.profile` wrote into the trace: its compiled frames
/// (`0/0`, `1/0` resuming after a break, `0/1` a recompilation), graph breaks and
/// recompilations. None when the trace names no compiled frame.
pub fn dynamo(t: &TorchTrace) -> Option<Dynamo> {
    if t.compiled_frames.is_empty() {
        return None;
    }
    let frame_of = |id: &str| id.split('/').next().unwrap_or(id).to_string();
    let mut frames: Vec<String> = t.compiled_frames.keys().map(|id| frame_of(id)).collect();
    frames.sort();
    frames.dedup();
    let resume_frames = t
        .compiled_frames
        .iter()
        .filter(|(id, what)| id.ends_with("/0") && what.contains("torch_dynamo_resume_in_"))
        .map(|(_, what)| what.clone())
        .collect();
    let graph_breaks = t
        .graph_breaks
        .iter()
        .filter_map(|(n, reason)| {
            Some(GraphBreak {
                reason: reason.clone(),
                count: n.parse().ok()?,
            })
        })
        .collect();
    let recompiles = t
        .recompiles
        .iter()
        .map(|(id, reason)| Recompile {
            id: id.clone(),
            frame: t.compiled_frames.get(id).cloned(),
            reason: reason.clone(),
        })
        .collect();
    Some(Dynamo {
        frames: frames.len(),
        resume_frames,
        graph_breaks,
        recompiles,
    })
}

/// An Inductor-generated kernel, from its event name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// The compiled graph it belongs to (`graph_N_` prefix), when the name says.
    pub graph: Option<u32>,
    /// The ops it fused, as its name lists them (`gelu`, `native_layer_norm`), when it is a
    /// fused kernel (`cpp_fused_…`).
    pub fused: Vec<String>,
}

/// ATen op names that contain `_`, longest first: a fused kernel's name joins op names with `_`,
/// so these are matched whole before a name is split at every `_`.
const COMPOUND_OPS: &[&str] = &[
    "_native_batch_norm_legit_functional",
    "_native_batch_norm_legit_no_training",
    "_native_batch_norm_legit",
    "_adaptive_avg_pool2d_backward",
    "_adaptive_avg_pool2d",
    "native_dropout_backward",
    "native_dropout",
    "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_scaled_dot_product_flash_attention_for_cpu",
    "_unsafe_view",
    "native_layer_norm_backward",
    "native_batch_norm_backward",
    "native_group_norm_backward",
    "embedding_dense_backward",
    "_log_softmax_backward_data",
    "_softmax_backward_data",
    "threshold_backward",
    "sigmoid_backward",
    "native_layer_norm",
    "native_batch_norm",
    "native_group_norm",
    "nll_loss_backward",
    "nll_loss_forward",
    "convolution_backward",
    "gelu_backward",
    "tanh_backward",
    "silu_backward",
    "scatter_add",
    "index_put",
    "index_select",
    "_log_softmax",
    "_to_copy",
    "_softmax",
    "log_softmax",
    "nll_loss",
    "max_pool2d_with_indices_backward",
    "max_pool2d_with_indices",
    "avg_pool2d_backward",
    "avg_pool2d",
    "constant_pad_nd",
    "var_mean",
    "clamp_min",
    "clamp_max",
    "masked_fill",
    "addcmul",
    "addcdiv",
    "rsqrt",
    "logical_not",
    "zeros_like",
    "ones_like",
    "full_like",
    "new_zeros",
    "split_with_sizes",
];

/// The kernel an event name is, if Inductor generated it: `[graph_N_]cpp_fused_<ops>_<k>` (a
/// fused loop nest) or another `[graph_N_]cpp_…` kernel (a template such as a micro-GEMM).
pub fn kernel(name: &str) -> Option<Kernel> {
    let (graph, rest) = match name.strip_prefix("graph_") {
        Some(r) => {
            let digits = r.find(|c: char| !c.is_ascii_digit())?;
            let g = r[..digits].parse().ok()?;
            (Some(g), r[digits..].strip_prefix('_')?)
        }
        None => (None, name),
    };
    let body = rest.strip_prefix("cpp_")?;
    if body.is_empty() || body.contains(|c: char| c.is_whitespace() || c == ':' || c == '.') {
        return None;
    }
    let mut fused = Vec::new();
    if let Some(ops) = body.strip_prefix("fused_") {
        // The trailing `_<k>` is the kernel's number, not an op.
        let ops = match ops.rsplit_once('_') {
            Some((head, k)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => head,
            _ => ops,
        };
        let mut s = ops;
        while !s.is_empty() {
            let op = COMPOUND_OPS
                .iter()
                .find(|c| s == **c || s.strip_prefix(**c).is_some_and(|r| r.starts_with('_')))
                .map(|c| c.to_string())
                .unwrap_or_else(|| {
                    // A private op (`_unsafe_view`) keeps its leading `_`.
                    let (lead, body) = match s.strip_prefix('_') {
                        Some(b) => ("_", b),
                        None => ("", s),
                    };
                    format!("{lead}{}", body.split('_').next().unwrap_or(body))
                });
            s = s[op.len()..].trim_start_matches('_');
            if op.trim_matches('_').is_empty() {
                break;
            }
            if !fused.contains(&op) {
                fused.push(op);
            }
        }
    }
    Some(Kernel { graph, fused })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, start: f64, end: f64, annotation: bool) -> Op {
        Op {
            annotation,
            ..Op::cpu(name, start, end)
        }
    }

    #[test]
    fn kernel_names_give_graph_and_fused_ops() {
        let k = kernel("graph_0_cpp_fused_gelu_native_layer_norm_0").unwrap();
        assert_eq!(k.graph, Some(0));
        assert_eq!(k.fused, ["gelu", "native_layer_norm"]);
        let k =
            kernel("graph_12_cpp_fused_gelu_gelu_backward_native_layer_norm_backward_3").unwrap();
        assert_eq!(k.graph, Some(12));
        assert_eq!(
            k.fused,
            ["gelu", "gelu_backward", "native_layer_norm_backward"]
        );
        let k = kernel("cpp_fused_sum_1").unwrap();
        assert_eq!((k.graph, k.fused), (None, vec!["sum".to_string()]));
        let k = kernel("graph_0_cpp_fused__unsafe_view_add_native_layer_norm_3").unwrap();
        assert_eq!(k.fused, ["_unsafe_view", "add", "native_layer_norm"]);
        // A compiled CNN's batch norm, and `add` beside `relu` (Inductor sorts the names).
        let k = kernel("cpp_fused__native_batch_norm_legit_functional_add_relu_7").unwrap();
        assert_eq!(
            k.fused,
            ["_native_batch_norm_legit_functional", "add", "relu"]
        );
        let k = kernel("cpp_fused__private_op_2").unwrap();
        assert_eq!(k.fused, ["_private", "op"]);
        let k = kernel("cpp_fused__log_softmax_nll_loss_forward_2").unwrap();
        assert_eq!(k.fused, ["_log_softmax", "nll_loss_forward"]);
        // A template kernel: Inductor's, but not a list of fused ops.
        assert_eq!(
            kernel("graph_1_cpp_CppMicroGemmFP32Vec_0"),
            Some(Kernel {
                graph: Some(1),
                fused: vec![]
            })
        );
        for not in [
            "aten::add",
            "Torch-Compiled Region: 0/0",
            "graph_x_cpp_fused_add_0",
            "graph_0cpp_fused",
            "cpp_",
            "CompiledFunction",
        ] {
            assert_eq!(kernel(not), None, "{not}");
        }
    }

    #[test]
    fn compiling_iterations_are_those_with_compile_events() {
        // Iteration 0 (0..1000 µs) compiles: `dynamo` (100..700) with a nested phase, and a
        // backward compile (800..900); iteration 1 (1000..1100) only runs.
        let ops = vec![
            op("profilednn.iteration#0", 0.0, 1000.0, true),
            op("dynamo", 100.0, 700.0, false),
            op("compile_fx_inner (dynamo_timed)", 200.0, 600.0, false),
            op(
                "autograd::engine::evaluate_function: CompiledFunctionBackward",
                750.0,
                950.0,
                false,
            ),
            op(
                "compile_fx.<locals>.bw_compiler (dynamo_timed)",
                800.0,
                900.0,
                false,
            ),
            op("profilednn.iteration#1", 1000.0, 1100.0, true),
            op("Torch-Compiled Region: 0/0", 1010.0, 1050.0, false),
        ];
        let c = compiling_iterations(&ops);
        assert_eq!(c.len(), 1);
        assert_eq!((c[0].index, c[0].start, c[0].end), (0, 0.0, 1000.0));
        // 600 µs of dynamo (its nested phase counted once) + 100 µs of the backward compile.
        assert!((c[0].compile_ms - 0.7).abs() < 1e-9, "{}", c[0].compile_ms);
        assert!(within(&c, 0.0) && within(&c, 999.0));
        assert!(!within(&c, 1000.0) && !within(&c, -1.0));
    }
}
