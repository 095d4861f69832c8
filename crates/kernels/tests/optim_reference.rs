//! Optimizer steps against float64 transcriptions of torch.optim's update rules (SGD, Adam,
//! AdamW) and of the LAMB paper, over several steps and many tensors; bf16 variants against
//! the f32 run.

use profilednn_kernels::optim::*;
use profilednn_kernels::{bf16, Isa};

/// Every SIMD path this CPU can run (AVX-512, AVX2, portable), printed so a log says which
/// paths a run exercised.
fn every_isa() -> Vec<Isa> {
    let v = Isa::available();
    let names: Vec<&str> = v.iter().map(|i| i.name()).collect();
    eprintln!("ISA paths tested on this CPU: {}", names.join(", "));
    v
}

fn rnd(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) as f32 * scale
        })
        .collect()
}

/// Adam/LAMB states of f32 tensors (parameters, gradients, first and second moments), at `step`.
fn f32_states<'a>(
    ps: &'a mut [Vec<f32>],
    gs: &'a [Vec<f32>],
    ms: &'a mut [Vec<f32>],
    vs: &'a mut [Vec<f32>],
    step: u64,
) -> Vec<AdamState<'a>> {
    ps.iter_mut()
        .zip(gs)
        .zip(ms.iter_mut().zip(vs.iter_mut()))
        .map(|((p, g), (m, v))| AdamState {
            params: Params::F32(p),
            grad: Grad::F32(g),
            exp_avg: m,
            exp_avg_sq: v,
            max_exp_avg_sq: None,
            step,
        })
        .collect()
}

/// 2e-6 relative, with a floor of 1e-6 (parameters are of order 1: an element that an update
/// brings near zero keeps the absolute rounding error of its operands).
fn close(a: &[f32], r: &[f64], what: &str) {
    for (i, (x, y)) in a.iter().zip(r).enumerate() {
        let tol = 2e-6 * y.abs() + 1e-6;
        assert!((*x as f64 - y).abs() <= tol, "{what}[{i}]: {x} vs {y}");
    }
}

const SIZES: [usize; 5] = [1, 15, 16, 1000, 4099];

#[test]
fn sgd_matches_torch_rule() {
    for isa in every_isa() {
        for (momentum, dampening, nesterov, wd, maximize) in [
            (0.0, 0.0, false, 0.0, false),
            (0.9, 0.0, false, 1e-4, false),
            (0.9, 0.0, true, 1e-4, false),
            (0.9, 0.1, false, 0.0, true),
        ] {
            let c = SgdConfig {
                lr: 0.05,
                momentum,
                dampening,
                weight_decay: wd,
                nesterov,
                maximize,
            };
            let mut ps: Vec<Vec<f32>> = SIZES
                .iter()
                .enumerate()
                .map(|(k, n)| rnd(*n, k as u64, 1.0))
                .collect();
            let mut bufs: Vec<Vec<f32>> = SIZES.iter().map(|n| vec![0.0; *n]).collect();
            let mut rp: Vec<Vec<f64>> = ps
                .iter()
                .map(|p| p.iter().map(|x| *x as f64).collect())
                .collect();
            let mut rb: Vec<Vec<f64>> = SIZES.iter().map(|n| vec![0.0; *n]).collect();
            for step in 0..4 {
                let gs: Vec<Vec<f32>> = SIZES
                    .iter()
                    .enumerate()
                    .map(|(k, n)| rnd(*n, 100 + step * 10 + k as u64, 0.5))
                    .collect();
                {
                    let mut ts: Vec<SgdTensor> = ps
                        .iter_mut()
                        .zip(bufs.iter_mut())
                        .zip(&gs)
                        .map(|((p, b), g)| SgdTensor {
                            params: Params::F32(p),
                            grad: Grad::F32(g),
                            momentum_buffer: (momentum != 0.0).then_some(b.as_mut_slice()),
                            first: step == 0,
                        })
                        .collect();
                    sgd_step(isa, 2, &mut ts, &c);
                }
                for k in 0..SIZES.len() {
                    for i in 0..SIZES[k] {
                        let mut g = gs[k][i] as f64;
                        if maximize {
                            g = -g;
                        }
                        g += wd as f64 * rp[k][i];
                        if momentum != 0.0 {
                            rb[k][i] = if step == 0 {
                                g
                            } else {
                                momentum as f64 * rb[k][i] + (1.0 - dampening as f64) * g
                            };
                            g = if nesterov {
                                g + momentum as f64 * rb[k][i]
                            } else {
                                rb[k][i]
                            };
                        }
                        rp[k][i] -= 0.05 * g;
                    }
                    close(&ps[k], &rp[k], &format!("sgd step {step} tensor {k}"));
                }
            }
        }
    }
}

