//! Opening logs and cutting them into newline-aligned chunks.
//!
//! Plain files are memory-mapped and cut into as many chunks as there are threads; gzip files
//! and stdin are streamed in fixed-size chunks so memory stays bounded whatever the log size.

use crate::gzip::{is_gzip, GzipSniff};
use flate2::read::MultiGzDecoder;
use memmap2::Mmap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Why a log could not be opened. The message holds the OS error itself (not as a `source`,
/// so that error chains such as anyhow's `{:#}` do not print it twice).
#[derive(Debug, Error)]
pub enum OpenError {
    #[error("{}: cannot open: {error}", path.display())]
    Open { path: PathBuf, error: io::Error },
    #[error("{} is a directory, not a log file", path.display())]
    Directory { path: PathBuf },
    #[error("{}: cannot map into memory: {error}", path.display())]
    Map { path: PathBuf, error: io::Error },
}

/// Where a log's bytes come from.
pub enum LogInput {
    /// A plain file, mapped: scanned in parallel in place.
    Mapped { path: PathBuf, map: Mmap },
    /// Empty plain file (cannot be mapped).
    Empty { path: PathBuf },
    /// A stream (gzip file, stdin): read in chunks.
    Stream {
        path: PathBuf,
        reader: Box<dyn Read + Send>,
        compressed_len: Option<u64>,
    },
}

impl LogInput {
    /// Opens `path`; `-` is stdin. Gzip is recognised by its magic bytes, not the file name.
    pub fn open(path: &Path) -> Result<LogInput, OpenError> {
        if path.as_os_str() == "-" {
            let stdin = io::stdin();
            enlarge_pipe(&stdin);
            return Ok(LogInput::Stream {
                path: path.into(),
                reader: Box::new(GzipSniff::new(stdin)),
                compressed_len: None,
            });
        }
        let file = File::open(path).map_err(|error| OpenError::Open {
            path: path.into(),
            error,
        })?;
        let meta = file.metadata().ok();
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            // A directory that holds one rotated set (oneDNN's file logger) is that one log.
            if let Ok(Some(files)) = crate::rotated::set_in_dir(path) {
                return Ok(LogInput::rotated(path, files));
            }
            return Err(OpenError::Directory { path: path.into() });
        }
        let len = meta.map(|m| m.len()).unwrap_or(0);
        let mut magic = [0u8; 2];
        let is_gzip = {
            use std::io::{Seek, SeekFrom};
            let mut f = &file;
            let n = f.read(&mut magic).unwrap_or(0);
            f.seek(SeekFrom::Start(0))
                .map_err(|error| OpenError::Open {
                    path: path.into(),
                    error,
                })?;
            is_gzip(&magic[..n])
        };
        if is_gzip {
            return Ok(LogInput::Stream {
                path: path.into(),
                reader: Box::new(MultiGzDecoder::new(io::BufReader::with_capacity(
                    1 << 20,
                    file,
                ))),
                compressed_len: Some(len),
            });
        }
        if len == 0 {
            return Ok(LogInput::Empty { path: path.into() });
        }
        // SAFETY: the map is read-only; a log truncated by another process while we read it
        // would fault, which is the usual caveat of mmap-based tools (ripgrep has it too).
        let map = unsafe { Mmap::map(&file) }.map_err(|error| OpenError::Map {
            path: path.into(),
            error,
        })?;
        // No MADV_SEQUENTIAL: on a cached file it maps pages far ahead of the reader and
        // inflates the resident set; the scan drops pages behind itself instead.
        Ok(LogInput::Mapped {
            path: path.into(),
            map,
        })
    }

    /// The files of a rotated set ([`crate::rotated`]), oldest first, read as one log named
    /// `name`: streamed, each file decompressed if it is gzip.
    pub fn rotated(name: &Path, files: Vec<PathBuf>) -> LogInput {
        let len = files
            .iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum();
        LogInput::Stream {
            path: name.into(),
            reader: Box::new(crate::rotated::Concat::new(files)),
            compressed_len: Some(len),
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            LogInput::Mapped { path, .. }
            | LogInput::Empty { path }
            | LogInput::Stream { path, .. } => path,
        }
    }

    /// Size in bytes to show progress against (compressed size for gzip), if known.
    pub fn progress_len(&self) -> Option<u64> {
        match self {
            LogInput::Mapped { map, .. } => Some(map.len() as u64),
            LogInput::Empty { .. } => Some(0),
            LogInput::Stream { compressed_len, .. } => *compressed_len,
        }
    }
}

