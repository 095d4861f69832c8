//! Reading a whole log into a [`Tally`], in parallel where the input allows it.

use crate::tally::Tally;
use profilednn_verbose::input::{
    split_at_newlines, ChunkPool, ChunkReader, StreamChunk, StreamError,
};
use profilednn_verbose::LogInput;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};

#[derive(Clone)]
pub struct ScanOptions {
    /// Worker threads (1 = serial).
    pub threads: usize,
    /// Chunk size for streamed input (gzip, stdin), and the upper bound of a mapped chunk.
    pub chunk_size: usize,
    /// Bytes consumed so far (uncompressed for mapped files, compressed position otherwise is not
    /// known, so streamed input reports uncompressed bytes), for progress bars.
    pub progress: Option<Arc<AtomicU64>>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            chunk_size: 8 << 20,
            progress: None,
        }
    }
}

pub struct ScanOutput {
    pub tally: Tally,
    /// The input stopped being readable (truncated gzip, I/O error); everything before it
    /// is in `tally`.
    pub read_error: Option<StreamError>,
}

/// Scans a log. Chunk results are merged in any order: the tally's sums are integers, so the
/// result is exactly the serial one whatever the thread count.
pub fn scan(input: LogInput, opts: &ScanOptions) -> ScanOutput {
    let threads = opts.threads.max(1);
    match input {
        LogInput::Empty { .. } => ScanOutput {
            tally: Tally::default(),
            read_error: None,
        },
        LogInput::Mapped { map, .. } => {
            let bytes: &[u8] = &map;
            // Few top-level pieces (one boundary search each), each scanned in sub-chunks of
            // `chunk_size` so that pages can be dropped behind the reader as it goes.
            let chunks = split_at_newlines(bytes, threads * 4);
            let last = chunks.len().saturating_sub(1);
            let work = |t: &mut Tally, (i, c): (usize, &[u8])| {
                let subs = split_at_newlines(c, c.len() / opts.chunk_size.max(1) + 1);
                let last_sub = subs.len().saturating_sub(1);
                for (j, sub) in subs.into_iter().enumerate() {
                    // Chunk ids keep file order: piece in the high bits, sub-chunk in the low.
                    t.consume_chunk(
                        ((i as u32) << 16) | j as u32,
                        sub,
                        i == last && j == last_sub,
                    );
                    // Done with these pages: drop them from our resident set so memory stays
                    // bounded by the chunks in flight, not the log size (the page cache keeps them).
                    profilednn_verbose::input::drop_pages_behind(&map, sub);
                    if let Some(p) = &opts.progress {
                        p.fetch_add(sub.len() as u64, Ordering::Relaxed);
                    }
                }
            };
            let tally = if threads == 1 {
                let mut acc = Tally::default();
                for item in chunks.into_iter().enumerate() {
                    work(&mut acc, item);
                }
                acc
            } else {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("thread pool");
                // One accumulator per rayon job (not per chunk): few tallies alive at once.
                pool.install(|| {
                    chunks
                        .into_par_iter()
                        .enumerate()
                        .fold(Tally::default, |mut t, item| {
                            work(&mut t, item);
                            t
                        })
                        .reduce(Tally::default, |mut a, b| {
                            a.merge(b);
                            a
                        })
                })
            };
            ScanOutput {
                tally,
                read_error: None,
            }
        }
        LogInput::Stream { path, reader, .. } => {
            let pool = ChunkPool::default();
            let chunks = ChunkReader::new(reader, opts.chunk_size, path).recycling(pool.clone());
            let consume = |t: &mut Tally, c: StreamChunk| {
                t.consume_chunk(c.index as u32, &c.bytes, c.is_last);
                if let Some(p) = &opts.progress {
                    p.fetch_add(c.bytes.len() as u64, Ordering::Relaxed);
                }
                pool.give(c.bytes);
            };
            // This thread only reads (and decompresses gzip); `threads` others parse, so the
            // parse runs in parallel with the read even on one core's worth of parsing, and the
            // reading thread does no per-line work. A bounded channel keeps at most a few chunks
            // in memory.
            let (tx, rx) = mpsc::sync_channel::<StreamChunk>(threads * 2);
            let rx = Mutex::new(rx);
            let workers = threads;
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..workers)
                    .map(|_| {
                        s.spawn(|| {
                            let mut t = Tally::default();
                            loop {
                                let next = rx.lock().expect("channel").recv();
                                match next {
                                    Ok(c) => consume(&mut t, c),
                                    Err(_) => break,
                                }
                            }
                            t
                        })
                    })
                    .collect();
                let mut read_error = None;
                for c in chunks {
                    match c {
                        Ok(c) => {
                            if tx.send(c).is_err() {
                                break;
                            }
                        }
                        Err(e) => read_error = Some(e),
                    }
                }
                drop(tx);
                let mut tally = Tally::default();
                for h in handles {
                    tally.merge(h.join().expect("worker panicked"));
                }
                ScanOutput { tally, read_error }
            })
        }
    }
}
