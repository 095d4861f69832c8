//! A profile: every distinct primitive of a log with its calls and time, plus what the log said
//! about itself and what could not be read.

use crate::durations::Durations;
use crate::iterations::{self, Iterations};
use crate::metadata::RunMetadata;
use crate::scan::ScanOutput;
use crate::tally::{LinePos, Tally};
use foldhash::HashMap;
use profilednn_cost::{Cost, Unknown};
use profilednn_model::Primitive;
use profilednn_verbose::{parse_primitive, SkipReason, Syntax};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Whether a line recorded an execution or a creation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Exec,
    /// A primitive creation; the string is the cache outcome (`cache_miss`, `cache_hit`, …),
    /// empty for builds without a primitive cache and for MKL-DNN 0.x/1.0.
    Create(String),
}

impl EventKind {
    pub fn parse(op: &str) -> EventKind {
        match op {
            "exec" => EventKind::Exec,
            o => EventKind::Create(
                o.split_once(':')
                    .map(|(_, c)| c.to_string())
                    .unwrap_or_default(),
            ),
        }
    }
    pub fn label(&self) -> String {
        match self {
            EventKind::Exec => "exec".into(),
            EventKind::Create(c) if c.is_empty() => "create".into(),
            EventKind::Create(c) => format!("create:{c}"),
        }
    }
}

/// One distinct primitive and event with its counters.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub event: EventKind,
    pub primitive: Arc<Primitive>,
    pub calls: u64,
    /// Calls whose line carried no time (asynchronous GPU executions in DNNL 1.x).
    pub untimed_calls: u64,
    pub time_ps: u128,
    pub min_ps: u64,
    pub max_ps: u64,
    /// The calls' times, for their median and p90 (`min`/`max` cannot tell one cold call from
    /// half the calls slowed down by a busy machine).
    #[serde(skip)]
    pub durations: Durations,
    /// 1-based line of the first occurrence.
    pub first_line: u64,
    /// Work and traffic of one call (from the cost model), or why it is unknown.
    pub cost: Result<Cost, Unknown>,
}

impl Entry {
    /// Adds another entry's counters for the same primitive and event.
    fn absorb(&mut self, o: &Entry) {
        self.calls = self.calls.saturating_add(o.calls);
        self.untimed_calls = self.untimed_calls.saturating_add(o.untimed_calls);
        self.time_ps = self.time_ps.saturating_add(o.time_ps);
        self.min_ps = self.min_ps.min(o.min_ps);
        self.max_ps = self.max_ps.max(o.max_ps);
        self.durations.merge(&o.durations);
        self.first_line = self.first_line.min(o.first_line);
    }

    pub fn time_ms(&self) -> f64 {
        self.time_ps as f64 / 1e9
    }
}

/// A line that started like a verbose line but could not be read.
#[derive(Debug, Clone, Serialize)]
pub struct MalformedLine {
    /// 1-based line number (the first one, when `count` > 1).
    pub line: u64,
    /// How many lines had this same text and problem.
    pub count: u64,
    pub expected: String,
    pub text: String,
}

/// Lines of the log by what became of them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LineCounts {
    pub total: u64,
    pub exec: u64,
    pub create: u64,
    pub info: u64,
    pub diagnostics: u64,
    pub malformed: u64,
    /// Skipped lines by reason (`foreign`, `torn`, `invalid_utf8`, …).
    pub skipped: BTreeMap<String, u64>,
}

