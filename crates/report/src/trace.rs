//! Chrome trace-event JSON (what Perfetto and chrome://tracing open), written as events arrive
//! so a multi-GB log never builds the trace in memory.

use profilednn_analysis::events::{Event, PrimitiveEvent};
use profilednn_analysis::EventKind;
use profilednn_cost::Cost;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::io::{self, Write};

/// The trace's schema, in `otherData.schema` (the trace-event format's place for a writer's own
/// fields: Perfetto and chrome://tracing ignore it), so a trace says which tool and version wrote
/// it like every other ProfileDNN document (docs/trace-json.md).
pub const SCHEMA: &str = "profilednn.trace.v1";

/// Where events are placed on the time axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeline {
    /// From the log's timestamps (`ONEDNN_VERBOSE_TIMESTAMP=1`): gaps are real.
    Timestamps,
    /// No timestamps: creations and executions laid end to end from their durations, in log
    /// order (gaps unknown).
    EndToEnd,
}

impl Timeline {
    pub fn describe(&self) -> &'static str {
        match self {
            Timeline::Timestamps => "from the log's timestamps",
            Timeline::EndToEnd => {
                "laid end to end from durations (the log has no timestamps; gaps between primitives are not shown)"
            }
        }
    }
}

pub struct TraceWriter<W: Write> {
    out: W,
    first: bool,
    timeline: Option<Timeline>,
    origin_ms: f64,
    /// End of the previous event, µs (end-to-end placement, and for untimestamped lines).
    cursor_us: f64,
    costs: HashMap<usize, Option<Cost>>,
    pub events: u64,
}

const PID: u32 = 1;
const TID_EXEC: u32 = 1;
const TID_CREATE: u32 = 2;

impl<W: Write> TraceWriter<W> {
    pub fn new(mut out: W, source: &str) -> io::Result<Self> {
        out.write_all(b"{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n")?;
        let mut w = TraceWriter {
            out,
            first: true,
            timeline: None,
            origin_ms: 0.0,
            cursor_us: 0.0,
            costs: HashMap::new(),
            events: 0,
        };
        w.raw(json!({"ph":"M","pid":PID,"name":"process_name","args":{"name":format!("oneDNN: {source}")}}))?;
        w.raw(json!({"ph":"M","pid":PID,"tid":TID_EXEC,"name":"thread_name","args":{"name":"primitive executions"}}))?;
        w.raw(json!({"ph":"M","pid":PID,"tid":TID_CREATE,"name":"thread_name","args":{"name":"primitive creations"}}))?;
        Ok(w)
    }

    fn raw(&mut self, v: Value) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut self.out, &v)?;
        Ok(())
    }

    pub fn timeline(&self) -> Option<Timeline> {
        self.timeline
    }

    pub fn event(&mut self, e: &Event) -> io::Result<()> {
        match e {
            Event::Primitive(p) => self.primitive(p),
            Event::Iteration { line, text } => {
                let ts = self.cursor_us;
                self.raw(json!({"ph":"i","s":"g","pid":PID,"tid":TID_EXEC,"ts":ts,"name":text,"args":{"line":line}}))
            }
        }
    }

    fn primitive(&mut self, e: &PrimitiveEvent) -> io::Result<()> {
        let timeline = *self.timeline.get_or_insert_with(|| {
            if e.timestamp_ms.is_some() {
                Timeline::Timestamps
            } else {
                Timeline::EndToEnd
            }
        });
        let dur_us = e.time_ps.unwrap_or(0) as f64 / 1e6;
        let ts_us = match (timeline, e.timestamp_ms) {
            (Timeline::Timestamps, Some(ms)) => {
                if self.events == 0 {
                    self.origin_ms = ms;
                }
                (ms - self.origin_ms) * 1e3
            }
            _ => self.cursor_us,
        };
        let is_exec = e.kind == EventKind::Exec;
        // Without timestamps, creations and executions share one end-to-end cursor: each
        // event starts where the one before it (on either track) ended, none overlap.
        self.cursor_us = self.cursor_us.max(ts_us + dur_us);
        let p = &e.primitive;
        let cost = *self
            .costs
            .entry(std::sync::Arc::as_ptr(p) as usize)
            .or_insert_with(|| profilednn_cost::cost(p).ok());
        let mut args = Map::new();
        args.insert("impl".into(), json!(p.implementation));
        args.insert("prop_kind".into(), json!(p.prop_kind.to_string()));
        args.insert("shapes".into(), json!(p.problem));
        args.insert("mds".into(), json!(p.mds_string()));
        if !p.attrs.is_empty() {
            args.insert("exts".into(), json!(p.exts_string()));
        }
        if !p.aux.is_empty() {
            args.insert("aux".into(), json!(p.aux_string()));
        }
        if let Some(c) = cost {
            args.insert("flops".into(), json!(c.flops));
            args.insert("bytes".into(), json!(c.bytes));
        }
        args.insert("line".into(), json!(e.line));
        let name = match &e.kind {
            EventKind::Exec => p.kind.to_string(),
            EventKind::Create(c) if c.is_empty() => format!("create {}", p.kind),
            EventKind::Create(c) => format!("create:{c} {}", p.kind),
        };
        self.events += 1;
        self.raw(json!({
            "ph": "X",
            "pid": PID,
            "tid": if is_exec { TID_EXEC } else { TID_CREATE },
            "ts": ts_us,
            "dur": dur_us,
            "name": name,
            "cat": format!("{},{}", p.kind, p.prop_kind),
            "args": args,
        }))
    }

    /// Closes the JSON and returns the writer.
    pub fn finish(mut self, note: Value) -> io::Result<W> {
        let timeline = self.timeline.unwrap_or(Timeline::EndToEnd);
        write!(
            self.out,
            "\n],\"otherData\":{}}}\n",
            json!({"schema":SCHEMA,"generator":"profilednn trace","timeline":timeline.describe(),"events":self.events,"notes":note})
        )?;
        self.out.flush()?;
        Ok(self.out)
    }
}
