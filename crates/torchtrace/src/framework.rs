//! The framework's own ops, costed: the part of a PyTorch step that never reaches oneDNN (f32
//! GEMMs in the BLAS, attention and element-wise ops in ATen), from the shapes the profiler
//! recorded ([`profilednn_cost::framework`]).
//!
//! Each op is costed where the trace first gives a model: the outermost op of a nesting that
//! has one (`aten::linear` rather than the `aten::addmm` inside it, whose work it is), so that no
//! work counts twice; inside an op without a model (an autograd node such as `AddmmBackward0`,
//! a composite), the ops it runs are costed instead. `costed_share` is the time of the costed
//! ops over the time of the top-level ops (those inside no other op of their thread).

use super::TorchTrace;
use profilednn_cost::framework::{self, Family, OpCall};
use serde::Serialize;
use std::collections::BTreeMap;

/// One op name's calls: costed (`flops`, `bytes`) or, for a top-level op without a model, the
/// reason.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FrameworkOpRow {
    pub name: String,
    /// `gemm`, `attention`, `convolution`, `normalization`, `elementwise`; absent for an op without a model.
    pub family: Option<&'static str>,
    /// Where its work runs: `oneDNN` when the log's primitives took most of its time (a GEMM
    /// under bf16 autocast), else `BLAS` for a GEMM (MKL, f32) and `ATen` for the rest.
    pub runs_in: &'static str,
    /// oneDNN time inside its calls (the log's primitives it issued, from the join).
    pub onednn_ms: f64,
    pub calls: u64,
    pub time_ms: f64,
    /// Summed over the costed calls.
    pub flops: u64,
    pub extra_flops: u64,
    pub bytes: u64,
    /// Calls with a cost.
    pub costed_calls: u64,
    /// Achieved rates over the costed calls.
    pub gflops: Option<f64>,
    pub gbps: Option<f64>,
    /// `f32`, `bf16`, … of the costed calls (the first one's).
    pub precision: Option<String>,
    /// Why a call has no cost (the first reason seen).
    pub uncosted: Option<String>,
    /// With a machine profile ([`FrameworkOps::set_against`]): the costed calls' time at the
    /// roof (the slower of compute at their precision's peak and memory at the bandwidth),
    /// `compute` or `memory` for the roof that binds, the time lost against it, and the
    /// roofline time over the measured time.
    pub roofline_ms: Option<f64>,
    pub bound: Option<&'static str>,
    pub lost_ms: Option<f64>,
    pub efficiency: Option<f64>,
}

/// The roofs of a machine: compute peaks by precision (`f32`, `bf16`, …) and memory bandwidth,
/// scaled to the threads the run used where the caller knows them.
#[derive(Clone, Copy)]
pub struct Roofs<'a> {
    pub machine: &'a str,
    pub peak_gflops: &'a BTreeMap<String, f64>,
    pub memory_gbps: f64,
    /// Why these roofs are already known to be wrong (the primitives' roofline found them
    /// too low: `profilednn_analysis::Efficiency::suspect`).
    pub suspect: &'a [String],
}

/// The costed framework ops against a machine's roofline.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FrameworkRoofline {
    pub machine: String,
    /// Time of the costed calls, and at the roof.
    pub measured_ms: f64,
    pub roofline_ms: f64,
    /// `roofline_ms / measured_ms`: how close the costed framework ops run to their bound.
    pub efficiency: f64,
    /// `None` when the roofs are suspect (`suspect`), as for each op's `lost_ms`.
    pub lost_ms: Option<f64>,
    /// A precision the profile has no peak for, whose ops were set against the f32 peak.
    pub substituted: Vec<String>,
    /// Why the roofs cannot be trusted: the primitives' suspicions, and compute-bound ops
    /// above 100 % of their roof. Non-empty: no time lost is given.
    pub suspect: Vec<String>,
}

