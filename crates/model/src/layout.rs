//! The activation layout a framework hands oneDNN, as a what-if names it.
//!
//! Shared by the what-if transforms (`replay --layout`) and the advice rules that read their
//! projections: one type, so that the rule that speaks for channels-last and the replay that
//! measured it cannot disagree on what channels-last is.

use serde::{Deserialize, Serialize};

/// Activation layout (`--layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ActivationLayout {
    /// The layouts of the log.
    #[default]
    AsLogged,
    /// `acdb`/`acdeb` (PyTorch's `torch.channels_last`).
    ChannelsLast,
    /// `abcd`/`abcde` (NCHW).
    Plain,
}
