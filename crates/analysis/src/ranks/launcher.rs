//! The command line of a multi-process run, as `record --ranks` reads it: which launcher starts
//! the ranks, the launcher's own flag that labels each line with its rank, the node line that
//! lets the logs of several nodes be read together, and whether `record` is itself one rank.
//! Also where each part of a recorded line goes (terminal or log) and what the lines said about
//! the ranks. Plain functions of the command and the environment, so that they are tested here;
//! `record` only spawns and pipes.

use crate::ranks::logs::NODE_LINE;
use profilednn_verbose::launcher::{self, Launcher};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

/// Why `--ranks` cannot add the launcher's label flag; each says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum RankLabelError {
    #[error("--ranks: cannot run `{program} --version`: {cause}")]
    VersionNotRun {
        program: String,
        cause: std::io::Error,
    },
    #[error(
        "--ranks: `{0} --version` names neither Open MPI nor MPICH/Intel MPI; add the \
         launcher's line-label flag yourself (--tag-output, -prepend-rank)"
    )]
    UnknownMpi(String),
    #[error(
        "--ranks adds the rank-label flag of torchrun, mpirun/mpiexec or srun, but the \
         command starts with `{0}`; label the lines with your launcher's own option"
    )]
    NotALauncher(String),
}

/// Where the parts of one line go.
#[derive(Debug, PartialEq, Eq)]
pub struct Routed<'a> {
    /// Application output in front of the verbose part (with the launcher's label, if any):
    /// printed as it is, without a newline, like any partial line.
    pub terminal: &'a [u8],
    /// The launcher's label (empty without one), written to the log before `verbose`.
    pub label: &'a [u8],
    pub verbose: &'a [u8],
    pub rank: Option<(Launcher, u32)>,
}

/// Splits a line into what goes to the terminal and what to the log; `None` when the whole
/// line is program output.
pub fn route(line: &[u8]) -> Option<Routed<'_>> {
    let (label_len, rank) = match launcher::split(line) {
        Some(l) => (l.prefix_len, Some((l.launcher, l.rank))),
        None => (0, None),
    };
    let at = label_len + profilednn_verbose::markers::log_part_start(&line[label_len..])?;
    Some(Routed {
        terminal: if at > label_len { &line[..at] } else { &[] },
        label: &line[..label_len],
        verbose: &line[at..],
        rank,
    })
}

/// What the recorded lines said about processes and ranks.
#[derive(Default)]
pub struct RankWatch {
    /// Verbose lines per labelled rank.
    pub ranks: BTreeMap<(Launcher, u32), u64>,
    /// oneDNN's version header (printed once per process) on lines without a label.
    unlabelled_headers: u64,
}

impl RankWatch {
    pub fn see(&mut self, r: &Routed<'_>) {
        match r.rank {
            Some(k) => *self.ranks.entry(k).or_default() += 1,
            None => {
                let v = r.verbose;
                if memchr::memmem::find(v, b",info,oneDNN v").is_some()
                    || memchr::memmem::find(v, b",info,DNNL v").is_some()
                {
                    self.unlabelled_headers += 1;
                }
            }
        }
    }

    /// The note printed after recording: the ranks found, or why there are none to find.
    pub fn note(&self, program: &OsStr) -> Option<String> {
        if !self.ranks.is_empty() {
            let list: Vec<String> = self
                .ranks
                .iter()
                .map(|((_, r), n)| format!("rank {r}: {n}"))
                .collect();
            let l = self.ranks.keys().next().map(|k| k.0.as_str()).unwrap_or("");
            return Some(format!(
                "profilednn: verbose lines labelled by {l} ({}); `profilednn report` profiles each rank",
                list.join(", ")
            ));
        }
        let launcher = launcher_kind(program);
        if self.unlabelled_headers > 1 || (launcher.is_some() && self.unlabelled_headers > 0) {
            // oneDNN prints its version header once per process.
            let who = match self.unlabelled_headers {
                1 => "the launcher's processes".to_string(),
                n => format!("{n} processes"),
            };
            return Some(format!(
                "profilednn: WARNING: {who} printed verbose lines without a rank label: the \
                 ranks cannot be told apart and are profiled as one. Have the launcher label \
                 each line (torchrun --tee 3, Open MPI mpirun --tag-output, MPICH mpiexec \
                 -prepend-rank, srun --label), or add `--ranks` to `profilednn record` for \
                 torchrun and mpirun"
            ));
        }
        None
    }
}

