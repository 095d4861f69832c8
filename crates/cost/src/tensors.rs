//! A primitive's tensors looked up by role across the argument spellings of every format
//! generation (`src`/`diff_src`, `data`/`diff`, positional `src src dst` of binary), their data
//! types, and the dimensions of single-tensor problems. Public: the replay rebuilds the same
//! tensors and must read them the same way.

use profilednn_model::{MemoryDesc, Primitive};

/// Finds the first present descriptor whose argument is one of `names`: [`Primitive::tensor`],
/// under the name the replay's kind modules use.
pub fn find<'a>(p: &'a Primitive, names: &[&str]) -> Option<&'a MemoryDesc> {
    p.tensor(names)
}

/// True when one of `names` is listed and not `undef`.
pub fn present(p: &Primitive, names: &[&str]) -> bool {
    p.tensor(names).is_some()
}

/// The first data type the primitive lists: the fallback for roles a generation did not print
/// (batch-norm's destination, which shares the source's type).
pub fn first_bits(p: &Primitive) -> Option<u32> {
    p.mds
        .iter()
        .filter(|md| !md.is_absent())
        .find_map(|md| md.data_type.bits())
}

/// Bits per element of the role `names`, falling back to the first listed type.
pub fn bits(p: &Primitive, names: &[&str]) -> Option<u32> {
    p.tensor(names)
        .and_then(|md| md.data_type.bits())
        .or_else(|| first_bits(p))
}

pub(crate) fn bits_or_unknown(p: &Primitive, names: &[&str]) -> Result<u32, crate::Unknown> {
    bits(p, names).ok_or_else(|| crate::unknown("no data type in the memory descriptors"))
}

pub(crate) const F32_BITS: u32 = 32;

/// `elements × bits`, too large rather than wrapped.
pub(crate) fn traffic(elements: impl Into<crate::count::N>, bits: u32) -> crate::count::N {
    elements.into() * bits as u64
}

/// Logical dimensions of the one tensor a problem describes (element-wise kinds,
/// normalizations, softmax, reorder, sum), in either spelling: dims style (`8x16x32x32`, the
/// first tensor when several are listed) or desc style (`mb8ic16ih32iw32`, what 0.x
/// eltwise/softmax and every batch-norm/lrn print).
pub fn dims(problem: &str) -> Result<Vec<u64>, crate::Unknown> {
    let first = problem.split([' ', ':']).next().unwrap_or("");
    match crate::parse_dims(first) {
        Some(d) => Ok(d),
        None => tensor_dims_desc(problem),
    }
}

/// Logical dims `[mb, ic, (id), (ih), (iw)]` of a desc-style tensor.
pub fn tensor_dims_desc(problem: &str) -> Result<Vec<u64>, crate::Unknown> {
    let d = crate::descriptor::Descriptor::parse(problem)
        .ok_or_else(|| crate::unknown(format!("problem descriptor '{problem}' not recognised")))?;
    let mb = d.get("mb").ok_or_else(|| crate::missing(problem, "mb"))?;
    let ic = d.get("ic").ok_or_else(|| crate::missing(problem, "ic"))?;
    let mut dims = vec![mb, ic];
    for key in ["id", "ih", "iw"] {
        if let Some(v) = d.get(key) {
            dims.push(v);
        }
    }
    Ok(dims)
}
