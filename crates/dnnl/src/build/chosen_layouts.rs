//! Layouts oneDNN chose that it has no tag name for.
//!
//! oneDNN prints every blocked layout as a tag (`BcdA8b10a`), but only a subset of them is a
//! `dnnl_format_tag_t` a descriptor can be created from: an inner product's weights of 10
//! outputs on an AVX2 CPU are `BcdA8b10a`, and the reorders into and out of them (11 % of the
//! C training program's time there) could not be rebuilt. The log says which primitive chose
//! that layout (its descriptor is marked `a`, "created with `any`"); rebuilt with `any` on the
//! same library it chooses it again, and its descriptor is taken for every other use of the tag
//! in the log — after checking that its blocking is the one the tag spells, so a library that
//! chooses differently leaves the tag unknown (the problem stays "not replayed") rather than
//! timing another layout.

use super::build;
use crate::api::{arg, query, Dnnl, Handle, FORMAT_KIND_BLOCKED};
use profilednn_model::{MemoryDesc, Primitive, PropKind};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};

/// Descriptors chosen by the library for tags it cannot name, by (tag, data type, extra
/// flags, dims).
pub struct ChosenLayouts<'a> {
    d: &'a Dnnl,
    mds: HashMap<(String, String, String, Vec<i64>), Handle>,
}

impl Drop for ChosenLayouts<'_> {
    fn drop(&mut self) {
        for md in self.mds.values() {
            // SAFETY: each was created by dnnl_memory_desc_clone and is destroyed once.
            unsafe { (self.d.api.dnnl_memory_desc_destroy)(*md) };
        }
    }
}

impl<'a> ChosenLayouts<'a> {
    /// None known: every unnamed tag stays unknown.
    pub fn none(d: &'a Dnnl) -> Self {
        ChosenLayouts {
            d,
            mds: HashMap::new(),
        }
    }

    /// The layouts the primitives of `problems` chose (`any` in the log) under tags this
    /// library cannot name, each rebuilt once.
    pub fn of<'p>(
        d: &'a Dnnl,
        engine: Handle,
        problems: impl IntoIterator<Item = &'p Primitive>,
    ) -> Self {
        let mut c = Self::none(d);
        let mut tried = std::collections::HashSet::new();
        for p in problems {
            for m in &p.mds {
                if !m.properties.contains('a') || m.tag.is_empty() || d.tags.contains_key(&m.tag) {
                    continue;
                }
                let Some(role) = role(m, &p.prop_kind) else {
                    continue;
                };
                if !tried.insert((
                    m.tag.clone(),
                    m.data_type.to_string(),
                    m.flags.clone(),
                    format!("{} {} {}", p.kind, p.prop_kind, p.problem),
                )) {
                    continue;
                }
                c.take(engine, p, m, role);
            }
        }
        c
    }

    /// Rebuilds `p` and keeps the descriptor of `role` when its blocking is `m`'s tag.
    fn take(&mut self, engine: Handle, p: &Primitive, m: &MemoryDesc, role: c_int) {
        let none = Self::none(self.d);
        let Ok(b) = build(self.d, engine, p, &none) else {
            return;
        };
        let api = &self.d.api;
        // SAFETY: a query on the descriptor the builder owns; the md lives as long as it.
        let md = unsafe { (api.dnnl_primitive_desc_query_md)(b.pd, query::EXEC_ARG_MD, role) };
        if md.is_null() {
            return;
        }
        let Some(blocking) = Blocking::of(self.d, md) else {
            return;
        };
        if !blocking.spells(&m.tag) {
            return;
        }
        let mut own: Handle = std::ptr::null_mut();
        // SAFETY: clones a live descriptor into a live out-pointer; the clone is ours.
        let st = unsafe { (api.dnnl_memory_desc_clone)(&mut own, md) };
        if st != crate::api::status::SUCCESS || own.is_null() {
            return;
        }
        let key = (
            m.tag.clone(),
            m.data_type.to_string(),
            m.flags.clone(),
            blocking.dims,
        );
        if let Some(old) = self.mds.insert(key, own) {
            // SAFETY: a clone made here, replaced once.
            unsafe { (api.dnnl_memory_desc_destroy)(old) };
        }
    }

    /// The chosen descriptor for `m`'s tag, data type and extra flags (`f0`; a compensation
    /// flag changes the buffer) of `dims`, if a primitive of the log chose it.
    pub(crate) fn get(&self, m: &MemoryDesc, dims: &[i64]) -> Option<Handle> {
        self.mds
            .get(&(
                m.tag.clone(),
                m.data_type.to_string(),
                m.flags.clone(),
                dims.to_vec(),
            ))
            .copied()
    }
}

