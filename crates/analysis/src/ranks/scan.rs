//! Reading a launcher-labelled multi-rank log into one [`Tally`] per rank, while it streams.
//!
//! A labelled log is as large as all its ranks' logs together (64 ranks × 200 MB is 12.8 GB),
//! so it cannot be held in memory to be split first. Here the log is read in newline-aligned
//! chunks (mapped, or decompressed from gzip or a pipe), a few at a time: the chunks are split
//! by rank in parallel, then each rank's lines, labels removed, are parsed by the one worker
//! that owns the rank, in log order, continuing one chunk of the rank's tally
//! ([`Tally::consume_chunk`]). Each rank's tally is exactly the tally of the rank's lines read
//! as a log of their own, and memory depends on the ranks and their distinct primitives, not
//! on the log's size.

use crate::key_table::{KeyTable, RankKeys, SharedKeys};
use crate::scan::ScanOptions;
use crate::tally::Tally;
use profilednn_verbose::demux::RankIndex;
use profilednn_verbose::input::{
    for_each_piece, split_at_newlines, ChunkPool, ChunkReader, StreamError,
};
use profilednn_verbose::launcher::Launcher;
use profilednn_verbose::LogInput;
use rayon::prelude::*;
use std::sync::atomic::Ordering;
use std::sync::mpsc;

/// One rank's lines, read.
pub struct RankTally {
    pub rank: u32,
    pub tally: Tally,
}

/// A labelled log, read rank by rank.
pub struct RankScanOutput {
    /// Every rank seen, by rank.
    pub ranks: Vec<RankTally>,
    /// The lines without the launcher's label, read as a log of their own.
    pub unlabelled: Tally,
    /// How many of the unlabelled lines are verbose lines or markers: work no rank can claim.
    pub unlabelled_profile_lines: u64,
    /// The input stopped being readable (a truncated gzip): every rank's lines before it are
    /// in its tally.
    pub read_error: Option<StreamError>,
}

/// Bytes of log split and parsed at a time by one worker: small enough that a piece's lines are
/// still in the core's cache when its ranks' lines are parsed, rank after rank, out of order
/// (a rank's next line is a few KB further on; 8 MB pieces had each line wait on memory).
const PIECE: usize = 512 << 10;

/// A worker's ranks: rank → its tally and its counters (`None`: the lines without a label),
/// with the primitive keys they share.
#[derive(Default)]
struct Worker {
    table: KeyTable,
    ranks: foldhash::HashMap<Option<u32>, (Tally, RankKeys)>,
}

/// Which of `workers` owns the lines of `rank` (the unlabelled ones go to the first).
fn owner(rank: Option<u32>, workers: usize) -> usize {
    rank.map_or(0, |r| r as usize % workers)
}

/// What stays the same for every batch of a scan.
struct Batches<'a> {
    pool: rayon::ThreadPool,
    launcher: Launcher,
    owned: Vec<Worker>,
    profile_lines: u64,
    opts: &'a ScanOptions,
}

impl Batches<'_> {
    /// Splits `chunks` (each `(bytes, is_last)`) into pieces, then each `workers` pieces at a
    /// time: indexed by rank in parallel, then each worker parses its ranks' lines of them in
    /// order.
    fn run(&mut self, chunks: &[(&[u8], bool)]) {
        let piece = PIECE.min(self.opts.chunk_size.max(1));
        let mut pieces = Vec::new();
        for &(c, last) in chunks {
            let sub = split_at_newlines(c, c.len() / piece + 1);
            let n = sub.len();
            pieces.extend(
                sub.into_iter()
                    .enumerate()
                    .map(|(i, s)| (s, last && i + 1 == n)),
            );
        }
        for group in pieces.chunks(self.owned.len()) {
            self.batch(group);
        }
    }

    fn batch(&mut self, pieces: &[(&[u8], bool)]) {
        let (launcher, workers) = (self.launcher, self.owned.len());
        let splits: Vec<RankIndex> = self.pool.install(|| {
            pieces
                .par_iter()
                .map(|&(bytes, _)| RankIndex::of(bytes, launcher))
                .collect()
        });
        let owned = &mut self.owned;
        self.pool.install(|| {
            owned.par_iter_mut().enumerate().for_each(|(w, mine)| {
                for (ix, &(bytes, is_last)) in splits.iter().zip(pieces) {
                    let lines = ix
                        .ranks
                        .iter()
                        .map(|(r, l)| (Some(*r), l))
                        .chain(std::iter::once((None, &ix.unlabelled)));
                    for (rank, ranges) in lines {
                        if owner(rank, workers) == w && !ranges.is_empty() {
                            let (tally, keys) = mine.ranks.entry(rank).or_default();
                            let mut keys = SharedKeys {
                                table: &mut mine.table,
                                rank: keys,
                            };
                            // One chunk per rank, continued: its lines in log order.
                            tally.consume_lines(&mut keys, 0, bytes, ranges, is_last);
                            keys.flush();
                        }
                    }
                }
            });
        });
        self.profile_lines += splits
            .iter()
            .map(|s| s.unlabelled_profile_lines)
            .sum::<u64>();
    }

    fn progress(&self, n: usize) {
        if let Some(p) = &self.opts.progress {
            p.fetch_add(n as u64, Ordering::Relaxed);
        }
    }
}

