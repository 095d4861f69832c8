//! A log's heap carried to the run it projects, end to end: the PyTorch ResNet-18 log of
//! `fixtures/whatif` with its gradients' copies into `.grad` (the `ABcd16b16a` → `abcd`
//! reorders of the 3×3 weights) logged 30× slower — far above what new pages cost them on any
//! machine, so the log reads as a run whose heap gave those pages back every iteration. The
//! same run replayed (as logged, or `--as f32`, which rewrites nothing of an f32 log) keeps
//! that: the copies take new pages. Another run — `--batch 4`, `--threads 1` — does not
//! inherit it (whether a heap gives the pages back is an accident of each run,
//! `heap_choice::for_another_run`), and says so; `--run logged|another` overrides the choice.
//!
//! Needs `PROFILEDNN_DNNL_LIB` (a libdnnl.so.3); without it the test says SKIPPED and passes,
//! unless PROFILEDNN_REQUIRE_ONEDNN=1.

mod common;
use common::{dnnl_lib_or_skip, replay_to, root, temp_dir};
use std::io::Read;
use std::path::Path;

/// The fixture with the 3×3 weight gradients' copies logged `factor`× their time.
fn slowed_copies(to: &Path, factor: f64) -> usize {
    let mut text = String::new();
    flate2::read::GzDecoder::new(
        std::fs::File::open(root().join("fixtures/whatif/f32-nchw.log.gz")).unwrap(),
    )
    .read_to_string(&mut text)
    .unwrap();
    let mut slowed = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let copy = l.contains(",exec,cpu,reorder,")
                && l.contains("src:f32::blocked:ABcd16b16a::f0 dst:f32::blocked:abcd::f0")
                && l.contains("x3x3,");
            match (copy, l.rsplit_once(',')) {
                (true, Some((head, ms))) => {
                    slowed += 1;
                    format!("{head},{}", ms.parse::<f64>().unwrap() * factor)
                }
                _ => l.to_string(),
            }
        })
        .collect();
    std::fs::write(to, lines.join("\n") + "\n").unwrap();
    slowed
}

/// The replay's heap, its problems on new pages that are reorders, and why.
fn replay(lib: &str, log: &Path, out: &Path, args: &[&str]) -> (String, Vec<String>, String) {
    let mut all = vec!["--top", "12"];
    all.extend(args);
    let (j, _) = replay_to(&[], lib, log, out, &all);
    let q = &j["sequence"];
    let reorders = q["cold_problems"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|k| k.as_str())
                .filter(|k| k.starts_with("--reorder"))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    (
        q["heap"].as_str().unwrap_or("none").to_string(),
        reorders,
        q["heap_reason"].as_str().unwrap_or("").to_string(),
    )
}

/// Whether the log's own choice, as the reason gives it, put the gradients' copies on new pages
/// (the premise: the short replays must tell new pages from kept ones, which a machine busy
/// with other work can blur).
fn copies_read_as_new(why: &str) -> bool {
    why.split("; ")
        .find(|c| c.starts_with("reorders (the gradients' copies into .grad): "))
        .is_some_and(|c| c.ends_with(": new pages each call"))
}

#[test]
fn another_run_does_not_inherit_the_logs_gradient_copies_on_new_pages() {
    let Some(lib) = dnnl_lib_or_skip() else {
        return;
    };
    let dir = temp_dir();
    let log = dir.join("slow-copies.log");
    assert_eq!(
        slowed_copies(&log, 30.0),
        80,
        "the fixture's 3×3 gradient copies (16 per iteration)"
    );
    let note = "for another run of this training";
    // Cases whose premise held (the log read as new pages for the copies).
    let mut decided = 0;
    // Each case, and whether it projects the logged run (the copies stay on new pages) or
    // another one (they keep their pages, and the reason says why).
    let cases: [(&str, &[&str], bool); 6] = [
        ("as logged", &["--threads", "2"], true),
        ("--as f32", &["--threads", "2", "--as", "f32"], true),
        (
            "--batch 4 --run logged",
            &["--threads", "2", "--batch", "4", "--run", "logged"],
            true,
        ),
        ("--batch 4", &["--threads", "2", "--batch", "4"], false),
        ("--threads 1", &["--threads", "1"], false),
        (
            "--run another",
            &["--threads", "2", "--run", "another"],
            false,
        ),
    ];
    for (name, args, logged_run) in cases {
        let (heap, reorders, why) = replay(&lib, &log, &dir.join("replay.json"), args);
        println!(
            "{name}: heap {heap}, {} gradient copies on new pages",
            reorders.len()
        );
        if !copies_read_as_new(&why) {
            println!("SKIPPED: {name}: the short replays did not read the slowed copies as on new pages here ({why})");
            continue;
        }
        decided += 1;
        if logged_run {
            assert_eq!(heap, "as-logged", "{name}: {why}");
            assert!(
                reorders.iter().any(|k| k.contains("512x512x3x3")),
                "{name}: {reorders:?} ({why})"
            );
            assert!(!why.contains(note), "{name}: {why}");
        } else {
            assert!(reorders.is_empty(), "{name}: {reorders:?} ({why})");
            // The log's own choice is said, then the note.
            assert!(why.contains(note), "{name}: {why}");
        }
    }
    println!("{decided} of 6 cases decided");
}
