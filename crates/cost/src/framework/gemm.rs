//! The GEMM family: `mm`, `addmm`, `bmm`, `baddbmm`, `matmul`, `linear`, `mv`. A multiply-add is 2
//! operations: `2·batch·M·K·N` (benchdnn's matmul count); a bias or `beta·C` added is
//! `extra_flops` (one per output element); bytes are the inputs read once and the output
//! `batch·M·N` written once, at the first input's type. Autograd's backward nodes
//! (`AddmmBackward0`, `MmBackward0`) run these same ops, and are costed through them.

use super::tensor::{all_bytes, count, dims, first_element_bytes, is_tensor, precision};
use super::{Model, OpCall};
use crate::count::{product, N};
use crate::{unknown, Cost, Unknown};

pub(super) fn model(bare: &str) -> Option<Model> {
    Some(match bare {
        "mm" => mm,
        "addmm" => addmm,
        "bmm" => bmm,
        "baddbmm" => baddbmm,
        "matmul" => matmul,
        "linear" => linear,
        "mv" => mv,
        _ => return None,
    })
}

/// `batch·M·K·N` with the bias's extra, as a cost.
fn gemm(op: &OpCall, batch: N, m: u64, k: u64, n: u64, biased: bool) -> Result<Cost, Unknown> {
    let out = batch * m * n;
    let flops = count(op, out * k * 2u64, "flops")?;
    let extra = if biased { count(op, out, "flops")? } else { 0 };
    let bytes = all_bytes(op)? + out * first_element_bytes(op);
    Ok(Cost {
        flops,
        extra_flops: extra,
        bytes: count(op, bytes, "bytes")?,
        precision: precision(op),
    })
}

fn shape_error(op: &OpCall, what: &str) -> Unknown {
    unknown(format!("{}: {what}", op.name))
}

/// `[rows, cols]` of a matrix argument.
fn matrix(op: &OpCall, i: usize) -> Result<(u64, u64), Unknown> {
    match dims(op, i)?[..] {
        [r, c] => Ok((r, c)),
        _ => Err(shape_error(op, &format!("argument {i} is not a matrix"))),
    }
}

/// `mm(self [M, K], mat2 [K, N])`.
fn mm(op: &OpCall) -> Result<Cost, Unknown> {
    let ((m, k), (_, n)) = (matrix(op, 0)?, matrix(op, 1)?);
    gemm(op, N::ONE, m, k, n, false)
}

/// `addmm(self (the bias), mat1 [M, K], mat2 [K, N], beta, alpha)`.
fn addmm(op: &OpCall) -> Result<Cost, Unknown> {
    let ((m, k), (_, n)) = (matrix(op, 1)?, matrix(op, 2)?);
    gemm(op, N::ONE, m, k, n, is_tensor(op, 0))
}

/// `[batch, rows, cols]` of a batched-matrix argument.
fn batched(op: &OpCall, i: usize) -> Result<(u64, u64, u64), Unknown> {
    match dims(op, i)?[..] {
        [b, r, c] => Ok((b, r, c)),
        _ => Err(shape_error(
            op,
            &format!("argument {i} is not a batch of matrices"),
        )),
    }
}

/// `bmm(self [b, M, K], mat2 [b, K, N])`.
fn bmm(op: &OpCall) -> Result<Cost, Unknown> {
    let ((b, m, k), (_, _, n)) = (batched(op, 0)?, batched(op, 1)?);
    gemm(op, N::from(b), m, k, n, false)
}

/// `baddbmm(self [b, M, N], batch1 [b, M, K], batch2 [b, K, N], beta, alpha)`.
fn baddbmm(op: &OpCall) -> Result<Cost, Unknown> {
    let ((b, m, k), (_, _, n)) = (batched(op, 1)?, batched(op, 2)?);
    gemm(op, N::from(b), m, k, n, is_tensor(op, 0))
}

/// `mv(self [M, K], vec [K])`.
fn mv(op: &OpCall) -> Result<Cost, Unknown> {
    let (m, k) = matrix(op, 0)?;
    gemm(op, N::ONE, m, k, 1, false)
}

/// `linear(input [..., K], weight [N, K], bias [N]?)`: `M` is every leading dimension of the
/// input together.
fn linear(op: &OpCall) -> Result<Cost, Unknown> {
    let x = dims(op, 0)?;
    let Some((&k, lead)) = x.split_last() else {
        return Err(shape_error(op, "a 0-dimensional input"));
    };
    let (n, wk) = matrix(op, 1)?;
    if wk != k {
        return Err(shape_error(
            op,
            &format!("input's last dimension {k} is not the weight's {wk}"),
        ));
    }
    let m = count(op, product(lead), "rows")?;
    gemm(op, N::ONE, m, k, n, is_tensor(op, 2))
}

