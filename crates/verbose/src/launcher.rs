//! The labels launchers of multi-process runs put in front of each line of a rank's output.
//!
//! With several ranks writing to one terminal, only the launcher's label says which process a
//! line came from; without it the ranks' verbose lines are indistinguishable. The formats, as
//! the launchers' sources print them:
//!
//! * torchrun `--tee`/`--redirects` (torch/distributed/elastic/multiprocessing/tail_log.py):
//!   `[{role}{local_rank}]:` — `[default0]:`; `--log-line-prefix-template "[${rank}]:"` and
//!   similar templates give `[rank0]:` or `[0]:`.
//! * Open MPI `mpirun --tag-output`: `[jobid,rank]<stdout>:` (or `<stderr>`), with or without a
//!   space after the colon depending on the version; Open MPI 5 (PRRTE `--output`) also
//!   `[nspace,rank]`, `[jobid,rank][host:pid]` and `[rank]` before the stream tag.
//! * MPICH / Intel MPI `mpiexec -prepend-rank`: `[rank] `.
//! * Slurm `srun --label`: `rank: `, the rank right-aligned to the width of the largest one.
//!
//! A prefix that does not parse leaves the line as it is: [`split`] returns `None`.

use memchr::memchr;

/// Which launcher's label a line carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Launcher {
    /// torchrun (`[default0]:`, `[rank0]:`, `[0]:`).
    Torchrun,
    /// Open MPI `--tag-output` (`[1,0]<stdout>:`).
    OpenMpi,
    /// MPICH / Intel MPI `-prepend-rank` (`[0] `).
    Mpich,
    /// Slurm `srun --label` (`0: `).
    Slurm,
}

impl Launcher {
    pub fn as_str(self) -> &'static str {
        match self {
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "Open MPI --tag-output",
            Launcher::Mpich => "MPICH -prepend-rank",
            Launcher::Slurm => "srun --label",
        }
    }
}

/// A line split into its launcher label and the rank's own text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Labelled<'a> {
    pub launcher: Launcher,
    pub rank: u32,
    /// Bytes of the label (the rank's text starts here).
    pub prefix_len: usize,
    /// The rank's own text.
    pub text: &'a [u8],
}

/// Ranks above this are not believed (a `[123456789]` in application output is not a rank).
const MAX_RANK: u32 = 1 << 20;

fn number(b: &[u8]) -> Option<u32> {
    if b.is_empty() || b.len() > 7 {
        return None;
    }
    // By hand: every line of a labelled log goes through here (7 digits cannot overflow).
    let mut n = 0u32;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u32::from(c - b'0');
    }
    (n <= MAX_RANK).then_some(n)
}

fn labelled(launcher: Launcher, rank: u32, line: &[u8], prefix_len: usize) -> Labelled<'_> {
    Labelled {
        launcher,
        rank,
        prefix_len,
        text: &line[prefix_len..],
    }
}

/// Splits off a launcher label, if the line starts with one.
pub fn split(line: &[u8]) -> Option<Labelled<'_>> {
    match line.first()? {
        b'[' => bracketed(line),
        b' ' | b'0'..=b'9' => slurm(line),
        _ => None,
    }
}

fn bracketed(line: &[u8]) -> Option<Labelled<'_>> {
    // Labels are short; a `]` far away is application text in brackets.
    let close = memchr(b']', &line[..line.len().min(96)])?;
    let inside = &line[1..close];
    let after = &line[close + 1..];
    if let Some(comma) = memchr(b',', inside) {
        // Open MPI: `[jobid,rank]<stdout>:` / `<stderr>:`; Open MPI 5 (PRRTE) also
        // `[nspace,rank]…` (`--output tag-fullname`, `prterun-host-123@1`) and
        // `[jobid,rank][host:pid]<stdout>:` (`tag-detailed`).
        let job = &inside[..comma];
        if job.is_empty() || job.iter().any(|c| c.is_ascii_whitespace() || *c == b'[') {
            return None;
        }
        let rank = number(&inside[comma + 1..])?;
        return mpi_stream_tag(line, close + 1)
            .map(|len| labelled(Launcher::OpenMpi, rank, line, len));
    }
    let digits = inside
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let (name, num) = inside.split_at(inside.len() - digits);
    let rank = number(num)?;
    if !name
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
    {
        return None;
    }
    if name.is_empty() && after.starts_with(b"<std") {
        // Open MPI 5 `--output rank`: `[0]<stdout>:`.
        return mpi_stream_tag(line, close + 1)
            .map(|len| labelled(Launcher::OpenMpi, rank, line, len));
    }
    match after.first() {
        // torchrun: `[default0]:` (role name + local rank), `[rank0]:`, `[0]:`.
        Some(b':') => Some(labelled(Launcher::Torchrun, rank, line, close + 2)),
        // MPICH / Intel MPI: `[0] `.
        Some(b' ') if name.is_empty() => Some(labelled(Launcher::Mpich, rank, line, close + 2)),
        _ => None,
    }
}

