//! The fused optimizer steps on `torch.Tensor`s. Which storage layout a parameter has follows
//! from the dtypes of the tensors handed over, each checked by [`crate::tensor::dense`]:
//!
//! | parameter | master | state | layout |
//! |---|---|---|---|
//! | f32 | none | f32 | f32 |
//! | bf16 | f32 | f32 | an exact f32 master; the parameter is its rounding |
//! | bf16 | int16 | f32 | the master's bottom halves; the parameter is its top halves |
//! | bf16 | none | bf16 | torch's `fused=True` layout: no master, bf16 state |

use crate::tensor::{check_disjoint, dense, Dense, Dtype};
use profilednn_kernels::optim::{
    self, AdamBf16State, AdamConfig, AdamState, Grad, LambConfig, SgdBf16Tensor, SgdConfig,
    SgdTensor,
};
use profilednn_kernels::Isa;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// How one parameter is stored.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Layout {
    F32,
    Master,
    Split,
    Bf16State,
}

/// One parameter's tensors, checked: `state` are the optimizer's per-element buffers.
struct Param {
    layout: Layout,
    p: Dense,
    g: Dense,
    master: Option<Dense>,
    state: Vec<Option<Dense>>,
}

type Obj<'py> = Bound<'py, PyAny>;

fn param(
    i: usize,
    p: &Obj,
    g: &Obj,
    master: Option<&Obj>,
    state: &[(&str, Option<&Obj>)],
) -> PyResult<Param> {
    let p = dense(p, &format!("parameter {i}"))?;
    let master = master
        .map(|m| dense(m, &format!("master of parameter {i}"))?.like(&p))
        .transpose()?;
    let layout = match (p.dtype, master.as_ref().map(|m| m.dtype)) {
        (Dtype::F32, None) => Layout::F32,
        (Dtype::Bf16, Some(Dtype::F32)) => Layout::Master,
        (Dtype::Bf16, Some(Dtype::I16)) => Layout::Split,
        (Dtype::Bf16, None) => Layout::Bf16State,
        (pd, md) => {
            return Err(PyValueError::new_err(format!(
                "parameter {i}: a {pd:?} parameter with master {md:?} is no layout the kernels \
                 know (f32; bf16 with an f32 or int16 master; bf16 alone)"
            )))
        }
    };
    let g = dense(g, &format!("gradient of parameter {i}"))?.like(&p)?;
    let g = match layout {
        Layout::Bf16State => g.of(Dtype::Bf16)?,
        _ if matches!(g.dtype, Dtype::F32 | Dtype::Bf16) => g,
        _ => g.of(p.dtype)?,
    };
    let state_dtype = if layout == Layout::Bf16State {
        Dtype::Bf16
    } else {
        Dtype::F32
    };
    let state = state
        .iter()
        .map(|(name, s)| {
            s.map(|s| {
                dense(s, &format!("{name} of parameter {i}"))?
                    .of(state_dtype)?
                    .like(&p)
            })
            .transpose()
        })
        .collect::<PyResult<Vec<_>>>()?;
    let mut writes = vec![&p];
    writes.extend(master.iter());
    writes.extend(state.iter().flatten());
    check_disjoint(&writes, &[&g])?;
    Ok(Param {
        layout,
        p,
        g,
        master,
        state,
    })
}

/// Tensors written by different parameters of one step must not overlap either.
fn check_params_disjoint(ps: &[Param]) -> PyResult<()> {
    let writes: Vec<&Dense> = ps
        .iter()
        .flat_map(|x| {
            std::iter::once(&x.p)
                .chain(x.master.iter())
                .chain(x.state.iter().flatten())
        })
        .collect();
    let reads: Vec<&Dense> = ps.iter().map(|x| &x.g).collect();
    check_disjoint(&writes, &reads)
}

impl Param {
    /// # Safety
    /// The tensors are alive and used by nothing else for `'a` (checked disjoint).
    unsafe fn params<'a>(&self) -> optim::Params<'a> {
        let m = self.master.as_ref();
        match self.layout {
            Layout::Master => optim::Params::Bf16Master {
                param: self.p.slice_mut(),
                master: m.expect("layout Master has a master").slice_mut(),
            },
            Layout::Split => optim::Params::Bf16Split {
                param: self.p.slice_mut(),
                low: m.expect("layout Split has a master").slice_mut(),
            },
            _ => optim::Params::F32(self.p.slice_mut()),
        }
    }

    /// # Safety
    /// As [`Param::params`].
    unsafe fn grad<'a>(&self) -> Grad<'a> {
        match self.g.dtype {
            Dtype::Bf16 => Grad::Bf16(self.g.slice()),
            _ => Grad::F32(self.g.slice()),
        }
    }

    /// # Safety
    /// As [`Param::params`]; `T` is the state's element type.
    unsafe fn state<'a, T>(&self, k: usize) -> Option<&'a mut [T]> {
        self.state[k].as_ref().map(|s| s.slice_mut())
    }
}

