//! Convolutions as PyTorch records them when they run outside oneDNN (`torch.backends.mkldnn`
//! off, a dtype or layout oneDNN does not take): `conv1d/2d/3d`, `convolution`, `_convolution`,
//! the ATen kernels under them (`thnn_conv2d`, `_slow_conv2d_forward`, …) and
//! `convolution_backward`. The count is the oneDNN model's, the same code
//! ([`ConvProblem::flops`], benchdnn's `2·mb·oc·ic/g·sp_ops`: a multiply-add is 2 operations,
//! kernel taps that fall in the padding are not counted), on the problem the trace describes:
//! - forward, that count, a bias one extra operation per output element;
//! - backward, that count once for the input's gradient and once for the weight's, as its
//!   `output_mask` asks (`[True, True, True]` → 2×), the bias's gradient one addition per
//!   output element.
//!
//! The output's spatial size is not in the trace's shapes: it comes from the stride, padding
//! and dilation in `Concrete Inputs`, `⌊(in + 2p − d(k − 1) − 1) / s⌋ + 1` (transposed:
//! `(in − 1)s − 2p + d(k − 1) + output_padding + 1`). Without them the op is uncosted.
//! Bytes: input, weight and bias read once, output written once; backward reads the output's
//! gradient, input and weight and writes the gradients asked for.

use super::tensor::{
    all_bytes, bytes, count, dims, first_element_bytes, is_tensor, output_mask, precision,
};
use super::{Model, OpCall};
use crate::count::{product, N};
use crate::kinds::conv::{ConvProblem, SpatialDim};
use crate::{unknown, Cost, Unknown};

pub(super) fn model(bare: &str) -> Option<Model> {
    Some(match bare {
        "conv1d" | "conv2d" | "conv3d" => conv_nd,
        "convolution" | "_convolution" => convolution,
        "conv_transpose1d" | "conv_transpose2d" | "conv_transpose3d" => conv_transpose_nd,
        "thnn_conv2d" | "_slow_conv2d_forward" | "slow_conv3d" | "slow_conv3d_forward" => thnn,
        "convolution_backward" => backward,
        _ => return None,
    })
}

/// Where a signature keeps its geometry: the argument index of each list, `None` when it has
/// none (`thnn` kernels take no dilation: 1).
struct Geometry {
    stride: usize,
    padding: usize,
    dilation: Option<usize>,
    /// `groups`' index (`None`: 1).
    groups: Option<usize>,
    /// Whether the convolution is transposed, and where its `output_padding` is.
    transposed: Transposed,
}

/// A signature's transposition: never, always (`conv_transpose*`), or by its flag.
enum Transposed {
    No,
    Yes {
        output_padding: usize,
    },
    /// `convolution(…, transposed, output_padding, …)`: read from the concrete input.
    Flag {
        at: usize,
        output_padding: usize,
    },
}