/// The launchers `--ranks` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LauncherKind {
    Torchrun,
    Mpirun,
    Srun,
}

fn launcher_kind(program: &OsStr) -> Option<LauncherKind> {
    let name = std::path::Path::new(program).file_name()?.to_str()?;
    match name {
        "torchrun" => Some(LauncherKind::Torchrun),
        "mpirun" | "mpiexec" | "mpiexec.hydra" | "orterun" | "prterun" => {
            Some(LauncherKind::Mpirun)
        }
        "srun" => Some(LauncherKind::Srun),
        _ => None,
    }
}

/// Which MPI `mpirun` is: Open MPI labels with `--tag-output`, MPICH and Intel MPI (Hydra)
/// with `-prepend-rank`. Asked of the program itself, as its `--version` says.
fn mpi_label_flag(program: &OsStr) -> Result<&'static str, RankLabelError> {
    let name = || program.to_string_lossy().into_owned();
    let text = match std::process::Command::new(program)
        .arg("--version")
        .output()
    {
        Ok(o) => {
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
        }
        Err(cause) => {
            return Err(RankLabelError::VersionNotRun {
                program: name(),
                cause,
            })
        }
    };
    mpi_label_flag_of(&text).ok_or_else(|| RankLabelError::UnknownMpi(name()))
}

/// The label flag of the MPI whose `--version` printed `text`.
fn mpi_label_flag_of(text: &str) -> Option<&'static str> {
    if text.contains("Open MPI") || text.contains("OpenRTE") || text.contains("PRRTE") {
        Some("--tag-output")
    } else if text.contains("HYDRA") || text.contains("Intel") || text.contains("MPICH") {
        Some("-prepend-rank")
    } else {
        None
    }
}

/// The command with the launcher's own flag that labels each line with its rank, unless the
/// command has it already: `torchrun --tee 3`, `mpirun --tag-output` (Open MPI) or
/// `-prepend-rank` (MPICH, Intel MPI), `srun --label`.
pub fn with_rank_labels(command: &[OsString]) -> Result<Vec<OsString>, RankLabelError> {
    let (program, rest) = command.split_first().expect("required");
    // The launcher's own options come before the program it launches (a `.py` script): the
    // script's `-r 5` is not torchrun's `-r`.
    let own = rest
        .iter()
        .position(|a| a.to_string_lossy().ends_with(".py"))
        .unwrap_or(rest.len());
    let has = |flags: &[&str]| {
        rest[..own].iter().any(|a| {
            let a = a.to_string_lossy();
            flags
                .iter()
                .any(|f| a == *f || a.starts_with(&format!("{f}=")))
        })
    };
    // `python -m torch.distributed.run …` is torchrun under another name.
    if let Some(at) = rest.iter().position(|a| a == "torch.distributed.run") {
        if at > 0 && rest[at - 1] == "-m" && !has(&["--tee", "-t", "--redirects", "-r"]) {
            let mut out = vec![program.clone()];
            out.extend(rest[..=at].iter().cloned());
            out.extend(["--tee", "3"].map(OsString::from));
            out.extend(rest[at + 1..].iter().cloned());
            return Ok(out);
        }
    }
    let added: Vec<&str> = match launcher_kind(program) {
        Some(LauncherKind::Torchrun) if has(&["--tee", "-t", "--redirects", "-r"]) => vec![],
        Some(LauncherKind::Torchrun) => vec!["--tee", "3"],
        Some(LauncherKind::Mpirun)
            if has(&["--tag-output", "-tag-output", "-prepend-rank", "-l"]) =>
        {
            vec![]
        }
        Some(LauncherKind::Mpirun) => vec![mpi_label_flag(program)?],
        Some(LauncherKind::Srun) if has(&["--label", "-l"]) => vec![],
        Some(LauncherKind::Srun) => vec!["--label"],
        None => {
            return Err(RankLabelError::NotALauncher(
                program.to_string_lossy().into_owned(),
            ))
        }
    };
    let mut out = vec![program.clone()];
    out.extend(added.into_iter().map(OsString::from));
    out.extend(rest.iter().cloned());
    Ok(out)
}

