//! RNN cells (vanilla RNN, LSTM, GRU, linear-before-reset GRU), forward and backward: each
//! tensor the log lists, with oneDNN's dims for it (from `lLtTmbNsicSslcSdhcHdicD` and the
//! cell's gate count); tensors the log does not list (no initial state, no peephole) are left
//! out, as in the logged primitive.

use super::forward_or_backward;
use crate::native::api::rnn_direction as dir;
use crate::native::build::{alg, find, prop, Built};
use crate::native::SkipReason;
use profilednn_cost::RnnProblem;
use profilednn_model::Primitive;
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
    let dt = b.dt.clone();
    let mut fwd = [null_mut(); 11];
    let mut diff = [null_mut(); 11];
    for (i, name) in TENSORS.iter().enumerate() {
        if let Some(m) = find(p, &[name]) {
            fwd[i] = b.md(&dims(&q, name), Some(m), &dt)?;
        }
        let dname = format!("diff_{name}");
        if let Some(m) = find(p, &[dname.as_str()]) {
            diff[i] = b.md(&dims(&q, name), Some(m), &dt)?;
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
                fwd[c] = b.md(&dims(&q, TENSORS[c]), None, &cdt)?;
                if !diff[h].is_null() {
                    diff[c] = b.md(&dims(&q, TENSORS[c]), None, "f32")?;
                }
            }
        }
    }
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
    let (api, engine) = (&d.api, b.engine);
    let [sl, si, sc, wl, wi, wp, wj, bi, dl, di, dc] = fwd;
    let [dsl, dsi, dsc, dwl, dwi, dwp, dwj, dbi, ddl, ddi, ddc] = diff;
    let steps = ["rnn forward", "rnn hint", "rnn backward"];
    // SAFETY (every call below): oneDNN C API calls on descriptor, attribute and hint handles
    // this builder created and owns until drop (null for the tensors the log does not list,
    // which the API accepts); `pd` is a live field.
    match cell.as_str() {
        "vanilla_rnn" => forward_or_backward(
            b,
            p,
            attr,
            steps,
            // SAFETY: see above.
            |pd, prop, attr| unsafe {
                (api.dnnl_vanilla_rnn_forward_primitive_desc_create)(
                    pd, engine, prop, activation, direction, sl, si, wl, wi, bi, dl, di, 0, 0.0,
                    0.0, attr,
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
        ),
        "vanilla_lstm" => forward_or_backward(
            b,
            p,
            attr,
            steps,
            // SAFETY: see above.
            |pd, prop, attr| unsafe {
                (api.dnnl_lstm_forward_primitive_desc_create)(
                    pd, engine, prop, direction, sl, si, sc, wl, wi, wp, wj, bi, dl, di, dc, 0,
                    attr,
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
        ),
        "vanilla_gru" | "lbr_gru" => {
            let lbr = cell == "lbr_gru";
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
                steps,
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
        other => Err(SkipReason::KindNotReplayed(format!("rnn {other}"))),
    }
}
