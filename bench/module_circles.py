#!/usr/bin/env python3
"""Import circles between the modules of each crate (and between crates), and between the
modules of the Python package (python/profilednn).

A module is a source file (`foo.rs`, `foo/mod.rs`, `lib.rs`). An edge A -> B is a path in A
that names B (`use crate::b::…`, `super::b`, `crate::b::x` in code). Edges between a module
and its own ancestors or descendants are left out (a parent declares and re-exports its
children; a child uses the items its parent defines), so a circle here is one between modules
that are not in one line of descent: the kind that tangles a crate. Crate-level edges come
from each crate's Cargo.toml. Prints each circle found; exits 1 when there is any.

Python: a module is a `.py` file (a package is its `__init__.py`); an edge A -> B is any
relative or `profilednn.` import in A that names B, at module level or inside a function (a
function-level import only hides a circle from the interpreter, not from the reader). Edges to
a module's own package ancestors are left out, as for Rust.

    python3 bench/module_circles.py [crates/...]
"""
import ast
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def module_of(crate_src, path):
    rel = os.path.relpath(path, crate_src)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel == ["lib"] or rel == ["main"]:
        return ()
    return tuple(rel)


def strip_comments(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def test_free(text):
    """The text without `#[cfg(test)] mod tests { … }` blocks (test code may reach anywhere)."""
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\(crate\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def resolve(mods, here, parts):
    """The longest known module that the path `parts` (from `here`) names."""
    if parts[0] == "crate":
        base, rest = (), parts[1:]
    elif parts[0] in ("super", "self"):
        base = here
        rest = list(parts)
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    else:
        return None
    best = None
    for k in range(len(rest) + 1):
        cand = tuple(base) + tuple(rest[:k])
        if cand in mods:
            best = cand
    return best


def sources(root, ext, name_of):
    """{module name: path} of the files under `root` ending in `ext`."""
    return {name_of(os.path.join(d, f)): os.path.join(d, f)
            for d, _, files in os.walk(root) for f in files if f.endswith(ext)}


def crate_graph(src):
    mods = sources(src, ".rs", lambda p: module_of(src, p))
    edges = {m: set() for m in mods}
    for m, p in mods.items():
        text = test_free(strip_comments(open(p, encoding="utf-8").read()))
        # `use a::{b, c::d}` groups: expand one level.
        for g in re.finditer(r"\b((?:crate|super|self)(?:::\w+)*)::\{([^}]*)\}", text):
            for item in g.group(2).split(","):
                item = item.strip().split(" as ")[0]
                if item:
                    t = resolve(mods, m, g.group(1).split("::") + item.split("::"))
                    if t is not None:
                        edges[m].add(t)
        for g in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", text):
            t = resolve(mods, m, g.group(1).split("::"))
            if t is not None:
                edges[m].add(t)
    for m in edges:
        edges[m] = {t for t in edges[m] if t != m and t[: len(m)] != m and m[: len(t)] != t}
    return edges


def circles(edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


PY_PACKAGE = os.path.join(ROOT, "python", "profilednn")


def py_module_of(path, pkg_root):
    rel = os.path.relpath(path, os.path.dirname(pkg_root))[:-3].split(os.sep)
    if rel[-1] == "__init__":
        rel = rel[:-1]
    return tuple(rel)


def py_graph(pkg_root=PY_PACKAGE):
    """Module -> the package modules it imports (Python), ancestors left out."""
    mods = sources(pkg_root, ".py", lambda p: py_module_of(p, pkg_root))
    edges = {m: set() for m in mods}
    for m, p in mods.items():
        is_pkg = p.endswith("__init__.py")
        tree = ast.parse(open(p, encoding="utf-8").read(), p)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    # `from .x import y`: relative to the module's package.
                    base = m if is_pkg else m[:-1]
                    base = base[: len(base) - (node.level - 1)]
                else:
                    base = ()
                    if not (node.module or "").startswith("profilednn"):
                        continue
                target = tuple(base) + tuple((node.module or "").split(".")) if node.module else tuple(base)
                target = tuple(x for x in target if x)
                names = [target + (a.name,) for a in node.names]
            elif isinstance(node, ast.Import):
                names = [tuple(a.name.split(".")) for a in node.names]
                target = None
            else:
                continue
            for cand in names + ([target] if target else []):
                # The longest known module the name reaches.
                for k in range(len(cand), 0, -1):
                    if cand[:k] in mods:
                        edges[m].add(cand[:k])
                        break
    for m in edges:
        edges[m] = {t for t in edges[m] if t != m and m[: len(t)] != t}
    return edges


def main():
    crates = sys.argv[1:] or sorted(
        os.path.join("crates", c) for c in os.listdir(os.path.join(ROOT, "crates"))
    )
    found = 0
    deps = {}
    for c in crates:
        src = os.path.join(ROOT, c, "src")
        name = os.path.basename(c)
        toml = open(os.path.join(ROOT, c, "Cargo.toml"), encoding="utf-8").read()
        body = toml.split("[dependencies]", 1)[-1].split("\n[", 1)[0]
        deps[name] = set(re.findall(r"^profilednn-([a-z]+)", body, flags=re.M))
        for comp in circles(crate_graph(src)):
            found += 1
            print(f"{c}: " + " <-> ".join("::".join(m) or "lib" for m in comp))
    for comp in circles(deps):
        found += 1
        print("crates: " + " <-> ".join(comp))
    py = py_graph() if os.path.isdir(PY_PACKAGE) else {}
    for comp in circles(py):
        found += 1
        print("python: " + " <-> ".join(".".join(m) for m in comp))
    print(f"{found} circle(s) in {len(crates)} crates and {len(py)} Python modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
