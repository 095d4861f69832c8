//! benchdnn input lines for primitives, following oneDNN's `verbose_converter` (`-g benchdnn`)
//! so that the lines are the ones engineers already know; `tests/converter_reference.rs`
//! checks them against the converter's outputs for the corpus logs.

use profilednn_model::{
    Attribute, MemoryDesc, PostOpKind, Primitive, PrimitiveKind, PropKind, QuantArg,
};

/// The benchdnn driver of a primitive kind; `None` for kinds benchdnn cannot run from a log.
pub fn driver(kind: &PrimitiveKind) -> Option<&'static str> {
    use PrimitiveKind as K;
    Some(match kind {
        K::BatchNormalization => "bnorm",
        K::Binary => "binary",
        K::Concat => "concat",
        K::Convolution => "conv",
        K::Deconvolution => "deconv",
        K::Eltwise => "eltwise",
        K::GroupNormalization => "gnorm",
        K::InnerProduct => "ip",
        K::LayerNormalization => "lnorm",
        K::Lrn => "lrn",
        K::Matmul => "matmul",
        // 2.x transitional kinds: the converter skips them; benchdnn runs them as today's kinds.
        K::Pooling | K::PoolingV2 => "pool",
        K::Prelu => "prelu",
        K::Reduction => "reduction",
        K::Reorder => "reorder",
        K::Resampling => "resampling",
        K::Rnn => "rnn",
        K::Shuffle => "shuffle",
        K::Softmax | K::SoftmaxV2 => "softmax",
        K::Sum => "sum",
        K::ZeroPad => "zeropad",
        _ => return None,
    })
}

fn any_tag(md: &MemoryDesc) -> &str {
    if md.properties.contains('a') {
        "any"
    } else {
        &md.tag
    }
}

fn flags_value(md: &MemoryDesc) -> &str {
    md.flags.split(':').next().unwrap_or("")
}

fn dir(p: &Primitive) -> Option<&'static str> {
    Some(match p.prop_kind {
        PropKind::ForwardTraining => "FWD_D",
        PropKind::ForwardInference => "FWD_I",
        PropKind::BackwardData => "BWD_D",
        PropKind::BackwardWeights => "BWD_W",
        PropKind::Backward => "BWD_DW",
        _ => return None,
    })
}

/// `alg:binary_add` → `add` (the kind's name and `_` dropped).
fn alg_without_kind(p: &Primitive) -> Option<String> {
    let alg = p.aux_value("alg")?;
    let kind = p.kind.family().as_str().to_string();
    Some(match alg.split_once(kind.as_str()) {
        Some((_, rest)) => rest.get(1..).unwrap_or("").to_string(),
        None => alg.to_string(),
    })
}

/// `--dt=SRC:WEI:DST` (dst from `src_fused` with a fused depthwise post-op).
fn dt_triplet(p: &Primitive) -> String {
    let dst = if p.md("src_fused").is_some() {
        "src_fused"
    } else {
        "dst"
    };
    let dts: Vec<String> = ["src", "wei", dst]
        .iter()
        .filter_map(|a| p.md(a).map(|m| m.data_type.to_string()))
        .collect();
    format!("--dt={}", dts.join(":"))
}

/// `--Xdt=` per distinct first letter of the argument names, in order.
fn dt_by_letter(p: &Primitive) -> String {
    let mut seen = String::new();
    let mut out = Vec::new();
    for m in &p.mds {
        let c = m.arg.chars().next().unwrap_or('?');
        if seen.contains(c) {
            continue;
        }
        seen.push(c);
        out.push(format!("--{c}dt={}", m.data_type));
    }
    out.join(" ")
}

fn first_dt(p: &Primitive) -> String {
    p.mds
        .iter()
        .find(|m| !m.data_type.is_undef())
        .map(|m| format!("--dt={}", m.data_type))
        .unwrap_or_default()
}

fn first_tag(p: &Primitive) -> String {
    p.mds
        .iter()
        .find(|m| !m.tag.is_empty())
        .map(|m| format!("--tag={}", m.tag))
        .unwrap_or_default()
}

