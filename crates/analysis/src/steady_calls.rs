//! The exec calls of one steady-state iteration, gathered while a log's events stream by.
//!
//! The iteration replayed (`replay`, `plan`) is the one between the last two iteration
//! markers. Holding every call of the log to cut it out at the end makes memory grow with the
//! log (8 bytes a call, per rank for a labelled log); once two markers are seen the calls
//! before the second-to-last can never be in it, and are let go.

use crate::events::Event;
use crate::profile::{EventKind, Profile};

/// A log's steady-state iteration: its exec calls in order, and how it was found (what `replay`
/// replays and `plan` plans).
#[derive(Debug, Clone, Default)]
pub struct Steady {
    pub calls: Vec<Arc<Primitive>>,
    pub from: String,
}

/// The steady-state iteration of the log `input` (`profile` is the log's, for its iteration
/// count): between the last two iteration markers; else the last `1/N` of the exec calls when
/// the log's iteration count `N` divides them (the repeating pattern); else the whole log.
pub fn steady_iteration(input: profilednn_verbose::LogInput, profile: &Profile) -> Steady {
    let mut steady = SteadyCalls::default();
    crate::events::for_each_event(input, |e| steady.event(e));
    let (calls, from) = steady.finish(iteration_count(profile));
    Steady { calls, from }
}

/// The iteration count [`SteadyCalls::finish`] takes: the profile's (1 when it found none).
pub fn iteration_count(profile: &Profile) -> u64 {
    profile.iterations.as_ref().map_or(1, |i| i.count)
}
use profilednn_model::Primitive;
use std::sync::Arc;

/// The calls that may still make up the steady iteration, and the markers seen.
#[derive(Debug, Default)]
pub struct SteadyCalls {
    /// Exec calls from the second-to-last marker on (all of them before two markers).
    calls: Vec<Arc<Primitive>>,
    /// Calls let go from the front of `calls`.
    dropped: usize,
    /// The last two distinct marker positions (in calls since the start).
    marks: [usize; 2],
    /// Distinct marker positions seen (markers with no call between them count once).
    distinct_marks: usize,
}

impl SteadyCalls {
    /// Takes the next event of the log.
    pub fn event(&mut self, e: Event) {
        match e {
            Event::Primitive(p) if p.kind == EventKind::Exec => self.calls.push(p.primitive),
            Event::Iteration { .. } => self.mark(),
            _ => {}
        }
    }

    fn mark(&mut self) {
        let at = self.dropped + self.calls.len();
        if self.distinct_marks > 0 && self.marks[1] == at {
            return;
        }
        self.marks = [self.marks[1], at];
        self.distinct_marks += 1;
        if self.distinct_marks >= 2 {
            // The iteration can only start at the second-to-last marker or later.
            let gone = self.marks[0] - self.dropped;
            self.calls.drain(..gone);
            self.dropped += gone;
        }
    }

