//! Kernel benchmarks, printed as ratios measured in the same run (this machine is shared and
//! noisy: medians of several runs, and every figure is relative to something timed alongside).
//!
//! * focal loss at RetinaNet's MLPerf head size (N=2, A=120087, C=264: 63.4 M logits) and a small
//!   one, f32 and bf16, 1 and 2 threads: fused fwd+bwd vs separate fwd and bwd vs an eager
//!   multi-pass baseline (one full-size temporary per operation, libm math: what an op-by-op
//!   framework does), and vs the memory-bandwidth bound (bytes that must move: read logits and
//!   class labels, write the gradient; bandwidth measured here with a copy kernel).
//! * optimizer steps on a ResNeXt-50-sized parameter set (25 M parameters in 161 tensors) vs
//!   their bandwidth bound.
//!
//! Run: `cargo bench -p profilednn-kernels` (set PROFILEDNN_BENCH_QUICK=1 for a short run).

use profilednn_kernels::focal::Params as FocalParams;
use profilednn_kernels::focal::{
    backward, forward, forward_backward, Reduction, Targets, Tensor, TensorMut,
};
use profilednn_kernels::optim::*;
use profilednn_kernels::{bf16, Isa};
use std::time::Instant;

fn median(mut f: impl FnMut(), runs: usize) -> f64 {
    f();
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// The optimizer settings every row uses (SGD with momentum and weight decay; AdamW).
const SGD: SgdConfig = SgdConfig {
    lr: 0.01,
    momentum: 0.9,
    dampening: 0.0,
    weight_decay: 1e-4,
    nesterov: false,
    maximize: false,
};
const ADAMW: AdamConfig = AdamConfig {
    lr: 1e-3,
    beta1: 0.9,
    beta2: 0.999,
    eps: 1e-8,
    weight_decay: 0.01,
    decoupled: true,
    amsgrad: false,
    maximize: false,
};

/// Copy bandwidth with `threads` threads over buffers of `bytes` (read + write counted).
fn copy_gbps(bytes: usize, threads: usize) -> f64 {
    let n = bytes / 4;
    let src = vec![1.0f32; n];
    let mut dst = vec![0.0f32; n];
    let per = n.div_ceil(threads);
    let t = median(
        || {
            std::thread::scope(|s| {
                for (d, c) in dst.chunks_mut(per).zip(src.chunks(per)) {
                    s.spawn(move || d.copy_from_slice(c));
                }
            });
            std::hint::black_box(&dst);
        },
        5,
    );
    2.0 * n as f64 * 4.0 / t / 1e9
}

/// An eager, op-by-op focal loss forward+backward (float32, one temporary per step, libm).
fn eager(x: &[f32], labels: &[i64], classes: usize, g: &mut [f32]) -> f32 {
    let n = x.len();
    let t: Vec<f32> = (0..n)
        .map(|i| {
            if labels[i / classes] == (i % classes) as i64 {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    let p: Vec<f32> = x.iter().map(|v| 1.0 / (1.0 + (-v).exp())).collect();
    let ce: Vec<f32> = x
        .iter()
        .zip(&t)
        .map(|(v, t)| v.max(0.0) - v * t + (-v.abs()).exp().ln_1p())
        .collect();
    let pt: Vec<f32> = p
        .iter()
        .zip(&t)
        .map(|(p, t)| p * t + (1.0 - p) * (1.0 - t))
        .collect();
    let m: Vec<f32> = pt.iter().map(|v| 1.0 - v).collect();
    let w: Vec<f32> = m.iter().map(|v| v * v).collect();
    let at: Vec<f32> = t.iter().map(|t| 0.25 * t + 0.75 * (1.0 - t)).collect();
    let loss: Vec<f32> = ce
        .iter()
        .zip(&w)
        .zip(&at)
        .map(|((c, w), a)| a * c * w)
        .collect();
    let inv = 1.0 / n as f32;
    for i in 0..n {
        let dm = -p[i] * (1.0 - p[i]) * (2.0 * t[i] - 1.0);
        g[i] = inv * at[i] * ((p[i] - t[i]) * w[i] + ce[i] * 2.0 * m[i] * dm);
    }
    loss.iter().sum::<f32>() * inv
}

fn main() {
    let quick = std::env::var_os("PROFILEDNN_BENCH_QUICK").is_some();
    let isa = Isa::detect();
    let runs = if quick { 3 } else { 7 };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "ISA {}, {} hardware threads, medians of {runs} runs",
        isa.name(),
        cores
    );
    focal_loss(isa, runs, quick);
    optimizers(isa, runs);
}

/// The focal loss table: one row per shape, dtype and thread count (the RetinaNet head's
/// shape left out of a quick run).
fn focal_loss(isa: Isa, runs: usize, quick: bool) {
    let shapes: &[(&str, usize, usize)] = &[
        ("RetinaNet head 2x120087x264", 2 * 120_087, 264),
        ("small 64x1000x91", 64_000, 91),
    ];
    println!("\nFocal loss (mean, alpha 0.25, gamma 2, class-index targets)");
    println!(
        "{:<28} {:>5} {:>3}  {:>10} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "shape",
        "dtype",
        "thr",
        "fused ms",
        "fwd+bwd ms",
        "eager ms",
        "bound ms",
        "x eager",
        "x bound"
    );
    for &(name, rows, classes) in shapes {
        if quick && rows > 100_000 {
            continue;
        }
        focal_shape(isa, runs, name, rows, classes);
    }
}

/// The focal loss rows of one shape (`rows` × `classes` logits): the eager baseline timed
/// once, then the kernels at 1 and 2 threads, f32 and bf16, against the bandwidth bound.
fn focal_shape(isa: Isa, runs: usize, name: &str, rows: usize, classes: usize) {
    let n = rows * classes;
    let x: Vec<f32> = (0..n)
        .map(|i| ((i * 7919 % 2001) as f32 - 1000.0) / 100.0)
        .collect();
    let labels: Vec<i64> = (0..rows)
        .map(|r| {
            if r % 50 == 0 {
                (r % classes) as i64
            } else if r % 97 == 0 {
                -1
            } else {
                classes as i64
            }
        })
        .collect();
    let targets = Targets::Classes {
        labels: &labels,
        classes,
        ignore_index: -1,
    };
    let xb: Vec<u16> = x.iter().map(|v| bf16::from_f32(*v)).collect();
    let mut g = vec![0f32; n];
    let mut gb = vec![0u16; n];
    let eager_s = median(
        || {
            std::hint::black_box(eager(&x, &labels, classes, &mut g));
        },
        1.max(runs / 3),
    );
    for threads in [1usize, 2] {
        let gbps = copy_gbps(n * 4, threads);
        for dtype in ["f32", "bf16"] {
            let esize = if dtype == "f32" { 4 } else { 2 };
            // Must move: read logits, read labels, write the gradient.
            let bytes = (2 * n * esize + rows * 8) as f64;
            let bound = bytes / (gbps * 1e9);
            let logits = if dtype == "f32" {
                Logits::F32(&x, &mut g)
            } else {
                Logits::Bf16(&xb, &mut gb)
            };
            let (fused, sep) = focal_times(isa, threads, runs, logits, targets);
            println!(
                "{name:<28} {dtype:>5} {threads:>3}  {:>10.2} {:>10.2} {:>10.1} {:>10.2} {:>8.1}x {:>8.2}x",
                fused * 1e3, sep * 1e3, eager_s * 1e3, bound * 1e3, eager_s / fused, fused / bound
            );
        }
    }
}

/// The logits and the gradient a focal-loss run reads and writes, in one of the kernel's types.
enum Logits<'a> {
    F32(&'a [f32], &'a mut [f32]),
    Bf16(&'a [u16], &'a mut [u16]),
}

impl Logits<'_> {
    fn x(&self) -> Tensor<'_> {
        match self {
            Logits::F32(x, _) => Tensor::F32(x),
            Logits::Bf16(x, _) => Tensor::Bf16(x),
        }
    }

    /// The logits and the gradient, borrowed for one call.
    fn both(&mut self) -> (Tensor<'_>, TensorMut<'_>) {
        match self {
            Logits::F32(x, g) => (Tensor::F32(x), TensorMut::F32(g)),
            Logits::Bf16(x, g) => (Tensor::Bf16(x), TensorMut::Bf16(g)),
        }
    }
}

