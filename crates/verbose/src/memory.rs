//! Memory descriptor field: three syntaxes over the years.
//!
//! * MKL-DNN 0.x: ad-hoc `name:format` pairs (`fsrc:nchw`, `in:f32_oihw`).
//! * v1.0–v3.5: `ARG_DT:PROPS:FMTKIND:TAG[:STRIDES]:FLAGS` — argument and data type glued by
//!   `_`, and argument names contain `_` themselves.
//! * v3.6+ (`v1` lines): `ARG:DT:PROPS:FMTKIND:TAG:STRIDES:FLAGS`.

use profilednn_model::{DataType, FormatKind, MemoryDesc};

/// A memory descriptor that none of the syntaxes reads. The messages name the item and the
/// layout expected, so a reader can tell a torn line from a syntax this parser does not know yet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryDescError {
    /// Fewer `:`-separated sub-fields than the syntax has.
    #[error("memory descriptor '{item}': expected {layout}")]
    Layout { item: String, layout: &'static str },
    /// The data-type sub-field names no data type.
    #[error("memory descriptor '{item}': '{found}' is not a data type")]
    DataType { item: String, found: String },
}

const LAYOUT_V1: &str = "ARG:DT:PROPS:FORMAT_KIND:TAG:STRIDES:FLAGS";
const LAYOUT_LEGACY: &str = "ARG_DT:PROPS:FORMAT_KIND:TAG:FLAGS";
const LAYOUT_LEGACY_ARG: &str = "ARG_DT (e.g. src_f32) before the first ':'";

/// Parses a whole memory-descriptor field (space separated items).
pub fn parse_mds(
    field: &str,
    v1_syntax: bool,
    legacy_v0: bool,
) -> Result<Vec<MemoryDesc>, MemoryDescError> {
    field
        .split_ascii_whitespace()
        .map(|item| {
            if legacy_v0 {
                Ok(parse_v0(item))
            } else if v1_syntax {
                parse_v1(item)
            } else {
                parse_legacy(item)
            }
        })
        .collect()
}

fn default_flags(flags: String) -> String {
    if flags.is_empty() {
        "f0".into()
    } else {
        flags
    }
}

/// `src:f32::blocked:aBcd16b::f0`, `wei:s8:a:blocked:AcdB32a4b::f8:zpm1`.
pub fn parse_v1(item: &str) -> Result<MemoryDesc, MemoryDescError> {
    let parts: Vec<&str> = item.split(':').collect();
    if parts.len() < 4 {
        return Err(MemoryDescError::Layout {
            item: item.to_string(),
            layout: LAYOUT_V1,
        });
    }
    let data_type = DataType::parse(parts[1]).ok_or_else(|| MemoryDescError::DataType {
        item: item.to_string(),
        found: parts[1].to_string(),
    })?;
    let format_kind = FormatKind::parse(parts[3]);
    let mut tag = parts.get(4).copied().unwrap_or("").to_string();
    let mut rest = 5;
    // Experimental grouped sparse encoding carries two more sub-fields in the tag position.
    if tag == "grouped" && parts.len() >= 9 {
        tag = parts[4..7].join(":");
        rest = 7;
    }
    let strides = parts.get(rest).copied().unwrap_or("").to_string();
    let flags = if parts.len() > rest + 1 {
        parts[rest + 1..].join(":")
    } else {
        String::new()
    };
    Ok(MemoryDesc {
        arg: parts[0].to_string(),
        data_type,
        properties: parts[2].to_string(),
        format_kind,
        tag,
        strides,
        flags: default_flags(flags),
    })
}

/// `src_f32::blocked:abcd:f0` (v1.0–v3.1) and `src_f32:a:blocked:abcd::f0` (v3.2–v3.5).
pub fn parse_legacy(item: &str) -> Result<MemoryDesc, MemoryDescError> {
    let parts: Vec<&str> = item.split(':').collect();
    let arg_dt = parts[0];
    // Argument names contain '_' (diff_src, src_iter_c), data types too (f8_e5m2): take the
    // first split whose suffix is a data type.
    let (arg, data_type) = arg_dt
        .match_indices('_')
        .find_map(|(i, _)| DataType::parse(&arg_dt[i + 1..]).map(|dt| (&arg_dt[..i], dt)))
        .ok_or_else(|| MemoryDescError::Layout {
            item: item.to_string(),
            layout: LAYOUT_LEGACY_ARG,
        })?;
    if parts.len() < 3 {
        return Err(MemoryDescError::Layout {
            item: item.to_string(),
            layout: LAYOUT_LEGACY,
        });
    }
    let properties = parts[1].to_string();
    let format_kind = FormatKind::parse(parts[2]);
    let tag = parts.get(3).copied().unwrap_or("").to_string();
    let (strides, flags) = match parts.get(4) {
        // v3.2+ has a strides sub-field before the flags; flags always start with 'f'.
        Some(p) if !p.contains('f') => (
            p.to_string(),
            parts.get(5..).map(|f| f.join(":")).unwrap_or_default(),
        ),
        Some(_) => (String::new(), parts[4..].join(":")),
        None => (String::new(), String::new()),
    };
    Ok(MemoryDesc {
        arg: arg.to_string(),
        data_type,
        properties,
        format_kind,
        tag,
        strides,
        flags: default_flags(flags),
    })
}