/// The node line for `command` run with the environment `env`, on host `host`; `None` when the
/// launcher says nothing of nodes (one node's torchrun, srun or mpirun over every node, whose
/// labels are global ranks already).
pub fn node_line(
    command: &[OsString],
    env: impl Fn(&str) -> Option<String>,
    host: &str,
) -> Option<String> {
    let num = |k: &str| env(k)?.trim().parse::<u64>().ok();
    let line = |node: String, rank: u64| format!("{NODE_LINE}{node},rank,{rank},host,{host}");
    let (program, rest) = command.split_first()?;
    if launcher_kind(program) == Some(LauncherKind::Torchrun)
        || rest
            .windows(2)
            .any(|w| w[0] == "-m" && w[1] == "torch.distributed.run")
    {
        let own = rest
            .iter()
            .position(|a| a.to_string_lossy().ends_with(".py"))
            .unwrap_or(rest.len());
        let value = |names: &[&str]| -> Option<String> {
            let args: Vec<String> = rest[..own]
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            args.iter().enumerate().find_map(|(i, a)| {
                names.iter().find_map(|n| {
                    if a == n {
                        args.get(i + 1).cloned()
                    } else {
                        a.strip_prefix(&format!("{n}=")).map(str::to_string)
                    }
                })
            })
        };
        let node: u64 = value(&["--node-rank", "--node_rank"])?.parse().ok()?;
        let per_node: u64 =
            value(&["--nproc-per-node", "--nproc_per_node"]).map_or(Some(1), |v| v.parse().ok())?;
        return Some(line(format!("node{node}"), node * per_node));
    }
    if launcher_kind(program).is_some() {
        return None;
    }
    // `record` is itself one rank of the launcher's.
    if let (Some(rank), Some(node)) = (num("SLURM_PROCID"), num("SLURM_NODEID")) {
        return Some(line(format!("node{node}"), rank));
    }
    if let (Some(rank), Some(node)) = (num("RANK"), num("GROUP_RANK")) {
        return Some(line(format!("node{node}"), rank));
    }
    num("OMPI_COMM_WORLD_RANK").map(|rank| line(host.to_string(), rank))
}