impl LineCounts {
    pub fn skipped_total(&self) -> u64 {
        self.skipped.values().sum()
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    /// The log(s) this profile was built from.
    pub sources: Vec<String>,
    pub bytes: u64,
    pub lines: LineCounts,
    pub entries: Vec<Entry>,
    /// Distinct malformed lines (at most a few dozen kept; `lines.malformed` is exact).
    pub malformed: Vec<MalformedLine>,
    pub diagnostics: BTreeMap<String, u64>,
    pub diagnostic_examples: Vec<(u64, String, String)>,
    pub metadata: RunMetadata,
    pub iterations: Option<Iterations>,
    /// First and last timestamp (ms since the epoch) when the log has them.
    pub timestamps: Option<(f64, f64)>,
    /// Why reading stopped early, if it did (everything before it is counted).
    pub read_error: Option<String>,
}

/// Primitives parsed from their text (by dialect, whether the lines were timed, and the text
/// after the operation), with their cost, or why the text does not parse.
#[derive(Default)]
pub struct Parsed {
    /// By dialect and whether timed (`dialect * 2 + timed`): text → primitive. Looked up by
    /// the text where it lies: a rank's few hundred keys, 64 ranks, cost an allocation each.
    by_text: [HashMap<Box<[u8]>, ParsedPrimitive>; 8],
    /// Each distinct primitive, once: texts that read as equal primitives share one
    /// allocation, so a profile tells its primitives apart by allocation rather than by
    /// hashing and comparing whole primitives.
    by_value: foldhash::HashSet<Arc<Primitive>>,
}

type ParsedPrimitive = Result<(Arc<Primitive>, Result<Cost, Unknown>), String>;

impl Parsed {
    /// The primitive of `body` (lines of `dialect`, read with `syntax`, timed or not), parsed
    /// and costed the first time its text is seen: a primitive that equals one already parsed
    /// shares its allocation.
    fn read(
        &mut self,
        dialect: usize,
        syntax: Syntax,
        timed: bool,
        body: &str,
    ) -> &ParsedPrimitive {
        let by_text = &mut self.by_text[dialect * 2 + usize::from(timed)];
        if !by_text.contains_key(body.as_bytes()) {
            let read = parse_primitive(body, syntax, timed)
                .map(|prim| {
                    let cost = profilednn_cost::cost(&prim);
                    let prim = match self.by_value.get(&prim) {
                        Some(same) => same.clone(),
                        None => {
                            let prim = Arc::new(prim);
                            self.by_value.insert(prim.clone());
                            prim
                        }
                    };
                    (prim, cost)
                })
                .map_err(|e| e.to_string());
            by_text.insert(body.as_bytes().into(), read);
        }
        &by_text[body.as_bytes()]
    }
}

/// Adds `entry` to `entries`, or to the entry of the same event and primitive already there
/// (`index` finds it): one entry per event and distinct primitive, whatever the texts.
fn add_entry(
    index: &mut HashMap<(EventKind, usize), usize>,
    entries: &mut Vec<Entry>,
    entry: Entry,
) {
    let at = (entry.event.clone(), Arc::as_ptr(&entry.primitive) as usize);
    match index.get(&at) {
        Some(&i) => entries[i].absorb(&entry),
        None => {
            index.insert(at, entries.len());
            entries.push(entry);
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ProfileOptions {
    /// Iterations in the log, when the user knows it.
    pub iterations: Option<u64>,
}

impl Profile {
    pub fn from_scan(
        source: impl Into<String>,
        scan: ScanOutput,
        opts: &ProfileOptions,
    ) -> Profile {
        Profile::from_scan_cached(source, scan, opts, &mut Parsed::default())
    }

    /// [`Profile::from_scan`] with the primitives of `parsed` (see
    /// [`Profile::from_tally_cached`]).
    pub fn from_scan_cached(
        source: impl Into<String>,
        scan: ScanOutput,
        opts: &ProfileOptions,
        parsed: &mut Parsed,
    ) -> Profile {
        let mut p = Profile::from_tally_cached(source.into(), &scan.tally, opts, parsed);
        p.read_error = scan.read_error.map(|e| e.to_string());
        // A plain log cut mid-line (a process killed while writing, a copy stopped early) is cut
        // like a truncated gzip: oneDNN ends every line with a newline.
        let cut_mid_line = p
            .lines
            .skipped
            .contains_key(SkipReason::TruncatedLastLine.as_str());
        if p.read_error.is_some() || cut_mid_line {
            p.iterations = p.iterations.take().and_then(Iterations::without_cut_last);
        }
        p
    }

    pub fn from_tally(source: String, t: &Tally, opts: &ProfileOptions) -> Profile {
        Profile::from_tally_cached(source, t, opts, &mut Parsed::default())
    }

    /// [`Profile::from_tally`], taking the primitives already parsed from `parsed` (and
    /// adding the new ones): the ranks of a run share their primitives, which are parsed and
    /// costed once for all of them and share one [`Primitive`] in memory.
    pub fn from_tally_cached(
        source: String,
        t: &Tally,
        opts: &ProfileOptions,
        parsed: &mut Parsed,
    ) -> Profile {
        let line_of = t.line_resolver();
        let (mut lines, mut malformed) = lines_of(t, &line_of);

        // By event and primitive; a primitive by its allocation, one per distinct primitive
        // (see Parsed).
        let mut index: HashMap<(EventKind, usize), usize> = HashMap::default();
        let mut entries: Vec<Entry> = Vec::new();
        for (dialect, map) in t.keys.iter().enumerate() {
            let syntax = Syntax {
                v1_descriptors: dialect & 1 == 1,
                graph: dialect & 2 == 2,
            };
            for (key, s) in map {
                let text = String::from_utf8_lossy(key);
                let (op, body) = text.split_once(',').unwrap_or((&text, ""));
                let timed = s.untimed < s.calls;
                match parsed.read(dialect, syntax, timed, body) {
                    Ok((prim, cost)) => {
                        let event = EventKind::parse(op);
                        match event {
                            EventKind::Exec => lines.exec += s.calls,
                            EventKind::Create(_) => lines.create += s.calls,
                        }
                        let prim = prim.clone();
                        let first_line = line_of(s.first);
                        let entry = Entry {
                            event,
                            primitive: prim,
                            calls: s.calls,
                            untimed_calls: s.untimed,
                            time_ps: s.time_ps,
                            min_ps: s.min_ps,
                            max_ps: s.max_ps,
                            durations: s.durations.clone(),
                            first_line,
                            cost: cost.clone(),
                        };
                        add_entry(&mut index, &mut entries, entry);
                    }
                    Err(e) => {
                        lines.malformed += s.calls;
                        malformed.push(MalformedLine {
                            line: line_of(s.first),
                            count: s.calls,
                            expected: e.clone(),
                            text: text.chars().take(300).collect(),
                        });
                    }
                }
            }
        }
        malformed.sort_by_key(|m| m.line);
        // Deterministic order: by first appearance in the log.
        entries.sort_by(|a, b| {
            a.first_line
                .cmp(&b.first_line)
                .then_with(|| a.event.cmp(&b.event))
        });

        let diagnostics = t
            .diagnostics
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), *v))
            .collect();
        let diagnostic_examples = t
            .diagnostic_examples
            .iter()
            .map(|k| (line_of(k.pos), k.note.to_string(), k.text.clone()))
            .collect();
        let timestamps = timestamp_span(t);
        let compute_calls = entries
            .iter()
            .filter(|e| e.event == EventKind::Exec && e.primitive.kind.is_compute_heavy())
            .map(|e| e.calls);
        let iterations = iterations::detect(t, compute_calls, opts.iterations);
        Profile {
            sources: vec![source],
            bytes: t.bytes,
            lines,
            entries,
            malformed,
            diagnostics,
            diagnostic_examples,
            metadata: RunMetadata::from_tally(t),
            iterations,
            timestamps,
            read_error: None,
        }
    }

    /// Total execution time (exec lines), ps.
    pub fn exec_time_ps(&self) -> u128 {
        self.entries
            .iter()
            .filter(|e| e.event == EventKind::Exec)
            .map(|e| e.time_ps)
            .sum()
    }

    pub fn exec_time_ms(&self) -> f64 {
        self.exec_time_ps() as f64 / 1e9
    }

    /// Total creation time (create lines), ps.
    pub fn create_time_ps(&self) -> u128 {
        self.entries
            .iter()
            .filter(|e| e.event != EventKind::Exec)
            .map(|e| e.time_ps)
            .sum()
    }

    pub fn exec_calls(&self) -> u64 {
        self.lines.exec
    }

    /// The one view of logs that ran side by side: the profile itself for one log, else their
    /// [`merge`](Profile::merge). Merging costs a pass over every entry, so a command computes
    /// this once and hands it to [`summarize_merged`](crate::summary::summarize_merged), the
    /// advice and the HTML page.
    pub fn merged(profiles: &[Profile]) -> std::borrow::Cow<'_, Profile> {
        match profiles {
            [one] => std::borrow::Cow::Borrowed(one),
            _ => std::borrow::Cow::Owned(Profile::merge(profiles)),
        }
    }

