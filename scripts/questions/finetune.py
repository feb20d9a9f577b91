#!/usr/bin/env python3
"""Fine-tunes the MiniLM that `--dense local` runs on requests paired with the code they need.

Issue 50, item 3: one way to meaning the project can reproduce by itself. The pairs are the
*train* split only: mined commits (a commit message -> the chunks its change touched) and the
question sets' train records (a question or docstring -> the chunks holding its answer). The
candidates each request's ranking dump lists (`run.py --dump`, `scripts/fusion/run.py --dump`)
give the chunk boundaries ctxgate embeds, and the best-ranked candidates holding no gold line are
the hard negatives. Loss: in-batch softmax over every chunk of the batch (the other requests'
positives and every hard negative), scale 20, as sentence-transformers' multiple-negatives
ranking loss. The model is written back in the layout `--dense local` loads
(`<data dir>/models/all-MiniLM-L6-v2/`), so a data directory seeded with it uses it as is.

    python3 scripts/questions/finetune.py --model <data dir>/models/all-MiniLM-L6-v2 \
        --out <new data dir>/models/all-MiniLM-L6-v2 \
        --commits target/fusion --commit-dumps target/fusion/ltr-dumps \
        --questions target/questions --question-dumps target/fusion/ltr-questions \
        [--leave-out requests,click] [--eval-only]

Needs torch and tokenizers (CPU); `pip install torch tokenizers safetensors numpy`. With
`--leave-out`, the named train repositories are kept out of the fit and the script reports, on
their records, the mean reciprocal rank of the first gold chunk among each record's dumped
candidates under the base model and the tuned one (the model alone, no BM25).
"""
import argparse
import json
import math
import os
import random
import shutil
import sys
import time

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer

MAX_WORDPIECES = 128  # as indexer/src/embed/local.rs
HARD_NEGATIVES = 2


class Bert(torch.nn.Module):
    """BERT as the checkpoint names it (no pooler), mean-pooled and normalized."""

    def __init__(self, cfg, weights):
        super().__init__()
        self.heads = cfg["num_attention_heads"]
        self.eps = cfg["layer_norm_eps"]
        self.layers = cfg["num_hidden_layers"]
        self.kept = {k: v for k, v in weights.items() if k.endswith("position_ids")}
        self.p = torch.nn.ParameterDict(
            {k.replace(".", "__"): torch.nn.Parameter(v.float())
             for k, v in weights.items() if not k.endswith("position_ids")})

    def w(self, name):
        return self.p[name.replace(".", "__")]

    def ln(self, x, name):
        return F.layer_norm(x, x.shape[-1:], self.w(name + ".weight"), self.w(name + ".bias"), self.eps)

    def lin(self, x, name):
        return F.linear(x, self.w(name + ".weight"), self.w(name + ".bias"))

    def forward(self, ids, mask):
        n, t = ids.shape
        pos = torch.arange(t).unsqueeze(0)
        x = (self.w("embeddings.word_embeddings.weight")[ids]
             + self.w("embeddings.position_embeddings.weight")[pos]
             + self.w("embeddings.token_type_embeddings.weight")[0])
        x = self.ln(x, "embeddings.LayerNorm")
        bias = (1.0 - mask[:, None, None, :].float()) * -1e4
        d = x.shape[-1] // self.heads
        for i in range(self.layers):
            pre = f"encoder.layer.{i}."
            q, k, v = (self.lin(x, pre + f"attention.self.{s}").view(n, t, self.heads, d).transpose(1, 2)
                       for s in ("query", "key", "value"))
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + bias, dim=-1) @ v
            a = a.transpose(1, 2).reshape(n, t, -1)
            x = self.ln(self.lin(a, pre + "attention.output.dense") + x, pre + "attention.output.LayerNorm")
            h = F.gelu(self.lin(x, pre + "intermediate.dense"))
            x = self.ln(self.lin(h, pre + "output.dense") + x, pre + "output.LayerNorm")
        m = mask.unsqueeze(-1).float()
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return F.normalize(pooled, dim=-1)

    def state(self):
        """Every tensor of the checkpoint, the trained ones replaced."""
        out = dict(self.kept)
        out.update({k.replace("__", "."): v.detach().contiguous() for k, v in self.p.items()})
        return out


def encode(tok, texts):
    encs = tok.encode_batch(texts)
    t = max(len(e.ids) for e in encs)
    ids = torch.zeros((len(encs), t), dtype=torch.long)
    mask = torch.zeros((len(encs), t), dtype=torch.long)
    for i, e in enumerate(encs):
        ids[i, :len(e.ids)] = torch.tensor(e.ids)
        mask[i, :len(e.ids)] = 1
    return ids, mask


def chunk_text(lines, path, start, end):
    """What ctxgate embeds for a chunk (`indexer/src/embed/mod.rs::chunk_text`), without the
    symbol the dump does not carry."""
    return path + "\n" + "\n".join(lines[start - 1:end])


