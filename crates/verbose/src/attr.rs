//! Attribute field: `attr-NAME:VALUE` tokens (v2.3+) or `;`-terminated items (v1.1–v2.2).

use profilednn_model::attr::QuantArg;
use profilednn_model::{Attribute, Attributes, PostOp};

pub fn parse_attrs(field: &str) -> Attributes {
    let field = field.trim();
    if field.is_empty() {
        return Attributes::default();
    }
    let items = if field.contains("attr-") || !field.contains(';') {
        field.split_ascii_whitespace().map(parse_modern).collect()
    } else {
        split_old_style(field)
            .into_iter()
            .map(|(n, v)| parse_old(n, v))
            .collect()
    };
    Attributes { items }
}

fn quant_args(value: &str) -> Vec<QuantArg> {
    value
        .split('+')
        .filter(|s| !s.is_empty())
        .map(|s| match s.split_once(':') {
            Some((arg, spec)) => QuantArg {
                arg: arg.to_string(),
                spec: spec.to_string(),
            },
            None => QuantArg {
                arg: s.to_string(),
                spec: String::new(),
            },
        })
        .collect()
}

fn post_ops(value: &str, sep: char) -> Vec<PostOp> {
    value
        .split(sep)
        .filter(|s| !s.is_empty())
        .map(PostOp::parse)
        .collect()
}

fn fpmath(value: &str) -> Attribute {
    match value.split_once(':') {
        Some((mode, a2i)) => Attribute::Fpmath {
            mode: mode.to_string(),
            apply_to_int: a2i == "true",
        },
        None => Attribute::Fpmath {
            mode: value.to_string(),
            apply_to_int: false,
        },
    }
}

fn parse_modern(token: &str) -> Attribute {
    let (name, value) = token.split_once(':').unwrap_or((token, ""));
    let v = value.to_string();
    match name {
        "attr-scratchpad" => Attribute::Scratchpad(v),
        "attr-fpmath" | "attr-fpmath_mode" => fpmath(value),
        "attr-acc" | "attr-acc-mode" => Attribute::AccMode(v),
        "attr-rounding-mode" => Attribute::RoundingMode(v),
        "attr-deterministic" => Attribute::Deterministic(v),
        "attr-oscale" => Attribute::Oscale(v),
        "attr-scales" => Attribute::Scales(quant_args(value)),
        "attr-zero-points" => Attribute::ZeroPoints(quant_args(value)),
        "attr-precomputed-reductions" => Attribute::PrecomputedReductions(quant_args(value)),
        "attr-post-ops" => Attribute::PostOps(post_ops(value, '+')),
        "attr-dropout" => Attribute::Dropout(v),
        "rnn_data_qparams" => Attribute::RnnDataQparams(v.trim_end_matches(';').to_string()),
        _ => Attribute::Other {
            name: name.to_string(),
            value: v,
        },
    }
}

/// `scratchpad_mode:user;oscale:0:0.5;post_ops:'eltwise_relu;sum:1;';` → (name, value) pairs.
fn split_old_style(field: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let b = field.as_bytes();
    let (mut start, mut in_quote) = (0, false);
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'\'' => in_quote = !in_quote,
            b';' if !in_quote => {
                let item = field[start..i].trim();
                if !item.is_empty() {
                    out.push(item.split_once(':').unwrap_or((item, "")));
                }
                start = i + 1;
            }
            _ => {}
        }
    }
    let tail = field[start..].trim();
    if !tail.is_empty() {
        out.push(tail.split_once(':').unwrap_or((tail, "")));
    }
    out
}

fn parse_old(name: &str, value: &str) -> Attribute {
    let unq = value.trim_matches('\'');
    match name {
        "scratchpad_mode" => Attribute::Scratchpad(unq.to_string()),
        "oscale" => Attribute::Oscale(unq.to_string()),
        "post_ops" => Attribute::PostOps(post_ops(unq, ';')),
        "scales" => Attribute::Scales(unq.split('_').flat_map(quant_args).collect()),
        "zero_points" => Attribute::ZeroPoints(unq.split('_').flat_map(quant_args).collect()),
        "rnn_data_qparams" => Attribute::RnnDataQparams(unq.to_string()),
        _ => Attribute::Other {
            name: name.to_string(),
            value: value.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern_attributes_keep_values_and_follow_converter_order() {
        let a = parse_attrs("attr-scratchpad:user attr-post-ops:eltwise_relu ");
        assert_eq!(
            a.canonical_string(),
            "attr-post-ops:eltwise_relu attr-scratchpad:user"
        );
        let a = parse_attrs(
            "attr-fpmath:bf16:true attr-scales:wei:3:bf16:32x1 attr-zero-points:wei:3:s8:32x1",
        );
        assert_eq!(a.fpmath_mode(), Some("bf16"));
        assert_eq!(
            a.canonical_string(),
            "attr-fpmath:bf16:true attr-scales:wei:3:bf16:32x1 attr-zero-points:wei:3:s8:32x1"
        );
        let a = parse_attrs("attr-post-ops:eltwise_relu+dw:k3s1p1:u8");
        assert_eq!(a.post_ops().len(), 2);
        // 2.6 spelling normalised, 3.4 acc spelling too.
        assert_eq!(
            parse_attrs("attr-fpmath_mode:bf16").canonical_string(),
            "attr-fpmath:bf16"
        );
        assert_eq!(
            parse_attrs("attr-acc:relaxed").canonical_string(),
            "attr-acc-mode:relaxed"
        );
        // Unknown attributes are preserved.
        assert_eq!(
            parse_attrs("attr-quantum:spin").canonical_string(),
            "attr-quantum:spin"
        );
    }

    #[test]
    fn old_style_attributes() {
        let a = parse_attrs("scratchpad_mode:user;oscale:0:0.5;post_ops:'eltwise_relu;sum:1;';");
        assert_eq!(a.items.len(), 3);
        assert_eq!(a.post_ops().len(), 2);
        assert_eq!(a.items[1], Attribute::Oscale("0:0.5".into()));
    }
}
