#!/usr/bin/env python3
"""Helpers of scripts/profile-stages.sh (run on purpose; nothing here is a test).

  profile_stages.py drive URL KEY PID N    N sequential warm `POST /v1/context` calls (budget
                                           32000, the queries of benches/scale.rs in turn; the
                                           env PROFILE_PROJECT, PROFILE_QUERIES (a file, one
                                           query a line) and PROFILE_BUDGET change them) over
                                           one keep-alive connection: mean wall ms per call, the
                                           app's own ms (Server-Timing), and the server's CPU ms
                                           per call (/proc/PID/stat utime+stime, before/after)
  profile_stages.py one URL KEY            one call: wall ms, app ms, bytes read from storage
                                           (the `ctxgate-storage-read` header)
  profile_stages.py first ROUNDS LABEL=BIN,HOME,KEY_FILE[,PROJECT] ...
                                           first calls: per round and build in turn, a fresh
                                           `BIN serve` over data directory HOME, its first call
                                           (KEY_FILE holds an API key; PROJECT defaults to
                                           PROFILE_PROJECT or deno), then the server stopped;
                                           each build's median app ms and every run
  profile_stages.py fold OUT_DIR CPU_MS    `perf script` on stdin: OUT_DIR/folded.txt (one line
                                           a stack, root first, `;`-joined, then the count) and
                                           OUT_DIR/stages.md (the stage table; ms per call is
                                           the share times CPU_MS)
  profile_stages.py table OUT_DIR CPU_MS   stages.md again from OUT_DIR/folded.txt

A sample goes to the innermost stage entry point on its stack (STAGES, read leaf to root; any
sample under `count_prompt`, `Derived::of` or `PathTables::of` (a merged version's) to those), so a list lookup inside ranking is ranking, and a
token count inside candidate costing is selection.
"""

import http.client
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from functools import lru_cache
from urllib.parse import urlparse

# The queries of benches/scale.rs, so the figures compare with its `native_ms`.
QUERIES = [
    "where are command line arguments parsed and validated",
    "how is a file read from disk and its errors reported",
    "where is the HTTP server started and requests routed",
    "how are tests for the module loader organised",
    "where is configuration loaded and merged with defaults",
]

# (stage, regex over one demangled frame). Order only breaks ties within one frame.
STAGES = [
    ("re-count (tiktoken over the prompt)", r"(^|::)count_prompt\b"),
    ("per-version derived tables (Derived::of, once per opened version)",
     r"ctxgate_core::index::derived::Derived::of\b|ctxgate_core::index::path_tables::PathTables::of\b"),
    ("composition (render, fit, summaries, excerpts)",
     r"ctxgate_core::assemble::pieces::.*compose|ctxgate_core::compose::|(^|::)fit_with_summaries\b|"
     r"ctxgate_core::assemble::summaries::|ctxgate_core::assemble::excerpts::|"
     r"ctxgate_core::assemble::signposts::"),
    ("selection (candidate costs, greedy fill)",
     r"ctxgate_core::assemble::candidates::|ctxgate_core::select::|(^|::)(select_greedy|first_selection|"
     r"signatures_only)\b|ctxgate_core::assemble::plan::(room|shape|whole_repository|strategy|excluded)|"
     r"ctxgate_core::assemble::estimate::|Counting"),
    ("ranking: deepen_around_strong_chunks (callers and callees in the file)",
     r"deepen_around_strong_chunks|add_callers_and_callees|users_inline"),
    ("ranking: signals, other rerank stages, order",
     r"ctxgate_core::rank::|ctxgate_core::rank\b|(^|::)(set_priors|boost_defaults|diversify|rank)\b|"
     r"ctxgate_core::assemble::plan::(ordered|set_aside_note)|ctxgate_core::assemble::features::"),
    ("postings reads and BM25 (lists decode, scoring)",
     r"ctxgate_core::assemble::retrieve::(retrieve|fetched_lists|fetched_values|find_keys|both)|"
     r"(^|::)(retrieve|fetched_lists|fetched_values|find_keys)\b|ctxgate_core::lexical::bm25::"),
    ("query analysis (terms, intent)",
     r"ctxgate_core::assemble::retrieve::(understood|search_terms|error_output|add_hot_paths)|"
     r"(^|::)(understood|search_terms)\b|"
     r"ctxgate_core::intent::|ctxgate_core::lexical::(terms|derive|synonyms)::"),
    ("plan (other)", r"ctxgate_core::assemble::plan::plan"),
    ("texts and lists from the in-process cache", r"ctxgate_edge::texts::|ctxgate_edge::text_cache::"),
    ("opened version (snapshot cache)", r"ctxgate_edge::snapshot::"),
    ("dense signal", r"ctxgate_edge::dense::"),
    ("version pointer (cached)", r"ctxgate_edge::pointer::"),
    ("quota, settle and audit (SQLite)",
     r"ctxgate_edge::meter::|ctxgate_edge::routes::context::run::(reserve|settle)|"
     r"(^|::)(settle|reserve|book_and_audit|settle_and_audit)\b"),
    ("serialization (answer JSON, savings, routing)",
     r"ctxgate_edge::routes::context::body::|ctxgate_edge::routes::context::report::|(^|::)json_response\b|"
     r"ContextAnswer|ctxgate_edge::json_text::"),
    ("continuation token", r"ctxgate_core::continuation::"),
    ("auth (key hash, key and org lookup)", r"ctxgate_edge::extract::auth::|Caller.*from_request_parts"),
    ("request parse and budget (JSON body, catalog)",
     r"ctxgate_edge::extract::|ctxgate_edge::routes::budget::|ctxgate_edge::routes::context::request::"),
    ("metrics and request record",
     r"ctxgate_edge::metrics::|ctxgate_edge::observe::"),
    ("context handler (other)", r"ctxgate_edge::routes::context::"),
]
STICKY = 2
# Samples no stage entry point claims, by where they are.
REST = [
    ("kernel (sockets, syscalls, scheduler)", r"\[kernel|^0x?f+|entry_SYSCALL|__x64_sys|do_syscall"),
    ("HTTP server and runtime (hyper, axum, tokio)", r"hyper|axum|tokio|tower|h2::|mio::"),
]
COMPILED = [(name, re.compile(rx)) for name, rx in STAGES]
REST_COMPILED = [(name, re.compile(rx)) for name, rx in REST]
SQLITE = re.compile(r"sqlite3|rusqlite")
TIKTOKEN = re.compile(r"ctxgate_core::tokens::|tiktoken|CoreBPE|byte_pair")


