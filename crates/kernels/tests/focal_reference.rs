//! The focal loss against an independent float64 reference: the loss from log-sigmoids in f64,
//! the gradient by central differences of that f64 loss (so our closed-form derivative is not
//! checked against itself). Inputs include ±100 logits, soft targets and vector tails.

use profilednn_kernels::focal::{
    backward, forward, forward_backward, Params, Reduction, Targets, Tensor, TensorMut,
};
use profilednn_kernels::{bf16, Isa};

/// Every SIMD path this CPU can run (AVX-512, AVX2, portable), printed so a log says which
/// paths a run exercised.
fn every_isa() -> Vec<Isa> {
    let v = Isa::available();
    let names: Vec<&str> = v.iter().map(|i| i.name()).collect();
    eprintln!("ISA paths tested on this CPU: {}", names.join(", "));
    v
}

fn softplus(z: f64) -> f64 {
    z.max(0.0) + (-z.abs()).exp().ln_1p()
}

/// torchvision's definition, in f64: ce = −t·ln p − (1−t)·ln(1−p), p_t, α_t, (1−p_t)^γ.
fn ref_loss(x: f64, t: f64, alpha: f64, gamma: f64) -> f64 {
    let p = 1.0 / (1.0 + (-x).exp());
    let ce = t * softplus(-x) + (1.0 - t) * softplus(x);
    // 1 − p_t = 1 − (p·t + (1 − p)·(1 − t)) = p·(1 − t) + q·t with q = σ(−x) evaluated on its
    // own: written as 1 − p_t, f64 would lose p ~ 1e-9 to cancellation, and the central
    // differences below would amplify that to 1e-5.
    let q = 1.0 / (1.0 + x.exp());
    let mut l = ce * (p * (1.0 - t) + q * t).powf(gamma);
    if alpha >= 0.0 {
        l *= alpha * t + (1.0 - alpha) * (1.0 - t);
    }
    l
}

fn ref_grad(x: f64, t: f64, alpha: f64, gamma: f64) -> f64 {
    let h = 1e-5 * x.abs().max(1.0);
    (ref_loss(x + h, t, alpha, gamma) - ref_loss(x - h, t, alpha, gamma)) / (2.0 * h)
}

