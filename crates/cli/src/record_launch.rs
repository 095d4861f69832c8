//! `record --ranks`: the launch, gathered while the ranks run
//! (`profilednn_analysis::ranks::sample`), written beside the log for `advise`
//! (`launch-config`).

use profilednn_analysis::ranks::launch::Launch;
pub use profilednn_analysis::ranks::sample::Sampler;
use std::ffi::OsString;

/// Writes `launch` with the ranks seen beside `log` (`profilednn_analysis::ranks::launch::path_of`),
/// and says where.
pub fn write(log: &std::path::Path, launch: Launch, sampler: Sampler) -> anyhow::Result<()> {
    let launch = Launch {
        ranks: sampler.finish(),
        ..launch
    };
    let path = profilednn_analysis::ranks::launch::path_of(log);
    std::fs::write(&path, serde_json::to_string_pretty(&launch)? + "\n")
        .map_err(|e| anyhow::anyhow!("{}: cannot write the launch: {e}", path.display()))?;
    eprintln!(
        "profilednn: the launch ({} rank process(es) seen: OMP_NUM_THREADS, affinity; the CPU limit) written to {}",
        launch.ranks.len(),
        path.display()
    );
    Ok(())
}

/// What the launching environment and the command say, before any rank runs.
pub fn launching(command: &[OsString], env: impl Fn(&str) -> Option<String>) -> Launch {
    profilednn_analysis::ranks::sample::launching(command, env, host_cpus())
}

fn host_cpus() -> Option<u64> {
    // SAFETY: sysconf with a constant name has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    (n > 0).then_some(n as u64)
}
