//! Work and traffic of fused post-ops, reported apart from the primitive's own `flops`.

use crate::count::N;
use crate::descriptor::product;
use crate::tensors::traffic;
use profilednn_model::{PostOpKind, Primitive};

/// `(extra operations, extra bits read)` of the post-op chain over a destination of `dst`
/// dims: an eltwise is one operation per element, a binary one operation plus reading its
/// second operand (sized by its broadcast mask), a sum one multiply-add plus reading the
/// destination it accumulates into, a prelu two. A fused depthwise convolution is not
/// modelled (its shape is not in the log).
pub fn cost(p: &Primitive, dst: Option<&[u64]>, dst_bits: u32) -> (N, N) {
    let Some(dst) = dst else {
        return (N::ZERO, N::ZERO);
    };
    let n = product(dst);
    let mut flops = N::ZERO;
    let mut bits = N::ZERO;
    for po in p.attrs.post_ops() {
        match &po.kind {
            PostOpKind::Eltwise { .. } => flops += n,
            PostOpKind::Binary {
                data_type, mask, ..
            } => {
                flops += n;
                let mask = mask.unwrap_or(0);
                let elems: N = dst
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i < 64 && mask & (1 << i) != 0)
                    .map(|(_, d)| N::from(*d))
                    .product();
                let b = data_type.as_ref().and_then(|d| d.bits()).unwrap_or(32);
                bits += traffic(elems, b);
            }
            PostOpKind::Sum => {
                flops += n * 2u64;
                bits += traffic(n, dst_bits);
            }
            PostOpKind::Prelu => flops += n * 2u64,
            PostOpKind::Depthwise | PostOpKind::Other => {}
        }
    }
    (flops, bits)
}