fn adam_reference(
    p: &mut [f64],
    m: &mut [f64],
    v: &mut [f64],
    vmax: &mut [f64],
    g: &[f32],
    c: &AdamConfig,
    step: i32,
) {
    let (b1, b2) = (c.beta1 as f64, c.beta2 as f64);
    for i in 0..p.len() {
        let mut gi = g[i] as f64;
        if c.maximize {
            gi = -gi;
        }
        if c.decoupled {
            p[i] *= 1.0 - c.lr as f64 * c.weight_decay as f64;
        } else {
            gi += c.weight_decay as f64 * p[i];
        }
        m[i] = b1 * m[i] + (1.0 - b1) * gi;
        v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
        let vv = if c.amsgrad {
            vmax[i] = vmax[i].max(v[i]);
            vmax[i]
        } else {
            v[i]
        };
        let denom = (vv / (1.0 - b2.powi(step))).sqrt() + c.eps as f64;
        p[i] -= c.lr as f64 / (1.0 - b1.powi(step)) * m[i] / denom;
    }
}

#[test]
fn adam_and_adamw_match_torch_rule() {
    for isa in every_isa() {
        for (decoupled, amsgrad, wd, maximize) in [
            (false, false, 0.0, false),
            (true, false, 0.01, false),
            (true, true, 0.01, false),
            (false, true, 1e-3, true),
        ] {
            let c = AdamConfig {
                lr: 1e-3,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                weight_decay: wd,
                decoupled,
                amsgrad,
                maximize,
            };
            let n = 4099;
            let mut p = rnd(n, 1, 1.0);
            let (mut m, mut v, mut mx) = (vec![0f32; n], vec![0f32; n], vec![0f32; n]);
            let mut rp: Vec<f64> = p.iter().map(|x| *x as f64).collect();
            let (mut rm, mut rv, mut rmx) = (vec![0f64; n], vec![0f64; n], vec![0f64; n]);
            let mut step = 0;
            for s in 1..=5 {
                let g = rnd(n, 50 + s as u64, 0.1);
                {
                    let mut st = [AdamState {
                        params: Params::F32(&mut p),
                        grad: Grad::F32(&g),
                        exp_avg: &mut m,
                        exp_avg_sq: &mut v,
                        max_exp_avg_sq: if amsgrad { Some(&mut mx) } else { None },
                        step,
                    }];
                    adam_step(isa, 1, &mut st, &c);
                    step = st[0].step;
                }
                adam_reference(&mut rp, &mut rm, &mut rv, &mut rmx, &g, &c, s);
                close(
                    &p,
                    &rp,
                    &format!("adam decoupled={decoupled} amsgrad={amsgrad} step {s}"),
                );
            }
        }
    }
}

/// The LAMB configuration of the tests against the paper and against the portable loop.
const LAMB: LambConfig = LambConfig {
    lr: 1e-2,
    beta1: 0.9,
    beta2: 0.999,
    eps: 1e-6,
    weight_decay: 0.01,
};

