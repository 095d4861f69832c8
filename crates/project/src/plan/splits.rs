//! The splits of a machine's cores into ranks × threads, and why a split cannot run.
//!
//! Only splits that use every core are considered (ranks × threads = cores): the question the
//! plan answers is how to divide a machine already given to the job, not how many cores to use.

use serde::{Serialize, Serializer};

/// `ranks` processes of `threads` OpenMP threads each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    pub ranks: u64,
    pub threads: u64,
}

impl Split {
    pub fn new(ranks: u64, threads: u64) -> Split {
        Split { ranks, threads }
    }

    /// `2x1`: ranks × threads, as the table and the JSON name it.
    pub fn name(&self) -> String {
        self.to_string()
    }
}

impl std::fmt::Display for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.ranks, self.threads)
    }
}

/// As its name, `2x1` (`docs/projection.md`).
impl Serialize for Split {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Every `ranks × threads = cores`, fewest ranks first (1 × cores … cores × 1).
pub fn enumerate(cores: u64) -> Vec<Split> {
    (1..=cores)
        .filter(|r| cores.is_multiple_of(*r))
        .map(|ranks| Split {
            ranks,
            threads: cores / ranks,
        })
        .collect()
}

/// Why `s` cannot run on each of `nodes` nodes of `cores` cores in `sockets` sockets at global
/// batch `batch` (empty: it can). Ranks are placed on consecutive cores, rank r on cores r·T …
/// (r+1)·T − 1, sockets holding consecutive equal shares of the cores, as `torchrun`/`mpirun
/// --map-by core` do.
pub fn invalid(s: Split, nodes: u64, cores: u64, sockets: u64, batch: u64) -> Vec<String> {
    let mut why = Vec::new();
    if s.ranks > cores {
        why.push(format!("{} ranks on {cores} cores", s.ranks));
    }
    let world = s.ranks.saturating_mul(nodes.max(1));
    if !batch.is_multiple_of(world) {
        why.push(match nodes {
            0 | 1 => format!("global batch {batch} not divisible by {world} ranks"),
            n => format!(
                "global batch {batch} not divisible by {world} ranks ({n} nodes × {})",
                s.ranks
            ),
        });
    }
    if profilednn_machine::placement::rank_spans_sockets(s.ranks, s.threads, cores, sockets) {
        why.push(format!(
            "a rank of {} threads spans sockets ({} cores per socket)",
            s.threads,
            cores / sockets
        ));
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[Split]) -> Vec<String> {
        v.iter().map(Split::name).collect()
    }

    #[test]
    fn the_divisors_of_the_core_count() {
        assert_eq!(names(&enumerate(2)), ["1x2", "2x1"]);
        assert_eq!(names(&enumerate(1)), ["1x1"]);
        // 112 cores, the example: 16x7, 8x14, 4x28 among 10 splits.
        let v = names(&enumerate(112));
        assert_eq!(v.len(), 10);
        for s in ["16x7", "8x14", "4x28", "1x112", "112x1"] {
            assert!(v.contains(&s.to_string()), "{s} in {v:?}");
        }
        assert_eq!(names(&enumerate(7)), ["1x7", "7x1"]);
    }

    #[test]
    fn batch_not_divisible() {
        let s = Split {
            ranks: 3,
            threads: 2,
        };
        assert_eq!(
            invalid(s, 1, 6, 1, 8),
            ["global batch 8 not divisible by 3 ranks"]
        );
        assert!(invalid(s, 1, 6, 1, 9).is_empty());
    }

    #[test]
    fn ranks_spanning_sockets() {
        // 2 sockets × 4 cores: 1x8 spans, 2x4 fits, 4x2 fits.
        let at = |r, t| {
            invalid(
                Split {
                    ranks: r,
                    threads: t,
                },
                1,
                8,
                2,
                64,
            )
        };
        assert_eq!(
            at(1, 8),
            ["a rank of 8 threads spans sockets (4 cores per socket)"]
        );
        assert!(at(2, 4).is_empty());
        assert!(at(4, 2).is_empty());
        // 2 sockets × 3 cores: ranks of 2 threads straddle the boundary (cores 2 and 3).
        assert_eq!(at3(3, 2).len(), 1);
        assert!(invalid(
            Split {
                ranks: 2,
                threads: 3
            },
            1,
            6,
            2,
            6
        )
        .is_empty());
        // One socket: never.
        assert!(invalid(
            Split {
                ranks: 1,
                threads: 8
            },
            1,
            8,
            1,
            64
        )
        .is_empty());
    }

    fn at3(r: u64, t: u64) -> Vec<String> {
        invalid(
            Split {
                ranks: r,
                threads: t,
            },
            1,
            6,
            2,
            6,
        )
    }

    #[test]
    fn more_ranks_than_cores() {
        let s = Split {
            ranks: 4,
            threads: 1,
        };
        assert_eq!(invalid(s, 1, 2, 1, 8), ["4 ranks on 2 cores"]);
    }
}
