//! What the log's header and diagnostics say about the run.

use crate::tally::Tally;
use profilednn_model::cpu_units::{header_units, IsaUnits};
use profilednn_verbose::line::{Component, Marker};
use profilednn_verbose::{parse_info, InfoLine};
use serde::Serialize;

#[derive(Debug, Clone, Default, Serialize)]
pub struct RunMetadata {
    /// Format generations seen on primitive lines (`onednn_verbose v1`, `dnnl_verbose`, …).
    pub formats: Vec<String>,
    /// Library versions from header lines (several when logs of several runs are concatenated).
    pub versions: Vec<String>,
    pub isa: Vec<String>,
    /// `cpu: OpenMP, 2 threads`.
    pub runtimes: Vec<String>,
    /// Thread count of the CPU runtime, when the header says it (2.6+).
    pub threads: Option<u32>,
    pub templates: Vec<String>,
    /// Other info lines, verbatim.
    pub other_info: Vec<String>,
    /// How many header blocks (version lines) the log holds: one per process run.
    pub runs: usize,
}

impl RunMetadata {
    pub fn from_tally(t: &Tally) -> RunMetadata {
        let mut m = RunMetadata::default();
        let push = |v: &mut Vec<String>, s: String| {
            if !v.contains(&s) {
                v.push(s);
            }
        };
        for k in &t.info {
            let comp = if k.note == "graph" {
                Some(Component::Graph)
            } else {
                None
            };
            for info in parse_info(&k.text, comp) {
                match info {
                    InfoLine::Version {
                        library,
                        version,
                        commit,
                    } => {
                        m.runs += 1;
                        let c = commit
                            .map(|c| {
                                format!(" (commit {})", c.chars().take(10).collect::<String>())
                            })
                            .unwrap_or_default();
                        push(&mut m.versions, format!("{library} {version}{c}"));
                    }
                    InfoLine::Isa { isa } => push(&mut m.isa, isa),
                    InfoLine::Runtime {
                        engine,
                        runtime,
                        threads,
                    } => {
                        if engine == "cpu" && threads.is_some() {
                            m.threads = threads;
                        }
                        let th = threads
                            .map(|n| format!(", {n} thread{}", if n == 1 { "" } else { "s" }))
                            .unwrap_or_default();
                        push(&mut m.runtimes, format!("{engine}: {runtime}{th}"));
                    }
                    InfoLine::Template { component, fields } => push(
                        &mut m.templates,
                        format!("{component}: {}", fields.join(",")),
                    ),
                    InfoLine::Other { text } => push(&mut m.other_info, text),
                }
            }
        }
        let v1_lines: u64 = t.keys[1]
            .values()
            .chain(t.keys[3].values())
            .map(|s| s.calls)
            .sum();
        for marker in [Marker::Mkldnn, Marker::Dnnl, Marker::Onednn] {
            let n = t.marker_lines[marker as usize];
            if n == 0 {
                continue;
            }
            if marker == Marker::Onednn && v1_lines > 0 {
                m.formats.push(format!("{} v1", marker.as_str()));
                if v1_lines < n {
                    m.formats.push(marker.as_str().to_string());
                }
            } else {
                m.formats.push(marker.as_str().to_string());
            }
        }
        m
    }

    /// The units the header's ISA lines say the CPU has (all of them, for merged logs), from
    /// [`profilednn_model::cpu_units`]'s table; `None` without an ISA line.
    pub fn cpu_units(&self) -> Option<IsaUnits> {
        let readings: Vec<IsaUnits> = self.isa.iter().map(|i| header_units(i)).collect();
        IsaUnits::merge(&readings)
    }

    /// Whether bf16 compute runs on bf16 units (AVX512-BF16/AVX10 dot products or AMX) by the
    /// header: `None` when there is no ISA line or the table does not know it.
    pub fn native_bf16(&self) -> Option<bool> {
        self.cpu_units().and_then(|u| u.native_bf16())
    }

    /// How oneDNN's verbose mode was set for the run: `Some(timestamps)` when the log holds a
    /// line of its header (a version, an info or template line, which every generation prints
    /// before any primitive's), `None` when verbose mode was off or oneDNN never started. A
    /// replay that should pay what the logged step paid per primitive turns it on alike.
    pub fn verbose_recording(&self) -> Option<bool> {
        (!self.versions.is_empty() || !self.templates.is_empty())
            .then(|| self.templates.iter().any(|t| t.contains("timestamp")))
    }

    /// True when the header reports bf16 units (for f32-on-bf16-hardware advice); false when
    /// it reports none *or is unknown* — see [`RunMetadata::native_bf16`] to tell them apart.
    pub fn has_bf16_hardware(&self) -> bool {
        self.native_bf16() == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avx10_1_header_has_bf16_units() {
        let m = RunMetadata {
            isa: vec!["Intel AVX10.1".into()],
            ..Default::default()
        };
        assert_eq!(m.native_bf16(), Some(true));
        let m = RunMetadata {
            isa: vec!["Intel AVX10.7 with teleport support".into()],
            ..Default::default()
        };
        assert_eq!(m.native_bf16(), None);
        assert!(!m.has_bf16_hardware());
    }

    /// Verbose mode as recorded, from real headers: oneDNN 3.13's with timestamps (as `record`
    /// sets them), 3.2's without, and a log with no oneDNN line at all.
    #[test]
    fn verbose_recording_reads_the_header() {
        let read = |text: &str| {
            let mut t = Tally::default();
            t.consume_chunk(0, text.as_bytes(), true);
            RunMetadata::from_tally(&t).verbose_recording()
        };
        assert_eq!(
            read(
                "onednn_verbose,v1,info,oneDNN v3.13.3 (commit b38f97eb6f2173513112f15a0481750b8a66e901)\n\
                 onednn_verbose,v1,primitive,info,template:timestamp,operation,engine,primitive,implementation,prop_kind,memory_descriptors,attributes,auxiliary,problem_desc,exec_time\n"
            ),
            Some(true)
        );
        assert_eq!(
            read(
                "onednn_verbose,info,oneDNN v3.2.0 (commit 40112196287e8866a7259df35f817229454d0c96)\n\
                 onednn_verbose,info,prim_template:operation,engine,primitive,implementation,prop_kind,memory_descriptors,attributes,auxiliary,problem_desc,exec_time\n"
            ),
            Some(false)
        );
        assert_eq!(read("profilednn,iteration,0\nhello\n"), None);
    }

    /// Found by `cargo fuzz`: a commit hash with multi-byte characters once split a char.
    #[test]
    fn non_ascii_commit_does_not_panic() {
        let mut t = Tally::default();
        t.consume_chunk(
            0,
            "onednn_verbose,info,oneDNN v3.5.0 (commit 014ccb106ˊb1fd4)\n".as_bytes(),
            true,
        );
        let m = RunMetadata::from_tally(&t);
        assert_eq!(
            m.versions,
            vec!["oneDNN 3.5.0 (commit 014ccb106ˊ)".to_string()]
        );
    }
}
