//! A what-if's weight reorders into (and weight-gradient reorders out of) the layout the
//! convolution chose.
//!
//! A what-if that changes the data type or the activations' layout (`--as bf16`, `--layout`)
//! leaves the convolutions' weights `any`: oneDNN picks their layout for the new problem (for
//! bf16 on an AVX-512 CPU e.g. `ABcd8b16a2b`, not the f32 `ABcd16b16a`; on an AVX2-only CPU
//! 8-blocked layouts, not the 16-blocked ones of an AVX-512 log). The weight reorder before such
//! a convolution still carries the logged destination, so the replay priced a reorder into a
//! layout the convolution does not read. Each layout-changing reorder whose next compute call
//! is a forward or backward-data convolution with `any` weights of the reorder's dims is rebuilt
//! here with that convolution's chosen weights descriptor as its destination; and each one whose
//! previous compute call is a backward-weights convolution with `any` weights of its dims (the
//! framework taking the gradient back into its own layout) with that convolution's chosen
//! weight-gradient descriptor as its source. Without the second, an AVX-512 log's
//! `ABcd16b16a → acdb` gradient reorders ran on an AVX2 CPU through oneDNN's generic
//! `simple:any` reorder at ~150 ns per element (347 ms per call for 512×512×3×3): a layout the
//! framework would never see there.

use super::api::{arg, query, Dnnl, Handle};
use super::build::Built;
use profilednn_model::{Primitive, PrimitiveKind as K, PropKind};
use profilednn_replay::SkipReason;
use profilednn_whatif::roles::{is_compute, weights_dims};
use std::sync::Arc;

/// The reorder's dims (`64x64x3x3`) and whether it may go into a convolution's weights
/// (`true`) or takes a weight gradient back into the framework's layout (`false`: blocked to
/// plain), when it changes the layout — a cast that keeps the tag is left alone.
fn layout_reorder(p: &Primitive) -> Option<(Vec<u64>, bool)> {
    if p.kind.family() != K::Reorder {
        return None;
    }
    let tag = |name: &str| p.mds.iter().find(|m| m.arg == name).map(|m| m.tag.as_str());
    let (src, dst) = (tag("src")?, tag("dst")?);
    if src == dst {
        return None;
    }
    let blocked = |t: &str| t.chars().any(|c| c.is_ascii_uppercase());
    let into = !blocked(src) || blocked(dst);
    let dims = p
        .problem
        .split('x')
        .map(|d| d.parse().ok())
        .collect::<Option<_>>()?;
    Some((dims, into))
}

/// A convolution with `any` weights of `dims` (of the propagations `prop` accepts).
fn conv_with_any_weights(p: &Primitive, dims: &[u64], prop: impl Fn(&PropKind) -> bool) -> bool {
    let conv = matches!(p.kind.family(), K::Convolution | K::Deconvolution);
    let any = p
        .mds
        .iter()
        .any(|m| m.arg == "wei" && m.properties.contains('a'));
    conv && prop(&p.prop_kind) && any && weights_dims(p).as_deref() == Some(dims)
}

/// The convolution that reads the reorder at `pos` of `order`: the next compute call, when it
/// is a forward or backward-data convolution with `any` weights of `dims`.
fn reader(firsts: &[&Arc<Primitive>], order: &[usize], pos: usize, dims: &[u64]) -> Option<usize> {
    let &c = order[pos + 1..].iter().find(|&&c| is_compute(firsts[c]))?;
    conv_with_any_weights(firsts[c], dims, |p| {
        p.is_forward() || *p == PropKind::BackwardData
    })
    .then_some(c)
}

/// The convolution whose weight gradient the reorder at `pos` of `order` takes back: the
/// previous compute call, when it is a backward-weights convolution with `any` weights of
/// `dims`.
fn writer(firsts: &[&Arc<Primitive>], order: &[usize], pos: usize, dims: &[u64]) -> Option<usize> {
    let &c = order[..pos]
        .iter()
        .rev()
        .find(|&&c| is_compute(firsts[c]))?;
    conv_with_any_weights(firsts[c], dims, |p| *p == PropKind::BackwardWeights).then_some(c)
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
        let Some((dims, into)) = layout_reorder(firsts[r]) else {
            continue;
        };
        // Into the convolution's weights, or out of its weight gradient.
        let conv = if into {
            reader(firsts, order, pos, &dims)
        } else {
            writer(firsts, order, pos, &dims)
        };
        let Some(c) = conv else { continue };
        let Ok(conv) = &built[c] else { continue };
        let role = if into {
            arg::WEIGHTS
        } else {
            arg::DIFF_WEIGHTS
        };
        // SAFETY: a query on a descriptor the convolution's builder owns; the returned md lives
        // as long as that descriptor (the reorder descriptor created below copies it).
        let chosen =
            unsafe { (api.dnnl_primitive_desc_query_md)(conv.pd, query::EXEC_ARG_MD, role) };
        let Ok(reorder) = &mut built[r] else { continue };
        // The framework's side of the reorder stays as logged.
        let framework = if into { arg::SRC } else { arg::DST };
        // SAFETY: as above, on the reorder's own descriptor.
        let kept = unsafe {
            (api.dnnl_primitive_desc_query_md)(reorder.pd, query::EXEC_ARG_MD, framework)
        };
        if chosen.is_null() || kept.is_null() {
            continue;
        }
        let (src, dst) = if into { (kept, chosen) } else { (chosen, kept) };
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
                dst,
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
