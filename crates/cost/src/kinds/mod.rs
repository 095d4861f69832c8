//! One module per primitive family: problem parsing, operation count and traffic.

pub mod conv;
pub mod elementwise;
pub mod ip;
pub mod lrn;
pub mod matmul;
pub mod movement;
pub mod norm;
pub mod pooling;
pub mod post_ops;
pub mod reduction;
pub mod resampling;
pub mod rnn;
pub mod softmax;

use crate::count::N;
use crate::descriptor::product;
use crate::{unknown, Unknown};

/// Number of elements of the one tensor a problem describes ([`crate::tensors::dims`]).
pub fn tensor_elements(problem: &str) -> Result<N, Unknown> {
    crate::tensors::dims(problem).map(|d| product(&d))
}

pub use crate::missing;
pub use crate::tensors::tensor_dims_desc;

/// Dims of the tensors of a dims-style problem; `*` (run-time dimension) is unknown.
pub fn dims_list(problem: &str) -> Result<crate::descriptor::DimsList, Unknown> {
    crate::descriptor::parse_dims_list(problem).ok_or_else(|| {
        if problem.contains('*') {
            unknown(format!(
                "problem '{problem}' has run-time dimensions (*): sizes are not in the log"
            ))
        } else {
            unknown(format!("problem descriptor '{problem}' not recognised"))
        }
    })
}

/// Elementwise broadcast of two shapes (numpy rules, right-aligned).
pub fn broadcast(a: &[u64], b: &[u64]) -> Vec<u64> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| {
            let x = if i + a.len() >= n {
                a[i + a.len() - n]
            } else {
                1
            };
            let y = if i + b.len() >= n {
                b[i + b.len() - n]
            } else {
                1
            };
            // A dimension of 1 takes the other's size (even 0, as numpy does).
            if x == 1 {
                y
            } else if y == 1 {
                x
            } else {
                x.max(y)
            }
        })
        .collect()
}