/// Fused forward+backward and separate forward then backward: (fused, separate) seconds,
/// medians of `runs`.
fn focal_times(
    isa: Isa,
    threads: usize,
    runs: usize,
    mut l: Logits,
    targets: Targets,
) -> (f64, f64) {
    let p = FocalParams::default();
    let f = median(
        || {
            let (x, g) = l.both();
            forward_backward(isa, threads, x, targets, p, Reduction::Mean, 1.0, g).unwrap();
        },
        runs,
    );
    let s = median(
        || {
            forward(isa, threads, l.x(), targets, p, Reduction::Mean, None).unwrap();
            let (x, g) = l.both();
            backward(isa, threads, x, targets, p, Reduction::Mean, 1.0, None, g).unwrap();
        },
        runs,
    );
    (f, s)
}

/// A ResNeXt-50-sized parameter set: at most 161 tensors of typical sizes, about 25 M
/// parameters.
fn resnext50_sizes() -> Vec<usize> {
    let mut sizes = vec![];
    let mut total = 0usize;
    let mut k = 0usize;
    while total < 25_000_000 {
        let n = [64usize, 256, 147_456, 589_824, 1_048_576, 2_359_296][k % 6];
        sizes.push(n);
        total += n;
        k += 1;
        if sizes.len() >= 161 {
            break;
        }
    }
    sizes
}