#[test]
fn lamb_matches_the_paper() {
    for isa in every_isa() {
        let c = LAMB;
        for n in SIZES {
            let mut p = rnd(n, 9, 1.0);
            let (mut m, mut v) = (vec![0f32; n], vec![0f32; n]);
            let mut rp: Vec<f64> = p.iter().map(|x| *x as f64).collect();
            let (mut rm, mut rv) = (vec![0f64; n], vec![0f64; n]);
            let mut step = 0;
            for s in 1..=3 {
                let g = rnd(n, 77 + s as u64, 0.2);
                {
                    let mut st = [AdamState {
                        params: Params::F32(&mut p),
                        grad: Grad::F32(&g),
                        exp_avg: &mut m,
                        exp_avg_sq: &mut v,
                        max_exp_avg_sq: None,
                        step,
                    }];
                    lamb_step(isa, 2, &mut st, &c);
                    step = st[0].step;
                }
                let (b1, b2) = (0.9f64, 0.999f64);
                let mut u = vec![0f64; n];
                for i in 0..n {
                    rm[i] = b1 * rm[i] + (1.0 - b1) * g[i] as f64;
                    rv[i] = b2 * rv[i] + (1.0 - b2) * (g[i] as f64).powi(2);
                    u[i] = (rm[i] / (1.0 - b1.powi(s)))
                        / ((rv[i] / (1.0 - b2.powi(s))).sqrt() + 1e-6)
                        + 0.01 * rp[i];
                }
                let pn = rp.iter().map(|x| x * x).sum::<f64>().sqrt();
                let un = u.iter().map(|x| x * x).sum::<f64>().sqrt();
                let ratio = if pn > 0.0 && un > 0.0 { pn / un } else { 1.0 };
                for i in 0..n {
                    rp[i] -= 1e-2 * ratio * u[i];
                }
                close(&p, &rp, &format!("lamb n={n} step {s}"));
            }
        }
    }
}

#[test]
fn bf16_parameters_follow_the_f32_run() {
    for isa in every_isa() {
        let n = 1000;
        let c = AdamConfig {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
            decoupled: true,
            amsgrad: false,
            maximize: false,
        };
        let p0 = rnd(n, 5, 1.0);
        let g = rnd(n, 6, 0.1);
        let gb: Vec<u16> = g.iter().map(|x| bf16::from_f32(*x)).collect();
        let g_rounded: Vec<f32> = gb.iter().map(|x| bf16::to_f32(*x)).collect();
        // f32 run with the same (bf16-rounded) gradients.
        let mut pf = p0.clone();
        let (mut m1, mut v1) = (vec![0f32; n], vec![0f32; n]);
        adam_step(
            isa,
            1,
            &mut [AdamState {
                params: Params::F32(&mut pf),
                grad: Grad::F32(&g_rounded),
                exp_avg: &mut m1,
                exp_avg_sq: &mut v1,
                max_exp_avg_sq: None,
                step: 0,
            }],
            &c,
        );
        // Master copy.
        let mut master = p0.clone();
        let mut param: Vec<u16> = p0.iter().map(|x| bf16::from_f32(*x)).collect();
        let (mut m2, mut v2) = (vec![0f32; n], vec![0f32; n]);
        adam_step(
            isa,
            1,
            &mut [AdamState {
                params: Params::Bf16Master {
                    param: &mut param,
                    master: &mut master,
                },
                grad: Grad::Bf16(&gb),
                exp_avg: &mut m2,
                exp_avg_sq: &mut v2,
                max_exp_avg_sq: None,
                step: 0,
            }],
            &c,
        );
        assert_eq!(master, pf);
        assert!(param.iter().zip(&pf).all(|(b, f)| *b == bf16::from_f32(*f)));
        // Split: top and bottom halves hold the exact f32.
        let mut top: Vec<u16> = p0.iter().map(|x| (x.to_bits() >> 16) as u16).collect();
        let mut low: Vec<u16> = p0.iter().map(|x| x.to_bits() as u16).collect();
        let (mut m3, mut v3) = (vec![0f32; n], vec![0f32; n]);
        adam_step(
            isa,
            1,
            &mut [AdamState {
                params: Params::Bf16Split {
                    param: &mut top,
                    low: &mut low,
                },
                grad: Grad::Bf16(&gb),
                exp_avg: &mut m3,
                exp_avg_sq: &mut v3,
                max_exp_avg_sq: None,
                step: 0,
            }],
            &c,
        );
        let back: Vec<f32> = top
            .iter()
            .zip(&low)
            .map(|(t, l)| f32::from_bits(((*t as u32) << 16) | *l as u32))
            .collect();
        assert_eq!(back, pf);
    }
}

