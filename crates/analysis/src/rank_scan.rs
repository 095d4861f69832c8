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

use crate::scan::ScanOptions;
use crate::tally::Tally;
use profilednn_verbose::demux::RankIndex;
use profilednn_verbose::input::{split_at_newlines, ChunkPool, ChunkReader, StreamError};
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

/// A worker's ranks: rank → its tally (`None`: the lines without a label).
type Owned = foldhash::HashMap<Option<u32>, Tally>;

/// Which of `workers` owns the lines of `rank` (the unlabelled ones go to the first).
fn owner(rank: Option<u32>, workers: usize) -> usize {
    rank.map_or(0, |r| r as usize % workers)
}

/// Reads `input`, a log labelled by `launcher`, into a tally per rank, `opts.threads` chunks at
/// a time: the chunks are indexed by rank in parallel, then each worker parses, chunk after
/// chunk, the lines of the ranks it owns, where they lie. A rank's tally so sees its lines in log order, as
/// one chunk continued; the chunks in flight (two per worker, three for a stream, whose next
/// chunks are read meanwhile) bound the memory.
pub fn scan_ranks(input: LogInput, launcher: Launcher, opts: &ScanOptions) -> RankScanOutput {
    let workers = opts.threads.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .build()
        .expect("thread pool");
    let mut owned: Vec<Owned> = (0..workers).map(|_| Owned::default()).collect();
    let mut profile_lines = 0u64;
    let progress = |n: usize| {
        if let Some(p) = &opts.progress {
            p.fetch_add(n as u64, Ordering::Relaxed);
        }
    };
    // Splits a batch of chunks (each `(bytes, is_last)`) in parallel, then parses each
    // worker's ranks' lines of them in order.
    let mut batch = |chunks: &[(&[u8], bool)], owned: &mut Vec<Owned>| {
        let splits: Vec<RankIndex> = pool.install(|| {
            chunks
                .par_iter()
                .map(|&(bytes, _)| RankIndex::of(bytes, launcher))
                .collect()
        });
        pool.install(|| {
            owned.par_iter_mut().enumerate().for_each(|(w, mine)| {
                for (ix, &(bytes, is_last)) in splits.iter().zip(chunks) {
                    let lines = ix
                        .ranks
                        .iter()
                        .map(|(r, l)| (Some(*r), l))
                        .chain(std::iter::once((None, &ix.unlabelled)));
                    for (rank, ranges) in lines {
                        if owner(rank, workers) == w && !ranges.is_empty() {
                            // One chunk per rank, continued: its lines in log order.
                            mine.entry(rank)
                                .or_default()
                                .consume_lines(0, bytes, ranges, is_last);
                        }
                    }
                }
            });
        });
        profile_lines += splits
            .iter()
            .map(|s| s.unlabelled_profile_lines)
            .sum::<u64>();
    };
    let mut read_error = None;
    match input {
        LogInput::Empty { .. } => {}
        LogInput::Mapped { map, .. } => {
            let bytes: &[u8] = &map;
            let chunks = split_at_newlines(bytes, bytes.len() / opts.chunk_size.max(1) + 1);
            let last = chunks.len().saturating_sub(1);
            let chunks: Vec<(&[u8], bool)> = chunks
                .into_iter()
                .enumerate()
                .map(|(i, c)| (c, i == last))
                .collect();
            for group in chunks.chunks(workers) {
                batch(group, &mut owned);
                for (c, _) in group {
                    // Split and parsed: the pages can leave our resident set (see scan()).
                    profilednn_verbose::input::drop_pages_behind(&map, c);
                    progress(c.len());
                }
            }
        }
        LogInput::Stream { path, reader, .. } => {
            let chunk_pool = ChunkPool::default();
            let chunks =
                ChunkReader::new(reader, opts.chunk_size, path).recycling(chunk_pool.clone());
            // The next chunks are read (and decompressed) while these are parsed.
            let (tx, rx) = mpsc::sync_channel(workers);
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
                    batch(&views, &mut owned);
                    for c in group {
                        progress(c.bytes.len());
                        chunk_pool.give(c.bytes);
                    }
                }
            });
        }
    }
    let mut ranks: Vec<RankTally> = Vec::new();
    let mut unlabelled = Tally::default();
    for mine in owned {
        for (rank, tally) in mine {
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
        unlabelled_profile_lines: profile_lines,
        read_error,
    }
}
