#!/usr/bin/env python3
"""Writes the files of a commit of a bare git mirror into a folder, skipping blobs the mirror
lacks (the fetch tool's snapshots may leave out a few of the largest), unlike `git archive`,
which stops at the first. Usage: export_tree.py GIT_DIR REV DEST"""
import os
import subprocess
import sys


def main() -> int:
    git_dir, rev, dest = sys.argv[1:4]
    ls = subprocess.run(
        ["git", "--git-dir", git_dir, "ls-tree", "-r", "-z", "--full-tree", rev],
        check=True, capture_output=True,
    ).stdout.split(b"\0")
    entries = []
    for line in ls:
        if not line:
            continue
        meta, path = line.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode in (b"100644", b"100755"):
            entries.append((sha.decode(), path.decode("utf-8", "surrogateescape")))
    cat = subprocess.Popen(
        ["git", "--git-dir", git_dir, "cat-file", "--batch"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )
    written = missing = 0
    for sha, path in entries:
        cat.stdin.write(sha.encode() + b"\n")
        cat.stdin.flush()
        header = cat.stdout.readline().split()
        if len(header) < 2 or header[1] == b"missing":
            missing += 1
            continue
        size = int(header[2])
        data = cat.stdout.read(size)
        cat.stdout.read(1)
        target = os.path.join(dest, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)
        written += 1
    cat.stdin.close()
    cat.wait()
    print(f"{written} files written, {missing} missing blobs skipped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
