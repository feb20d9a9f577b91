"""Source scanning for the question benchmark (scripts/questions/build.py): which files are
non-test source, a line-preserving lexer for the C-like languages (Rust, Go, JavaScript,
TypeScript, Java) that finds comments and masks strings, comment blanking for every language
(Python through `tokenize` and `ast`), and the two generators' extractors:

  * doc_functions(path, text, lang): functions with a docstring / doc comment, as
    (name, doc text, first line, last line);
  * settings(path, text, lang): named constants and default values, as dicts with the name,
    the owner (type, function or object, when the name alone is not enough), the value's text,
    the defining lines and a kind.

Lines are 1-based and inclusive. Nothing here reads outside the text it is given.
"""
import ast
import bisect
import io
import re
import tokenize

LANG_OF = {".rs": "rust", ".py": "python", ".pyi": "python", ".go": "go", ".js": "javascript",
           ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript", ".ts": "typescript",
           ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript", ".java": "java"}
TEST_PARTS = {"test", "tests", "testing", "__tests__", "spec", "specs", "testdata", "test-data",
              "test_data", "fixtures", "__fixtures__", "__snapshots__", "e2e", "benchmark",
              "benchmarks", "bench", "benches", "examples", "example", "docs", "runtime-tests",
              "mocks", "__mocks__", "scripts", "tools", "perf", "perf-measures"}
VENDORED = {"vendor", "node_modules", "third_party", "third-party", "deps", "external", "dist"}
TEST_NAME = re.compile(r"(^test_.*\.py$|_tests?\.py$|^conftest\.py$|_test\.go$|"
                       r"\.(test|spec|bench)\.[cm]?[jt]sx?$|^tests?\.rs$|Tests?\.java$)")


def lang_of(path):
    low = path.lower()
    if low.endswith((".d.ts", ".d.mts", ".d.cts", ".min.js")):
        return None
    dot = low.rfind(".")
    return LANG_OF.get(low[dot:]) if dot >= 0 else None


def is_source(path):
    """Non-test, non-example, non-vendored source in one of the scanned languages."""
    if lang_of(path) is None:
        return False
    parts = path.split("/")
    for p in (q.lower() for q in parts[:-1]):
        if p in TEST_PARTS or p in VENDORED or p.startswith(("test_", "test-")) or p.endswith(
                ("_test", "-test", "_tests", "-tests")) or p.startswith("testenv") or p.startswith(
                "testserver") or p in ("test_helpers", "testutil", "testutils"):
            return False
    return not TEST_NAME.search(parts[-1])


class Lines:
    """Offset <-> 1-based line number of one text."""

    def __init__(self, text):
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def line(self, offset):
        return bisect.bisect_right(self.starts, offset)

    def start(self, line):
        return self.starts[line - 1]

    def __len__(self):
        return len(self.starts)


# -- the C-like lexer ------------------------------------------------------------------------

IDENT = re.compile(r"[A-Za-z0-9_$]")
REGEX_AFTER = set("(,=:[!&|?{};+-*%<>~^")
REGEX_WORDS = {"return", "typeof", "case", "do", "else", "in", "of", "new", "delete", "void",
               "throw", "yield", "await", "instanceof"}
RUST_RAW = re.compile(r"b?r(#*)\"")


def _quoted(text, i, quote, multiline):
    """End (one past the closing quote) of the quoted literal opening at i."""
    n, j = len(text), i + 1
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == quote:
            return j + 1
        if c == "\n" and not multiline:
            return j
        j += 1
    return n


def lex(text, lang):
    """(masked, comments): masked is text with the insides of comments and string, char and
    regex literals turned to spaces (newlines kept, so offsets and lines hold); comments is a
    list of (start, end) offsets."""
    out = list(text)
    comments = []
    n = len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    i = 0
    depth = 0
    tmpl = []  # JS/TS: the brace depth at which each open `${` started
    last, word = "", ""
    js = lang in ("javascript", "typescript")
    while i < n:
        c = text[i]
        nx = text[i + 1] if i + 1 < n else ""
        if c == "/" and nx == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            comments.append((i, j))
            blank(i, j)
            i = j
            continue
        if c == "/" and nx == "*":
            if lang == "rust":
                level, j = 1, i + 2
                while j < n and level:
                    if text.startswith("/*", j):
                        level, j = level + 1, j + 2
                    elif text.startswith("*/", j):
                        level, j = level - 1, j + 2
                    else:
                        j += 1
            else:
                j = text.find("*/", i + 2)
                j = n if j < 0 else j + 2
            comments.append((i, j))
            blank(i, j)
            i = j
            continue
        if c.isspace():
            i += 1
            continue
        if lang == "rust" and c in "br" and not (i and IDENT.match(text[i - 1])):
            m = RUST_RAW.match(text, i)
            if m:
                close = '"' + m.group(1)
                j = text.find(close, m.end())
                j = n if j < 0 else j + len(close)
                blank(m.end(), j - len(close))
                i, last, word = j, '"', ""
                continue
        if IDENT.match(c):
            m = re.compile(r"[A-Za-z0-9_$]+").match(text, i)
            word, last = m.group(0), "a"
            i = m.end()
            continue
        if c == '"':
            if lang == "java" and text.startswith('"""', i):
                j = text.find('"""', i + 3)
                j = n if j < 0 else j + 3
                blank(i + 3, j - 3)
            else:
                j = _quoted(text, i, '"', multiline=lang == "rust")
                blank(i + 1, j - 1)
            i, last, word = j, '"', ""
            continue
        if c == "'":
            if lang == "rust":
                if nx == "\\":
                    j = text.find("'", i + 3)
                    j = n if j < 0 else j + 1
                elif i + 2 < n and text[i + 2] == "'":
                    j = i + 3
                else:  # a lifetime or a label
                    i += 1
                    continue
            else:
                j = _quoted(text, i, "'", multiline=False)
            blank(i + 1, j - 1)
            i, last, word = j, '"', ""
            continue
        if c == "`":
            if lang == "go":
                j = text.find("`", i + 1)
                j = n if j < 0 else j + 1
                blank(i + 1, j - 1)
                i, last, word = j, '"', ""
                continue
            if js:
                i = _template(text, i + 1, blank)
                if i < n and text.startswith("${", i - 2) and text[i - 1] == "{":
                    tmpl.append(depth)
                    depth += 1
                    last, word = "{", ""
                else:
                    last, word = '"', ""
                continue
        if js and c == "/" and (last == "" or last in REGEX_AFTER or word in REGEX_WORDS):
            j, cls = i + 1, False
            while j < n and text[j] != "\n":
                if text[j] == "\\":
                    j += 2
                    continue
                if text[j] == "[":
                    cls = True
                elif text[j] == "]":
                    cls = False
                elif text[j] == "/" and not cls:
                    break
                j += 1
            if j < n and text[j] == "/":
                blank(i + 1, j)
                j += 1
                while j < n and text[j].isalpha():
                    j += 1
                i, last, word = j, '"', ""
                continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if tmpl and depth == tmpl[-1]:
                tmpl.pop()
                i = _template(text, i + 1, blank)
                if text.startswith("${", i - 2) and text[i - 1] == "{" and i <= n:
                    tmpl.append(depth)
                    depth += 1
                    last, word = "{", ""
                else:
                    last, word = '"', ""
                continue
        last, word = c, ""
        i += 1
    return "".join(out), comments


def _template(text, i, blank):
    """Scans a template literal's text from i; returns the offset after its closing backtick
    or after a `${` that opens an expression (the caller tells them apart)."""
    n, j = len(text), i
    while j < n:
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "`":
            blank(i, j)
            return j + 1
        if c == "$" and j + 1 < n and text[j + 1] == "{":
            blank(i, j)
            return j + 2
        j += 1
    blank(i, n)
    return n


# -- blanking comments -------------------------------------------------------------------------

def blank_comments(text, lang):
    """The text with every comment and docstring removed and line numbers unchanged: lines that
    held only a comment become empty, trailing comments are cut. None if it cannot be done."""
    if lang == "python":
        return _blank_python(text)
    _, comments = lex(text, lang)
    if not comments:
        return text
    lines = Lines(text)
    out = list(text)
    touched = set()
    for a, b in comments:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = ""
        touched.update(range(lines.line(a), lines.line(max(a, b - 1)) + 1))
    rows = "".join(out).split("\n")
    for ln in touched:
        rows[ln - 1] = rows[ln - 1].rstrip()
    return "\n".join(rows)


def _blank_python(text):
    rows = text.split("\n")
    try:
        tree = ast.parse(text)
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return None
    for t in toks:
        if t.type == tokenize.COMMENT:
            r, col = t.start
            rows[r - 1] = rows[r - 1][:col].rstrip()
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, field, None)
            if not isinstance(body, list):
                continue
            for stmt in body:
                if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                        and isinstance(stmt.value.value, str)):
                    continue
                a, b = stmt.lineno, stmt.end_lineno
                first = text.split("\n")[a - 1]
                before = first.encode()[:stmt.col_offset].decode("utf-8", "replace")
                last_line = text.split("\n")[b - 1]
                after = last_line.encode()[stmt.end_col_offset:].decode("utf-8", "replace")
                if before.strip() or after.strip().lstrip(";").strip():
                    continue  # shares its lines with code: rare; left alone
                for r in range(a, b + 1):
                    rows[r - 1] = ""
                if len(body) == 1:  # keep the block valid
                    rows[a - 1] = before + "pass"
    out = "\n".join(rows)
    try:
        ast.parse(out)
    except SyntaxError:
        return None
    return out