/// The execution argument of the logged descriptor `m` of a primitive that accepts `any`
/// (convolution, deconvolution, inner product, matmul), in its direction.
fn role(m: &MemoryDesc, prop: &PropKind) -> Option<c_int> {
    let base = m.arg.trim_start_matches("diff_");
    Some(match (base, prop) {
        ("src", PropKind::BackwardData) => arg::DIFF_SRC,
        ("src", _) => arg::SRC,
        ("wei", PropKind::BackwardWeights) => arg::DIFF_WEIGHTS,
        ("wei", _) => arg::WEIGHTS,
        ("bia", PropKind::BackwardWeights) => arg::DIFF_BIAS,
        ("bia", _) => arg::BIAS,
        ("dst", p) if p.is_backward() => arg::DIFF_DST,
        ("dst", _) => arg::DST,
        _ => return None,
    })
}

/// A blocked descriptor's dims, outer strides and innermost blocks, as oneDNN reports them.
#[derive(Debug, PartialEq)]
struct Blocking {
    dims: Vec<i64>,
    strides: Vec<i64>,
    inner: InnerBlocks,
}

impl Blocking {
    fn of(d: &Dnnl, md: Handle) -> Option<Blocking> {
        let api = &d.api;
        let q = |what: c_int, out: *mut c_void| {
            // SAFETY: a query of a live descriptor into a live local of the queried type.
            unsafe { (api.dnnl_memory_desc_query)(md, what, out) == crate::api::status::SUCCESS }
        };
        let (mut kind, mut nd, mut nblks): (c_int, c_int, c_int) = (0, 0, 0);
        let mut dims: *const i64 = std::ptr::null();
        let mut strides: *const i64 = std::ptr::null();
        let mut blks: *const i64 = std::ptr::null();
        let mut idxs: *const i64 = std::ptr::null();
        let ok = q(query::FORMAT_KIND, &mut kind as *mut c_int as *mut c_void)
            && kind == FORMAT_KIND_BLOCKED
            && q(query::NDIMS_S32, &mut nd as *mut c_int as *mut c_void)
            && q(query::DIMS, &mut dims as *mut *const i64 as *mut c_void)
            && q(
                query::STRIDES,
                &mut strides as *mut *const i64 as *mut c_void,
            )
            && q(
                query::INNER_NBLKS_S32,
                &mut nblks as *mut c_int as *mut c_void,
            )
            && q(
                query::INNER_BLKS,
                &mut blks as *mut *const i64 as *mut c_void,
            )
            && q(
                query::INNER_IDXS,
                &mut idxs as *mut *const i64 as *mut c_void,
            );
        if !ok || nd <= 0 || nd > 12 || !(0..=12).contains(&nblks) {
            return None;
        }
        if [dims, strides, blks, idxs].iter().any(|p| p.is_null()) {
            return None;
        }
        let (nd, nblks) = (nd as usize, nblks as usize);
        // SAFETY: each pointer is the descriptor's own array of 12 entries (dnnl_dims_t), of
        // which the first `nd` (dims, strides) or `nblks` (blocks) are meaningful.
        let (dims, strides, blks, idxs) = unsafe {
            (
                std::slice::from_raw_parts(dims, nd),
                std::slice::from_raw_parts(strides, nd),
                std::slice::from_raw_parts(blks, nblks),
                std::slice::from_raw_parts(idxs, nblks),
            )
        };
        Some(Blocking {
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            inner: blks
                .iter()
                .zip(idxs)
                .map(|(&b, &i)| (b, usize::try_from(i).unwrap_or(usize::MAX)))
                .collect(),
        })
    }

