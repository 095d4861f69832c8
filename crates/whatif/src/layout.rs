//! `--layout channels-last|plain`: activations of every call in `acdb`/`acdeb` (PyTorch's
//! `channels_last`/`channels_last_3d`) or `abcd`/`abcde`, explicit as a framework passes its
//! tensors; the weights of convolutions and deconvolutions `any` (oneDNN chooses, as it does
//! for ideep). Reorders are rewritten the same way: an activation reorder between the
//! framework's layout and a blocked one (ideep's detour for NCHW tensors) becomes a copy to
//! the same layout and is removed; a weight reorder keeps its blocked side and reads the
//! framework's weights in the new layout (PyTorch's `.to(memory_format=…)` moves the weights
//! too). Only 4-D and 5-D tensors change: others have no channels-last form.

use super::roles::{is_activation_md, is_copy, is_weights_arg, reorder_is_weights};
use super::{channels_last_tag, plain_tag, tag_ndims, Layout, Transformed};
use profilednn_model::{FormatKind, MemoryDesc, Primitive, PrimitiveKind as K};
use std::sync::Arc;

fn target(layout: Layout, n: usize) -> String {
    match layout {
        Layout::ChannelsLast => channels_last_tag(n),
        _ => plain_tag(n),
    }
}

/// A 4-D or 5-D dense descriptor moved to the target layout, explicit.
fn relayout(m: &mut MemoryDesc, layout: Layout) {
    let n = tag_ndims(&m.tag);
    if m.is_absent() || !(4..=5).contains(&n) || m.format_kind != FormatKind::Blocked {
        return;
    }
    m.tag = target(layout, n);
    m.strides.clear();
    m.properties.retain(|c| c != 'a' && c != 'p');
}

/// A plain tag (no blocking), the framework's own layout of a tensor.
fn is_plain(tag: &str) -> bool {
    !tag.is_empty() && tag.chars().all(|c| c.is_ascii_lowercase())
}

pub fn apply(t: &mut Transformed, layout: Layout) {
    let refs: Vec<&Primitive> = t.calls.iter().map(|c| &*c.primitive).collect();
    let weights: Vec<bool> = (0..refs.len())
        .map(|i| refs[i].kind.family() == K::Reorder && reorder_is_weights(&refs, i))
        .collect();
    let mut keep = Vec::with_capacity(refs.len());
    let mut out = Vec::with_capacity(refs.len());
    for (i, p) in refs.iter().enumerate() {
        let mut q = (*p).clone();
        let conv = matches!(q.kind.family(), K::Convolution | K::Deconvolution);
        if q.kind.family() == K::Reorder {
            for m in q.mds.iter_mut() {
                if !weights[i] || is_plain(&m.tag) {
                    relayout(m, layout);
                }
            }
        } else {
            for m in q.mds.iter_mut() {
                if conv && is_weights_arg(&m.arg) && !m.is_absent() {
                    // oneDNN chooses the weights' layout for the activations' layout.
                    if !m.properties.contains('a') {
                        m.properties.insert(0, 'a');
                    }
                } else if is_activation_md(m) {
                    relayout(m, layout);
                }
            }
        }
        let copy = is_copy(&q);
        keep.push(!copy);
        out.push(Arc::new(q));
    }
    let before = t.calls.len();
    let mut calls = std::mem::take(&mut t.calls);
    for (c, p) in calls.iter_mut().zip(out) {
        c.primitive = p;
    }
    t.calls = calls
        .into_iter()
        .zip(keep)
        .filter_map(|(c, k)| k.then_some(c))
        .collect();
    let removed = before - t.calls.len();
    t.removed += removed;
    let (name, tags) = match layout {
        Layout::ChannelsLast => ("channels-last", "acdb/acdeb"),
        _ => ("plain", "abcd/abcde"),
    };
    t.assumptions.push(format!(
        "--layout {name}: 4-D/5-D activations of every call in {tags} (explicit, as the framework passes them); \
         convolution weights `any` (oneDNN chooses); {removed} activation reorder(s) that became copies to the same layout removed; \
         weight reorders kept, reading the framework's weights in {tags} (their blocked side as logged); no reorder added: every oneDNN CPU kind takes {tags}"
    ));
}

#[cfg(test)]
mod tests {
    use super::super::testing::prim;
    use super::super::{apply as what_if, Layout, WhatIf};

    /// The NCHW pattern of ideep (PyTorch 2.15, resnet18): input and weights reordered to
    /// blocked layouts, the output back to plain.
    fn nchw_conv() -> Vec<std::sync::Arc<profilednn_model::Primitive>> {
        vec![
            prim("cpu,reorder,jit:blk,undef,src:f32::blocked:abcd::f0 dst:f32::blocked:aBcd16b::f0,attr-scratchpad:user,,8x64x16x16"),
            prim("cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0 dst:f32::blocked:ABcd16b16a::f0,attr-scratchpad:user,,64x64x3x3"),
            prim("cpu,convolution,jit:avx512_core,forward_training,src:f32:a:blocked:aBcd16b::f0 wei:f32:a:blocked:ABcd16b16a::f0 bia:undef::undef:::f0 dst:f32:a:blocked:aBcd16b::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc64_ih16oh16kh3sh1dh0ph1_iw16ow16kw3sw1dw0pw1"),
            prim("cpu,reorder,jit:blk,undef,src:f32::blocked:aBcd16b::f0 dst:f32::blocked:abcd::f0,attr-scratchpad:user,,8x64x16x16"),
        ]
    }

    #[test]
    fn channels_last_removes_ideeps_activation_reorders() {
        let w = WhatIf {
            layout: Layout::ChannelsLast,
            ..Default::default()
        };
        let t = what_if(&w, &nchw_conv()).unwrap();
        assert_eq!(t.removed, 2);
        let got: Vec<String> = t.calls.iter().map(|c| c.primitive.mds_string()).collect();
        // Hand-derived: what the real channels-last run of the same model logs, except the
        // weights' blocked tag (left to oneDNN: `any`).
        assert_eq!(
            got,
            [
                "src:f32::blocked:acdb::f0 dst:f32::blocked:ABcd16b16a::f0",
                "src:f32::blocked:acdb::f0 wei:f32:a:blocked:ABcd16b16a::f0 bia:undef::undef:::f0 dst:f32::blocked:acdb::f0",
            ]
        );
        assert!(t.assumptions[0].contains("2 activation reorder(s)"));
    }

    #[test]
    fn plain_keeps_5d_plain_and_leaves_2d_alone() {
        let it = vec![
            prim("cpu,convolution,jit:avx512_core,backward_data,src:f32:a:blocked:aBcde16b::f0 wei:f32:a:blocked:ABcde16a16b::f0 bia:undef::undef:::f0 dst:f32:a:blocked:aBcde16b::f0,,alg:convolution_direct,mb2_ic16oc16_id8od8kd3sd1dd0pd1_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1"),
            prim("cpu,inner_product,gemm:jit,forward_training,src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 bia:f32::blocked:a::f0 dst:f32::blocked:ab::f0,,,mb2ic512oc10"),
        ];
        let w = WhatIf {
            layout: Layout::Plain,
            ..Default::default()
        };
        let t = what_if(&w, &it).unwrap();
        assert_eq!(
            t.calls[0].primitive.mds_string(),
            "src:f32::blocked:abcde::f0 wei:f32:a:blocked:ABcde16a16b::f0 bia:undef::undef:::f0 dst:f32::blocked:abcde::f0"
        );
        assert_eq!(t.calls[1].primitive, it[1]);
    }
}