/// The length of a label whose Open MPI stream tag starts at `at`: an optional `[host:pid]`,
/// `<stdout>:` / `<stderr>:` / `<stddiag>:`, and one optional space.
fn mpi_stream_tag(line: &[u8], at: usize) -> Option<usize> {
    let mut len = at;
    if line.get(len) == Some(&b'[') {
        let rest = &line[len..];
        len += memchr(b']', &rest[..rest.len().min(96)])? + 1;
    }
    let after = &line[len..];
    let tag = [&b"<stdout>:"[..], b"<stderr>:", b"<stddiag>:"]
        .into_iter()
        .find(|t| after.starts_with(t))?;
    len += tag.len();
    if line.get(len) == Some(&b' ') {
        len += 1;
    }
    Some(len)
}

fn slurm(line: &[u8]) -> Option<Labelled<'_>> {
    let pad = line.iter().take_while(|c| **c == b' ').count();
    if pad > 7 {
        return None;
    }
    let digits = line[pad..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count();
    let rank = number(&line[pad..pad + digits])?;
    let end = pad + digits;
    (line.get(end..end + 2) == Some(b": ")).then(|| labelled(Launcher::Slurm, rank, line, end + 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank_of(line: &str) -> Option<(Launcher, u32, &str)> {
        split(line.as_bytes()).map(|l| (l.launcher, l.rank, std::str::from_utf8(l.text).unwrap()))
    }

    #[test]
    fn labels_as_the_launchers_print_them() {
        // torchrun 2.15 --tee 3, copied from a real run (fixtures/multirank).
        assert_eq!(
            rank_of("[default1]:onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:1"),
            Some((
                Launcher::Torchrun,
                1,
                "onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:1"
            ))
        );
        assert_eq!(
            rank_of("[rank12]:profilednn,iteration,3"),
            Some((Launcher::Torchrun, 12, "profilednn,iteration,3"))
        );
        assert_eq!(rank_of("[0]:x"), Some((Launcher::Torchrun, 0, "x")));
        assert_eq!(
            rank_of("[1,3]<stdout>:onednn_verbose,exec"),
            Some((Launcher::OpenMpi, 3, "onednn_verbose,exec"))
        );
        assert_eq!(
            rank_of("[1,0]<stderr>: warning"),
            Some((Launcher::OpenMpi, 0, "warning"))
        );
        // Open MPI 5 (PRRTE) formats, from PRRTE pull request #1406.
        assert_eq!(
            rank_of("[prterun-f5n18-100629@1,2]<stdout>: f5n18"),
            Some((Launcher::OpenMpi, 2, "f5n18"))
        );
        assert_eq!(
            rank_of("[1,3][f5n17:4242]<stdout>: x"),
            Some((Launcher::OpenMpi, 3, "x"))
        );
        assert_eq!(rank_of("[5]<stderr>: y"), Some((Launcher::OpenMpi, 5, "y")));
        assert_eq!(
            rank_of("[2] onednn_verbose,exec"),
            Some((Launcher::Mpich, 2, "onednn_verbose,exec"))
        );
        assert_eq!(
            rank_of("0: onednn_verbose,exec"),
            Some((Launcher::Slurm, 0, "onednn_verbose,exec"))
        );
        assert_eq!(rank_of(" 7: x"), Some((Launcher::Slurm, 7, "x")));
    }

    #[test]
    fn what_is_not_a_label_stays_as_it_is() {
        for line in [
            "onednn_verbose,v1,primitive,exec,cpu",
            "[W init.cpp:12] warning",
            "[default]:no rank",
            "[1,2] no tag",
            "[1,x]<stdout>:bad rank",
            "[,1]<stdout>:no job",
            "[1,1][host<stdout>:unclosed",
            "[1,1]<stdin>:not an output",
            "[a b0]:space in the name",
            "[99999999]:too large",
            "12:30 the time",
            "3:no space",
            "",
            "[",
            "        3: too much padding",
            "[0]x",
        ] {
            assert_eq!(rank_of(line), None, "{line}");
        }
    }
}
