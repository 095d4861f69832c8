//! One log with a launcher label on each line → one stream per rank, labels removed.
//!
//! A multi-rank log (`profilednn record -- torchrun --tee 3 …`, or a launcher's output saved by
//! hand) interleaves the ranks' lines; every figure of a rank (its iterations, its wall-clock
//! span, its share of the time) needs its own lines in their own order. Splitting here, before
//! the scan, lets every later stage treat a rank exactly like a log of its own.

use crate::launcher::{split, Launcher};
use std::collections::BTreeMap;

/// The text after a label that makes a log a profiled multi-rank log: a verbose line or an
/// iteration marker (a label in front of application output alone proves nothing).
pub fn is_profile_line(text: &[u8]) -> bool {
    [
        &b"onednn_verbose,"[..],
        b"dnnl_verbose,",
        b"mkldnn_verbose,",
        b"profilednn,iteration",
        b"### ITER ",
    ]
    .iter()
    .any(|m| text.starts_with(m))
}

/// The launcher whose labels carry verbose lines in `head` (the first such line decides), or
/// `None` for an ordinary single-process log.
pub fn sniff(head: &[u8]) -> Option<Launcher> {
    head.split(|&c| c == b'\n')
        .filter_map(split)
        .find(|l| is_profile_line(l.text))
        .map(|l| l.launcher)
}

/// A multi-rank log split by rank.
#[derive(Debug, Default)]
pub struct RankStreams {
    /// Each rank's lines, labels removed, in their order in the log.
    pub ranks: BTreeMap<u32, Vec<u8>>,
    /// Lines without this launcher's label (the launcher's own messages, a rank's output that
    /// was not labelled), kept whole and in order.
    pub unlabelled: Vec<u8>,
    /// How many of the unlabelled lines are verbose lines or markers: work no rank can claim.
    pub unlabelled_profile_lines: u64,
}

/// Splits `bytes` by the labels of `launcher`; labels of another launcher are not labels here
/// (they are text of the line, which goes to `unlabelled`).
pub fn demux(bytes: &[u8], launcher: Launcher) -> RankStreams {
    let mut out = RankStreams::default();
    let mut rest = bytes;
    while !rest.is_empty() {
        let (line, next) = match memchr::memchr(b'\n', rest) {
            Some(p) => (&rest[..=p], &rest[p + 1..]),
            None => (rest, &[][..]),
        };
        rest = next;
        match split(line).filter(|l| l.launcher == launcher) {
            Some(l) => out
                .ranks
                .entry(l.rank)
                .or_default()
                .extend_from_slice(l.text),
            None => {
                if is_profile_line(line) {
                    out.unlabelled_profile_lines += 1;
                }
                out.unlabelled.extend_from_slice(line);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_get_their_own_lines_in_order() {
        let log = b"launcher says hi\n[default1]:profilednn,iteration,0\n[default0]:profilednn,iteration,0\n[default0]:onednn_verbose,v1,info,x\n[default1]:loss 1\n0: not slurm here\n[default1]:onednn_verbose,exec";
        assert_eq!(sniff(log), Some(Launcher::Torchrun));
        let s = demux(log, Launcher::Torchrun);
        assert_eq!(
            s.ranks[&0],
            b"profilednn,iteration,0\nonednn_verbose,v1,info,x\n".to_vec()
        );
        // The last line keeps its missing newline (a truncated last line stays truncated).
        assert_eq!(
            s.ranks[&1],
            b"profilednn,iteration,0\nloss 1\nonednn_verbose,exec".to_vec()
        );
        assert_eq!(
            s.unlabelled,
            b"launcher says hi\n0: not slurm here\n".to_vec()
        );
        assert_eq!(s.unlabelled_profile_lines, 0);
    }

    #[test]
    fn labels_on_application_output_alone_do_not_make_a_multi_rank_log() {
        assert_eq!(
            sniff(b"[1] item one\n0: zero\nonednn_verbose,v1,info,x\n"),
            None
        );
    }
}