# -- doc comments and functions ------------------------------------------------------------------

RUST_FN = re.compile(r"\s*(?:pub(?:\s*\([^)]*\))?\s+)?(?:default\s+)?(?:const\s+)?(?:async\s+)?"
                     r"(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?fn\s+([A-Za-z_]\w*)")
GO_FUNC = re.compile(r"func\s*(?:\([^)]*\)\s*)?([A-Za-z_]\w*)\s*[\[(]")
JS_FUNCS = [
    re.compile(r"\s*(?:export\s+)?(?:default\s+)?(?:declare\s+)?(?:async\s+)?function\s*\*?\s*"
               r"([A-Za-z_$][\w$]*)\s*[<(]"),
    re.compile(r"\s*(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=;]+)?=\s*"
               r"(?:async\s+)?(?:function\b|\(|<|[A-Za-z_$][\w$]*\s*=>)"),
    re.compile(r"\s*(?:module\.)?(?:[\w$]+\.)*([A-Za-z_$][\w$]*)\s*=\s*(?:async\s+)?function\b"),
    re.compile(r"\s*['\"]?([A-Za-z_$][\w$]*)['\"]?\s*:\s*(?:async\s+)?(?:function\b|\([^)]*\)"
               r"\s*(?::[^=]+)?=>)"),
    re.compile(r"\s*(?:(?:public|private|protected|static|readonly|abstract|override|async|get|"
               r"set|declare)\s+)*\*?\s*(#?[A-Za-z_$][\w$]*)\s*(?:<[^>(]*>)?\s*\("),
]
CONTROL = {"if", "for", "while", "switch", "catch", "return", "function", "new", "else", "do",
           "try", "with", "typeof", "await", "throw", "synchronized", "super", "this"}