def call(conn, path, key, body):
    conn.request("POST", path, body=json.dumps(body),
                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    res = conn.getresponse()
    data = res.read()
    if res.status != 200:
        sys.exit(f"{path}: HTTP {res.status}: {data[:300]!r}")
    timing = res.getheader("server-timing") or ""
    m = re.search(r"dur=([0-9.]+)", timing)
    read = res.getheader("ctxgate-storage-read") or "-"
    return (float(m.group(1)) if m else float("nan")), json.loads(data), read


def connect(url):
    u = urlparse(url)
    return http.client.HTTPConnection(u.hostname, u.port, timeout=600)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)


@lru_cache(maxsize=1)
def queries():
    """The queries driven: QUERIES, or the lines of the file PROFILE_QUERIES names (read once, not
    in the timed loop)."""
    path = os.environ.get("PROFILE_QUERIES")
    if not path:
        return QUERIES
    with open(path) as f:
        return [line.strip() for line in f if line.strip()]


def body(i):
    """Call `i`'s body: project PROFILE_PROJECT (default deno), budget PROFILE_BUDGET (32000)."""
    qs = queries()
    return {"project": os.environ.get("PROFILE_PROJECT", "deno"), "query": qs[i % len(qs)],
            "budget": int(os.environ.get("PROFILE_BUDGET", "32000"))}


def drive(url, key, pid, n):
    conn = connect(url)
    hz = os.sysconf("SC_CLK_TCK")
    t0, c0 = time.perf_counter(), cpu_ticks(pid)
    app = []
    for i in range(n):
        ms, _, _ = call(conn, "/v1/context", key, body(i))
        app.append(ms)
    wall = (time.perf_counter() - t0) * 1000 / n
    cpu = (cpu_ticks(pid) - c0) * 1000 / hz / n
    app.sort()
    print(f"calls={n} wall_ms={wall:.2f} app_ms_mean={sum(app) / n:.2f} "
          f"app_ms_median={app[n // 2]:.2f} cpu_ms={cpu:.2f}")


def one(url, key):
    conn = connect(url)
    t0 = time.perf_counter()
    ms, v, read = call(conn, "/v1/context", key, body(0))
    wall = (time.perf_counter() - t0) * 1000
    print(f"wall_ms={wall:.1f} app_ms={ms:.1f} tokens_total={v.get('tokens_total')} "
          f"pieces={len(v.get('pieces') or [])} storage_read_bytes={read}")


