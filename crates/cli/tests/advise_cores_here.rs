//! `thread-oversubscription` on the machine the log was recorded on needs no `--cores` (issue
//! 41): the log's ISA line is this machine's, its threads fit, so the rule uses this machine's
//! hardware threads. The header is chosen from /proc/cpuinfo's flags as oneDNN 3.x names the
//! CPU's ISA; a CPU this test does not know how oneDNN names is SKIPPED.

mod common;
use common::{stdout_of, temp_dir};

/// oneDNN's `isa:` header for this CPU, from its flags, when this test knows it.
fn onednn_isa_here() -> Option<&'static str> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let flags: Vec<&str> = info
        .lines()
        .find(|l| l.starts_with("flags"))?
        .split_whitespace()
        .collect();
    let has = |f: &str| flags.contains(&f);
    if has("amx_tile") || has("avx512_fp16") {
        return None;
    }
    match (
        has("avx512f") && has("avx512bw"),
        has("avx512_vnni"),
        has("avx512_bf16"),
    ) {
        (true, true, true) => Some("Intel AVX-512 with Intel DL Boost and bfloat16 support"),
        (true, true, false) => Some("Intel AVX-512 with Intel DL Boost"),
        (false, _, _) if has("avx2") && !has("avx_vnni") => Some("Intel AVX2"),
        _ => None,
    }
}

#[test]
fn a_log_recorded_here_needs_no_cores_option() {
    let Some(isa) = onednn_isa_here() else {
        println!("SKIPPED: this CPU's oneDNN ISA name is not one this test knows");
        return;
    };
    let log = temp_dir().join("here.log");
    std::fs::write(
        &log,
        format!(
            "onednn_verbose,info,oneDNN v3.2.0 (commit 40112196287e)\n\
             onednn_verbose,info,cpu,runtime:OpenMP,nthr:1\n\
             onednn_verbose,info,cpu,isa:{isa}\n\
             onednn_verbose,exec,cpu,eltwise,jit:avx2,forward_training,data_f32::blocked:abcd:f0 \
             diff_undef::undef::f0,,alg:eltwise_relu alpha:0 beta:0,2x16x8x8,0.01\n"
        ),
    )
    .unwrap();
    let text = stdout_of(&["advise", log.to_str().unwrap()]);
    let cores = std::thread::available_parallelism().unwrap().get();
    let line = text
        .lines()
        .find(|l| l.contains("thread-oversubscription"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(!line.contains("core count is unknown"), "{line}");
    assert!(
        line.contains(
            "(this machine's, whose ISA the log's is: pass --cores N if it ran elsewhere)"
        ),
        "{line}"
    );
    assert!(
        line.contains(&format!("on a {cores}-core machine"))
            || line.contains(&format!("fit {cores} cores")),
        "{line}"
    );
}
