//! A logged primitive rebuilt through the C API: memory descriptors from the logged types,
//! tags and strides (the implementation chooses where the log says `any`), attributes and
//! post-ops, then the primitive descriptor of its kind and direction.

use super::api::{Dnnl, Handle};
use profilednn_cost::{ConvProblem, Descriptor, MatmulProblem};
use profilednn_model::{
    Attribute, MemoryDesc, PostOpKind, Primitive, PrimitiveKind as K, PropKind,
};
use std::ffi::c_int;
use std::ptr::null_mut;

/// Everything created for one primitive descriptor, released on drop.
pub struct Built<'a> {
    d: &'a Dnnl,
    pub pd: Handle,
    hint: Handle,
    mds: Vec<Handle>,
    attr: Handle,
    post_ops: Handle,
    /// Logged layout tags this oneDNN does not know (replaced by `any`).
    unknown_tags: Vec<String>,
    /// Only convolution, inner product and matmul accept `any` layouts; the other kinds get
    /// the layout the log printed even where the framework had asked for `any`.
    allow_any: bool,
    /// Arguments the descriptor reports but the primitive must not receive (oneDNN counts
    /// inputs: backward normalizations report SHIFT without taking it).
    pub skip_args: Vec<c_int>,
}

impl Drop for Built<'_> {
    fn drop(&mut self) {
        let a = &self.d.api;
        // SAFETY: each handle was created by the library and is released once.
        unsafe {
            if !self.pd.is_null() {
                (a.dnnl_primitive_desc_destroy)(self.pd);
            }
            if !self.hint.is_null() {
                (a.dnnl_primitive_desc_destroy)(self.hint);
            }
            for m in &self.mds {
                (a.dnnl_memory_desc_destroy)(*m);
            }
            if !self.attr.is_null() {
                (a.dnnl_primitive_attr_destroy)(self.attr);
            }
            if !self.post_ops.is_null() {
                (a.dnnl_post_ops_destroy)(self.post_ops);
            }
        }
    }
}

fn dims12(v: &[i64]) -> [i64; 12] {
    let mut d = [0i64; 12];
    d[..v.len()].copy_from_slice(v);
    d
}

fn ok(status: c_int, what: &str) -> Result<(), String> {
    match status {
        0 => Ok(()),
        3 => Err(format!(
            "{what}: oneDNN has no implementation for this problem (unimplemented)"
        )),
        2 => Err(format!(
            "{what}: oneDNN rejected the arguments (invalid_arguments)"
        )),
        1 => Err(format!("{what}: out of memory")),
        s => Err(format!("{what}: oneDNN status {s}")),
    }
}

impl<'a> Built<'a> {
    fn new(d: &'a Dnnl) -> Self {
        Built {
            d,
            pd: null_mut(),
            hint: null_mut(),
            mds: Vec::new(),
            attr: null_mut(),
            post_ops: null_mut(),
            unknown_tags: Vec::new(),
            allow_any: true,
            skip_args: Vec::new(),
        }
    }

    fn dt(&self, m: Option<&MemoryDesc>, fallback: &str) -> Result<c_int, String> {
        let name = m
            .filter(|m| !m.data_type.is_undef())
            .map(|m| m.data_type.to_string())
            .unwrap_or_else(|| fallback.to_string());
        self.d
            .dts
            .get(&name)
            .copied()
            .ok_or_else(|| format!("data type '{name}' is not known to this oneDNN"))
    }

