//! The roofline's note on the log's machine (issue 41): "a profile of another machine projects
//! to that machine" was printed beside a profile of the very machine the log ran on. A log whose
//! `isa:` line is this kind of machine's (AVX-512 with bf16 dot products, no AMX) against
//! profiles listing those units, and others.

mod common;
use common::{stdout_of, temp_dir};

const LOG: &str = "onednn_verbose,info,oneDNN v3.2.0 (commit 40112196287e)
onednn_verbose,info,cpu,runtime:OpenMP,nthr:2
onednn_verbose,info,cpu,isa:Intel AVX-512 with Intel DL Boost and bfloat16 support
onednn_verbose,exec,cpu,eltwise,jit:avx512_core,forward_training,data_f32::blocked:abcd:f0 diff_undef::undef::f0,,alg:eltwise_relu alpha:0 beta:0,2x16x8x8,0.01
";

fn report(isa: &str) -> String {
    let dir = temp_dir();
    let log = dir.join("zen4.log");
    std::fs::write(&log, LOG).unwrap();
    let m = dir.join("m.json");
    std::fs::write(
        &m,
        format!(
            r#"{{"name":"m","threads":2,"isa":[{isa}],"peak_gflops":{{"f32":200,"bf16":300}},"memory_gbps":40}}"#
        ),
    )
    .unwrap();
    stdout_of(&[
        "report",
        log.to_str().unwrap(),
        "--machine",
        m.to_str().unwrap(),
    ])
}

#[test]
fn a_profile_of_the_logs_machine_is_not_called_another_machine() {
    let same = report(r#""sse","avx2","avx512","avx512_bf16""#);
    assert!(
        same.contains("the log ran on: Intel AVX-512 with Intel DL Boost and bfloat16 support, the units of the profile's machine"),
        "{same}"
    );
    assert!(!same.contains("another machine"), "{same}");
    let other = report(r#""sse","avx2""#);
    assert!(other.contains("not the profile's machine"), "{other}");
}
