//! Multi-rank runs end to end, on real launcher output: torchrun 2.15 `--tee 3` and
//! `--log-dir`, Open MPI 4.1 `mpirun --tag-output`, MPICH 4.0 `mpiexec -prepend-rank` (fixtures/multirank, recorded with
//! train_ddp.py: 2 ranks, Gloo, OMP_NUM_THREADS=1, rank 1 given twice rank 0's batch). Expected
//! figures are counted from the fixtures' own lines here, not taken from the tool.

mod common;
use common::{bin, gunzip, json_of, root, succeeded, temp_dir};
use serde_json::Value;
use std::io::Read;

fn fixture(name: &str) -> std::path::PathBuf {
    root().join("fixtures/multirank").join(name)
}

/// The rank's own text of a line labelled `label`, if it has that label.
fn text_of<'a>(line: &'a str, label: &str) -> Option<&'a str> {
    line.strip_prefix(label)
}

/// Exec lines of one rank: (count, summed time in ms), from the last field of each line.
fn execs(log: &str, label: &str) -> (u64, f64) {
    log.lines()
        .filter_map(|l| text_of(l, label))
        .filter(|t| t.starts_with("onednn_verbose,") && t.contains(",exec,"))
        .fold((0, 0.0), |(n, s), t| {
            (
                n + 1,
                s + t.rsplit(',').next().unwrap().parse::<f64>().unwrap(),
            )
        })
}

/// `profilednn record --no-report -o LOG -- sh -c PROGRAM`.
fn record_sh(log: &std::path::Path, program: &str) -> std::process::Output {
    bin()
        .args(["record", "--no-report", "-o"])
        .arg(log)
        .args(["--", "sh", "-c", program])
        .output()
        .unwrap()
}

fn report_json(log: &std::path::Path) -> Value {
    json_of(&["report", log.to_str().unwrap(), "--format", "json"])
}