    /// Several profiles (for example one log per rank) merged into one: same primitives add up.
    pub fn merge(profiles: &[Profile]) -> Profile {
        let mut out = profiles[0].clone();
        let mut index: HashMap<(EventKind, Arc<Primitive>), usize> = out
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| ((e.event.clone(), e.primitive.clone()), i))
            .collect();
        for p in &profiles[1..] {
            out.sources.extend(p.sources.iter().cloned());
            out.bytes = out.bytes.saturating_add(p.bytes);
            let l = &mut out.lines;
            for (sum, x) in [
                (&mut l.total, p.lines.total),
                (&mut l.exec, p.lines.exec),
                (&mut l.create, p.lines.create),
                (&mut l.info, p.lines.info),
                (&mut l.diagnostics, p.lines.diagnostics),
                (&mut l.malformed, p.lines.malformed),
            ] {
                *sum = sum.saturating_add(x);
            }
            for (k, v) in &p.lines.skipped {
                let c = l.skipped.entry(k.clone()).or_default();
                *c = c.saturating_add(*v);
            }
            for e in &p.entries {
                match index.get(&(e.event.clone(), e.primitive.clone())) {
                    Some(&i) => out.entries[i].absorb(e),
                    None => {
                        index.insert((e.event.clone(), e.primitive.clone()), out.entries.len());
                        out.entries.push(e.clone());
                    }
                }
            }
            out.malformed.extend(p.malformed.iter().cloned());
            for (k, v) in &p.diagnostics {
                *out.diagnostics.entry(k.clone()).or_default() += v;
            }
            for (dst, src) in [
                (&mut out.metadata.versions, &p.metadata.versions),
                (&mut out.metadata.isa, &p.metadata.isa),
                (&mut out.metadata.runtimes, &p.metadata.runtimes),
                (&mut out.metadata.formats, &p.metadata.formats),
            ] {
                for s in src {
                    if !dst.contains(s) {
                        dst.push(s.clone());
                    }
                }
            }
            out.metadata.runs += p.metadata.runs;
            if out.read_error.is_none() {
                out.read_error.clone_from(&p.read_error);
            }
        }
        out.iterations = merge_iterations(profiles);
        // The span that covers every log's timestamps; unknown when a log has none.
        out.timestamps = profiles
            .iter()
            .map(|p| p.timestamps)
            .collect::<Option<Vec<_>>>()
            .and_then(|v| v.into_iter().reduce(|a, b| (a.0.min(b.0), a.1.max(b.1))));
        out
    }
}

