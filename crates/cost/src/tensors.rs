//! Data types of a primitive's tensors, looked up by role across the argument spellings of every
//! format generation (`src`/`diff_src`, `data`/`diff`, positional `src src dst` of binary).

use profilednn_model::{MemoryDesc, Primitive};

/// Finds the first present descriptor whose argument is one of `names`.
pub fn find<'a>(p: &'a Primitive, names: &[&str]) -> Option<&'a MemoryDesc> {
    p.mds
        .iter()
        .find(|md| names.contains(&md.arg.as_str()) && !md.is_absent())
}

/// True when one of `names` is listed and not `undef`.
pub fn present(p: &Primitive, names: &[&str]) -> bool {
    find(p, names).is_some()
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
    find(p, names)
        .and_then(|md| md.data_type.bits())
        .or_else(|| first_bits(p))
}

pub fn bits_or_unknown(p: &Primitive, names: &[&str]) -> Result<u32, crate::Unknown> {
    bits(p, names).ok_or_else(|| crate::unknown("no data type in the memory descriptors"))
}

pub const F32_BITS: u32 = 32;

/// `elements × bits`, too large rather than wrapped.
pub fn traffic(elements: impl Into<crate::count::N>, bits: u32) -> crate::count::N {
    elements.into() * bits as u64
}
