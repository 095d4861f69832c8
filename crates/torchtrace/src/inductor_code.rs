//! Inductor's output code, read for what the trace leaves out: each generated kernel's buffers.
//!
//! A compiled kernel is a trace event by name only (`graph_0_cpp_fused_gelu_native_layer_norm_0`,
//! no shapes), so it has no cost from the trace. The output code that `profilednn.profile` keeps
//! beside the trace (`run.inductor.py.gz`, one module per compiled graph after a `# profilednn:
//! output code PATH` line) says what each call touches:
//! - the kernel's definition: `NAME = async_compile.cpp_pybinding([…], r'''…''')`, its C++
//!   parameters (`const float* in_ptr0`, `float* in_out_ptr0`, `float* out_ptr1`) and the name its
//!   profiling scope gives the trace (`RAIIAtenRecordFunctionHandle …("graph_0_cpp_fused_…")`);
//! - in the graph's `call`, the buffers with their sizes and types (`buf0 =
//!   empty_strided_cpu((4, 64, 128), (…), torch.float32)`, reuses `buf4 = buf3; del buf3`, views
//!   `reinterpret_tensor(buf5, (4, 64, 1), …)`), the graph's inputs in `get_args`
//!   (`primals_1 = rand_strided((4, 64), (…), device='cpu', dtype=torch.int64)`), and each
//!   kernel's call with its arguments.
//!
//! A call's bytes are its distinct buffers' (an `in_out` one read and written), its elements the
//! largest buffer's, its flops those elements times the operations per element of the ops its
//! name fused ([`profilednn_cost::framework::fused_per_element`]): an estimate, labelled so.
//! Parsing is lenient: a line it does not know is skipped; a call whose buffers it cannot size
//! is left uncosted with the reason.

use std::collections::BTreeMap;

/// The line `profilednn.profile` writes before each module.
pub const MODULE_MARK: &str = "# profilednn: output code ";

/// Where the output code of `trace` is kept: `run.trace.json.gz` → `run.inductor.py.gz` (as
/// `profilednn.capture.code_path` writes it).
pub fn code_path(trace: &std::path::Path) -> std::path::PathBuf {
    let name = trace
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = [".trace.json.gz", ".trace.json", ".json.gz", ".json"]
        .iter()
        .find_map(|s| name.strip_suffix(s))
        .unwrap_or(&name);
    trace.with_file_name(format!("{stem}.inductor.py.gz"))
}

/// One call of a kernel in a graph's `call`, costed from its buffers.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KernelCall {
    /// Bytes of the distinct buffers read and written.
    pub bytes: u64,
    /// The largest buffer's elements: what the kernel loops over.
    pub elements: u64,
    /// `f32`, `bf16`, … of the largest floating-point buffer.
    pub precision: String,
}

/// What the output code says of each kernel, by the name the trace gives it.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct OutputCode {
    /// Modules read (compiled graphs: a forward and a backward each).
    pub modules: usize,
    /// Each kernel's calls in its graph's `call`, in order (one per launch of the graph).
    pub kernels: BTreeMap<String, Vec<KernelCall>>,
    /// Kernels defined but not costed, with why (a buffer without a known size).
    pub uncosted: BTreeMap<String, String>,
}

/// A buffer's elements and bytes per element.
#[derive(Debug, Clone, Copy)]
struct Buffer {
    elements: u64,
    element_bytes: u64,
    float: bool,
}

/// Parses the output code of one run (any number of modules). Never fails: what it cannot
/// read is skipped or listed in `uncosted`.
pub fn parse(text: &str) -> OutputCode {
    let mut out = OutputCode::default();
    let mut modules: Vec<&str> = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(MODULE_MARK) {
        if at > 0 {
            modules.push(&rest[..at]);
        }
        let after = &rest[at + MODULE_MARK.len()..];
        rest = after.find('\n').map_or("", |n| &after[n + 1..]);
    }
    modules.push(rest);
    for m in modules.into_iter().filter(|m| m.contains("def call(")) {
        out.modules += 1;
        module(m, &mut out);
    }
    out
}

/// A kernel's definition: its C++ parameters (`true`: written) and its name in the trace.
struct Kernel {
    traced: String,
    written: Vec<bool>,
}

