//! The log as a stream of events in file order, for views that need the sequence (timeline
//! traces, time bins) rather than totals.
//!
//! Memory stays bounded by the number of *distinct* primitive texts: each is parsed once and
//! shared (`Arc`), whatever the log's size.

use crate::profile::EventKind;
use crate::tally::dialect_index;
use foldhash::HashMap;
use profilednn_model::Primitive;
use profilednn_verbose::input::{ChunkReader, StreamError};
use profilednn_verbose::markers::is_iteration_marker;
use profilednn_verbose::{classify, parse_primitive, Line, LogInput, Syntax};
use std::sync::Arc;

/// One primitive event.
#[derive(Debug, Clone)]
pub struct PrimitiveEvent {
    /// 1-based line number.
    pub line: u64,
    pub kind: EventKind,
    /// Start time, ms since the Unix epoch, when the log has timestamps.
    pub timestamp_ms: Option<f64>,
    /// Duration; `None` for untimed lines.
    pub time_ps: Option<u64>,
    pub primitive: Arc<Primitive>,
}

#[derive(Debug, Clone)]
pub enum Event {
    Primitive(PrimitiveEvent),
    /// An iteration marker line (`profilednn,iteration…`, `### ITER n BEGIN`).
    Iteration {
        line: u64,
        text: String,
    },
}

/// What the pass saw besides events.
#[derive(Debug, Default, Clone)]
pub struct StreamStats {
    pub lines: u64,
    pub events: u64,
    /// Lines that start like verbose lines but could not be read.
    pub malformed: u64,
    pub distinct_primitives: usize,
}

/// Parsed primitives by (dialect, body text); `None` for texts that did not parse.
type Cache = HashMap<(usize, Box<[u8]>), Option<Arc<Primitive>>>;

/// What one line is to the event stream.
pub(crate) enum Read {
    Event(Event),
    /// A line that starts like a verbose line but could not be read.
    Malformed,
    /// Anything else (application output, info lines).
    Other,
}

/// Reads lines into events, each distinct primitive text parsed once.
#[derive(Default)]
pub(crate) struct EventReader {
    cache: Cache,
}

impl EventReader {
    /// The event of `line` (without its newline), line `n` of its log.
    pub(crate) fn read(&mut self, line: &[u8], n: u64) -> Read {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match classify(line) {
            Line::Primitive {
                head,
                body,
                time_ps,
            } => {
                let dialect = dialect_index(head.version, head.component);
                let key = (dialect, Box::<[u8]>::from(body));
                let prim = match self.cache.get(&key) {
                    Some(p) => p.clone(),
                    None => {
                        let syntax = Syntax {
                            v1_descriptors: dialect & 1 == 1,
                            graph: dialect & 2 == 2,
                        };
                        let text = String::from_utf8_lossy(body);
                        let p = parse_primitive(&text, syntax, time_ps.is_some())
                            .ok()
                            .map(Arc::new);
                        self.cache.insert(key, p.clone());
                        p
                    }
                };
                match prim {
                    Some(primitive) => Read::Event(Event::Primitive(PrimitiveEvent {
                        line: n,
                        kind: EventKind::parse(&String::from_utf8_lossy(head.operation)),
                        timestamp_ms: head.timestamp,
                        time_ps,
                        primitive,
                    })),
                    None => Read::Malformed,
                }
            }
            Line::Malformed { .. } => Read::Malformed,
            Line::Skip(_) if is_iteration_marker(line) => Read::Event(Event::Iteration {
                line: n,
                text: String::from_utf8_lossy(line).into_owned(),
            }),
            _ => Read::Other,
        }
    }

    /// Distinct primitive texts seen.
    pub(crate) fn distinct(&self) -> usize {
        self.cache.len()
    }
}

struct Walker<F: FnMut(Event)> {
    reader: EventReader,
    stats: StreamStats,
    f: F,
}

impl<F: FnMut(Event)> Walker<F> {
    fn line(&mut self, line: &[u8]) {
        self.stats.lines += 1;
        let n = self.stats.lines;
        if line.is_empty() {
            return;
        }
        match self.reader.read(line, n) {
            Read::Event(e) => {
                if matches!(e, Event::Primitive(_)) {
                    self.stats.events += 1;
                }
                (self.f)(e)
            }
            Read::Malformed => self.stats.malformed += 1,
            Read::Other => {}
        }
    }
}

/// The lines of a newline-aligned buffer (empty lines included, so numbers stay right).
pub(crate) fn lines_of(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    body.split(|b| *b == b'\n')
        .filter(move |_| !bytes.is_empty())
}

/// Calls `f` for every event of the log, in order. A read error (truncated gzip) stops the
/// pass after delivering everything before it, and is returned with the stats so far.
pub fn for_each_event(input: LogInput, f: impl FnMut(Event)) -> (StreamStats, Option<StreamError>) {
    let mut w = Walker {
        reader: EventReader::default(),
        stats: StreamStats::default(),
        f,
    };
    let mut error = None;
    match input {
        LogInput::Mapped { map, .. } => {
            // 8 MB newline-aligned pieces, each dropped from the resident set once read, so
            // memory does not grow with the log (the page cache keeps the pages).
            profilednn_verbose::input::for_each_piece(&map, 8 << 20, |piece, _| {
                lines_of(piece).for_each(|l| w.line(l))
            });
        }
        LogInput::Empty { .. } => {}
        LogInput::Stream { path, reader, .. } => {
            for chunk in ChunkReader::new(reader, 8 << 20, path) {
                match chunk {
                    Ok(c) => {
                        lines_of(&c.bytes).for_each(|l| w.line(l));
                    }
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
        }
    }
    w.stats.distinct_primitives = w.reader.distinct();
    (w.stats, error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn events_come_in_file_order_with_line_numbers() {
        let text = "app output\n\nonednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:ab::f0 dst:f32::blocked:ba::f0,,,8x8,0.5\nprofilednn,iteration,1\nonednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:ab::f0 dst:f32::blocked:ba::f0,,,8x8,0.25\nonednn_verbose,v1,primitive,exec,cpu,reorder,broken\n";
        let dir = std::env::temp_dir().join(format!("pdnn-events-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("e.log");
        std::fs::File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let mut seen = Vec::new();
        let (stats, err) = for_each_event(LogInput::open(&path).unwrap(), |e| {
            seen.push(match e {
                Event::Primitive(p) => (p.line, p.time_ps),
                Event::Iteration { line, .. } => (line, None),
            })
        });
        assert!(err.is_none());
        assert_eq!(
            seen,
            vec![(3, Some(500_000_000)), (4, None), (5, Some(250_000_000))]
        );
        assert_eq!((stats.lines, stats.events, stats.malformed), (6, 2, 1));
        assert_eq!(stats.distinct_primitives, 2, "one valid text, one broken");
    }
}
