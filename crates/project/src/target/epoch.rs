//! The epoch on a target and what it costs: `--samples-per-epoch`, `--batch` and one
//! `--price-per-hour` per target, so that several targets read side by side, cheapest per
//! epoch first ("which instance is cheapest per epoch?").
//!
//! Why here and not in the renderer: the order of the targets is a decision (cheapest first),
//! and the JSON must carry the same figures the terminal shows.

use super::TargetProjection;
use serde::Serialize;

/// What the user said about the run and the prices.
#[derive(Debug, Clone, Default)]
pub struct EpochRequest {
    /// Samples in one epoch.
    pub samples_per_epoch: Option<u64>,
    /// Samples one step (one iteration of the log) trains on: the global batch.
    pub batch: Option<u64>,
    /// Price per hour of each target, in `--to` order (a currency the user chose).
    pub prices_per_hour: Vec<f64>,
}

/// One target's epoch, from its projected step and band.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Epoch {
    pub steps: f64,
    pub epoch_s: f64,
    pub epoch_s_low: f64,
    pub epoch_s_high: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub price_per_hour: Option<f64>,
    /// `epoch_s / 3600 × price_per_hour`, with its band.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_low: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_high: Option<f64>,
}

/// Why an epoch request cannot be met, said before any projection runs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EpochError {
    #[error("--samples-per-epoch needs --batch N (the samples one step of the log trains on)")]
    NoBatch,
    #[error("--price-per-hour was given {prices} time(s) for {targets} --to target(s): give one per target, in the same order")]
    Prices { prices: usize, targets: usize },
    #[error("--price-per-hour needs --samples-per-epoch and --batch (the cost is per epoch)")]
    PriceWithoutEpoch,
}

impl EpochRequest {
    pub fn check(&self, targets: usize) -> Result<(), EpochError> {
        if self.samples_per_epoch.is_some() && self.batch.is_none() {
            return Err(EpochError::NoBatch);
        }
        if !self.prices_per_hour.is_empty() {
            if self.samples_per_epoch.is_none() {
                return Err(EpochError::PriceWithoutEpoch);
            }
            if self.prices_per_hour.len() != targets {
                return Err(EpochError::Prices {
                    prices: self.prices_per_hour.len(),
                    targets,
                });
            }
        }
        Ok(())
    }
}

/// The epoch of `t` (its projected step per iteration) for the request, with the target's
/// price when given (`index`: its place among the `--to` targets).
pub fn epoch(t: &TargetProjection, req: &EpochRequest, index: usize) -> Option<Epoch> {
    let samples = req.samples_per_epoch? as f64;
    let batch = req.batch?.max(1) as f64;
    let steps = (samples / batch).ceil();
    let secs = |ms: f64| steps * ms / 1e3;
    let price = req.prices_per_hour.get(index).copied();
    let cost = |s: f64| price.map(|p| s / 3600.0 * p);
    let (s, lo, hi) = (
        secs(t.projected_step_ms),
        secs(t.band.low_ms),
        secs(t.band.high_ms),
    );
    Some(Epoch {
        steps,
        epoch_s: s,
        epoch_s_low: lo,
        epoch_s_high: hi,
        price_per_hour: price,
        cost: cost(s),
        cost_low: cost(lo),
        cost_high: cost(hi),
    })
}

/// Cheapest per epoch first (then fastest), when every target has a cost; else as given.
pub fn order(targets: &mut [TargetProjection]) {
    if targets
        .iter()
        .all(|t| t.epoch.as_ref().is_some_and(|e| e.cost.is_some()))
    {
        targets.sort_by(|a, b| {
            let c = |t: &TargetProjection| t.epoch.as_ref().and_then(|e| e.cost).unwrap_or(0.0);
            c(a).total_cmp(&c(b))
                .then(a.projected_step_ms.total_cmp(&b.projected_step_ms))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_that_cannot_be_priced_are_refused() {
        let r = EpochRequest {
            samples_per_epoch: Some(1000),
            batch: None,
            prices_per_hour: vec![],
        };
        assert_eq!(r.check(1), Err(EpochError::NoBatch));
        let r = EpochRequest {
            samples_per_epoch: Some(1000),
            batch: Some(8),
            prices_per_hour: vec![1.0],
        };
        assert_eq!(
            r.check(2),
            Err(EpochError::Prices {
                prices: 1,
                targets: 2
            })
        );
        let r = EpochRequest {
            samples_per_epoch: None,
            batch: Some(8),
            prices_per_hour: vec![1.0],
        };
        assert_eq!(r.check(1), Err(EpochError::PriceWithoutEpoch));
        assert_eq!(EpochRequest::default().check(3), Ok(()));
    }
}
