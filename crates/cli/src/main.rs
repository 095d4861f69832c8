//! `profilednn`: the command-line shell over the ProfileDNN libraries.

mod machine_file;
mod peak_cmd;
mod report_cmd;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

const ABOUT: &str = "Where does CPU training time go? ProfileDNN reads oneDNN verbose logs \
(ONEDNN_VERBOSE / DNNL_VERBOSE / MKLDNN_VERBOSE, every format generation) and breaks the time down.";

const AFTER_HELP: &str = "\
The method: profile -> project -> optimize.
  1. Profile:  run training with ONEDNN_VERBOSE=1 (add ONEDNN_VERBOSE_TIMESTAMP=1 for timelines),
               then `profilednn report train.log` to see time by primitive kind, direction,
               implementation, data type and the heaviest unique primitives.
  2. Project:  `profilednn peak` measures this machine's ceilings (or write a profile for another
               machine by hand); `report` then shows how far each primitive is from the roofline
               and where the most time is lost against it (`--machine FILE`).
               (coming) replay the log's primitives on this or another machine.
  3. Optimize: (coming) rules that turn the breakdown into actions.

Example on a bundled real log:
  profilednn report examples/retinanet_rnx50_fp32.log.gz";

#[derive(Parser)]
#[command(name = "profilednn", version, about = ABOUT, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Break oneDNN time down by kind, direction, implementation, data type and primitive.
    Report(report_cmd::ReportArgs),
    /// Measure this machine's compute peaks and memory bandwidth (the roofline's ceilings).
    Peak(peak_cmd::PeakArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Report(args) => report_cmd::run(args),
        Command::Peak(args) => peak_cmd::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("profilednn: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