    /// A memory descriptor of `dims` with the logged layout: `any` where the log says the
    /// library chose it (`a`), explicit strides, a named tag; unknown tags fall back to `any`.
    fn md(
        &mut self,
        dims: &[i64],
        m: Option<&MemoryDesc>,
        fallback_dt: &str,
    ) -> Result<Handle, String> {
        let dt = self.dt(m, fallback_dt)?;
        let api = &self.d.api;
        let d = dims12(dims);
        let mut h: Handle = null_mut();
        let nd = dims.len() as c_int;
        let plain_tag = |n: usize| "abcdefghijkl"[..n].to_string();
        let allow_any = self.allow_any;
        let is_any = |m: &MemoryDesc| allow_any && m.properties.contains('a');
        let status = match m {
            Some(m) if !is_any(m) && !m.strides.is_empty() => {
                let s: Vec<i64> = m
                    .strides
                    .split('x')
                    .filter_map(|x| x.parse().ok())
                    .collect();
                if s.len() != dims.len() {
                    return Err(format!(
                        "strides '{}' do not match {} dims",
                        m.strides,
                        dims.len()
                    ));
                }
                let s = dims12(&s);
                // SAFETY: dims and strides arrays of 12 entries, as the API expects.
                unsafe {
                    (api.dnnl_memory_desc_create_with_strides)(
                        &mut h,
                        nd,
                        d.as_ptr(),
                        dt,
                        s.as_ptr(),
                    )
                }
            }
            _ => {
                let tag = match m {
                    Some(m) if !is_any(m) && !m.tag.is_empty() => match self.d.tags.get(&m.tag) {
                        Some(t) => *t,
                        None => {
                            self.unknown_tags.push(m.tag.clone());
                            1
                        }
                    },
                    Some(_) => 1, // any
                    None => self
                        .d
                        .tags
                        .get(&plain_tag(dims.len()))
                        .copied()
                        .unwrap_or(1),
                };
                // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
                unsafe { (api.dnnl_memory_desc_create_with_tag)(&mut h, nd, d.as_ptr(), dt, tag) }
            }
        };
        ok(status, "memory descriptor")?;
        self.mds.push(h);
        Ok(h)
    }

    fn attr(&mut self, p: &Primitive, dst_dims: &[i64]) -> Result<Handle, String> {
        let api = &self.d.api;
        // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
        unsafe {
            ok(
                (api.dnnl_primitive_attr_create)(&mut self.attr),
                "attributes",
            )?;
            // User scratchpad: the replay passes it, so timing includes no allocation.
            ok(
                (api.dnnl_primitive_attr_set_scratchpad_mode)(self.attr, 1),
                "scratchpad",
            )?;
        }
        for a in &p.attrs.items {
            match a {
                Attribute::Fpmath { mode, .. } => {
                    let v = match mode.as_str() {
                        "strict" => 0,
                        "bf16" => 1,
                        "f16" => 2,
                        "any" => 3,
                        "tf32" => 4,
                        o => return Err(format!("fpmath mode '{o}' not supported by the replay")),
                    };
                    ok(
                        // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
                        unsafe { (api.dnnl_primitive_attr_set_fpmath_mode)(self.attr, v) },
                        "fpmath",
                    )?;
                }
                Attribute::Scales(_) | Attribute::ZeroPoints(_) => {
                    return Err(
                        "quantization attributes (scales, zero points) are not replayed yet".into(),
                    )
                }
                _ => {}
            }
        }
        let pos = p.attrs.post_ops();
        if !pos.is_empty() {
            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
            unsafe { ok((api.dnnl_post_ops_create)(&mut self.post_ops), "post-ops")? };
            for po in pos {
                let mut f = po.raw.split(':');
                let head = f.next().unwrap_or("");
                let rest: Vec<&str> = f.collect();
                let num =
                    |i: usize, def: f32| rest.get(i).and_then(|x| x.parse().ok()).unwrap_or(def);
                match &po.kind {
                    PostOpKind::Eltwise { alg } => {
                        let a = *self
                            .d
                            .algs
                            .get(alg)
                            .ok_or_else(|| format!("post-op {alg} unknown to this oneDNN"))?;
                        ok(
                            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
                            unsafe {
                                (api.dnnl_post_ops_append_eltwise)(
                                    self.post_ops,
                                    a,
                                    num(0, 0.0),
                                    num(1, 0.0),
                                )
                            },
                            "eltwise post-op",
                        )?;
                    }
                    PostOpKind::Sum => {
                        ok(
                            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
                            unsafe {
                                (api.dnnl_post_ops_append_sum)(self.post_ops, num(0, 1.0), 0, 0)
                            },
                            "sum post-op",
                        )?;
                    }
                    PostOpKind::Binary {
                        alg,
                        data_type,
                        mask,
                    } => {
                        let a = *self
                            .d
                            .algs
                            .get(alg)
                            .ok_or_else(|| format!("post-op {alg} unknown to this oneDNN"))?;
                        let mask = mask.unwrap_or(0);
                        let dims: Vec<i64> = dst_dims
                            .iter()
                            .enumerate()
                            .map(|(i, d)| if mask & (1 << i) != 0 { *d } else { 1 })
                            .collect();
                        let dt = data_type
                            .as_ref()
                            .map(|d| d.to_string())
                            .unwrap_or_else(|| "f32".into());
                        let fake = MemoryDesc {
                            arg: "src1".into(),
                            data_type: profilednn_model::DataType::parse(&dt)
                                .unwrap_or(profilednn_model::DataType::F32),
                            properties: String::new(),
                            format_kind: profilednn_model::FormatKind::Blocked,
                            tag: "abcdefghijkl"[..dims.len()].to_string(),
                            strides: String::new(),
                            flags: "f0".into(),
                        };
                        let md = self.md(&dims, Some(&fake), "f32")?;
                        ok(
                            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
                            unsafe { (api.dnnl_post_ops_append_binary)(self.post_ops, a, md) },
                            "binary post-op",
                        )?;
                    }
                    _ => return Err(format!("post-op '{head}' is not replayed")),
                }
            }
            ok(
                // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
                unsafe { (api.dnnl_primitive_attr_set_post_ops)(self.attr, self.post_ops) },
                "post-ops",
            )?;
        }
        Ok(self.attr)
    }
}