    /// Whether this blocking is the dense layout `tag` spells: the same innermost blocks, and
    /// each outer stride the one the tag gives it (the product of the inner block and the
    /// outer block counts of the dimensions after it in the tag). A dimension of one outer
    /// block may have any stride (oneDNN reports some as 1): it moves no address.
    fn spells(&self, tag: &str) -> bool {
        let Some((outer, inner)) = parse_tag(tag) else {
            return false;
        };
        let nd = self.dims.len();
        if outer.len() != nd || inner != self.inner || outer.iter().any(|&d| d >= nd) {
            return false;
        }
        let outer_blocks = |d: usize| {
            let block: i64 = inner
                .iter()
                .filter(|(_, i)| *i == d)
                .fold(1i64, |a, (b, _)| a.saturating_mul(*b));
            let block = block.max(1);
            self.dims[d].saturating_add(block - 1) / block
        };
        // Sizes come from the log: saturating, a huge one is a mismatch, not an overflow.
        let mut stride: i64 = inner.iter().fold(1, |a, (b, _)| a.saturating_mul(*b));
        for &d in outer.iter().rev() {
            if outer_blocks(d) > 1 && self.strides[d] != stride {
                return false;
            }
            stride = stride.saturating_mul(outer_blocks(d));
        }
        true
    }
}

/// (size, dimension) of each innermost block of a layout, outermost first.
type InnerBlocks = Vec<(i64, usize)>;

/// A oneDNN tag's outer dimensions in order (`BcdA` → b, c, d, a) and its innermost blocks
/// (`8b10a` → (8, b), (10, a)); `None` when it is not one.
fn parse_tag(tag: &str) -> Option<(Vec<usize>, InnerBlocks)> {
    let split = tag.find(|c: char| c.is_ascii_digit()).unwrap_or(tag.len());
    let (head, mut rest) = tag.split_at(split);
    if head.is_empty() || !head.chars().all(|c| c.is_ascii_alphabetic()) {
        return None;
    }
    let outer: Vec<usize> = head
        .chars()
        .map(|c| (c.to_ascii_lowercase() as u8 - b'a') as usize)
        .collect();
    // Each dimension once: `aab` names no layout.
    let mut seen = outer.clone();
    seen.sort_unstable();
    if seen.iter().enumerate().any(|(i, &d)| i != d) {
        return None;
    }
    let mut inner = Vec::new();
    while !rest.is_empty() {
        let n = rest.find(|c: char| !c.is_ascii_digit())?;
        let size: i64 = rest[..n].parse().ok()?;
        let letter = rest[n..].chars().next()?;
        if !letter.is_ascii_lowercase() {
            return None;
        }
        inner.push((size, (letter as u8 - b'a') as usize));
        rest = &rest[n + 1..];
    }
    Some((outer, inner))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_parse_into_outer_order_and_inner_blocks() {
        assert_eq!(
            parse_tag("BcdA8b10a"),
            Some((vec![1, 2, 3, 0], vec![(8, 1), (10, 0)]))
        );
        assert_eq!(parse_tag("abcd"), Some((vec![0, 1, 2, 3], vec![])));
        assert_eq!(
            parse_tag("aBcd16b"),
            Some((vec![0, 1, 2, 3], vec![(16, 1)]))
        );
        assert_eq!(parse_tag("8b"), None);
        assert_eq!(parse_tag("aB16"), None);
        assert_eq!(parse_tag("aB16B"), None);
        assert_eq!(parse_tag("aab"), None, "a dimension twice");
        assert_eq!(parse_tag("abd"), None, "a dimension missing");
    }

    /// Strides computed by hand for `BcdA8b10a` of 10×32×16×16, in the order a, b, c, d: an
    /// inner block of 8·10 = 80 elements; A (one block of 10) innermost of the outer ones,
    /// stride 80; d (16) 80; c (16) 16·80; B (32 / 8 = 4 blocks) 16·16·80.
    fn bcda8b10a() -> Blocking {
        Blocking {
            dims: vec![10, 32, 16, 16],
            strides: vec![80, 20480, 1280, 80],
            inner: vec![(8, 1), (10, 0)],
        }
    }

    #[test]
    fn a_blocking_spells_its_own_tag_only() {
        let b = bcda8b10a();
        assert!(b.spells("BcdA8b10a"));
        assert!(!b.spells("BcdA8b"), "inner blocks differ");
        // A is one block: where it stands among the outer dimensions changes no address.
        assert!(b.spells("ABcd8b10a"));
        assert!(!b.spells("cdBA8b10a"), "c and d cannot be outer to B");
        assert!(!b.spells("BcdA10a8b"), "the order of the inner blocks");
        assert!(!b.spells("abc"), "another rank");
        let mut padded = bcda8b10a();
        padded.strides[2] = 1360;
        assert!(
            !padded.spells("BcdA8b10a"),
            "c's stride is not the dense one"
        );
    }
}