JAVA_DECL = re.compile(r"\s*((?:[\w$<>\[\]?,.@]+\s+)*)([A-Za-z_$][\w$]*)\s*\(")


def _match_close(masked, i, open_c, close_c):
    """Offset of the bracket closing the one at i, or -1."""
    level = 0
    for k in range(i, len(masked)):
        c = masked[k]
        if c == open_c:
            level += 1
        elif c == close_c:
            level -= 1
            if level == 0:
                return k
    return -1


def _body(masked, start, lang, arrow):
    """Offsets (open, close) of the body braces of the function declared from `start` (just
    before its parameters), or None for a declaration without a block body (or an arrow
    function with an expression body)."""
    n = len(masked)
    js = lang in ("javascript", "typescript")
    k = masked.find("(", start)
    arrow_at = masked.find("=>", start)
    if arrow and 0 <= arrow_at and (k < 0 or arrow_at < k):
        p = start  # `x => {`: no parentheses
    else:
        if k < 0:
            return None
        p = _match_close(masked, k, "(", ")")
        if p < 0:
            return None
        p += 1
    angles = lang in ("typescript", "java", "rust")
    level, prev, prev_word, arrowed = 0, ")", "", False
    while p < n:
        c = masked[p]
        if masked.startswith("=>", p) or masked.startswith("->", p):
            if c == "=" and arrow and level <= 0 and not arrowed:
                arrowed = True
                q = p + 2
                while q < n and masked[q].isspace():
                    q += 1
                if q >= n or masked[q] != "{":
                    return None
            prev = "=>"
            p += 2
            continue
        if c in "([" or (angles and c == "<"):
            level += 1
        elif c in ")]" or (angles and c == ">"):
            level -= 1
        elif c == ";" and level <= 0:
            return None
        elif c == "\n" and js and level <= 0 and prev not in (":", "|", "&", ",", "<", "(", "=",
                                                               "=>"):
            return None
        elif c == "{":
            typed = js and prev in (":", "|", "&", ",", "<", "(", "=")
            typed = typed or (lang == "go" and prev_word in ("interface", "struct"))
            close = _match_close(masked, p, "{", "}")
            if close < 0:
                return None
            if typed or level > 0:
                p, prev, prev_word = close + 1, "}", ""
                continue
            return p, close
        if c.isalnum() or c == "_":
            m = re.compile(r"\w+").match(masked, p)
            prev_word, prev = m.group(0), "a"
            p = m.end()
            continue
        if not c.isspace():
            prev, prev_word = c, ""
        p += 1
    return None


