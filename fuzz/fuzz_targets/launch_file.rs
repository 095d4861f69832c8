//! `STEM.launch.json` (written by `record --ranks`, read by `advise`): any bytes through the
//! reader (a file beside a log), and the sysfs/procfs lists it is made of.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = profilednn_analysis::ranks::launch::parse_cpu_list(text);
        let _ = profilednn_analysis::ranks::launch::parse_cpu_max(text);
    }
    let dir = std::env::temp_dir().join(format!("profilednn-fuzz-launch-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let log = dir.join("run.log");
    if std::fs::write(dir.join("run.launch.json"), data).is_ok() {
        if let Ok(Some(l)) = profilednn_analysis::ranks::launch::read(&log) {
            let _ = profilednn_analysis::ranks::launch::costs(&l, Some(2));
        }
    }
});
