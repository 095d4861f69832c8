//! What data parallelism adds per iteration: the all-reduce of the weight gradients.
//!
//! A ring all-reduce of `G` bytes over `R` ranks sends and receives `2(R−1)/R · G` bytes per
//! rank (reduce-scatter, then all-gather). Its time is priced at a per-rank rate ("bus
//! bandwidth": ring bytes per rank / time), which is what a measurement gives directly. The
//! node's memory bandwidth is no price for it: Gloo on one node goes through TCP loopback, and
//! its measured rate on the model-207 Xeon is ~50× below the memory's (see [`DEFAULT_GBPS`]).

/// Default all-reduce rate (GB/s per rank, ring bytes / time) when none is given or measured:
/// Gloo over TCP loopback between 2 single-thread ranks on the model-207 Xeon (2 vCPUs), 30 Nov
/// 2026: `bench/gloo_allreduce.py` gave 0.571 GB/s (44.7 MB in 78.3 ms median, load 8), and the
/// 2-rank ResNet-18 run of `fixtures/multirank/even_2x1.log.gz` against the 1-rank one 0.63
/// GB/s (quiet machine). Measure your node with the script, or give `plan --allreduce-log`.
pub const DEFAULT_GBPS: f64 = 0.6;

/// Bytes one rank sends (and receives) in a ring all-reduce of `gradient_bytes` over `ranks`;
/// `None` when it does not fit 64 bits.
pub fn ring_bytes_per_rank(gradient_bytes: u64, ranks: u64) -> Option<u64> {
    if ranks <= 1 {
        return Some(0);
    }
    let b = 2u128 * u128::from(ranks - 1) * u128::from(gradient_bytes) / u128::from(ranks);
    u64::try_from(b).ok()
}

/// Milliseconds of the all-reduce: a rank's ring bytes at `gbps` GB/s per rank.
pub fn ms(gradient_bytes: u64, ranks: u64, gbps: f64) -> Option<f64> {
    let per_rank = ring_bytes_per_rank(gradient_bytes, ranks)?;
    if gbps <= 0.0 || !gbps.is_finite() {
        return None;
    }
    Some(per_rank as f64 / (gbps * 1e9) * 1e3)
}

/// The all-reduce of one iteration across nodes, split into what the node's own links take and
/// what the network adds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AcrossNodes {
    /// `intra_ms + network_ms`.
    pub ms: f64,
    /// The ring at the rate of a node's own links (0 with one rank per node).
    pub intra_ms: f64,
    /// What the links between nodes add (0 on one node, or when the network is faster).
    pub network_ms: f64,
}

/// Milliseconds of the all-reduce of `gradient_bytes` over `nodes` × `per_node` ranks, as
/// PyTorch's Gloo runs it: **one flat ring over all the ranks** (gloo/allreduce.cc: the ring
/// algorithm unless bcube is asked for), not a hierarchical one, the ranks placed node by node
/// (torchrun's global rank = node rank × ranks per node + local rank). Why that shape matters:
///
/// With `R = N·L` ranks, each rank sends (and receives) `b = 2(R−1)/R · G` bytes in `2(R−1)`
/// steps of `G/R`, every link of the ring busy at once in each step. A node has exactly one
/// ring link out to the next node and one in, each carrying one rank's stream; the other links
/// are inside nodes. So a step takes as long as its slowest link:
///
/// ```text
/// t = b / r,   r = r_node                 one node (N = 1)
///                  r_net                  one rank per node (L = 1)
///                  min(r_node, r_net)     otherwise
/// ```
///
/// `r_node` is a rank's rate inside a node (`intra_gbps`, GB/s per rank, what
/// `bench/gloo_allreduce.py` measures between the ranks of one node: Gloo through loopback
/// there, CPU-bound), `r_net = network_gbit / 8` GB/s, the link between two nodes in each
/// direction. Written as the intra-node all-reduce plus what the network adds:
/// `intra = b / r_node` (0 when `L = 1`), `network = t − intra`. Latency per step is not
/// counted (gradients are tens of MB: 2(R−1) steps of ~50 µs are small beside them until R is
/// in the hundreds). `None`: no rate, or the bytes do not fit 64 bits.
pub fn across_nodes(
    gradient_bytes: u64,
    per_node: u64,
    nodes: u64,
    intra_gbps: f64,
    network_gbit: Option<f64>,
) -> Option<AcrossNodes> {
    let ranks = per_node.checked_mul(nodes)?;
    let b = ring_bytes_per_rank(gradient_bytes, ranks)? as f64;
    let ok = |g: f64| g.is_finite() && g > 0.0;
    let intra = if per_node > 1 {
        ok(intra_gbps).then(|| b / (intra_gbps * 1e9) * 1e3)?
    } else {
        0.0
    };
    if nodes <= 1 {
        return Some(AcrossNodes {
            ms: intra,
            intra_ms: intra,
            network_ms: 0.0,
        });
    }
    let net_gbps = network_gbit.filter(|g| ok(*g))? / 8.0;
    let on_net = b / (net_gbps * 1e9) * 1e3;
    let ms = on_net.max(intra);
    Some(AcrossNodes {
        ms,
        intra_ms: intra,
        network_ms: ms - intra,
    })
}