/// Iterations of logs merged side by side (ranks running concurrently): the logs' iteration `i`
/// summed, when every log has the same count; `None` when they differ (a per-iteration figure
/// of the merged view would divide one log's count into all logs' time).
fn merge_iterations(profiles: &[Profile]) -> Option<Iterations> {
    let first = profiles[0].iterations.as_ref()?;
    let all: Vec<&Iterations> = profiles
        .iter()
        .map(|p| p.iterations.as_ref())
        .collect::<Option<_>>()?;
    if all.iter().any(|i| i.count != first.count) {
        return None;
    }
    let mut out = first.clone();
    let same_len = all
        .iter()
        .all(|i| i.per_iteration_ms.len() == first.per_iteration_ms.len());
    out.per_iteration_ms = if same_len {
        (0..first.per_iteration_ms.len())
            .map(|k| all.iter().fold(0.0, |a, i| a + i.per_iteration_ms[k]))
            .collect()
    } else {
        Vec::new()
    };
    let sum = |f: fn(&Iterations) -> Option<f64>| -> Option<f64> {
        all.iter().filter_map(|i| f(i)).reduce(|a, b| a + b)
    };
    out.before_first_ms = sum(|i| i.before_first_ms);
    out.partial_last_ms = sum(|i| i.partial_last_ms);
    Some(out)
}

