//! The rates of the plan's all-reduce, with where each came from (for its assumptions): inside
//! a node given (`--allreduce-gbps`), measured from a multi-rank log of the same training
//! (`--allreduce-log`) or the default; between nodes measured from one log per node of a
//! multi-node run (`--network-log`).

use super::logged::{read, Logged, LoggedError};
use super::{allreduce, rate, Outside, Target};
use std::path::{Path, PathBuf};

/// A rate and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    pub value: f64,
    pub source: String,
}

/// Why a rate could not be had; each says what to give instead.
#[derive(Debug, thiserror::Error)]
pub enum MeasuredError {
    #[error("--allreduce-gbps {0}: give a positive rate in GB/s per rank")]
    NotPositive(f64),
    #[error(
        "{}: no time outside oneDNN per iteration (record with ONEDNN_VERBOSE_TIMESTAMP=1 and \
         iteration markers), so the {what} cannot be measured; give {flag}",
        log.display()
    )]
    NoTime {
        log: PathBuf,
        what: &'static str,
        flag: &'static str,
    },
    #[error(
        "--allreduce-log measures the all-reduce against a single-rank LOG; {} has {ranks} ranks: \
         plan the single-rank log of the same training, or give --allreduce-gbps",
        log.display()
    )]
    NotSingleRank { log: PathBuf, ranks: usize },
    #[error(
        "--network-log: {} holds {ranks} ranks, {} holds {first_ranks}: give one log per node of \
         one run",
        log.display(),
        first.display()
    )]
    NodeRanks {
        log: PathBuf,
        ranks: usize,
        first: PathBuf,
        first_ranks: u64,
    },
    #[error(transparent)]
    Logged(#[from] LoggedError),
    #[error("--allreduce-log {}", log.display())]
    Allreduce {
        log: PathBuf,
        #[source]
        error: rate::RateError,
    },
    #[error("--network-log")]
    Network(#[source] rate::NetworkRateError),
    #[error("--network-gbps {0}: give a positive rate in Gbit/s")]
    NetworkNotPositive(f64),
    #[error(
        "--nodes {0}: the all-reduce crosses the network between the nodes; give its rate, \
         --network-gbps GBIT (Gbit/s each way: 10 for 10GbE; `bench/gloo_allreduce.py` run \
         on the nodes measures what Gloo gets)"
    )]
    NoNetworkRate(u64),
}

/// The machine planned for and its all-reduce rates, as the flags give them.
pub struct Given<'a> {
    pub cores: u64,
    pub sockets: u64,
    /// Nodes of `cores` cores each.
    pub nodes: u64,
    /// `--allreduce-gbps`, `--allreduce-log`.
    pub allreduce_gbps: Option<f64>,
    pub allreduce_log: Option<&'a Path>,
    /// `--network-gbps`, `--network-log`.
    pub network_gbps: Option<f64>,
    pub network_log: &'a [PathBuf],
}

/// The machine planned for and its all-reduce rates (given, measured from the logs `given`
/// names, or the defaults), each with where it came from. `this_log`: the planned log, its
/// reading and its time outside oneDNN. More than one node needs a network rate: a plan across
/// nodes without one would price the all-reduce as if it stayed inside a node.
pub fn target(
    given: &Given<'_>,
    this_log: (&Path, &Logged, Option<&Outside>),
    gradient_bytes: u64,
) -> Result<Target, MeasuredError> {
    let intra = allreduce_rate(
        given.allreduce_gbps,
        given.allreduce_log,
        this_log,
        given.cores,
        gradient_bytes,
    )?;
    let network = network_rate(
        given.network_log,
        this_log,
        given.cores,
        gradient_bytes,
        intra.value,
    )?;
    let network_gbps = given.network_gbps.or(network.as_ref().map(|m| m.value));
    let network_gbit = network_gbit(given.nodes, network_gbps)?;
    Ok(Target {
        cores: given.cores,
        sockets: given.sockets,
        allreduce_gbps: intra.value,
        allreduce_source: intra.source,
        nodes: given.nodes,
        network_gbit,
        network_source: network_gbit.map(|_| {
            network
                .map(|m| m.source)
                .unwrap_or_else(|| "--network-gbps".to_string())
        }),
    })
}

/// The network rate a plan of `nodes` nodes uses: none on one node, a positive one (given or
/// measured) across nodes.
fn network_gbit(nodes: u64, gbps: Option<f64>) -> Result<Option<f64>, MeasuredError> {
    match (nodes, gbps) {
        (_, Some(g)) if !(g.is_finite() && g > 0.0) => Err(MeasuredError::NetworkNotPositive(g)),
        (1, _) => Ok(None),
        (n, None) => Err(MeasuredError::NoNetworkRate(n)),
        (_, g) => Ok(g),
    }
}