/// Reads `input`, a log labelled by `launcher`, into a tally per rank, `opts.threads` pieces at
/// a time: the pieces are indexed by rank in parallel, then each worker parses, piece after
/// piece, the lines of the ranks it owns, where they lie. A rank's tally so sees its lines in
/// log order, as one chunk continued; the chunks in flight (a few per worker for a stream,
/// whose next chunks are read meanwhile) bound the memory.
pub fn scan_ranks(input: LogInput, launcher: Launcher, opts: &ScanOptions) -> RankScanOutput {
    let workers = opts.threads.max(1);
    let mut b = Batches {
        pool: rayon::ThreadPoolBuilder::new()
            .num_threads(workers)
            .build()
            .expect("thread pool"),
        launcher,
        owned: (0..workers).map(|_| Worker::default()).collect(),
        profile_lines: 0,
        opts,
    };
    let mut read_error = None;
    match input {
        LogInput::Empty { .. } => {}
        LogInput::Mapped { map, .. } => {
            // Split and parsed, a chunk's pages leave our resident set.
            for_each_piece(&map, opts.chunk_size, |c, is_last| {
                b.run(&[(c, is_last)]);
                b.progress(c.len());
            });
        }
        LogInput::Stream { path, reader, .. } => {
            read_error = scan_stream(&mut b, reader, path);
        }
    }
    let mut ranks: Vec<RankTally> = Vec::new();
    let mut unlabelled = Tally::default();
    for worker in b.owned {
        for (rank, (mut tally, keys)) in worker.ranks {
            worker.table.into_maps(keys, &mut tally.keys);
            match rank {
                Some(rank) => ranks.push(RankTally { rank, tally }),
                None => unlabelled = tally,
            }
        }
    }
    ranks.sort_by_key(|r| r.rank);
    RankScanOutput {
        ranks,
        unlabelled,
        unlabelled_profile_lines: b.profile_lines,
        read_error,
    }
}

/// The chunks of a stream, read (and decompressed) by a thread of their own while the ones
/// before are parsed, `workers` at a time.
fn scan_stream(
    b: &mut Batches,
    reader: Box<dyn std::io::Read + Send>,
    path: std::path::PathBuf,
) -> Option<StreamError> {
    let workers = b.owned.len();
    let chunk_pool = ChunkPool::default();
    let chunks = ChunkReader::new(reader, b.opts.chunk_size, path).recycling(chunk_pool.clone());
    let (tx, rx) = mpsc::sync_channel(workers);
    let mut read_error = None;
    std::thread::scope(|s| {
        s.spawn(move || {
            for c in chunks {
                if tx.send(c).is_err() {
                    break;
                }
            }
        });
        let mut rx = rx.into_iter();
        loop {
            let mut group = Vec::with_capacity(workers);
            for c in rx.by_ref() {
                match c {
                    Ok(c) => group.push(c),
                    Err(e) => read_error = Some(e),
                }
                if group.len() == workers {
                    break;
                }
            }
            if group.is_empty() {
                break;
            }
            let views: Vec<(&[u8], bool)> =
                group.iter().map(|c| (&c.bytes[..], c.is_last)).collect();
            b.run(&views);
            for c in group {
                b.progress(c.bytes.len());
                chunk_pool.give(c.bytes);
            }
        }
    });
    read_error
}