def _function_at(masked, offset, lang):
    """(name, body open, body close) of a function declared at offset, or None."""
    seg = masked[offset:offset + 600]
    if lang == "rust":
        m = RUST_FN.match(seg)
        if not m or m.group(1).startswith("test"):
            return None
        body = _body(masked, offset + m.end(), lang, False)
        return (m.group(1), *body) if body else None
    if lang == "go":
        m = GO_FUNC.match(seg)
        if not m or re.match(r"(Test|Benchmark|Example|Fuzz)[A-Z_]", m.group(1)):
            return None
        body = _body(masked, offset + m.end() - 1, lang, False)
        return (m.group(1), *body) if body else None
    if lang == "java":
        m = JAVA_DECL.match(seg)
        if not m or "=" in seg[:m.end()] or m.group(2) in CONTROL:
            return None
        if re.search(r"\b(class|interface|enum|record|new|return)\b", seg[:m.end()]):
            return None
        body = _body(masked, offset + m.end() - 1, lang, False)
        return (m.group(2), *body) if body else None
    for idx, pat in enumerate(JS_FUNCS):
        m = pat.match(seg)
        if not m or m.group(1) in CONTROL:
            continue
        arrow = idx in (1, 3)
        if arrow:  # from just after the `=` or `:` that gives the value
            start = offset + seg.index("=" if idx == 1 else ":", m.end(1)) + 1
        else:
            start = offset + m.end() - (1 if seg[m.end() - 1] in "(<" else 0)
        body = _body(masked, start, lang, arrow)
        return (m.group(1), *body) if body else None
    return None