/// The framework ops of a trace, costed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FrameworkOps {
    /// Costed ops first (most time first), then the top-level ops without a cost.
    pub rows: Vec<FrameworkOpRow>,
    /// Time of the top-level ops (every framework op of the step, once).
    pub top_level_ms: f64,
    /// Time of the costed ops.
    pub costed_ms: f64,
    /// `costed_ms / top_level_ms`: the share of framework-op time that has a cost.
    pub costed_share: Option<f64>,
    /// Calls of ops that have a model but no shapes in the trace (recorded without
    /// `record_shapes`).
    pub without_shapes: u64,
    /// Set against a machine profile's roofline ([`FrameworkOps::set_against`]).
    pub roofline: Option<FrameworkRoofline>,
    /// torch.compile's generated kernels (`runs_in` `inductor`), most time first. They have
    /// no cost (the trace records no shapes for them), and they run inside a compiled region
    /// whose top-level row is among `rows`.
    pub inductor_kernels: Vec<KernelRow>,
    /// Time of the compiled regions (`Torch-Compiled Region`, `CompiledFunction…` nodes):
    /// with no kernel in `inductor_kernels`, the trace was recorded without Inductor's kernel
    /// profiling, and the regions are all there is of the compiled code.
    pub compiled_region_ms: f64,
}

/// One Inductor kernel name's calls.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KernelRow {
    pub name: String,
    /// The compiled graph (`graph_N_` of its name), when given.
    pub graph: Option<u32>,
    /// The ops its name says it fused.
    pub fused: Vec<String>,
    pub calls: u64,
    pub time_ms: f64,
    /// With the output code beside the trace ([`crate::inductor_code`]), summed over the calls:
    /// its buffers' bytes and the fused ops' operations over its elements. `cost` says where
    /// they come from ("estimated from Inductor's code"); absent: `uncosted` says why.
    pub flops: u64,
    pub bytes: u64,
    pub precision: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uncosted: Option<String>,
    pub gflops: Option<f64>,
    pub gbps: Option<f64>,
    /// Against a machine's roofs, as a framework op's ([`FrameworkOps::set_against`]).
    pub roofline_ms: Option<f64>,
    pub bound: Option<&'static str>,
    pub lost_ms: Option<f64>,
    pub efficiency: Option<f64>,
}

/// Where a costed kernel's figures come from.
pub const KERNEL_COST: &str = "estimated from Inductor's code";

impl KernelRow {
    /// Costs the kernel from `code`: each call at the mean of its graph's calls in the code
    /// (the trace's calls are the graph's launches over the iterations).
    fn cost_from(&mut self, code: Option<&crate::inductor_code::OutputCode>) {
        let Some(code) = code else {
            self.uncosted = Some(
                "no output code beside the trace (`profilednn.profile` keeps it as \
                 RUN.inductor.py.gz: record again with this version)"
                    .into(),
            );
            return;
        };
        let Some(calls) = code.kernels.get(&self.name).filter(|c| !c.is_empty()) else {
            self.uncosted = Some(code.uncosted.get(&self.name).cloned().unwrap_or_else(|| {
                "not in the output code beside the trace (another run's, or cut short)".into()
            }));
            return;
        };
        let n = calls.len() as f64;
        let bytes = calls.iter().map(|c| c.bytes as f64).sum::<f64>() / n;
        let elements = calls.iter().map(|c| c.elements as f64).sum::<f64>() / n;
        let per: u64 = self
            .fused
            .iter()
            .map(|o| framework::fused_per_element(o))
            .sum();
        self.bytes = (bytes * self.calls as f64) as u64;
        self.flops = (elements * per as f64 * self.calls as f64) as u64;
        self.precision = Some(calls[0].precision.clone());
        self.cost = Some(KERNEL_COST);
        if self.time_ms > 0.0 {
            self.gflops = Some(self.flops as f64 / self.time_ms / 1e6);
            self.gbps = Some(self.bytes as f64 / self.time_ms / 1e6);
        }
    }
}

