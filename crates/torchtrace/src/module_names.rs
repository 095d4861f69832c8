//! Which trace events are nn.Module forwards, and their names.
//!
//! torch.profiler names a module by class and instance count (`nn.Module: Linear_8`, Python
//! function events that need Python stacks), which says nothing of which layer it is.
//! `profilednn.profile(model=…)` marks each submodule's forward with its qualified name from
//! `named_modules()` (`profilednn.module: blocks.layers.2.self_attn`, a `record_function`
//! annotation). When a trace has those marks they are the modules, and torch's own events are
//! left out (the same forward would count twice); otherwise torch's events are.

use super::Op;

/// The prefix of `profilednn.profile`'s module marks.
const MARK: &str = "profilednn.module: ";
/// The prefix of torch.profiler's own module events.
const TORCH: &str = "nn.Module: ";

/// The module forwards of `ops`, in `ops` order: the qualified marks when there are any, else
/// torch's events.
pub(super) fn module_ops(ops: &[Op]) -> Vec<usize> {
    let marked = |o: &Op| o.annotation && o.name.starts_with(MARK);
    let qualified: Vec<usize> = (0..ops.len()).filter(|&i| marked(&ops[i])).collect();
    if !qualified.is_empty() {
        return qualified;
    }
    (0..ops.len())
        .filter(|&i| ops[i].python && ops[i].name.starts_with(TORCH))
        .collect()
}

/// The module's name: `blocks.layers.2.self_attn`, or torch's `Linear_8`.
pub(super) fn module_name(op: &Op) -> &str {
    op.name
        .strip_prefix(MARK)
        .or_else(|| op.name.strip_prefix(TORCH))
        .unwrap_or(&op.name)
}