/// The all-reduce rate inside a node, GB/s per rank: `given`, else measured from `multi_log`
/// against the single-rank `log` (its reading `logged`, its time outside oneDNN `outside`),
/// else the default — never the memory bandwidth (Gloo goes through sockets). `cores`: the
/// planned cores, shared by the multi-rank log's ranks when its header gives no thread count.
pub fn allreduce_rate(
    given: Option<f64>,
    multi_log: Option<&Path>,
    (log, logged, outside): (&Path, &Logged, Option<&Outside>),
    cores: u64,
    gradient_bytes: u64,
) -> Result<Rate, MeasuredError> {
    if let Some(g) = given {
        if !(g.is_finite() && g > 0.0) {
            return Err(MeasuredError::NotPositive(g));
        }
        return Ok(Rate {
            value: g,
            source: "--allreduce-gbps".into(),
        });
    }
    let Some(multi_path) = multi_log else {
        return Ok(Rate {
            value: allreduce::DEFAULT_GBPS,
            source: "assumed default: Gloo over TCP loopback, 2 ranks on a 2-vCPU Xeon, by \
                     bench/gloo_allreduce.py; run it on your node and give --allreduce-gbps, or \
                     --allreduce-log a multi-rank log of this training"
                .into(),
        });
    };
    let no_time = |p: &Path| MeasuredError::NoTime {
        log: p.into(),
        what: "all-reduce",
        flag: "--allreduce-gbps",
    };
    if logged.rank_batches.len() > 1 {
        return Err(MeasuredError::NotSingleRank {
            log: log.into(),
            ranks: logged.rank_batches.len(),
        });
    }
    let single = outside.ok_or_else(|| no_time(log))?;
    let multi = read(multi_path, None, None)?;
    let ranks = multi.rank_batches.len() as u64;
    let multi_outside = multi
        .outside((cores / ranks.max(1)).max(1))
        .ok_or_else(|| no_time(multi_path))?;
    let m = rate::from_runs(single, &multi_outside, ranks, gradient_bytes).map_err(|error| {
        MeasuredError::Allreduce {
            log: multi_path.into(),
            error,
        }
    })?;
    Ok(Rate {
        value: m.gbps,
        source: format!(
            "measured: {} ({} ranks) spends {:.1} ms per iteration outside oneDNN, the \
             single-rank log {:.1} ms at its {} samples per thread: {:.1} ms of all-reduce",
            multi_path.display(),
            ranks,
            m.multi_outside_ms,
            m.single_outside_ms,
            multi_outside.logged_batch / multi_outside.logged_threads.max(1),
            m.exposed_ms
        ),
    })
}

/// The network rate between nodes, Gbit/s, measured from `node_logs` (one per node of a
/// multi-node run of the same training) against the planned `log`'s framework time (its own
/// all-reduce at `intra_gbps` taken out); none without node logs.
pub fn network_rate(
    node_logs: &[PathBuf],
    (log, logged, outside): (&Path, &Logged, Option<&Outside>),
    cores: u64,
    gradient_bytes: u64,
    intra_gbps: f64,
) -> Result<Option<Rate>, MeasuredError> {
    let Some(first_log) = node_logs.first() else {
        return Ok(None);
    };
    let no_time = |p: &Path| MeasuredError::NoTime {
        log: p.into(),
        what: "network",
        flag: "--network-gbps",
    };
    // The planned log's framework time: its own all-reduce (on one node) taken out.
    let single = Outside {
        logged_allreduce_ms: allreduce::ms(
            gradient_bytes,
            logged.rank_batches.len() as u64,
            intra_gbps,
        )
        .unwrap_or(0.0),
        ..outside.ok_or_else(|| no_time(log))?.clone()
    };
    let nodes: Vec<Logged> = node_logs
        .iter()
        .map(|p| read(p, None, None))
        .collect::<Result<_, _>>()?;
    let per_node = nodes[0].rank_batches.len() as u64;
    if let Some((p, n)) = node_logs
        .iter()
        .zip(&nodes)
        .find(|(_, n)| n.rank_batches.len() as u64 != per_node)
    {
        return Err(MeasuredError::NodeRanks {
            log: p.clone(),
            ranks: n.rank_batches.len(),
            first: first_log.clone(),
            first_ranks: per_node,
        });
    }
    let multi = Logged::of_nodes(nodes)
        .and_then(|all| all.outside((cores / per_node.max(1)).max(1)))
        .ok_or_else(|| no_time(first_log))?;
    let n = node_logs.len() as u64;
    let m = rate::network_from_runs((&single, &multi), (n, per_node), gradient_bytes, intra_gbps)
        .map_err(MeasuredError::Network)?;
    Ok(Some(Rate {
        value: m.gbit,
        source: format!(
            "measured: the {n} nodes × {per_node} rank(s) of --network-log spend {:.1} ms per \
             iteration outside oneDNN, the planned log's framework time is {:.1} ms at their \
             samples per thread: {:.1} ms of all-reduce",
            m.multi_outside_ms, m.single_outside_ms, m.exposed_ms
        ),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_across_nodes_needs_a_positive_network_rate() {
        assert_eq!(network_gbit(1, None).unwrap(), None);
        assert_eq!(network_gbit(2, Some(10.0)).unwrap(), Some(10.0));
        let e = network_gbit(2, None).unwrap_err().to_string();
        assert!(
            e.starts_with("--nodes 2: the all-reduce crosses the network"),
            "{e}"
        );
        // A bad rate is refused even on one node, where it would go unused.
        let e = network_gbit(1, Some(0.0)).unwrap_err().to_string();
        assert_eq!(e, "--network-gbps 0: give a positive rate in Gbit/s");
        assert!(network_gbit(2, Some(f64::NAN)).is_err());
    }
}