#[test]
fn threads_do_not_change_results() {
    for isa in every_isa() {
        let sizes = [3usize, 70_000, 5, 130_000, 17];
        let run = |threads: usize| {
            let mut ps: Vec<Vec<f32>> = sizes
                .iter()
                .enumerate()
                .map(|(k, n)| rnd(*n, k as u64, 1.0))
                .collect();
            let gs: Vec<Vec<f32>> = sizes
                .iter()
                .enumerate()
                .map(|(k, n)| rnd(*n, 10 + k as u64, 1.0))
                .collect();
            let mut ms: Vec<Vec<f32>> = sizes.iter().map(|n| vec![0.0; *n]).collect();
            let mut vs: Vec<Vec<f32>> = sizes.iter().map(|n| vec![0.0; *n]).collect();
            let mut st = f32_states(&mut ps, &gs, &mut ms, &mut vs, 0);
            lamb_step(
                isa,
                threads,
                &mut st,
                &LambConfig {
                    lr: 0.01,
                    beta1: 0.9,
                    beta2: 0.999,
                    eps: 1e-6,
                    weight_decay: 0.01,
                },
            );
            drop(st);
            ps
        };
        let one = run(1);
        assert_eq!(run(2), one);
        assert_eq!(run(3), one);
    }
}

/// Tensors larger than a thread's share are cut into pieces for the threads (SGD, Adam and
/// their bf16-state forms; `split.rs`): every storage kind gives the bits of one thread, at any
/// thread count, over two steps (the second reads the momentum and moments the first wrote).
#[test]
fn large_tensors_cut_across_threads_give_the_same_bits() {
    // At 2–4 threads the 300 000 tensor exceeds a share (cut in 2–4 pieces), the others do
    // not (the smallest share, at 4 threads, is 97 505).
    let sizes = [300_000usize, 3, 90_000, 17];
    let sgd_c = SgdConfig {
        lr: 0.05,
        momentum: 0.9,
        dampening: 0.0,
        weight_decay: 1e-4,
        nesterov: true,
        maximize: false,
    };
    let adam_c = AdamConfig {
        lr: 1e-2,
        beta1: 0.9,
        beta2: 0.999,
        eps: 1e-8,
        weight_decay: 0.01,
        decoupled: true,
        amsgrad: false,
        maximize: false,
    };
    let b16 = |v: Vec<f32>| v.iter().map(|x| bf16::from_f32(*x)).collect::<Vec<u16>>();
    for isa in every_isa() {
        let run = |threads: usize| {
            let mut out: Vec<Vec<u32>> = Vec::new();
            // f32 parameters and gradients, SGD with momentum; bf16 parameters with an f32
            // master and bf16 gradients, Adam with amsgrad.
            let mut ps: Vec<Vec<f32>> = sizes.iter().map(|&n| rnd(n, n as u64, 1.0)).collect();
            let mut bs: Vec<Vec<f32>> = sizes.iter().map(|&n| vec![0.0; n]).collect();
            let mut qs: Vec<Vec<u16>> = ps.iter().map(|p| b16(p.clone())).collect();
            let mut masters = ps.clone();
            let zeros = || sizes.iter().map(|&n| vec![0f32; n]).collect::<Vec<_>>();
            let (mut ms, mut vs, mut xs) = (zeros(), zeros(), zeros());
            // bf16 state (torch's fused layout).
            let mut hp: Vec<Vec<u16>> = qs.clone();
            let mut hb: Vec<Vec<u16>> = sizes.iter().map(|&n| vec![0u16; n]).collect();
            let (mut hm, mut hv) = (hb.clone(), hb.clone());
            let mut hq = qs.clone();
            for step in 0..2u64 {
                let gs: Vec<Vec<f32>> = sizes
                    .iter()
                    .map(|&n| rnd(n, 7 + n as u64 + step, 0.5))
                    .collect();
                let g16: Vec<Vec<u16>> = gs.iter().map(|g| b16(g.clone())).collect();
                let mut t: Vec<SgdTensor> = ps
                    .iter_mut()
                    .zip(bs.iter_mut())
                    .zip(&gs)
                    .map(|((p, b), g)| SgdTensor {
                        params: Params::F32(p),
                        grad: Grad::F32(g),
                        momentum_buffer: Some(b),
                        first: step == 0,
                    })
                    .collect();
                sgd_step(isa, threads, &mut t, &sgd_c);
                let mut t: Vec<AdamState> = qs
                    .iter_mut()
                    .zip(masters.iter_mut())
                    .zip(&g16)
                    .zip(ms.iter_mut().zip(vs.iter_mut()).zip(xs.iter_mut()))
                    .map(|(((q, master), g), ((m, v), x))| AdamState {
                        params: Params::Bf16Master { param: q, master },
                        grad: Grad::Bf16(g),
                        exp_avg: m,
                        exp_avg_sq: v,
                        max_exp_avg_sq: Some(x),
                        step,
                    })
                    .collect();
                adam_step(
                    isa,
                    threads,
                    &mut t,
                    &AdamConfig {
                        amsgrad: true,
                        ..adam_c
                    },
                );
                let mut t: Vec<SgdBf16Tensor> = hp
                    .iter_mut()
                    .zip(hb.iter_mut())
                    .zip(&g16)
                    .map(|((p, b), g)| SgdBf16Tensor {
                        param: p,
                        grad: g,
                        momentum_buffer: Some(b),
                        first: step == 0,
                    })
                    .collect();
                sgd_step_bf16(isa, threads, &mut t, &sgd_c);
                let mut t: Vec<AdamBf16State> = hq
                    .iter_mut()
                    .zip(&g16)
                    .zip(hm.iter_mut().zip(hv.iter_mut()))
                    .map(|((p, g), (m, v))| AdamBf16State {
                        param: p,
                        grad: g,
                        exp_avg: m,
                        exp_avg_sq: v,
                        step,
                    })
                    .collect();
                adam_step_bf16(isa, threads, &mut t, &adam_c);
            }
            let f = |v: &Vec<Vec<f32>>| {
                v.iter()
                    .flat_map(|x| x.iter().map(|y| y.to_bits()))
                    .collect()
            };
            let h =
                |v: &Vec<Vec<u16>>| v.iter().flat_map(|x| x.iter().map(|y| *y as u32)).collect();
            out.extend([f(&ps), f(&bs), h(&qs), f(&masters), f(&ms), f(&vs), f(&xs)]);
            out.extend([h(&hp), h(&hb), h(&hq), h(&hm), h(&hv)]);
            out
        };
        let one = run(1);
        for threads in [2, 3, 4] {
            assert!(
                run(threads) == one,
                "{} threads on {}: other bits than 1 thread",
                threads,
                isa.name()
            );
        }
    }
}

