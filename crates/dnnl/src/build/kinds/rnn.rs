//! RNN cells (vanilla RNN, LSTM, GRU, linear-before-reset GRU), forward and backward: each
//! tensor the log lists, with oneDNN's dims for it (from `lLtTmbNsicSslcSdhcHdicD` and the
//! cell's gate count); tensors the log does not list (no initial state, no peephole) are left
//! out, as in the logged primitive.

use super::forward_or_backward;
use crate::api::rnn_direction as dir;
use crate::api::Handle;
use crate::build::{alg, find, prop, Built};
use profilednn_cost::RnnProblem;
use profilednn_model::Primitive;
use profilednn_replay::SkipReason;
use std::ffi::c_int;
use std::ptr::null_mut;

/// oneDNN's dims of RNN tensor `name` (`src_layer`, `diff_wei_iter`, …).
fn dims(q: &RnnProblem, name: &str) -> Vec<i64> {
    let [l, d, t, n] = [q.layers, q.directions, q.iters, q.mb].map(|x| x as i64);
    let [sic, slc, dhc, dic] = [q.sic, q.slc, q.dhc, q.dic].map(|x| x as i64);
    let g = q.gates as i64;
    match name.strip_prefix("diff_").unwrap_or(name) {
        "src_layer" => vec![t, n, slc],
        "src_iter" => vec![l, d, n, sic],
        "src_iter_c" => vec![l, d, n, dhc],
        "wei_layer" => vec![l, d, slc, g, dhc],
        "wei_iter" => vec![l, d, sic, g, dhc],
        "wei_peephole" => vec![l, d, 3, dhc],
        "wei_proj" => vec![l, d, dhc, dic],
        "bias" => vec![l, d, g + i64::from(q.lbr), dhc],
        "dst_layer" => vec![t, n, dic * if q.concat { 2 } else { 1 }],
        "dst_iter" => vec![l, d, n, dic],
        _ => vec![l, d, n, dhc], // dst_iter_c
    }
}

/// The tensors in the C API's order: forward ones, then (backward) their gradients.
const TENSORS: [&str; 11] = [
    "src_layer",
    "src_iter",
    "src_iter_c",
    "wei_layer",
    "wei_iter",
    "wei_peephole",
    "wei_proj",
    "bias",
    "dst_layer",
    "dst_iter",
    "dst_iter_c",
];

/// Builds the logged RNN primitive: its tensors, then the cell's own entry points.
pub(crate) fn rebuild(b: &mut Built, p: &Primitive) -> Result<(), SkipReason> {
    let q = RnnProblem::parse(p).map_err(|e| SkipReason::Problem(e.reason))?;
    let cell = p.aux_value("alg").unwrap_or("").to_string();
    let direction = match p.aux_value("direction").unwrap_or("") {
        "unidirectional_left2right" => dir::LEFT2RIGHT,
        "unidirectional_right2left" => dir::RIGHT2LEFT,
        "bidirectional_concat" => dir::BIDIRECTIONAL_CONCAT,
        "bidirectional_sum" => dir::BIDIRECTIONAL_SUM,
        _ => return Err(SkipReason::Missing("direction")),
    };
    let (fwd, diff) = descriptors(b, p, &q, &cell)?;
    let attr = b.attr(p, &dims(&q, "dst_layer"))?;
    let d = b.d;
    let backward_prop = if p.prop_kind.is_forward() {
        0
    } else {
        prop(d, &p.prop_kind)?
    };
    let activation: c_int = match p.aux_value("activation") {
        Some(a) if cell == "vanilla_rnn" => alg(d, a)?,
        _ => 0,
    };
    let c = Cell {
        fwd,
        diff,
        direction,
        backward_prop,
        activation,
        attr,
    };
    match cell.as_str() {
        "vanilla_rnn" => vanilla_rnn(b, p, &c),
        "vanilla_lstm" => lstm(b, p, &c),
        "vanilla_gru" => gru(b, p, &c, false),
        "lbr_gru" => gru(b, p, &c, true),
        other => Err(SkipReason::KindNotReplayed(format!("rnn {other}"))),
    }
}

/// What every cell's descriptor calls take besides the cell's own entry points.
struct Cell {
    /// Forward tensors in [`TENSORS`]' order (null where the log lists none).
    fwd: [Handle; 11],
    /// Their gradients (backward only).
    diff: [Handle; 11],
    direction: c_int,
    backward_prop: c_int,
    /// The vanilla RNN's activation (0 for the other cells).
    activation: c_int,
    attr: Handle,
}

const STEPS: [&str; 3] = ["rnn forward", "rnn hint", "rnn backward"];

/// The memory descriptors of every tensor the log lists, forward and gradient.
fn descriptors(
    b: &mut Built,
    p: &Primitive,
    q: &RnnProblem,
    cell: &str,
) -> Result<([Handle; 11], [Handle; 11]), SkipReason> {
    let dt = b.dt.clone();
    let mut fwd = [null_mut(); 11];
    let mut diff = [null_mut(); 11];
    for (i, name) in TENSORS.iter().enumerate() {
        if let Some(m) = find(p, &[name]) {
            fwd[i] = b.md(&dims(q, name), Some(m), &dt)?;
        }
        let dname = format!("diff_{name}");
        if let Some(m) = find(p, &[dname.as_str()]) {
            diff[i] = b.md(&dims(q, name), Some(m), &dt)?;
        }
    }
    // An LSTM's cell state comes with its hidden state; verbose lists only the hidden one
    // (`src_iter`, `dst_iter`). The cell state is f32 unless the data is (benchdnn's configs).
    if cell == "vanilla_lstm" {
        for (h, c) in [(1, 2), (9, 10)] {
            if !fwd[h].is_null() && fwd[c].is_null() {
                let m = find(p, &[TENSORS[h]]);
                let cdt = m
                    .map(|m| m.data_type.to_string())
                    .unwrap_or_else(|| dt.clone());
                let cdt = if cdt == "f32" || cdt == "f16" {
                    cdt
                } else {
                    "f32".to_string()
                };
                fwd[c] = b.md(&dims(q, TENSORS[c]), None, &cdt)?;
                if !diff[h].is_null() {
                    diff[c] = b.md(&dims(q, TENSORS[c]), None, "f32")?;
                }
            }
        }
    }
    Ok((fwd, diff))
}

