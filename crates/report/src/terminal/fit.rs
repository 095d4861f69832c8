//! Lines of prose folded to the terminal's width.
//!
//! Tables are laid out to the width by comfy-table; the sentences around them (the line counts,
//! the iterations, a finding's evidence and action) are written as one line each, and a line
//! wider than the terminal wraps wherever the terminal cuts it. Here they are folded between
//! words, continued under their first word.

/// `text` with every line wider than `width` characters folded between words; a continued
/// line is indented two spaces deeper than the line it continues. A word longer than the width
/// is cut.
pub fn fit(text: &str, width: usize) -> String {
    let width = width.max(20);
    let mut out = String::with_capacity(text.len() + text.len() / width * 8);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let indent = line
            .chars()
            .take_while(|c| *c == ' ')
            .count()
            .min(width / 2);
        let more = " ".repeat((indent + 2).min(width / 2));
        let mut col = 0;
        for (j, word) in line.trim_start().split(' ').enumerate() {
            let mut word = word.chars().collect::<Vec<char>>();
            let first = j == 0;
            if first {
                out.push_str(&" ".repeat(indent));
                col = indent;
            } else if col + 1 + word.len() > width {
                out.push('\n');
                out.push_str(&more);
                col = more.len();
            } else {
                out.push(' ');
                col += 1;
            }
            while col + word.len() > width {
                let room = width - col;
                out.extend(&word[..room]);
                word.drain(..room);
                out.push('\n');
                out.push_str(&more);
                col = more.len();
            }
            out.extend(&word);
            col += word.len();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_fold_between_words_under_their_indent() {
        let s = fit("short\n  one two three four five six seven", 20);
        assert_eq!(s, "short\n  one two three four\n    five six seven");
        for l in s.lines() {
            assert!(l.chars().count() <= 20, "{l}");
        }
        // A word longer than the width is cut; nothing is lost.
        let s = fit(&"x".repeat(50), 20);
        assert!(s.lines().all(|l| l.chars().count() <= 20), "{s}");
        assert_eq!(s.chars().filter(|c| *c == 'x').count(), 50);
    }
}
