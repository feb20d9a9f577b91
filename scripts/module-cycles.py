#!/usr/bin/env python3
"""Fails when two modules of a crate import each other, directly or around a circle.

Reads every `crate::a::b` and `super::x` path in a crate's sources (tests and comments left out)
and maps it to the deepest module that exists. A module's own submodules may use what it
declares (that is how a Rust module and its parts work); any other circle is reported with the
edges that close it. Usage: module-cycles.py CRATE_DIR [CRATE_DIR ...]
"""
import os
import re
import sys


def modules(crate):
    base = os.path.join(crate, "src")
    found = {}
    for folder, _, files in os.walk(base):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(folder, f)
            parts = os.path.relpath(path, base)[:-3].split(os.sep)
            is_mod = parts[-1] == "mod"
            if is_mod or parts in (["lib"], ["main"]):
                parts = parts[:-1]
            if parts and parts[0] == "bin":
                continue
            text = open(path, encoding="utf-8").read()
            cut = text.find("#[cfg(test)]\nmod tests")
            if cut >= 0:
                text = text[:cut]
            text = re.sub(r"//[^\n]*", "", text)
            parent = parts[:-1] if (parts and not is_mod) or is_mod else []
            if is_mod:
                parent = parts[:-1]
            uses = set()
            for m in re.finditer(r"\bcrate::((?:[a-z_0-9]+::)*[a-z_0-9]+)", text):
                uses.add(tuple(m.group(1).split("::")))
            for m in re.finditer(r"\bsuper::((?:[a-z_0-9]+::)*[a-z_0-9]+)", text):
                uses.add(tuple(parent) + tuple(m.group(1).split("::")))
            found[tuple(parts)] = uses
    return found


def graph(found):
    names = set(found)
    edges = {}
    for m, uses in found.items():
        targets = set()
        for u in uses:
            for k in range(len(u), 0, -1):
                if u[:k] in names:
                    t = u[:k]
                    # A submodule using what an enclosing module declares is not a circle.
                    if t != m and m[: len(t)] != t:
                        targets.add(t)
                    break
        edges[m] = targets
    return edges


def circles(edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def name(m):
    return "::".join(m) or "crate"


def main():
    failed = False
    for crate in sys.argv[1:]:
        edges = graph(modules(crate))
        for comp in circles(edges):
            failed = True
            print(f"module circle in {crate}: {', '.join(sorted(map(name, comp)))}", file=sys.stderr)
            for a in sorted(comp):
                back = sorted(name(b) for b in edges[a] if b in comp)
                print(f"  {name(a)} imports {', '.join(back)}", file=sys.stderr)
    if failed:
        sys.exit(1)
    print(f"module circles: none in {', '.join(sys.argv[1:])}")


if __name__ == "__main__":
    main()