/// The time at the roof of `flops` at `precision` (f32 when unknown; a precision the profile has
/// no peak for is set against f32 and added to `substituted`) and of `bytes` at the bandwidth,
/// and which binds; none without a usable peak.
fn roof_of(
    flops: u64,
    bytes: u64,
    precision: Option<&str>,
    roofs: &Roofs,
    substituted: &mut Vec<String>,
) -> Option<(f64, &'static str)> {
    let precision = precision.unwrap_or("f32");
    let peak = match roofs.peak_gflops.get(precision) {
        Some(&p) => Some(p),
        None => {
            if !substituted.iter().any(|s| s == precision) {
                substituted.push(precision.to_string());
            }
            roofs.peak_gflops.get("f32").copied()
        }
    };
    let peak = peak.filter(|p| *p > 0.0)?;
    let compute_ms = flops as f64 / peak / 1e6;
    let memory_ms = if roofs.memory_gbps > 0.0 {
        bytes as f64 / roofs.memory_gbps / 1e6
    } else {
        0.0
    };
    let bound = if compute_ms >= memory_ms {
        "compute"
    } else {
        "memory"
    };
    Some((compute_ms.max(memory_ms), bound))
}

/// The outermost events of compiled code: Dynamo's region around a compiled frame's call, and
/// AOTAutograd's forward and backward functions.
fn is_compiled_region(name: &str) -> bool {
    name.starts_with("Torch-Compiled Region")
        || name == "CompiledFunction"
        || name == "CompiledFunctionBackward"
}

impl FrameworkOps {
    /// Sets every costed op against `roofs`: its time at the roof, the roof that binds, the
    /// time lost; and the totals. An op whose precision has no peak in the profile is set
    /// against the f32 peak, and said so.
    pub fn set_against(&mut self, roofs: &Roofs) {
        let mut total = FrameworkRoofline {
            machine: roofs.machine.to_string(),
            ..Default::default()
        };
        let mut lost = 0.0;
        for r in self.rows.iter_mut().filter(|r| r.costed_calls > 0) {
            let Some((roof, bound)) = roof_of(
                r.flops + r.extra_flops,
                r.bytes,
                r.precision.as_deref(),
                roofs,
                &mut total.substituted,
            ) else {
                continue;
            };
            let measured = r.time_ms * r.costed_calls as f64 / r.calls.max(1) as f64;
            r.roofline_ms = Some(roof);
            r.bound = Some(bound);
            r.lost_ms = Some((measured - roof).max(0.0));
            r.efficiency = (measured > 0.0).then(|| roof / measured);
            total.measured_ms += measured;
            total.roofline_ms += roof;
            lost += (measured - roof).max(0.0);
        }
        for k in self
            .inductor_kernels
            .iter_mut()
            .filter(|k| k.cost.is_some())
        {
            let Some((roof, bound)) = roof_of(
                k.flops,
                k.bytes,
                k.precision.as_deref(),
                roofs,
                &mut total.substituted,
            ) else {
                continue;
            };
            k.roofline_ms = Some(roof);
            k.bound = Some(bound);
            k.lost_ms = Some((k.time_ms - roof).max(0.0));
            k.efficiency = (k.time_ms > 0.0).then(|| roof / k.time_ms);
            total.measured_ms += k.time_ms;
            total.roofline_ms += roof;
            lost += (k.time_ms - roof).max(0.0);
        }
        total.efficiency = if total.measured_ms > 0.0 {
            total.roofline_ms / total.measured_ms
        } else {
            0.0
        };
        total.suspect = roofs.suspect.to_vec();
        total.suspect.extend(self.suspicions());
        if total.suspect.is_empty() {
            total.lost_ms = Some(lost);
        } else {
            self.rows.iter_mut().for_each(|r| r.lost_ms = None);
            self.inductor_kernels
                .iter_mut()
                .for_each(|k| k.lost_ms = None);
        }
        self.roofline = Some(total);
    }

    /// Compute-bound ops above 100 % of their roof: impossible against a true peak.
    fn suspicions(&self) -> Option<String> {
        let over: Vec<&FrameworkOpRow> = self
            .rows
            .iter()
            .filter(|r| r.bound == Some("compute") && r.efficiency.is_some_and(|e| e > 1.0))
            .collect();
        let worst = over.iter().max_by(|a, b| {
            a.efficiency
                .unwrap_or(0.0)
                .total_cmp(&b.efficiency.unwrap_or(0.0))
        })?;
        Some(format!(
            "{} compute-bound framework op(s) above 100% of the roofline (up to {:.1}%: {}): \
             the roof is too low",
            over.len(),
            worst.efficiency.unwrap_or(0.0) * 100.0,
            worst.name
        ))
    }
}