    /// The steady iteration's calls, in log order, and how it was found: between the last two
    /// iteration markers; else the last `1/N` of the exec calls when the log's iteration count
    /// `N` (the profile's iterations, [`iteration_count`]) divides them (the repeating
    /// pattern); else the whole log.
    pub fn finish(mut self, iterations: u64) -> (Vec<Arc<Primitive>>, String) {
        if self.distinct_marks >= 2 {
            let (a, b) = (self.marks[0] - self.dropped, self.marks[1] - self.dropped);
            self.calls.truncate(b);
            self.calls.drain(..a);
            return (
                self.calls,
                format!(
                    "between the last two iteration markers ({} markers)",
                    self.distinct_marks
                ),
            );
        }
        let mut calls = self.calls;
        let n = iterations.max(1) as usize;
        if n > 1 && calls.len().is_multiple_of(n) {
            let per = calls.len() / n;
            let tail = calls.split_off(calls.len() - per);
            return (
                tail,
                format!("the last of {n} iterations of the repeating call pattern"),
            );
        }
        (
            calls,
            "the whole log (no iteration boundaries found)".into(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::PrimitiveEvent;

    /// The cut made with every call held: the reference the streaming one must match.
    fn reference(events: &[Option<usize>], n: u64) -> (Vec<usize>, String) {
        let mut calls = Vec::new();
        let mut marks = Vec::new();
        for e in events {
            match e {
                Some(c) => calls.push(*c),
                None => marks.push(calls.len()),
            }
        }
        marks.dedup();
        if marks.len() >= 2 {
            let (a, b) = (marks[marks.len() - 2], marks[marks.len() - 1]);
            let how = format!(
                "between the last two iteration markers ({} markers)",
                marks.len()
            );
            return (calls[a..b].to_vec(), how);
        }
        let n = n.max(1) as usize;
        if n > 1 && calls.len() % n == 0 {
            let per = calls.len() / n;
            let how = format!("the last of {n} iterations of the repeating call pattern");
            return (calls[calls.len() - per..].to_vec(), how);
        }
        (
            calls,
            "the whole log (no iteration boundaries found)".into(),
        )
    }

    /// `Some(i)`: an exec call of primitive i (the i-th distinct one); `None`: a marker.
    fn streamed(events: &[Option<usize>], n: u64) -> (Vec<usize>, String) {
        let prims: Vec<Arc<Primitive>> = (0..8)
            .map(|i| {
                let text = format!("cpu,reorder,jit:uni,undef,src:f32::blocked:ab::f0 dst:f32::blocked:ba::f0,,,{}x8", i + 1);
                let syntax = profilednn_verbose::Syntax {
                    v1_descriptors: true,
                    graph: false,
                };
                Arc::new(profilednn_verbose::parse_primitive(&text, syntax, true).unwrap())
            })
            .collect();
        let mut s = SteadyCalls::default();
        for (line, e) in events.iter().enumerate() {
            s.event(match e {
                Some(c) => Event::Primitive(PrimitiveEvent {
                    line: line as u64,
                    kind: EventKind::Exec,
                    timestamp_ms: None,
                    time_ps: Some(1),
                    primitive: prims[*c].clone(),
                }),
                None => Event::Iteration {
                    line: line as u64,
                    text: "### ITER 0 BEGIN".into(),
                },
            });
        }
        let (calls, how) = s.finish(n.max(1));
        let of = |p: &Arc<Primitive>| prims.iter().position(|q| Arc::ptr_eq(p, q)).unwrap();
        (calls.iter().map(of).collect(), how)
    }

    #[test]
    fn the_streamed_cut_is_the_whole_logs() {
        let (m, c) = (None, Some);
        let cases: Vec<(Vec<Option<usize>>, u64)> = vec![
            (vec![], 0),
            (vec![c(1), c(2)], 0),
            (vec![c(1), c(2), c(1), c(2)], 2),
            (vec![c(1), c(2), c(3)], 2),
            (vec![m, c(1)], 0),
            (vec![m, m, c(1), c(2), m, m, c(3), m], 0),
            (
                vec![c(0), m, c(1), c(2), m, c(3), c(4), c(5), m, c(6), m, c(7)],
                3,
            ),
            (vec![m, c(1), m, c(2), c(3), m, m], 0),
            (
                vec![c(1), c(1), m, c(2), c(2), c(2), m, c(3), m, c(4), c(4)],
                0,
            ),
        ];
        for (events, n) in cases {
            assert_eq!(
                streamed(&events, n),
                reference(&events, n),
                "{events:?}, {n} iterations"
            );
        }
        // A long log keeps only the calls from its second-to-last marker.
        let mut events = Vec::new();
        for _ in 0..1000 {
            events.push(m);
            events.extend((0..8).map(c));
        }
        let mut s = SteadyCalls::default();
        let (calls, _) = streamed(&events, 0);
        assert_eq!(calls, (0..8).collect::<Vec<_>>());
        for e in &events {
            if e.is_none() {
                s.mark();
            }
        }
        assert_eq!(s.distinct_marks, 1, "no call between them: one marker");
    }
}
