//! What `record --torch` gives the program it runs: where the PyTorch trace goes (beside the
//! log, so that `report LOG --torch-trace` finds it by name) and the environment that makes the
//! trace complete.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The variable `profilednn.profile()` reads the trace's path from.
pub const TRACE_VAR: &str = "PROFILEDNN_TORCH_TRACE";

/// torch.compile's generated kernels appear in the trace by name (each call wrapped in a record
/// function) only with this set when Inductor generates them.
const KERNELS_VAR: &str = "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE";

/// `run.log` / `run.log.gz` → `run.trace.json.gz` (written compressed: traces of compiled
/// models run to hundreds of MB).
pub fn trace_path(log: &Path) -> PathBuf {
    let name = log
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name
        .strip_suffix(".gz")
        .unwrap_or(&name)
        .strip_suffix(".log")
        .unwrap_or(name.strip_suffix(".gz").unwrap_or(&name))
        .to_string();
    log.with_file_name(format!("{stem}.trace.json.gz"))
}

/// The variables the program gets for a trace beside `log`; `env` reads the environment
/// `record` runs in: a kernel-profile setting the user chose is kept.
pub fn env(log: &Path, env: impl Fn(&str) -> Option<OsString>) -> Vec<(&'static str, OsString)> {
    let mut vars = vec![(TRACE_VAR, trace_path(log).into_os_string())];
    if env(KERNELS_VAR).is_none() {
        vars.push((KERNELS_VAR, "1".into()));
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trace_is_named_after_the_log() {
        let t = |l: &str| trace_path(Path::new(l)).display().to_string();
        assert_eq!(t("d/run.log"), "d/run.trace.json.gz");
        assert_eq!(t("d/run.log.gz"), "d/run.trace.json.gz");
        assert_eq!(t("run.gz"), "run.trace.json.gz");
        assert_eq!(t("run"), "run.trace.json.gz");
    }

    #[test]
    fn a_kernel_profile_setting_of_the_user_is_kept() {
        let vars = env(Path::new("run.log"), |_| None);
        assert_eq!(vars[0], (TRACE_VAR, "run.trace.json.gz".into()));
        assert_eq!(vars[1], (KERNELS_VAR, "1".into()));
        let vars = env(Path::new("run.log"), |_| Some("0".into()));
        assert_eq!(vars.len(), 1);
    }
}