/// Whether `record` runs as one rank of a launcher (srun, mpirun or torchrun `--no-python`
/// started it) and runs no launcher itself: `--ranks` then needs no label flag, only the node
/// line. (A batch script's own step has `SLURM_PROCID` too, so a launcher run from it is no
/// rank.)
pub fn inside_a_rank(command: &[OsString], env: impl Fn(&str) -> Option<String>) -> bool {
    let Some((program, rest)) = command.split_first() else {
        return false;
    };
    launcher_kind(program).is_none()
        && !rest.iter().any(|a| a == "torch.distributed.run")
        && ["SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "GROUP_RANK"]
            .iter()
            .any(|k| env(k).is_some())
}

/// The launcher and, for torchrun, its processes per node (`--nproc-per-node N`).
pub fn launcher_of(command: &[OsString]) -> (Option<String>, Option<u64>) {
    let Some((program, rest)) = command.split_first() else {
        return (None, None);
    };
    let args: Vec<String> = rest
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let name = std::path::Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let torchrun = name == "torchrun"
        || args
            .windows(2)
            .any(|w| w[0] == "-m" && w[1] == "torch.distributed.run");
    if !torchrun {
        let known = ["mpirun", "mpiexec", "srun"].contains(&name.as_str());
        return (known.then_some(name), None);
    }
    let own = args
        .iter()
        .position(|a| a.ends_with(".py"))
        .unwrap_or(args.len());
    let per_node = args[..own].iter().enumerate().find_map(|(i, a)| {
        ["--nproc-per-node", "--nproc_per_node"]
            .iter()
            .find_map(|n| {
                if a == n {
                    args.get(i + 1)?.parse().ok()
                } else {
                    a.strip_prefix(&format!("{n}="))?.parse().ok()
                }
            })
    });
    (Some("torchrun".into()), per_node)
}

/// This machine's name (`uname -n`): the node, when the launcher gives no number for it.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty() && !h.contains(','))
        .unwrap_or_else(|| "unknown-host".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranks::logs::node_line_of as node_of;

    #[test]
    fn node_lines_from_the_launcher() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let none = |_: &str| None;
        // torchrun on node 1 of 2, 4 ranks a node: its ranks are 4–7.
        let c = os(&[
            "torchrun",
            "--nnodes",
            "2",
            "--node-rank",
            "1",
            "--nproc-per-node=4",
            "t.py",
        ]);
        let l = node_line(&c, none, "h1").unwrap();
        assert_eq!(l, "profilednn,node,node1,rank,4,host,h1");
        assert_eq!(
            node_of(format!("{l}\n[default0]:x\n").as_bytes()),
            Ok(Some(("node1".into(), 4)))
        );
        // The script's own --node-rank is not torchrun's; one node's torchrun says nothing.
        assert_eq!(
            node_line(&os(&["torchrun", "t.py", "--node-rank", "1"]), none, "h"),
            None
        );
        assert_eq!(node_line(&os(&["srun", "-n", "8", "x"]), none, "h"), None);
        // record as one rank of srun: SLURM_PROCID 5 on node 2.
        let slurm = |k: &str| match k {
            "SLURM_PROCID" => Some("5".to_string()),
            "SLURM_NODEID" => Some("2".to_string()),
            _ => None,
        };
        assert_eq!(
            node_line(&os(&["python", "t.py"]), slurm, "h").unwrap(),
            "profilednn,node,node2,rank,5,host,h"
        );
        assert!(inside_a_rank(&os(&["python", "t.py"]), slurm));
        assert!(!inside_a_rank(&os(&["torchrun", "t.py"]), slurm));
        let ompi = |k: &str| (k == "OMPI_COMM_WORLD_RANK").then(|| "3".to_string());
        assert_eq!(
            node_line(&os(&["python", "t.py"]), ompi, "cn07").unwrap(),
            "profilednn,node,cn07,rank,3,host,cn07"
        );
        assert_eq!(node_line(&os(&["python", "t.py"]), none, "h"), None);
        assert!(!inside_a_rank(&os(&["python", "t.py"]), none));
        // Not at a line's start: no node line.
        assert_eq!(node_of(b"x profilednn,node,a,rank,1\n"), Ok(None));
        let e = node_of(b"x\nprofilednn,node,a,rank,one\n").unwrap_err();
        assert!(e.starts_with("line 2: `profilednn,node,a,rank,one`"), "{e}");
    }

    #[test]
    fn labelled_verbose_lines_keep_their_label_and_leave_the_terminal() {
        let r = route(b"[default1]:onednn_verbose,v1,primitive,exec,cpu,x,1\n").unwrap();
        assert_eq!(r.terminal, b"");
        assert_eq!(r.label, b"[default1]:");
        assert_eq!(r.verbose, b"onednn_verbose,v1,primitive,exec,cpu,x,1\n");
        assert_eq!(r.rank, Some((Launcher::Torchrun, 1)));
        let r = route(b"[1,0]<stdout>:loss=3onednn_verbose,exec,cpu,x,1\n").unwrap();
        assert_eq!(r.terminal, b"[1,0]<stdout>:loss=3");
        assert_eq!(r.label, b"[1,0]<stdout>:");
        assert_eq!(r.verbose, b"onednn_verbose,exec,cpu,x,1\n");
        let r = route(b"[default0]:profilednn,iteration,2\n").unwrap();
        assert_eq!(r.verbose, b"profilednn,iteration,2\n");
        assert_eq!(route(b"[default0]:epoch 1 loss 0.3\n"), None);
        assert_eq!(route(b"[default0]:\n"), None);
    }

    #[test]
    fn unlabelled_processes_are_named_only_when_there_can_be_several() {
        let header = b"onednn_verbose,v1,info,oneDNN v3.13.3 (commit b38f97eb)\n";
        let mut w = RankWatch::default();
        w.see(&route(header).unwrap());
        // One process of a plain program: nothing to say; under a launcher: unlabelled ranks.
        assert_eq!(w.note(std::ffi::OsStr::new("python")), None);
        let n = w.note(std::ffi::OsStr::new("/usr/bin/torchrun")).unwrap();
        assert!(n.contains("the launcher's processes"), "{n}");
        w.see(&route(header).unwrap());
        let n = w.note(std::ffi::OsStr::new("python")).unwrap();
        assert!(
            n.contains("2 processes") && n.contains("cannot be told apart"),
            "{n}"
        );
        // Labelled lines: the ranks found.
        let mut w = RankWatch::default();
        w.see(&route(b"[default1]:onednn_verbose,v1,info,x\n").unwrap());
        let n = w.note(std::ffi::OsStr::new("torchrun")).unwrap();
        assert!(n.contains("torchrun (rank 1: 1)"), "{n}");
    }

    #[test]
    fn ranks_flag_is_added_once_and_only_for_known_launchers() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            with_rank_labels(&os(&["torchrun", "--nproc-per-node", "2", "t.py"])).unwrap(),
            os(&["torchrun", "--tee", "3", "--nproc-per-node", "2", "t.py"])
        );
        assert_eq!(
            with_rank_labels(&os(&["/usr/bin/torchrun", "--tee=3", "t.py"])).unwrap(),
            os(&["/usr/bin/torchrun", "--tee=3", "t.py"])
        );
        assert_eq!(
            with_rank_labels(&os(&["torchrun", "t.py", "-r", "5"])).unwrap(),
            os(&["torchrun", "--tee", "3", "t.py", "-r", "5"])
        );
        assert_eq!(
            with_rank_labels(&os(&["srun", "-n", "2", "x"])).unwrap(),
            os(&["srun", "--label", "-n", "2", "x"])
        );
        assert_eq!(
            with_rank_labels(&os(&["python3", "-m", "torch.distributed.run", "t.py"])).unwrap(),
            os(&[
                "python3",
                "-m",
                "torch.distributed.run",
                "--tee",
                "3",
                "t.py"
            ])
        );
        let e = with_rank_labels(&os(&["python", "t.py"])).unwrap_err();
        assert!(e.to_string().contains("`python`"), "{e}");
    }

    fn cmd(s: &str) -> Vec<OsString> {
        s.split_whitespace().map(OsString::from).collect()
    }

    #[test]
    fn torchruns_processes_per_node_are_read_before_the_script() {
        assert_eq!(
            launcher_of(&cmd(
                "torchrun --nproc-per-node 2 train.py --nproc-per-node 9"
            )),
            (Some("torchrun".into()), Some(2))
        );
        assert_eq!(
            launcher_of(&cmd(
                "python -m torch.distributed.run --nproc_per_node=4 t.py"
            )),
            (Some("torchrun".into()), Some(4))
        );
        assert_eq!(
            launcher_of(&cmd("srun -n 2 python t.py")),
            (Some("srun".into()), None)
        );
        assert_eq!(launcher_of(&cmd("python t.py")), (None, None));
    }

    #[test]
    fn the_mpi_is_told_by_its_version_text() {
        assert_eq!(
            mpi_label_flag_of("mpirun (Open MPI) 4.1.5"),
            Some("--tag-output")
        );
        assert_eq!(
            mpi_label_flag_of("HYDRA build details:"),
            Some("-prepend-rank")
        );
        assert_eq!(mpi_label_flag_of("mystery launcher 1.0"), None);
    }
}
