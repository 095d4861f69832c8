//! A what-if's weight reorders into the layout the convolution chose.
//!
//! A what-if that changes the data type or the activations' layout (`--as bf16`, `--layout`)
//! leaves the convolutions' weights `any`: oneDNN picks their layout for the new problem (for
//! bf16 on an AVX-512 CPU e.g. `ABcd8b16a2b`, not the f32 `ABcd16b16a`). The weight reorder
//! before such a convolution still carries the logged destination, so the replay priced a
//! reorder into a layout the convolution does not read. Each layout-changing reorder whose next
//! compute call is a forward or backward-data convolution with `any` weights of the reorder's
//! dims is rebuilt here with that convolution's chosen weights descriptor as its destination.

use super::api::{arg, query, Dnnl, Handle};
use super::build::Built;
use super::SkipReason;
use crate::transform::roles::{is_compute, weights_dims};
use profilednn_model::{Primitive, PrimitiveKind as K};
use std::sync::Arc;

/// The reorder's dims (`64x64x3x3`), when it changes the layout (source and destination tags
/// differ) — a cast that keeps the tag is left alone.
fn layout_reorder_dims(p: &Primitive) -> Option<Vec<u64>> {
    if p.kind.family() != K::Reorder {
        return None;
    }
    let tag = |name: &str| p.mds.iter().find(|m| m.arg == name).map(|m| m.tag.as_str());
    if tag("src") == tag("dst") {
        return None;
    }
    p.problem.split('x').map(|d| d.parse().ok()).collect()
}

/// The convolution that reads the reorder at `pos` of `order`: the next compute call, when it
/// is a forward or backward-data convolution with `any` weights of `dims`.
fn reader(firsts: &[&Arc<Primitive>], order: &[usize], pos: usize, dims: &[u64]) -> Option<usize> {
    let &c = order[pos + 1..].iter().find(|&&c| is_compute(firsts[c]))?;
    let p = firsts[c];
    let conv = matches!(p.kind.family(), K::Convolution | K::Deconvolution);
    let reads_weights =
        p.prop_kind.is_forward() || p.prop_kind == profilednn_model::PropKind::BackwardData;
    let any = p
        .mds
        .iter()
        .any(|m| m.arg == "wei" && m.properties.contains('a'));
    (conv && reads_weights && any && weights_dims(p).as_deref() == Some(dims)).then_some(c)
}

/// Rebuilds the weight reorders of the iteration (`firsts` by problem, `order` the calls) into
/// the layout their convolution chose; returns how many were rebuilt.
pub(crate) fn resolve(
    d: &Dnnl,
    engine: Handle,
    firsts: &[&Arc<Primitive>],
    order: &[usize],
    built: &mut [Result<Built, SkipReason>],
) -> usize {
    let api = &d.api;
    let mut done = vec![false; firsts.len()];
    let mut rebuilt = 0;
    for (pos, &r) in order.iter().enumerate() {
        if done[r] {
            continue;
        }
        done[r] = true;
        let Some(dims) = layout_reorder_dims(firsts[r]) else {
            continue;
        };
        let Some(c) = reader(firsts, order, pos, &dims) else {
            continue;
        };
        let Ok(conv) = &built[c] else { continue };
        // SAFETY: a query on a descriptor the convolution's builder owns; the returned md lives
        // as long as that descriptor (the reorder descriptor created below copies it).
        let weights = unsafe {
            (api.dnnl_primitive_desc_query_md)(conv.pd, query::EXEC_ARG_MD, arg::WEIGHTS)
        };
        let Ok(reorder) = &mut built[r] else { continue };
        // SAFETY: as above, on the reorder's own descriptor.
        let src =
            unsafe { (api.dnnl_primitive_desc_query_md)(reorder.pd, query::EXEC_ARG_MD, arg::SRC) };
        if weights.is_null() || src.is_null() {
            continue;
        }
        let mut pd: Handle = std::ptr::null_mut();
        // SAFETY: both descriptors are alive (owned by their primitive descriptors); the new
        // descriptor copies them and the reorder's own attributes (the user scratchpad the run
        // passes, the logged scales, zero-points and sum post-op), which its builder owns;
        // `pd` is a live local.
        let st = unsafe {
            (api.dnnl_reorder_primitive_desc_create)(
                &mut pd,
                src,
                engine,
                weights,
                engine,
                reorder.attr,
            )
        };
        if st == super::api::status::SUCCESS && !pd.is_null() {
            // SAFETY: the old descriptor is owned by this builder and replaced once; nothing
            // created from it is alive yet (primitives are created after this).
            unsafe { (api.dnnl_primitive_desc_destroy)(reorder.pd) };
            reorder.pd = pd;
            rebuilt += 1;
        }
    }
    rebuilt
}
