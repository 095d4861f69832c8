//! The error band of a projection onto another machine.
//!
//! Why a band: the method keeps each primitive's efficiency and moves it to the target's roofs;
//! how far that holds is measured on the machine library's pairs (`machines/band.json`, the
//! largest whole-step error of the target pairs). Until pairs are measured, a stated default
//! stands, marked "not yet measured": ±35 % for a measured profile, ±60 % for a spec sheet (its
//! peaks are the datasheet's, above what the units reach, by an amount that differs per unit).
//! Each default that stands in for a missing figure (an unmeasured AMX roof, unknown threads,
//! emulation) widens it by 10 points.

use serde::{Deserialize, Serialize};

/// Default relative error for a measured target profile, until measured.
pub const DEFAULT_MEASURED: f64 = 0.35;
/// Default relative error for a spec-sheet target profile, until measured.
pub const DEFAULT_SPEC_SHEET: f64 = 0.60;
/// A spec sheet's band over the measured profiles', until spec sheets are measured themselves.
pub const SPEC_SHEET_OVER_MEASURED: f64 = 0.25;
/// How much wider than a measured profile's a measured spec-sheet band is at least: one step of
/// the 5-point rounding of `machines/band.json`.
pub const SPEC_SHEET_STEP: f64 = 0.05;
/// Widening per default standing in for a missing figure.
pub const PER_STAND_IN: f64 = 0.10;

/// The library's measured errors (`machines/band.json`).
#[derive(Debug, Clone, Deserialize)]
struct Measured {
    measured_profile: Option<f64>,
    spec_sheet: Option<f64>,
    pairs: u32,
}

fn measured() -> Option<Measured> {
    serde_json::from_str(include_str!("../../../../machines/band.json")).ok()
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Band {
    /// ± this share of the projected step.
    pub relative: f64,
    pub low_ms: f64,
    pub high_ms: f64,
    /// Whether the base figure was measured on the library's pairs.
    pub measured: bool,
    /// Where the figure comes from, and what widened it.
    pub basis: String,
}

/// The band around `projected_ms` for a target that is a spec sheet or not, widened once per
/// entry of `stand_ins`.
pub fn band(projected_ms: f64, spec_sheet: bool, stand_ins: usize) -> Band {
    let lib = measured();
    let (kind, default) = if spec_sheet {
        ("spec-sheet", DEFAULT_SPEC_SHEET)
    } else {
        ("measured", DEFAULT_MEASURED)
    };
    let from_lib = lib.as_ref().and_then(|m| {
        let n = m.pairs;
        let measured_here = format!(
            "the largest whole-step error measured on the machine library's {n} pair(s) with \
             a {kind} target profile"
        );
        match (spec_sheet, m.spec_sheet, m.measured_profile) {
            (false, _, Some(r)) => Some((r, true, measured_here)),
            // A spec sheet knows less than a measured profile: its band is wider by at least
            // one rounding step, whatever the few pairs measured.
            (true, Some(s), measured) => Some((
                s.max(measured.map_or(0.0, |m| m + SPEC_SHEET_STEP)),
                true,
                measured_here,
            )),
            // Not measured on a spec sheet yet: wider than the measured profiles' error.
            (true, None, Some(r)) => Some((
                (r + SPEC_SHEET_OVER_MEASURED).max(DEFAULT_SPEC_SHEET),
                false,
                format!(
                    "the error measured on the machine library's {n} pair(s) with measured \
                     target profiles plus 25 points: not yet measured with a spec sheet"
                ),
            )),
            _ => None,
        }
    });
    let (base, measured, mut basis) = match from_lib {
        Some((r, measured, why)) => (r, measured, format!("±{:.0} %: {why}", r * 100.0)),
        None => (
            default,
            false,
            format!(
                "±{:.0} %: the default for a {kind} target profile, not yet measured on the \
                 machine library's pairs",
                default * 100.0
            ),
        ),
    };
    let relative = base + PER_STAND_IN * stand_ins as f64;
    if stand_ins > 0 {
        basis += &format!(
            "; widened by {} points for {stand_ins} default(s) standing in for missing figures",
            (PER_STAND_IN * stand_ins as f64 * 100.0).round()
        );
    }
    Band {
        relative,
        low_ms: (projected_ms * (1.0 - relative)).max(0.0),
        high_ms: projected_ms * (1.0 + relative),
        measured,
        basis,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_sheet_gets_the_wider_band_and_stand_ins_widen_it() {
        let lib = measured().expect("machines/band.json reads");
        let m = band(100.0, false, 0);
        let s = band(100.0, true, 0);
        assert!(s.relative > m.relative, "{s:?} {m:?}");
        if lib.measured_profile.is_none() {
            assert_eq!((m.low_ms, m.high_ms, m.measured), (65.0, 135.0, false));
            assert!(m.basis.contains("not yet measured"), "{}", m.basis);
        }
        let w = band(100.0, false, 2);
        assert!((w.relative - m.relative - 0.2).abs() < 1e-12);
        assert!(w.basis.contains("widened by 20 points"), "{}", w.basis);
    }
}