fn find<'p>(p: &'p Primitive, names: &[&str]) -> Option<&'p MemoryDesc> {
    p.mds
        .iter()
        .find(|m| names.contains(&m.arg.as_str()) && !m.is_absent())
}

fn data_dt(p: &Primitive) -> String {
    p.mds
        .iter()
        .find(|m| !m.is_absent() && !m.data_type.is_undef())
        .map(|m| m.data_type.to_string())
        .unwrap_or_else(|| "f32".into())
}

fn desc_dims(problem: &str) -> Result<Vec<i64>, String> {
    let first = problem.split([' ', ':']).next().unwrap_or("");
    if let Some(d) = profilednn_cost::parse_dims(first) {
        return Ok(d.into_iter().map(|x| x as i64).collect());
    }
    let d =
        Descriptor::parse(problem).ok_or_else(|| format!("problem '{problem}' not recognised"))?;
    let mut v = vec![
        d.get("mb").unwrap_or(1) as i64,
        d.get("ic").ok_or("no ic")? as i64,
    ];
    for k in ["id", "ih", "iw"] {
        if let Some(x) = d.get(k) {
            v.push(x as i64);
        }
    }
    Ok(v)
}

fn prop(d: &Dnnl, p: &PropKind) -> Result<c_int, String> {
    d.props
        .get(p.as_str())
        .copied()
        .ok_or_else(|| format!("propagation '{p}' unknown to this oneDNN"))
}

fn alg(d: &Dnnl, name: &str) -> Result<c_int, String> {
    d.algs
        .get(name)
        .copied()
        .ok_or_else(|| format!("algorithm '{name}' unknown to this oneDNN"))
}

/// Strides, dilations, left padding, right padding (12-entry arrays) and kernel sizes.
type Spatial = ([i64; 12], [i64; 12], [i64; 12], [i64; 12], Vec<i64>);

/// Spatial parameters of a convolution or pooling: strides, dilations, left and right padding
/// (the right padding follows from the sizes, as oneDNN computes it).
fn spatial(prb: &ConvProblem, deconv: bool) -> Spatial {
    let mut s = Vec::new();
    let mut dl = Vec::new();
    let mut pl = Vec::new();
    let mut pr = Vec::new();
    let mut k = Vec::new();
    for x in &prb.spatial {
        let (i, o) = if deconv {
            (x.o as i64, x.i as i64)
        } else {
            (x.i as i64, x.o as i64)
        };
        let ext = (x.k as i64 - 1) * (x.d as i64 + 1) + 1;
        s.push(x.s as i64);
        dl.push(x.d as i64);
        pl.push(x.p as i64);
        pr.push((o - 1) * x.s as i64 - i + ext - x.p as i64);
        k.push(x.k as i64);
    }
    (dims12(&s), dims12(&dl), dims12(&pl), dims12(&pr), k)
}