/// The network rate (Gbit/s per link and direction) an all-reduce over `nodes` × `per_node`
/// ranks ran at when it took `exposed_ms`: the inverse of [`across_nodes`] where the network is
/// the slower link. `None` for one node, or no time.
pub fn network_gbit_of(
    gradient_bytes: u64,
    per_node: u64,
    nodes: u64,
    exposed_ms: f64,
) -> Option<f64> {
    if nodes <= 1 {
        return None;
    }
    let b = ring_bytes_per_rank(gradient_bytes, per_node.checked_mul(nodes)?)? as f64;
    (b > 0.0 && exposed_ms > 0.0).then(|| b * 8.0 / (exposed_ms * 1e-3) / 1e9)
}

/// The rate (GB/s per rank) an all-reduce of `gradient_bytes` over `ranks` ran at when it took
/// `exposed_ms`: the inverse of [`ms`]. `None` for one rank or no time.
pub fn gbps_of(gradient_bytes: u64, ranks: u64, exposed_ms: f64) -> Option<f64> {
    let per_rank = ring_bytes_per_rank(gradient_bytes, ranks)?;
    (per_rank > 0 && exposed_ms > 0.0).then(|| per_rank as f64 / (exposed_ms * 1e-3) / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_volume() {
        assert_eq!(ring_bytes_per_rank(1000, 1), Some(0));
        // 2 ranks: each sends half and receives half twice = G.
        assert_eq!(ring_bytes_per_rank(1000, 2), Some(1000));
        // 4 ranks: 2·3/4 G.
        assert_eq!(ring_bytes_per_rank(1000, 4), Some(1500));
        assert_eq!(ring_bytes_per_rank(u64::MAX, 4), None);
    }

    #[test]
    fn priced_at_the_rate() {
        // 2 ranks: 1 GB per rank at 0.5 GB/s = 2000 ms; 4 ranks: 1.5 GB = 3000 ms.
        let t = ms(1_000_000_000, 2, 0.5).unwrap();
        assert!((t - 2000.0).abs() < 1e-9, "{t}");
        let t = ms(1_000_000_000, 4, 0.5).unwrap();
        assert!((t - 3000.0).abs() < 1e-9, "{t}");
        assert_eq!(ms(5, 1, 10.0), Some(0.0));
        assert_eq!(ms(5, 2, 0.0), None);
        // And back.
        let g = gbps_of(1_000_000_000, 2, 2000.0).unwrap();
        assert!((g - 0.5).abs() < 1e-12, "{g}");
        assert_eq!(gbps_of(1000, 1, 5.0), None);
        assert_eq!(gbps_of(1000, 2, 0.0), None);
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn across_nodes_by_hand() {
        // 1 GB of gradients, 2 nodes × 1 rank, 1 Gbit/s: each node sends 2·1/2 · 1 GB = 1 GB
        // at 0.125 GB/s = 8 s, all of it the network's.
        let t = across_nodes(1_000_000_000, 1, 2, 0.5, Some(1.0)).unwrap();
        assert!(
            close(t.ms, 8000.0) && t.intra_ms == 0.0 && close(t.network_ms, 8000.0),
            "{t:?}"
        );
        // 2 nodes × 2 ranks, 0.5 GB/s inside, 1 Gbit/s between: R = 4, 1.5 GB per rank; steps
        // wait for the 0.125 GB/s link: 12 s, of which 1.5 / 0.5 = 3 s the node's own.
        let t = across_nodes(1_000_000_000, 2, 2, 0.5, Some(1.0)).unwrap();
        assert!(close(t.ms, 12000.0) && close(t.intra_ms, 3000.0), "{t:?}");
        assert!(close(t.network_ms, 9000.0), "{t:?}");
        // A 100 Gbit/s network (12.5 GB/s) is faster than the ranks: nothing added.
        let t = across_nodes(1_000_000_000, 2, 2, 0.5, Some(100.0)).unwrap();
        assert!(close(t.ms, 3000.0) && t.network_ms == 0.0, "{t:?}");
        // 4 nodes × 1 rank at 10 Gbit/s: 2·3/4 GB = 1.5 GB at 1.25 GB/s = 1.2 s.
        let t = across_nodes(1_000_000_000, 1, 4, 0.5, Some(10.0)).unwrap();
        assert!(close(t.ms, 1200.0), "{t:?}");
        // One node: the ring of before, whatever the network.
        let t = across_nodes(1_000_000_000, 2, 1, 0.5, None).unwrap();
        assert!(close(t.ms, 2000.0) && t.network_ms == 0.0, "{t:?}");
        assert_eq!(across_nodes(1000, 1, 1, 0.5, None).unwrap().ms, 0.0);
        // Several nodes need a network rate; a zero one is none.
        assert_eq!(across_nodes(1000, 1, 2, 0.5, None), None);
        assert_eq!(across_nodes(1000, 1, 2, 0.5, Some(0.0)), None);
        assert_eq!(across_nodes(1000, u64::MAX, 2, 0.5, Some(1.0)), None);
        // And back: 1 GB per node in 8 s is 1 Gbit/s.
        let g = network_gbit_of(1_000_000_000, 1, 2, 8000.0).unwrap();
        assert!(close(g, 1.0), "{g}");
        assert_eq!(network_gbit_of(1000, 2, 1, 5.0), None);
        assert_eq!(network_gbit_of(1000, 1, 2, 0.0), None);
    }
}
