//! Loss and gradient of every bf16 logit with target 0, tabulated: a bf16 logit is one of
//! 65 536 bit patterns, so for an all-zero target (nearly every element of a detection head's
//! classification loss) the unweighted loss and gradient are a function of those 16 bits. A
//! lookup replaces the ~40 multiplies and FMAs of exp, the reciprocal and ln(1 + e) that bound
//! the loss at one thread; the logits of a real head take a few thousand distinct values, so
//! the part of the table in use stays in L1. Used by the AVX-512 loop (gathers) and the
//! portable/AVX2 loop (loads).

use super::elem::{focal, GAMMA_0, GAMMA_1, GAMMA_2};

/// (loss, dloss/dx) per bf16 bit pattern, interleaved so both values of a logit share a line.
pub(super) type Table = [[f32; 2]; 1 << 16];

/// The table for γ ∈ {0, 1, 2} (`gamma_mode` GAMMA_0..GAMMA_2; any other γ has no table):
/// `elem::focal` with t = 0 and no α weighting, the same f32 arithmetic as the computed
/// loops, so a looked-up gradient × α_t equals the computed one bit for bit. Built on first
/// use, per γ (0.5 MB each).
pub(super) fn t0_table(gamma_mode: u8) -> Option<&'static Table> {
    static TABLES: [std::sync::OnceLock<Box<Table>>; 3] = [
        std::sync::OnceLock::new(),
        std::sync::OnceLock::new(),
        std::sync::OnceLock::new(),
    ];
    fn build<const G: u8>() -> Box<Table> {
        let mut t: Box<Table> = vec![[0f32; 2]; 1 << 16]
            .into_boxed_slice()
            .try_into()
            .expect("65 536 entries");
        for (b, e) in t.iter_mut().enumerate() {
            let (l, d) = focal::<G>(f32::from_bits((b as u32) << 16), 0.0, 0.0, G as f32, false);
            *e = [l, d];
        }
        t
    }
    if !t0_table_exists(gamma_mode) {
        return None;
    }
    let slot = TABLES.get(gamma_mode as usize)?;
    Some(slot.get_or_init(|| match gamma_mode {
        GAMMA_0 => build::<GAMMA_0>(),
        GAMMA_1 => build::<GAMMA_1>(),
        _ => build::<GAMMA_2>(),
    }))
}

/// Whether γ of `gamma_mode` has a table (without building it).
pub(super) fn t0_table_exists(gamma_mode: u8) -> bool {
    gamma_mode <= GAMMA_2
}
