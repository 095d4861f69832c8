//! A machine profile (`profilednn peak`) as terminal tables.

use crate::terminal::num;
use comfy_table::{presets::UTF8_HORIZONTAL_ONLY, Cell, Table};
use profilednn_machine::MachineProfile;

/// Tables without the dynamic arrangement of the report's: the columns are few and short.
fn table() -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_HORIZONTAL_ONLY);
    t
}

/// `profilednn peak`'s tables: compute peaks per precision (against the nominal theory),
/// bandwidth per working set, and the roofline's two ceilings with any suspicion about them.
pub fn render(p: &MachineProfile) -> String {
    let sockets = p
        .sockets
        .map_or(String::new(), |s| format!("{s} socket(s) · "));
    let mut out = format!(
        "Machine: {} · {} threads · {sockets}ISA: {}\n",
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
        "theory/core (all units, nominal GHz)",
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
        "update GB/s",
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
            num(get("update")),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_names_the_sockets_when_measured() {
        let with = |extra: &str| {
            let json = format!(
                r#"{{"name":"m","cpu":"Xeon","threads":8,"peak_gflops":{{"f32":100.0}},"memory_gbps":10.0{extra}}}"#
            );
            render(&MachineProfile::from_json(&json, "m.json").unwrap())
        };
        assert!(
            with(r#","sockets":2"#).starts_with("Machine: Xeon · 8 threads · 2 socket(s) · ISA")
        );
        // An older profile without the field.
        assert!(with("").starts_with("Machine: Xeon · 8 threads · ISA"));
    }
}