fn tag_triplet(p: &Primitive) -> String {
    let dst = if p.md("src_fused").is_some() {
        "src_fused"
    } else {
        "dst"
    };
    let mut out = Vec::new();
    if let Some(m) = p.md("src") {
        out.push(format!("--stag={}", any_tag(m)));
    }
    if let Some(m) = p.md("wei") {
        // Weights with compensation flags: benchdnn must pick the layout itself.
        let t = if flags_value(m) != "f0" {
            "any"
        } else {
            any_tag(m)
        };
        out.push(format!("--wtag={t}"));
    }
    if let Some(m) = p.md(dst) {
        out.push(format!("--dtag={}", any_tag(m)));
    }
    out.join(" ")
}

/// Plain strided tensors go by `--strides=S:W:D`, the others by their tags.
fn tags_or_strides(p: &Primitive) -> String {
    let mut tags = Vec::new();
    let mut strides = Vec::new();
    for arg in ["src", "wei", "dst"] {
        let Some(m) = p.md(arg) else { continue };
        let mut tag = any_tag(m).to_string();
        if arg == "wei" && flags_value(m) != "f0" {
            tag = "any".into();
        }
        if tag != "any" && tag.to_lowercase() == tag && !m.strides.is_empty() {
            strides.push(m.strides.clone());
        } else {
            tags.push(format!("--{}tag={tag}", &arg[..1]));
            strides.push(String::new());
        }
    }
    tags.push(format!("--strides={}", strides.join(":")));
    tags.join(" ")
}

fn multi_source_dts(p: &Primitive) -> String {
    let mut srcs = Vec::new();
    let mut others: Vec<(char, String)> = Vec::new();
    for m in &p.mds {
        if m.arg == "src" {
            srcs.push(m.data_type.to_string());
        } else if !m.data_type.is_undef() {
            let c = m.arg.chars().next().unwrap_or('?');
            match others.iter_mut().find(|(k, _)| *k == c) {
                Some(e) => e.1 = m.data_type.to_string(),
                None => others.push((c, m.data_type.to_string())),
            }
        }
    }
    let mut out = vec![format!("--sdt={}", srcs.join(":"))];
    out.extend(others.into_iter().map(|(c, d)| format!("--{c}dt={d}")));
    out.join(" ")
}

fn multi_source_tags(p: &Primitive) -> String {
    let mut srcs = Vec::new();
    let mut others: Vec<(char, String)> = Vec::new();
    for m in &p.mds {
        if m.arg == "src" {
            srcs.push(any_tag(m).to_string());
        } else if !m.tag.is_empty() {
            let c = m.arg.chars().next().unwrap_or('?');
            match others.iter_mut().find(|(k, _)| *k == c) {
                Some(e) => e.1 = any_tag(m).to_string(),
                None => others.push((c, any_tag(m).to_string())),
            }
        }
    }
    let mut out = vec![format!("--stag={}", srcs.join(":"))];
    out.extend(others.into_iter().map(|(c, t)| format!("--{c}tag={t}")));
    out.join(" ")
}

/// Trailing default values dropped: `eltwise_relu:0:0:1` → `eltwise_relu`.
fn trim_defaults(head: &str, values: &[&str], defaults: &[f64]) -> String {
    let mut keep = values.len();
    while keep > 0 {
        let v = values[keep - 1];
        let is_default = v
            .parse::<f64>()
            .ok()
            .is_some_and(|x| x == defaults[keep - 1]);
        if !is_default {
            break;
        }
        keep -= 1;
    }
    let mut parts = vec![head.to_string()];
    parts.extend(values[..keep].iter().map(|s| s.to_string()));
    parts.join(":")
}

fn post_ops(p: &Primitive) -> Option<String> {
    let pos = p.attrs.post_ops();
    if pos.is_empty()
        && !p
            .attrs
            .items
            .iter()
            .any(|a| matches!(a, Attribute::PostOps(_)))
    {
        return None;
    }
    let items: Vec<String> = pos
        .iter()
        .map(|po| {
            let mut fields = po.raw.split(':');
            let head = fields.next().unwrap_or("");
            let rest: Vec<&str> = fields.collect();
            match &po.kind {
                PostOpKind::Eltwise { .. } => trim_defaults(head, &rest, &[0.0, 0.0, 1.0]),
                PostOpKind::Sum => trim_defaults(head, &rest, &[1.0, 0.0]),
                PostOpKind::Binary { .. } if head != "binary_select" => binary_post_op(&po.raw),
                _ => po.raw.clone(),
            }
        })
        .collect();
    Some(format!("--attr-post-ops={}", items.join("+")))
}