/// MKL-DNN 0.x: `fsrc:nchw`, `fdiff:undef`, `in:f32_oihw`, `dt:f32 fmt:nchw`, `fdata:tnc-…`.
///
/// Data types were not printed except for reorders, shuffle and RNN; everything else was f32
/// unless the implementation says otherwise, so f32 is recorded.
pub fn parse_v0(item: &str) -> MemoryDesc {
    let (name, value) = item.split_once(':').unwrap_or((item, ""));
    let blocked = |arg: &str, dt: DataType, tag: &str| {
        let absent = tag == "undef";
        MemoryDesc {
            arg: arg.to_string(),
            data_type: if absent { DataType::Undef } else { dt },
            properties: String::new(),
            format_kind: if absent {
                FormatKind::Undef
            } else {
                FormatKind::Blocked
            },
            tag: if absent {
                String::new()
            } else {
                tag.to_string()
            },
            strides: String::new(),
            flags: "f0".into(),
        }
    };
    match name {
        "in" | "out" => {
            let arg = if name == "in" { "src" } else { "dst" };
            match value.split_once('_') {
                Some((dt, fmt)) if DataType::parse(dt).is_some() => {
                    blocked(arg, DataType::parse(dt).unwrap(), fmt)
                }
                _ => blocked(arg, DataType::F32, value),
            }
        }
        n if n.starts_with('f') && n.len() > 1 => blocked(&n[1..], DataType::F32, value),
        n => blocked(n, DataType::Undef, value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(r: Result<MemoryDesc, MemoryDescError>) -> String {
        r.unwrap().to_string()
    }

    #[test]
    fn v1_items() {
        assert_eq!(
            s(parse_v1("src:f32::blocked:aBcd16b::f0")),
            "src:f32::blocked:aBcd16b::f0"
        );
        assert_eq!(
            s(parse_v1("wei:s8:a:blocked:AcdB32a4b::f8:zpm1")),
            "wei:s8:a:blocked:AcdB32a4b::f8:zpm1"
        );
        assert_eq!(s(parse_v1("bia:undef::undef:::")), "bia:undef::undef:::f0");
        assert_eq!(
            s(parse_v1("dst:bf16::blocked:ab:2048x1:f0")),
            "dst:bf16::blocked:ab:2048x1:f0"
        );
        assert_eq!(
            s(parse_v1("src:f32::sparse:grouped:0:4::f0")),
            "src:f32::sparse:grouped:0:4::f0"
        );
        assert_eq!(
            parse_v1("src:f99x::blocked:ab::f0")
                .unwrap_err()
                .to_string(),
            "memory descriptor 'src:f99x::blocked:ab::f0': 'f99x' is not a data type"
        );
        let md = parse_v1("bia:undef::undef:::").unwrap();
        assert!(md.is_absent());
    }

    #[test]
    fn legacy_items() {
        assert_eq!(
            s(parse_legacy("src_f32::blocked:abcd:f0")),
            "src:f32::blocked:abcd::f0"
        );
        assert_eq!(
            s(parse_legacy("src_f32:a:blocked:abcd::f0")),
            "src:f32:a:blocked:abcd::f0"
        );
        assert_eq!(
            s(parse_legacy("diff_undef::undef:::")),
            "diff:undef::undef:::f0"
        );
        assert_eq!(
            s(parse_legacy("diff_undef::undef::f0")),
            "diff:undef::undef:::f0"
        );
        assert_eq!(
            s(parse_legacy("src_f32::blocked:ab:512x1:f0")),
            "src:f32::blocked:ab:512x1:f0"
        );
        assert_eq!(
            s(parse_legacy("bia_f32::blocked:ab:f0_mask2")),
            "bia:f32::blocked:ab::f0_mask2"
        );
        assert_eq!(
            s(parse_legacy("diff_src_iter_c_f32::blocked:abcde:f0")),
            "diff_src_iter_c:f32::blocked:abcde::f0"
        );
        assert_eq!(
            s(parse_legacy("src_f8_e5m2::blocked:ab::f0")),
            "src:f8_e5m2::blocked:ab::f0"
        );
        assert_eq!(
            parse_legacy("nodatatype::blocked:ab:f0").unwrap_err().to_string(),
            "memory descriptor 'nodatatype::blocked:ab:f0': expected ARG_DT (e.g. src_f32) before the first ':'"
        );
    }

    #[test]
    fn v0_items() {
        assert_eq!(
            parse_v0("fsrc:nchw").to_string(),
            "src:f32::blocked:nchw::f0"
        );
        assert_eq!(
            parse_v0("in:f32_oihw").to_string(),
            "src:f32::blocked:oihw::f0"
        );
        assert_eq!(
            parse_v0("out:s8_OIhw4i16o4i").to_string(),
            "dst:s8::blocked:OIhw4i16o4i::f0"
        );
        assert!(parse_v0("fdiff:undef").is_absent());
    }
}
