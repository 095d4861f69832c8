//! benchdnn's performance output read back: `perf,…` lines in the default template
//! (`perf,%engine%,%impl%,%name%,%prb%,%Gops%,%+ctime%,%-time%,%-Gflops%,%0time%,%0Gflops%`)
//! or `--perf-template=csv` (`perf,%engine%,%impl%,%name%,<driver fields>,%attr%,%DESC%,` and
//! the same six numbers). Both end with the same six numbers, which is what is relied on.

use serde::{Deserialize, Serialize};

/// The schema of `benchdnn --ingest`'s JSON (docs/benchdnn-results-json.md).
pub const SCHEMA: &str = "profilednn.benchdnn-results.v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerfResult {
    /// 1-based line in the results file.
    pub line: u64,
    pub engine: String,
    pub implementation: String,
    /// The problem descriptor (`mb2ic3ih224…`, `2x64x56x56:1x64x1x1`).
    pub desc: String,
    /// benchdnn's reproducer (default template only): `--conv --dir=FWD_B … DESC`.
    pub prb: Option<String>,
    pub gops: f64,
    pub create_ms: f64,
    pub min_ms: f64,
    pub avg_ms: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct IngestError {
    pub line: u64,
    pub what: String,
}

impl std::fmt::Display for IngestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

/// Every `perf,` line of `text`; lines that start with `perf,` but do not fit are returned as
/// errors (with their line number), the rest of the file is still read.
pub fn parse_perf(text: &str) -> (Vec<PerfResult>, Vec<IngestError>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let n = i as u64 + 1;
        let Some(rest) = l.trim_end().strip_prefix("perf,") else {
            continue;
        };
        let f: Vec<&str> = rest.split(',').collect();
        if f.len() < 10 {
            errors.push(IngestError {
                line: n,
                what: format!(
                    "expected at least 11 comma-separated fields, found {}",
                    f.len() + 1
                ),
            });
            continue;
        }
        let nums: Result<Vec<f64>, _> = f[f.len() - 6..]
            .iter()
            .map(|x| x.trim().parse::<f64>())
            .collect();
        let Ok(nums) = nums else {
            errors.push(IngestError {
                line: n,
                what: "expected the last six fields to be numbers (Gops, ctime, -time, -Gflops, 0time, 0Gflops)".into(),
            });
            continue;
        };
        let body = &f[..f.len() - 6];
        // Default template: field 4 is the reproducer, with `--` options and the descriptor last.
        let (desc, prb) = if body.len() == 4 && body[3].contains("--") {
            let prb = body[3].trim().to_string();
            (
                prb.split_whitespace().last().unwrap_or("").to_string(),
                Some(prb),
            )
        } else {
            (body[body.len() - 1].trim().to_string(), None)
        };
        out.push(PerfResult {
            line: n,
            engine: body[0].to_string(),
            implementation: body[1].to_string(),
            desc,
            prb,
            gops: nums[0],
            create_ms: nums[1],
            min_ms: nums[2],
            avg_ms: nums[4],
        });
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_and_csv_templates() {
        let text = "\
Output template: perf,%engine%,%impl%,%name%,%prb%,%Gops%,%+ctime%,%-time%,%-Gflops%,%0time%,%0Gflops%
perf,cpu,brg_conv_fwd:avx512_core,,--mode=P --conv --dir=FWD_B g1mb2_ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3,0.464858,12.5,1.25,371.886,1.5,309.905
perf,cpu,jit:avx512_core,,FWD_D,f32,any,any,any,direct,,mb2_ic64oc64_ih56oh56kh1sh1dh0ph0_iw56ow56kw1sw1dw0pw0,0.0513802,3.1,0.5,102.76,0.55,93.4
perf,cpu,broken
tests:2 passed:2";
        let (r, e) = parse_perf(text);
        assert_eq!(r.len(), 2);
        assert_eq!(
            r[0].desc,
            "g1mb2_ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3"
        );
        assert!(r[0].prb.as_deref().unwrap().starts_with("--mode=P --conv"));
        assert_eq!((r[0].min_ms, r[0].avg_ms), (1.25, 1.5));
        assert_eq!(
            r[1].desc,
            "mb2_ic64oc64_ih56oh56kh1sh1dh0ph0_iw56ow56kw1sw1dw0pw0"
        );
        assert_eq!(r[1].implementation, "jit:avx512_core");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].line, 4);
    }
}