/// Scales or zero points as the converter spells them: `arg:POLICY_OR_MASK[:VALUE][:DT][:GROUPS]`,
/// with a made-up value for a common (mask 0) or host-scalar quantity, the data type when it
/// is not the default or groups follow, and the groups (without them `wei:3:bf16` is another
/// problem: one value per row instead of one per 32 rows).
fn quant_args(args: &[QuantArg], common_value: &str, default_dt: &str) -> String {
    let v: Vec<String> = args
        .iter()
        .map(|q| {
            let spec = q.parsed();
            let mask = spec.mask.unwrap_or(0);
            let policy = if spec.host_scalar {
                Some("host_scalar")
            } else {
                match spec.mode.as_deref() {
                    Some("dynamic_mx") => Some("mx"),
                    Some("dynamic_fp") => Some("dynamic_fp"),
                    _ => None,
                }
            };
            let mut s = match policy {
                Some(p) => format!("{}:{p}", q.arg),
                None => format!("{}:{mask}", q.arg),
            };
            if mask == 0 || spec.host_scalar {
                s.push(':');
                s.push_str(common_value);
            }
            let groups = spec.groups_string();
            let dt = spec.data_type.as_deref().unwrap_or(default_dt);
            if dt != default_dt || groups.is_some() {
                s.push_str(&format!(":{dt}"));
            }
            if let Some(g) = groups {
                s.push_str(&format!(":{g}"));
            }
            s
        })
        .collect();
    v.join("+")
}

/// A binary post-op as the converter spells it: `ALG:DT:MASK`, then the tag unless it is `any`
/// (oneDNN prints `:any` for a library-chosen layout; benchdnn's default), or tag and strides.
fn binary_post_op(raw: &str) -> String {
    let f: Vec<&str> = raw.split(':').collect();
    let (head, dt) = (f[0], f.get(1).copied().unwrap_or(""));
    let mask = f.get(2).copied().unwrap_or("0");
    let tag = f.get(3).copied().unwrap_or("any");
    match f.get(4) {
        Some(strides) if !strides.is_empty() => format!("{head}:{dt}:{mask}:{tag}:{strides}"),
        _ if tag != "any" => format!("{head}:{dt}:{mask}:{tag}"),
        _ => format!("{head}:{dt}:{mask}"),
    }
}

fn attrs(p: &Primitive) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(po) = post_ops(p) {
        out.push(po);
    }
    for a in &p.attrs.items {
        if let Attribute::Scales(args) = a {
            out.push(format!("--attr-scales={}", quant_args(args, "0.5", "f32")));
        }
    }
    for a in &p.attrs.items {
        if let Attribute::ZeroPoints(args) = a {
            out.push(format!(
                "--attr-zero-points={}",
                quant_args(args, "1", "s32")
            ));
        }
    }
    for a in &p.attrs.items {
        match a {
            Attribute::Scratchpad(v) => out.push(format!("--attr-scratchpad={v}")),
            Attribute::Fpmath { mode, apply_to_int } => out.push(if *apply_to_int {
                format!("--attr-fpmath={mode}:true")
            } else {
                format!("--attr-fpmath={mode}")
            }),
            _ => {}
        }
    }
    for a in &p.attrs.items {
        match a {
            Attribute::AccMode(v) => out.push(format!("--attr-acc-mode={v}")),
            Attribute::RoundingMode(v) => out.push(format!("--attr-rounding-mode={v}")),
            Attribute::Dropout(v) => {
                let tag = v.split(':').nth(2).filter(|t| !t.is_empty());
                out.push(match tag {
                    Some(t) => format!("--attr-dropout=0.5:12345:{t}"),
                    None => "--attr-dropout=0.5:12345".into(),
                })
            }
            Attribute::Deterministic(v) => out.push(format!("--attr-deterministic={v}")),
            _ => {}
        }
    }
    out
}