/// Asks for a 1 MiB pipe buffer (Linux's default ceiling for unprivileged processes,
/// `/proc/sys/fs/pipe-max-size`) when `stdin` is a pipe: the writer (`zcat`, `cat`) then runs
/// up to 1 MiB ahead instead of 64 KiB, and the reader wakes a sixteenth as often. Best effort:
/// nothing happens on a terminal, a file, another OS, a pipe already that large, or when the
/// kernel refuses.
fn enlarge_pipe(stdin: &io::Stdin) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = stdin.as_raw_fd();
        const SIZE: libc::c_int = 1 << 20;
        // SAFETY: fstat writes the struct it is given; F_GETPIPE_SZ only reads, and
        // F_SETPIPE_SZ (asked only to grow) resizes the pipe's buffer, keeping its contents.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) == 0
                && st.st_mode & libc::S_IFMT == libc::S_IFIFO
                && libc::fcntl(fd, libc::F_GETPIPE_SZ) < SIZE
            {
                libc::fcntl(fd, libc::F_SETPIPE_SZ, SIZE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = stdin;
}

/// Drops the whole pages of `piece`, a slice of `map` already read, from this process's resident
/// set, so that scanning a mapped log takes memory bounded by the pieces in flight, not by the
/// log's size (the page cache keeps the pages; only our mapping lets go of them).
pub fn drop_pages_behind(map: &Mmap, piece: &[u8]) {
    let off = (piece.as_ptr() as usize).wrapping_sub(map.as_ptr() as usize);
    if off > map.len() || piece.len() > map.len() - off {
        debug_assert!(false, "drop_pages_behind: the piece is not inside the map");
        return;
    }
    #[cfg(unix)]
    {
        const PAGE: usize = 4096;
        let start = off.next_multiple_of(PAGE);
        let end = (off + piece.len()) / PAGE * PAGE;
        if end > start {
            // SAFETY: the range lies inside `map` (checked above), a read-only file mapping:
            // MADV_DONTNEED loses no data, a later read of the range refaults it from the file.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    }
}

/// Calls `f(piece, is_last)` for the pieces of `map`, in order, each about `size` bytes and
/// ending just after a `\n` (the last where the map ends), then drops the piece's pages from
/// our resident set ([`drop_pages_behind`]).
///
/// Each piece's end is found only when the piece is reached: finding them all first
/// ([`split_at_newlines`]) touches a page at every boundary, and the kernel maps a whole large
/// folio (up to 2 MB) of the page cache at each: 245 boundaries of a 2 GB log held 430 MB
/// resident before a line was read.
pub fn for_each_piece(map: &Mmap, size: usize, mut f: impl FnMut(&[u8], bool)) {
    let bytes: &[u8] = map;
    let mut start = 0;
    while start < bytes.len() {
        let mut end = start.saturating_add(size.max(1)).min(bytes.len());
        if end < bytes.len() {
            end = memchr::memchr(b'\n', &bytes[end..]).map_or(bytes.len(), |p| end + p + 1);
        }
        let piece = &bytes[start..end];
        f(piece, end == bytes.len());
        drop_pages_behind(map, piece);
        start = end;
    }
}

/// Splits `bytes` into about `n` pieces that each end just after a `\n` (the last piece ends
/// where the input ends).
pub fn split_at_newlines(bytes: &[u8], n: usize) -> Vec<&[u8]> {
    let n = n.max(1);
    let target = bytes.len().div_ceil(n).max(1);
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    while start < bytes.len() {
        let mut end = (start + target).min(bytes.len());
        if end < bytes.len() {
            end = match memchr::memchr(b'\n', &bytes[end..]) {
                Some(p) => end + p + 1,
                None => bytes.len(),
            };
        }
        out.push(&bytes[start..end]);
        start = end;
    }
    out
}

/// A chunk of a streamed input, ending after a `\n` except for the final chunk.
pub struct StreamChunk {
    pub index: usize,
    pub bytes: Vec<u8>,
    pub is_last: bool,
    /// Uncompressed offset of the chunk's first byte.
    pub offset: u64,
}

/// Where a stream stopped being readable (for example a truncated `.gz`).
#[derive(Debug, Error)]
#[error("{path}: read error after {offset} bytes of uncompressed data: {source}")]
pub struct StreamError {
    pub path: PathBuf,
    pub offset: u64,
    pub source: io::Error,
}

/// Chunk buffers the consumers of a [`ChunkReader`] hand back, for it to fill again: a new
/// 8 MiB buffer per chunk is 2,048 pages faulted in by the reading thread, which on two cores
/// shares one with whatever feeds the pipe (`zcat big.log.gz | profilednn report -`).
#[derive(Clone, Default)]
pub struct ChunkPool(std::sync::Arc<PoolInner>);

#[derive(Default)]
struct PoolInner {
    kept: std::sync::Mutex<Vec<Vec<u8>>>,
    /// Buffers handed out again (for the tests).
    reused: std::sync::atomic::AtomicUsize,
}

impl ChunkPool {
    /// At most this many buffers are kept; the rest are freed.
    const KEPT: usize = 8;

    /// Hands a chunk's buffer back.
    pub fn give(&self, buf: Vec<u8>) {
        let mut kept = self.0.kept.lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() < Self::KEPT {
            kept.push(buf);
        }
    }

    fn take(&self) -> Option<Vec<u8>> {
        let b = self.0.kept.lock().unwrap_or_else(|e| e.into_inner()).pop();
        if b.is_some() {
            self.0
                .reused
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        b
    }

    /// How many buffers were handed out again.
    pub fn reused(&self) -> usize {
        self.0.reused.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Reads `reader` in newline-aligned chunks of about `chunk_size` bytes.
pub struct ChunkReader<R: Read> {
    reader: R,
    chunk_size: usize,
    pool: Option<ChunkPool>,
    carry: Vec<u8>,
    index: usize,
    offset: u64,
    done: bool,
    pending_error: Option<StreamError>,
    path: PathBuf,
}

impl<R: Read> ChunkReader<R> {
    pub fn new(reader: R, chunk_size: usize, path: PathBuf) -> Self {
        ChunkReader {
            reader,
            chunk_size: chunk_size.max(64),
            pool: None,
            carry: Vec::new(),
            index: 0,
            offset: 0,
            done: false,
            pending_error: None,
            path,
        }
    }

    /// Fills the buffers handed back to `pool` before it allocates new ones.
    pub fn recycling(mut self, pool: ChunkPool) -> Self {
        self.pool = Some(pool);
        self
    }
}

impl<R: Read> Iterator for ChunkReader<R> {
    type Item = Result<StreamChunk, StreamError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.pending_error.take() {
            return Some(Err(e));
        }
        if self.done {
            return None;
        }
        let carry = std::mem::take(&mut self.carry);
        let want = carry.len() + self.chunk_size;
        // Size the buffer once and fill it in place: a pipe hands out at most 64 KiB per read
        // (1 MiB once `enlarge_pipe` took), and zero-filling the rest of an 8 MiB chunk before
        // each read made reading a pipe quadratic in the chunk size (320 MB/s where `wc -l`
        // reads the same pipe at 1.2 GB/s). A recycled buffer is only zero-filled past what its
        // last chunk held, and its pages are already there.
        let mut buf = match self.pool.as_ref().and_then(ChunkPool::take) {
            Some(mut b) => {
                if b.len() < carry.len() {
                    b.resize(carry.len(), 0);
                }
                b[..carry.len()].copy_from_slice(&carry);
                b
            }
            None => carry,
        };
        let mut filled = want - self.chunk_size;
        if buf.len() < want {
            buf.resize(want, 0);
        }
        let mut eof = false;
        while filled < want {
            match self.reader.read(&mut buf[filled..want]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(r) => filled += r,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    buf.truncate(filled);
                    self.done = true;
                    // Hand out what was read; the error follows on the next call.
                    let err = StreamError {
                        path: self.path.clone(),
                        offset: self.offset + buf.len() as u64,
                        source: e,
                    };
                    if buf.is_empty() {
                        return Some(Err(err));
                    }
                    self.pending_error = Some(err);
                    let chunk = StreamChunk {
                        index: self.index,
                        bytes: buf,
                        is_last: true,
                        offset: self.offset,
                    };
                    self.index += 1;
                    return Some(Ok(chunk));
                }
            }
        }
        buf.truncate(filled);
        if eof {
            self.done = true;
            if buf.is_empty() && self.index > 0 {
                return None;
            }
            let chunk = StreamChunk {
                index: self.index,
                bytes: buf,
                is_last: true,
                offset: self.offset,
            };
            self.index += 1;
            return Some(Ok(chunk));
        }
        let cut = match memchr::memrchr(b'\n', &buf) {
            Some(p) => p + 1,
            None => buf.len(), // one enormous line: pass it on whole
        };
        self.carry = buf[cut..].to_vec();
        buf.truncate(cut);
        let chunk = StreamChunk {
            index: self.index,
            bytes: buf,
            is_last: false,
            offset: self.offset,
        };
        self.offset += chunk.bytes.len() as u64;
        self.index += 1;
        Some(Ok(chunk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_keep_every_byte_end_on_newlines_and_the_last_says_so() {
        let text = b"a\nbb\nccc\ndddd\ne";
        let path = std::env::temp_dir().join(format!("pdnn-pieces-{}.log", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let LogInput::Mapped { map, .. } = LogInput::open(&path).unwrap() else {
            panic!("a plain file is mapped");
        };
        for size in [1, 2, 3, 5, 100] {
            let mut parts: Vec<(Vec<u8>, bool)> = Vec::new();
            for_each_piece(&map, size, |p, last| parts.push((p.to_vec(), last)));
            let all: Vec<u8> = parts.iter().flat_map(|p| p.0.clone()).collect();
            assert_eq!(all, text.to_vec(), "size {size}");
            let (last, rest) = parts.split_last().unwrap();
            assert!(last.1 && rest.iter().all(|p| !p.1 && p.0.last() == Some(&b'\n')));
            // Each piece is at least `size` bytes, up to its line's end.
            assert!(rest.iter().all(|p| p.0.len() >= size), "size {size}");
        }
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn split_keeps_every_byte_and_ends_on_newlines() {
        let text = b"a\nbb\nccc\ndddd\ne";
        for n in 1..8 {
            let parts = split_at_newlines(text, n);
            assert_eq!(parts.concat(), text.to_vec());
            for p in &parts[..parts.len() - 1] {
                assert_eq!(p.last(), Some(&b'\n'));
            }
        }
    }

    #[test]
    fn chunk_reader_reassembles_the_stream() {
        let text: Vec<u8> = (0..1000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .chain(b"tail".iter().copied())
            .collect();
        for size in [64, 100, 4096] {
            let chunks: Vec<_> = ChunkReader::new(&text[..], size, "t".into())
                .map(|c| c.unwrap())
                .collect();
            let joined: Vec<u8> = chunks.iter().flat_map(|c| c.bytes.clone()).collect();
            assert_eq!(joined, text);
            assert!(chunks.last().unwrap().is_last);
            for c in &chunks[..chunks.len() - 1] {
                assert_eq!(c.bytes.last(), Some(&b'\n'));
            }
        }
    }

    /// A pipe-like reader: at most `step` bytes per read, and an `Interrupted` now and then.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
        calls: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.calls += 1;
            if self.calls.is_multiple_of(5) {
                return Err(io::ErrorKind::Interrupted.into());
            }
            let n = self.step.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    /// Buffers handed back are filled again — the one just handed back first, holding the
    /// previous chunk's bytes and a long line carried over — and no byte is lost or repeated:
    /// each chunk is copied out before its buffer goes back, as a consumer does.
    #[test]
    fn recycled_buffers_keep_every_byte_and_ends_on_newlines() {
        let text: Vec<u8> = (0..2000)
            .flat_map(|i| format!("line {i}{}\n", "x".repeat(i % 50)).into_bytes())
            .chain(b"tail".iter().copied())
            .collect();
        for (size, step) in [(64, 1000), (100, 7), (300, 1000), (4096, 13)] {
            let pool = ChunkPool::default();
            // Stale newlines in buffers handed in beforehand: a cut at a byte not read from the
            // stream would show in the joined text.
            for _ in 0..3 {
                pool.give(vec![b'\n'; size * 2]);
            }
            let (mut joined, mut offset) = (Vec::new(), 0u64);
            let reader = Trickle {
                data: &text,
                step,
                calls: 0,
            };
            for c in ChunkReader::new(reader, size, "t".into()).recycling(pool.clone()) {
                let c = c.unwrap();
                assert_eq!(c.offset, offset);
                offset += c.bytes.len() as u64;
                if !c.is_last {
                    assert_eq!(c.bytes.last(), Some(&b'\n'));
                }
                joined.extend_from_slice(&c.bytes);
                pool.give(c.bytes);
            }
            assert_eq!(joined, text, "chunk size {size}");
            assert!(
                pool.reused() > 3,
                "chunk size {size}: no buffer filled again"
            );
        }
    }

    #[test]
    fn short_reads_fill_whole_chunks_and_keep_offsets() {
        let text: Vec<u8> = (0..3000)
            .flat_map(|i| format!("onednn_verbose,exec,{i}\n").into_bytes())
            .collect();
        let reader = Trickle {
            data: &text,
            step: 7,
            calls: 0,
        };
        let chunks: Vec<_> = ChunkReader::new(reader, 4096, "pipe".into())
            .map(|c| c.unwrap())
            .collect();
        let joined: Vec<u8> = chunks.iter().flat_map(|c| c.bytes.clone()).collect();
        assert_eq!(joined, text);
        let mut offset = 0;
        for c in &chunks {
            assert_eq!(c.offset, offset);
            offset += c.bytes.len() as u64;
        }
        // Every chunk but the last is a full buffer cut at its last newline (lines are < 30
        // bytes), not whatever one short read happened to return.
        for c in &chunks[..chunks.len() - 1] {
            assert!(
                c.bytes.len() > 4096 - 30,
                "chunk of {} bytes",
                c.bytes.len()
            );
            assert_eq!(c.bytes.last(), Some(&b'\n'));
        }
    }

    #[test]
    fn truncated_gzip_reports_the_offset_after_the_good_data() {
        use flate2::{write::GzEncoder, Compression};
        use std::io::Write;
        let text: Vec<u8> = (0..20000)
            .flat_map(|i| format!("onednn_verbose,exec,{i}\n").into_bytes())
            .collect();
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(&text).unwrap();
        let gz = enc.finish().unwrap();
        let cut = &gz[..gz.len() / 2];
        let mut good = Vec::new();
        let mut err = None;
        for c in ChunkReader::new(MultiGzDecoder::new(cut), 4096, "x.gz".into()) {
            match c {
                Ok(c) => good.extend_from_slice(&c.bytes),
                Err(e) => err = Some(e),
            }
        }
        let err = err.expect("a truncated gzip must be reported");
        assert!(!good.is_empty());
        assert_eq!(err.offset, good.len() as u64);
        assert!(text.starts_with(&good));
        assert!(err.to_string().contains("x.gz"));
    }
}
