//! The environment that turns oneDNN's verbose mode on, in every generation's names (oneDNN,
//! DNNL, MKL-DNN): `record` sets it for the program it records, and the whole-step replay for
//! its helper, so that both pay the same per-primitive lines.

/// Verbose level (`1`: executions; `2`: also primitive creations).
pub const LEVEL: [&str; 3] = ["ONEDNN_VERBOSE", "DNNL_VERBOSE", "MKLDNN_VERBOSE"];

/// Timestamps on each line (`1`), from the generations that have them.
pub const TIMESTAMP: [&str; 2] = ["ONEDNN_VERBOSE_TIMESTAMP", "DNNL_VERBOSE_TIMESTAMP"];

/// Environment that turns verbose mode on for every generation of the library.
pub fn of_recording(level: u8, timestamps: bool) -> Vec<(&'static str, String)> {
    let mut v: Vec<(&'static str, String)> = LEVEL.map(|n| (n, level.to_string())).into();
    if timestamps {
        v.extend(TIMESTAMP.map(|n| (n, "1".to_string())));
    }
    v
}
