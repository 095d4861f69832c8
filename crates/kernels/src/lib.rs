//! Fused CPU training kernels.
//!
//! Profiling RetinaNet training showed the sigmoid focal loss (a chain of ~10 full-size
//! element-wise temporaries in PyTorch) and the optimizer step (a for-loop over parameters)
//! taking a large share of each iteration outside oneDNN. These kernels do each in one pass
//! over memory.
//!
//! ```
//! use profilednn_kernels::focal::{forward, Params, Reduction, Targets, Tensor};
//! use profilednn_kernels::Isa;
//! // Two logits at 0 (p = 0.5), one positive and one negative target; alpha 0.25, gamma 2.
//! let logits = [0.0f32, 0.0];
//! let targets = [1.0f32, 0.0];
//! let loss = forward(Isa::best(), 1, Tensor::F32(&logits), Targets::Dense(Tensor::F32(&targets)),
//!     Params { alpha: 0.25, gamma: 2.0 }, Reduction::Mean, None).unwrap();
//! // By hand: each term is alpha_t * (1 - p_t)^2 * ln 2 with alpha_t = 0.25 and 0.75.
//! let by_hand = (0.25 + 0.75) * 0.25 * std::f32::consts::LN_2 / 2.0;
//! assert!((loss - by_hand).abs() < 1e-6, "{loss} vs {by_hand}");
//! ```
//!
//! * Math is f32 with f32 reductions accumulated blockwise (per-lane partial sums, then f64
//!   across blocks), so results do not depend on the thread count beyond the fixed block order:
//!   for a given thread count the result is bit-for-bit reproducible — in fact for any thread
//!   count, since blocks are summed in index order.
//! * SIMD: the inner loops are written as straight-line, branch-free code over fixed-width
//!   chunks and compiled three times (AVX-512, AVX2+FMA, portable); [`Isa::detect`] picks one at
//!   run time, so one binary runs everywhere.
//! * Threads: the caller passes the thread count (don't fight PyTorch's own OpenMP pool);
//!   `1` runs on the calling thread.

pub mod bf16;
pub mod dispatch;
mod env;
pub mod focal;
pub mod fpmode;
pub mod optim;
pub mod pages;
pub mod pool;
pub mod vmath;

pub use dispatch::{Isa, Level};