/// The optimizers' buffers for every tensor of the set: f32 parameters and gradients, the
/// state (momentum, Adam's moments), and bf16 parameters in the split layout with bf16
/// gradients.
struct Buffers {
    ps: Vec<Vec<f32>>,
    gs: Vec<Vec<f32>>,
    ms: Vec<Vec<f32>>,
    vs: Vec<Vec<f32>>,
    hi: Vec<Vec<u16>>,
    lo: Vec<Vec<u16>>,
    gb: Vec<Vec<u16>>,
}

impl Buffers {
    fn new(sizes: &[usize]) -> Buffers {
        let ps: Vec<Vec<f32>> = sizes.iter().map(|n| vec![0.5f32; *n]).collect();
        let gs: Vec<Vec<f32>> = sizes.iter().map(|n| vec![0.01f32; *n]).collect();
        let ms: Vec<Vec<f32>> = sizes.iter().map(|n| vec![0.0; *n]).collect();
        let vs: Vec<Vec<f32>> = sizes.iter().map(|n| vec![0.0; *n]).collect();
        let hi: Vec<Vec<u16>> = sizes.iter().map(|n| vec![0x3f00u16; *n]).collect();
        let lo: Vec<Vec<u16>> = sizes.iter().map(|n| vec![0u16; *n]).collect();
        let gb: Vec<Vec<u16>> = sizes.iter().map(|n| vec![0x3c24u16; *n]).collect();
        Buffers {
            ps,
            gs,
            ms,
            vs,
            hi,
            lo,
            gb,
        }
    }
}

/// The optimizer table: each step at 1 and 2 threads against its bandwidth bound.
fn optimizers(isa: Isa, runs: usize) {
    let sizes = resnext50_sizes();
    let total: usize = sizes.iter().sum();
    println!(
        "\nOptimizer steps: {} parameters in {} tensors",
        total,
        sizes.len()
    );
    println!(
        "{:<22} {:>3} {:>10} {:>10} {:>9}",
        "optimizer", "thr", "step ms", "bound ms", "x bound"
    );
    for threads in [1usize, 2] {
        let gbps = copy_gbps(64 << 20, threads);
        let mut bufs = Buffers::new(&sizes);
        // Bytes per element: SGD+momentum r p,g,buf w p,buf = 20; Adam r p,g,m,v w p,m,v = 28;
        // LAMB two passes: pass 1 r p,g,m,v w m,v (24) + pass 2 r p,m,v w p (16) = 40.
        // bf16 parameters in the split layout (top 16 bits = the bf16 parameter, bottom 16 in
        // a side array) with bf16 gradients: SGD r p,low,g(2 each),buf(4) w p,low,buf = 18;
        // AdamW r p,low,g,m,v w p,low,m,v = 26 — fewer bytes than any f32 variant.
        bf16_steps(isa, threads, runs, gbps, total, &mut bufs);
        f32_steps(isa, threads, runs, gbps, total, &mut bufs);
    }
}

