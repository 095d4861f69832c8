//! Which logs of a report get a column of their own.
//!
//! Logs side by side (the ranks of a run, or several logs given together) each get a column in
//! every breakdown and a line in the per-log sections: readable for 2 ranks, a page wide at 64.
//! Beyond [`AUTO_COLUMNS`] logs the report shows the ranks' distribution instead, and
//! `--ranks all` or `--ranks 0,17` brings back the columns of every rank or of those.

use profilednn_analysis::summary::LogTotals;

/// Up to this many logs side by side get their columns without being asked.
pub const AUTO_COLUMNS: usize = 8;

/// The logs (ranks) given a column of their own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RankColumns {
    /// Every log when there are at most [`AUTO_COLUMNS`], else none.
    #[default]
    Auto,
    /// Every log.
    All,
    /// The ranks of multi-rank logs with these numbers.
    Only(Vec<u32>),
}

/// The rank of a log named as a multi-rank log's rank is (`… [rank 17]`).
pub fn rank_of_source(source: &str) -> Option<u32> {
    let (_, r) = source.rsplit_once(" [rank ")?;
    r.strip_suffix(']')?.parse().ok()
}

impl RankColumns {
    /// Parses `all` or a list of ranks (`0,17`).
    pub fn parse(s: &str) -> Result<RankColumns, String> {
        if s.trim() == "all" {
            return Ok(RankColumns::All);
        }
        s.split(',')
            .map(|r| {
                r.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("`{r}` is not a rank: give `all` or ranks like 0,17"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(RankColumns::Only)
    }

    /// Whether the logs `n` side by side are shown one by one when every one of them is
    /// picked ([`RankColumns::pick`]).
    pub fn each(&self, n: usize) -> bool {
        match self {
            RankColumns::Auto => n <= AUTO_COLUMNS,
            RankColumns::All => true,
            RankColumns::Only(_) => false,
        }
    }

    /// The indices of `logs` that get a column.
    pub fn pick(&self, logs: &[LogTotals]) -> Vec<usize> {
        match self {
            RankColumns::Only(ranks) => logs
                .iter()
                .enumerate()
                .filter(|(_, l)| rank_of_source(&l.source).is_some_and(|r| ranks.contains(&r)))
                .map(|(i, _)| i)
                .collect(),
            _ if self.each(logs.len()) => (0..logs.len()).collect(),
            _ => Vec::new(),
        }
    }

    /// Whether rank `rank` of a multi-rank log of `n` ranks is shown on its own.
    pub fn shows_rank(&self, rank: u32, n: usize) -> bool {
        match self {
            RankColumns::Only(ranks) => ranks.contains(&rank),
            _ => self.each(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_picked_by_number_or_all() {
        assert_eq!(RankColumns::parse("all"), Ok(RankColumns::All));
        assert_eq!(
            RankColumns::parse("0, 17"),
            Ok(RankColumns::Only(vec![0, 17]))
        );
        assert!(RankColumns::parse("x").is_err());
        assert_eq!(rank_of_source("a.log [rank 17]"), Some(17));
        assert_eq!(rank_of_source("a.log"), None);
        assert!(RankColumns::Auto.each(8) && !RankColumns::Auto.each(9));
        assert!(RankColumns::All.shows_rank(5, 1024));
        assert!(RankColumns::Only(vec![5]).shows_rank(5, 2));
        assert!(!RankColumns::Only(vec![5]).shows_rank(6, 2));
    }
}