def records(args):
    """(repo, query, positives, hard negatives) for every train record with a dump."""
    out = []
    sources = []
    if args.commits:
        for l in open(os.path.join(args.commits, "queries.jsonl")):
            q = json.loads(l)
            if q["split"] == "train":
                sources.append((q, os.path.join(args.commits, "corpora", q["repo"]),
                                os.path.join(args.commit_dumps, q["id"] + ".json")))
    if args.questions:
        for name in ("hand", "docstring", "settings"):
            for l in open(os.path.join(args.questions, name + ".jsonl")):
                q = json.loads(l)
                if q["split"] == "train":
                    sources.append((q, os.path.join(args.questions, q.get("corpus", "corpora"), q["repo"]),
                                    os.path.join(args.question_dumps, q["id"] + ".json")))
    files = {}
    for q, root, dump in sources:
        if not os.path.exists(dump):
            continue
        cands = json.load(open(dump))["candidates"]
        gold = {p.lstrip("./"): rs for p, rs in q["gold_ranges"].items()}

        def lines_of(path):
            key = (root, path)
            if key not in files:
                try:
                    files[key] = open(os.path.join(root, path), encoding="utf-8", errors="replace").read().split("\n")
                except OSError:
                    files[key] = None
            return files[key]

        def gold_hits(c):
            rs = gold.get(c["path"].lstrip("./"), [])
            return sum(max(0, min(b, c["end_line"]) - max(a, c["start_line"]) + 1) for a, b in rs)

        pos, neg = [], []
        for c in sorted(cands, key=lambda c: -c["score"]):
            ls = lines_of(c["path"])
            if ls is None:
                continue
            text = chunk_text(ls, c["path"], c["start_line"], c["end_line"])
            (pos if gold_hits(c) else neg).append(text)
        if pos:
            out.append(dict(repo=q["repo"], query=q["query"], pos=pos[:3], neg=neg[:8], cands=cands, root=root,
                            gold=gold))
    return out, files


def mrr(model, tok, recs, files):
    """Mean reciprocal rank of the first gold candidate among each record's 30 best-ranked candidates, by the
    model's cosine alone."""
    model.eval()
    total = 0.0
    with torch.no_grad():
        for r in recs:
            texts, golds = [], []
            for c in sorted(r["cands"], key=lambda c: -c["score"])[:30]:
                ls = files.get((r["root"], c["path"]))
                if ls is None:
                    continue
                texts.append(chunk_text(ls, c["path"], c["start_line"], c["end_line"]))
                rs = r["gold"].get(c["path"].lstrip("./"), [])
                golds.append(any(a <= c["end_line"] and b >= c["start_line"] for a, b in rs))
            if not any(golds):
                continue
            qv = model(*encode(tok, [r["query"]]))
            vs = torch.cat([model(*encode(tok, texts[i:i + 64])) for i in range(0, len(texts), 64)])
            order = torch.argsort(-(vs @ qv[0])).tolist()
            rank = next(i for i, j in enumerate(order) if golds[j]) + 1
            total += 1.0 / rank
    return total / max(1, len(recs))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="the base model's folder")
    ap.add_argument("--out", help="where the tuned model's folder goes")
    ap.add_argument("--commits")
    ap.add_argument("--commit-dumps")
    ap.add_argument("--questions")
    ap.add_argument("--question-dumps")
    ap.add_argument("--leave-out", default="", help="train repositories kept out of the fit and scored")
    ap.add_argument("--epochs", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--eval-only", action="store_true")
    ap.add_argument("--no-base", action="store_true", help="do not score the base model first")
    args = ap.parse_args()
    random.seed(args.seed)
    torch.manual_seed(args.seed)

    tok = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
    tok.enable_truncation(MAX_WORDPIECES)
    tok.no_padding()
    cfg = json.load(open(os.path.join(args.model, "config.json")))
    model = Bert(cfg, load_file(os.path.join(args.model, "model.safetensors")))

    recs, files = records(args)
    left = set(filter(None, args.leave_out.split(",")))
    fit = [r for r in recs if r["repo"] not in left]
    scored = [r for r in recs if r["repo"] in left]
    print(f"{len(recs)} records with a gold candidate: {len(fit)} to fit, {len(scored)} scored", file=sys.stderr)
    if scored and not args.no_base:
        print(f"left-out MRR, base model: {mrr(model, tok, scored, files):.4f}", file=sys.stderr)
    if args.eval_only:
        return

    steps = max(1, int(len(fit) * args.epochs / args.batch))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    warm = max(1, steps // 10)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    # Batches of one repository: its other records' chunks are the harder in-batch negatives.
    by_repo = {}
    for r in fit:
        by_repo.setdefault(r["repo"], []).append(r)
    if not any(len(rs) > 1 for rs in by_repo.values()):
        sys.exit("no repository has two records to fit: nothing to contrast")
    t0 = time.time()
    step = 0
    while step < steps:
        batches = []
        for rs in by_repo.values():
            rs = rs[:]
            random.shuffle(rs)
            batches += [rs[i:i + args.batch] for i in range(0, len(rs), args.batch) if len(rs[i:i + args.batch]) > 1]
        random.shuffle(batches)
        for b in batches:
            if step >= steps:
                break
            model.train()
            queries = [r["query"] for r in b]
            docs = [random.choice(r["pos"]) for r in b]
            for r in b:
                docs += random.sample(r["neg"], min(HARD_NEGATIVES, len(r["neg"])))
            qv = model(*encode(tok, queries))
            dv = model(*encode(tok, docs))
            logits = 20.0 * qv @ dv.T
            # A chunk that is also gold for a row (two requests answered by one chunk, a hard
            # negative of one that the other needs) is not a negative of that row.
            gold_of = [set(r["pos"]) for r in b]
            shared = torch.tensor([[j != i and docs[j] in gold_of[i] for j in range(len(docs))]
                                   for i in range(len(b))])
            logits = logits.masked_fill(shared, float("-inf"))
            loss = F.cross_entropy(logits, torch.arange(len(b)))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if step % 10 == 0 or step == steps:
                print(f"step {step}/{steps} loss {loss.item():.3f} ({time.time() - t0:.0f}s)", file=sys.stderr)
    if scored:
        print(f"left-out MRR, tuned model: {mrr(model, tok, scored, files):.4f}", file=sys.stderr)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        for name in os.listdir(args.model):
            if name != "model.safetensors":
                shutil.copy(os.path.join(args.model, name), os.path.join(args.out, name))
        save_file(model.state(), os.path.join(args.out, "model.safetensors"))
        print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
