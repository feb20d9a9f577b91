#!/usr/bin/env python3
"""Splits a `perf record -g` of workerd by what its busiest thread was doing (run on purpose).

  perf script -i PERF.data -F tid,time,ip,sym,dso | scripts/workerd_perf_split.py [SKIP_S]

`benches/worker.rs` records one with `CTXGATE_WORKER_PERF=PERF.data` (the warm 32k calls).
workerd is not stripped, so its C++ (the event loop, the runtime's API, V8 itself, SQLite) has
names; the module's wasm and V8's optimised JavaScript are JIT code without names (counted
together). This is the CPU the bench's "busiest thread" figure counts, split without V8's
sampler, which over-counts native calls such as `new Response` (its share there was 16-24%,
here about 1%). SKIP_S drops the first seconds (default 0), e.g. while V8 still tiers up.
"""

import re
import sys
from collections import Counter

# (what, regex over the whole stack): the first that matches a sample claims it.
KINDS = [
    ("V8 garbage collection", r"Heap::CollectGarbage|Scavenger|MarkCompact|IncrementalMarking|cppgc"),
    ("V8 compiling (tier-up, parsing)", r"compiler::|wasm::.*Compil|Parser|BytecodeGenerator|Compiler::"),
]
# By the leaf frame (symbol, dso).
LEAVES = [
    ("JIT code: the module's wasm and optimised JavaScript", lambda s, d: d.startswith("/tmp/perf-") or s == "[unknown]"),
    ("V8 builtins for wasm (calls between wasm and JavaScript)", lambda s, d: s.startswith("Builtins_Wasm") or "wasm::" in s),
    ("V8 builtins and interpreter (JavaScript glue, promises)", lambda s, d: s.startswith("Builtins_")),
    ("kernel (sockets, files, scheduler)", lambda s, d: "kernel" in d),
    ("SQLite (Durable Object storage)", lambda s, d: "sqlite3" in s),
    ("allocator (tcmalloc) and libc (memmove)", lambda s, d: "tcmalloc" in s.lower() or "libc" in d),
    ("V8 runtime and API (strings, wrappers, handles)", lambda s, d: s.startswith("v8::")),
]
# Inclusive shares of what the runtime was asked to do.
CALLS = [
    ("the Rust futures' microtasks (all the module's code and what it calls)", r"ServiceWorkerGlobalScope::queueMicrotask"),
    ("Durable Object call: subrequest (stub fetch)", r"Fetcher::fetch|SubrequestClient|GlobalActorOutgoingFactory"),
    ("Durable Object storage: SQLite (put, implicit transaction)", r"ActorSqlite|SqlStorage|SqliteDatabase|SqliteKv"),
    ("console.log lines to wrangler's inspector", r"Worker::handleLog|InspectorChannelImpl"),
    ("ReadableStream readers and pumps", r"ReadableStream"),
    ("request `cf` object (deep-cloned on each read)", r"Request::getCf|CfProperty"),
    ("new Response (its body copied)", r"workerd::api::Response::constructor"),
    ("sending the response", r"workerd::api::Response::send"),
    ("Headers objects", r"workerd::api::Headers::"),
    ("JSON in the runtime (parse, stringify, clone)", r"Json"),
]


def samples(lines, skip):
    """(tid, frames leaf first as (symbol, dso)) of each sample after `skip` seconds."""
    tid, keep, frames, t0 = None, False, [], None
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if keep and frames:
                yield tid, frames
            keep, frames = False, []
        elif not line.startswith("\t"):
            tid, t = line.split()[:2]
            t = float(t.rstrip(":"))
            t0 = t if t0 is None else t0
            keep, frames = t - t0 >= skip, []
        else:
            m = re.match(r"\s*[0-9a-f]+ (.*) \(([^)]*)\)$", line)
            if m:
                frames.append((m.group(1), m.group(2)))
    if keep and frames:
        yield tid, frames


def main():
    skip = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    by_thread = {}
    for tid, frames in samples(sys.stdin, skip):
        by_thread.setdefault(tid, []).append(frames)
    if not by_thread:
        sys.exit("no samples")
    tid, busiest = max(by_thread.items(), key=lambda kv: len(kv[1]))
    n = len(busiest)
    kinds, calls = Counter(), Counter()
    for frames in busiest:
        stack = " ".join(s for s, _ in frames)
        kind = next((k for k, rx in KINDS if re.search(rx, stack)), None)
        if kind is None:
            leaf, dso = frames[0]
            kind = next((k for k, test in LEAVES if test(leaf, dso)), "workerd's own C++ (event loop, IoContext, API objects)")
        kinds[kind] += 1
        for what, rx in CALLS:
            if re.search(rx, stack):
                calls[what] += 1
    others = ", ".join(f"{t}: {len(s)}" for t, s in by_thread.items() if t != tid)
    print(f"busiest thread {tid}: {n} samples (other threads: {others})\n")
    print("| the busiest thread's time, by leaf | share |\n|---|---:|")
    for k, v in kinds.most_common():
        print(f"| {k} | {v / n * 100:.1f}% |")
    print("\n| inside (inclusive; rows overlap) | share |\n|---|---:|")
    for k, v in calls.most_common():
        print(f"| {k} | {v / n * 100:.1f}% |")


if __name__ == "__main__":
    main()
