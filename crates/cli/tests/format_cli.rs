//! One `--format` across commands (issue 53): `table` and `json` everywhere, `csv` for
//! `report`, `html` for `diff`; a value a command cannot write is refused with the values it
//! can; `--json` stays an alias of `--format json` (`project`, `peak`), `terminal` of `table`
//! (`project`).

mod common;
use common::{bin, failed, root, stdout_of};

fn fixture(rel: &str) -> String {
    root().join(rel).display().to_string()
}

#[test]
fn every_command_takes_format_json_and_table() {
    let log = fixture("fixtures/torch/mlp-f32.log.gz");
    let replay = fixture("fixtures/replay/mlp-f32.torch.replay.json");
    let runs: [&[&str]; 4] = [
        &["report", &log],
        &["advise", &log],
        &["diff", &log, &log],
        &["project", &log, "--replay", &replay],
    ];
    for args in runs {
        let json = stdout_of(&[args, &["--format", "json"]].concat());
        let v: serde_json::Value = serde_json::from_str(&json)
            .unwrap_or_else(|e| panic!("{args:?} --format json: {e}\n{json}"));
        assert!(v.is_object(), "{args:?}");
        let table = stdout_of(&[args, &["--format", "table"]].concat());
        assert_eq!(table, stdout_of(args), "{args:?}: table is the default");
        assert!(
            serde_json::from_str::<serde_json::Value>(&table).is_err(),
            "{args:?}"
        );
    }
    let p = &["project", &log, "--replay", &replay];
    assert_eq!(
        stdout_of(&[&p[..], &["--json"]].concat()),
        stdout_of(&[&p[..], &["--format", "json"]].concat())
    );
    assert_eq!(
        stdout_of(&[&p[..], &["--format", "terminal"]].concat()),
        stdout_of(p)
    );
}

#[test]
fn a_format_a_command_cannot_write_is_refused_with_those_it_can() {
    let log = fixture("fixtures/torch/mlp-f32.log.gz");
    for (args, value, can) in [
        (
            vec!["advise", &log],
            "csv",
            "[possible values: table, json]",
        ),
        (
            vec!["report", &log],
            "html",
            "[possible values: table, json, csv]",
        ),
        (
            vec!["diff", &log, &log],
            "csv",
            "[possible values: table, json, html]",
        ),
        (vec!["plan", &log], "csv", "[possible values: table, json]"),
        (
            vec!["project", &log],
            "csv",
            "[possible values: table, json, html]",
        ),
        (vec!["peak"], "csv", "[possible values: table, json]"),
    ] {
        let err = failed(
            bin()
                .args(&args)
                .args(["--format", value])
                .output()
                .unwrap(),
        );
        assert!(
            err.contains(&format!("invalid value '{value}' for '--format")) && err.contains(can),
            "{args:?}: {err}"
        );
    }
}