fn rank(j: &Value, r: u64) -> &Value {
    j["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["rank"] == r)
        .unwrap_or_else(|| panic!("no rank {r} in {}", j["ranks"]))
}

fn check_ranks(j: &Value, log: &str, labels: [&str; 2]) {
    assert_eq!(j["ranks"].as_array().unwrap().len(), 2, "{}", j["ranks"]);
    for (r, label) in labels.iter().enumerate() {
        let (calls, ms) = execs(log, label);
        let markers = log
            .lines()
            .filter_map(|l| text_of(l, label))
            .filter(|t| t.starts_with("profilednn,iteration,"))
            .count() as u64;
        let v = rank(j, r as u64);
        assert_eq!(v["calls"], calls, "rank {r}");
        let got = v["total_time_ms"].as_f64().unwrap();
        assert!(
            (got - ms).abs() < 1e-6 * ms.max(1.0),
            "rank {r}: {got} vs {ms}"
        );
        // `[default0]:profilednn,iteration,N` markers are the rank's iterations.
        assert_eq!(v["iterations"], markers, "rank {r}");
        let per = v["time_ms_per_iteration"].as_f64().unwrap();
        assert!((per - ms / markers as f64).abs() < 1e-6 * ms.max(1.0));
        assert_eq!(v["threads"], 1, "OMP_NUM_THREADS=1 in every rank");
        assert!(v["stopped_early"].is_null());
    }
    // Rank 1 was given twice the batch: its problems say so, and it is the straggler.
    assert_eq!(rank(j, 0)["mini_batch"], 16);
    assert_eq!(rank(j, 1)["mini_batch"], 32);
    let im = &j["rank_logs"][0]["imbalance"];
    assert_eq!(im["straggler"], 1, "{im}");
    assert_eq!(im["mini_batch"], serde_json::json!([32, 16]));
}

#[test]
fn torchrun_tee_log_gives_a_profile_per_rank() {
    let path = fixture("torchrun_2ranks.log.gz");
    let log = gunzip(&path);
    let j = report_json(&path);
    check_ranks(&j, &log, ["[default0]:", "[default1]:"]);
    assert_eq!(j["rank_logs"][0]["launcher"], "torchrun");
    // Both ranks' exec lines, merged.
    let all = execs(&log, "[default0]:").0 + execs(&log, "[default1]:").0;
    assert_eq!(j["calls"], all);
}

#[test]
fn open_mpi_tag_output_log_gives_a_profile_per_rank() {
    let path = fixture("mpirun_2ranks.log.gz");
    let log = gunzip(&path);
    let j = report_json(&path);
    check_ranks(&j, &log, ["[1,0]<stdout>:", "[1,1]<stdout>:"]);
}

#[test]
fn mpich_prepend_rank_log_gives_a_profile_per_rank() {
    // MPICH 4.0 (Hydra) `mpiexec -prepend-rank`, recorded with `record --ranks`.
    let path = fixture("mpich_2ranks.log.gz");
    let log = gunzip(&path);
    let j = report_json(&path);
    check_ranks(&j, &log, ["[0] ", "[1] "]);
    assert_eq!(j["rank_logs"][0]["launcher"], "MPICH -prepend-rank");
}

#[test]
fn torchrun_log_dir_gives_a_profile_per_rank() {
    let dir = fixture("torchrun_log_dir");
    let run = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    // The per-rank files relabelled as one log, to count from with the same helpers.
    let mut log = String::new();
    for r in 0..2 {
        let f = gunzip(&run.join(format!("attempt_0/{r}/stdout.log.gz")));
        for l in f.lines() {
            log += &format!("[r{r}]:{l}\n");
        }
    }
    let j = report_json(&dir);
    check_ranks(&j, &log, ["[r0]:", "[r1]:"]);
}

#[test]
fn the_header_does_not_sum_ranks_into_more_than_100_percent_busy() {
    let out = bin()
        .args([
            "report",
            fixture("torchrun_2ranks.log.gz").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("oneDNN busy"))
        .expect("busy line");
    let busy: f64 = line
        .split("busy ")
        .nth(1)
        .unwrap()
        .split('%')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let j = report_json(&fixture("torchrun_2ranks.log.gz"));
    // Hand-derived: each rank's time against the common span, averaged.
    let span = j["wall_span_ms"].as_f64().unwrap();
    let mean = (rank(&j, 0)["total_time_ms"].as_f64().unwrap()
        + rank(&j, 1)["total_time_ms"].as_f64().unwrap())
        / 2.0;
    assert!((busy - mean / span * 100.0).abs() < 0.06, "{line}");
    assert!(text.contains("Straggler: rank 1"), "{text}");
    assert!(text.contains("rank 0 ms") && text.contains("rank 1 ms"));
}

#[test]
fn a_crashed_rank_is_named() {
    // PROFILEDNN_CRASH_RANK=1: rank 1 exited at its third iteration, torchrun stopped rank 0.
    let path = fixture("torchrun_crash.log.gz");
    let j = report_json(&path);
    assert!(rank(&j, 0)["stopped_early"].is_null(), "{}", j["ranks"]);
    let why = rank(&j, 1)["stopped_early"].as_str().unwrap();
    assert!(why.contains("2 iterations against 3"), "{why}");
    let out = bin()
        .args(["report", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("Rank 1 stopped early"));
}

#[test]
fn record_passes_launcher_output_through_exactly() {
    // The real terminal output of `torchrun --nproc-per-node 2 --tee 3 train_ddp.py`, replayed.
    let raw = fixture("torchrun_tee3_terminal.txt.gz");
    let program = format!("gzip -dc '{}'", raw.display());
    let direct = std::process::Command::new("sh")
        .args(["-c", &program])
        .output()
        .unwrap();
    let dir = temp_dir();
    let log = dir.join("ddp.log");
    let rec = record_sh(&log, &program);
    assert!(rec.status.success());
    let direct = String::from_utf8(direct.stdout).unwrap();
    let is_profile = |l: &str| {
        l.split_once("]:").is_some_and(|(_, t)| {
            t.starts_with("onednn_verbose,") || t.starts_with("profilednn,iteration,")
        })
    };
    let (expected_log, expected_terminal): (Vec<&str>, Vec<&str>) =
        direct.lines().partition(|l| is_profile(l));
    assert!(expected_log.len() > 100 && !expected_terminal.is_empty());
    assert_eq!(
        String::from_utf8(rec.stdout).unwrap(),
        expected_terminal
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
        "the launcher's output, verbose lines removed, labels and all"
    );
    let written = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        written.lines().collect::<Vec<_>>(),
        expected_log,
        "labels kept in the log"
    );
    let err = String::from_utf8_lossy(&rec.stderr);
    assert!(err.contains("rank 0:") && err.contains("rank 1:"), "{err}");
}

#[test]
fn record_joins_torchruns_cut_lines_per_rank() {
    // torchrun tails each rank's file with readline(), which at the file's end hands out a
    // line without its newline; CI once saw rank 0's line cut so, rank 1's whole line after
    // it, and rank 0's newline alone (`[default0]:` on the terminal, two lines glued in the log).
    let dir = temp_dir();
    let log = dir.join("cut.log");
    let a = "onednn_verbose,v1,primitive,exec,cpu,inner_product,x,forward_training,src:f32,,mb2ic3oc4,0.5";
    let b = "onednn_verbose,v1,primitive,exec,cpu,inner_product,x,forward_training,src:f32,,mb2ic3oc4,0.7";
    let program = format!(
        "printf '[default0]:{a}[default1]:{b}\\n[default0]:\\n[default1]:loss [default1]:0.3\\n'"
    );
    let rec = record_sh(&log, &program);
    assert!(
        rec.status.success(),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    // A program line torchrun cut reaches the terminal as torchrun printed it.
    assert_eq!(
        String::from_utf8(rec.stdout).unwrap(),
        "[default1]:loss [default1]:0.3\n"
    );
    let written = std::fs::read_to_string(&log).unwrap();
    let verbose: Vec<&str> = written
        .lines()
        .filter(|l| l.contains("onednn_verbose"))
        .collect();
    assert_eq!(
        verbose,
        [format!("[default1]:{b}"), format!("[default0]:{a}")]
    );
}

#[test]
fn record_says_when_ranks_cannot_be_told_apart() {
    // torchrun without --tee: both ranks write to the terminal unlabelled.
    let program = format!(
        "gzip -dc '{}'",
        fixture("torchrun_nolabel.log.gz").display()
    );
    let dir = temp_dir();
    let out = record_sh(&dir.join("x.log"), &program);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot be told apart"), "{err}");
    assert!(
        err.contains("--tee 3") && err.contains("--tag-output"),
        "{err}"
    );
}

#[test]
fn record_keeps_a_crashing_launchers_lines_and_status() {
    let dir = temp_dir();
    let log = dir.join("crash.log");
    let program = "echo '[default0]:onednn_verbose,v1,info,oneDNN v3.2.0 (commit x)'; \
         echo '[default1]:onednn_verbose,v1,info,oneDNN v3.2.0 (commit x)'; \
         echo '[default1]:onednn_verbose,v1,primitive,exec,cpu,eltwise,jit,forward_training,data:f32::blocked:a::f0,,alg:eltwise_relu,8,0.5'; \
         echo 'torch.distributed.elastic.multiprocessing.errors.ChildFailedError' >&2; exit 7";
    let out = record_sh(&log, program);
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 3);
}

/// A stand-in launcher named like the real one that prints the arguments it was given.
fn fake_launcher(dir: &std::path::Path, name: &str, version: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!("#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version}'; exit 0; fi\necho \"args: $*\"\n"),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    p
}

#[test]
fn record_ranks_adds_the_launchers_own_label_flag() {
    let dir = temp_dir();
    for (name, version, expected) in [
        ("torchrun", "", "args: --tee 3 --nproc-per-node 2 t.py"),
        (
            "mpirun",
            "mpirun (Open MPI) 4.1.4",
            "args: --tag-output --nproc-per-node 2 t.py",
        ),
    ] {
        let sub = dir.join(name);
        std::fs::create_dir_all(&sub).unwrap();
        let exe = fake_launcher(&sub, name, version);
        let out = bin()
            .args([
                "record",
                "--ranks",
                "--no-report",
                "-o",
                sub.join("x.log").to_str().unwrap(),
                "--",
            ])
            .arg(&exe)
            .args(["--nproc-per-node", "2", "t.py"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), expected);
    }
}

#[test]
fn rank_imbalance_and_thread_placement_advice() {
    let path = fixture("torchrun_2ranks.log.gz");
    let advice = |log: &std::path::Path, cores: &str| {
        json_of(&[
            "advise",
            log.to_str().unwrap(),
            "--format",
            "json",
            "--cores",
            cores,
        ])
    };
    let fired = |a: &Value, id: &str| {
        a["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .unwrap()["fired"]
            .as_bool()
            .unwrap()
    };
    let a = advice(&path, "2");
    assert!(fired(&a, "rank-imbalance"));
    let f = a["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "rank-imbalance")
        .unwrap();
    assert!(f["evidence"]["straggler"]
        .as_str()
        .unwrap()
        .ends_with("[rank 1]"));
    // 2 ranks × 1 thread fill 2 cores; on 8 cores 6 are idle.
    assert!(!fired(&a, "rank-thread-placement"));
    assert!(fired(&advice(&path, "8"), "rank-thread-placement"));
    // Rank 0's lines given to two ranks: balanced.
    let log = gunzip(&path);
    let mut twins = String::new();
    for l in log.lines().filter_map(|l| l.strip_prefix("[default0]:")) {
        twins += &format!("[default0]:{l}\n[default1]:{l}\n");
    }
    let dir = temp_dir();
    let twin_log = dir.join("twins.log");
    std::fs::write(&twin_log, twins).unwrap();
    assert!(!fired(&advice(&twin_log, "2"), "rank-imbalance"));
}

#[test]
fn a_truncated_multi_rank_log_keeps_every_ranks_lines_and_says_so_once() {
    let whole = std::fs::read(fixture("torchrun_2ranks.log.gz")).unwrap();
    let dir = temp_dir();
    let cut = dir.join("cut.log.gz");
    std::fs::write(&cut, &whole[..whole.len() * 2 / 3]).unwrap();
    let out = bin()
        .args(["report", cut.to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a partial result");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("profilednn: error:").count(), 1, "{err}");
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["ranks"].as_array().unwrap().len(), 2);
    // What was readable: the lines of the decompressed prefix, counted independently.
    let mut text = Vec::new();
    let _ = flate2::read::MultiGzDecoder::new(&whole[..whole.len() * 2 / 3]).read_to_end(&mut text);
    let text = String::from_utf8_lossy(&text);
    let complete = &text[..text.rfind('\n').unwrap() + 1];
    let total = execs(complete, "[default0]:").0 + execs(complete, "[default1]:").0;
    assert_eq!(j["calls"], total);
}

#[test]
fn one_run_commands_refuse_a_multi_rank_log_and_say_how_to_pick_a_rank() {
    let path = fixture("torchrun_2ranks.log.gz");
    let p = path.to_str().unwrap();
    let machine = root().join("fixtures/machine/xeon-8480-spec.json");
    let m = machine.to_str().unwrap();
    let trace = temp_dir().join("t.json");
    let t = trace.to_str().unwrap();
    for args in [
        vec!["diff", p, p],
        vec!["project", p, "--machine", m],
        vec!["trace", p, "-o", t],
    ] {
        let out = bin().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(p) && err.contains("a multi-rank log (2 ranks"),
            "{err}"
        );
    }
    // The way out the error gives works: rank 1's lines alone are an ordinary log.
    let dir = temp_dir();
    let one = dir.join("rank1.log");
    let sed = std::process::Command::new("sh")
        .args([
            "-c",
            &format!(
                "gzip -dc '{p}' | sed -n 's/^\\[default1\\]://p' > '{}'",
                one.display()
            ),
        ])
        .status()
        .unwrap();
    assert!(sed.success());
    let j = report_json(&one);
    assert!(j["ranks"].is_null());
    assert_eq!(j["calls"], execs(&gunzip(&path), "[default1]:").0);
}

#[test]
fn ranks_with_different_thread_counts_are_named() {
    // The torchrun fixture with rank 1's header saying 2 threads instead of 1.
    let log = gunzip(&fixture("torchrun_2ranks.log.gz")).replace(
        "[default1]:onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:1",
        "[default1]:onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:2",
    );
    let dir = temp_dir();
    let path = dir.join("uneven.log");
    std::fs::write(&path, log).unwrap();
    let j = report_json(&path);
    assert_eq!(
        (
            rank(&j, 0)["threads"].clone(),
            rank(&j, 1)["threads"].clone()
        ),
        (1.into(), 2.into())
    );
    let a = json_of(&["advise", path.to_str().unwrap(), "--format", "json"]);
    let f = a["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == "rank-thread-placement")
        .expect("fires without --cores: the ranks' headers differ");
    assert!(
        f["title"]
            .as_str()
            .unwrap()
            .contains("different thread counts"),
        "{f}"
    );
}

/// Ranks spanning sockets, with the sockets from a hand-built machine profile (the field
/// `profilednn peak` measures) or `--sockets`: the 1 rank × 2 threads ResNet-18 run on a
/// machine of 2 sockets of 1 core spans them; its 2 × 1 twin does not.
#[test]
fn thread_placement_flags_ranks_spanning_sockets() {
    let dir = temp_dir();
    let profile = |name: &str, fields: &str| {
        let p = dir.join(format!("{name}.json"));
        std::fs::write(
            &p,
            format!(
                r#"{{"name":"hand-built","peak_gflops":{{"f32":100.0}},"memory_gbps":10.0,{fields}}}"#
            ),
        )
        .unwrap();
        p.display().to_string()
    };
    let machine = |sockets: u32| {
        profile(
            &format!("m{sockets}"),
            &format!(r#""threads":2,"physical_cores":2,"sockets":{sockets}"#),
        )
    };
    let placement = |log: &str, extra: &[&str]| -> Option<Value> {
        let log = fixture(log).display().to_string();
        let a = json_of(&[&["advise", &log, "--format", "json"][..], extra].concat());
        a["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["id"] == "rank-thread-placement")
            .cloned()
    };
    let (two, one) = (machine(2), machine(1));
    let f = placement("even_1x2.log.gz", &["--machine", &two]).expect("1x2 on 2 sockets");
    assert!(
        f["title"].as_str().unwrap().contains("spans sockets"),
        "{f}"
    );
    assert_eq!(f["evidence"]["cores_per_socket"], 1);
    assert!(placement("even_1x2.log.gz", &["--machine", &one]).is_none());
    // --sockets wins over the profile.
    assert!(placement("even_1x2.log.gz", &["--machine", &one, "--sockets", "2"]).is_some());
    assert!(placement("even_1x2.log.gz", &["--machine", &two, "--sockets", "1"]).is_none());
    // 2 ranks × 1 thread: each rank in its own socket.
    assert!(placement("even_2x1.log.gz", &["--machine", &two]).is_none());
    // Regression (hardware threads counted as cores): 2 sockets × 1 core × 2 SMT threads, 4
    // hardware threads; the 1 × 2 rank still spans both sockets' cores.
    let smt = profile("smt", r#""threads":4,"physical_cores":2,"sockets":2"#);
    let f = placement("even_1x2.log.gz", &["--machine", &smt]).expect("1x2 on 2 SMT sockets");
    assert_eq!(f["evidence"]["cores_per_socket"], 1, "{f}");
    // A profile without physical cores (older than the field): skipped, and said why.
    let old = profile("old", r#""threads":4,"sockets":2"#);
    assert!(placement("even_1x2.log.gz", &["--machine", &old]).is_none());
    let log = fixture("even_1x2.log.gz").display().to_string();
    let a = json_of(&["advise", &log, "--format", "json", "--machine", &old]);
    let rule = a["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "rank-thread-placement")
        .unwrap();
    assert!(
        rule["why_not"]
            .as_str()
            .unwrap()
            .contains("physical cores are unknown"),
        "{rule}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `report -`: a launcher-labelled log piped in (plain or gzip) is split by rank as the same
/// log read from its file is; an unlabelled pipe longer than the 1 MiB read to look for labels
/// loses none of it (the head is put back in front of the rest).
#[test]
fn labelled_log_on_stdin_is_split_by_rank() {
    let path = fixture("torchrun_2ranks.log.gz");
    let file = json_of(&["report", path.to_str().unwrap(), "--format", "json"]);
    let gz = std::fs::read(&path).unwrap();
    for input in [gz, gunzip(&path).into_bytes()] {
        let piped = report_stdin(input);
        let ranks = |j: &Value| {
            j["ranks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["rank"].clone(),
                        r["calls"].clone(),
                        r["time_ms_per_iteration"].clone(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(ranks(&piped).len(), 2);
        assert_eq!(ranks(&piped), ranks(&file));
        assert_eq!(piped["rank_logs"][0]["launcher"], "torchrun");
        assert_eq!(piped["total_time_ms"], file["total_time_ms"]);
        assert_eq!(piped["calls"], file["calls"]);
    }
    // Unlabelled, 5 copies of a 252 kB log: 1.26 MB through the pipe, 5 times the calls.
    let one = root().join("fixtures/whatif/f32-nchw.log.gz");
    let calls = json_of(&["report", one.to_str().unwrap(), "--format", "json"])["calls"]
        .as_u64()
        .unwrap();
    let text = gunzip(&one).repeat(5);
    assert!(text.len() > 1 << 20);
    let piped = report_stdin(text.into_bytes());
    assert_eq!(piped["calls"].as_u64(), Some(5 * calls));
    assert!(piped["rank_logs"].as_array().is_none_or(|a| a.is_empty()));
}

/// `report - --format json` of `input` on stdin.
fn report_stdin(input: Vec<u8>) -> Value {
    let out = succeeded(
        bin()
            .args(["report", "-", "--format", "json"])
            .write_stdin(input)
            .output()
            .unwrap(),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The `report --format json` of a log, its sources and volatile names left out.
fn report_of(args: &[&str]) -> Value {
    json_of(&[&["report", "--format", "json", "--no-advice"][..], args].concat())
}

#[test]
fn each_rank_of_a_labelled_log_reports_as_its_own_lines_read_alone() {
    // Rank r's lines of the real torchrun log, label removed by hand, are a log of their own:
    // its report is the reference for rank r of the labelled log (read from the file, from a
    // pipe, on one thread and on three).
    let path = fixture("torchrun_2ranks.log.gz");
    let log = gunzip(&path);
    let dir = temp_dir();
    let labelled = report_of(&[path.to_str().unwrap()]);
    let serial = report_of(&[path.to_str().unwrap(), "-j", "1"]);
    let parallel = report_of(&[path.to_str().unwrap(), "-j", "3"]);
    assert_eq!(serial["ranks"], parallel["ranks"]);
    assert_eq!(serial["breakdowns"], parallel["breakdowns"]);
    let piped = bin()
        .args(["report", "-", "--format", "json", "--no-advice"])
        .write_stdin(std::fs::read(&path).unwrap())
        .output()
        .unwrap();
    assert!(piped.status.success());
    let piped: Value = serde_json::from_slice(&piped.stdout).unwrap();
    for r in 0..2u64 {
        let own: String = log
            .lines()
            .filter_map(|l| text_of(l, &format!("[default{r}]:")))
            .map(|t| format!("{t}\n"))
            .collect();
        let file = dir.join(format!("rank{r}.log"));
        std::fs::write(&file, own).unwrap();
        let alone = report_of(&[file.to_str().unwrap()]);
        for j in [&labelled, &piped] {
            let v = rank(j, r);
            assert_eq!(v["calls"], alone["calls"], "rank {r}");
            assert_eq!(v["total_time_ms"], alone["total_time_ms"], "rank {r}");
            assert_eq!(v["iterations"], alone["iterations"]["count"], "rank {r}");
            assert_eq!(
                v["time_ms_per_iteration"], alone["time_ms_per_iteration"],
                "rank {r}"
            );
            // Each group's time in the rank's column is the group's time of the rank alone.
            let source = format!("{} [rank {r}]", j["rank_logs"][0]["log"].as_str().unwrap());
            for row in alone["breakdowns"]["prim_kind,prop_kind"]["rows"]
                .as_array()
                .unwrap()
            {
                let same = j["breakdowns"]["prim_kind,prop_kind"]["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|x| {
                        x["prim_kind"] == row["prim_kind"] && x["prop_kind"] == row["prop_kind"]
                    })
                    .unwrap();
                assert_eq!(same["time_ms_per_log"][&source], row["time_ms"], "rank {r}");
            }
        }
    }
}

/// A 12-rank labelled log made of rank 0's lines of the real torchrun log: rank 7's times
/// ×1.3, rank 11 without its last iteration.
fn twelve_ranks() -> (std::path::PathBuf, f64) {
    let log = gunzip(&fixture("torchrun_2ranks.log.gz"));
    let own: Vec<&str> = log
        .lines()
        .filter_map(|l| text_of(l, "[default0]:"))
        .collect();
    let last_marker = own
        .iter()
        .rposition(|t| t.starts_with("profilednn,iteration,"))
        .unwrap();
    let mut out = String::new();
    for (i, t) in own.iter().enumerate() {
        for r in 0..12 {
            if r == 11 && i >= last_marker {
                continue;
            }
            let line = match (r, t.rsplit_once(',')) {
                (7, Some((head, ms))) if t.contains(",exec,") => {
                    format!("{head},{}", ms.parse::<f64>().unwrap() * 1.3)
                }
                _ => t.to_string(),
            };
            out += &format!("[rank{r}]:{line}\n");
        }
    }
    let (_, base) = execs(&log, "[default0]:");
    let path = temp_dir().join("twelve.log");
    std::fs::write(&path, out).unwrap();
    (path, base)
}

#[test]
fn twelve_ranks_report_as_a_distribution_that_fits_the_width() {
    let (path, base) = twelve_ranks();
    let p = path.to_str().unwrap();
    let out = bin().args(["report", p]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for l in text.lines() {
        assert!(l.chars().count() <= 120, "{} chars: {l}", l.chars().count());
    }
    assert!(text.lines().count() < 250, "{}", text.lines().count());
    assert_eq!(
        text.lines().next().unwrap(),
        format!("profilednn report: {p} [ranks 0 … 11] (12 logs)")
    );
    assert!(text.contains("per iteration, over ranks"), "{text}");
    assert!(!text.contains("rank 3 ms"), "no column per rank: {text}");
    assert!(text.contains("Straggler: rank 7"), "{text}");
    assert!(text.contains("Rank 11 stopped early"), "{text}");
    // --ranks brings back the columns asked for, and only those.
    let out = bin()
        .args(["report", p, "--ranks", "0,7"])
        .output()
        .unwrap();
    let picked = String::from_utf8(out.stdout).unwrap();
    assert!(picked.contains("rank 0 ms") && picked.contains("rank 7 ms"));
    assert!(!picked.contains("rank 3 ms"));
    // JSON keeps every rank; the spread is the hand-derived one: every rank has rank 0's
    // oneDNN time per iteration but rank 7, which has 1.3 times it.
    let j = report_json(&path);
    assert_eq!(j["ranks"].as_array().unwrap().len(), 12);
    let per = rank(&j, 0)["time_ms_per_iteration"].as_f64().unwrap();
    let markers = log_markers(&gunzip(&fixture("torchrun_2ranks.log.gz")));
    assert!((per - base / markers as f64).abs() < 1e-6 * base);
    let s = &j["rank_logs"][0]["spread"]["onednn_ms"];
    assert_eq!(s["max_rank"], 7, "{s}");
    assert!(
        (s["max"].as_f64().unwrap() - 1.3 * per).abs() < 1e-6 * per,
        "{s}"
    );
    assert!(
        (s["median"].as_f64().unwrap() - per).abs() < 1e-9 * per,
        "{s}"
    );
    assert_eq!(s["ranks"], 12);
    let im = &j["rank_logs"][0]["imbalance"];
    assert_eq!(im["slowest"][0]["rank"], 7);
    // advise names the straggler and the groups it spends more time in.
    let a = bin().args(["advise", p]).output().unwrap();
    let a = String::from_utf8(a.stdout).unwrap();
    let line = a.lines().find(|l| l.contains("is the straggler")).unwrap();
    assert!(line.contains("[rank 7] is the straggler"), "{line}");
    // Every group is 1.3 times rank 0's: the largest difference is the largest group, reorders.
    assert!(
        line.contains("it spends more time in reorder undef"),
        "{line}"
    );
}

fn log_markers(log: &str) -> usize {
    log.lines()
        .filter_map(|l| text_of(l, "[default0]:"))
        .filter(|t| t.starts_with("profilednn,iteration,"))
        .count()
}

/// The data the HTML report of `log` embeds (`<script id="data">`).
fn html_data(log: &std::path::Path) -> Value {
    let page = temp_dir().join("report.html");
    succeeded(
        bin()
            .args(["report", log.to_str().unwrap(), "--no-progress", "--html"])
            .arg(&page)
            .output()
            .unwrap(),
    );
    let html = std::fs::read_to_string(&page).unwrap();
    let open = "<script id=\"data\" type=\"application/json\">";
    let start = html.find(open).unwrap() + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

/// The HTML timeline of a multi-rank log is its first rank's, said so: the timeline of rank
/// 0's lines alone (cut out by their literal label, or its own file of a `--log-dir` tree),
/// reported as a log of their own. Before, a labelled log's timeline had no bar (its lines read
/// as one process's, none of them a verbose line) and a `--log-dir` tree's report failed.
#[test]
fn html_timeline_is_the_first_ranks() {
    let labelled = fixture("torchrun_2ranks.log.gz");
    let alone: String = gunzip(&labelled)
        .split_inclusive('\n')
        .filter_map(|l| text_of(l, "[default0]:"))
        .collect();
    let rank0 = temp_dir().join("rank0.log");
    std::fs::write(&rank0, alone).unwrap();
    let tree = fixture("torchrun_log_dir");
    let attempt = std::fs::read_dir(&tree)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for (log, own) in [
        (labelled, rank0),
        (tree, attempt.join("attempt_0/0/stdout.log.gz")),
    ] {
        let mut got = html_data(&log)["timeline"].clone();
        let want = html_data(&own)["timeline"].clone();
        assert!(
            want["kinds"].as_array().is_some_and(|k| !k.is_empty()),
            "{want}"
        );
        assert_eq!(got["of"], "rank 0 of 2 ranks", "{}", log.display());
        got.as_object_mut().unwrap().remove("of");
        assert_eq!(got, want, "{}", log.display());
    }
}