/// An integer list from `Concrete Inputs` (`[2, 2]`, or one number for every dimension).
fn int_list(op: &OpCall, i: usize, n: usize, what: &str) -> Result<Vec<u64>, Unknown> {
    let text = op.concrete.get(i).map(|s| s.trim()).unwrap_or("");
    let bad = || {
        unknown(format!(
            "{}: no {what} in the trace's Concrete Inputs (argument {i}: {text:?})",
            op.name
        ))
    };
    let inner = text.trim_start_matches('[').trim_end_matches(']');
    if inner.is_empty() {
        return Err(bad());
    }
    let v: Vec<u64> = inner
        .split(',')
        .map(|x| x.trim().parse::<u64>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    match v.len() {
        1 => Ok(vec![v[0]; n]),
        l if l == n => Ok(v),
        _ => Err(bad()),
    }
}

/// The spatial dimensions (input, output from the geometry, kernel, stride, dilation and
/// padding, as oneDNN's descriptor gives them), and whether the convolution is transposed.
fn output_spatial(
    op: &OpCall,
    g: &Geometry,
    input: &[u64],
    kernel: &[u64],
) -> Result<(Vec<SpatialDim>, bool), Unknown> {
    let n = input.len();
    let s = int_list(op, g.stride, n, "stride")?;
    let p = int_list(op, g.padding, n, "padding")?;
    let d = match g.dilation {
        Some(i) => int_list(op, i, n, "dilation")?,
        None => vec![1; n],
    };
    let transposed = match g.transposed {
        Transposed::No => None,
        Transposed::Yes { output_padding } => Some(output_padding),
        Transposed::Flag { at, output_padding } => match op.concrete.get(at).map(|s| s.trim()) {
            Some("True") => Some(output_padding),
            Some("False") => None,
            _ => return Err(unknown(format!("{}: no `transposed` flag", op.name))),
        },
    };
    let op_pad = match transposed {
        Some(i) => Some(int_list(op, i, n, "output_padding")?),
        None => None,
    };
    let out = (0..n)
        .map(|i| {
            // Checked throughout: every number is text from the trace.
            let span = d[i].checked_mul(kernel[i].saturating_sub(1));
            let pad2 = p[i].checked_mul(2);
            let out = match (&op_pad, span, pad2) {
                (None, Some(span), Some(pad2)) => input[i]
                    .checked_add(pad2)
                    .and_then(|x| x.checked_sub(span.checked_add(1)?))
                    .and_then(|x| x.checked_div(s[i]))
                    .map(|x| x + 1),
                (Some(op_pad), Some(span), Some(pad2)) => input[i]
                    .checked_sub(1)
                    .and_then(|x| x.checked_mul(s[i]))
                    .and_then(|x| x.checked_add(span)?.checked_add(op_pad[i])?.checked_add(1))
                    .and_then(|x| x.checked_sub(pad2)),
                _ => None,
            }
            .filter(|&o| o > 0);
            let o =
                out.ok_or_else(|| unknown(format!("{}: an empty or absurd output", op.name)))?;
            Ok(SpatialDim {
                i: input[i],
                o,
                k: kernel[i],
                s: s[i],
                // oneDNN's dilation: 0 is dense.
                d: d[i].saturating_sub(1),
                p: p[i],
            })
        })
        .collect::<Result<Vec<SpatialDim>, Unknown>>()?;
    Ok((out, transposed.is_some()))
}

/// `groups` from `Concrete Inputs` (1 where the signature has none).
fn groups(op: &OpCall, at: Option<usize>) -> Result<u64, Unknown> {
    let Some(i) = at else {
        return Ok(1);
    };
    op.concrete
        .get(i)
        .and_then(|s| s.trim().parse::<u64>().ok())
        .filter(|&g| g > 0)
        .ok_or_else(|| {
            unknown(format!(
                "{}: no groups in the trace's Concrete Inputs",
                op.name
            ))
        })
}

/// The oneDNN problem of input `x`, weight `w` (`[O, C/g, k…]`, transposed `[C, O/g, k…]`).
fn problem(
    op: &OpCall,
    x: &[u64],
    w: &[u64],
    spatial: Vec<SpatialDim>,
    transposed: bool,
    g: u64,
) -> Result<ConvProblem, Unknown> {
    // The weight holds one group's channels: [O, C/g, k…], transposed [C, O/g, k…].
    let consistent = if transposed {
        w[0] == x[1]
    } else {
        N::from(w[1]) * g == N::from(x[1])
    };
    if !consistent {
        return Err(unknown(format!(
            "{}: weight {w:?} does not fit input {x:?} in {g} group(s)",
            op.name
        )));
    }
    let oc = if transposed {
        N::from(w[1]) * g
    } else {
        N::from(w[0])
    };
    Ok(ConvProblem {
        g,
        mb: x[0],
        ic: x[1],
        oc: count(op, oc, "channels")?,
        spatial,
        deconv: transposed,
    })
}

/// The problem's count, a `u64` or uncosted.
fn ops(op: &OpCall, p: &ConvProblem) -> Result<N, Unknown> {
    if !p.ic.is_multiple_of(p.g) {
        return Err(unknown(format!(
            "{}: {} channels in {} groups",
            op.name, p.ic, p.g
        )));
    }
    Ok(N::from(p.flops().map_err(|_| {
        unknown(format!("{}: too many operations to count", op.name))
    })?))
}

/// `(input [N, C, spatial…], weight [O, C/g, k…])`, checked to agree in rank.
fn tensors(op: &OpCall, input: usize, weight: usize) -> Result<(Vec<u64>, Vec<u64>), Unknown> {
    let (x, w) = (dims(op, input)?, dims(op, weight)?);
    if x.len() < 3 || w.len() != x.len() {
        return Err(unknown(format!(
            "{}: input {x:?} and weight {w:?} are not [N, C, spatial…] and [O, C/g, k…]",
            op.name
        )));
    }
    Ok((x, w))
}

/// The forward cost with the geometry `g`: input at argument 0, weight 1, the bias at `bias`.
fn forward_at(op: &OpCall, g: &Geometry, bias: usize) -> Result<Cost, Unknown> {
    let (x, w) = tensors(op, 0, 1)?;
    let (spatial, transposed) = output_spatial(op, g, &x[2..], &w[2..])?;
    let out: Vec<u64> = spatial.iter().map(|s| s.o).collect();
    let p = problem(op, &x, &w, spatial, transposed, groups(op, g.groups)?)?;
    let flops = ops(op, &p)?;
    let out_elems = N::from(x[0]) * p.oc * product(&out);
    let extra = if is_tensor(op, bias) {
        out_elems
    } else {
        N::ZERO
    };
    Ok(Cost {
        flops: count(op, flops, "flops")?,
        extra_flops: count(op, extra, "flops")?,
        bytes: count(
            op,
            all_bytes(op)? + out_elems * first_element_bytes(op),
            "bytes",
        )?,
        precision: precision(op),
    })
}

fn forward(op: &OpCall, g: &Geometry) -> Result<Cost, Unknown> {
    forward_at(op, g, 2)
}

/// `conv2d(input, weight, bias, stride, padding, dilation, groups)`.
fn conv_nd(op: &OpCall) -> Result<Cost, Unknown> {
    let g = Geometry {
        stride: 3,
        padding: 4,
        dilation: Some(5),
        groups: Some(6),
        transposed: Transposed::No,
    };
    forward(op, &g)
}

/// `conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)`.
fn conv_transpose_nd(op: &OpCall) -> Result<Cost, Unknown> {
    let g = Geometry {
        stride: 3,
        padding: 4,
        dilation: Some(7),
        groups: Some(6),
        transposed: Transposed::Yes { output_padding: 5 },
    };
    forward(op, &g)
}

/// `convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
/// groups)`, and `_convolution` (the same first nine, then flags).
fn convolution(op: &OpCall) -> Result<Cost, Unknown> {
    let g = Geometry {
        stride: 3,
        padding: 4,
        dilation: Some(5),
        groups: Some(8),
        transposed: Transposed::Flag {
            at: 6,
            output_padding: 7,
        },
    };
    forward(op, &g)
}

/// `thnn_conv2d(input, weight, kernel_size, bias, stride, padding)`: the bias is argument 3.
fn thnn(op: &OpCall) -> Result<Cost, Unknown> {
    let g = Geometry {
        stride: 4,
        padding: 5,
        dilation: None,
        groups: None,
        transposed: Transposed::No,
    };
    forward_at(op, &g, 3)
}

/// `convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
/// transposed, output_padding, groups, output_mask)`: the output's gradient gives the output's
/// size, so no geometry is needed; `output_mask` says which gradients are computed.
fn backward(op: &OpCall) -> Result<Cost, Unknown> {
    let dy = dims(op, 0)?;
    let (x, w) = tensors(op, 1, 2)?;
    if dy.len() != x.len() {
        return Err(unknown(format!(
            "{}: the output's gradient {dy:?} is not like the input {x:?}",
            op.name
        )));
    }
    let transposed = match op.concrete.get(7).map(|s| s.trim()) {
        Some("True") => true,
        Some("False") => false,
        _ => return Err(unknown(format!("{}: no `transposed` flag", op.name))),
    };
    let g = Geometry {
        stride: 4,
        padding: 5,
        dilation: Some(6),
        groups: Some(9),
        transposed: if transposed {
            Transposed::Yes { output_padding: 8 }
        } else {
            Transposed::No
        },
    };
    let (spatial, _) = output_spatial(op, &g, &x[2..], &w[2..])?;
    if spatial.iter().map(|s| s.o).ne(dy[2..].iter().copied()) {
        return Err(unknown(format!(
            "{}: the geometry gives another output than the gradient's {dy:?}",
            op.name
        )));
    }
    let p = problem(op, &x, &w, spatial, transposed, groups(op, g.groups)?)?;
    let mask = output_mask(op, 10, 3);
    let wants = |i: usize| mask[i];
    let one = ops(op, &p)?;
    let products = u64::from(wants(0)) + u64::from(wants(1));
    // `bias_sizes` is `[O]` for a biased convolution, `None` (or empty) without a bias.
    let biased = wants(2)
        && op
            .concrete
            .get(3)
            .is_some_and(|s| s.trim().starts_with('[') && s.trim() != "[]");
    let mut written = N::ZERO;
    if wants(0) {
        written += bytes(op, 1)?;
    }
    if wants(1) {
        written += bytes(op, 2)?;
    }
    let (bias_flops, bias_bytes) = if biased {
        (product(&dy), N::from(p.oc) * first_element_bytes(op))
    } else {
        (N::ZERO, N::ZERO)
    };
    Ok(Cost {
        flops: count(op, one * products, "flops")?,
        extra_flops: count(op, bias_flops, "flops")?,
        bytes: count(op, all_bytes(op)? + written + bias_bytes, "bytes")?,
        precision: precision(op),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{cost, family, Family, OpCall};

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// ResNet-18's first convolution as the trace recorded it with oneDNN off: input
    /// [2, 3, 160, 160], weight [64, 3, 7, 7], stride 2, padding 3, no bias. Output
    /// ⌊(160 + 6 − 6 − 1) / 2⌋ + 1 = 80. Per dimension 80·7 taps, less those in the padding
    /// (input index 2o + k − 3 outside [0, 160): 3 at o = 0, 1 at o = 1, 2 at o = 79): 554;
    /// 2·2·64·3·554² = 235,711,488 operations.
    #[test]
    fn forward_by_hand() {
        let flops = 2 * 2 * 64 * 3 * 554 * 554;
        let bytes = 4 * (2 * 3 * 160 * 160 + 64 * 3 * 7 * 7 + 2 * 64 * 80 * 80);
        let dims = [
            vec![2, 3, 160, 160],
            vec![64, 3, 7, 7],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
        ];
        let types = s(&[
            "float",
            "float",
            "",
            "ScalarList",
            "ScalarList",
            "ScalarList",
            "Scalar",
        ]);
        let concrete = s(&["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "1"]);
        let c = cost(&OpCall {
            name: "aten::conv2d",
            dims: &dims,
            types: &types,
            concrete: &concrete,
            ..Default::default()
        })
        .unwrap();
        assert_eq!((c.flops, c.extra_flops, c.bytes), (flops, 0, bytes));
        assert_eq!(family("aten::conv2d"), Some(Family::Convolution));
        // ATen's own kernel under it, with its other argument order.
        let dims = [
            vec![2, 3, 160, 160],
            vec![64, 3, 7, 7],
            vec![],
            vec![],
            vec![],
            vec![],
        ];
        let types = s(&[
            "float",
            "float",
            "ScalarList",
            "",
            "ScalarList",
            "ScalarList",
        ]);
        let concrete = s(&["", "", "[7, 7]", "", "[2, 2]", "[3, 3]"]);
        let c = cost(&OpCall {
            name: "aten::_slow_conv2d_forward",
            dims: &dims,
            types: &types,
            concrete: &concrete,
            ..Default::default()
        })
        .unwrap();
        assert_eq!((c.flops, c.bytes), (flops, bytes));
        // Without the geometry (a trace without concrete inputs): uncosted, never guessed.
        assert!(cost(&OpCall {
            name: "aten::_slow_conv2d_forward",
            dims: &dims,
            types: &types,
            ..Default::default()
        })
        .is_err());
    }

    /// A transposed convolution: input [1, 8, 5, 5], weight [8, 4, 3, 3], stride 2, padding 1,
    /// output_padding 1: output (5 − 1)·2 − 2 + 2 + 1 + 1 = 10. Each input point scatters the
    /// kernel, less the taps that land in the padding (2i + k − 1 outside [0, 10): only i = k =
    /// 0): 14 per dimension, 2·1·4·8·14² operations; a bias of 4 channels, one per output
    /// element.
    #[test]
    fn transposed_by_hand() {
        let dims = [
            vec![1, 8, 5, 5],
            vec![8, 4, 3, 3],
            vec![4],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
        ];
        let types = s(&[
            "float",
            "float",
            "float",
            "ScalarList",
            "ScalarList",
            "ScalarList",
            "Scalar",
            "ScalarList",
            "Scalar",
        ]);
        let concrete = s(&[
            "", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[1, 1]", "1",
        ]);
        let c = cost(&OpCall {
            name: "aten::convolution",
            dims: &dims,
            types: &types,
            concrete: &concrete,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(c.flops, 2 * 4 * 8 * 14 * 14);
        assert_eq!(c.extra_flops, 4 * 10 * 10);
        assert_eq!(c.bytes, 4 * (8 * 25 + 8 * 4 * 9 + 4 + 4 * 100));
    }

    /// The head's last convolution's backward, from the trace: dY [2, 819, 10, 10], X
    /// [2, 256, 10, 10], W [819, 256, 3, 3], stride 1, padding 1, a bias, every gradient asked
    /// for: twice 2·2·819·256·28² (10·3 taps per dimension less one at each edge), the bias's
    /// gradient 2·819·100 additions.
    #[test]
    fn backward_by_hand() {
        let one: u64 = 2 * 2 * 819 * 256 * 28 * 28;
        let (dy, x, w) = (2 * 819 * 100 * 4, 2 * 256 * 100 * 4, 819 * 256 * 9 * 4);
        let dims = [
            vec![2, 819, 10, 10],
            vec![2, 256, 10, 10],
            vec![819, 256, 3, 3],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
        ];
        let types = s(&[
            "float",
            "float",
            "float",
            "ScalarList",
            "ScalarList",
            "ScalarList",
            "ScalarList",
            "Scalar",
            "ScalarList",
            "Scalar",
            "ScalarList",
        ]);
        let mut concrete = s(&[
            "",
            "",
            "",
            "[819]",
            "[1, 1]",
            "[1, 1]",
            "[1, 1]",
            "False",
            "[0, 0]",
            "1",
            "[True, True, True]",
        ]);
        let call = |concrete: &[String]| {
            cost(&OpCall {
                name: "aten::convolution_backward",
                dims: &dims,
                types: &types,
                concrete,
                ..Default::default()
            })
            .unwrap()
        };
        let c = call(&concrete);
        assert_eq!((c.flops, c.extra_flops), (2 * one, 2 * 819 * 100));
        assert_eq!(c.bytes, dy + x + w + x + w + 819 * 4);
        // A frozen layer's input gradient only.
        concrete[10] = "[True, False, False]".into();
        let c = call(&concrete);
        assert_eq!((c.flops, c.extra_flops, c.bytes), (one, 0, dy + x + w + x));
        // Without its `transposed` flag, uncosted (never guessed).
        concrete[7] = String::new();
        assert!(cost(&OpCall {
            name: "aten::convolution_backward",
            dims: &dims,
            types: &types,
            concrete: &concrete,
            ..Default::default()
        })
        .is_err());
    }

    /// Absurd geometry: no panic, no wrapped count.
    #[test]
    fn absurd_geometry_is_uncosted() {
        let dims = [vec![1, 1, 4, 4], vec![1, 1, 9, 9], vec![]];
        let types = s(&["float", "float", ""]);
        for concrete in [
            s(&["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "1"]), // kernel larger than the input
            s(&["", "", "", "[0, 0]", "[0, 0]", "[1, 1]", "1"]), // stride 0
            s(&[
                "",
                "",
                "",
                "[1, 1]",
                "[18446744073709551615, 0]",
                "[1, 1]",
                "1",
            ]),
            // A geometry that fits (padding 4), but 1 input channel in 2 groups.
            s(&["", "", "", "[1, 1]", "[4, 4]", "[1, 1]", "2"]),
        ] {
            assert!(cost(&OpCall {
                name: "aten::conv2d",
                dims: &dims,
                types: &types,
                concrete: &concrete,
                ..Default::default()
            })
            .is_err());
        }
    }
}