pub(crate) fn family_name(f: Family) -> &'static str {
    match f {
        Family::Gemm => "gemm",
        Family::Attention => "attention",
        Family::Convolution => "convolution",
        Family::Normalization => "normalization",
        Family::Elementwise => "elementwise",
    }
}

/// Where an op's work runs: oneDNN when primitives of the log ran inside it, else the BLAS for a
/// GEMM (PyTorch's f32 GEMMs go to MKL) and ATen's own kernels for the rest (a convolution with
/// oneDNN off: `_slow_conv2d`, im2col and a GEMM of its own).
fn runs_in(family: Option<Family>, onednn_ms: f64, time_ms: f64) -> &'static str {
    match family {
        // A GEMM or a convolution that issued primitives ran its product in oneDNN (the rest of
        // its time is autocast's casts, or the reorders of its weights); another op only when
        // they took most of its time (a flash-attention backward that issues a few reorders
        // stays ATen).
        Some(Family::Gemm | Family::Convolution) if onednn_ms > 0.0 => "oneDNN",
        _ if onednn_ms > 0.0 && onednn_ms * 2.0 >= time_ms => "oneDNN",
        Some(Family::Gemm) => "BLAS",
        _ => "ATen",
    }
}

/// oneDNN time inside `ops[i]`: of the ops nested in it (same thread, within its interval;
/// `ops` is sorted by start) in `dnn_by_op`, the log's primitive time by innermost op.
fn onednn_inside(ops: &[super::Op], i: usize, dnn_by_op: &BTreeMap<usize, f64>) -> f64 {
    let op = &ops[i];
    dnn_by_op
        .range(i..)
        .take_while(|(&j, _)| ops[j].start < op.end || j == i)
        .filter(|(&j, _)| ops[j].tid == op.tid && ops[j].end <= op.end)
        .map(|(_, ms)| ms)
        .sum()
}

/// The types a GEMM really ran at under autocast: `aten::linear` is recorded with its f32
/// arguments and casts them inside, where the GEMM it runs (`aten::addmm`, `aten::mm`) has the
/// bf16 (or f16) ones. `None` when the op is no GEMM or nothing inside it ran at a lower
/// precision.
fn autocast_types(ops: &[super::Op], i: usize) -> Option<Vec<String>> {
    let op = &ops[i];
    if framework::family(&op.name) != Some(Family::Gemm) || !op.types.iter().any(|t| t == "float") {
        return None;
    }
    let low = ops[i + 1..]
        .iter()
        .take_while(|o| o.start < op.end)
        .filter(|o| o.tid == op.tid && framework::family(&o.name) == Some(Family::Gemm))
        .find_map(|o| {
            o.types
                .iter()
                .find(|t| matches!(t.as_str(), "c10::BFloat16" | "c10::Half"))
        })?;
    Some(
        op.types
            .iter()
            .map(|t| if t == "float" { low.clone() } else { t.clone() })
            .collect(),
    )
}

