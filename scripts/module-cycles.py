#!/usr/bin/env python3
"""Fails when the modules of a crate import each other around a circle.

A module is taken with everything under it: `index` means `index/mod.rs` and every file below
it. For each module, its child modules must not import each other around a circle, where a
child imports another when any file in the first child's subtree names a path into the second's
(`crate::a::b`, `super::x`, `self::x`, a `use` tree with braces, or a child's name). So
`index::derived` importing `rank` while `rank` imports anything in `index` is a circle between
`index` and `rank`, even though no single file imports its own importer.

Two links never close a circle: a module naming its own submodules (a parent is made of its
children), and a submodule naming what an enclosing module declares (that is how a Rust module
and its parts work; the enclosing module's own imports are checked at its own level).

Test code is left out: `#[cfg(test)]` items and modules, and comments and string literals.
Usage: module-cycles.py CRATE_DIR [CRATE_DIR ...]; `--self-test` checks the checker.
"""
import os
import re
import sys

from rust_code import IDENT, masked, without_tests

def use_paths(tree):
    """The paths a `use` tree names: `a::{b, c::{d as e, *}}` -> [a::b, a::c::d, a::c]."""
    tree = re.sub(r"\s+", "", re.sub(rf"\s+as\s+{IDENT}", "", tree))

    def expand(s):
        depth = 0
        for k, ch in enumerate(s):
            if ch == "{":
                if depth == 0:
                    prefix = s[:k].rstrip(":")
                    inner = s[k + 1:s.rfind("}")]
                    parts, level, start = [], 0, 0
                    for j, c in enumerate(inner):
                        level += (c == "{") - (c == "}")
                        if c == "," and level == 0:
                            parts.append(inner[start:j])
                            start = j + 1
                    parts.append(inner[start:])
                    paths = []
                    for p in filter(None, parts):
                        for q in expand(p):
                            if q in ("self", "*"):
                                paths.append(prefix)
                            else:
                                paths.append(f"{prefix}::{q}" if prefix else q)
                    return paths
                depth += 1
        return [s.removesuffix("::*")]

    return [p for p in expand(tree) if p]


def named_paths(text):
    """Every path the code names that can lead to a module of this crate: `use` trees, and
    `crate::`, `super::` and `self::` paths written anywhere."""
    paths = []
    for m in re.finditer(r"\buse\s+([^;]+);", text):
        paths.extend(use_paths(m.group(1)))
    for m in re.finditer(rf"(?<![\w:$])((?:crate|self|super)(?:\s*::\s*{IDENT})+)", text):
        paths.append(re.sub(r"\s+", "", m.group(1)))
    return paths


def modules(crate):
    """Each module of `crate` (as a tuple of names) with the raw paths its own file names and
    the names of its test-only children."""
    base = os.path.join(crate, "src")
    found = {}
    for folder, _, files in os.walk(base):
        for f in sorted(files):
            if not f.endswith(".rs"):
                continue
            path = os.path.join(folder, f)
            parts = os.path.relpath(path, base)[:-3].split(os.sep)
            if parts[0] == "bin":
                continue
            if parts[-1] == "mod" or parts in (["lib"], ["main"]):
                parts = parts[:-1]
            text, test_children = without_tests(masked(open(path, encoding="utf-8").read()))
            found[tuple(parts)] = (named_paths(text), test_children)
    # Test-only modules (and everything under them) are not part of the crate's design.
    tests = {m + (c,) for m, (_, cs) in found.items() for c in cs}
    return {
        m: paths
        for m, (paths, _) in found.items()
        if not any(m[: len(t)] == t for t in tests)
    }


def resolve(module, path, names):
    """The deepest module of the crate that `path`, written in `module`, leads into; None for
    a path outside the crate (another crate, `std`, a local name)."""
    segs = path.split("::")
    if segs[0] == "crate":
        target, segs = (), segs[1:]
    elif segs[0] in ("self", "super"):
        target = module
        while segs and segs[0] in ("self", "super"):
            if segs[0] == "super":
                target = target[:-1]
            segs = segs[1:]
    elif module + (segs[0],) in names:
        target = module
    else:
        return None
    full = target + tuple(segs)
    for k in range(len(full), -1, -1):
        if full[:k] in names:
            return full[:k]
    return None


