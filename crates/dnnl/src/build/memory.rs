//! Memory descriptors as the log printed them: the logged data type, then explicit strides, a
//! named tag, or `any` where the log says the library chose the layout.

use super::{dims12, Built};
use crate::api::{Handle, FORMAT_TAG_ANY};
use profilednn_model::MemoryDesc;
use profilednn_replay::SkipReason;
use std::ffi::c_int;
use std::ptr::null_mut;

/// The plain (row-major) tag of `n` dimensions: `ab`, `abc`, …
pub(crate) fn plain_tag(n: usize) -> String {
    "abcdefghijkl"[..n].to_string()
}

impl Built<'_> {
    /// The logged data type of `m` (its own, else `fallback`) as this library numbers it.
    fn data_type(&self, m: Option<&MemoryDesc>, fallback: &str) -> Result<c_int, SkipReason> {
        let name = m
            .filter(|m| !m.data_type.is_undef())
            .map(|m| m.data_type.to_string())
            .unwrap_or_else(|| fallback.to_string());
        self.d
            .dts
            .get(&name)
            .copied()
            .ok_or(SkipReason::UnknownDataType(name))
    }

    /// The layout tag for `m`: `any` where allowed and the log says the library chose it
    /// (`a`), the logged tag (unknown ones fall back to `any` and are remembered), the plain
    /// tag for a tensor the log does not describe.
    fn tag(&mut self, dims: usize, m: Option<&MemoryDesc>) -> c_int {
        let allow_any = self.allow_any;
        match m {
            Some(m) if !(m.tag.is_empty() || allow_any && m.properties.contains('a')) => {
                match self.d.tags.get(&m.tag) {
                    Some(t) => *t,
                    None => {
                        self.unknown_tags.push(m.tag.clone());
                        FORMAT_TAG_ANY
                    }
                }
            }
            Some(_) => FORMAT_TAG_ANY,
            None => self
                .d
                .tags
                .get(&plain_tag(dims))
                .copied()
                .unwrap_or(FORMAT_TAG_ANY),
        }
    }

    /// A memory descriptor of `dims` with the logged layout: `any` where the log says the
    /// library chose it (`a`), explicit strides, a named tag; unknown tags fall back to `any`.
    /// `fallback_dt` types a tensor the log does not describe.
    pub(crate) fn md(
        &mut self,
        dims: &[i64],
        m: Option<&MemoryDesc>,
        fallback_dt: &str,
    ) -> Result<Handle, SkipReason> {
        let dt = self.data_type(m, fallback_dt)?;
        let dnnl = self.d;
        let api = &dnnl.api;
        let allow_any = self.allow_any;
        let d = dims12(dims);
        let mut h: Handle = null_mut();
        let nd = dims.len() as c_int;
        let is_any = |m: &MemoryDesc| allow_any && m.properties.contains('a');
        let status = match m {
            Some(m) if !is_any(m) && !m.strides.is_empty() => {
                let s: Vec<i64> = m
                    .strides
                    .split('x')
                    .filter_map(|x| x.parse().ok())
                    .collect();
                if s.len() != dims.len() {
                    return Err(SkipReason::StridesMismatch {
                        strides: m.strides.clone(),
                        dims: dims.len(),
                    });
                }
                let s = dims12(&s);
                // SAFETY: dims and strides arrays of 12 entries, as the API expects.
                unsafe {
                    (api.dnnl_memory_desc_create_with_strides)(
                        &mut h,
                        nd,
                        d.as_ptr(),
                        dt,
                        s.as_ptr(),
                    )
                }
            }
            Some(m) if !is_any(m) && !m.tag.is_empty() && !dnnl.tags.contains_key(&m.tag) => {
                match self.layouts.get(m, dims) {
                    // SAFETY: clones a live descriptor (owned by `layouts`) into a live
                    // out-pointer; the clone is this builder's.
                    Some(chosen) => unsafe { (api.dnnl_memory_desc_clone)(&mut h, chosen) },
                    None => {
                        let tag = self.tag(dims.len(), Some(m));
                        // SAFETY: a 12-entry dims array and a live out-pointer.
                        unsafe {
                            (api.dnnl_memory_desc_create_with_tag)(&mut h, nd, d.as_ptr(), dt, tag)
                        }
                    }
                }
            }
            _ => {
                let tag = self.tag(dims.len(), m);
                // SAFETY: a 12-entry dims array and a live out-pointer, as the API expects.
                unsafe { (api.dnnl_memory_desc_create_with_tag)(&mut h, nd, d.as_ptr(), dt, tag) }
            }
        };
        crate::status::check(status, "memory descriptor")?;
        self.mds.push(h);
        Ok(h)
    }
}