fn module(text: &str, out: &mut OutputCode) {
    let kernels = definitions(text);
    let mut buffers: BTreeMap<&str, Buffer> = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if let Some((name, b)) = input(line) {
            buffers.insert(name, b);
        }
    }
    for line in text.lines().map(str::trim) {
        if let Some((name, b)) = metadata(line) {
            buffers.insert(name, b);
            continue;
        }
        if let Some((name, value)) = line.split_once(" = ") {
            let name = name.trim();
            if let Some(b) =
                sized(value, "empty_strided_cpu(").and_then(|(dims, ty)| buffer(&dims, ty))
            {
                buffers.insert(name, b);
                continue;
            }
            let value = value.split(';').next().unwrap_or("").trim();
            if let Some(b) = view(value, &buffers).or_else(|| buffers.get(value).copied()) {
                buffers.insert(name, b);
            }
            continue;
        }
        let Some((callee, args)) = line.strip_suffix(')').and_then(|l| l.split_once('(')) else {
            continue;
        };
        let Some(k) = kernels.get(callee) else {
            continue;
        };
        match call_cost(k, &split_args(args), &buffers) {
            Ok(c) => out.kernels.entry(k.traced.clone()).or_default().push(c),
            Err(why) => {
                out.uncosted.entry(k.traced.clone()).or_insert(why);
            }
        }
    }
}

/// The kernels a module defines, by their Python name.
fn definitions(text: &str) -> BTreeMap<String, Kernel> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some((name, _)) = line.split_once(" = async_compile.cpp_pybinding(") else {
            continue;
        };
        let mut signature = String::new();
        let mut traced = None;
        let mut in_signature = false;
        for l in lines.by_ref() {
            if l.starts_with("''')") {
                break;
            }
            if l.contains(" kernel(") {
                in_signature = true;
            }
            if in_signature {
                signature.push_str(l);
                if l.contains(')') {
                    in_signature = false;
                }
            }
            if traced.is_none() && l.contains("RecordFunctionHandle") {
                traced = l.split('"').nth(1).map(str::to_string);
            }
        }
        let params = signature
            .split_once("kernel(")
            .and_then(|(_, p)| p.split(')').next())
            .unwrap_or("");
        let written = params
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| !p.trim_start().starts_with("const "))
            .collect();
        let name = name.trim().to_string();
        out.insert(
            name.clone(),
            Kernel {
                traced: traced.unwrap_or(name),
                written,
            },
        );
    }
    out
}

/// `primals_1 = rand_strided((4, 64), (64, 1), device='cpu', dtype=torch.int64)`.
fn input(line: &str) -> Option<(&str, Buffer)> {
    let (name, value) = line.split_once(" = ")?;
    let (dims, _) = sized(value, "rand_strided(")?;
    let ty = value.split("dtype=torch.").nth(1)?.trim_end_matches(')');
    Some((name.trim(), buffer(&dims, ty)?))
}

/// `assert_tensor_metadata(buf24, (4, 4, 64, 32), (…), torch.float32, '…')`: what a buffer
/// taken out of an extern op's result (`buf24 = buf23[0]`) holds.
fn metadata(line: &str) -> Option<(&str, Buffer)> {
    let inner = line.strip_prefix("assert_tensor_metadata(")?;
    let (name, rest) = inner.split_once(',')?;
    let (dims, _) = tuple(rest)?;
    let ty = rest.split("torch.").nth(1)?.split([',', ')']).next()?;
    Some((name.trim(), buffer(&dims, ty)?))
}

/// `CALL((d0, d1), (s0, s1), …torch.TYPE)`: the dims and the text after them.
fn sized<'a>(value: &'a str, call: &str) -> Option<(Vec<u64>, &'a str)> {
    let inner = value.strip_prefix(call)?;
    let (dims, rest) = tuple(inner)?;
    let ty = rest
        .rsplit("torch.")
        .next()
        .unwrap_or("")
        .trim_end_matches(')');
    Some((dims, ty))
}

/// The first `(a, b, …)` of `s` as numbers, and the text after it; none for a symbolic size.
fn tuple(s: &str) -> Option<(Vec<u64>, &str)> {
    let s = s.trim_start().strip_prefix('(')?;
    let end = s.find(')')?;
    let dims = s[..end]
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.parse::<u64>().ok())
        .collect::<Option<Vec<u64>>>()?;
    Some((dims, &s[end + 1..]))
}

fn buffer(dims: &[u64], ty: &str) -> Option<Buffer> {
    let (element_bytes, float) = match ty.trim() {
        "float32" | "float" => (4, true),
        "bfloat16" | "float16" | "half" => (2, true),
        "float64" | "double" => (8, true),
        "int64" | "long" => (8, false),
        "int32" | "int" => (4, false),
        "int16" => (2, false),
        "int8" | "uint8" | "bool" => (1, false),
        _ => return None,
    };
    let elements = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
    Some(Buffer {
        elements,
        element_bytes,
        float,
    })
}

