//! The nodes of a multi-node run: which ranks ran on which machine, and whether the straggler
//! is slow on its own or its whole node is.
//!
//! The two call for different mends. A rank slower than the others on the same machine does
//! more work or has less to do it with (a larger mini-batch, fewer threads, cores shared with
//! another rank): the training's launch is mended. A node whose every rank is slow is the
//! machine (a slower CPU or memory, another job on it, throttling): no change to the ranks
//! mends it. So the verdict compares a node's *fastest* rank with the ranks of the other
//! nodes: if even that one is slower than their median by [`SLOW_NODE`], the whole node is.

use serde::Serialize;

/// A node is slow when its fastest rank has this many times the other nodes' median rank's
/// oneDNN time: 5 %, above the run-to-run noise of ranks on one machine (the 2-rank fixtures'
/// ranks differ by under 2 %) and below the rank-imbalance finding's threshold, so a node that
/// makes a straggler is named with it.
pub const SLOW_NODE: f64 = 1.05;

/// One node and its ranks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRanks {
    /// The node's name, as the launcher or the logs' layout gave it.
    pub node: String,
    /// Its ranks (global), ascending.
    pub ranks: Vec<u32>,
}

/// A node whose every rank is slow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlowNode {
    pub node: String,
    /// Its ranks (those compared: stopped-early ranks are not).
    pub ranks: Vec<u32>,
    /// Its fastest rank's oneDNN time per iteration.
    pub fastest_ms_per_iteration: f64,
    /// The median of the other nodes' ranks (the lower middle one for an even count).
    pub others_median_ms_per_iteration: f64,
    /// `fastest / others_median`: every rank of the node is at least this much slower.
    pub ratio: f64,
}

/// The nodes of `ranks` (rank, node), in the order of their lowest rank; empty when no rank's
/// node is known.
pub fn group(ranks: &[(u32, Option<&str>)]) -> Vec<NodeRanks> {
    let mut out: Vec<NodeRanks> = Vec::new();
    let mut sorted: Vec<(u32, &str)> = ranks
        .iter()
        .filter_map(|(r, n)| Some((*r, (*n)?)))
        .collect();
    sorted.sort();
    for (rank, node) in sorted {
        match out.iter_mut().find(|n| n.node == node) {
            Some(n) => n.ranks.push(rank),
            None => out.push(NodeRanks {
                node: node.to_string(),
                ranks: vec![rank],
            }),
        }
    }
    out
}

fn lower_median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len().checked_sub(1)? / 2).copied()
}

/// The slowest node whose every rank is slow (see the module's text), from each rank's node
/// and oneDNN time per iteration; `None` when no node is, or fewer than two nodes are known.
pub fn slow_node(loads: &[(u32, &str, f64)]) -> Option<SlowNode> {
    let nodes = group(
        &loads
            .iter()
            .map(|(r, n, _)| (*r, Some(*n)))
            .collect::<Vec<_>>(),
    );
    nodes
        .into_iter()
        .filter_map(|n| {
            let own = || loads.iter().filter(|l| l.1 == n.node);
            let fastest = own().map(|l| l.2).reduce(f64::min)?;
            let others = lower_median(
                loads
                    .iter()
                    .filter(|l| l.1 != n.node)
                    .map(|l| l.2)
                    .collect(),
            )?;
            let ratio = if others > 0.0 { fastest / others } else { 1.0 };
            (ratio >= SLOW_NODE).then(|| SlowNode {
                node: n.node.clone(),
                ranks: n.ranks,
                fastest_ms_per_iteration: fastest,
                others_median_ms_per_iteration: others,
                ratio,
            })
        })
        .max_by(|a, b| a.ratio.total_cmp(&b.ratio))
}

/// `0–3, 5, 8–9`: a list of ranks, short at any count.
pub fn rank_ranges(ranks: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            ranks[i].to_string()
        } else {
            format!("{}–{}", ranks[i], ranks[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_nodes(times: [f64; 8]) -> Vec<(u32, &'static str, f64)> {
        (0..8u32)
            .map(|r| (r, if r < 4 { "node0" } else { "node1" }, times[r as usize]))
            .collect()
    }

    #[test]
    fn a_node_whose_every_rank_is_slow() {
        // node1's ranks all ~1.3×: its fastest 129 against node0's lower median of
        // [99, 100, 100, 101] = 100.
        let s = slow_node(&two_nodes([100., 101., 99., 100., 130., 131., 129., 130.])).unwrap();
        assert_eq!(s.node, "node1");
        assert_eq!(s.ranks, [4, 5, 6, 7]);
        assert_eq!(s.fastest_ms_per_iteration, 129.0);
        assert_eq!(s.others_median_ms_per_iteration, 100.0);
        assert!((s.ratio - 1.29).abs() < 1e-12);
    }

    #[test]
    fn one_slow_rank_makes_no_slow_node() {
        // Rank 5 at 1.3×, its node's other ranks as fast as node0's: node1's fastest is 99
        // against 100; node0's fastest 99 against [99, 100, 101, 130] → 100.
        assert_eq!(
            slow_node(&two_nodes([100., 101., 99., 100., 100., 130., 99., 101.])),
            None
        );
        // 4 % is within the noise.
        assert_eq!(
            slow_node(&two_nodes([100., 100., 100., 100., 104., 104., 104., 104.])),
            None
        );
        // One node: nothing to compare with.
        assert_eq!(slow_node(&[(0, "a", 1.0), (1, "a", 2.0)]), None);
    }

    #[test]
    fn groups_and_ranges() {
        let g = group(&[
            (5, Some("b")),
            (0, Some("a")),
            (4, Some("b")),
            (1, Some("a")),
            (2, None),
        ]);
        assert_eq!(
            g,
            [
                NodeRanks {
                    node: "a".into(),
                    ranks: vec![0, 1]
                },
                NodeRanks {
                    node: "b".into(),
                    ranks: vec![4, 5]
                }
            ]
        );
        assert!(group(&[(0, None)]).is_empty());
        assert_eq!(rank_ranges(&[0, 1, 2, 3, 5, 8, 9]), "0–3, 5, 8–9");
        assert_eq!(rank_ranges(&[]), "");
    }
}
