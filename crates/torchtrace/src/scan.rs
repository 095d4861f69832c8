//! The Chrome trace's event objects, one at a time: a small state machine over the bytes finds
//! each object of `traceEvents` and hands it over unparsed, so that a multi-GB trace is never
//! held whole, and each reader parses only the fields it needs.

use super::TraceError;
use std::io::Read;

/// The trace's top-level fields other than its events.
#[derive(Debug, Default)]
pub(crate) struct TopLevel {
    /// `baseTimeNanoseconds`: the epoch time that event times count from.
    pub base_ns: Option<f64>,
    /// `profilednn_compiled_frames` (written by `profilednn.profile`): the frames torch.compile
    /// compiled, `id=what (file:line)` joined by `;`.
    pub compiled_frames: Option<String>,
    /// `profilednn_graph_breaks` and `profilednn_recompiles` (written by `profilednn.profile`):
    /// Dynamo's graph breaks as `count=reason`, its recompilations as `id=reason`, `;`-joined.
    pub graph_breaks: Option<String>,
    pub recompiles: Option<String>,
    /// The bytes read, when the trace ended inside its JSON (a run killed while it wrote its
    /// trace): the events before that point are kept, the rest is missing.
    pub truncated_at: Option<u64>,
    /// Why reading stopped early, when the stream itself failed (a `.gz` cut short: "incomplete
    /// deflate stream"): the events before that point are kept, as for JSON cut short.
    pub stopped_by: Option<String>,
    /// Whether the trace has a top-level `traceEvents` (a file without one is no trace).
    pub has_events: bool,
}

/// Calls `on_event` with the bytes of each object of the trace's `traceEvents`, in file order;
/// returns the trace's top-level fields. `name` is used in errors.
pub(crate) fn events(
    mut reader: impl Read,
    name: &str,
    mut on_event: impl FnMut(&[u8]),
) -> Result<TopLevel, TraceError> {
    let mut top = TopLevel::default();
    let mut base_ns = None;
    // After a top-level `:`: a string there is a value, not the next key.
    let mut in_value = false;
    let (mut depth, mut in_str, mut esc) = (0i32, false, false);
    let mut key = Vec::new();
    let mut last_key = String::new();
    let mut in_events = false;
    let mut obj: Vec<u8> = Vec::new();
    let mut value: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut read = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // Part of the trace was read: keep its events, as for JSON cut short.
            Err(e) if read > 0 => {
                top.stopped_by = Some(e.to_string());
                break;
            }
            Err(error) => {
                return Err(TraceError::Read {
                    name: name.to_string(),
                    error,
                })
            }
        };
        if n == 0 {
            break;
        }
        read += n as u64;
        for &b in &buf[..n] {
            let capturing = in_events && depth >= 3 || (in_events && depth == 2 && b == b'{');
            if capturing {
                obj.push(b);
            }
            if in_str {
                if esc {
                    esc = false;
                } else if b == b'\\' {
                    esc = true;
                } else if b == b'"' {
                    in_str = false;
                    if depth == 1 && in_value {
                        let value = || Some(String::from_utf8_lossy(&key).into_owned());
                        match last_key.as_str() {
                            "profilednn_compiled_frames" => top.compiled_frames = value(),
                            "profilednn_graph_breaks" => top.graph_breaks = value(),
                            "profilednn_recompiles" => top.recompiles = value(),
                            _ => {}
                        }
                    } else if depth == 1 {
                        last_key = String::from_utf8_lossy(&key).into_owned();
                    }
                } else if depth == 1 {
                    key.push(b);
                }
                continue;
            }
            match b {
                b'"' => {
                    in_str = true;
                    if depth == 1 {
                        key.clear();
                    }
                }
                b'{' | b'[' => {
                    depth += 1;
                    if depth == 2 && last_key == "traceEvents" {
                        in_events = b == b'[';
                        top.has_events |= in_events;
                    }
                }
                b'}' | b']' => {
                    depth -= 1;
                    if in_events && depth == 2 && b == b'}' {
                        on_event(&obj);
                        obj.clear();
                    }
                    if in_events && depth == 1 {
                        in_events = false;
                    }
                }
                b':' if depth == 1 => {
                    value.clear();
                    in_value = true;
                }
                b',' if depth == 1 => {
                    in_value = false;
                    if last_key == "baseTimeNanoseconds" {
                        base_ns = String::from_utf8_lossy(&value).trim().parse().ok();
                    }
                }
                _ if depth == 1 => value.push(b),
                _ => {}
            }
        }
    }
    if base_ns.is_none() && last_key == "baseTimeNanoseconds" {
        base_ns = String::from_utf8_lossy(&value).trim().parse().ok();
    }
    top.base_ns = base_ns;
    if depth > 0 || in_str || top.stopped_by.is_some() {
        top.truncated_at = Some(read);
    }
    Ok(top)
}
