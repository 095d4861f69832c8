//! Raw counters filled while scanning: one entry per distinct primitive text.

use crate::durations::Durations;
use foldhash::HashMap;
use profilednn_verbose::line::{classify, Component, Diagnostic, Line, Marker, SkipReason};
use profilednn_verbose::markers::is_iteration_marker;
use std::collections::BTreeMap;

/// Where a line is, before chunk line counts are known: (chunk index, line within chunk).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct LinePos {
    pub chunk: u32,
    pub line: u64,
}

#[derive(Debug, Clone)]
pub struct KeyStats {
    pub calls: u64,
    /// Lines whose last field was not a number (decided later: untimed GPU line or malformed).
    pub untimed: u64,
    pub time_ps: u128,
    pub min_ps: u64,
    pub max_ps: u64,
    /// Every timed call, for the median and p90 of identical calls.
    pub durations: Durations,
    pub first: LinePos,
}

impl KeyStats {
    pub(crate) fn new(pos: LinePos) -> Self {
        KeyStats {
            calls: 0,
            untimed: 0,
            time_ps: 0,
            min_ps: u64::MAX,
            max_ps: 0,
            durations: Durations::default(),
            first: pos,
        }
    }
    // Counts saturate rather than wrap (2^64 lines will not be seen, but nothing here wraps).
    pub(crate) fn add(&mut self, t: Option<u64>) {
        self.calls = self.calls.saturating_add(1);
        match t {
            Some(t) => {
                self.time_ps = self.time_ps.saturating_add(t as u128);
                self.min_ps = self.min_ps.min(t);
                self.max_ps = self.max_ps.max(t);
                self.durations.add(t);
            }
            None => self.untimed = self.untimed.saturating_add(1),
        }
    }
    pub(crate) fn merge(&mut self, o: &KeyStats) {
        self.calls = self.calls.saturating_add(o.calls);
        self.untimed = self.untimed.saturating_add(o.untimed);
        self.time_ps = self.time_ps.saturating_add(o.time_ps);
        self.min_ps = self.min_ps.min(o.min_ps);
        self.max_ps = self.max_ps.max(o.max_ps);
        self.durations.merge(&o.durations);
        self.first = self.first.min(o.first);
    }
}

/// A line kept as an example (malformed lines, diagnostics, info lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptLine {
    pub pos: LinePos,
    pub text: String,
    pub note: &'static str,
}

/// An iteration marker seen in a chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mark {
    pub pos: LinePos,
    /// Execution time in the chunk before the marker.
    pub exec_before_ps: u128,
    /// The first timestamp after the marker and before the chunk's next marker: where the
    /// iteration's wall time starts (a later chunk's [`ChunkSummary::lead_ts`] when `None` and
    /// no marker follows in this chunk).
    pub first_ts_after: Option<f64>,
}

/// Per-chunk figures that need the chunk order to be interpreted.
#[derive(Debug, Clone, Default)]
pub struct ChunkSummary {
    pub lines: u64,
    /// Execution time in this chunk (exec lines only).
    pub exec_ps: u128,
    pub first_ts: Option<f64>,
    pub last_ts: Option<f64>,
    /// The first timestamp before the chunk's first marker (all of the chunk without one):
    /// it starts the wall time of an iteration marked in an earlier chunk.
    pub lead_ts: Option<f64>,
    /// Iteration markers in this chunk, in order.
    pub markers: Vec<Mark>,
}

/// How many kept examples of each sort; counts are always exact.
pub const MAX_EXAMPLES: usize = 50;
pub const MAX_INFO_LINES: usize = 2000;

/// Dialect index into [`Tally::keys`]: bit 0 = `v1` descriptors, bit 1 = graph component.
pub fn dialect_index(version: u32, component: Option<Component>) -> usize {
    usize::from(version >= 1) | (usize::from(component == Some(Component::Graph)) << 1)
}

/// Where a tally's primitive lines are counted: by default its own [`Tally::keys`]; while a
/// labelled log is scanned, a table of keys shared by the ranks of one worker
/// ([`crate::key_table`]), since every rank runs the same few hundred primitives and 64 copies
/// of them do not stay in a core's cache.
pub trait KeyStore {
    /// Counts one call of `key` (the `operation,body` text) in `dialect` ([`dialect_index`]),
    /// first seen at `pos`, that took `time_ps` (`None`: untimed).
    fn add(&mut self, dialect: usize, key: &[u8], pos: LinePos, time_ps: Option<u64>);
}

/// Per dialect, distinct keys and their counters: [`Tally::keys`].
pub type KeyMaps = [HashMap<Box<[u8]>, KeyStats>; 4];

impl KeyStore for KeyMaps {
    #[inline]
    fn add(&mut self, dialect: usize, key: &[u8], pos: LinePos, time_ps: Option<u64>) {
        let map = &mut self[dialect];
        match map.get_mut(key) {
            Some(s) => s.add(time_ps),
            None => {
                let mut s = KeyStats::new(pos);
                s.add(time_ps);
                map.insert(key.into(), s);
            }
        }
    }
}