fn reorder_flags(p: &Primitive) -> Vec<String> {
    let conv = |prefix: char, m: &MemoryDesc| -> Option<String> {
        let mut fl = Vec::new();
        for f in m.flags.split(':').skip(1) {
            if let Some(v) = f.strip_prefix("s8m") {
                fl.push(format!("s8s8_comp:{v}"));
            } else if let Some(v) = f.strip_prefix("zpm") {
                fl.push(format!("zp_comp:{v}"));
            }
        }
        (!fl.is_empty()).then(|| format!("--{prefix}flag={}", fl.join("+")))
    };
    let mut out = Vec::new();
    if let Some(m) = p.mds.iter().find(|m| m.arg.contains("src")) {
        out.extend(conv('i', m));
    }
    if let Some(m) = p.mds.iter().find(|m| m.arg.contains("dst")) {
        out.extend(conv('o', m));
    }
    out
}

fn rnn_parts(p: &Primitive) -> (Vec<String>, Vec<String>, Vec<String>) {
    let map = |v: Option<&str>, table: &[(&str, &str)]| -> Option<String> {
        let v = v?;
        table
            .iter()
            .find(|(k, _)| *k == v)
            .map(|(_, b)| b.to_string())
    };
    let mut aux = Vec::new();
    if let Some(a) = map(
        p.aux_value("alg"),
        &[
            ("vanilla_rnn", "VANILLA_RNN"),
            ("vanilla_lstm", "VANILLA_LSTM"),
            ("vanilla_gru", "VANILLA_GRU"),
            ("vanilla_augru", "VANILLA_AUGRU"),
            ("lbr_gru", "LBR_GRU"),
            ("lbr_augru", "LBR_AUGRU"),
        ],
    ) {
        aux.push(format!("--alg={a}"));
    }
    if let Some(d) = map(
        p.aux_value("direction"),
        &[
            ("unidirectional_left2right", "left2right"),
            ("unidirectional_right2left", "right2left"),
            ("bidirectional_sum", "sum"),
            ("bidirectional_concat", "concat"),
        ],
    ) {
        aux.push(format!("--direction={d}"));
    }
    if let Some(a) = map(
        p.aux_value("activation"),
        &[
            ("eltwise_relu", "RELU"),
            ("eltwise_logistic", "LOGISTIC"),
            ("eltwise_tanh", "TANH"),
        ],
    ) {
        aux.push(format!("--activation={a}"));
    }
    if let Some(f) = p.aux_value("flags") {
        aux.push(format!("--flags={f}"));
    }
    // --cfg: the common type of the data tensors (bf16 with a differing bias appends it).
    let args = [
        "src_iter",
        "src_iter_c",
        "src_layer",
        "dst_iter",
        "dst_layer",
    ];
    let mut shared: Option<String> = None;
    let mut common = true;
    let mut bias_dt = None;
    for m in &p.mds {
        if m.arg == "bias" {
            bias_dt = Some(m.data_type.to_string());
        } else if args.contains(&m.arg.as_str()) {
            match &shared {
                None => shared = Some(m.data_type.to_string()),
                Some(s) if *s != m.data_type.to_string() => common = false,
                _ => {}
            }
        }
    }
    let cfg = match shared.as_deref() {
        Some(s @ ("f32" | "f16")) if common => s.to_string(),
        Some("bf16") if common => match bias_dt {
            Some(b) if b != "bf16" => format!("bf16{b}"),
            _ => "bf16".into(),
        },
        _ => args
            .iter()
            .filter_map(|a| p.md(a))
            .filter(|m| !(m.arg == "src_iter_c" && m.data_type.as_str() == "f16"))
            .map(|m| m.data_type.to_string())
            .collect(),
    };
    let dts = vec![format!("--cfg={cfg}")];
    let diff = p.mds.iter().any(|m| m.arg.contains("diff"));
    let layers: Vec<String> = ["src_layer", "wei_layer", "dst_layer"]
        .iter()
        .map(|n| {
            if diff {
                format!("diff_{n}")
            } else {
                n.to_string()
            }
        })
        .collect();
    let mut tags = Vec::new();
    let mut extra = Vec::new();
    for m in &p.mds {
        if layers.contains(&m.arg) {
            tags.push(any_tag(m).to_string());
        } else if m.tag == "undef" || m.is_absent() {
            continue;
        } else if m.arg == "wei_proj" {
            extra.push("--with-projection=true".to_string());
        } else if m.arg == "wei_peephole" {
            extra.push("--with-peephole=true".to_string());
        }
    }
    let mut t = vec![format!("--tag={}", tags.join(":"))];
    t.extend(extra);
    let trivial = !p
        .mds
        .iter()
        .any(|m| (m.arg == "src_iter" || m.arg == "src_layer") && !m.strides.is_empty());
    t.push(format!("--trivial-strides={trivial}"));
    (aux, dts, t)
}