/// The bf16 rows (split-layout parameters, bf16 gradients) at `threads` threads, against a
/// bound of `gbps`.
fn bf16_steps(isa: Isa, threads: usize, runs: usize, gbps: f64, total: usize, bufs: &mut Buffers) {
    for (name, bytes_per) in [("SGD momentum bf16", 18.0), ("AdamW bf16", 26.0)] {
        let t = median(
            || {
                if name.starts_with("SGD") {
                    let mut ts: Vec<SgdTensor> = bufs
                        .hi
                        .iter_mut()
                        .zip(bufs.lo.iter_mut())
                        .zip(&bufs.gb)
                        .zip(bufs.ms.iter_mut())
                        .map(|(((p, l), g), b)| SgdTensor {
                            params: Params::Bf16Split { param: p, low: l },
                            grad: Grad::Bf16(g),
                            momentum_buffer: Some(b),
                            first: false,
                        })
                        .collect();
                    sgd_step(isa, threads, &mut ts, &SGD);
                } else {
                    let mut st: Vec<AdamState> = bufs
                        .hi
                        .iter_mut()
                        .zip(bufs.lo.iter_mut())
                        .zip(&bufs.gb)
                        .zip(bufs.ms.iter_mut().zip(bufs.vs.iter_mut()))
                        .map(|(((p, l), g), (m, v))| AdamState {
                            params: Params::Bf16Split { param: p, low: l },
                            grad: Grad::Bf16(g),
                            exp_avg: m,
                            exp_avg_sq: v,
                            max_exp_avg_sq: None,
                            step: 1,
                        })
                        .collect();
                    adam_step(isa, threads, &mut st, &ADAMW);
                }
            },
            runs,
        );
        let bound = total as f64 * bytes_per / (gbps * 1e9);
        println!(
            "{name:<22} {threads:>3} {:>10.2} {:>10.2} {:>8.2}x",
            t * 1e3,
            bound * 1e3,
            t / bound
        );
    }
}

/// The f32 rows at `threads` threads, against a bound of `gbps`.
fn f32_steps(isa: Isa, threads: usize, runs: usize, gbps: f64, total: usize, bufs: &mut Buffers) {
    for (name, bytes_per) in [("SGD momentum", 20.0), ("AdamW", 28.0), ("LAMB", 40.0)] {
        let t = median(
            || match name {
                "SGD momentum" => {
                    let mut ts: Vec<SgdTensor> = bufs
                        .ps
                        .iter_mut()
                        .zip(&bufs.gs)
                        .zip(bufs.ms.iter_mut())
                        .map(|((p, g), b)| SgdTensor {
                            params: Params::F32(p),
                            grad: Grad::F32(g),
                            momentum_buffer: Some(b),
                            first: false,
                        })
                        .collect();
                    sgd_step(isa, threads, &mut ts, &SGD);
                }
                _ => {
                    let mut st: Vec<AdamState> = bufs
                        .ps
                        .iter_mut()
                        .zip(&bufs.gs)
                        .zip(bufs.ms.iter_mut().zip(bufs.vs.iter_mut()))
                        .map(|((p, g), (m, v))| AdamState {
                            params: Params::F32(p),
                            grad: Grad::F32(g),
                            exp_avg: m,
                            exp_avg_sq: v,
                            max_exp_avg_sq: None,
                            step: 1,
                        })
                        .collect();
                    if name == "AdamW" {
                        adam_step(isa, threads, &mut st, &ADAMW);
                    } else {
                        lamb_step(
                            isa,
                            threads,
                            &mut st,
                            &LambConfig {
                                lr: 1e-3,
                                beta1: 0.9,
                                beta2: 0.999,
                                eps: 1e-6,
                                weight_decay: 0.01,
                            },
                        );
                    }
                }
            },
            runs,
        );
        let bound = total as f64 * bytes_per / (gbps * 1e9);
        println!(
            "{name:<22} {threads:>3} {:>10.2} {:>10.2} {:>8.2}x",
            t * 1e3,
            bound * 1e3,
            t / bound
        );
    }
}
