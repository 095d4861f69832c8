//! Projections refuse to headline a speed-up against a log whose timings look polluted (issue
//! 41): a newcomer recorded on a busy machine and `advise --project` headlined "125× faster"
//! for channels-last. Here the real ResNet-18 log of `fixtures/whatif` is polluted by hand, two
//! reorder calls in three made 1000× slower (as a descheduled thread makes them), and set
//! against the real replays of the clean log (`fixtures/whatif/replays`): no oneDNN needed.

mod common;
use common::{polluted_log, root, stdout_of};

fn advise(log: &std::path::Path) -> String {
    let replays = root().join("fixtures/whatif/replays");
    let (cl, base) = (
        replays.join("f32-nchw-1t.cl.json"),
        replays.join("f32-nchw-1t.as-logged.json"),
    );
    stdout_of(&[
        "advise".as_ref(),
        log.as_os_str(),
        "--replay".as_ref(),
        cl.as_os_str(),
        "--replay".as_ref(),
        base.as_os_str(),
    ])
}

#[test]
fn a_speed_up_against_a_polluted_log_is_withheld() {
    let (log, slowed) = polluted_log();
    assert!(
        slowed > 500,
        "fixture changed: {slowed} reorder calls slowed"
    );
    let text = advise(&log);
    assert!(text.contains("[timings-polluted]"), "{text}");
    let projections: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("What-if projections"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(projections.len(), 2, "{text}");
    for p in &projections {
        assert!(
            p.contains("(speed-up withheld: the log's timings look polluted (timings-polluted:"),
            "{p}"
        );
        assert!(!p.contains("× faster") && !p.contains("× slower"), "{p}");
    }
    // The change against the as-logged replay (both measured here, 99.275 -> 104.350 ms)
    // still decides: channels-last stays not recommended, with that factor.
    let factor = 104.350 / 99.275;
    assert!(
        text.contains(&format!(
            "99.275 → 104.350 ({factor:.2}× slower), which decides"
        )),
        "{text}"
    );
    // The clean log headlines its factors as before (89.709 -> 104.350 ms).
    let clean = advise(&root().join("fixtures/whatif/f32-nchw-1t.log.gz"));
    assert!(
        clean.contains(&format!(
            "89.709 → 104.350 ms per iteration ({:.2}× slower)",
            104.350 / 89.709
        )),
        "{clean}"
    );
    assert!(!clean.contains("withheld"), "{clean}");
}

/// `project` and `replay` set a replay against the log too: on the polluted log, `project`'s
/// oneDNN headline withholds its change, and `replay` its polluted problems' ratios (the
/// reorders made 1000x slower are the heaviest problems, so `--top 3` replays them).
#[test]
fn project_and_replay_withhold_their_ratios_against_a_polluted_log() {
    let (log, _) = polluted_log();
    let base = root().join("fixtures/whatif/replays/f32-nchw-1t.as-logged.json");
    let text = stdout_of(&[
        "project".as_ref(),
        log.as_os_str(),
        "--replay".as_ref(),
        base.as_os_str(),
    ]);
    let headline = text.lines().find(|l| l.starts_with("  oneDNN:")).unwrap();
    assert!(
        headline.contains("change withheld: the log's timings look polluted"),
        "{headline}"
    );
    let clean = stdout_of(&[
        "project".as_ref(),
        root()
            .join("fixtures/whatif/f32-nchw-1t.log.gz")
            .as_os_str(),
        "--replay".as_ref(),
        base.as_os_str(),
    ]);
    let headline = clean.lines().find(|l| l.starts_with("  oneDNN:")).unwrap();
    assert!(
        headline.contains('%') && !headline.contains("withheld"),
        "{headline}"
    );
    let Some(lib) = common::dnnl_lib_or_skip() else {
        return;
    };
    let out = common::temp_dir().join("polluted.replay.json");
    let text = stdout_of(&[
        "replay".as_ref(),
        log.as_os_str(),
        "--dnnl-lib".as_ref(),
        lib.as_ref(),
        "--mode".as_ref(),
        "isolated".as_ref(),
        "--top".as_ref(),
        "3".as_ref(),
        "--no-progress".as_ref(),
        "-o".as_ref(),
        out.as_os_str(),
    ]);
    // The table's rows: log ms, here ms, ratio, problem; the slowed reorders' ratio is "-".
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|t| t.len() > 3 && t[0].parse::<f64>().is_ok() && t[3] == "reorder")
        .collect();
    assert!(!rows.is_empty(), "{text}");
    for t in &rows {
        assert_eq!(t[2], "-", "{t:?}");
    }
    assert!(text.contains("ratio withheld (-) for"), "{text}");
}
