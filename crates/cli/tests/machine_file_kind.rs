//! Issue 51 item 21: a file of another kind given as `--machine` (a PyTorch trace `.json.gz`, the
//! log, replay results, an empty file, binary data) said "stream did not contain valid UTF-8".
//! Each is refused naming the file, what it is, what was expected and `profilednn peak -o`, by
//! every command that takes `--machine`; a gzip-compressed profile is read.

mod common;
use common::{bin, failed, root, succeeded, temp_dir};
use std::io::Write;

const PROFILE: &str = r#"{"name":"m","threads":2,"peak_gflops":{"f32":100},"memory_gbps":10}"#;

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn a_file_of_another_kind_given_as_the_machine_profile_is_named() {
    let dir = temp_dir();
    let log = root().join("fixtures/torch/mlp-f32.log.gz");
    let trace = root().join("fixtures/torch/mlp-f32.trace.json.gz");
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let replay = write(
        "r.json",
        br#"{"schema":"profilednn.replay.v1","results":[]}"#,
    );
    let empty = write("empty.json", b"");
    // Random bytes, compressed: neither text nor any kind ProfileDNN reads.
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let binary = write("x.json.gz", &gzip(&noise));
    let cases = [
        (&trace, "this is a PyTorch profiler trace"),
        (&log, "this is a oneDNN verbose log"),
        (&replay, "this is a replay results file"),
        (&empty, "this is an empty file"),
        (&binary, "this is binary data"),
    ];
    let l = log.to_str().unwrap();
    for (file, what) in cases {
        let m = file.to_str().unwrap();
        for args in [
            vec!["report", l, "--machine", m],
            vec!["advise", l, "--machine", m],
            vec!["project", l, "--machine", m],
            vec!["plan", l, "--cores", "2", "--machine", m],
        ] {
            let err = failed(bin().args(&args).output().unwrap());
            for want in [m, what, "expected a machine profile", "profilednn peak -o"] {
                assert!(err.contains(want), "{args:?}: {want}: {err}");
            }
            assert!(!err.contains("valid UTF-8"), "{args:?}: {err}");
        }
    }
    // A profile compressed with gzip is a profile.
    let gz = write("machine.json.gz", &gzip(PROFILE.as_bytes()));
    succeeded(
        bin()
            .args(["report", l, "--machine", gz.to_str().unwrap()])
            .output()
            .unwrap(),
    );
}
