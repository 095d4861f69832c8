//! Which Python runs the helper: the one environment variable this crate reads.

use std::path::{Path, PathBuf};

/// The interpreter, and where the choice came from (said in the output, since a wrong one is
/// the likeliest cause of a surprising figure).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interpreter {
    pub path: PathBuf,
    pub from: &'static str,
}

/// `given` (`--python`), else `$PROFILEDNN_TORCH_PYTHON`, else the interpreter the run was
/// recorded with when it still exists (`record --torch -- /venv/bin/python train.py` keeps it in
/// the log), else the running interpreter when the command runs inside one (the `profilednn`
/// console script of `pip install ./python`, whose Python has torch;
/// `$PROFILEDNN_RUNNING_PYTHON`), else `python3` from the PATH.
pub fn interpreter(given: Option<&Path>) -> Interpreter {
    interpreter_of(given, None)
}

/// [`interpreter`] with the interpreter the log was `recorded` with.
pub fn interpreter_of(given: Option<&Path>, recorded: Option<&Path>) -> Interpreter {
    choose(given, recorded.filter(|p| p.is_file()), |k| {
        std::env::var_os(k)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
    })
}

/// The choice itself, with the environment as `env` (tested without touching the process's).
fn choose(
    given: Option<&Path>,
    recorded: Option<&Path>,
    env: impl Fn(&str) -> Option<PathBuf>,
) -> Interpreter {
    let (path, from) = if let Some(p) = given {
        (p.into(), "--python")
    } else if let Some(p) = env("PROFILEDNN_TORCH_PYTHON") {
        (p, "PROFILEDNN_TORCH_PYTHON")
    } else if let Some(p) = recorded {
        (p.into(), "the recording (record --torch)")
    } else if let Some(p) = env("PROFILEDNN_RUNNING_PYTHON") {
        // Set by the console script (`python/profilednn/_cli.py`) to its `sys.executable`:
        // the venv's interpreter, where the process's own executable would be the base one.
        (p, "the running interpreter")
    } else {
        ("python3".into(), "the PATH")
    };
    Interpreter { path, from }
}

/// The interpreter `program` is, as `record` runs it, when it is a Python (`python`,
/// `python3.12`, a venv's `bin/python`): absolute, found on the PATH when given by name.
pub fn recorded(program: &Path) -> Option<PathBuf> {
    let name = program.file_name()?.to_string_lossy();
    if !name.starts_with("python") {
        return None;
    }
    if program.components().count() > 1 {
        return std::path::absolute(program).ok();
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_interpreter_comes_after_the_flag_and_the_variable() {
        let rec = Some(Path::new("/venv/bin/python"));
        let none = |_: &str| None;
        let set = |k: &str| (k == "PROFILEDNN_TORCH_PYTHON").then(|| PathBuf::from("/env/python"));
        let running =
            |k: &str| (k == "PROFILEDNN_RUNNING_PYTHON").then(|| PathBuf::from("/run/python"));
        let given = Some(Path::new("/flag/python"));
        assert_eq!(choose(given, rec, set).path, Path::new("/flag/python"));
        assert_eq!(choose(None, rec, set).path, Path::new("/env/python"));
        let r = choose(None, rec, running);
        assert_eq!(
            (r.path.as_path(), r.from),
            (
                Path::new("/venv/bin/python"),
                "the recording (record --torch)"
            )
        );
        assert_eq!(choose(None, None, running).path, Path::new("/run/python"));
        assert_eq!(choose(None, None, none).path, Path::new("python3"));
    }

    #[test]
    fn only_a_python_program_is_recorded() {
        assert_eq!(
            recorded(Path::new("/venv/bin/python3.12")).as_deref(),
            Some(Path::new("/venv/bin/python3.12"))
        );
        assert_eq!(recorded(Path::new("torchrun")), None);
        assert_eq!(recorded(Path::new("./train.sh")), None);
    }
}
