//! Group normalization: oneDNN added it in 3.3, after the oldest oneDNN the replay supports
//! (3.2, the pip wheel). With an older library the problem is reported as needing 3.3; the
//! 3.3 entry points are not bound yet (no such library was at hand to check a rebuild
//! against), so with a newer one it is reported as not replayed.

use crate::native::build::Built;
use crate::native::SkipReason;
use profilednn_model::Primitive;

pub(crate) fn rebuild(b: &mut Built, _p: &Primitive) -> Result<(), SkipReason> {
    Err(if b.d.release < (3, 3) {
        SkipReason::NeedsOneDnn {
            what: "group normalization",
            version: "3.3",
        }
    } else {
        SkipReason::KindNotReplayed("group_normalization".into())
    })
}
