"""Reading Rust source for the checks in scripts/ (module-cycles.py, long-steps.py): the code
without comments and literals, and without its test items."""
import re

IDENT = r"[A-Za-z_][A-Za-z_0-9]*"


def masked(text):
    """`text` with the same length and line breaks, comments blanked and the insides of string
    and char literals replaced by `s`, so that braces and keywords are code only."""
    out, i, n = list(text), 0, len(text)

    def blank(a, b, fill=" "):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = fill

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            start, depth, i = i, 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            blank(start, i)
        elif (m := re.match(r'b?r(#*)"', text[i:i + 300])) and (i == 0 or not re.match(r"\w", text[i - 1])):
            end = text.find('"' + m.group(1), i + m.end())
            end = n if end < 0 else end
            blank(i + m.end(), end, "s")
            i = end + 1 + len(m.group(1))
        elif c == '"':
            start = i + 1
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            blank(start, min(i, n), "s")
            i += 1
        elif c == "'" and (m := re.match(r"'(\\(x..|u\{[0-9a-fA-F]*\}|.)|[^\\'])'", text[i:i + 12])):
            blank(i + 1, i + m.end() - 1, "s")
            i += m.end()
        else:
            i += 1
    return "".join(out)


def item_end(code, start):
    """The index just past the item that begins at `start`: through its braced body or its `;`,
    whichever comes first."""
    depth = 0
    for k in range(start, len(code)):
        ch = code[k]
        if ch == ";" and depth == 0:
            return k + 1
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(code)


TEST_ITEM = re.compile(r"#\[cfg\((?:test|all\(test\b[^\]]*)\)\]")


def without_tests(code):
    """Masked `code` with its test items blanked (line breaks kept); the names of the test-only
    child modules it declares as files."""
    out, test_children, i = list(code), set(), 0
    for m in TEST_ITEM.finditer(code):
        if m.start() < i:
            continue
        rest = code[m.end():]
        declared = re.match(rf"\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+({IDENT})\s*;", rest)
        if declared:
            test_children.add(declared.group(1))
        i = item_end(code, m.end())
        for k in range(m.start(), i):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out), test_children
