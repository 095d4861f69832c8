//! What-if transforms: one steady-state iteration of a log rewritten into the iteration the
//! user is considering — another mini-batch, another activation layout, bf16 autocast — before
//! it reaches the builder. The sequence replay then times the rewritten iteration as it times a
//! logged one, so "what would bf16 / channels-last / batch 32 give on *this* machine?" is
//! answered by oneDNN itself, not by a rule of thumb. The transforms only rewrite typed
//! primitives (data types, layout tags, the `any` property, problem dimensions) and add or
//! remove reorder calls; nothing here knows the C API.
//!
//! Order: batch, then layout, then precision (the casts bf16 adds read the final layouts).

pub mod batch;
pub mod layout;
pub mod precision;
pub mod roles;

use profilednn_model::{
    Attributes, DataType, Engine, FormatKind, MemoryDesc, Primitive, PrimitiveKind, PropKind,
};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Data type the compute primitives run in (`--as`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Precision {
    Bf16,
    F32,
}

/// Activation layout (`--layout`).
pub use profilednn_model::ActivationLayout as Layout;

/// The what-if the user asked for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WhatIf {
    pub precision: Option<Precision>,
    pub layout: Layout,
    pub batch: Option<u64>,
}

/// The name of the identity what-if (no change), in the projection and in the advice.
pub const AS_LOGGED: &str = "none (as logged)";

impl WhatIf {
    pub fn is_identity(&self) -> bool {
        self.precision.is_none() && self.layout == Layout::AsLogged && self.batch.is_none()
    }

    /// The command-line spelling, as the projection names the transform.
    pub fn describe(&self) -> String {
        let mut v = Vec::new();
        if let Some(p) = self.precision {
            v.push(format!(
                "--as {}",
                match p {
                    Precision::Bf16 => "bf16",
                    Precision::F32 => "f32",
                }
            ));
        }
        match self.layout {
            Layout::AsLogged => {}
            Layout::ChannelsLast => v.push("--layout channels-last".into()),
            Layout::Plain => v.push("--layout plain".into()),
        }
        if let Some(b) = self.batch {
            v.push(format!("--batch {b}"));
        }
        if v.is_empty() {
            AS_LOGGED.into()
        } else {
            v.join(" ")
        }
    }
}

/// Why a call was added to the iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// A logged call, rewritten (or not) by the transforms.
    Logged,
    /// A conversion autocast performs (f32 master weights to bf16 each iteration, activations
    /// whose producer stays f32, weight gradients back to f32). PyTorch does these with
    /// `aten::to`, outside oneDNN: a real run's oneDNN log does not show them.
    AutocastCast,
}

/// One call of the rewritten iteration.
#[derive(Debug, Clone)]
pub struct Call {
    pub primitive: Arc<Primitive>,
    pub origin: Origin,
    /// The logged call it was rewritten from (none for added calls): a rewritten problem that
    /// oneDNN cannot replay keeps that call's logged time in the projection.
    pub logged: Option<Arc<Primitive>>,
}

/// The rewritten iteration and what the transforms assumed and did.
#[derive(Debug, Clone)]
pub struct Transformed {
    pub calls: Vec<Call>,
    /// Assumptions, in words, one per transform applied (printed by `project`).
    pub assumptions: Vec<String>,
    /// Logged calls removed (reorders that became copies to the same layout and type).
    pub removed: usize,
    /// Calls added (autocast casts).
    pub added: usize,
}

impl Transformed {
    /// Whether the rewrite left the logged `iteration` as it was (`--as f32` on an f32 log):
    /// the same run, whose heap the log shows, rather than another one (the replay's heap
    /// choice for another run).
    pub fn changes_nothing(&self, iteration: &[Arc<Primitive>]) -> bool {
        self.added == 0
            && self.removed == 0
            && self.calls.len() == iteration.len()
            && self
                .calls
                .iter()
                .zip(iteration)
                .all(|(c, l)| c.origin == Origin::Logged && *c.primitive == **l)
    }

