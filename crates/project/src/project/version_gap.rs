//! The oneDNN that recorded a log and the one that replays it (issue 52 item 3). PyTorch links
//! its own oneDNN statically (2.15: 3.13.3, no exported symbols), so the replay runs another
//! build — pip's 3.2, or the 3.13 DPC++ build — and a difference between versions is in every
//! replayed figure. The projection names both and the gap it assumed, measured:
//!
//! Measured on an Intel Xeon (docs/projection-onednn-versions.md), pip's 3.2 and the 3.13
//! build replaying the same ResNet logs differed by less than one version's run-to-run spread,
//! so no correction is assumed.

use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct VersionGap {
    /// The log's oneDNN (`3.13`), as major.minor.
    pub recorded_onednn: String,
    /// The replay's oneDNN (`3.2`), as major.minor.
    pub replayed_onednn: String,
    /// The relative change the projection applied for the difference: 0, none (see the
    /// module doc for what was measured).
    pub assumed_change: f64,
    pub why: String,
}

/// `3.13` of `3.13.3 (commit b38f97eb6f)` or `oneDNN v3.13.3`.
fn major_minor(v: &str) -> Option<String> {
    let v = v
        .trim()
        .trim_start_matches("oneDNN")
        .trim()
        .trim_start_matches('v');
    let mut parts = v.split(|c: char| !c.is_ascii_digit());
    let (major, minor) = (parts.next()?, parts.next()?);
    (!major.is_empty() && !minor.is_empty()).then(|| format!("{major}.{minor}"))
}

/// The gap between the log's oneDNN (`log`: its version lines) and the replay's, when their
/// major.minor versions differ; `None` when they agree or either is unknown.
pub fn of(log: &[String], replay: Option<&str>) -> Option<VersionGap> {
    let replayed = major_minor(replay?)?;
    let recorded = log.iter().find_map(|v| major_minor(v))?;
    (recorded != replayed).then(|| VersionGap {
        why: "not corrected: on an Intel Xeon (family 6 model 207) a ResNet-50 f32 log of oneDNN \
              3.13 replayed with 3.2 and with 3.13 differed by less than one version's run-to-run \
              spread (−16…−7 % against −11…−1 % of the logged time; \
              docs/projection-onednn-versions.md)"
            .to_string(),
        recorded_onednn: recorded,
        replayed_onednn: replayed,
        assumed_change: 0.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_compared_by_major_and_minor() {
        let log = vec!["3.13.3 (commit b38f97eb6f)".to_string()];
        let gap = of(
            &log,
            Some("3.2.0 (40112196287e8866a7259df35f817229454d0c96)"),
        )
        .unwrap();
        assert_eq!(
            (gap.recorded_onednn.as_str(), gap.replayed_onednn.as_str()),
            ("3.13", "3.2")
        );
        assert_eq!(gap.assumed_change, 0.0);
        assert_eq!(
            of(&log, Some("3.13.2 (c852e73)")),
            None,
            "a patch release is the same"
        );
        assert_eq!(of(&log, Some("v3.1")).unwrap().replayed_onednn, "3.1");
        assert_eq!(of(&[], Some("3.2.0")), None, "an unknown log version");
        assert_eq!(of(&log, None), None);
        assert_eq!(of(&["unknown".into()], Some("3.2.0")), None);
    }
}
