//! Dynamo's graph breaks and recompilations, as `profilednn.profile` records them, on a real
//! compiled run (fixtures/torch/compile-breaks.*, from `compile_breaks.py`): by its code, the
//! `print` in `Net.forward` breaks the graph (a second frame resumes after it), and the batch
//! growing from 16 to 24 at the third step recompiles both frames.

use profilednn_torchtrace::{join, read_trace};
use std::path::PathBuf;

#[test]
fn the_print_breaks_the_graph_and_the_batch_recompiles_both_frames() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/torch/compile-breaks.trace.json.gz");
    let j = join(&read_trace(&path).unwrap(), |_| {});
    let d = j.dynamo.expect("a compiled run names its frames");
    assert_eq!(d.frames, 2);
    assert_eq!(d.resume_frames.len(), 1);
    assert!(d.resume_frames[0].starts_with("torch_dynamo_resume_in_forward_at_"));
    assert!(d.breaks() >= 1);
    assert!(
        d.graph_breaks.iter().all(|b| b.reason.contains("print")),
        "{d:?}"
    );
    let ids: Vec<&str> = d.recompiles.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["0/1", "1/1"]);
    assert!(d
        .recompiles
        .iter()
        .all(|r| r.reason.contains("expected 16, actual 24")));
    assert!(d.recompiles[0]
        .frame
        .as_deref()
        .unwrap()
        .starts_with("Net.forward"));
}

/// An eager run has no Dynamo section.
#[test]
fn an_eager_run_has_none() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/torch/gpt-f32.trace.json.gz");
    assert!(join(&read_trace(&path).unwrap(), |_| {}).dynamo.is_none());
}
