//! `record --torch -- /path/to/python …` keeps the interpreter in the log (issue 51 item 16),
//! and reads back as the interpreter the whole-step replay runs.

mod common;
use common::{bin, temp_dir};
use profilednn_analysis::torch_trace::recorded_python;

#[test]
fn the_recorded_interpreter_round_trips_through_the_log() {
    let Some(python) = ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.is_file())
    else {
        println!("SKIPPED: no python3 in /usr/bin or /usr/local/bin");
        return;
    };
    let dir = temp_dir();
    let record = |torch: bool, log: &std::path::Path| {
        let mut c = bin();
        c.arg("record");
        if torch {
            c.arg("--torch");
        }
        c.args(["--no-report", "-o", log.to_str().unwrap(), "--"])
            .arg(&python)
            .args(["-c", "print('step')"]);
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        recorded_python::of_log(log)
    };
    assert_eq!(record(true, &dir.join("run.log.gz")), Some(python.clone()));
    // Without --torch nothing is kept.
    assert_eq!(record(false, &dir.join("plain.log")), None);
}