/// The benchdnn line of `p` (without the leading `--DRIVER`), or `None` for kinds benchdnn
/// cannot run. Field order: engine, direction, algorithm/aux, bias mask, data types, tags,
/// flags, attributes, problem.
pub fn line(p: &Primitive) -> Option<(&'static str, String)> {
    use PrimitiveKind as K;
    let drv = driver(&p.kind)?;
    let mut a: Vec<String> = vec![
        "--reset".into(),
        "--allow-enum-tags-only=0".into(),
        format!("--engine={}", p.engine),
    ];
    let kind = p.kind.family();
    if let Some(d) = dir(p) {
        a.push(if kind == K::Rnn {
            format!("--prop={d}")
        } else {
            format!("--dir={d}")
        });
    }
    if !kind_fields(p, &kind, &mut a) {
        return None;
    }
    // Binary lists its sources' dims and then more: benchdnn takes the sources only.
    let shapes = if kind == K::Binary {
        p.problem.split(' ').next().unwrap_or("").to_string()
    } else {
        p.problem.clone()
    };
    a.extend(attrs(p));
    a.push(shapes);
    let text = a
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    Some((drv, text))
}

/// The fields of `p`'s kind (algorithm/aux, bias, data types, tags), appended to `a`; false
/// for kinds benchdnn cannot run.
fn kind_fields(p: &Primitive, kind: &PrimitiveKind, a: &mut Vec<String>) -> bool {
    use PrimitiveKind as K;
    let alg = || alg_without_kind(p);
    let aux_opt = |k: &str, flag: &str| p.aux_value(k).map(|v| format!("--{flag}={v}"));
    match kind {
        K::Convolution | K::Deconvolution => {
            if let Some(x) = alg() {
                a.push(format!("--alg={x}"));
            }
            a.push(dt_triplet(p));
            if let Some(b) = p.md("bia") {
                a.push(format!("--bia-dt={}", b.data_type));
            }
            a.push(tag_triplet(p));
        }
        K::InnerProduct => {
            a.push(dt_triplet(p));
            if let Some(b) = p.md("bia") {
                a.push(format!("--bia-dt={}", b.data_type));
            }
            a.push(tag_triplet(p));
        }
        K::Matmul => matmul_fields(p, a),
        K::Eltwise => {
            a.push(format!("--alg={}", p.aux_value("alg").unwrap_or("")));
            a.extend(aux_opt("alpha", "alpha"));
            a.extend(aux_opt("beta", "beta"));
            a.push(first_dt(p));
            a.push(first_tag(p));
        }
        K::BatchNormalization => {
            a.extend(aux_opt("flags", "flags"));
            a.push(first_dt(p));
            a.push(first_tag(p));
        }
        K::GroupNormalization | K::LayerNormalization => norm_fields(p, kind, a),
        K::Binary => {
            if let Some(x) = alg() {
                a.push(format!("--alg={x}"));
            }
            a.push(multi_source_dts(p));
            a.push(multi_source_tags(p));
        }
        K::Concat => {
            a.extend(aux_opt("axis", "axis"));
            a.push(dt_by_letter(p));
            a.push(multi_source_tags(p));
        }
        K::Sum => {
            a.push(multi_source_dts(p));
            a.push(multi_source_tags(p));
        }
        K::Lrn => {
            match alg().as_deref() {
                Some("across_channels") => a.push("--alg=ACROSS".into()),
                Some("within_channel") => a.push("--alg=WITHIN".into()),
                _ => {}
            }
            a.push(first_dt(p));
            a.push(first_tag(p));
        }
        K::Pooling => {
            a.push(format!("--alg={}", p.aux_value("alg").unwrap_or("")));
            a.push(dt_triplet(p));
            a.push(first_tag(p));
        }
        K::Prelu => prelu_fields(p, a),
        K::Reduction => {
            a.push(format!("--alg={}", alg().unwrap_or_default()));
            a.extend(aux_opt("p", "p"));
            a.extend(aux_opt("eps", "eps"));
            a.push(dt_by_letter(p));
            a.push(tag_triplet(p));
        }
        K::Reorder => {
            if let Some(m) = p.aux_value("runtime-dim-mask").filter(|m| !m.is_empty()) {
                a.push(format!("--runtime-dim-mask={m}"));
            }
            a.push(dt_by_letter(p));
            a.push(tags_or_strides(p));
            a.extend(reorder_flags(p));
        }
        K::Resampling => {
            if let Some(x) = alg() {
                a.push(format!("--alg={x}"));
            }
            a.push(dt_by_letter(p));
            a.push(first_tag(p));
        }
        K::Rnn => {
            let (aux, dts, tags) = rnn_parts(p);
            a.extend(aux);
            a.extend(dts);
            a.extend(tags);
        }
        K::Shuffle => {
            a.extend(aux_opt("axis", "axis"));
            a.extend(aux_opt("group", "group"));
            a.push(first_dt(p));
            a.push(first_tag(p));
        }
        K::Softmax => {
            a.push(format!("--alg={}", p.aux_value("alg").unwrap_or("")));
            a.extend(aux_opt("axis", "axis"));
            a.push(dt_by_letter(p));
            a.push(tag_triplet(p));
        }
        K::ZeroPad => {
            if let Some(m) = p.mds.first() {
                a.push(format!("--dt={}", m.data_type));
                a.push(format!("--tag={}", any_tag(m)));
            }
        }
        _ => return false,
    }
    true
}