/// A vanilla RNN cell (its activation from the log).
fn vanilla_rnn(b: &mut Built, p: &Primitive, c: &Cell) -> Result<(), SkipReason> {
    let d = b.d;
    let (api, engine, attr) = (&d.api, b.engine, c.attr);
    let [sl, si, _, wl, wi, _, _, bi, dl, di, _] = c.fwd;
    let [dsl, dsi, _, dwl, dwi, _, _, dbi, ddl, ddi, _] = c.diff;
    let (direction, backward_prop) = (c.direction, c.backward_prop);
    // SAFETY (every call below): oneDNN C API calls on descriptor, attribute and hint handles
    // this builder created and owns until drop (null for the tensors the log does not list,
    // which the API accepts); `pd` is a live field.
    let activation = c.activation;
    forward_or_backward(
        b,
        p,
        attr,
        STEPS,
        // SAFETY: see above.
        |pd, prop, attr| unsafe {
            (api.dnnl_vanilla_rnn_forward_primitive_desc_create)(
                pd, engine, prop, activation, direction, sl, si, wl, wi, bi, dl, di, 0, 0.0, 0.0,
                attr,
            )
        },
        // SAFETY: see above.
        |pd, hint| unsafe {
            (api.dnnl_vanilla_rnn_backward_primitive_desc_create)(
                pd,
                engine,
                backward_prop,
                activation,
                direction,
                sl,
                si,
                wl,
                wi,
                bi,
                dl,
                di,
                dsl,
                dsi,
                dwl,
                dwi,
                dbi,
                ddl,
                ddi,
                0,
                0.0,
                0.0,
                hint,
                attr,
            )
        },
    )
}

/// An LSTM cell (with peephole and projection weights when the log lists them).
fn lstm(b: &mut Built, p: &Primitive, c: &Cell) -> Result<(), SkipReason> {
    let d = b.d;
    let (api, engine, attr) = (&d.api, b.engine, c.attr);
    let [sl, si, sc, wl, wi, wp, wj, bi, dl, di, dc] = c.fwd;
    let [dsl, dsi, dsc, dwl, dwi, dwp, dwj, dbi, ddl, ddi, ddc] = c.diff;
    let (direction, backward_prop) = (c.direction, c.backward_prop);
    // SAFETY (every call below): oneDNN C API calls on descriptor, attribute and hint handles
    // this builder created and owns until drop (null for the tensors the log does not list,
    // which the API accepts); `pd` is a live field.
    forward_or_backward(
        b,
        p,
        attr,
        STEPS,
        // SAFETY: see above.
        |pd, prop, attr| unsafe {
            (api.dnnl_lstm_forward_primitive_desc_create)(
                pd, engine, prop, direction, sl, si, sc, wl, wi, wp, wj, bi, dl, di, dc, 0, attr,
            )
        },
        // SAFETY: see above.
        |pd, hint| unsafe {
            (api.dnnl_lstm_backward_primitive_desc_create)(
                pd,
                engine,
                backward_prop,
                direction,
                sl,
                si,
                sc,
                wl,
                wi,
                wp,
                wj,
                bi,
                dl,
                di,
                dc,
                dsl,
                dsi,
                dsc,
                dwl,
                dwi,
                dwp,
                dwj,
                dbi,
                ddl,
                ddi,
                ddc,
                0,
                hint,
                attr,
            )
        },
    )
}

/// A GRU cell, or (`lbr`) a linear-before-reset GRU: the same arguments, other entry points.
fn gru(b: &mut Built, p: &Primitive, c: &Cell, lbr: bool) -> Result<(), SkipReason> {
    let d = b.d;
    let (api, engine, attr) = (&d.api, b.engine, c.attr);
    let [sl, si, _, wl, wi, _, _, bi, dl, di, _] = c.fwd;
    let [dsl, dsi, _, dwl, dwi, _, _, dbi, ddl, ddi, _] = c.diff;
    let (direction, backward_prop) = (c.direction, c.backward_prop);
    // SAFETY (every call below): oneDNN C API calls on descriptor, attribute and hint handles
    // this builder created and owns until drop (null for the tensors the log does not list,
    // which the API accepts); `pd` is a live field.
    let (f, bw) = if lbr {
        (
            api.dnnl_lbr_gru_forward_primitive_desc_create,
            api.dnnl_lbr_gru_backward_primitive_desc_create,
        )
    } else {
        (
            api.dnnl_gru_forward_primitive_desc_create,
            api.dnnl_gru_backward_primitive_desc_create,
        )
    };
    forward_or_backward(
        b,
        p,
        attr,
        STEPS,
        // SAFETY: see above.
        |pd, prop, attr| unsafe {
            f(
                pd, engine, prop, direction, sl, si, wl, wi, bi, dl, di, 0, attr,
            )
        },
        // SAFETY: see above.
        |pd, hint| unsafe {
            bw(
                pd,
                engine,
                backward_prop,
                direction,
                sl,
                si,
                wl,
                wi,
                bi,
                dl,
                di,
                dsl,
                dsi,
                dwl,
                dwi,
                dbi,
                ddl,
                ddi,
                0,
                hint,
                attr,
            )
        },
    )
}
