//! A target machine profile read for a projection: every missing required field named at once,
//! another document or schema version refused by name, and each optional field whose absence
//! makes a default stand in listed (the band widens for each).
//!
//! Why here and not only in `MachineProfile::from_json`: serde stops at the first missing field
//! and knows nothing of what a projection needs beyond a roofline (threads, units).

use profilednn_machine::{MachineProfile, SCHEMA, SCHEMA_V1};
use serde_json::Value;

/// Why a target profile cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TargetProfileError {
    #[error("{path}: not JSON ({source}): expected a machine profile ({SCHEMA}; `profilednn peak -o FILE` writes one on the target, or write name, peak_gflops and memory_gbps from its spec sheet)")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("{path}: schema '{found}' is {what}, not a machine profile: this version reads '{SCHEMA}' and '{SCHEMA_V1}'; measure the target again with `profilednn peak -o FILE`, or write a spec-sheet profile (docs/machines.md)")]
    Schema {
        path: String,
        found: String,
        what: &'static str,
    },
    #[error("{path}: missing {}: a target profile needs \"name\", \"peak_gflops\" with at least \"f32\" (GFLOP/s) and \"memory_gbps\" (GB/s); see docs/machines.md", missing.join(", "))]
    Missing { path: String, missing: Vec<String> },
    #[error("{0}")]
    Invalid(#[from] profilednn_machine::ProfileError),
}

/// A target profile and the defaults that stand in for what it does not say.
#[derive(Debug, Clone)]
pub struct TargetProfile {
    pub profile: MachineProfile,
    /// The file it was read from.
    pub path: String,
    /// Each optional field the profile lacks, with the default used.
    pub defaults: Vec<String>,
}

impl TargetProfile {
    /// A spec sheet: no compute measurement of `profilednn peak`.
    pub fn is_spec_sheet(&self) -> bool {
        self.profile.compute.is_empty()
    }

    /// `measured` or `spec_sheet`, as the JSON documents name the kind.
    pub fn kind(&self) -> &'static str {
        if self.is_spec_sheet() {
            "spec_sheet"
        } else {
            "measured"
        }
    }
}

/// Reads a target profile from its JSON `text` (`path` names it in errors).
pub fn parse(text: &str, path: &str) -> Result<TargetProfile, TargetProfileError> {
    let v: Value = serde_json::from_str(text).map_err(|source| TargetProfileError::Json {
        path: path.into(),
        source,
    })?;
    if let Some(s) = v.get("schema").and_then(Value::as_str) {
        if s != SCHEMA && s != SCHEMA_V1 {
            let what = if s.starts_with("profilednn.machine.") {
                "another version of the machine profile"
            } else if s.starts_with("profilednn.") {
                "another ProfileDNN document"
            } else {
                "unknown"
            };
            return Err(TargetProfileError::Schema {
                path: path.into(),
                found: s.into(),
                what,
            });
        }
    }
    let missing = missing_fields(&v);
    if !missing.is_empty() {
        return Err(TargetProfileError::Missing {
            path: path.into(),
            missing,
        });
    }
    let profile = MachineProfile::from_json(text, path)?;
    let defaults = defaults_of(&profile);
    Ok(TargetProfile {
        profile,
        path: path.into(),
        defaults,
    })
}

fn missing_fields(v: &Value) -> Vec<String> {
    let mut missing = Vec::new();
    if v.get("name").and_then(Value::as_str).is_none() {
        missing.push("\"name\" (text)".to_string());
    }
    match v.get("peak_gflops") {
        Some(p) if p.get("f32").and_then(Value::as_f64).is_some() => {}
        Some(_) => missing.push("\"peak_gflops\".\"f32\" (GFLOP/s, all cores)".to_string()),
        None => missing.push("\"peak_gflops\" ({\"f32\": GFLOP/s, …}, all cores)".to_string()),
    }
    if v.get("memory_gbps").and_then(Value::as_f64).is_none() {
        missing.push("\"memory_gbps\" (GB/s, all cores)".to_string());
    }
    missing
}

/// What the projection assumes where the profile is silent.
fn defaults_of(p: &MachineProfile) -> Vec<String> {
    let mut d = Vec::new();
    if p.threads.is_none() {
        d.push(
            "\"threads\" missing: its roofs are taken as those of the log's threads per rank \
             (not scaled)"
                .to_string(),
        );
    }
    if p.isa.is_empty() && p.unit_gflops.is_empty() && p.compute.is_empty() {
        d.push(
            "\"isa\" and \"unit_gflops\" missing: which unit each peak is of is unknown (AMX, \
             dot product or FMA); each precision takes its peak_gflops figure"
                .to_string(),
        );
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_missing_field_is_named_at_once() {
        let e = parse(r#"{"peak_gflops":{"bf16":100}}"#, "t.json").unwrap_err();
        let s = e.to_string();
        assert!(
            s.starts_with("t.json: missing \"name\" (text), \"peak_gflops\".\"f32\" (GFLOP/s, all cores), \"memory_gbps\" (GB/s, all cores)"),
            "{s}"
        );
    }

    #[test]
    fn another_schema_is_named() {
        let e = parse(
            r#"{"schema":"profilednn.machine.v3","name":"x","peak_gflops":{"f32":1},"memory_gbps":1}"#,
            "t.json",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains(
                "schema 'profilednn.machine.v3' is another version of the machine profile"
            ),
            "{e}"
        );
        let e = parse(r#"{"schema":"profilednn.projection.v1"}"#, "p.json").unwrap_err();
        assert!(
            e.to_string().contains("is another ProfileDNN document"),
            "{e}"
        );
    }

    #[test]
    fn a_short_spec_sheet_reads_with_its_defaults_said() {
        let t = parse(
            r#"{"name":"s","peak_gflops":{"f32":100},"memory_gbps":10}"#,
            "s.json",
        )
        .unwrap();
        assert!(t.is_spec_sheet());
        assert_eq!(t.defaults.len(), 2, "{:?}", t.defaults);
        assert!(t.defaults[0].starts_with("\"threads\" missing"));
    }
}
