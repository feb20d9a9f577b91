#!/usr/bin/env python3
"""Builds tiktoken's o200k_base ranks file from the npm package js-tiktoken, for machines that
reach the package registries but not tiktoken's own download host.

js-tiktoken ships each encoding as a JS module whose default export is a JSON object; its
`bpe_ranks` field holds lines of `<tag> <first rank> <base64 token> <base64 token> ...`, the
tokens taking consecutive ranks from the first. tiktoken's file is `<base64 token> <rank>` a line,
in rank order. The result is written where tiktoken looks it up (TIKTOKEN_CACHE_DIR/sha1(url))
and checked against the sha256 tiktoken expects, so a wrong conversion is refused there too.

Usage: tiktoken_ranks.py --js PATH/dist/ranks/o200k_base.js --cache DIR
"""
import argparse
import hashlib
import json
import os
import sys

URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"


def convert(js_text):
    """The .tiktoken bytes of a js-tiktoken ranks module."""
    body = js_text[js_text.index("{"):js_text.rindex("}") + 1]
    ranks = json.loads(body)["bpe_ranks"]
    pairs = []
    for line in ranks.split("\n"):
        if not line:
            continue
        fields = line.split(" ")
        first = int(fields[1])
        pairs.extend((tok, first + i) for i, tok in enumerate(fields[2:]))
    pairs.sort(key=lambda p: p[1])
    return "".join(f"{tok} {rank}\n" for tok, rank in pairs).encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--js", required=True)
    ap.add_argument("--cache", required=True)
    args = ap.parse_args()
    data = convert(open(args.js, encoding="utf-8").read())
    got = hashlib.sha256(data).hexdigest()
    if got != SHA256:
        sys.exit(f"converted ranks have sha256 {got}, tiktoken expects {SHA256}")
    os.makedirs(args.cache, exist_ok=True)
    path = os.path.join(args.cache, hashlib.sha1(URL.encode()).hexdigest())
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
    print(f"o200k_base ranks ({len(data)} bytes, sha256 ok) -> {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