/// `reinterpret_tensor(buf5, (4, 64, 1), (…), 0)`: the view's elements, the base's type.
fn view(value: &str, buffers: &BTreeMap<&str, Buffer>) -> Option<Buffer> {
    let inner = value.strip_prefix("reinterpret_tensor(")?;
    let (base, rest) = inner.split_once(',')?;
    let b = buffers.get(base.trim())?;
    let (dims, _) = tuple(rest)?;
    Some(Buffer {
        elements: dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?,
        ..*b
    })
}

/// The arguments of a call, split at the commas outside parentheses.
fn split_args(args: &str) -> Vec<&str> {
    let (mut out, mut depth, mut from) = (Vec::new(), 0i32, 0);
    for (i, c) in args.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(args[from..i].trim());
                from = i + 1;
            }
            _ => {}
        }
    }
    let last = args[from..].trim();
    if !last.is_empty() {
        out.push(last);
    }
    out
}

fn call_cost(
    k: &Kernel,
    args: &[&str],
    buffers: &BTreeMap<&str, Buffer>,
) -> Result<KernelCall, String> {
    let mut seen: Vec<&str> = Vec::new();
    let (mut bytes, mut elements, mut widest) = (0u64, 0u64, None::<Buffer>);
    for (i, a) in args.iter().enumerate() {
        let b = view(a, buffers)
            .or_else(|| buffers.get(a).copied())
            .ok_or_else(|| format!("argument {} (`{a}`) has no size in the output code", i + 1))?;
        elements = elements.max(b.elements);
        if b.float && widest.is_none_or(|w| b.elements > w.elements) {
            widest = Some(b);
        }
        if seen.contains(a) {
            continue;
        }
        seen.push(a);
        let times = 1 + u64::from(k.written.get(i).copied().unwrap_or(false) && is_read_too(i, k));
        bytes = bytes.saturating_add(b.elements.saturating_mul(b.element_bytes) * times);
    }
    let precision = match widest.map(|w| w.element_bytes) {
        Some(2) => "bf16",
        Some(8) => "f64",
        _ => "f32",
    };
    Ok(KernelCall {
        bytes,
        elements,
        precision: precision.into(),
    })
}

/// Whether written parameter `i` is also read: Inductor puts the `in_out_ptr`s first, before
/// the `in_ptr`s, so a written parameter before the first read-only one is read and written.
fn is_read_too(i: usize, k: &Kernel) -> bool {
    k.written
        .iter()
        .position(|w| !w)
        .is_some_and(|first_read| i < first_read)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One kernel's definition, a graph's `call` and its `get_args`, as Inductor writes them
    /// (cut down from the GPT fixture's); also the fuzz target's seed.
    const CODE: &str = include_str!("../../../fuzz/seeds_inductor_code/one-kernel.py");

    /// By hand: buf2 (16 floats, read and written: 128 bytes), buf0 (2048 floats read: 8192),
    /// primals_1 (128 floats: 512), buf5 viewed as 2048 floats written (8192): 17024 bytes,
    /// 2048 elements, f32.
    #[test]
    fn a_kernel_call_is_costed_from_its_buffers() {
        let c = parse(CODE);
        assert_eq!(c.modules, 1);
        let calls = &c.kernels["graph_0_cpp_fused_gelu_native_layer_norm_0"];
        assert_eq!(
            calls,
            &[KernelCall {
                bytes: 128 + 8192 + 512 + 8192,
                elements: 2048,
                precision: "f32".into()
            }]
        );
    }

    #[test]
    fn a_buffer_without_a_size_leaves_the_kernel_uncosted_with_the_reason() {
        let code = CODE.replace(
            "buf0 = empty_strided_cpu((16, 128)",
            "buf0 = empty_strided_cpu((s0, 128)",
        );
        let c = parse(&code);
        assert!(c.kernels.is_empty());
        let why = &c.uncosted["graph_0_cpp_fused_gelu_native_layer_norm_0"];
        assert!(why.contains("buf0"), "{why}");
    }

    #[test]
    fn the_code_path_sits_beside_the_trace() {
        let p = code_path(std::path::Path::new("/r/run.trace.json.gz"));
        assert_eq!(p, std::path::Path::new("/r/run.inductor.py.gz"));
    }

    /// Truncated or foreign text parses to what it holds, without panicking.
    #[test]
    fn cut_code_keeps_what_it_holds() {
        for n in (0..CODE.len()).step_by(7) {
            let _ = parse(&CODE[..CODE.floor_char_boundary(n)]);
        }
    }
}