/// The framework ops of `trace`, costed; `dnn_by_op` is the log's oneDNN time by the trace op
/// (index into `trace.ops`) that issued it (empty without a log).
///
/// Only ops that start where `steady(start)` holds count (not those of an iteration that
/// compiled, [`super::compiled`]).
pub fn framework_ops(
    trace: &TorchTrace,
    dnn_by_op: &BTreeMap<usize, f64>,
    steady: &dyn Fn(f64) -> bool,
) -> FrameworkOps {
    let ops = &trace.ops;
    let mut out = FrameworkOps::default();
    let mut rows: BTreeMap<String, FrameworkOpRow> = BTreeMap::new();
    let mut kernels: BTreeMap<String, KernelRow> = BTreeMap::new();
    let mut region_until = f64::NEG_INFINITY;
    // Per thread: the enclosing cpu ops, each with whether it (or an op around it) is costed.
    let mut stack: BTreeMap<i64, Vec<(f64, bool)>> = BTreeMap::new();
    for (i, op) in ops
        .iter()
        .enumerate()
        .filter(|(_, o)| !o.annotation && !o.python && steady(o.start))
    {
        let st = stack.entry(op.tid).or_default();
        while st.last().is_some_and(|&(end, _)| end <= op.start) {
            st.pop();
        }
        let top = st.is_empty();
        let covered = st.iter().any(|&(_, c)| c);
        let ms = (op.end - op.start).max(0.0) / 1e3;
        if top {
            out.top_level_ms += ms;
        }
        if is_compiled_region(&op.name) && op.start >= region_until {
            out.compiled_region_ms += ms;
            region_until = op.end;
        }
        if let Some(k) = super::compiled::kernel(&op.name) {
            let r = kernels.entry(op.name.clone()).or_insert_with(|| KernelRow {
                name: op.name.clone(),
                graph: k.graph,
                fused: k.fused,
                ..Default::default()
            });
            r.calls += 1;
            r.time_ms += ms;
        }
        let mut costed = false;
        if !covered {
            let autocast = autocast_types(ops, i);
            let call = OpCall {
                name: &op.name,
                dims: &op.dims,
                types: autocast.as_deref().unwrap_or(&op.types),
                lists: &op.lists,
                concrete: &op.concrete,
            };
            let family = framework::family(&op.name);
            match framework::cost(&call) {
                Ok(c) => {
                    costed = true;
                    out.costed_ms += ms;
                    let dnn = onednn_inside(ops, i, dnn_by_op);
                    let r = rows
                        .entry(op.name.clone())
                        .or_insert_with(|| FrameworkOpRow {
                            name: op.name.clone(),
                            family: family.map(family_name),
                            precision: Some(c.precision.as_str().to_string()),
                            ..Default::default()
                        });
                    r.onednn_ms += dnn;
                    r.calls += 1;
                    r.costed_calls += 1;
                    r.time_ms += ms;
                    r.runs_in = runs_in(family, r.onednn_ms, r.time_ms);
                    r.flops = r.flops.saturating_add(c.flops);
                    r.extra_flops = r.extra_flops.saturating_add(c.extra_flops);
                    r.bytes = r.bytes.saturating_add(c.bytes);
                }
                Err(why) => {
                    if family.is_some() && op.dims.is_empty() {
                        out.without_shapes += 1;
                    }
                    if top {
                        let r = rows
                            .entry(op.name.clone())
                            .or_insert_with(|| FrameworkOpRow {
                                name: op.name.clone(),
                                family: family.map(family_name),
                                ..Default::default()
                            });
                        r.onednn_ms += onednn_inside(ops, i, dnn_by_op);
                        r.calls += 1;
                        r.time_ms += ms;
                        r.runs_in = runs_in(family, r.onednn_ms, r.time_ms);
                        r.uncosted.get_or_insert(why.reason);
                    }
                }
            }
        }
        st.push((op.end, covered || costed));
    }
    let mut rows: Vec<FrameworkOpRow> = rows.into_values().collect();
    for r in &mut rows {
        // Rates over the costed calls' time: a row mixes costed and uncosted calls only when
        // some calls lacked shapes.
        let t = r.time_ms * r.costed_calls as f64 / r.calls.max(1) as f64;
        if r.costed_calls > 0 && t > 0.0 {
            r.gflops = Some((r.flops + r.extra_flops) as f64 / t / 1e6);
            r.gbps = Some(r.bytes as f64 / t / 1e6);
        }
    }
    rows.sort_by(|a, b| {
        (a.costed_calls == 0)
            .cmp(&(b.costed_calls == 0))
            .then(b.time_ms.total_cmp(&a.time_ms))
            .then(a.name.cmp(&b.name))
    });
    out.rows = rows;
    out.costed_share = (out.top_level_ms > 0.0).then(|| out.costed_ms / out.top_level_ms);
    out.inductor_kernels = kernels.into_values().collect();
    if !out.inductor_kernels.is_empty() {
        for k in &mut out.inductor_kernels {
            k.cost_from(trace.inductor_code.as_ref());
            if k.cost.is_some() {
                out.costed_ms += k.time_ms;
            }
        }
        out.costed_share = (out.top_level_ms > 0.0).then(|| out.costed_ms / out.top_level_ms);
    }
    out.inductor_kernels
        .sort_by(|a, b| b.time_ms.total_cmp(&a.time_ms).then(a.name.cmp(&b.name)));
    out
}