/// `items`: (parameter, gradient, momentum buffer or None, master or None) per parameter;
/// `first`: the buffers are not initialised yet (torch clones the gradient then).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn sgd_step(
    py: Python,
    items: Vec<(Obj, Obj, Option<Obj>, Option<Obj>)>,
    first: bool,
    lr: f32,
    momentum: f32,
    dampening: f32,
    weight_decay: f32,
    nesterov: bool,
    maximize: bool,
    threads: usize,
) -> PyResult<()> {
    let c = SgdConfig {
        lr,
        momentum,
        dampening,
        weight_decay,
        nesterov,
        maximize,
    };
    let ps = items
        .iter()
        .enumerate()
        .map(|(i, (p, g, b, m))| param(i, p, g, m.as_ref(), &[("momentum buffer", b.as_ref())]))
        .collect::<PyResult<Vec<_>>>()?;
    check_params_disjoint(&ps)?;
    // SAFETY: every tensor was read from a live torch.Tensor that `items` keeps referenced for
    // the call, with the dtype and layout matched above; written tensors overlap nothing else
    // (checked).
    // Python code in other threads (the GIL is released) must not resize or `set_()` them
    // meanwhile: ATen's own contract for the tensors an op is using.
    py.allow_threads(|| unsafe {
        let (mut ts, mut bf) = (Vec::new(), Vec::new());
        for x in &ps {
            if x.layout == Layout::Bf16State {
                bf.push(SgdBf16Tensor {
                    param: x.p.slice_mut(),
                    grad: x.g.slice(),
                    momentum_buffer: x.state(0),
                    first,
                });
            } else {
                ts.push(SgdTensor {
                    params: x.params(),
                    grad: x.grad(),
                    momentum_buffer: x.state(0),
                    first,
                });
            }
        }
        optim::sgd_step(Isa::detect(), threads, &mut ts, &c);
        optim::sgd_step_bf16(Isa::detect(), threads, &mut bf, &c);
    });
    Ok(())
}

/// One parameter of an Adam-like step: (parameter, gradient, exp_avg, exp_avg_sq,
/// max_exp_avg_sq or None, master or None).
type AdamItem<'py> = (
    Obj<'py>,
    Obj<'py>,
    Obj<'py>,
    Obj<'py>,
    Option<Obj<'py>>,
    Option<Obj<'py>>,
);

/// `step` is the step count before this one (the same for all tensors of the call).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn adam_step(
    py: Python,
    items: Vec<AdamItem>,
    step: u64,
    lr: f32,
    beta1: f32,
    beta2: f32,
    eps: f32,
    weight_decay: f32,
    decoupled: bool,
    amsgrad: bool,
    maximize: bool,
    lamb: bool,
    threads: usize,
) -> PyResult<()> {
    let c = AdamConfig {
        lr,
        beta1,
        beta2,
        eps,
        weight_decay,
        decoupled,
        amsgrad,
        maximize,
    };
    let ps = items
        .iter()
        .enumerate()
        .map(|(i, (p, g, m, v, mx, master))| {
            let state = [
                ("exp_avg", Some(m)),
                ("exp_avg_sq", Some(v)),
                ("max_exp_avg_sq", mx.as_ref()),
            ];
            param(i, p, g, master.as_ref(), &state)
        })
        .collect::<PyResult<Vec<_>>>()?;
    check_params_disjoint(&ps)?;
    if ps.iter().any(|x| x.layout == Layout::Bf16State) && (lamb || amsgrad) {
        return Err(PyValueError::new_err(
            "bf16 state (master=\"none\") is for SGD, Adam and AdamW without amsgrad",
        ));
    }
    if amsgrad && ps.iter().any(|x| x.state[2].is_none()) {
        return Err(PyValueError::new_err(
            "amsgrad needs max_exp_avg_sq for every parameter",
        ));
    }
    // SAFETY: as in `sgd_step`.
    py.allow_threads(|| unsafe {
        let (mut st, mut bf) = (Vec::new(), Vec::new());
        for x in &ps {
            if x.layout == Layout::Bf16State {
                bf.push(AdamBf16State {
                    param: x.p.slice_mut(),
                    grad: x.g.slice(),
                    exp_avg: x.state(0).expect("exp_avg is always given"),
                    exp_avg_sq: x.state(1).expect("exp_avg_sq is always given"),
                    step,
                });
            } else {
                st.push(AdamState {
                    params: x.params(),
                    grad: x.grad(),
                    exp_avg: x.state(0).expect("exp_avg is always given"),
                    exp_avg_sq: x.state(1).expect("exp_avg_sq is always given"),
                    max_exp_avg_sq: x.state(2),
                    step,
                });
            }
        }
        if lamb {
            let c = LambConfig {
                lr,
                beta1,
                beta2,
                eps,
                weight_decay,
            };
            optim::lamb_step(Isa::detect(), threads, &mut st, &c);
        } else {
            optim::adam_step(Isa::detect(), threads, &mut st, &c);
            optim::adam_step_bf16(Isa::detect(), threads, &mut bf, &c);
        }
    });
    Ok(())
}
