//! `profilednn peak`: measure this machine's compute peaks and memory bandwidth.

use crate::ExitCode;
use anyhow::{Context, Result};
use clap::Args;
use comfy_table::{presets::UTF8_HORIZONTAL_ONLY, Cell, CellAlignment, Table};
use indicatif::{ProgressBar, ProgressStyle};
use profilednn_machine::measure::{measure, Effort};
use profilednn_machine::{cpu, MachineProfile};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args)]
pub struct PeakArgs {
    /// Write the machine profile here (default: the per-user profile that `report` picks up,
    /// ~/.config/profilednn/machine.json).
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,
    /// A few seconds instead of about half a minute: fewer runs, smaller sweep.
    #[arg(long)]
    quick: bool,
    /// Threads for the all-core figures (default: all hardware threads).
    #[arg(long, short = 'j')]
    threads: Option<usize>,
    /// Print the profile as JSON instead of tables.
    #[arg(long)]
    json: bool,
}

pub fn run(args: PeakArgs) -> Result<ExitCode> {
    let threads = args.threads.unwrap_or_else(cpu::threads).max(1);
    let effort = if args.quick {
        Effort::quick(threads)
    } else {
        Effort::standard(threads)
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new_spinner();
        b.set_style(ProgressStyle::with_template("{spinner} measuring {msg} [{elapsed}]").unwrap());
        b.enable_steady_tick(Duration::from_millis(120));
        b
    });
    let profile = measure(effort, &mut |step| {
        if let Some(b) = &bar {
            b.set_message(step.to_string());
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let path = match args.output {
        Some(p) => p,
        None => crate::machine_file::default_path()
            .context("no HOME or XDG_CONFIG_HOME to save the profile in; pass -o FILE")?,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("{}: cannot create directory", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(&profile)? + "\n";
    std::fs::write(&path, &json).with_context(|| format!("{}: cannot write", path.display()))?;
    if args.json {
        crate::output::write(None, json)?;
    } else {
        crate::output::write(None, render(&profile))?;
    }
    eprintln!("machine profile written to {}", path.display());
    Ok(ExitCode::SUCCESS)
}

fn table() -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_HORIZONTAL_ONLY);
    t
}

fn num(v: String) -> Cell {
    Cell::new(v).set_alignment(CellAlignment::Right)
}

fn render(p: &MachineProfile) -> String {
    let mut out = format!(
        "Machine: {} · {} threads · ISA: {}\n",
        p.cpu.as_deref().unwrap_or("unknown CPU"),
        p.threads.unwrap_or(0),
        p.isa.join(" ")
    );
    let mut t = table();
    t.set_header(vec![
        "precision",
        "isa",
        "1 core GFLOP/s",
        "all cores GFLOP/s",
        "theory/core (2 units, nominal GHz)",
        "reached",
    ]);
    for c in &p.compute {
        let (theory, reached) = match c.theoretical_per_core_gflops {
            Some(th) => (
                format!("{th:.0}"),
                format!("{:.0}%", c.per_core_gflops / th * 100.0),
            ),
            None => (String::new(), String::new()),
        };
        t.add_row(vec![
            Cell::new(&c.precision),
            Cell::new(&c.isa),
            num(format!("{:.1}", c.per_core_gflops)),
            num(format!("{:.1}", c.all_core_gflops)),
            num(theory),
            num(reached),
        ]);
    }
    out += &format!("\nCompute peaks\n{t}\n");
    if let Some(c) = p.compute.first() {
        out += &format!("  method: {}\n", c.method);
    }
    let mut t = table();
    t.set_header(vec![
        "working set",
        "threads",
        "read GB/s",
        "copy GB/s",
        "triad GB/s",
    ]);
    let mut sets: Vec<(u64, usize)> = p
        .bandwidth
        .iter()
        .map(|b| (b.working_set_bytes, b.threads))
        .collect();
    sets.dedup();
    for (ws, th) in sets {
        let get = |k: &str| {
            p.bandwidth
                .iter()
                .find(|b| b.kernel == k && b.working_set_bytes == ws && b.threads == th)
                .map(|b| format!("{:.1}", b.gbps))
                .unwrap_or_default()
        };
        let size = if ws >= 1 << 20 {
            format!("{} MiB", ws >> 20)
        } else {
            format!("{} KiB", ws >> 10)
        };
        t.add_row(vec![
            num(size),
            num(th.to_string()),
            num(get("read")),
            num(get("copy")),
            num(get("triad")),
        ]);
    }
    out += &format!(
        "\nMemory bandwidth (best of {} runs; bytes read + written, checksummed)\n{t}\n",
        p.bandwidth.first().map_or(0, |b| b.runs)
    );
    let peaks: Vec<String> = p
        .peak_gflops
        .iter()
        .map(|(k, v)| format!("{k} {v:.0} GFLOP/s"))
        .collect();
    out += &format!(
        "\nRoofline: {} · memory {:.1} GB/s (all threads, largest working set)\n",
        peaks.join(", "),
        p.memory_gbps
    );
    for n in &p.notes {
        out += &format!("  note: {n}\n");
    }
    for s in p.suspicions() {
        out += &format!("  ⚠ suspect: {s}\n");
    }
    out
}
