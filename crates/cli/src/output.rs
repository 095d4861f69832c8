//! Where a command's output goes: a file, or stdout. When the reader of stdout goes away
//! (`profilednn report big.log | head`), the program ends quietly with status 0, as other Unix
//! tools do; a log that could not be read to its end makes the status 2. Every command writes
//! through here.

use anyhow::{Context, Result};
use std::io::{self, Write};
use std::path::Path;

/// Stdout whose broken pipe ends the program quietly with status 0.
pub struct Stdout(io::StdoutLock<'static>);

pub fn stdout() -> Stdout {
    Stdout(io::stdout().lock())
}

impl Write for Stdout {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        quiet(self.0.write(b))
    }
    fn flush(&mut self) -> io::Result<()> {
        quiet(self.0.flush())
    }
}

fn quiet<T>(r: io::Result<T>) -> io::Result<T> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => std::process::exit(0),
        r => r,
    }
}

fn is_stdout(path: Option<&Path>) -> bool {
    !matches!(path, Some(p) if p.as_os_str() != "-")
}

/// Writes `text` to the file `path`, or to stdout when `path` is `None` or `-`.
pub fn write(path: Option<&Path>, text: impl AsRef<[u8]>) -> Result<()> {
    match path.filter(|_| !is_stdout(path)) {
        Some(p) => write_file(p, text),
        None => {
            let mut o = stdout();
            o.write_all(text.as_ref())?;
            o.flush()?;
            Ok(())
        }
    }
}

/// Writes `text` to the file `path` (a file even when named `-`: for outputs that go beside
/// the one on stdout, such as `report --html` or the profile `peak` saves).
pub fn write_file(path: &Path, text: impl AsRef<[u8]>) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("{}: cannot write", path.display()))
}

/// The exit status of a command whose input could not be read to its end: each read error is
/// printed, saying that `what` covers the data before it, and the status is 2 (a partial
/// result); 0 when there is none.
pub fn read_errors_status<E: std::fmt::Display>(
    errors: impl IntoIterator<Item = E>,
    what: &str,
) -> crate::ExitCode {
    let mut status = crate::ExitCode::SUCCESS;
    for e in errors {
        eprintln!("profilednn: error: {e} ({what} covers the data before that point)");
        status = crate::ExitCode::from(2);
    }
    status
}

/// A writer to the file `path` (created), or to stdout for `-`.
pub fn create(path: &Path) -> Result<Box<dyn Write>> {
    if is_stdout(Some(path)) {
        return Ok(Box::new(stdout()));
    }
    let f = std::fs::File::create(path)
        .with_context(|| format!("{}: cannot create", path.display()))?;
    Ok(Box::new(f))
}

/// `print!` through [`Stdout`]; other write errors are returned.
pub fn print(args: std::fmt::Arguments) -> io::Result<()> {
    stdout().write_fmt(args)
}

/// `println!` through [`Stdout`], returning from the enclosing function on other errors.
macro_rules! outln {
    () => {
        $crate::output::print(format_args!("\n"))?
    };
    ($($t:tt)*) => {
        $crate::output::print(format_args!("{}\n", format_args!($($t)*)))?
    };
}
pub(crate) use outln;
