#!/usr/bin/env python3
"""Non-test Rust lines per workspace crate, and each crate's share of them.

Issue 53's measure of whether a newcomer can find their way: no crate should hold more than
15 % of the code. Counted: every `.rs` file under a crate's `src/` (and `build.rs`), less
`#[cfg(test)]` modules (inline blocks and `mod x;` files), blank lines and comment-only lines
(`//`, `///`, `//!`, and `/* */` blocks). `tests/`, `benches/` and `examples/` are not counted.

Usage: python3 bench/crate_lines.py [--max PERCENT]   (exit 1 when a crate is over PERCENT)
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def strip_strings(line):
    """The line without string and char literals, so that their braces are not counted."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    return re.sub(r"'(\\.|[^'\\])'", "''", line)


def count_file(path, skip_files):
    """Code lines of one file; `#[cfg(test)] mod x;` adds its file to `skip_files`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    n = 0
    i = 0
    in_block = False
    while i < len(lines):
        s = lines[i].strip()
        if in_block:
            if "*/" in s:
                in_block = False
            i += 1
            continue
        if s.startswith("/*"):
            in_block = "*/" not in s
            i += 1
            continue
        if s == "#[cfg(test)]":
            j = i + 1
            while j < len(lines) and (
                not lines[j].strip() or lines[j].strip().startswith(("//", "#["))
            ):
                j += 1
            head = lines[j].strip() if j < len(lines) else ""
            m = re.match(r"(pub(\([^)]*\))?\s+)?mod\s+(\w+)\s*(;|\{)", head)
            if m:
                if m.group(4) == ";":
                    skip_files.add(m.group(3))
                    i = j + 1
                    continue
                depth = 0
                k = j
                while k < len(lines):
                    code = strip_strings(lines[k].split("//")[0])
                    depth += code.count("{") - code.count("}")
                    if depth <= 0 and k > j:
                        break
                    k += 1
                i = k + 1
                continue
        if s and not s.startswith("//"):
            n += 1
        i += 1
    return n


def count_crate(crate):
    total = 0
    files = sorted((crate / "src").rglob("*.rs"))
    if (crate / "build.rs").exists():
        files.append(crate / "build.rs")
    skipped = set()
    counts = {}
    for f in files:
        skip = set()
        counts[f] = count_file(f, skip)
        skipped |= {f.parent / f"{name}.rs" for name in skip}
        skipped |= {f.parent / f.stem / f"{name}.rs" for name in skip}
        skipped |= {f.parent / name / "mod.rs" for name in skip}
    for f, n in counts.items():
        if f not in skipped:
            total += n
    return total


def main():
    limit = None
    if "--max" in sys.argv:
        limit = float(sys.argv[sys.argv.index("--max") + 1])
    crates = sorted(p for p in (ROOT / "crates").iterdir() if (p / "Cargo.toml").exists())
    lines = {c.name: count_crate(c) for c in crates}
    whole = sum(lines.values())
    over = []
    print(f"{'crate':<14}{'lines':>8}{'share':>8}")
    for name, n in sorted(lines.items(), key=lambda kv: -kv[1]):
        share = 100.0 * n / whole if whole else 0.0
        print(f"{name:<14}{n:>8}{share:>7.1f}%")
        if limit is not None and share > limit:
            over.append(name)
    print(f"{'all':<14}{whole:>8}")
    if over:
        print(f"over {limit:g} %: {', '.join(over)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
