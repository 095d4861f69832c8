//! One log with a launcher label on each line → one stream per rank, labels removed.
//!
//! A multi-rank log (`profilednn record -- torchrun --tee 3 …`, or a launcher's output saved by
//! hand) interleaves the ranks' lines; every figure of a rank (its iterations, its wall-clock
//! span, its share of the time) needs its own lines in their own order. Splitting here, before
//! the scan, lets every later stage treat a rank exactly like a log of its own.

use crate::launcher::{split, Launcher};
use std::collections::BTreeMap;
use std::ops::Range;

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
    let ix = RankIndex::of(bytes, launcher);
    let gather = |ranges: &[Range<usize>]| {
        let mut out = Vec::with_capacity(ranges.iter().map(Range::len).sum());
        for r in ranges {
            out.extend_from_slice(&bytes[r.clone()]);
        }
        out
    };
    RankStreams {
        ranks: ix.ranks.iter().map(|(r, l)| (*r, gather(l))).collect(),
        unlabelled: gather(&ix.unlabelled),
        unlabelled_profile_lines: ix.unlabelled_profile_lines,
    }
}

/// Where each rank's lines lie in a piece of a labelled log: for each line, the range of the
/// rank's own text (label left out, newline kept). A labelled log of many GB is split piece by
/// piece, and its lines are parsed where they lie, not copied out first.
#[derive(Debug, Default)]
pub struct RankIndex {
    /// Per rank, in the order the ranks first appear: its lines, in order.
    pub ranks: Vec<(u32, Vec<Range<usize>>)>,
    /// Lines without the launcher's label, whole.
    pub unlabelled: Vec<Range<usize>>,
    /// How many of the unlabelled lines are verbose lines or markers.
    pub unlabelled_profile_lines: u64,
}

impl RankIndex {
    /// The lines of `bytes` by rank. A last line without a newline is a line too (a piece
    /// ends after a newline, except at the end of the log or in a line longer than a piece).
    pub fn of(bytes: &[u8], launcher: Launcher) -> RankIndex {
        let mut ix = RankIndex::default();
        // Rank → its place in `ranks` + 1 (0: not seen yet). Ranks are at most 2^20
        // (launcher::split), so this stays under 4 MB, and a line costs no hashing.
        let mut slot_of: Vec<u32> = Vec::new();
        let mut start = 0;
        while start < bytes.len() {
            let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |p| start + p + 1);
            let line = &bytes[start..end];
            match split(line).filter(|l| l.launcher == launcher) {
                Some(l) => {
                    let r = l.rank as usize;
                    if r >= slot_of.len() {
                        slot_of.resize(r + 1, 0);
                    }
                    if slot_of[r] == 0 {
                        ix.ranks.push((l.rank, Vec::new()));
                        slot_of[r] = ix.ranks.len() as u32;
                    }
                    ix.ranks[slot_of[r] as usize - 1]
                        .1
                        .push(start + l.prefix_len..end);
                }
                None => {
                    if is_profile_line(line) {
                        ix.unlabelled_profile_lines += 1;
                    }
                    ix.unlabelled.push(start..end);
                }
            }
            start = end;
        }
        ix
    }
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
    fn the_index_points_at_each_ranks_text_in_order() {
        let log: &[u8] =
            b"[rank3]:a\n[rank1]:b\nonednn_verbose,z\n[rank3]:c\n0: onednn_verbose,y\n[rank2]:d";
        let ix = RankIndex::of(log, Launcher::Torchrun);
        let text = |r: &[Range<usize>]| r.iter().map(|r| &log[r.clone()]).collect::<Vec<_>>();
        assert_eq!(ix.ranks.iter().map(|r| r.0).collect::<Vec<_>>(), [3, 1, 2]);
        assert_eq!(text(&ix.ranks[0].1), [&b"a\n"[..], b"c\n"]);
        assert_eq!(text(&ix.ranks[2].1), [&b"d"[..]]);
        assert_eq!(
            text(&ix.unlabelled),
            [&b"onednn_verbose,z\n"[..], b"0: onednn_verbose,y\n"]
        );
        assert_eq!(ix.unlabelled_profile_lines, 1);
    }

    #[test]
    fn labels_on_application_output_alone_do_not_make_a_multi_rank_log() {
        assert_eq!(
            sniff(b"[1] item one\n0: zero\nonednn_verbose,v1,info,x\n"),
            None
        );
    }
}
