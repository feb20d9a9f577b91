"""Learns a weight per wordpiece for `--dense static`'s distilled table (measured, not shipped).

The table's rows are centred MiniLM wordpiece vectors weighted by `ln(1 + rank)`
(indexer/src/embed/distilled.rs). This fits those weights instead, on the train split only: the
question sets' train records (target/questions) and the mined commits of the commit-train
repositories (target/fusion). A corpus's documents are its files' 40-line windows; a query's loss
is the softmax cross-entropy over every window of its corpus, the windows that overlap its gold
lines being the positives; Adam on the log-weights, an L2 pull towards the distilled ones.

  CTXGATE_MINILM_DIR=<dir with static-v1.f32 and tokenizer.json> \
  python scripts/questions/static_weights.py VAL_REPOS LAMBDA STEPS [OUT.npy] [--write-table HOME]

VAL_REPOS (comma-separated, may be empty) are left out of the fit and reported apart: that is
how LAMBDA and STEPS were chosen. `--write-table HOME` writes the re-weighted table into
HOME/models/all-MiniLM-L6-v2/ (the other model files linked), for `--dense static` runs of the
question benchmark with `--home HOME`. Needs numpy, scipy and tokenizers. Results:
docs/retrieval.md, "Learned weights for the static table".
"""
import json, os, re, sys, time
import numpy as np
import scipy.sparse as sp
from tokenizers import Tokenizer

MODEL = os.environ.get("CTXGATE_MINILM_DIR", os.path.expanduser("~/.local/share/ctxgate/models/all-MiniLM-L6-v2"))
DIMS = 384
WIN = 40
EXTS = {".rs", ".go", ".py", ".js", ".ts", ".tsx", ".jsx", ".mjs", ".cjs", ".java", ".c", ".h",
        ".cc", ".cpp", ".hpp", ".rb", ".toml", ".yaml", ".yml", ".json", ".md", ".kt", ".cs", ".php",
        ".sh", ".cfg", ".ini"}

tok = Tokenizer.from_file(f"{MODEL}/tokenizer.json")
tok.no_truncation()
tok.no_padding()
V = tok.get_vocab_size()


def split_code_names(text):
    out = []
    n = len(text)
    for i, c in enumerate(text):
        if i > 0 and c.isupper():
            b = text[i - 1]
            nl = i + 1 < n and text[i + 1].islower()
            if b.islower() or b.isdigit() or (b.isupper() and nl):
                out.append(" ")
        out.append(c)
    return "".join(out)


def ids_batch(texts):
    encs = tok.encode_batch([split_code_names(t) for t in texts], add_special_tokens=False)
    return [e.ids for e in encs]


def counts_matrix(id_lists):
    rows, cols = [], []
    for r, ids in enumerate(id_lists):
        rows.extend([r] * len(ids))
        cols.extend(ids)
    data = np.ones(len(rows), dtype=np.float32)
    m = sp.csr_matrix((data, (rows, cols)), shape=(len(id_lists), V), dtype=np.float32)
    m.sum_duplicates()
    return m


def windows_of(root):
    wins = []  # (path, start(1-based), end)
    texts = []
    for dp, dn, fn in os.walk(root):
        dn[:] = [d for d in dn if not d.startswith(".") and d not in ("node_modules", "target", "dist", "build", "vendor")]
        for f in fn:
            p = os.path.join(dp, f)
            if os.path.splitext(f)[1].lower() not in EXTS:
                continue
            try:
                if os.path.getsize(p) > 400_000:
                    continue
                lines = open(p, encoding="utf-8").read().split("\n")
            except (UnicodeDecodeError, OSError):
                continue
            rel = os.path.relpath(p, root)
            for s in range(0, len(lines), WIN):
                chunk = "\n".join(lines[s:s + WIN])
                if chunk.strip():
                    wins.append((rel, s + 1, min(s + WIN, len(lines))))
                    texts.append(chunk)
    return wins, texts


class Corpus:
    def __init__(self, name, root):
        self.name = name
        self.wins, texts = windows_of(root)
        self.C = counts_matrix(ids_batch(texts))
        self.CT = self.C.T.tocsr()
        self.by_path = {}
        for j, (p, a, b) in enumerate(self.wins):
            self.by_path.setdefault(p, []).append((a, b, j))
        self.queries = []  # (count row csr, positive index array, id)

    def positives(self, gold):
        pos = set()
        for p, rs in gold.items():
            for a, b, j in self.by_path.get(p, []):
                if any(not (b < x or a > y) for x, y in rs):
                    pos.add(j)
        return sorted(pos)


def load():
    corpora = {}
    qroot = os.environ.get("CTXGATE_QUESTIONS", "target/questions")
    froot = os.environ.get("CTXGATE_FUSION", "target/fusion")
    items = []
    for s in ("hand", "docstring", "settings"):
        for l in open(f"{qroot}/{s}.jsonl"):
            q = json.loads(l)
            items.append((q["split"], f"{q.get('corpus', 'corpora')}/{q['repo']}", f"{qroot}/{q.get('corpus', 'corpora')}/{q['repo']}", q, s))
    for l in open(f"{froot}/queries.jsonl"):
        q = json.loads(l)
        items.append((q["split"], f"fusion/{q['repo']}", f"{froot}/corpora/{q['repo']}", q, "commit"))
    for split, key, root, q, kind in items:
        if split != "train":
            continue
        if key not in corpora:
            t = time.time()
            corpora[key] = Corpus(key, root)
            print(f"{key}: {len(corpora[key].wins)} windows {time.time() - t:.1f}s", file=sys.stderr)
        c = corpora[key]
        pos = c.positives({k.lstrip("./"): v for k, v in q["gold_ranges"].items()})
        if pos:
            c.queries.append((q["query"], np.array(pos), q["id"], kind))
    for c in corpora.values():
        if c.queries:
            c.Q = counts_matrix(ids_batch([x[0] for x in c.queries]))
    return [c for c in corpora.values() if c.queries]


