#!/usr/bin/env python3
"""Fails when a file or a function of the workspace is longer than a step should be.

Counted over each crate's `src/` (the core `shared/`, `indexer/`, `edge/` and the CLI at the
root; not `tests/`, `fuzz/` or `benches/`): lines of code, that is lines with something other
than whitespace and comments, leaving out test code (`#[cfg(test)]` items and modules, and
files declared as test-only modules). A file may hold at most 600 lines of code and a function
(its signature through its closing brace, nested items included) at most 120.

The exceptions that remain are listed in `scripts/long-steps-allow.txt`, one a line:
`PATH` for a file or `PATH::FUNCTION` for a function, then a one-line reason. The list can only
shrink: an entry that is no longer over its limit fails too, so that it is taken off.
Usage: long-steps.py [--allow FILE]; `--self-test` checks the counting on small texts.
"""
import os
import re
import sys

from rust_code import IDENT, item_end, masked, without_tests

CRATES = ["shared", "indexer", "edge", "."]
FILE_LIMIT = 600
FUNCTION_LIMIT = 120
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
ALLOW = os.path.join(ROOT, "scripts", "long-steps-allow.txt")
def code_lines(code, a=0, b=None):
    """How many lines of `code[a:b]` hold something other than whitespace."""
    return sum(1 for line in code[a:b].split("\n") if line.strip())


FN = re.compile(rf"\bfn\s+({IDENT})")


def functions(code):
    """(name, first line, lines of code) of every function with a body in `code`."""
    out = []
    for m in FN.finditer(code):
        end = item_end(code, m.start())
        if code[end - 1] != "}":
            continue  # a declaration without a body, in a trait
        line = code.count("\n", 0, m.start()) + 1
        start = code.rfind("\n", 0, m.start()) + 1
        out.append((m.group(1), line, code_lines(code, start, end)))
    return out


def measure(root):
    """{key: (lines, limit, where)} for every file and function over its limit, where a key is
    `PATH` or `PATH::FUNCTION` relative to `root`."""
    over = {}
    files = {}
    for crate in CRATES:
        base = os.path.join(root, crate, "src")
        for folder, _, names in os.walk(base):
            for f in sorted(names):
                if f.endswith(".rs"):
                    path = os.path.join(folder, f)
                    text = open(path, encoding="utf-8").read()
                    files[path] = without_tests(masked(text))
    # A file declared as a test-only module (`#[cfg(test)] mod tests;`) is test code.
    test_files = set()
    for path, (_, children) in files.items():
        folder = os.path.dirname(path)
        stem = os.path.basename(path)[:-3]
        own = folder if stem in ("mod", "lib", "main") else os.path.join(folder, stem)
        for c in children:
            test_files.add(os.path.join(own, c + ".rs"))
            test_files.add(os.path.join(own, c, "mod.rs"))
    for path, (code, _) in sorted(files.items()):
        if path in test_files or any(path.startswith(t[:-len("mod.rs")]) for t in test_files if t.endswith("mod.rs")):
            continue
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        lines = code_lines(code)
        if lines > FILE_LIMIT:
            over[rel] = (lines, FILE_LIMIT, rel)
        for name, line, length in functions(code):
            if length > FUNCTION_LIMIT:
                key = f"{rel}::{name}"
                prev = over.get(key)
                if prev is None or prev[0] < length:
                    over[key] = (length, FUNCTION_LIMIT, f"{rel}:{line}")
    return over


def allowed(path):
    """{key: reason} from the allowlist; an entry without a reason is an error."""
    entries, errors = {}, []
    if not os.path.exists(path):
        return entries, errors
    for n, raw in enumerate(open(path, encoding="utf-8"), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) < 2 or not parts[1].strip():
            errors.append(f"{os.path.basename(path)}:{n}: `{parts[0]}` has no reason")
        entries[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return entries, errors


def check(root, allow_path):
    """The lines that make the check fail."""
    over = measure(root)
    allow, errors = allowed(allow_path)
    for key, (lines, limit, where) in sorted(over.items()):
        if key not in allow:
            kind = "function" if "::" in key else "file"
            errors.append(f"{where}: {kind} `{key}` is {lines} lines of code (limit {limit}); "
                          "split it, or list it with a reason in scripts/long-steps-allow.txt")
    for key in sorted(allow):
        if key not in over:
            errors.append(f"scripts/long-steps-allow.txt: `{key}` is no longer over its limit; "
                          "take it off the list")
    return errors, over


def self_test():
    """The counting on texts written here."""
    body = "\n".join(f"    let x{k} = {k};" for k in range(5))
    text = (
        "// a comment\n/* a\nblock */\nfn f() {\n" + body + "\n\n    let s = \"}\";\n}\n"
        "trait T { fn g(&self); }\n"
        "#[cfg(test)]\nmod tests {\n    fn h() {}\n}\n"
        "#[cfg(test)]\nmod more;\n"
    )
    code, children = without_tests(masked(text))
    assert children == {"more"}, children
    fns = functions(code)
    assert [(n, lines) for n, _, lines in fns] == [("f", 8)], fns
    assert code_lines(code) == 9, code_lines(code)  # f's 8 and the trait's line
    assert code.count("\n") == text.count("\n")
    print("long-steps self-test: counting holds")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    allow_path = ALLOW
    if sys.argv[1:2] == ["--allow"]:
        allow_path = sys.argv[2]
    errors, over = check(ROOT, allow_path)
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        sys.exit(1)
    print(f"long steps: none beyond the {len(over)} listed in {os.path.relpath(allow_path, ROOT)}")


if __name__ == "__main__":
    main()
