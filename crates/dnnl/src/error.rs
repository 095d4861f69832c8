//! Errors that stop a replay before its first problem: no oneDNN to load, or one that cannot
//! run here. (A problem that cannot be replayed is not an error: see [`profilednn_replay::SkipReason`].)

use super::api::INSTALL_HINT;
use std::ffi::c_int;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// No candidate library could be loaded; `tried` says why for each one that exists.
    #[error("oneDNN (libdnnl.so.3) not found{}; {}", tried_list(.tried), INSTALL_HINT)]
    NotFound { tried: Vec<String> },
    /// The library loaded but refused a CPU engine (a GPU-only build, or a broken install).
    #[error(
        "oneDNN ({}) cannot create a CPU engine (status {status}): point --dnnl-lib at a CPU build of oneDNN 3.x, or {}",
        library.display(),
        INSTALL_HINT
    )]
    NoEngine { library: PathBuf, status: c_int },
    #[error(
        "oneDNN ({}) cannot create a stream on its CPU engine (status {status}): check the install, or {}",
        library.display(),
        INSTALL_HINT
    )]
    NoStream { library: PathBuf, status: c_int },
    /// The log could not be opened again for its call order (the sequence replay reads it twice).
    #[error("{}: cannot read the log", path.display())]
    Log {
        path: PathBuf,
        #[source]
        source: profilednn_verbose::OpenError,
    },
}

fn tried_list(tried: &[String]) -> String {
    if tried.is_empty() {
        String::new()
    } else {
        format!(" ({})", tried.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message a user without oneDNN sees: one line naming what was tried and how to
    /// install it (the CLI prints it as is).
    #[test]
    fn not_found_says_what_was_tried_and_what_to_do() {
        let none = ReplayError::NotFound { tried: vec![] }.to_string();
        assert_eq!(
            none,
            format!("oneDNN (libdnnl.so.3) not found; {INSTALL_HINT}")
        );
        let two = ReplayError::NotFound {
            tried: vec![
                "/a/libdnnl.so.3: bad ELF".into(),
                "/b/libdnnl.so.3: no symbol".into(),
            ],
        }
        .to_string();
        assert!(two.starts_with(
            "oneDNN (libdnnl.so.3) not found (/a/libdnnl.so.3: bad ELF; /b/libdnnl.so.3: no symbol); install oneDNN 3.x"
        ), "{two}");
        assert!(!two.contains('\n'));
        let engine = ReplayError::NoEngine {
            library: "/x/libdnnl.so.3".into(),
            status: 3,
        }
        .to_string();
        assert!(
            engine.contains("/x/libdnnl.so.3") && engine.contains("--dnnl-lib"),
            "{engine}"
        );
    }
}