/// Deterministic inputs: uniform logits in ±`span`, soft or hard targets, plus extremes.
fn inputs(n: usize, span: f32, soft: bool, seed: u64) -> (Vec<f32>, Vec<f32>) {
    let mut s = seed;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut x: Vec<f32> = (0..n)
        .map(|_| ((next() * 2.0 - 1.0) * span as f64) as f32)
        .collect();
    let t: Vec<f32> = (0..n)
        .map(|_| {
            if soft {
                next() as f32
            } else if next() < 0.1 {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    for (i, v) in [100.0f32, -100.0, 0.0, 30.0, -30.0, 1e-8]
        .iter()
        .enumerate()
    {
        if i < n {
            x[i] = *v;
        }
    }
    (x, t)
}

/// |ours − ref| ≤ tol·|ref| for every element, however small (catches cancellation in the
/// regimes where the gradient is tiny: confident logits, p near 1).
fn close_rel(ours: &[f32], reference: &[f64], tol: f64, what: &str) {
    for (i, (a, r)) in ours.iter().zip(reference).enumerate() {
        assert!(
            (*a as f64 - r).abs() <= tol * r.abs() + 1e-37,
            "{what}[{i}]: ours {a:e} reference {r:e} (relative to |ref|, error {:e})",
            ((*a as f64 - r) / r).abs()
        );
    }
}

/// |ours − ref| ≤ 1e-6·|ref| + 1e-6·max|ref| (the floor covers elements near zero, where
/// f32 inputs cannot carry a relative error below 1e-6 for any algorithm).
fn close(ours: &[f32], reference: &[f64], what: &str) {
    let scale = reference.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let mut worst = 0.0f64;
    for (i, (a, r)) in ours.iter().zip(reference).enumerate() {
        let err = (*a as f64 - r).abs();
        let tol = 1e-6 * r.abs() + 1e-6 * scale;
        assert!(
            err <= tol,
            "{what}[{i}]: ours {a} reference {r} (error {err:e} > {tol:e})"
        );
        worst = worst.max(err / (r.abs() + 1e-6 * scale));
    }
    eprintln!(
        "{what}: worst relative error {worst:.2e} over {} elements",
        ours.len()
    );
}

fn check_f32(n: usize, span: f32, soft: bool, p: Params, isa: Isa) {
    let (x, t) = inputs(n, span, soft, 42 + n as u64);
    let (a, g) = (p.alpha as f64, p.gamma as f64);
    let rl: Vec<f64> = x
        .iter()
        .zip(&t)
        .map(|(x, t)| ref_loss(*x as f64, *t as f64, a, g))
        .collect();
    let rg: Vec<f64> = x
        .iter()
        .zip(&t)
        .map(|(x, t)| ref_grad(*x as f64, *t as f64, a, g))
        .collect();
    let mut loss = vec![0f32; n];
    forward(
        isa,
        2,
        Tensor::F32(&x),
        Targets::Dense(Tensor::F32(&t)),
        p,
        Reduction::None,
        Some(TensorMut::F32(&mut loss)),
    )
    .unwrap();
    close(
        &loss,
        &rl,
        &format!("loss n={n} γ={} α={} {isa:?}", p.gamma, p.alpha),
    );
    let ones = vec![1f32; n];
    let mut grad = vec![0f32; n];
    backward(
        isa,
        2,
        Tensor::F32(&x),
        Targets::Dense(Tensor::F32(&t)),
        p,
        Reduction::None,
        0.0,
        Some(Tensor::F32(&ones)),
        TensorMut::F32(&mut grad),
    )
    .unwrap();
    close(
        &grad,
        &rg,
        &format!("grad n={n} γ={} α={} {isa:?}", p.gamma, p.alpha),
    );
    // Mean: loss and the fused pass.
    let mean_ref = rl.iter().sum::<f64>() / n as f64;
    let mean = forward(
        isa,
        3,
        Tensor::F32(&x),
        Targets::Dense(Tensor::F32(&t)),
        p,
        Reduction::Mean,
        None,
    )
    .unwrap();
    assert!(
        ((mean as f64 - mean_ref) / mean_ref).abs() < 1e-6,
        "mean {mean} vs {mean_ref}"
    );
    let mut fg = vec![0f32; n];
    let fl = forward_backward(
        isa,
        2,
        Tensor::F32(&x),
        Targets::Dense(Tensor::F32(&t)),
        p,
        Reduction::Mean,
        1.0,
        TensorMut::F32(&mut fg),
    )
    .unwrap();
    assert!(((fl as f64 - mean_ref) / mean_ref).abs() < 1e-6);
    let rg_mean: Vec<f64> = rg.iter().map(|g| g / n as f64).collect();
    close(&fg, &rg_mean, "fused grad (mean)");
}

#[test]
fn f32_matches_float64_for_every_isa_and_gamma() {
    for isa in every_isa() {
        for p in [
            Params {
                alpha: 0.25,
                gamma: 2.0,
            },
            Params {
                alpha: -1.0,
                gamma: 0.0,
            },
            Params {
                alpha: 0.5,
                gamma: 1.0,
            },
            Params {
                alpha: 0.25,
                gamma: 1.5,
            },
        ] {
            for (n, soft) in [(1usize, false), (17, true), (1000, false), (4099, true)] {
                check_f32(n, 20.0, soft, p, isa);
            }
        }
    }
}

#[test]
fn bf16_is_within_one_rounding_of_float64() {
    for isa in every_isa() {
        let n = 3001;
        let (x, t) = inputs(n, 12.0, true, 7);
        let xb: Vec<u16> = x.iter().map(|v| bf16::from_f32(*v)).collect();
        let tb: Vec<u16> = t.iter().map(|v| bf16::from_f32(*v)).collect();
        let p = Params::default();
        let mut out = vec![0u16; n];
        forward(
            isa,
            2,
            Tensor::Bf16(&xb),
            Targets::Dense(Tensor::Bf16(&tb)),
            p,
            Reduction::None,
            Some(TensorMut::Bf16(&mut out)),
        )
        .unwrap();
        let mut grad = vec![0u16; n];
        let ones = vec![bf16::from_f32(1.0); n];
        backward(
            isa,
            2,
            Tensor::Bf16(&xb),
            Targets::Dense(Tensor::Bf16(&tb)),
            p,
            Reduction::None,
            0.0,
            Some(Tensor::Bf16(&ones)),
            TensorMut::Bf16(&mut grad),
        )
        .unwrap();
        for i in 0..n {
            let (xi, ti) = (bf16::to_f32(xb[i]) as f64, bf16::to_f32(tb[i]) as f64);
            for (ours, r) in [
                (bf16::to_f32(out[i]) as f64, ref_loss(xi, ti, 0.25, 2.0)),
                (bf16::to_f32(grad[i]) as f64, ref_grad(xi, ti, 0.25, 2.0)),
            ] {
                // One bf16 rounding: half an ulp (2^-8 relative), plus the f32 math below it.
                assert!(
                    (ours - r).abs() <= r.abs() * (1.0 / 256.0) + 1e-30,
                    "{i}: {ours} vs {r}"
                );
            }
        }
    }
}

#[test]
fn class_index_targets_equal_dense_one_hot_and_ignore_rows() {
    for isa in every_isa() {
        let (rows, classes) = (37usize, 21usize);
        let (x, _) = inputs(rows * classes, 8.0, false, 3);
        let labels: Vec<i64> = (0..rows as i64)
            .map(|r| if r % 5 == 4 { -1 } else { r % 23 })
            .collect();
        let mut dense = vec![0f32; rows * classes];
        for (r, l) in labels.iter().enumerate() {
            if (0..classes as i64).contains(l) {
                dense[r * classes + *l as usize] = 1.0;
            }
        }
        let p = Params::default();

        let cls = Targets::Classes {
            labels: &labels,
            classes,
            ignore_index: -1,
        };
        let mut a = vec![0f32; rows * classes];
        let mut b = vec![0f32; rows * classes];
        forward(
            isa,
            2,
            Tensor::F32(&x),
            cls,
            p,
            Reduction::None,
            Some(TensorMut::F32(&mut a)),
        )
        .unwrap();
        forward(
            isa,
            2,
            Tensor::F32(&x),
            Targets::Dense(Tensor::F32(&dense)),
            p,
            Reduction::None,
            Some(TensorMut::F32(&mut b)),
        )
        .unwrap();
        for (r, &label) in labels.iter().enumerate().take(rows) {
            for c in 0..classes {
                let i = r * classes + c;
                if label == -1 {
                    assert_eq!(a[i], 0.0, "ignored rows have no loss");
                } else {
                    assert_eq!(a[i], b[i]);
                }
            }
        }
        // Mean counts only the rows that are not ignored.
        let kept = labels.iter().filter(|l| **l != -1).count() * classes;
        let m = forward(isa, 1, Tensor::F32(&x), cls, p, Reduction::Mean, None).unwrap();
        let s: f64 = a.iter().map(|v| *v as f64).sum();
        assert!(((m as f64) - s / kept as f64).abs() < 1e-6 * (s / kept as f64));
    }
}

/// Enough elements that the pass really splits (a thread per 64 K elements at least): f32 and
/// bf16 logits, dense and class-index targets.
#[test]
fn any_thread_count_gives_the_same_bits() {
    for isa in every_isa() {
        let (x, t) = inputs(600_003, 10.0, true, 11);
        let xb: Vec<u16> = x.iter().map(|v| bf16::from_f32(*v)).collect();
        let classes = 91;
        let rows = x.len() / classes;
        let labels: Vec<i64> = (0..rows as i64).map(|r| (r * 7) % 120 - 1).collect();
        let cls = Targets::Classes {
            labels: &labels,
            classes,
            ignore_index: -1,
        };
        let p = Params::default();
        // One gradient buffer of each type for every run: the AVX-512 loop starts its lines at
        // the gradient's 64-byte boundaries, so a buffer aligned otherwise sums in another
        // order (another buffer, not another thread count).
        let (mut g, mut gb) = (vec![0f32; x.len()], vec![0u16; x.len()]);
        let mut run = |threads, bf: bool, classes_too: bool| {
            let n = if classes_too { rows * classes } else { x.len() };
            let targets = if classes_too {
                cls
            } else {
                Targets::Dense(Tensor::F32(&t))
            };
            g.fill(0.0);
            gb.fill(0);
            let (logits, grad) = if bf {
                (Tensor::Bf16(&xb[..n]), TensorMut::Bf16(&mut gb[..n]))
            } else {
                (Tensor::F32(&x[..n]), TensorMut::F32(&mut g[..n]))
            };
            let l = forward_backward(isa, threads, logits, targets, p, Reduction::Sum, 1.0, grad)
                .unwrap();
            (l.to_bits(), g[..n].to_vec(), gb[..n].to_vec())
        };
        for bf in [false, true] {
            for classes_too in [false, true] {
                let one = run(1, bf, classes_too);
                for threads in [2, 3, 7] {
                    assert_eq!(
                        run(threads, bf, classes_too),
                        one,
                        "{threads} threads, bf16 {bf}, classes {classes_too}"
                    );
                }
            }
        }
    }
}

#[test]
fn empty_and_bad_inputs() {
    for isa in every_isa() {
        let p = Params::default();

        let m = forward(
            isa,
            2,
            Tensor::F32(&[]),
            Targets::Dense(Tensor::F32(&[])),
            p,
            Reduction::Mean,
            None,
        )
        .unwrap();
        assert!(m.is_nan(), "mean of nothing is NaN, as in torch");
        assert_eq!(
            forward(
                isa,
                2,
                Tensor::F32(&[]),
                Targets::Dense(Tensor::F32(&[])),
                p,
                Reduction::Sum,
                None
            )
            .unwrap(),
            0.0
        );
        assert!(forward(
            isa,
            1,
            Tensor::F32(&[1.0, 2.0]),
            Targets::Dense(Tensor::F32(&[1.0])),
            p,
            Reduction::Sum,
            None
        )
        .is_err());
        assert!(forward(
            isa,
            1,
            Tensor::F32(&[1.0]),
            Targets::Dense(Tensor::F32(&[1.0])),
            Params {
                alpha: 0.25,
                gamma: -1.0
            },
            Reduction::Sum,
            None
        )
        .is_err());
    }
}

/// The fused training-step path at a size where the gradient is written with non-temporal
/// stores (> 4 MB), from start offsets that give every alignment of the gradient, with dense
/// and class-index targets: loss sum and gradient vs float64.
#[test]
fn fused_large_and_misaligned_matches_float64() {
    for isa in every_isa() {
        let n = 1_200_007usize;
        let (x, t) = inputs(n + 3, 20.0, false, 5);
        let p = Params::default();
        let (a, g) = (p.alpha as f64, p.gamma as f64);
        for off in 0..3 {
            let (xs, ts) = (&x[off..off + n], &t[off..off + n]);
            let rl: f64 = xs
                .iter()
                .zip(ts)
                .map(|(x, t)| ref_loss(*x as f64, *t as f64, a, g))
                .sum();
            let rg: Vec<f64> = xs
                .iter()
                .zip(ts)
                .map(|(x, t)| ref_grad(*x as f64, *t as f64, a, g))
                .collect();
            let mut buf = vec![0f32; n + 7];
            let gs = &mut buf[off + 1..off + 1 + n];
            let l = forward_backward(
                isa,
                2,
                Tensor::F32(xs),
                Targets::Dense(Tensor::F32(ts)),
                p,
                Reduction::Sum,
                1.0,
                TensorMut::F32(gs),
            )
            .unwrap();
            assert!(((l as f64 - rl) / rl).abs() < 1e-6, "sum {l} vs {rl}");
            close(gs, &rg, &format!("large fused grad, offset {off}"));
            close_rel(gs, &rg, 1e-5, &format!("large fused grad, offset {off}"));
        }
        // Class indices: rows of 91 classes (rows start at every alignment), some rows ignored.
        let classes = 91;
        let rows = n / classes;
        let labels: Vec<i64> = (0..rows as i64)
            .map(|r| if r % 7 == 3 { -1 } else { (r * 13) % 95 })
            .collect();
        let xs = &x[..rows * classes];
        let tl = |i: usize| {
            let l = labels[i / classes];
            if l == (i % classes) as i64 {
                1.0
            } else {
                0.0
            }
        };
        let rg: Vec<f64> = (0..xs.len())
            .map(|i| {
                if labels[i / classes] == -1 {
                    0.0
                } else {
                    ref_grad(xs[i] as f64, tl(i), a, g)
                }
            })
            .collect();
        let rl: f64 = (0..xs.len())
            .filter(|i| labels[i / classes] != -1)
            .map(|i| ref_loss(xs[i] as f64, tl(i), a, g))
            .sum();
        let mut gs = vec![1f32; xs.len()];
        let l = forward_backward(
            isa,
            2,
            Tensor::F32(xs),
            Targets::Classes {
                labels: &labels,
                classes,
                ignore_index: -1,
            },
            p,
            Reduction::Sum,
            1.0,
            TensorMut::F32(&mut gs),
        )
        .unwrap();
        assert!(((l as f64 - rl) / rl).abs() < 1e-6, "sum {l} vs {rl}");
        close(&gs, &rg, "large fused grad, class indices");
        close_rel(&gs, &rg, 1e-5, "large fused grad, class indices");
    }
}

/// bf16 logits through the reduced passes (fused forward+backward and forward-only), large
/// enough for non-temporal stores, misaligned, dense bf16/f32 and class-index targets: the
/// gradient within one bf16 rounding of float64, the reduced loss within 1e-6.
#[test]
fn bf16_reduced_passes_match_float64() {
    for isa in every_isa() {
        let n = 2_400_011usize;
        let (x, _) = inputs(n + 1, 12.0, false, 9);
        let xb: Vec<u16> = x.iter().map(|v| bf16::from_f32(*v)).collect();
        let xs = &xb[1..];
        let classes = 264;
        let rows = n / classes;
        let xs = &xs[..rows * classes];
        let labels: Vec<i64> = (0..rows as i64)
            .map(|r| if r % 9 == 0 { -1 } else { (r * 31) % 300 })
            .collect();
        let t_of = |i: usize| {
            let l = labels[i / classes];
            (l == (i % classes) as i64) as u8 as f32
        };
        let dense: Vec<u16> = (0..xs.len()).map(|i| bf16::from_f32(t_of(i))).collect();
        let dense_f32: Vec<f32> = (0..xs.len()).map(t_of).collect();
        let ignored = |i: usize| labels[i / classes] == -1;
        let p = Params::default();
        let xf = |i: usize| bf16::to_f32(xs[i]) as f64;
        for (name, targets, skip_ignored) in [
            ("dense bf16", Targets::Dense(Tensor::Bf16(&dense)), false),
            // bf16 logits with f32 targets: read as they are (the Python wrapper no longer
            // converts them).
            ("dense f32", Targets::Dense(Tensor::F32(&dense_f32)), false),
            (
                "class indices",
                Targets::Classes {
                    labels: &labels,
                    classes,
                    ignore_index: -1,
                },
                true,
            ),
        ] {
            let skip = |i: usize| skip_ignored && ignored(i);
            let rl: f64 = (0..xs.len())
                .filter(|i| !skip(*i))
                .map(|i| ref_loss(xf(i), t_of(i) as f64, 0.25, 2.0))
                .sum();
            let mut buf = vec![0u16; xs.len() + 1];
            let g = &mut buf[1..];
            let l = forward_backward(
                isa,
                2,
                Tensor::Bf16(xs),
                targets,
                p,
                Reduction::Sum,
                1.0,
                TensorMut::Bf16(g),
            )
            .unwrap();
            assert!(((l as f64 - rl) / rl).abs() < 1e-6, "{name}: {l} vs {rl}");
            let f = forward(isa, 2, Tensor::Bf16(xs), targets, p, Reduction::Sum, None).unwrap();
            assert!(
                ((f as f64 - rl) / rl).abs() < 1e-6,
                "{name} forward: {f} vs {rl}"
            );
            for (i, gv) in g.iter().enumerate() {
                let r = if skip(i) {
                    0.0
                } else {
                    ref_grad(xf(i), t_of(i) as f64, 0.25, 2.0)
                };
                let ours = bf16::to_f32(*gv) as f64;
                assert!(
                    (ours - r).abs() <= r.abs() / 256.0 + 1e-30,
                    "{name} grad[{i}]: {ours} vs {r}"
                );
            }
        }
    }
}

/// Every bf16 logit with |x| ≤ 100 (past exp's underflow at 87) of both signs, all-zero targets:
/// on AVX-512 these chunks are looked up in a table indexed by the logit's 16 bits instead of
/// computed, so each entry is checked once here against float64 — the gradient within one bf16
/// rounding, the loss of every slice of 1024 logits within 1e-6 (slices: the f32 lane sums of a
/// long pass would add their own rounding, up to 1e-5 at these magnitudes on every path).
#[test]
fn every_bf16_logit_with_zero_targets_matches_float64() {
    let xs: Vec<u16> = (0..=u16::MAX)
        .filter(|b| {
            let v = bf16::to_f32(*b);
            v.is_finite() && v.abs() <= 100.0
        })
        .collect();
    let zeros = vec![0u16; 1024];
    for gamma in [0.0f32, 1.0, 2.0] {
        let p = Params { alpha: 0.25, gamma };
        for isa in every_isa() {
            let what = format!("{} gamma {gamma}", isa.name());
            for xs in xs.chunks(1024) {
                let xf = |i: usize| bf16::to_f32(xs[i]) as f64;
                let rl: f64 = (0..xs.len())
                    .map(|i| ref_loss(xf(i), 0.0, 0.25, gamma as f64))
                    .sum();
                let mut g = vec![0u16; xs.len()];
                let l = forward_backward(
                    isa,
                    1,
                    Tensor::Bf16(xs),
                    Targets::Dense(Tensor::Bf16(&zeros[..xs.len()])),
                    p,
                    Reduction::Sum,
                    1.0,
                    TensorMut::Bf16(&mut g),
                )
                .unwrap();
                assert!(
                    ((l as f64 - rl) / rl).abs() < 1e-6,
                    "{what}, x from {}: {l} vs {rl}",
                    xf(0)
                );
                for (i, gv) in g.iter().enumerate() {
                    let r = ref_grad(xf(i), 0.0, 0.25, gamma as f64);
                    let ours = bf16::to_f32(*gv) as f64;
                    assert!(
                        (ours - r).abs() <= r.abs() / 256.0 + 1e-30,
                        "{what} grad at x = {}: {ours} vs {r}",
                        xf(i)
                    );
                }
            }
        }
    }
}

fn sum_with_grad(isa: Isa, threads: usize, p: Params, x: Tensor, t: Tensor, g: TensorMut) {
    forward_backward(
        isa,
        threads,
        x,
        Targets::Dense(t),
        p,
        Reduction::Sum,
        1.0,
        g,
    )
    .unwrap();
}

/// No denormal in any gradient, on every path: confident negatives (logits below about −44 at
/// γ = 2) have gradients under f32's smallest normal number, and written out as denormals they
/// made the ops that read the gradient next 2–4x slower (a microcode assist per operand on x86;
/// issue 51's focal-loss head). They are written as zeros; the rest is checked above.
#[test]
fn gradients_of_confident_negatives_are_zero_not_denormal() {
    let n = 4099; // a vector tail on every path
    let x: Vec<f32> = (0..n)
        .map(|i| -100.0 + 80.0 * i as f32 / n as f32)
        .collect();
    let t: Vec<f32> = (0..n)
        .map(|i| if i % 97 == 0 { 1.0 } else { 0.0 })
        .collect();
    let (xb, tb): (Vec<u16>, Vec<u16>) = (
        x.iter().map(|v| bf16::from_f32(*v)).collect(),
        t.iter().map(|v| bf16::from_f32(*v)).collect(),
    );
    let p = Params {
        alpha: 0.25,
        gamma: 2.0,
    };
    let mut denormal = Vec::new();
    for isa in every_isa() {
        for threads in [1, 2] {
            let what = format!("{} {threads} thread(s)", isa.name());
            let fused =
                |xs: Tensor, ts: Tensor, g: TensorMut| sum_with_grad(isa, threads, p, xs, ts, g);
            let mut g = vec![0f32; n];
            fused(Tensor::F32(&x), Tensor::F32(&t), TensorMut::F32(&mut g));
            let zeros = g.iter().filter(|v| **v == 0.0).count();
            assert!(zeros > n / 4, "{what}: only {zeros} zeros");
            if g.iter().any(|v| v.is_subnormal()) {
                denormal.push(format!("{what}: fused f32"));
            }
            let (xs, ts) = (Tensor::F32(&x), Targets::Dense(Tensor::F32(&t)));
            backward(
                isa,
                threads,
                xs,
                ts,
                p,
                Reduction::Sum,
                1.0,
                None,
                TensorMut::F32(&mut g),
            )
            .unwrap();
            if g.iter().any(|v| v.is_subnormal()) {
                denormal.push(format!("{what}: backward f32"));
            }
            let mut gb = vec![0u16; n];
            fused(
                Tensor::Bf16(&xb),
                Tensor::Bf16(&tb),
                TensorMut::Bf16(&mut gb),
            );
            if gb.iter().any(|v| bf16::to_f32(*v).is_subnormal()) {
                denormal.push(format!("{what}: fused bf16"));
            }
        }
    }
    assert!(denormal.is_empty(), "denormal gradients: {denormal:?}");
}