#[derive(Debug, Default)]
pub struct Tally {
    /// Distinct `operation,body` texts per dialect, with their counters.
    pub keys: KeyMaps,
    pub skipped: BTreeMap<SkipReason, u64>,
    pub malformed_count: u64,
    pub malformed: Vec<KeptLine>,
    pub diagnostics: BTreeMap<Diagnostic, u64>,
    pub diagnostic_examples: Vec<KeptLine>,
    /// Distinct info lines with their first position (marker and component kept in `note`).
    pub info: Vec<KeptLine>,
    pub info_count: u64,
    pub markers_seen: BTreeMap<&'static str, u64>,
    pub chunks: BTreeMap<u32, ChunkSummary>,
    pub bytes: u64,
    /// Primitive lines per marker (`onednn_verbose`, `dnnl_verbose`, `mkldnn_verbose`).
    pub marker_lines: [u64; 3],
}

fn marker_note(m: Marker, c: Option<Component>) -> &'static str {
    match (m, c) {
        (_, Some(Component::Graph)) => "graph",
        (Marker::Onednn, _) => "onednn_verbose",
        (Marker::Dnnl, _) => "dnnl_verbose",
        (Marker::Mkldnn, _) => "mkldnn_verbose",
    }
}

fn lossy_excerpt(line: &[u8]) -> String {
    let cut = &line[..line.len().min(300)];
    String::from_utf8_lossy(cut).into_owned()
}

impl Tally {
    /// Scans one newline-aligned chunk. `is_last` says the chunk ends the input, so an
    /// unterminated final line is a truncated one.
    ///
    /// A chunk index already consumed is continued: its lines are numbered on from the last
    /// ones and its figures grow. A rank's lines demultiplexed from a labelled log arrive in
    /// many pieces, in order; continuing one chunk keeps the tally's size independent of how
    /// many pieces there were (of the log's size).
    pub fn consume_chunk(&mut self, chunk: u32, bytes: &[u8], is_last: bool) {
        let mut summary = self.chunks.remove(&chunk).unwrap_or_default();
        // Out of `self` while the lines borrow it mutably; put back below.
        let mut keys = std::mem::take(&mut self.keys);
        let mut start = 0usize;
        let n = bytes.len();
        while start < n {
            let next = memchr::memchr(b'\n', &bytes[start..]).map_or(n, |p| start + p + 1);
            self.one_line(&mut keys, chunk, &bytes[start..next], is_last, &mut summary);
            start = next;
        }
        self.keys = keys;
        self.bytes += n as u64;
        self.chunks.insert(chunk, summary);
    }

    /// [`Tally::consume_chunk`] of the lines `ranges` of `bytes` (each with its newline, if it
    /// has one), in order, as if they were one chunk: a rank's lines of a piece of a labelled
    /// log, read where they lie, without copying them out.
    ///
    /// The primitive lines are counted in `keys`, not in [`Tally::keys`] (see [`KeyStore`]).
    pub fn consume_lines<K: KeyStore>(
        &mut self,
        keys: &mut K,
        chunk: u32,
        bytes: &[u8],
        ranges: &[std::ops::Range<usize>],
        is_last: bool,
    ) {
        let mut summary = self.chunks.remove(&chunk).unwrap_or_default();
        for r in ranges {
            self.one_line(keys, chunk, &bytes[r.clone()], is_last, &mut summary);
            self.bytes += r.len() as u64;
        }
        self.chunks.insert(chunk, summary);
    }

    /// One line, with its newline if it has one; numbered on from the chunk's last line.
    #[inline]
    fn one_line<K: KeyStore>(
        &mut self,
        keys: &mut K,
        chunk: u32,
        line: &[u8],
        is_last: bool,
        summary: &mut ChunkSummary,
    ) {
        let pos = LinePos {
            chunk,
            line: summary.lines,
        };
        summary.lines += 1;
        match line.split_last() {
            Some((b'\n', text)) => self.line(keys, pos, text, summary),
            _ if is_last => {
                *self
                    .skipped
                    .entry(SkipReason::TruncatedLastLine)
                    .or_default() += 1;
            }
            _ => self.line(keys, pos, line, summary),
        }
    }