/// LAMB cuts a tensor larger than a thread's share on its norms' blocks: the threads run the
/// pieces' first pass, the norms are added from the pieces' block sums, then the second pass.
/// The bits of one thread at 2–4 threads, over three steps, for f32 parameters (the
/// hand-written loops on AVX-512) and bf16 parameters with an f32 master and bf16 gradients
/// (the portable loop); and the ratio is the whole tensor's (a piece's own norms would give
/// other bits: tensors whose halves differ 8× in scale).
#[test]
fn lamb_cuts_large_tensors_across_threads_with_the_bits_of_one() {
    // Cut at 2 threads: the 300 000 tensor; at 3 and 4 (shares 166 674, 125 005): it and the
    // 200 000 one, so that one step adds the norms of two cut tensors.
    let sizes = [300_000usize, 3, 200_000, 17];
    for isa in every_isa() {
        let run = |threads: usize| {
            let mut ps: Vec<Vec<f32>> = sizes
                .iter()
                .map(|&n| {
                    let mut p = rnd(n, n as u64 + 3, 1.0);
                    // The second half 8x the first: its own norms are not the tensor's.
                    let h = n / 2;
                    p[h..].iter_mut().for_each(|x| *x *= 8.0);
                    p
                })
                .collect();
            let mut qs: Vec<Vec<u16>> = ps
                .iter()
                .map(|p| p.iter().map(|x| bf16::from_f32(*x)).collect())
                .collect();
            let mut masters = ps.clone();
            let zeros = || sizes.iter().map(|&n| vec![0f32; n]).collect::<Vec<_>>();
            let (mut ms, mut vs, mut mq, mut vq) = (zeros(), zeros(), zeros(), zeros());
            let (mut step_f, mut step_q) = (0u64, 0u64);
            for step in 0..3u64 {
                let gs: Vec<Vec<f32>> = sizes
                    .iter()
                    .map(|&n| rnd(n, 11 + n as u64 + step, 0.3))
                    .collect();
                let g16: Vec<Vec<u16>> = gs
                    .iter()
                    .map(|g| g.iter().map(|x| bf16::from_f32(*x)).collect())
                    .collect();
                let mut t = f32_states(&mut ps, &gs, &mut ms, &mut vs, step_f);
                lamb_step(isa, threads, &mut t, &LAMB);
                step_f = t[0].step;
                let mut t: Vec<AdamState> = qs
                    .iter_mut()
                    .zip(masters.iter_mut())
                    .zip(&g16)
                    .zip(mq.iter_mut().zip(vq.iter_mut()))
                    .map(|(((q, master), g), (m, v))| AdamState {
                        params: Params::Bf16Master { param: q, master },
                        grad: Grad::Bf16(g),
                        exp_avg: m,
                        exp_avg_sq: v,
                        max_exp_avg_sq: None,
                        step: step_q,
                    })
                    .collect();
                lamb_step(isa, threads, &mut t, &LAMB);
                step_q = t[0].step;
            }
            let f = |v: &Vec<Vec<f32>>| -> Vec<u32> {
                v.iter()
                    .flat_map(|x| x.iter().map(|y| y.to_bits()))
                    .collect()
            };
            let h = |v: &Vec<Vec<u16>>| -> Vec<u32> {
                v.iter().flat_map(|x| x.iter().map(|y| *y as u32)).collect()
            };
            [f(&ps), f(&ms), f(&vs), h(&qs), f(&masters), f(&mq), f(&vq)]
        };
        let one = run(1);
        for threads in [2, 3, 4] {
            assert!(
                run(threads) == one,
                "LAMB at {} threads on {}: other bits than 1 thread",
                threads,
                isa.name()
            );
        }
    }
}

