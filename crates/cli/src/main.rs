//! The `profilednn` binary: the command line of [`profilednn_cli::run`] over the process's
//! arguments.

fn main() -> std::process::ExitCode {
    profilednn_cli::run(std::env::args_os()).into()
}