    #[inline]
    fn line<K: KeyStore>(
        &mut self,
        keys: &mut K,
        pos: LinePos,
        line: &[u8],
        summary: &mut ChunkSummary,
    ) {
        match classify(line) {
            Line::Primitive {
                head,
                body,
                time_ps,
            } => {
                self.marker_lines[head.marker as usize] += 1;
                let base = line.as_ptr() as usize;
                let from = head.operation.as_ptr() as usize - base;
                let to = body.as_ptr() as usize - base + body.len();
                let key = &line[from..to];
                keys.add(
                    dialect_index(head.version, head.component),
                    key,
                    pos,
                    time_ps,
                );
                if head.operation == b"exec" {
                    if let Some(t) = time_ps {
                        summary.exec_ps = summary.exec_ps.saturating_add(t as u128);
                    }
                }
                if let Some(ts) = head.timestamp {
                    summary.first_ts.get_or_insert(ts);
                    summary.last_ts = Some(ts);
                    match summary.markers.last_mut() {
                        Some(m) => {
                            m.first_ts_after.get_or_insert(ts);
                        }
                        None => {
                            summary.lead_ts.get_or_insert(ts);
                        }
                    }
                }
            }
            Line::Skip(reason) => {
                let marker = reason == SkipReason::Foreign && is_iteration_marker(line);
                let reason = if marker { SkipReason::Marker } else { reason };
                *self.skipped.entry(reason).or_default() += 1;
                if marker {
                    summary.markers.push(Mark {
                        pos,
                        exec_before_ps: summary.exec_ps,
                        first_ts_after: None,
                    });
                    *self
                        .markers_seen
                        .entry(if line.starts_with(b"###") {
                            "### ITER n BEGIN"
                        } else {
                            "profilednn,iteration"
                        })
                        .or_default() += 1;
                }
            }
            Line::Info { head, text } => {
                self.info_count += 1;
                if self.info.len() < MAX_INFO_LINES {
                    let text = String::from_utf8_lossy(text).into_owned();
                    let note = marker_note(head.marker, head.component);
                    if !self.info.iter().any(|k| k.text == text && k.note == note) {
                        self.info.push(KeptLine { pos, text, note });
                    }
                }
            }
            Line::Diagnostic { kind, .. } => {
                *self.diagnostics.entry(kind).or_default() += 1;
                let same_kind = self
                    .diagnostic_examples
                    .iter()
                    .filter(|k| k.note == kind.as_str())
                    .count();
                if same_kind < MAX_EXAMPLES / 5 {
                    let text = lossy_excerpt(line);
                    if !self.diagnostic_examples.iter().any(|k| k.text == text) {
                        self.diagnostic_examples.push(KeptLine {
                            pos,
                            text,
                            note: kind.as_str(),
                        });
                    }
                }
            }
            Line::Malformed { expected, .. } => {
                self.malformed_count += 1;
                if self.malformed.len() < MAX_EXAMPLES {
                    self.malformed.push(KeptLine {
                        pos,
                        text: lossy_excerpt(line),
                        note: expected,
                    });
                }
            }
        }
    }

    /// Adds another tally (from another chunk range) into this one. Order-independent.
    pub fn merge(&mut self, other: Tally) {
        for (mine, theirs) in self.keys.iter_mut().zip(other.keys) {
            for (k, s) in theirs {
                match mine.get_mut(&k) {
                    Some(m) => m.merge(&s),
                    None => {
                        mine.insert(k, s);
                    }
                }
            }
        }
        for (r, c) in other.skipped {
            *self.skipped.entry(r).or_default() += c;
        }
        self.malformed_count += other.malformed_count;
        self.malformed.extend(other.malformed);
        self.malformed.sort_by_key(|k| k.pos);
        self.malformed.truncate(MAX_EXAMPLES);
        for (d, c) in other.diagnostics {
            *self.diagnostics.entry(d).or_default() += c;
        }
        for k in other.diagnostic_examples {
            if !self.diagnostic_examples.iter().any(|m| m.text == k.text) {
                self.diagnostic_examples.push(k);
            }
        }
        self.diagnostic_examples.sort_by_key(|k| k.pos);
        self.info_count += other.info_count;
        for k in other.info {
            match self
                .info
                .iter_mut()
                .find(|m| m.text == k.text && m.note == k.note)
            {
                Some(m) => m.pos = m.pos.min(k.pos),
                None => self.info.push(k),
            }
        }
        self.info.sort_by_key(|k| k.pos);
        self.info.truncate(MAX_INFO_LINES);
        for (m, c) in other.markers_seen {
            *self.markers_seen.entry(m).or_default() += c;
        }
        self.chunks.extend(other.chunks);
        self.bytes += other.bytes;
        for (m, o) in self.marker_lines.iter_mut().zip(other.marker_lines) {
            *m += o;
        }
    }

    /// Absolute 1-based line numbers need the line counts of all earlier chunks.
    pub fn line_resolver(&self) -> impl Fn(LinePos) -> u64 + '_ {
        let mut starts = BTreeMap::new();
        let mut acc = 0u64;
        for (i, c) in &self.chunks {
            starts.insert(*i, acc);
            acc += c.lines;
        }
        move |p: LinePos| starts.get(&p.chunk).copied().unwrap_or(0) + p.line + 1
    }

    pub fn total_lines(&self) -> u64 {
        self.chunks.values().map(|c| c.lines).sum()
    }
}
