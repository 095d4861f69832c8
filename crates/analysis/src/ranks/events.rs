//! The events of a launcher-labelled multi-rank log, rank by rank, in one pass as it streams.
//!
//! `plan` needs each rank's sequence of calls (its steady iteration), not only totals. Split
//! into one buffer per rank first, a labelled log takes as much memory as its size (64 ranks
//! × 200 MB is 12.8 GB); read here line by line, each rank's events come in its own order,
//! numbered as in the rank's own log, while the log is read a chunk at a time.

use crate::events::{lines_of, Event, EventReader, Read};
use profilednn_verbose::input::{ChunkReader, StreamError};
use profilednn_verbose::launcher::{split, Launcher};
use profilednn_verbose::LogInput;

/// Calls `f(rank, event)` for every event of every rank of `input`, a log labelled by
/// `launcher`, in log order; a line's number is its number among its rank's lines. Lines
/// without the label are no rank's and are skipped. A read error (truncated gzip) stops the
/// pass after delivering everything before it.
pub fn for_each_rank_event(
    input: LogInput,
    launcher: Launcher,
    mut f: impl FnMut(u32, Event),
) -> Option<StreamError> {
    let mut reader = EventReader::default();
    // Lines seen per rank (ranks are at most 2^20: launcher::split).
    let mut lines: Vec<u64> = Vec::new();
    let mut line = |l: &[u8]| {
        let Some(l) = split(l).filter(|l| l.launcher == launcher) else {
            return;
        };
        let r = l.rank as usize;
        if r >= lines.len() {
            lines.resize(r + 1, 0);
        }
        lines[r] += 1;
        if l.text.is_empty() {
            return;
        }
        if let Read::Event(e) = reader.read(l.text, lines[r]) {
            f(l.rank, e);
        }
    };
    match input {
        LogInput::Mapped { map, .. } => {
            profilednn_verbose::input::for_each_piece(&map, 8 << 20, |piece, _| {
                lines_of(piece).for_each(&mut line)
            });
            None
        }
        LogInput::Empty { .. } => None,
        LogInput::Stream { path, reader, .. } => {
            for chunk in ChunkReader::new(reader, 8 << 20, path) {
                match chunk {
                    Ok(c) => lines_of(&c.bytes).for_each(&mut line),
                    Err(e) => return Some(e),
                }
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::for_each_event;

    fn stream(bytes: &[u8]) -> LogInput {
        LogInput::Stream {
            path: "x.log".into(),
            reader: Box::new(std::io::Cursor::new(bytes.to_vec())),
            compressed_len: None,
        }
    }

    /// What an event says, comparable.
    fn digest(e: &Event) -> String {
        match e {
            Event::Primitive(p) => {
                format!("{} {:?} {:?} {:?}", p.line, p.kind, p.time_ps, p.primitive)
            }
            Event::Iteration { line, text } => format!("{line} {text}"),
        }
    }

    /// Each rank's events are those of its lines cut out by their literal label and read as
    /// a log of their own.
    #[test]
    fn each_ranks_events_are_its_own_logs() {
        let conv = "onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,forward_training,src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 bia:undef::undef::: dst:f32::blocked:abcd::f0,,alg:convolution_direct,mb2_ic16oc16_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1";
        let relu = "onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx2,forward_training,data:f32::blocked:abcd::f0 diff:undef::undef:::,,alg:eltwise_relu alpha:0 beta:0,2x16x8x8";
        let log = format!(
            "launcher noise\n[rank1]:### ITER 0 BEGIN\n[rank0]:### ITER 0 BEGIN\n[rank0]:{conv},1.5\n[rank1]:{conv},2.5\n[rank1]:\n[rank1]:{relu},0.5\nonednn_verbose,v1,primitive,exec,cpu,reorder,broken\n[rank0]:loss 1.0\n[rank0]:{relu},0.25\n[rank1]:### ITER 1 BEGIN\n[rank0]:{conv},1.75"
        );
        let mut got: std::collections::BTreeMap<u32, Vec<String>> = Default::default();
        let err = for_each_rank_event(stream(log.as_bytes()), Launcher::Torchrun, |r, e| {
            got.entry(r).or_default().push(digest(&e))
        });
        assert!(err.is_none());
        assert_eq!(got.keys().copied().collect::<Vec<_>>(), [0, 1]);
        for (rank, events) in got {
            let label = format!("[rank{rank}]:");
            let alone: Vec<u8> = log
                .split_inclusive('\n')
                .filter_map(|l| l.strip_prefix(label.as_str()))
                .collect::<String>()
                .into_bytes();
            let mut want = Vec::new();
            for_each_event(stream(&alone), |e| want.push(digest(&e)));
            assert_eq!(events, want, "rank {rank}");
            assert!(events.len() >= 3);
        }
    }
}