def _doc_blocks(text, comments, lines, lang):
    """(doc text, last doc line) of each doc comment that stands alone on its lines."""
    blocks = []
    run = []  # consecutive line comments: (line, text)
    for a, b in comments:
        ln = lines.line(a)
        alone = not text[lines.start(ln):a].strip()
        body = text[a:b]
        if lang in ("javascript", "typescript", "java"):
            if alone and body.startswith("/**") and not body.startswith("/***"):
                inner = body[3:-2] if body.endswith("*/") else body[3:]
                rows = [re.sub(r"^\s*\*( ?)", "", r) for r in inner.split("\n")]
                blocks.append(("\n".join(rows), lines.line(b - 1)))
            continue
        if not alone or not body.startswith("//"):
            continue
        if lang == "rust":
            if not body.startswith("///") or body.startswith("////"):
                if run:
                    blocks.append(_flush(run))
                    run = []
                continue
            piece = body[3:]
        else:
            if body.startswith(("//go:", "//nolint", "//lint:", "// +build")):
                continue
            piece = body[2:]
        piece = piece[1:] if piece.startswith(" ") else piece
        if run and run[-1][0] != ln - 1:
            blocks.append(_flush(run))
            run = []
        run.append((ln, piece))
    if run:
        blocks.append(_flush(run))
    return blocks


def _flush(run):
    return "\n".join(t for _, t in run), run[-1][0]


ATTR_LINE = {"rust": re.compile(r"\s*#!?\["), "java": re.compile(r"\s*@(?!interface)\w"),
             "typescript": re.compile(r"\s*@\w"), "javascript": re.compile(r"\s*@\w"),
             "go": None}


def _test_module_lines(masked, lines):
    """Rust: the lines of `#[cfg(test)] mod … { … }` blocks."""
    out = set()
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub\s+)?mod\s+\w+\s*\{", masked):
        close = _match_close(masked, m.end() - 1, "{", "}")
        if close > 0:
            out.update(range(lines.line(m.start()), lines.line(close) + 1))
    return out


def doc_functions(text, lang):
    """(name, doc, first line, last line) of each documented function with a body."""
    if lang == "python":
        return _py_doc_functions(text)
    masked, comments = lex(text, lang)
    lines = Lines(text)
    rows = text.split("\n")
    skip = _test_module_lines(masked, lines) if lang == "rust" else set()
    found = []
    for doc, last in _doc_blocks(text, comments, lines, lang):
        ln = last + 1
        attr = ATTR_LINE[lang]
        test_only = False
        while attr and ln <= len(rows) and attr.match(rows[ln - 1]):
            test_only = test_only or "cfg(test)" in rows[ln - 1]
            # an attribute / annotation / decorator, maybe over several lines
            off = lines.start(ln) + rows[ln - 1].index(rows[ln - 1].lstrip()[0])
            end = off + 1
            opener = masked.find("[", off) if lang == "rust" else -1
            if lang == "rust" and opener >= 0:
                end = _match_close(masked, opener, "[", "]")
            else:
                m = re.compile(r"@[\w.]+\s*").match(masked, off)
                end = m.end() if m else off + 1
                if end < len(masked) and masked[end] == "(":
                    end = _match_close(masked, end, "(", ")")
            if end < 0:
                break
            ln = lines.line(end) + 1
        if lang in ("javascript", "typescript", "java"):  # JSDoc / Javadoc may stand apart
            for _ in range(2):
                if ln <= len(rows) and not rows[ln - 1].strip():
                    ln += 1
        if ln > len(rows) or ln in skip or test_only or not rows[ln - 1].strip():
            continue
        off = lines.start(ln)
        fn = _function_at(masked, off, lang)
        if not fn:
            continue
        name, _, close = fn
        found.append((name, doc, ln, lines.line(close)))
    return found


def _py_doc_functions(text):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node)
            if doc and not node.name.startswith("test"):
                found.append((node.name, doc, node.lineno, node.end_lineno))
    return found


# -- settings and defaults -----------------------------------------------------------------------