def base_table():
    raw = np.fromfile(f"{MODEL}/static-v1.f32", dtype="<f4").reshape(-1, DIMS)
    norms = np.linalg.norm(raw, axis=1)
    U = raw / np.maximum(norms, 1e-12)[:, None]
    return U.astype(np.float32), norms.astype(np.float32)


def forward(c, w, U, tau, grad=True):
    WU = U * w[:, None]
    D = c.C @ WU  # N x d
    dn = np.linalg.norm(D, axis=1) + 1e-9
    Dv = D / dn[:, None]
    Qm = c.Q @ WU
    qn = np.linalg.norm(Qm, axis=1) + 1e-9
    Qv = Qm / qn[:, None]
    S = tau * (Qv @ Dv.T)  # nq x N
    S -= S.max(axis=1, keepdims=True)
    P = np.exp(S)
    P /= P.sum(axis=1, keepdims=True)
    loss = 0.0
    Y = np.zeros_like(P)
    ranks = []
    for i, (_, pos, _, _) in enumerate(c.queries):
        pp = P[i, pos]
        loss -= np.log(pp.sum() + 1e-30)
        Y[i, pos] = pp / (pp.sum() + 1e-30)
        best = S[i, pos].max()
        ranks.append(int((S[i] > best).sum()) + 1)
    if not grad:
        return loss, ranks, None
    dS = tau * (P - Y)  # nq x N   dL/dS (before tau mult of cos)
    dDv = dS.T @ Qv  # N x d
    dQv = dS @ Dv  # nq x d
    dD = (dDv - Dv * (dDv * Dv).sum(1, keepdims=True)) / dn[:, None]
    dQ = (dQv - Qv * (dQv * Qv).sum(1, keepdims=True)) / qn[:, None]
    # dL/dw_t = sum_j C_jt (U_t . dD_j) + same for queries
    G = (c.CT @ dD) + (c.Q.T.tocsr() @ dQ)  # V x d
    gw = (G * U).sum(1)
    return loss, ranks, gw


def metrics(ranks):
    r = np.array(ranks)
    return dict(mrr=float((1 / r).mean()), r10=float((r <= 10).mean()), r50=float((r <= 50).mean()), n=len(r))


def main():
    U, w0 = base_table()
    corpora = load()
    val_names = set(sys.argv[1].split(",")) if len(sys.argv) > 1 and sys.argv[1] else set()
    lam = float(sys.argv[2]) if len(sys.argv) > 2 else 1e-3
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    out = sys.argv[4] if len(sys.argv) > 4 and not sys.argv[4].startswith("--") else ""
    tau = 20.0
    tr = [c for c in corpora if c.name.split("/")[-1] not in val_names]
    va = [c for c in corpora if c.name.split("/")[-1] in val_names]
    print("train corpora", [c.name for c in tr], "val", [c.name for c in va], file=sys.stderr)
    theta0 = np.log(np.maximum(w0, 1e-6))
    live = w0 > 0
    theta = theta0.copy()
    m = np.zeros_like(theta); v = np.zeros_like(theta)
    lr, b1, b2 = 0.05, 0.9, 0.999

    def evaluate(cs, w):
        by = {}
        for c in cs:
            _, ranks, _ = forward(c, w, U, tau, grad=False)
            for (q, pos, qid, kind), r in zip(c.queries, ranks):
                by.setdefault(kind, []).append(r)
        return {k: metrics(r) for k, r in sorted(by.items())}

    print("base train", evaluate(tr, w0), file=sys.stderr)
    if va:
        print("base val", evaluate(va, w0), file=sys.stderr)
    for step in range(1, steps + 1):
        w = np.where(live, np.exp(theta), 0.0).astype(np.float32)
        g = np.zeros_like(theta)
        tot = 0.0; nq = 0
        for c in tr:
            loss, _, gw = forward(c, w, U, tau)
            tot += loss; nq += len(c.queries)
            g += gw * w
        g /= nq
        g += 2 * lam * (theta - theta0)
        g[~live] = 0
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        theta -= lr * (m / (1 - b1 ** step)) / (np.sqrt(v / (1 - b2 ** step)) + 1e-8)
        if step % 10 == 0 or step == steps:
            w = np.where(live, np.exp(theta), 0.0).astype(np.float32)
            msg = f"step {step} loss {tot / nq:.4f} train {evaluate(tr, w)}"
            if va:
                msg += f" val {evaluate(va, w)}"
            print(msg, file=sys.stderr, flush=True)
    w = np.where(live, np.exp(theta), 0.0).astype(np.float32)
    if out:
        np.save(out, w)
    if "--write-table" in sys.argv:
        write_table(sys.argv[sys.argv.index("--write-table") + 1], U, w)


def write_table(home, U, w):
    d = os.path.join(home, "models", "all-MiniLM-L6-v2")
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(MODEL):
        if f != "static-v1.f32" and not os.path.exists(os.path.join(d, f)):
            os.symlink(os.path.join(MODEL, f), os.path.join(d, f))
    (U * w[:, None]).astype("<f4").tofile(os.path.join(d, "static-v1.f32"))


if __name__ == "__main__":
    main()
