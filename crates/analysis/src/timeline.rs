//! oneDNN busy time per time bin and primitive kind, from the log's timestamps: the timeline
//! view of the HTML report, small whatever the log's size.

use crate::events::{for_each_event, Event};
use crate::EventKind;
use profilednn_verbose::launcher::Launcher;
use profilednn_verbose::LogInput;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct TimeBins {
    /// Width of a bin, ms.
    pub bin_ms: f64,
    /// Kinds, in the order of each bin's values.
    pub kinds: Vec<String>,
    /// Busy ms per bin and kind (`bins[i][k]`).
    pub bins: Vec<Vec<f64>>,
    /// Iteration markers, ms from the start.
    pub markers_ms: Vec<f64>,
    /// Whose timeline this is, when the log held several processes' lines ("rank 0 of 64
    /// ranks"); absent for a single-process log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub of: Option<String>,
}

/// Bins the executions of `input` over `[first_ms, last_ms]` (epoch ms of the first and last
/// execution starts, from the profile). Each execution `[start, start + duration]` is split
/// across the bins it spans, so a bin never holds more than its width of one stream's busy
/// time; bins are added past `last_ms` when the last executions end after it.
pub fn time_bins(input: LogInput, first_ms: f64, last_ms: f64, nbins: usize) -> TimeBins {
    let mut b = Binner::new(first_ms, last_ms, nbins);
    for_each_event(input, |e| b.event(e));
    b.finish(None)
}

/// [`time_bins`] of one rank of a log labelled by `launcher`: its own lines' executions, over
/// its own `[first_ms, last_ms]` (the rank's profile's), read as the log streams. `of` says
/// whose timeline it is, for the page.
pub fn rank_time_bins(
    input: LogInput,
    launcher: Launcher,
    rank: u32,
    (first_ms, last_ms): (f64, f64),
    nbins: usize,
    of: String,
) -> TimeBins {
    let mut b = Binner::new(first_ms, last_ms, nbins);
    crate::ranks::events::for_each_rank_event(input, launcher, |r, e| {
        if r == rank {
            b.event(e)
        }
    });
    b.finish(Some(of))
}

/// The timeline of the log at `log`, read again from disk: a single-process log's over its
/// `timestamps` (the profile's first and last execution starts), a multi-rank log's over its
/// first rank's own (labelled lines, or a torchrun `--log-dir` tree) — the ranks' lines
/// interleaved in one chart would add up to more than 100 % busy, and a chart per rank is not
/// read at 64 ranks. `None` for stdin, several ranks' logs, or a log without timestamps.
pub fn of_log(
    log: &std::path::Path,
    timestamps: Option<(f64, f64)>,
    ranks: &[crate::ranks::RankSet],
    nbins: usize,
) -> Result<Option<TimeBins>, crate::ranks::logs::RankLogError> {
    use crate::ranks::logs::{split_or_open, RankLogError, Source};
    if log.as_os_str() == "-" {
        return Ok(None);
    }
    let set = match ranks {
        [] => {
            return match timestamps {
                Some((first, last)) => {
                    let input = LogInput::open(log).map_err(RankLogError::Open)?;
                    Ok(Some(time_bins(input, first, last, nbins)))
                }
                None => Ok(None),
            }
        }
        [set] => set,
        _ => return Ok(None),
    };
    let Some(first) = set.ranks.iter().min_by_key(|r| r.rank) else {
        return Ok(None);
    };
    let (Some(a), Some(b)) = (first.first_timestamp_ms, first.last_timestamp_ms) else {
        return Ok(None);
    };
    let of = format!("rank {} of {} ranks", first.rank, set.ranks.len());
    Ok(match split_or_open(log)? {
        Source::Labelled {
            launcher, input, ..
        } => Some(rank_time_bins(
            input,
            launcher,
            first.rank,
            (a, b),
            nbins,
            of,
        )),
        Source::Files(files) => match files.files.iter().find(|f| f.0 == first.rank) {
            Some((_, file)) => {
                let input = LogInput::open(file).map_err(RankLogError::Open)?;
                let mut bins = time_bins(input, a, b, nbins);
                bins.of = Some(of);
                Some(bins)
            }
            None => None,
        },
        Source::Single(_) => None,
    })
}

/// Busy time per kind and bin, filled event by event.
struct Binner {
    first_ms: f64,
    nbins: usize,
    bin_ms: f64,
    per_kind: BTreeMap<String, Vec<f64>>,
    markers_ms: Vec<f64>,
    last_seen: f64,
}

impl Binner {
    fn new(first_ms: f64, last_ms: f64, nbins: usize) -> Binner {
        let nbins = nbins.max(1);
        let span = (last_ms - first_ms).max(1e-9);
        Binner {
            first_ms,
            nbins,
            bin_ms: span / nbins as f64,
            per_kind: BTreeMap::new(),
            markers_ms: Vec::new(),
            last_seen: first_ms,
        }
    }

    fn event(&mut self, e: Event) {
        match e {
            Event::Primitive(p) if p.kind == EventKind::Exec => {
                if let Some(ts) = p.timestamp_ms {
                    self.last_seen = ts;
                    let nbins = self.nbins;
                    let v = self
                        .per_kind
                        .entry(p.primitive.kind.to_string())
                        .or_insert_with(|| vec![0.0; nbins]);
                    let start = (ts - self.first_ms).max(0.0);
                    let end = start + p.time_ps.unwrap_or(0) as f64 / 1e9;
                    spread(v, self.bin_ms, start, end);
                }
            }
            Event::Iteration { .. } => self.markers_ms.push(self.last_seen - self.first_ms),
            _ => {}
        }
    }

    fn finish(mut self, of: Option<String>) -> TimeBins {
        let len = self
            .per_kind
            .values()
            .map(Vec::len)
            .max()
            .unwrap_or(self.nbins);
        for v in self.per_kind.values_mut() {
            v.resize(len, 0.0);
        }
        let kinds: Vec<String> = self.per_kind.keys().cloned().collect();
        let bins = (0..len)
            .map(|i| self.per_kind.values().map(|v| v[i]).collect())
            .collect();
        TimeBins {
            bin_ms: self.bin_ms,
            kinds,
            bins,
            markers_ms: self.markers_ms,
            of,
        }
    }
}

/// Adds the interval `[start, end]` (ms from the first bin's start) to `bins`, each bin getting
/// its overlap with the interval; grows `bins` when the interval ends past the last one.
fn spread(bins: &mut Vec<f64>, bin_ms: f64, start: f64, end: f64) {
    let first = (start / bin_ms) as usize;
    if end <= start {
        return;
    }
    // `end` exactly on a boundary belongs to the bin before it.
    let last = ((end / bin_ms).ceil() as usize).max(first + 1) - 1;
    if bins.len() <= last {
        bins.resize(last + 1, 0.0);
    }
    for (i, b) in bins.iter_mut().enumerate().take(last + 1).skip(first) {
        let lo = (i as f64 * bin_ms).max(start);
        let hi = ((i + 1) as f64 * bin_ms).min(end);
        *b += (hi - lo).max(0.0);
    }
}