def links(found):
    """(importer, imported, path) for every path from one module into another of the crate."""
    names = set(found)
    out = []
    for m, paths in found.items():
        for p in paths:
            t = resolve(m, p, names)
            if t is not None and t != m:
                out.append((m, t, p))
    return out


def level_edges(found):
    """For each module, the links between its children (each taken with its subtree):
    {parent: {(child_a, child_b): [(importer, path), ...]}}."""
    levels = {}
    for m, t, p in links(found):
        common = 0
        while common < min(len(m), len(t)) and m[common] == t[common]:
            common += 1
        # One is inside the other: a parent naming its parts, or a part naming what an
        # enclosing module declares.
        if common == len(m) or common == len(t):
            continue
        parent = m[:common]
        edge = (m[: common + 1], t[: common + 1])
        levels.setdefault(parent, {}).setdefault(edge, []).append((m, p))
    return levels


def circles(edges):
    """The strongly connected components of more than one node (Tarjan, iteratively)."""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out = {}, {}, [], set(), []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return out


def name(m):
    return "::".join(m) or "crate"


def report(crate, found):
    """The circles of `crate`, each as lines saying which file's path closes it."""
    lines = []
    for parent, edges in sorted(level_edges(found).items()):
        for comp in circles(edges):
            lines.append(f"module circle in {crate}: {', '.join(map(name, comp))}")
            for (a, b), why in sorted(edges.items()):
                if a in comp and b in comp:
                    shown = ", ".join(f"{name(m)} names {p}" for m, p in sorted(set(why))[:3])
                    more = f" (+{len(why) - 3})" if len(why) > 3 else ""
                    lines.append(f"  {name(a)} -> {name(b)}: {shown}{more}")
    return lines


def self_test():
    """The rules above on small crates written here."""
    import tempfile

    def crate(files):
        root = tempfile.mkdtemp()
        for rel, text in files.items():
            path = os.path.join(root, "src", rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w", encoding="utf-8").write(text)
        return bool(report(root, modules(root)))

    cases = [
        # The circle this checker once missed: a child imports its parent's sibling, which
        # imports the parent back.
        ({"lib.rs": "mod index; mod rank;", "index/mod.rs": "mod derived; pub struct Pack;",
          "index/derived.rs": "use crate::rank::is_test;",
          "rank.rs": "use crate::index::Pack; pub fn is_test() {}"}, True),
        # ... and through a brace tree, or into the sibling's other child.
        ({"lib.rs": "mod index; mod rank;", "index/mod.rs": "mod derived; mod open;",
          "index/derived.rs": "use crate::{rank::is_test, hash};",
          "index/open.rs": "pub struct Open;",
          "rank.rs": "pub fn f(o: &crate::index::open::Open) {}"}, True),
        # Parent -> child and child -> parent are how modules work.
        ({"lib.rs": "mod a;", "a/mod.rs": "mod b; pub use b::X; pub struct Y;",
          "a/b.rs": "use super::Y; pub struct X;"}, False),
        # Layered siblings; a child naming an uncle that never names back.
        ({"lib.rs": "mod a; mod c;", "a/mod.rs": "mod b;", "a/b.rs": "use crate::c::Z;",
          "c.rs": "pub struct Z;"}, False),
        # Siblings inside one module importing each other, via super.
        ({"lib.rs": "mod a;", "a/mod.rs": "mod b; mod c;", "a/b.rs": "use super::c::Z; pub struct W;",
          "a/c.rs": "pub struct Z; fn f(_: super::b::W) {}"}, True),
        # Test code, comments and strings are not imports.
        ({"lib.rs": "mod a; mod c;", "a.rs": "use crate::c::Z;\n#[cfg(test)]\nmod t { use crate::c::Z; }",
          "c.rs": "pub struct Z; // crate::a::x\nconst S: &str = \"crate::a\";\n#[cfg(test)]\nmod tests;",
          "c/tests.rs": "use crate::a::X;"}, False),
    ]
    for i, (files, circle) in enumerate(cases):
        assert crate(files) == circle, f"self-test case {i}: expected circle={circle}"
    print(f"module-cycles self-test: {len(cases)} cases hold")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    failed = False
    for crate in sys.argv[1:]:
        for line in report(crate, modules(crate)):
            failed = True
            print(line, file=sys.stderr)
    if failed:
        sys.exit(1)
    print(f"module circles: none in {', '.join(sys.argv[1:])}")


if __name__ == "__main__":
    main()