/// `matmul(self, other)`, numpy's rules: a 1-D argument is a vector (`M` or `N` is 1), leading
/// dimensions broadcast into the batch.
fn matmul(op: &OpCall) -> Result<Cost, Unknown> {
    let (a, b) = (dims(op, 0)?, dims(op, 1)?);
    let (a_lead, m, k) = match a.len() {
        0 => return Err(shape_error(op, "a 0-dimensional argument")),
        1 => (&a[..0], 1, a[0]),
        n => (&a[..n - 2], a[n - 2], a[n - 1]),
    };
    let (b_lead, kb, n) = match b.len() {
        0 => return Err(shape_error(op, "a 0-dimensional argument")),
        1 => (&b[..0], b[0], 1),
        n => (&b[..n - 2], b[n - 2], b[n - 1]),
    };
    if k != kb {
        return Err(shape_error(
            op,
            &format!("inner dimensions {k} and {kb} differ"),
        ));
    }
    let width = a_lead.len().max(b_lead.len());
    let at = |lead: &[u64], i: usize| {
        let pad = width - lead.len();
        if i < pad {
            1
        } else {
            lead[i - pad]
        }
    };
    let batch: N = (0..width)
        .map(|i| N::from(at(a_lead, i).max(at(b_lead, i))))
        .product();
    gemm(op, batch, m, k, n, false)
}

#[cfg(test)]
mod tests {
    use super::super::{cost, OpCall};

    fn call<'a>(name: &'a str, dims: &'a [Vec<i64>], types: &'a [String]) -> OpCall<'a> {
        OpCall {
            name,
            dims,
            types,
            ..Default::default()
        }
    }

    fn types(t: &[&str]) -> Vec<String> {
        t.iter().map(|s| s.to_string()).collect()
    }

    /// Counts derived by hand: `2·M·K·N`, bytes of every input and the output.
    #[test]
    fn gemm_family_by_hand() {
        let f = types(&["float", "float", "float", "Scalar", "Scalar"]);
        // addmm: bias [384], mat1 [256, 128], mat2 [128, 384].
        let d = [vec![384], vec![256, 128], vec![128, 384], vec![], vec![]];
        let c = cost(&call("aten::addmm", &d, &f)).unwrap();
        assert_eq!(c.flops, 2 * 256 * 128 * 384);
        assert_eq!(c.extra_flops, 256 * 384);
        assert_eq!(c.bytes, 4 * (384 + 256 * 128 + 128 * 384 + 256 * 384));
        // mm in bf16: 2 bytes an element.
        let b = types(&["c10::BFloat16", "c10::BFloat16"]);
        let d = [vec![64, 32], vec![32, 16]];
        let c = cost(&call("aten::mm", &d, &b)).unwrap();
        assert_eq!((c.flops, c.extra_flops), (2 * 64 * 32 * 16, 0));
        assert_eq!(c.bytes, 2 * (64 * 32 + 32 * 16 + 64 * 16));
        assert_eq!(c.precision, crate::MathPrecision::Bf16);
        // bmm [8, 64, 32] x [8, 32, 64].
        let d = [vec![8, 64, 32], vec![8, 32, 64]];
        let c = cost(&call("aten::bmm", &d, &types(&["float", "float"]))).unwrap();
        assert_eq!(c.flops, 2 * 8 * 64 * 32 * 64);
        // linear without bias: input [4, 64, 128], weight [512, 128], bias absent.
        let d = [vec![4, 64, 128], vec![512, 128], vec![]];
        let c = cost(&call("aten::linear", &d, &types(&["float", "float", ""]))).unwrap();
        assert_eq!((c.flops, c.extra_flops), (2 * 256 * 128 * 512, 0));
        assert_eq!(c.bytes, 4 * (4 * 64 * 128 + 512 * 128 + 256 * 512));
        // matmul with broadcasting: [2, 1, 5, 3] x [4, 3, 7] -> batch 2·4, M 5, K 3, N 7.
        let d = [vec![2, 1, 5, 3], vec![4, 3, 7]];
        let c = cost(&call("aten::matmul", &d, &types(&["float", "float"]))).unwrap();
        assert_eq!(c.flops, 2 * 8 * 5 * 3 * 7);
        // matmul of a matrix and a vector: [5, 3] x [3].
        let d = [vec![5, 3], vec![3]];
        let c = cost(&call("aten::matmul", &d, &types(&["float", "float"]))).unwrap();
        assert_eq!(c.flops, 2 * 5 * 3);
    }

    #[test]
    fn bad_and_absurd_shapes_are_unknown_not_wrapped() {
        let f = types(&["float", "float"]);
        let d = [vec![5, 3], vec![4, 7]];
        assert!(cost(&call("aten::matmul", &d, &f)).is_err());
        let d = [vec![-1, 3], vec![3, 7]];
        assert!(cost(&call("aten::mm", &d, &f)).is_err());
        let huge = 1_000_000_000_000i64;
        let d = [vec![huge, huge], vec![huge, huge]];
        let e = cost(&call("aten::mm", &d, &f)).unwrap_err();
        assert!(e.reason.contains("too large"), "{e}");
        assert!(cost(&call("aten::mm", &[], &f))
            .unwrap_err()
            .reason
            .contains("record_shapes"));
    }
}