def first(rounds, builds):
    """Alternating fresh servers' first calls, so that builds compare on the same machine state."""
    import statistics
    import subprocess
    runs = defaultdict(list)
    default_project = os.environ.get("PROFILE_PROJECT", "deno")
    for _ in range(rounds):
        for spec in builds:
            label, rest = spec.split("=", 1)
            binary, home, key_file, *project = rest.split(",")
            env = dict(os.environ, CTXGATE_HOME=home)
            server = subprocess.Popen(
                [binary, "serve", "--addr", "127.0.0.1:0", "--format", "json"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
            try:
                url = json.loads(server.stdout.readline())["listening"]
                key = open(key_file).read().split()[0]
                os.environ["PROFILE_PROJECT"] = project[0] if project else default_project
                ms, _, _ = call(connect(url), "/v1/context", key, body(0))
                runs[label].append(ms)
            finally:
                server.terminate()
                server.wait()
    for label, ms in runs.items():
        print(f"{label}: median {statistics.median(ms):.1f} ms, runs "
              + " ".join(f"{m:.1f}" for m in sorted(ms)))


def stacks(lines):
    """(comm, frames leaf first) of each sample of `perf script` output."""
    frames = []
    head = None
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if head is not None:
                yield head, frames
            head, frames = None, []
        elif head is None:
            head = line
        else:
            parts = line.strip().split(None, 1)
            sym = parts[1] if len(parts) > 1 else parts[0]
            sym = re.sub(r"\+0x[0-9a-f]+", "", sym)
            frames.append(sym)
    if head is not None:
        yield head, frames


def classify(frames):
    # The first STICKY stages claim anything under them: the re-count calls compose's helpers
    # (`usable_part`), the derived tables the term splitter.
    for name, rx in COMPILED[:STICKY]:
        if any(rx.search(f) for f in frames):
            return name
    for f in frames:  # leaf to root: the innermost entry point wins
        for name, rx in COMPILED:
            if rx.search(f):
                return name
    for name, rx in REST_COMPILED:
        if any(rx.search(f) for f in frames):
            return name
    return "other (allocator, libc, unresolved)"


def fold(out_dir, cpu_ms):
    folded = Counter()
    for _head, frames in stacks(sys.stdin):
        if frames:
            folded[";".join(reversed(frames))] += 1
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "folded.txt"), "w") as f:
        for k, v in folded.most_common():
            f.write(f"{k} {v}\n")
    table(out_dir, cpu_ms)


def table(out_dir, cpu_ms):
    stage = Counter()
    sqlite = Counter()
    tiktoken = Counter()
    leaves = Counter()
    total = 0
    for line in open(os.path.join(out_dir, "folded.txt")):
        stack, n = line.rstrip("\n").rsplit(" ", 1)
        n = int(n)
        frames = stack.split(";")[::-1]
        total += n
        s = classify(frames)
        stage[s] += n
        if any(SQLITE.search(f) for f in frames):
            sqlite[s] += n
        if any(TIKTOKEN.search(f) for f in frames):
            tiktoken[s] += n
        leaves[frames[0]] += n
    rows = [f"samples={total} cpu_ms_per_call={cpu_ms:.2f}", "",
            "| stage | share of samples | ms per call | of which SQLite | of which token counting |",
            "|---|---:|---:|---:|---:|"]
    for name, n in stage.most_common():
        share = n / total
        rows.append(f"| {name} | {share * 100:.1f}% | {share * cpu_ms:.2f} | "
                    f"{sqlite[name] / total * 100:.1f}% | {tiktoken[name] / total * 100:.1f}% |")
    rows += ["", "Top leaf functions (self time):", ""]
    for name, n in leaves.most_common(25):
        rows.append(f"- {n / total * 100:.1f}% {name[:160]}")
    text = "\n".join(rows) + "\n"
    with open(os.path.join(out_dir, "stages.md"), "w") as f:
        f.write(text)
    print(text)


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "drive" and len(sys.argv) == 6:
        drive(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif cmd == "one" and len(sys.argv) == 4:
        one(sys.argv[2], sys.argv[3])
    elif cmd == "first" and len(sys.argv) >= 4:
        first(int(sys.argv[2]), sys.argv[3:])
    elif cmd == "fold" and len(sys.argv) == 4:
        fold(sys.argv[2], float(sys.argv[3]))
    elif cmd == "table" and len(sys.argv) == 4:
        table(sys.argv[2], float(sys.argv[3]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
