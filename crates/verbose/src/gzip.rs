//! Gzip recognised by its magic bytes, not by the file name: logs are often compressed
//! whatever they are called, and streams (stdin) have no name.

use flate2::read::MultiGzDecoder;
use std::io::{self, Read};

/// Whether bytes that start a file are gzip's magic number: inputs are recognised by content,
/// never by name (`zcat`-ed logs renamed `.gz`, compressed logs without the suffix).
pub fn is_gzip(head: &[u8]) -> bool {
    head.starts_with(&[0x1f, 0x8b])
}

/// `raw` decompressed when it starts with the gzip magic, as it is otherwise: for streams that
/// cannot be rewound (stdin) and for files read once from start to end (the PyTorch trace).
pub fn decompressed<R: Read + Send + 'static>(raw: R) -> impl Read + Send {
    GzipSniff::new(raw)
}

/// Reads a stream, decompressing it when it starts with the gzip magic.
pub(crate) struct GzipSniff<R: Read> {
    inner: Option<Box<dyn Read + Send>>,
    raw: Option<R>,
}

impl<R: Read + Send + 'static> GzipSniff<R> {
    pub(crate) fn new(raw: R) -> Self {
        GzipSniff {
            inner: None,
            raw: Some(raw),
        }
    }
}

impl<R: Read + Send + 'static> Read for GzipSniff<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.inner.is_none() {
            let mut raw = self.raw.take().expect("raw reader");
            let mut head = [0u8; 2];
            let mut n = 0;
            while n < 2 {
                let r = raw.read(&mut head[n..])?;
                if r == 0 {
                    break;
                }
                n += r;
            }
            let prefix = io::Cursor::new(head[..n].to_vec());
            let chained = prefix.chain(raw);
            self.inner = Some(if is_gzip(&head[..n]) {
                Box::new(MultiGzDecoder::new(io::BufReader::new(chained)))
            } else {
                Box::new(chained)
            });
        }
        self.inner.as_mut().unwrap().read(buf)
    }
}