/// The hand-written f32 loops (AVX-512; AVX2 over whole lines with the portable loop on the
/// tail) do the portable loop's operations in its order: every path's parameters and state
/// equal the portable path's bit for bit, for lengths around the 16-element line.
#[test]
fn hand_written_paths_equal_the_portable_loop_bitwise() {
    let portable = Isa::of(profilednn_kernels::Level::Portable).expect("portable always runs");
    let sizes = [1usize, 7, 8, 15, 16, 17, 31, 33, 1000, 4099];
    // SGD with weight decay, and without (the loops leave its operations out then): the bits of
    // parameters and buffers, zero gradients of either sign among the random ones.
    let sgd = |isa: Isa, nesterov: bool, weight_decay: f32| {
        let mut ps: Vec<Vec<f32>> = (0..sizes.len())
            .map(|k| rnd(sizes[k], k as u64, 1.0))
            .collect();
        let mut bs: Vec<Vec<f32>> = sizes.iter().map(|n| vec![0.0; *n]).collect();
        for step in 0..3u64 {
            let gs: Vec<Vec<f32>> = (0..sizes.len())
                .map(|k| {
                    let mut g = rnd(sizes[k], 50 + 10 * step + k as u64, 0.5);
                    for (i, x) in g.iter_mut().enumerate().filter(|(i, _)| i % 5 == 2) {
                        *x = if i % 2 == 0 { 0.0 } else { -0.0 };
                    }
                    g
                })
                .collect();
            let mut ts: Vec<SgdTensor> = ps
                .iter_mut()
                .zip(bs.iter_mut())
                .zip(&gs)
                .map(|((p, b), g)| SgdTensor {
                    params: Params::F32(p),
                    grad: Grad::F32(g),
                    momentum_buffer: Some(b.as_mut_slice()),
                    first: step == 0,
                })
                .collect();
            let c = SgdConfig {
                lr: 0.05,
                momentum: 0.9,
                dampening: 0.0,
                weight_decay,
                nesterov,
                maximize: false,
            };
            sgd_step(isa, 1, &mut ts, &c);
        }
        let bits = |v: &[Vec<f32>]| -> Vec<Vec<u32>> {
            v.iter()
                .map(|t| t.iter().map(|x| x.to_bits()).collect())
                .collect()
        };
        (bits(&ps), bits(&bs))
    };
    // Three steps of an optimizer keeping Adam's state (Adam, LAMB) on the sizes above.
    let adam_state_steps = |seed: u64, step_fn: &dyn Fn(&mut [AdamState])| {
        let mut ps: Vec<Vec<f32>> = (0..sizes.len())
            .map(|k| rnd(sizes[k], k as u64, 1.0))
            .collect();
        let mut ms: Vec<Vec<f32>> = sizes.iter().map(|n| vec![0.0; *n]).collect();
        let mut vs: Vec<Vec<f32>> = sizes.iter().map(|n| vec![0.0; *n]).collect();
        let mut steps = vec![0u64; sizes.len()];
        for step in 0..3u64 {
            let gs: Vec<Vec<f32>> = (0..sizes.len())
                .map(|k| rnd(sizes[k], seed + 10 * step + k as u64, 0.5))
                .collect();
            let mut st: Vec<AdamState> = ps
                .iter_mut()
                .zip(&gs)
                .zip(ms.iter_mut().zip(vs.iter_mut()))
                .zip(&steps)
                .map(|(((p, g), (m, v)), s)| AdamState {
                    params: Params::F32(p),
                    grad: Grad::F32(g),
                    exp_avg: m,
                    exp_avg_sq: v,
                    max_exp_avg_sq: None,
                    step: *s,
                })
                .collect();
            step_fn(&mut st);
            steps = st.iter().map(|s| s.step).collect();
        }
        (ps, ms, vs)
    };
    let adam = |isa: Isa, decoupled: bool| {
        let c = AdamConfig {
            lr: 1e-2,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.01,
            decoupled,
            amsgrad: false,
            maximize: false,
        };
        adam_state_steps(70, &|st| adam_step(isa, 1, st, &c))
    };
    // LAMB's two passes (the second runs from the end of the tensor down on AVX-512).
    let lamb = |isa: Isa| adam_state_steps(90, &|st| lamb_step(isa, 1, st, &LAMB));
    for isa in every_isa() {
        assert_eq!(lamb(isa), lamb(portable), "lamb on {}", isa.name());
        for flag in [false, true] {
            for wd in [1e-4, 0.0] {
                assert_eq!(
                    sgd(isa, flag, wd),
                    sgd(portable, flag, wd),
                    "sgd nesterov={flag} weight decay {wd} on {}",
                    isa.name()
                );
            }
            assert_eq!(
                adam(isa, flag),
                adam(portable, flag),
                "adam decoupled={flag} on {}",
                isa.name()
            );
        }
    }
}