    /// The rewritten problems that come from a logged problem in `logged` (keys, as
    /// [`profilednn_benchdnn::problem_key`] gives them): a property the log shows of a logged call —
    /// that its buffers faulted new pages in — carried to what it was rewritten into; added
    /// calls (autocast casts) have no logged call to show it.
    pub fn rewritten_from_any(
        &self,
        logged: &std::collections::BTreeSet<String>,
    ) -> std::collections::BTreeSet<String> {
        if logged.is_empty() {
            return Default::default();
        }
        let key = profilednn_benchdnn::problem_key;
        self.calls
            .iter()
            .filter(|c| c.logged.as_ref().is_some_and(|l| logged.contains(&key(l))))
            .map(|c| key(&c.primitive))
            .collect()
    }
}

/// What a what-if replay ran, kept in the replay file (`what_if`) for `project`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// The command-line spelling ([`WhatIf::describe`]).
    pub transform: String,
    pub what_if: WhatIf,
    pub assumptions: Vec<String>,
    /// Calls of the logged iteration, and of the rewritten one.
    pub logged_calls: usize,
    pub calls: usize,
    pub removed: usize,
    pub added: usize,
    /// Keys of the problems that are autocast's casts (outside oneDNN in PyTorch).
    pub autocast_casts: Vec<String>,
    /// Rewritten problem → the logged problem it came from (where the keys differ).
    #[serde(default)]
    pub rewritten_from: std::collections::BTreeMap<String, String>,
    /// The logged iteration's problems: `project` checks that the replay is of its log.
    #[serde(default)]
    pub logged_keys: Vec<String>,
}

impl Record {
    pub fn new(w: &WhatIf, logged: &[Arc<Primitive>], t: &Transformed) -> Record {
        let mut casts: Vec<String> = t
            .calls
            .iter()
            .filter(|c| c.origin == Origin::AutocastCast)
            .map(|c| profilednn_benchdnn::problem_key(&c.primitive))
            .collect();
        casts.sort();
        casts.dedup();
        let key = profilednn_benchdnn::problem_key;
        let rewritten_from = t
            .calls
            .iter()
            .filter_map(|c| Some((key(&c.primitive), key(c.logged.as_ref()?))))
            .filter(|(a, b)| a != b)
            .collect();
        let mut logged_keys: Vec<String> = logged.iter().map(|p| key(p)).collect();
        logged_keys.sort();
        logged_keys.dedup();
        Record {
            transform: w.describe(),
            what_if: w.clone(),
            assumptions: t.assumptions.clone(),
            logged_calls: logged.len(),
            calls: t.calls.len(),
            removed: t.removed,
            added: t.added,
            autocast_casts: casts,
            rewritten_from,
            logged_keys,
        }
    }
}

/// Bad input for a transform: which logged call (0-based position in the iteration, and its
/// problem) and what was expected.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("what-if {transform}: call {position} of the iteration ({kind} {problem}): {what}")]
pub struct TransformError {
    pub transform: &'static str,
    pub position: usize,
    pub kind: String,
    pub problem: String,
    pub what: String,
}

impl TransformError {
    pub(crate) fn at(
        transform: &'static str,
        position: usize,
        p: &Primitive,
        what: String,
    ) -> Self {
        TransformError {
            transform,
            position,
            kind: p.kind.to_string(),
            problem: p.problem.clone(),
            what,
        }
    }
}

/// Applies `w` to one iteration's calls (in log order).
pub fn apply(w: &WhatIf, iteration: &[Arc<Primitive>]) -> Result<Transformed, TransformError> {
    let mut t = Transformed {
        calls: iteration
            .iter()
            .map(|p| Call {
                primitive: p.clone(),
                origin: Origin::Logged,
                logged: Some(p.clone()),
            })
            .collect(),
        assumptions: Vec::new(),
        removed: 0,
        added: 0,
    };
    if let Some(n) = w.batch {
        batch::apply(&mut t, n)?;
    }
    if w.layout != Layout::AsLogged {
        layout::apply(&mut t, w.layout);
    }
    if w.precision == Some(Precision::Bf16) {
        precision::to_bf16(&mut t);
    } else if w.precision == Some(Precision::F32) {
        precision::to_f32(&mut t);
    }
    Ok(t)
}

/// The number of logical dimensions a layout tag names (`aBcd16b` → 4, `acdeb` → 5).
pub fn tag_ndims(tag: &str) -> usize {
    tag.chars().take_while(|c| c.is_ascii_alphabetic()).count()
}