impl Profile {
    /// The minibatch size of a run: the most common `mb` of its desc-style problems.
    pub fn mini_batch(&self) -> Option<u64> {
        let mut count: std::collections::BTreeMap<u64, u64> = Default::default();
        for e in &self.entries {
            if let Some(mb) = mb_field(&e.primitive.problem) {
                *count.entry(mb).or_default() += e.calls;
            }
        }
        count.into_iter().max_by_key(|(_, c)| *c).map(|(mb, _)| mb)
    }
}

/// The `mb` field of a desc-style problem.
pub(crate) fn mb_field(problem: &str) -> Option<u64> {
    let at = problem.find("mb")?;
    let digits: String = problem[at + 2..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// The tally's line counts, and its malformed lines (those of the primitives that do not
/// parse are added by the caller).
fn lines_of(t: &Tally, line_of: &dyn Fn(LinePos) -> u64) -> (LineCounts, Vec<MalformedLine>) {
    let mut lines = LineCounts {
        total: t.total_lines(),
        info: t.info_count,
        ..Default::default()
    };
    lines.diagnostics = t.diagnostics.values().sum();
    for r in SkipReason::ALL {
        if let Some(c) = t.skipped.get(&r) {
            lines.skipped.insert(r.as_str().to_string(), *c);
        }
    }
    lines.malformed = t.malformed_count;
    let malformed: Vec<MalformedLine> = t
        .malformed
        .iter()
        .map(|k| MalformedLine {
            line: line_of(k.pos),
            count: 1,
            expected: k.note.to_string(),
            text: k.text.clone(),
        })
        .collect();
    (lines, malformed)
}

/// The first and the last timestamp of the tally's lines (epoch ms), if they carry any.
fn timestamp_span(t: &Tally) -> Option<(f64, f64)> {
    let firsts = t.chunks.values().filter_map(|c| c.first_ts);
    let lasts = t.chunks.values().filter_map(|c| c.last_ts);
    match (firsts.reduce(f64::min), lasts.reduce(f64::max)) {
        (Some(a), Some(b)) => Some((a, b)),
        _ => None,
    }
}

#[cfg(test)]
mod overflow_tests {
    use super::*;
    use crate::Tally;

    fn profile(log: &str) -> Profile {
        let mut t = Tally::default();
        t.consume_chunk(0, log.as_bytes(), true);
        Profile::from_tally("test".into(), &t, &ProfileOptions::default())
    }

    #[test]
    fn a_huge_inner_product_is_uncosted_not_wrapped() {
        let p = profile("onednn_verbose,v1,primitive,exec,cpu,inner_product,jit,forward_training,src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 dst:f32::blocked:ab::f0,,,mb1048576ic1048576ih1024iw1024oc1048576,1.5\n");
        assert_eq!(p.entries.len(), 1);
        assert_eq!(
            p.entries[0].cost.as_ref().unwrap_err().reason,
            "too large to count: the operation count overflows 64 bits"
        );
    }

    #[test]
    fn merged_call_counts_and_times_saturate() {
        let line = "onednn_verbose,v1,primitive,exec,cpu,eltwise,jit,forward_training,data:f32::blocked:ab::f0,,alg:eltwise_relu,2x2,1\n";
        let mut a = profile(line);
        a.entries[0].calls = u64::MAX - 1;
        a.entries[0].time_ps = u128::MAX - 1;
        a.lines.exec = u64::MAX;
        let b = a.clone();
        let m = Profile::merge(&[a, b]);
        assert_eq!(m.entries[0].calls, u64::MAX);
        assert_eq!(m.entries[0].time_ps, u128::MAX);
        assert_eq!(m.lines.exec, u64::MAX);
        let mut w = crate::Work::default();
        w.add(&m.entries[0]);
        w.add(&m.entries[0]);
        assert_eq!(w.calls, u64::MAX);
        assert_eq!(w.time_ps, u128::MAX);
    }
}