/// bf16 parameters with bf16 state (torch's `fused=True` layout): each step is the f32 step
/// on the widened values, rounded to nearest even when stored — checked against the f32
/// kernel (itself checked against float64 above) on those values, bit for bit, over three
/// steps (each step starting from the rounded state, as the layout does).
#[test]
fn bf16_state_steps_are_the_f32_step_rounded() {
    let widen = |v: &[u16]| v.iter().map(|b| bf16::to_f32(*b)).collect::<Vec<f32>>();
    let round = |v: &[f32]| v.iter().map(|x| bf16::from_f32(*x)).collect::<Vec<u16>>();
    let n = 1037;
    let bits = |seed: u64, scale: f32| round(&rnd(n, seed, scale));
    for isa in every_isa() {
        for (momentum, nesterov, wd, maximize) in [
            (0.0, false, 1e-2, false),
            (0.9, false, 0.0, false),
            (0.9, true, 1e-2, true),
        ] {
            let c = SgdConfig {
                lr: 0.05,
                momentum,
                dampening: 0.0,
                weight_decay: wd,
                nesterov,
                maximize,
            };
            let (mut p, mut b) = (bits(1, 1.0), vec![0u16; n]);
            for step in 0..3u64 {
                let g = bits(20 + step, 0.5);
                let (mut pf, mut bf) = (widen(&p), widen(&b));
                sgd_step(
                    isa,
                    1,
                    &mut [SgdTensor {
                        params: Params::F32(&mut pf),
                        grad: Grad::F32(&widen(&g)),
                        momentum_buffer: (momentum != 0.0).then_some(bf.as_mut_slice()),
                        first: step == 0,
                    }],
                    &c,
                );
                sgd_step_bf16(
                    isa,
                    2,
                    &mut [SgdBf16Tensor {
                        param: &mut p,
                        grad: &g,
                        momentum_buffer: (momentum != 0.0).then_some(b.as_mut_slice()),
                        first: step == 0,
                    }],
                    &c,
                );
                assert_eq!(p, round(&pf), "sgd param, step {step}, {c:?}");
                if momentum != 0.0 {
                    assert_eq!(b, round(&bf), "sgd buffer, step {step}, {c:?}");
                }
            }
        }
        for decoupled in [false, true] {
            let c = AdamConfig {
                lr: 1e-2,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                weight_decay: 1e-2,
                decoupled,
                amsgrad: false,
                maximize: false,
            };
            let (mut p, mut m, mut v) = (bits(2, 1.0), vec![0u16; n], vec![0u16; n]);
            for step in 0..3u64 {
                let g = bits(40 + step, 0.5);
                let (mut pf, mut mf, mut vf) = (widen(&p), widen(&m), widen(&v));
                adam_step(
                    isa,
                    1,
                    &mut [AdamState {
                        params: Params::F32(&mut pf),
                        grad: Grad::F32(&widen(&g)),
                        exp_avg: &mut mf,
                        exp_avg_sq: &mut vf,
                        max_exp_avg_sq: None,
                        step,
                    }],
                    &c,
                );
                adam_step_bf16(
                    isa,
                    2,
                    &mut [AdamBf16State {
                        param: &mut p,
                        grad: &g,
                        exp_avg: &mut m,
                        exp_avg_sq: &mut v,
                        step,
                    }],
                    &c,
                );
                assert_eq!(p, round(&pf), "adam param, step {step}, {c:?}");
                assert_eq!(
                    (&m, &v),
                    (&round(&mf), &round(&vf)),
                    "adam moments, step {step}"
                );
            }
        }
    }
}