/// The plain (`abcd…`) tag of `n` dimensions.
pub fn plain_tag(n: usize) -> String {
    "abcdefghijkl"[..n.min(12)].to_string()
}

/// The channels-last tag of `n` dimensions (`acdb`, `acdeb`; `acb` for 3-D), PyTorch's
/// `channels_last` and `channels_last_3d`.
pub fn channels_last_tag(n: usize) -> String {
    if n < 3 {
        return plain_tag(n);
    }
    let p = plain_tag(n);
    format!("a{}b", &p[2..])
}

/// A reorder call of `dims` from `src` to `dst` (dense, explicit layouts), what the casts and
/// the replay's builder understand.
pub fn reorder(
    dims: &[u64],
    src: (DataType, &str),
    dst: (DataType, &str),
    what: &str,
) -> Primitive {
    let md = |arg: &str, (dt, tag): (DataType, &str)| MemoryDesc {
        arg: arg.into(),
        data_type: dt,
        properties: String::new(),
        format_kind: FormatKind::Blocked,
        tag: tag.into(),
        strides: String::new(),
        flags: "f0".into(),
    };
    Primitive {
        engine: Engine::cpu(),
        kind: PrimitiveKind::Reorder,
        implementation: what.into(),
        prop_kind: PropKind::Undef,
        mds: vec![md("src", src), md("dst", dst)],
        attrs: Attributes::default(),
        aux: Vec::new(),
        problem: dims
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("x"),
    }
}

/// Primitives from the bodies of verbose lines, for tests (this crate's and the replay's).
#[doc(hidden)]
pub mod testing {
    use profilednn_model::Primitive;
    use profilednn_verbose::{parse_primitive, Syntax};
    use std::sync::Arc;

    /// A primitive from the body of a v3 verbose line (`cpu,convolution,…`).
    pub fn prim(body: &str) -> Arc<Primitive> {
        let syntax = Syntax {
            v1_descriptors: true,
            graph: false,
        };
        Arc::new(parse_primitive(body, syntax, true).unwrap())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags() {
        assert_eq!(tag_ndims("aBcd16b"), 4);
        assert_eq!(tag_ndims("ABcd16b16a"), 4);
        assert_eq!(tag_ndims("acdeb"), 5);
        assert_eq!(channels_last_tag(4), "acdb");
        assert_eq!(channels_last_tag(5), "acdeb");
        assert_eq!(plain_tag(4), "abcd");
    }

    #[test]
    fn describe_names_every_transform() {
        let w = WhatIf {
            precision: Some(Precision::Bf16),
            layout: Layout::ChannelsLast,
            batch: Some(16),
        };
        assert_eq!(w.describe(), "--as bf16 --layout channels-last --batch 16");
        assert!(WhatIf::default().is_identity());
    }

    /// `--as f32` on an f32 iteration rewrites nothing (the same run); `--batch`, `--as bf16`
    /// and `--layout channels-last` do.
    #[test]
    fn a_rewrite_that_changes_nothing_is_told_from_one_that_does() {
        let iteration = vec![
            testing::prim("cpu,convolution,jit:avx512_core,forward_training,src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 bia:undef::undef:: dst:f32::blocked:abcd::f0,attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc64_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1"),
            testing::prim("cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0 dst:f32::blocked:ABcd16b16a::f0,attr-scratchpad:user,,64x64x3x3"),
        ];
        let f32 = WhatIf {
            precision: Some(Precision::F32),
            ..Default::default()
        };
        assert!(apply(&f32, &iteration).unwrap().changes_nothing(&iteration));
        assert!(apply(&WhatIf::default(), &iteration)
            .unwrap()
            .changes_nothing(&iteration));
        for w in [
            WhatIf {
                batch: Some(4),
                ..Default::default()
            },
            WhatIf {
                precision: Some(Precision::Bf16),
                ..Default::default()
            },
            WhatIf {
                layout: Layout::ChannelsLast,
                ..Default::default()
            },
        ] {
            let t = apply(&w, &iteration).unwrap();
            assert!(!t.changes_nothing(&iteration), "{}", w.describe());
        }
    }
}
