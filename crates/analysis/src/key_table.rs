//! The primitive keys of the ranks one worker reads from a labelled log, held once.
//!
//! Every rank of a data-parallel run executes the same few hundred distinct primitives. With a
//! key map per rank, 64 ranks hold 64 copies of each key (about 250 bytes of text) and of its
//! hash table, several MB that do not stay in a core's cache while the worker goes from rank to
//! rank; each line then waits on memory for its key's comparison. Here a worker looks every
//! key up in one table, shared by its ranks and small enough to stay cached, and each rank
//! keeps only its counters, by the key's number. At the end each rank's counters become the
//! key maps of its own [`Tally`](crate::Tally), exactly what counting them there would have
//! given.

use crate::tally::{KeyMaps, KeyStats, KeyStore, LinePos};
use foldhash::HashMap;

/// Distinct keys (dialect, `operation,body` text) by number, for the ranks of one worker.
#[derive(Debug, Default)]
pub struct KeyTable {
    /// Per dialect, key → its number.
    ids: [HashMap<Box<[u8]>, u32>; 4],
    /// By number: the key's dialect and text.
    keys: Vec<(usize, Box<[u8]>)>,
    /// Calls looked up but not counted yet: (key number, first position, time).
    pending: Vec<(u32, LinePos, Option<u64>)>,
}

/// One rank's counters, by the number of the key in the worker's [`KeyTable`].
#[derive(Debug, Default)]
pub struct RankKeys {
    stats: Vec<Option<KeyStats>>,
}

/// A rank's counters seen through its worker's table: the [`KeyStore`] of a rank's lines.
pub struct SharedKeys<'a> {
    pub table: &'a mut KeyTable,
    pub rank: &'a mut RankKeys,
}

impl KeyTable {
    /// The number of `key` in `dialect`, given it on first sight.
    #[inline]
    fn id(&mut self, dialect: usize, key: &[u8]) -> usize {
        if let Some(&id) = self.ids[dialect].get(key) {
            return id as usize;
        }
        let id = self.keys.len();
        let boxed: Box<[u8]> = key.into();
        self.ids[dialect].insert(boxed.clone(), id as u32);
        self.keys.push((dialect, boxed));
        id
    }

    /// Moves a rank's counters into `maps`, its tally's own key maps (added to what they hold).
    pub fn into_maps(&self, rank: RankKeys, maps: &mut KeyMaps) {
        for (id, stats) in rank.stats.into_iter().enumerate() {
            let Some(stats) = stats else { continue };
            let (dialect, key) = &self.keys[id];
            match maps[*dialect].get_mut(key) {
                Some(m) => m.merge(&stats),
                None => {
                    maps[*dialect].insert(key.clone(), stats);
                }
            }
        }
    }
}

impl SharedKeys<'_> {
    /// Counts the calls added since the last flush, in the order they came. Must be called
    /// before the rank's counters are read or another rank's lines are added.
    ///
    /// Why apart from [`KeyStore::add`]: a rank's counters are cold in the cache (64 ranks'
    /// counters are MBs), and counting a call right after parsing its line has the core wait
    /// on one counter's memory after another. Counted in a loop of their own, the calls'
    /// counters are independent loads, which the core fetches several at a time.
    pub fn flush(&mut self) {
        let stats = &mut self.rank.stats;
        if stats.len() < self.table.keys.len() {
            stats.resize_with(self.table.keys.len(), || None);
        }
        // First only read what each count will update: independent loads, which the core
        // issues several at a time; the counts below then find their memory in cache rather
        // than waiting on it one after the other.
        let mut touched = 0u64;
        for &(id, _, _) in &self.table.pending {
            if let Some(s) = &stats[id as usize] {
                touched ^= s.durations.touch();
            }
        }
        std::hint::black_box(touched);
        for &(id, pos, time_ps) in &self.table.pending {
            stats[id as usize]
                .get_or_insert_with(|| KeyStats::new(pos))
                .add(time_ps);
        }
        self.table.pending.clear();
    }
}

impl KeyStore for SharedKeys<'_> {
    #[inline]
    fn add(&mut self, dialect: usize, key: &[u8], pos: LinePos, time_ps: Option<u64>) {
        let id = self.table.id(dialect, key) as u32;
        self.table.pending.push((id, pos, time_ps));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u64) -> LinePos {
        LinePos { chunk: 0, line }
    }

    /// Two ranks counted through one table hold what their own maps would.
    #[test]
    fn shared_counts_are_each_ranks_own() {
        let calls: [&[(usize, &[u8], u64)]; 2] = [
            &[
                (1, b"exec,conv", 5),
                (1, b"exec,relu", 2),
                (1, b"exec,conv", 7),
            ],
            &[(1, b"exec,relu", 3), (3, b"exec,conv", 4)],
        ];
        let mut table = KeyTable::default();
        let mut shared: Vec<RankKeys> = (0..2).map(|_| RankKeys::default()).collect();
        for (r, calls) in calls.iter().enumerate() {
            let mut keys = SharedKeys {
                table: &mut table,
                rank: &mut shared[r],
            };
            for (i, &(d, k, t)) in calls.iter().enumerate() {
                keys.add(d, k, pos(i as u64), Some(t));
            }
            keys.flush();
        }
        for (r, calls) in calls.iter().enumerate() {
            let mut own = KeyMaps::default();
            for (i, &(d, k, t)) in calls.iter().enumerate() {
                own.add(d, k, pos(i as u64), Some(t));
            }
            let mut got = KeyMaps::default();
            table.into_maps(std::mem::take(&mut shared[r]), &mut got);
            for d in 0..4 {
                let mut a: Vec<_> = own[d]
                    .iter()
                    .map(|(k, s)| (k.clone(), s.calls, s.time_ps, s.first))
                    .collect();
                let mut b: Vec<_> = got[d]
                    .iter()
                    .map(|(k, s)| (k.clone(), s.calls, s.time_ps, s.first))
                    .collect();
                a.sort();
                b.sort();
                assert_eq!(a, b, "rank {r}, dialect {d}");
            }
        }
        // Rank 1's relu is its first line, though rank 0 saw the key first.
        let mut got = KeyMaps::default();
        let mut table2 = KeyTable::default();
        let mut r0 = RankKeys::default();
        let mut r1 = RankKeys::default();
        for (rank, at, t) in [(&mut r0, 9, None), (&mut r1, 2, Some(1))] {
            let mut keys = SharedKeys {
                table: &mut table2,
                rank,
            };
            keys.add(1, b"k", pos(at), t);
            keys.flush();
        }
        table2.into_maps(r1, &mut got);
        let s = &got[1][&b"k"[..]];
        assert_eq!((s.calls, s.untimed, s.first), (1, 0, pos(2)));
    }
}
