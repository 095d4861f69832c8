//! torchrun's partial lines, joined back per rank before they are routed.
//!
//! torchrun `--tee` tails each rank's log file with `readline()`: at the file's end it hands
//! out whatever is there, a line's first part without its newline, and labels it; the rest
//! comes later with a label of its own. With two ranks the pieces interleave:
//!
//! ```text
//! [default0]:onednn_verbose,…,exec,…,0.5[default1]:onednn_verbose,…,exec,…,0.7\n
//! [default0]:\n
//! ```
//!
//! Read as lines, the first holds two ranks' verbose lines glued together and the second is a
//! lone label, which went to the terminal (CI saw it once). A line is cut where another label
//! of the same launcher starts a verbose line (or an iteration marker) inside it: each piece
//! before it is held for its rank until the piece that ends it arrives. Program text is never
//! cut on its own account: text that merely looks like a label (`print("[default1]:x")`,
//! `[epoch1]:a [epoch2]:b`) passes as it came, and a program line cut by torchrun reaches the
//! terminal exactly as torchrun printed it.

use crate::launcher::{self, Launcher};
use std::collections::BTreeMap;

/// Rank pieces held until their line's end arrives, by label.
#[derive(Default)]
pub struct Joiner {
    pending: BTreeMap<Vec<u8>, Vec<u8>>,
    whole: Vec<u8>,
}

/// A torchrun label at the start of `b`: its length and the bytes between `[` and the rank
/// number (the role, `default`), which every label of the run shares.
fn torchrun_label(b: &[u8]) -> Option<(usize, &[u8])> {
    let l = launcher::split(b)?;
    if l.launcher != Launcher::Torchrun {
        return None;
    }
    let inside = &b[1..l.prefix_len - 2];
    let digits = inside
        .iter()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .count();
    Some((l.prefix_len, &inside[..inside.len() - digits]))
}

impl Joiner {
    /// Takes one line as read (up to and with its newline, or the stream's last bytes) and
    /// calls `emit` with each whole line it completes, label first.
    pub fn push(&mut self, line: &[u8], mut emit: impl FnMut(&[u8])) {
        let Some((first_len, role)) = torchrun_label(line) else {
            return emit(line);
        };
        if self.pending.is_empty() && self.next_label(line, first_len, role).is_none() {
            // The common case: one whole line of one rank.
            return emit(line);
        }
        let mut start = 0;
        let mut label_len = first_len;
        loop {
            let next = self.next_label(line, start + label_len, role);
            let end = next.map_or(line.len(), |(at, _)| at);
            let label = &line[start..start + label_len];
            let text = &line[start + label_len..end];
            match next {
                // A piece without its newline: held for its rank.
                Some(_) => self
                    .pending
                    .entry(label.to_vec())
                    .or_default()
                    .extend_from_slice(text),
                None => {
                    self.whole.clear();
                    self.whole.extend_from_slice(label);
                    if let Some(held) = self.pending.remove(label) {
                        self.whole.extend_from_slice(&held);
                    }
                    self.whole.extend_from_slice(text);
                    emit(&self.whole);
                    return;
                }
            }
            let (at, len) = next.expect("matched Some above");
            start = at;
            label_len = len;
        }
    }

    /// Whatever is still held when the stream ends, one line per rank, as it arrived.
    pub fn finish(&mut self, mut emit: impl FnMut(&[u8])) {
        for (label, text) in std::mem::take(&mut self.pending) {
            let mut l = label;
            l.extend_from_slice(&text);
            emit(&l);
        }
    }

    /// The next torchrun label of the same role in `line` at or after `from` that starts a
    /// verbose line or an iteration marker: where it starts and its length.
    fn next_label(&self, line: &[u8], from: usize, role: &[u8]) -> Option<(usize, usize)> {
        let mut at = from;
        while let Some(i) = memchr::memchr(b'[', &line[at..]) {
            let s = at + i;
            if let Some((len, r)) = torchrun_label(&line[s..]) {
                let text = &line[s + len..];
                if r == role && crate::markers::log_part_start(text) == Some(0) {
                    return Some((s, len));
                }
            }
            at = s + 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn join(chunks: &[&str]) -> Vec<String> {
        let mut j = Joiner::default();
        let mut out = Vec::new();
        for c in chunks {
            j.push(c.as_bytes(), |l| {
                out.push(String::from_utf8(l.to_vec()).unwrap())
            });
        }
        j.finish(|l| out.push(String::from_utf8(l.to_vec()).unwrap()));
        out
    }

    #[test]
    fn interleaved_pieces_of_two_ranks_are_joined_per_rank() {
        // As CI's two-rank run printed it: rank 0's line cut before its newline, rank 1's
        // whole line after it, rank 0's newline on a line of its own.
        let out = join(&[
            "[default0]:onednn_verbose,exec,a,0.5[default1]:onednn_verbose,exec,b,0.7\n",
            "[default0]:\n",
        ]);
        assert_eq!(
            out,
            [
                "[default1]:onednn_verbose,exec,b,0.7\n",
                "[default0]:onednn_verbose,exec,a,0.5\n"
            ]
        );
    }

    #[test]
    fn program_text_passes_as_it_came_even_when_it_looks_like_a_label() {
        let lines = [
            // A program line torchrun cut: shown as torchrun printed it.
            "[default0]:loss [default0]:0.3\n",
            // Text that looks like labels (review): not cut, not held, not reordered.
            "[default0]:print [default1]:x\n",
            "[default0]:next\n",
            "[epoch1]:a [epoch2]:b\n",
            "[0]:a = b[1]:c\n",
            "[default1]:a[1]: b [rank]: c\n",
            "plain [default0]: text\n",
            "[1,0]<stdout>:x[default0]:onednn_verbose,exec\n",
        ];
        assert_eq!(join(&lines), lines);
    }

    #[test]
    fn a_program_piece_cut_by_another_ranks_verbose_line_is_joined() {
        let out = join(&[
            "[default0]:loss [default1]:onednn_verbose,exec,b,0.7\n",
            "[default0]:0.3\n",
        ]);
        assert_eq!(
            out,
            [
                "[default1]:onednn_verbose,exec,b,0.7\n",
                "[default0]:loss 0.3\n"
            ]
        );
    }

    #[test]
    fn a_piece_never_ended_is_kept_at_the_end() {
        let out = join(&["[default0]:partial[default1]:profilednn,iteration,2\n"]);
        assert_eq!(
            out,
            ["[default1]:profilednn,iteration,2\n", "[default0]:partial"]
        );
    }
}
