//! The fields of one scale or zero-point specification (`3:bf16:32x1`), read with the grammar
//! oneDNN's verbose printer writes and its `verbose_converter` reads:
//! `MASK[:VALUE[*]|:*]` (2.x: a value or `*` for "set at run time") or
//! `MASK[:DT[:GROUPS][:host_scalar][:MODE]]` (3.x).
//!
//! Typed because two consumers need the same reading: the benchdnn export (which must keep the
//! groups, or it describes another problem) and the native replay (which must build the same
//! quantization, groups included, or say why it cannot).

/// One quantization parameter's fields; absent items are `None`/`false`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuantSpec {
    /// Which dimensions have their own value (bit `i` = dimension `i`); `None` if unreadable.
    pub mask: Option<u64>,
    /// The 3.x data type of the values (`f32`, `bf16`, `s8`, …).
    pub data_type: Option<String>,
    /// The 2.x value (or `*`), as printed.
    pub value: Option<String>,
    /// Group shape over the last two dimensions (`32x1`): one value per group, not per row.
    pub groups: Option<(u64, u64)>,
    /// `host_scalar`: a single value passed from the host.
    pub host_scalar: bool,
    /// Quantization mode (`dynamic_mx`, `dynamic_fp`), when not the static default.
    pub mode: Option<String>,
}

/// `AxB` with two integers (the converter's test for a group shape).
fn groups(item: &str) -> Option<(u64, u64)> {
    let (a, b) = item.split_once('x')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

impl QuantSpec {
    pub fn parse(spec: &str) -> QuantSpec {
        let mut items = spec.split(':');
        let mut q = QuantSpec {
            mask: items.next().and_then(|m| m.parse().ok()),
            ..QuantSpec::default()
        };
        let Some(second) = items.next() else {
            return q;
        };
        // 2.x: a number (optionally followed by `*`) or a lone `*`.
        if second.trim_end_matches('*').parse::<f64>().is_ok() || second == "*" {
            q.value = Some(second.to_string());
            return q;
        }
        q.data_type = Some(second.to_string()).filter(|d| !d.is_empty());
        for item in items {
            if let Some(g) =
                groups(item).filter(|_| q.groups.is_none() && !q.host_scalar && q.mode.is_none())
            {
                q.groups = Some(g);
            } else if item == "host_scalar" && !q.host_scalar && q.mode.is_none() {
                q.host_scalar = true;
            } else if q.mode.is_none() {
                q.mode = Some(item.to_string());
            }
        }
        q
    }

    /// The group shape as printed (`32x1`).
    pub fn groups_string(&self) -> Option<String> {
        self.groups.map(|(a, b)| format!("{a}x{b}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Specs from real logs (`docs/verbose-format.md`, the corpus, PyTorch 2.15) and the
    /// grammar's other forms, read by hand.
    #[test]
    fn every_form_of_the_grammar() {
        let q = QuantSpec::parse("3:bf16:32x1");
        assert_eq!(
            (q.mask, q.data_type.as_deref(), q.groups),
            (Some(3), Some("bf16"), Some((32, 1)))
        );
        assert!(!q.host_scalar && q.mode.is_none() && q.value.is_none());
        assert_eq!(q.groups_string().as_deref(), Some("32x1"));

        let q = QuantSpec::parse("0:f32");
        assert_eq!(
            (q.mask, q.data_type.as_deref(), q.groups),
            (Some(0), Some("f32"), None)
        );

        let q = QuantSpec::parse("0:0.5");
        assert_eq!(
            (q.mask, q.value.as_deref(), q.data_type),
            (Some(0), Some("0.5"), None)
        );
        assert_eq!(QuantSpec::parse("2:*").value.as_deref(), Some("*"));
        assert_eq!(QuantSpec::parse("0:1*").value.as_deref(), Some("1*"));

        let q = QuantSpec::parse("0:f32:host_scalar");
        assert!(q.host_scalar && q.groups.is_none() && q.mode.is_none());
        let q = QuantSpec::parse("3:e8m0:1x32:dynamic_mx");
        assert_eq!(q.groups, Some((1, 32)));
        assert_eq!(q.mode.as_deref(), Some("dynamic_mx"));
        assert_eq!(QuantSpec::parse("2").mask, Some(2));
        assert_eq!(QuantSpec::parse("x").mask, None);
    }
}