/// Matmul: run-time dims masks, bias mask and type, data types, tags or strides.
fn matmul_fields(p: &Primitive, a: &mut Vec<String>) {
    a.push(format!(
        "--runtime_dims_masks={}",
        p.aux_value("runtime_dims_masks").unwrap_or("")
    ));
    if let Some(b) = p.md("bia") {
        if let Some((_, m)) = b.flags.split_once('_') {
            a.push(format!("--bia_mask={}", m.get(4..).unwrap_or("")));
        }
    }
    a.push(dt_triplet(p));
    if let Some(b) = p.md("bia") {
        a.push(format!("--bia-dt={}", b.data_type));
    }
    a.push(tags_or_strides(p));
}

/// Group and layer normalization: flags, data types (and the scale/shift type), tags (and
/// the statistics' tag of layer normalization).
fn norm_fields(p: &Primitive, kind: &PrimitiveKind, a: &mut Vec<String>) {
    use PrimitiveKind as K;
    let aux_opt = |k: &str, flag: &str| p.aux_value(k).map(|v| format!("--{flag}={v}"));
    a.extend(aux_opt("flags", "flags"));
    let mut dts = dt_triplet(p);
    if *kind == K::LayerNormalization {
        let ss = p
            .mds
            .iter()
            .find(|m| m.arg.contains("scale"))
            .or_else(|| p.mds.iter().find(|m| m.arg.contains("shift")));
        if let Some(m) = ss {
            dts.push_str(&format!(" --ss_dt={}", m.data_type));
        }
    }
    a.push(dts);
    let tags: Vec<&str> = ["src", "wei", "dst"]
        .iter()
        .filter_map(|x| p.md(x).map(any_tag))
        .collect();
    let mut t = format!("--tag={}", tags.join(":"));
    if *kind == K::LayerNormalization {
        if let Some(m) = p.md("stats") {
            t.push_str(&format!(" --stat_tag={}", any_tag(m)));
        }
    }
    a.push(t);
}

/// PReLU: data and weights types and tags, as `data:weights`.
fn prelu_fields(p: &Primitive, a: &mut Vec<String>) {
    let find = |s: &str| p.mds.iter().find(|m| m.arg.contains(s));
    let (d, w) = (find("data"), find("wei"));
    a.push(format!(
        "--sdt={}:{}",
        d.map(|m| m.data_type.to_string()).unwrap_or_default(),
        w.map(|m| m.data_type.to_string()).unwrap_or_default()
    ));
    a.push(format!(
        "--stag={}:{}",
        d.map(any_tag).unwrap_or(""),
        w.map(any_tag).unwrap_or("")
    ));
}