/// Builds the primitive descriptor for `p`; `Err` says why it cannot be rebuilt.
pub(crate) fn build<'a>(d: &'a Dnnl, engine: Handle, p: &Primitive) -> Result<Built<'a>, String> {
    let mut b = Built::new(d);
    let api = &d.api;
    let dt = data_dt(p);
    let null: Handle = null_mut();
    let fwd_training = *d
        .props
        .get("forward_training")
        .ok_or("no forward_training")?;
    b.allow_any = matches!(
        p.kind.family(),
        K::Convolution | K::InnerProduct | K::Matmul
    );
    if p.prop_kind.is_backward() {
        b.skip_args.push(52);
    }
    match p.kind.family() {
        K::Convolution => {
            let prb = ConvProblem::parse(&p.problem, false).map_err(|e| e.reason)?;
            let grouped = Descriptor::parse(&p.problem).is_some_and(|x| x.has("g"));
            let i64v = |v: Vec<u64>| v.into_iter().map(|x| x as i64).collect::<Vec<_>>();
            let src_d = i64v(prb.src_dims());
            let dst_d = i64v(prb.dst_dims());
            let ks: Vec<i64> = prb.spatial.iter().map(|s| s.k as i64).collect();
            let mut wei_d = if grouped {
                vec![
                    prb.g as i64,
                    (prb.oc / prb.g) as i64,
                    (prb.ic / prb.g) as i64,
                ]
            } else {
                vec![prb.oc as i64, prb.ic as i64]
            };
            wei_d.extend(&ks);
            let src = b.md(&src_d, find(p, &["src", "diff_src"]), &dt)?;
            let wei = b.md(&wei_d, find(p, &["wei", "diff_wei"]), &dt)?;
            let dst = b.md(&dst_d, find(p, &["dst", "diff_dst"]), &dt)?;
            let bia = match find(p, &["bia", "diff_bia"]) {
                Some(m) => b.md(&[prb.oc as i64], Some(m), "f32")?,
                None => null,
            };
            let a = alg(d, p.algorithm().unwrap_or("convolution_direct"))?;
            let (s, dl, pl, pr, _) = spatial(&prb, false);
            let attr = b.attr(p, &dst_d)?;
            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
            unsafe {
                match p.prop_kind {
                    PropKind::ForwardTraining | PropKind::ForwardInference => ok(
                        (api.dnnl_convolution_forward_primitive_desc_create)(
                            &mut b.pd,
                            engine,
                            prop(d, &p.prop_kind)?,
                            a,
                            src,
                            wei,
                            bia,
                            dst,
                            s.as_ptr(),
                            dl.as_ptr(),
                            pl.as_ptr(),
                            pr.as_ptr(),
                            attr,
                        ),
                        "convolution forward",
                    )?,
                    PropKind::BackwardData | PropKind::BackwardWeights => {
                        ok(
                            (api.dnnl_convolution_forward_primitive_desc_create)(
                                &mut b.hint,
                                engine,
                                fwd_training,
                                a,
                                src,
                                wei,
                                bia,
                                dst,
                                s.as_ptr(),
                                dl.as_ptr(),
                                pl.as_ptr(),
                                pr.as_ptr(),
                                null,
                            ),
                            "convolution forward hint",
                        )?;
                        if p.prop_kind == PropKind::BackwardData {
                            ok(
                                (api.dnnl_convolution_backward_data_primitive_desc_create)(
                                    &mut b.pd,
                                    engine,
                                    a,
                                    src,
                                    wei,
                                    dst,
                                    s.as_ptr(),
                                    dl.as_ptr(),
                                    pl.as_ptr(),
                                    pr.as_ptr(),
                                    b.hint,
                                    attr,
                                ),
                                "convolution backward data",
                            )?
                        } else {
                            ok(
                                (api.dnnl_convolution_backward_weights_primitive_desc_create)(
                                    &mut b.pd,
                                    engine,
                                    a,
                                    src,
                                    wei,
                                    bia,
                                    dst,
                                    s.as_ptr(),
                                    dl.as_ptr(),
                                    pl.as_ptr(),
                                    pr.as_ptr(),
                                    b.hint,
                                    attr,
                                ),
                                "convolution backward weights",
                            )?
                        }
                    }
                    ref o => return Err(format!("convolution propagation '{o}' not replayed")),
                }
            }
        }
        K::InnerProduct => {
            let x =
                Descriptor::parse(&p.problem).ok_or("inner-product descriptor not recognised")?;
            let g = |k: &str| x.get(k).map(|v| v as i64);
            let (mb, ic, oc) = (
                g("mb").ok_or("no mb")?,
                g("ic").ok_or("no ic")?,
                g("oc").ok_or("no oc")?,
            );
            let sp: Vec<i64> = ["id", "ih", "iw"].iter().filter_map(|k| g(k)).collect();
            let mut src_d = vec![mb, ic];
            src_d.extend(&sp);
            let mut wei_d = vec![oc, ic];
            wei_d.extend(&sp);
            let src = b.md(&src_d, find(p, &["src", "diff_src"]), &dt)?;
            let wei = b.md(&wei_d, find(p, &["wei", "diff_wei"]), &dt)?;
            let dst = b.md(&[mb, oc], find(p, &["dst", "diff_dst"]), &dt)?;
            let bia = match find(p, &["bia", "diff_bia"]) {
                Some(m) => b.md(&[oc], Some(m), "f32")?,
                None => null,
            };
            let attr = b.attr(p, &[mb, oc])?;
            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
            unsafe {
                match p.prop_kind {
                    PropKind::ForwardTraining | PropKind::ForwardInference => ok(
                        (api.dnnl_inner_product_forward_primitive_desc_create)(
                            &mut b.pd,
                            engine,
                            prop(d, &p.prop_kind)?,
                            src,
                            wei,
                            bia,
                            dst,
                            attr,
                        ),
                        "inner product forward",
                    )?,
                    PropKind::BackwardData | PropKind::BackwardWeights => {
                        ok(
                            (api.dnnl_inner_product_forward_primitive_desc_create)(
                                &mut b.hint,
                                engine,
                                fwd_training,
                                src,
                                wei,
                                bia,
                                dst,
                                null,
                            ),
                            "inner product hint",
                        )?;
                        if p.prop_kind == PropKind::BackwardData {
                            ok(
                                (api.dnnl_inner_product_backward_data_primitive_desc_create)(
                                    &mut b.pd, engine, src, wei, dst, b.hint, attr,
                                ),
                                "inner product backward data",
                            )?
                        } else {
                            ok(
                                (api.dnnl_inner_product_backward_weights_primitive_desc_create)(
                                    &mut b.pd, engine, src, wei, bia, dst, b.hint, attr,
                                ),
                                "inner product backward weights",
                            )?
                        }
                    }
                    ref o => return Err(format!("inner-product propagation '{o}' not replayed")),
                }
            }
        }
        K::Matmul => {
            let prb = MatmulProblem::parse(&p.problem).map_err(|e| e.reason)?;
            let v = |x: &[u64]| x.iter().map(|y| *y as i64).collect::<Vec<_>>();
            let src = b.md(&v(&prb.src), find(p, &["src"]), &dt)?;
            let wei = b.md(&v(&prb.wei), find(p, &["wei"]), &dt)?;
            let dst_d = v(&prb.dst);
            let dst = b.md(&dst_d, find(p, &["dst"]), &dt)?;
            let bia = match find(p, &["bia"]) {
                Some(m) => {
                    let mask: u64 = m
                        .flags
                        .split("mask")
                        .nth(1)
                        .and_then(|x| x.parse().ok())
                        .unwrap_or(1 << (dst_d.len() - 1));
                    let bd: Vec<i64> = dst_d
                        .iter()
                        .enumerate()
                        .map(|(i, x)| if mask & (1 << i) != 0 { *x } else { 1 })
                        .collect();
                    b.md(&bd, Some(m), "f32")?
                }
                None => null,
            };
            let attr = b.attr(p, &dst_d)?;
            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
            unsafe {
                ok(
                    (api.dnnl_matmul_primitive_desc_create)(
                        &mut b.pd, engine, src, wei, bia, dst, attr,
                    ),
                    "matmul",
                )?
            };
        }
        K::Eltwise => {
            let dims = desc_dims(&p.problem)?;
            let a = alg(d, p.algorithm().ok_or("no algorithm")?)?;
            let num = |k: &str| {
                p.aux_value(k)
                    .and_then(|v| v.parse::<f32>().ok())
                    .unwrap_or(0.0)
            };
            let data = b.md(&dims, find(p, &["data", "src"]), &dt)?;
            let attr = b.attr(p, &dims)?;
            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
            unsafe {
                if p.prop_kind.is_forward() {
                    let dst = match find(p, &["dst"]) {
                        Some(m) => b.md(&dims, Some(m), &dt)?,
                        None => data,
                    };
                    ok(
                        (api.dnnl_eltwise_forward_primitive_desc_create)(
                            &mut b.pd,
                            engine,
                            prop(d, &p.prop_kind)?,
                            a,
                            data,
                            dst,
                            num("alpha"),
                            num("beta"),
                            attr,
                        ),
                        "eltwise forward",
                    )?
                } else {
                    let diff = b.md(&dims, find(p, &["diff", "diff_dst", "diff_src"]), &dt)?;
                    ok(
                        (api.dnnl_eltwise_forward_primitive_desc_create)(
                            &mut b.hint,
                            engine,
                            fwd_training,
                            a,
                            data,
                            data,
                            num("alpha"),
                            num("beta"),
                            null,
                        ),
                        "eltwise hint",
                    )?;
                    ok(
                        (api.dnnl_eltwise_backward_primitive_desc_create)(
                            &mut b.pd,
                            engine,
                            a,
                            diff,
                            diff,
                            data,
                            num("alpha"),
                            num("beta"),
                            b.hint,
                            attr,
                        ),
                        "eltwise backward",
                    )?
                }
            }
        }
        K::Binary => {
            let (t, _) = profilednn_cost::parse_dims_list(&p.problem)
                .ok_or("binary descriptor not recognised")?;
            if t.len() < 2 {
                return Err("binary needs two sources".into());
            }
            let v = |x: &[u64]| x.iter().map(|y| *y as i64).collect::<Vec<_>>();
            let (s0d, s1d) = (v(&t[0]), v(&t[1]));
            let dst_d: Vec<i64> = s0d.iter().zip(&s1d).map(|(a, b)| *a.max(b)).collect();
            let listed: Vec<&MemoryDesc> = p.mds.iter().filter(|m| !m.is_absent()).collect();
            let s0 = b.md(&s0d, listed.first().copied(), &dt)?;
            let s1 = b.md(&s1d, listed.get(1).copied(), &dt)?;
            let dst = b.md(&dst_d, find(p, &["dst"]), &dt)?;
            let a = alg(d, p.algorithm().ok_or("no algorithm")?)?;
            let attr = b.attr(p, &dst_d)?;
            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
            unsafe {
                ok(
                    (api.dnnl_binary_primitive_desc_create)(
                        &mut b.pd, engine, a, s0, s1, dst, attr,
                    ),
                    "binary",
                )?
            };
        }
        K::BatchNormalization => {
            let dims = desc_dims(&p.problem)?;
            let f = p.aux_value("flags").unwrap_or("");
            let mut flags = 0u32;
            for (c, v) in [
                ('G', 1u32),
                ('C', 2),
                ('H', 4),
                ('S', 6),
                ('R', 8),
                ('A', 0x10),
            ] {
                if f.contains(c) {
                    flags |= v;
                }
            }
            let data = b.md(&dims, find(p, &["data", "src"]), &dt)?;
            let attr = b.attr(p, &dims)?;
            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
            unsafe {
                if p.prop_kind.is_forward() {
                    ok(
                        (api.dnnl_batch_normalization_forward_primitive_desc_create)(
                            &mut b.pd,
                            engine,
                            prop(d, &p.prop_kind)?,
                            data,
                            data,
                            1e-5,
                            flags,
                            attr,
                        ),
                        "batch normalization forward",
                    )?
                } else {
                    let diff = b.md(&dims, find(p, &["diff", "diff_dst", "diff_src"]), &dt)?;
                    ok(
                        (api.dnnl_batch_normalization_forward_primitive_desc_create)(
                            &mut b.hint,
                            engine,
                            fwd_training,
                            data,
                            data,
                            1e-5,
                            flags,
                            null,
                        ),
                        "batch normalization hint",
                    )?;
                    ok(
                        (api.dnnl_batch_normalization_backward_primitive_desc_create)(
                            &mut b.pd,
                            engine,
                            prop(d, &p.prop_kind)?,
                            diff,
                            diff,
                            data,
                            1e-5,
                            flags,
                            b.hint,
                            attr,
                        ),
                        "batch normalization backward",
                    )?
                }
            }
        }
        K::Pooling => {
            let prb = pooling_problem(&p.problem)?;
            let i64v = |v: Vec<u64>| v.into_iter().map(|x| x as i64).collect::<Vec<_>>();
            let src_d = i64v(prb.src_dims());
            let dst_d = i64v(prb.dst_dims());
            let src = b.md(&src_d, find(p, &["src", "diff_src"]), &dt)?;
            let dst = b.md(&dst_d, find(p, &["dst", "diff_dst"]), &dt)?;
            let a = alg(d, p.algorithm().ok_or("no algorithm")?)?;
            let (s, dl, pl, pr, k) = spatial(&prb, false);
            let k = dims12(&k);
            let attr = b.attr(p, &dst_d)?;
            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
            unsafe {
                if p.prop_kind.is_forward() {
                    ok(
                        (api.dnnl_pooling_forward_primitive_desc_create)(
                            &mut b.pd,
                            engine,
                            prop(d, &p.prop_kind)?,
                            a,
                            src,
                            dst,
                            s.as_ptr(),
                            k.as_ptr(),
                            dl.as_ptr(),
                            pl.as_ptr(),
                            pr.as_ptr(),
                            attr,
                        ),
                        "pooling forward",
                    )?
                } else {
                    ok(
                        (api.dnnl_pooling_forward_primitive_desc_create)(
                            &mut b.hint,
                            engine,
                            fwd_training,
                            a,
                            src,
                            dst,
                            s.as_ptr(),
                            k.as_ptr(),
                            dl.as_ptr(),
                            pl.as_ptr(),
                            pr.as_ptr(),
                            null,
                        ),
                        "pooling hint",
                    )?;
                    ok(
                        (api.dnnl_pooling_backward_primitive_desc_create)(
                            &mut b.pd,
                            engine,
                            a,
                            src,
                            dst,
                            s.as_ptr(),
                            k.as_ptr(),
                            dl.as_ptr(),
                            pl.as_ptr(),
                            pr.as_ptr(),
                            b.hint,
                            attr,
                        ),
                        "pooling backward",
                    )?
                }
            }
        }
        K::Softmax => {
            let dims = desc_dims(&p.problem)?;
            let a = alg(d, p.algorithm().unwrap_or("softmax_accurate"))?;
            let axis: c_int = p
                .aux_value("axis")
                .and_then(|v| v.parse().ok())
                .unwrap_or(1);
            let src = b.md(&dims, find(p, &["src", "data"]), &dt)?;
            let dst = b.md(&dims, find(p, &["dst"]).or(find(p, &["src", "data"])), &dt)?;
            let attr = b.attr(p, &dims)?;
            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
            unsafe {
                if p.prop_kind.is_forward() {
                    ok(
                        (api.dnnl_softmax_forward_primitive_desc_create)(
                            &mut b.pd,
                            engine,
                            prop(d, &p.prop_kind)?,
                            a,
                            src,
                            dst,
                            axis,
                            attr,
                        ),
                        "softmax forward",
                    )?
                } else {
                    let diff = b.md(
                        &dims,
                        find(p, &["diff_dst", "diff"]).or(find(p, &["dst"])),
                        &dt,
                    )?;
                    ok(
                        (api.dnnl_softmax_forward_primitive_desc_create)(
                            &mut b.hint,
                            engine,
                            fwd_training,
                            a,
                            src,
                            dst,
                            axis,
                            null,
                        ),
                        "softmax hint",
                    )?;
                    ok(
                        (api.dnnl_softmax_backward_primitive_desc_create)(
                            &mut b.pd, engine, a, src, diff, dst, axis, b.hint, attr,
                        ),
                        "softmax backward",
                    )?
                }
            }
        }
        K::Reorder => {
            let dims = desc_dims(&p.problem)?;
            let src = b.md(&dims, find(p, &["src", "in"]), &dt)?;
            let dst_m = find(p, &["dst", "out"]);
            if src.is_null() || dst_m.is_some_and(|m| m.properties.contains('a')) {
                return Err("reorder to a library-chosen layout cannot be rebuilt".into());
            }
            let dst = b.md(&dims, dst_m, &dt)?;
            if let Some(t) = b.unknown_tags.first() {
                return Err(format!("layout tag '{t}' is not known to this oneDNN"));
            }
            let attr = b.attr(p, &dims)?;
            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
            unsafe {
                ok(
                    (api.dnnl_reorder_primitive_desc_create)(
                        &mut b.pd, src, engine, dst, engine, attr,
                    ),
                    "reorder",
                )?
            };
        }
        K::Sum => {
            let dims = desc_dims(&p.problem)?;
            let srcs: Vec<&MemoryDesc> = p
                .mds
                .iter()
                .filter(|m| m.arg.starts_with("src") && !m.is_absent())
                .collect();
            let mut handles = Vec::new();
            for m in &srcs {
                handles.push(b.md(&dims, Some(m), &dt)?);
            }
            let dst = b.md(&dims, find(p, &["dst"]), &dt)?;
            let scales = vec![1.0f32; handles.len()];
            let attr = b.attr(p, &dims)?;
            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
            unsafe {
                ok(
                    (api.dnnl_sum_primitive_desc_create)(
                        &mut b.pd,
                        engine,
                        dst,
                        handles.len() as c_int,
                        scales.as_ptr(),
                        handles.as_ptr(),
                        attr,
                    ),
                    "sum",
                )?
            };
        }
        K::LayerNormalization => {
            let dims = desc_dims(&p.problem)?;
            let f = p.aux_value("flags").unwrap_or("");
            let mut flags = 0u32;
            for (c, v) in [('G', 1u32), ('C', 2), ('H', 4)] {
                if f.contains(c) {
                    flags |= v;
                }
            }
            if f.contains('M') {
                return Err("RMS normalization (flags M) is not replayed".into());
            }
            let src = b.md(&dims, find(p, &["src"]), &dt)?;
            let dst = b.md(&dims, find(p, &["dst"]), &dt)?;
            let stat = b.md(&dims[..dims.len() - 1], find(p, &["stats"]), "f32")?;
            let attr = b.attr(p, &dims)?;
            // SAFETY: a oneDNN C API call on descriptor, attribute and post-op handles this builder created and owns until drop; every out-pointer is a live local and every array outlives the call.
            unsafe {
                if p.prop_kind.is_forward() {
                    ok(
                        (api.dnnl_layer_normalization_forward_primitive_desc_create)(
                            &mut b.pd,
                            engine,
                            prop(d, &p.prop_kind)?,
                            src,
                            dst,
                            stat,
                            1e-5,
                            flags,
                            attr,
                        ),
                        "layer normalization forward",
                    )?
                } else {
                    let diff = b.md(&dims, find(p, &["diff_src", "diff_dst"]), &dt)?;
                    ok(
                        (api.dnnl_layer_normalization_forward_primitive_desc_create)(
                            &mut b.hint,
                            engine,
                            fwd_training,
                            src,
                            dst,
                            stat,
                            1e-5,
                            flags,
                            null,
                        ),
                        "layer normalization hint",
                    )?;
                    ok(
                        (api.dnnl_layer_normalization_backward_primitive_desc_create)(
                            &mut b.pd,
                            engine,
                            prop(d, &p.prop_kind)?,
                            diff,
                            diff,
                            src,
                            stat,
                            1e-5,
                            flags,
                            b.hint,
                            attr,
                        ),
                        "layer normalization backward",
                    )?
                }
            }
        }
        other => return Err(format!("replay of '{other}' primitives is not implemented")),
    }
    Ok(b)
}

/// Pooling descriptors read like convolutions with `oc = ic`.
fn pooling_problem(problem: &str) -> Result<ConvProblem, String> {
    let d = Descriptor::parse(problem).ok_or("pooling descriptor not recognised")?;
    let ic = d.get("ic").ok_or("no ic")?;
    // Make it a convolution descriptor: the pooling fields have the same names.
    let conv = format!("{problem}_oc{ic}");
    ConvProblem::parse(&conv, false).map_err(|e| e.reason)
}
