//! Launcher-labelled lines (`[default0]:…`, `[1,0]<stdout>:…`, `[0] …`, `0: …`): the label
//! parser, the per-rank split and the classifier behind it. A label that does not parse leaves
//! the line as it is; a label that parses is exactly the bytes in front of the rank's text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use profilednn_verbose::demux::{demux, sniff, RankIndex};
use profilednn_verbose::launcher::split;

fuzz_target!(|data: &[u8]| {
    for line in data.split(|&c| c == b'\n') {
        if let Some(l) = split(line) {
            assert!(l.prefix_len > 0 && l.prefix_len <= line.len());
            assert_eq!(l.text, &line[l.prefix_len..]);
            // The label alone, followed by other text, parses the same.
            let mut again = line[..l.prefix_len].to_vec();
            again.extend_from_slice(b"x");
            let a = split(&again).expect("a label parses whatever follows it");
            assert_eq!(
                (a.launcher, a.rank, a.prefix_len),
                (l.launcher, l.rank, l.prefix_len)
            );
            let _ = profilednn_verbose::classify(l.text);
        }
    }
    if let Some(launcher) = sniff(data) {
        // Every byte lands somewhere: ranks' texts plus their labels plus unlabelled lines.
        let s = demux(data, launcher);
        let ranked: usize = s.ranks.values().map(Vec::len).sum();
        assert!(ranked + s.unlabelled.len() <= data.len());
        assert!(!s.ranks.is_empty());
        // The index a labelled log is read through while it streams: every line once, in
        // order, each range inside the line it came from.
        let ix = RankIndex::of(data, launcher);
        let mut ranges: Vec<_> = ix.ranks.iter().flat_map(|r| r.1.iter()).collect();
        ranges.extend(ix.unlabelled.iter());
        ranges.sort_by_key(|r| r.start);
        let mut end = 0;
        for r in ranges {
            assert!(r.start >= end && r.end <= data.len() && r.start <= r.end);
            end = r.end;
        }
        assert_eq!(ix.ranks.len(), s.ranks.len());
    }
});