#[cfg(test)]
mod tests {
    use super::super::Op;
    use super::*;

    fn op(name: &str, start: f64, end: f64, dims: Vec<Vec<i64>>, types: &[&str]) -> Op {
        Op {
            dims,
            types: types.iter().map(|t| t.to_string()).collect(),
            ..Op::cpu(name, start, end)
        }
    }

    /// A linear with its addmm inside, an autograd node with two mm inside, and an op without a
    /// model: the linear is costed (not its addmm), the node through its mm, the rest counted
    /// as uncosted top-level time.
    #[test]
    fn costed_where_a_model_first_applies_and_never_twice() {
        let f = ["float", "float", "float"];
        let trace = TorchTrace {
            ops: vec![
                op(
                    "aten::linear",
                    0.0,
                    1000.0,
                    vec![vec![256, 128], vec![64, 128], vec![64]],
                    &f,
                ),
                op(
                    "aten::addmm",
                    10.0,
                    990.0,
                    vec![vec![64], vec![256, 128], vec![128, 64]],
                    &f,
                ),
                op(
                    "autograd::engine::evaluate_function: AddmmBackward0",
                    2000.0,
                    4000.0,
                    vec![],
                    &[],
                ),
                op(
                    "aten::mm",
                    2100.0,
                    2900.0,
                    vec![vec![256, 64], vec![64, 128]],
                    &f,
                ),
                op(
                    "aten::mm",
                    3000.0,
                    3900.0,
                    vec![vec![64, 256], vec![256, 128]],
                    &f,
                ),
                op("aten::nonexistent_op", 5000.0, 5500.0, vec![vec![3]], &f),
            ],
            ..Default::default()
        };
        let r = framework_ops(&trace, &BTreeMap::new(), &|_| true);
        let row = |n: &str| r.rows.iter().find(|x| x.name == n);
        let linear = row("aten::linear").unwrap();
        assert_eq!((linear.calls, linear.flops), (1, 2 * 256 * 128 * 64));
        assert!(
            row("aten::addmm").is_none(),
            "the addmm is the linear's work"
        );
        let mm = row("aten::mm").unwrap();
        assert_eq!(mm.calls, 2);
        assert_eq!(mm.flops, 2 * 256 * 64 * 128 + 2 * 64 * 256 * 128);
        assert_eq!(mm.runs_in, "BLAS");
        let node = row("autograd::engine::evaluate_function: AddmmBackward0").unwrap();
        assert_eq!(node.costed_calls, 0);
        assert!(row("aten::nonexistent_op").unwrap().uncosted.is_some());
        // Top level: 1 + 2 + 0.5 ms; costed: the linear's 1 ms and the two mm's 0.8 + 0.9.
        assert!((r.top_level_ms - 3.5).abs() < 1e-9);
        assert!((r.costed_ms - 2.7).abs() < 1e-9);
        assert!((r.costed_share.unwrap() - 2.7 / 3.5).abs() < 1e-9);
    }