SETTING_WORDS = {"default", "defaults", "timeout", "timeouts", "max", "min", "maximum",
                 "minimum", "limit", "limits", "size", "port", "retries", "retry", "interval",
                 "level", "depth", "buffer", "capacity", "delay", "threshold", "length", "len",
                 "ttl", "age", "duration", "threads", "concurrency", "width", "chunk", "batch",
                 "backoff", "attempts", "redirects", "pool", "workers", "period", "expiry",
                 "expires", "memory", "bytes", "lifetime", "deadline", "margin", "padding",
                 "indent", "tab", "precision", "rate", "count"}


def words(name):
    """The lowercase words of an identifier (camelCase, PascalCase, snake_case, SCREAMING)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", spaced) if w]


def has_setting_word(name):
    ws = words(name)
    return any(w in SETTING_WORDS or (len(w) > 4 and w.startswith(("max", "min")))
               for w in ws)


def _statement_end(masked, start, lang):
    """Offset of the end of the value that starts at `start`: a `;` or `,` at depth 0, a closing
    bracket of the enclosing construct, or (Go, JS/TS, Python) a newline at depth 0."""
    level, p, n = 0, start, len(masked)
    newline_ends = lang in ("go", "javascript", "typescript")
    seen = False
    while p < n:
        c = masked[p]
        if c in "([{":
            level += 1
        elif c in ")]}":
            if level == 0:
                return p
            level -= 1
        elif c in ";," and level == 0:
            return p
        elif c == "\n" and level == 0 and newline_ends and seen:
            before = masked[start:p].rstrip()
            if before and before[-1] not in "=+-*/|&?:,.(<":
                return p
        if not c.isspace():
            seen = True
        p += 1
    return n


def settings(text, lang):
    if lang == "python":
        return _py_settings(text)
    masked, _ = lex(text, lang)
    lines = Lines(text)
    skip = _test_module_lines(masked, lines) if lang == "rust" else set()
    out = []

    def add(name, owner, vstart, start_off, kind, require_word=True):
        if require_word and not has_setting_word(name):
            return
        end = _statement_end(masked, vstart, lang)
        value = text[vstart:end].strip()
        a, b = lines.line(start_off), lines.line(max(vstart, end - 1))
        if not value or a in skip:
            return
        out.append(dict(name=name, owner=owner, value=value, start=a, end=b, kind=kind))

    if lang == "rust":
        for m in re.finditer(r"(?m)^[ \t]*(?:pub(?:\([^)]*\))?\s+)?(const|static)\s+(?:mut\s+)?"
                             r"([A-Za-z_]\w*)\s*:[^=;]*=", masked):
            add(m.group(2), "", m.end(), m.start(2), "const")
        for m in re.finditer(r"impl(?:\s*<[^{]*?>)?\s+(?:\w+::)*Default\s+for\s+([\w:]+)[^{]*\{",
                             masked):
            close = _match_close(masked, m.end() - 1, "{", "}")
            owner = m.group(1).split("::")[-1]
            inner = masked[m.end():close]
            for f in re.finditer(r"(?m)^[ \t]*([a-z_][a-z0-9_]*)\s*:(?!:)\s*(?=\S)", inner):
                fstart = m.end() + f.start(1)
                depth = masked[m.end():fstart].count("{") - masked[m.end():fstart].count("}")
                if depth >= 2:
                    add(f.group(1), owner, m.end() + f.end(), fstart, "default-field", False)
    elif lang == "go":
        for m in re.finditer(r"(?m)^(const|var)\s+([A-Za-z_]\w*)[^=\n]*=", masked):
            add(m.group(2), "", m.end(), m.start(2), m.group(1))
        for m in re.finditer(r"(?m)^(const|var)\s*\(", masked):
            close = _match_close(masked, m.end() - 1, "(", ")")
            inner_start = m.end()
            for f in re.finditer(r"(?m)^[ \t]*([A-Za-z_]\w*)(?:[ \t]+[\w.\[\]*]+)?[ \t]*=[ \t]*",
                                 masked[inner_start:close]):
                add(f.group(1), "", inner_start + f.end(), inner_start + f.start(1), m.group(1))
        # fields of default configuration values: `DefaultXConfig = XConfig{ Field: value, }`
        for m in re.finditer(r"(?m)^[ \t]*(?:var\s+)?(Default\w*)\s*=\s*(?:&)?[\w.]+\{", masked):
            close = _match_close(masked, m.end() - 1, "{", "}")
            inner = masked[m.end():close]
            for f in re.finditer(r"(?m)^[ \t]*([A-Z]\w*)\s*:\s*(?=\S)", inner):
                fstart = m.end() + f.start(1)
                if masked[m.end():fstart].count("{") != masked[m.end():fstart].count("}"):
                    continue
                if text[m.end() + f.end():].startswith("func"):
                    continue
                add(f.group(1), m.group(1), m.end() + f.end(), fstart, "default-field", False)
    elif lang == "java":
        for m in re.finditer(r"(?m)^[ \t]*(?:(?:public|private|protected)\s+)?(?:static\s+final|"
                             r"final\s+static)\s+[\w<>\[\],.? ]+?\s+([A-Za-z_]\w*)\s*=", masked):
            add(m.group(1), "", m.end(), m.start(1), "const")
    else:
        for m in re.finditer(r"(?m)^([ \t]*)(?:export\s+)?(?:const|let|var)\s+([A-Za-z_$][\w$]*)"
                             r"\s*(?::[^=\n]+)?=\s*(?=\S)", masked):
            name = m.group(2)
            after = masked[m.end():m.end() + 1]
            if after == "{" and "default" in name.lower():
                close = _match_close(masked, m.end(), "{", "}")
                inner = masked[m.end() + 1:close]
                for f in re.finditer(r"(?m)^[ \t]*['\"]?([A-Za-z_$][\w$-]*)['\"]?\s*:\s*(?=\S)",
                                     inner):
                    fstart = m.end() + 1 + f.start(1)
                    seg = masked[m.end() + 1:fstart]
                    if seg.count("{") - seg.count("}") or seg.count("[") - seg.count("]"):
                        continue
                    add(f.group(1), name, m.end() + 1 + f.end(), fstart, "default-field", False)
                continue
            upper = re.fullmatch(r"[A-Z][A-Z0-9_]*", name)
            top = m.group(1) == ""
            simple = re.match(r"-?[\d_.]+(?:\s*[*+]\s*[\d_.]+)*\s*[;\n]|[\"'`]", text[m.end():])
            if upper or (top and simple):
                add(name, "", m.end(), m.start(2), "const")
    return out


def _py_settings(text):
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    out = []

    def seg(node):
        return ast.get_source_segment(text, node) or ""

    def visit(body, owner, at_module):
        for node in body:
            targets = []
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                targets = [node.targets[0]]
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = [node.target]
            for t in targets:
                if isinstance(t, ast.Name) and re.fullmatch(r"_?[A-Z][A-Z0-9_]*", t.id) and (
                        has_setting_word(t.id)):
                    out.append(dict(name=t.id, owner="" if at_module else owner,
                                    value=seg(node.value), start=node.lineno, end=node.end_lineno,
                                    kind="const"))
            if isinstance(node, ast.ClassDef):
                visit(node.body, node.name, False)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fn_owner = owner if node.name == "__init__" and owner else (
                    f"{owner} {node.name}" if owner else node.name)
                a = node.args
                pos = a.posonlyargs + a.args
                pairs = list(zip(pos[len(pos) - len(a.defaults):], a.defaults))
                pairs += [(x, d) for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
                for arg, d in pairs:
                    if isinstance(d, ast.Constant) and d.value is None:
                        continue
                    if has_setting_word(arg.arg):
                        out.append(dict(name=arg.arg, owner=fn_owner, value=seg(d),
                                        start=arg.lineno, end=d.end_lineno, kind="kwarg"))

    visit(tree.body, "", True)
    return out
