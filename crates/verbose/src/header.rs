//! `info` lines: the run's header (library version, ISA, runtime and threads, field templates).

use crate::line::Component;
use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InfoLine {
    /// `oneDNN v3.14.0 (commit 3f27…)`; `version` is the bare number.
    Version {
        library: String,
        version: String,
        commit: Option<String>,
    },
    /// The ISA the library detected (`Intel AVX10.1 and Intel AMX with bfloat16 …`).
    Isa { isa: String },
    /// `cpu,runtime:OpenMP,nthr:2`.
    Runtime {
        engine: String,
        runtime: String,
        threads: Option<u32>,
    },
    /// The field template (`template:operation,engine,…`), per component.
    Template {
        component: String,
        fields: Vec<String>,
    },
    /// Any other info line, verbatim (`experimental features are enabled`, engine lists, …).
    Other { text: String },
}

/// Reads the text of an `info` line (everything after `info,`).
pub fn parse_info(text: &str, component: Option<Component>) -> Vec<InfoLine> {
    let text = text.trim_end();
    if let Some(t) = text
        .strip_prefix("prim_template:")
        .or_else(|| text.strip_prefix("template:"))
    {
        let comp = match component {
            Some(Component::Graph) => "graph",
            _ => "primitive",
        };
        return vec![InfoLine::Template {
            component: comp.into(),
            fields: t.split(',').map(str::to_string).collect(),
        }];
    }
    if let Some(rest) = text
        .strip_prefix("cpu,")
        .or_else(|| text.strip_prefix("gpu,"))
    {
        let engine = text[..3].to_string();
        if let Some(isa) = rest.strip_prefix("isa:") {
            return vec![InfoLine::Isa {
                isa: isa.to_string(),
            }];
        }
        if let Some(rt) = rest.strip_prefix("runtime:") {
            let mut parts = rt.split(',');
            let runtime = parts.next().unwrap_or("").to_string();
            let threads = parts
                .find_map(|p| p.strip_prefix("nthr:"))
                .and_then(|n| n.parse().ok());
            return vec![InfoLine::Runtime {
                engine,
                runtime,
                threads,
            }];
        }
    }
    if let Some(isa) = text.strip_prefix("Detected ISA is ") {
        return vec![InfoLine::Isa {
            isa: isa.to_string(),
        }];
    }
    for lib in [
        "oneDNN v",
        "Intel MKL-DNN v",
        "Intel(R) MKL-DNN v",
        "DNNL v",
        "Intel(R) DNNL v",
    ] {
        if let Some(pos) = text.find(lib) {
            let after = &text[pos + lib.len()..];
            let version: String = after
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            if version.is_empty() {
                continue;
            }
            let commit = after
                .find("(commit ")
                .map(|i| &after[i + 8..])
                .or_else(|| after.find("(Git Hash ").map(|i| &after[i + 10..]))
                .map(|c| c.split(')').next().unwrap_or("").to_string());
            let library = lib
                .trim_end_matches(" v")
                .trim_start_matches("Intel(R) ")
                .trim_start_matches("Intel ")
                .to_string();
            let mut out = vec![InfoLine::Version {
                library,
                version,
                commit,
            }];
            // MKL-DNN 0.18–0.19 put the ISA after the version, separated by a comma.
            if let Some(close) = after.find(')') {
                let tail = after[close + 1..].trim_start_matches(',').trim();
                if !tail.is_empty() {
                    out.push(InfoLine::Isa {
                        isa: tail.to_string(),
                    });
                }
            }
            return out;
        }
    }
    vec![InfoLine::Other {
        text: text.to_string(),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lines_of_every_generation() {
        assert_eq!(
            parse_info(
                "oneDNN v3.14.0 (commit 3f27bec21fdce6b550f233bf6e0afd086ee8d543)",
                None
            ),
            vec![InfoLine::Version {
                library: "oneDNN".into(),
                version: "3.14.0".into(),
                commit: Some("3f27bec21fdce6b550f233bf6e0afd086ee8d543".into())
            }]
        );
        let v019 = parse_info(
            "Intel(R) MKL-DNN v0.19.0 (Git Hash 41bee20d7eb4a67feeeeb8d597b3598994eb1959),Intel(R) AVX512-Deep Learning Boost (Intel(R) AVX512-DL Boost)",
            None,
        );
        assert_eq!(v019.len(), 2);
        assert!(
            matches!(&v019[0], InfoLine::Version { version, library, .. } if version == "0.19.0" && library == "MKL-DNN")
        );
        assert!(
            matches!(&v019[1], InfoLine::Isa { isa } if isa.starts_with("Intel(R) AVX512-Deep"))
        );
        assert!(
            matches!(&parse_info("Intel MKL-DNN v1.0.4 (commit a0a8)", None)[0], InfoLine::Version { version, .. } if version == "1.0.4")
        );
        assert_eq!(
            parse_info("cpu,runtime:OpenMP,nthr:2", None),
            vec![InfoLine::Runtime {
                engine: "cpu".into(),
                runtime: "OpenMP".into(),
                threads: Some(2)
            }]
        );
        assert_eq!(
            parse_info(
                "cpu,isa:Intel AVX-512 with float16, Intel DL Boost and bfloat16 support",
                None
            ),
            vec![InfoLine::Isa {
                isa: "Intel AVX-512 with float16, Intel DL Boost and bfloat16 support".into()
            }]
        );
        assert!(matches!(
            &parse_info("Detected ISA is Intel AVX-512 with Intel DL Boost", None)[0],
            InfoLine::Isa { .. }
        ));
        match &parse_info(
            "template:timestamp,operation,engine,partition_id",
            Some(Component::Graph),
        )[0]
        {
            InfoLine::Template { component, fields } => {
                assert_eq!(component, "graph");
                assert_eq!(fields[0], "timestamp");
            }
            o => panic!("{o:?}"),
        }
        assert!(
            matches!(&parse_info("prim_template:operation,engine", None)[0], InfoLine::Template { component, .. } if component == "primitive")
        );
        assert!(matches!(
            &parse_info("gpu,runtime:none", None)[0],
            InfoLine::Runtime { threads: None, .. }
        ));
        assert!(matches!(
            &parse_info(
                "experimental functionality for sparse domain is enabled",
                None
            )[0],
            InfoLine::Other { .. }
        ));
    }
}