    /// The roof by hand: the linear's 4.19 MFLOP at 100 GFLOP/s is 0.0419 ms of compute; its
    /// bytes at 10 GB/s, (256·128 + 64·128 + 64 + 256·64)·4 = 229,632 B, are 0.0230 ms: compute
    /// binds, and of its 1 ms, 0.958 ms are lost.
    #[test]
    fn set_against_a_roofline_by_hand() {
        let f = ["float", "float", "float"];
        let trace = TorchTrace {
            ops: vec![op(
                "aten::linear",
                0.0,
                1000.0,
                vec![vec![256, 128], vec![64, 128], vec![64]],
                &f,
            )],
            ..Default::default()
        };
        let mut r = framework_ops(&trace, &BTreeMap::new(), &|_| true);
        let peaks = BTreeMap::from([("f32".to_string(), 100.0)]);
        r.set_against(&Roofs {
            machine: "m",
            peak_gflops: &peaks,
            memory_gbps: 10.0,
            suspect: &[],
        });
        let row = &r.rows[0];
        let flops = (2 * 256 * 128 * 64 + 256 * 64) as f64;
        assert!((row.roofline_ms.unwrap() - flops / 100.0 / 1e6).abs() < 1e-12);
        assert_eq!(row.bound, Some("compute"));
        assert!((row.lost_ms.unwrap() - (1.0 - flops / 1e8)).abs() < 1e-12);
        let t = r.roofline.clone().unwrap();
        assert!((t.efficiency - flops / 1e8).abs() < 1e-12);
        assert!(t.substituted.is_empty());
        assert!(t.suspect.is_empty());
        assert!((t.lost_ms.unwrap() - (1.0 - flops / 1e8)).abs() < 1e-12);

        // A roof of 1 GFLOP/s: 4.21 ms at the roof for 1 ms measured, 421.1 % of it, which no
        // true peak allows. Flagged, and no time lost is given for the op nor in total.
        let low = BTreeMap::from([("f32".to_string(), 1.0)]);
        r.set_against(&Roofs {
            machine: "m",
            peak_gflops: &low,
            memory_gbps: 10.0,
            suspect: &[],
        });
        let t = r.roofline.as_ref().unwrap();
        assert_eq!(t.suspect.len(), 1, "{:?}", t.suspect);
        let want = format!("up to {:.1}%: aten::linear", flops / 1e6 * 100.0);
        assert_eq!(want, "up to 421.1%: aten::linear");
        assert!(
            t.suspect[0].contains(&want),
            "{} lacks {want}",
            t.suspect[0]
        );
        assert_eq!((t.lost_ms, r.rows[0].lost_ms), (None, None));
        assert!(r.rows[0].roofline_ms.is_some());
    }

    /// A compiled forward (region 0..100 µs with AOTAutograd's function inside, two calls of one
    /// fused kernel and an extern GEMM), and an iteration that is left out: the kernels are
    /// listed by name with their fused ops, the regions counted once, the GEMM costed.
    #[test]
    fn inductor_kernels_and_compiled_regions() {
        let f = ["float", "float"];
        let trace = TorchTrace {
            ops: vec![
                op("Torch-Compiled Region: 0/0", 0.0, 100.0, vec![], &[]),
                op("CompiledFunction", 5.0, 95.0, vec![], &[]),
                op(
                    "graph_0_cpp_fused_gelu_native_layer_norm_0",
                    10.0,
                    30.0,
                    vec![],
                    &[],
                ),
                op("aten::mm", 30.0, 60.0, vec![vec![8, 4], vec![4, 2]], &f),
                op(
                    "graph_0_cpp_fused_gelu_native_layer_norm_0",
                    60.0,
                    70.0,
                    vec![],
                    &[],
                ),
                // A later iteration that compiled: not counted.
                op("Torch-Compiled Region: 0/0", 1000.0, 2000.0, vec![], &[]),
                op("graph_0_cpp_fused_sum_1", 1100.0, 1200.0, vec![], &[]),
            ],
            ..Default::default()
        };
        let r = framework_ops(&trace, &BTreeMap::new(), &|t| t < 1000.0);
        assert_eq!(r.inductor_kernels.len(), 1);
        let k = &r.inductor_kernels[0];
        assert_eq!(k.name, "graph_0_cpp_fused_gelu_native_layer_norm_0");
        assert_eq!((k.graph, k.calls), (Some(0), 2));
        assert_eq!(k.fused, ["gelu", "native_layer_norm"]);
        assert!((k.time_ms - 0.030).abs() < 1e-12, "{}", k.time_ms);
        // The region (0.1 ms), not again the function inside it.
        assert!((r.compiled_region_ms - 0.1).abs() < 1e-12);
        let mm = r.rows.iter().find(|r| r.name == "aten::mm").unwrap();
        // 2·8·4·2 = 128 flops.
        assert_eq!((mm.flops, mm.runs_in), (128, "BLAS"));
    }
}
