#!/usr/bin/env python3
"""Splits a V8 profile of the Worker's warm calls by stage (run on purpose; not a test).

  worker_profile_stages.py PROFILE.cpuprofile [BUSIEST_MS]

PROFILE is what `scripts/worker-cpu-profile.mjs` keeps with `PROFILE_DIR=dir` (so does
`benches/worker.rs` when PROFILE_DIR is set), beside it the requests' marks (`.marks.json`).
Only samples inside a request count. A sample goes to the innermost stage entry point on its
stack: the core's stages are those of `scripts/profile_stages.py` (the native split, so the two
tables compare), then the Worker host's own (the `Response`, the Durable Object calls, the
request's conversion, the wasm-bindgen promise glue). V8's non-idle time is not CPU time (about
four times the busiest workerd thread's CPU here, see worker-cpu-profile.mjs): read the shares;
BUSIEST_MS, the bench's busiest-thread p50, turns them into an estimate in ms.
"""

import json
import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_stages import COMPILED as CORE, STICKY  # noqa: E402

# The Worker host's stages, after the core's (a core stage inside one of these wins).
HOST = [
    ("response: workerd's `new Response` (copies the body)",
     r"gen_Response::Response::new_with_opt_buffer_source_and_init|^Response$"),
    ("response: body collected, headers to JavaScript (`whole`)", r"ctxgate_edge::worker_host::whole\b"),
    ("Durable Object: the org object's side (ledger, storage)", r"ctxgate_edge::worker_host::org_object::"),
    ("Durable Object: the request's side (stub fetch, answer text)",
     r"CloudflareBackend::org_call|worker::durable::|ctxgate_edge::worker_host::cloudflare::body_text"),
    ("other bindings (KV key lookup, R2, cache)", r"ctxgate_edge::worker_host::cloudflare::|worker::kv::"),
    ("request: conversion and body read",
     r"ctxgate_edge::worker_host::(buffered|read_capped)\b|worker::request::Request as .*From|gen_Request::"),
    ("request record: analytics and log line", r"ctxgate_edge::worker_host::analytics::|^formatLog$|console"),
    ("routing and middleware (axum, tower)", r"axum::|tower::|ctxgate_edge::router\b|ctxgate_edge::middleware"),
    ("promise and microtask glue (wasm-bindgen futures)",
     r"js_sys::futures::|^queueMicrotask$|wasm_bindgen::"),
]
HOST_COMPILED = [(name, re.compile(rx)) for name, rx in HOST]
ALL = CORE + HOST_COMPILED
IDLE = {"(idle)", "(root)"}


def classify(frames):
    """The stage of one sample, `frames` leaf first."""
    for name, rx in CORE[:STICKY]:
        if any(rx.search(f) for f in frames):
            return name
    for f in frames:
        for name, rx in ALL:
            if rx.search(f):
                return name
    if frames[0] in ("(garbage collector)", "(program)"):
        return f"V8: {frames[0]}"
    return "other JavaScript (workerd and wrangler's facade, anonymous frames)"


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    path = sys.argv[1]
    busiest = float(sys.argv[2]) if len(sys.argv) == 3 else None
    profile = json.load(open(path))
    marks = json.load(open(path.replace(".cpuprofile", ".marks.json")))
    nodes = {n["id"]: n for n in profile["nodes"]}
    parent = {c: n["id"] for n in profile["nodes"] for c in n.get("children", [])}

    def name(i):
        f = nodes[i]["callFrame"]
        return f["functionName"] or f"(anonymous {f['url'].rsplit('/', 1)[-1]}:{f['lineNumber']})"

    stage_of = {}
    leaf = {}
    for i in nodes:
        frames = []
        n = i
        while n is not None:
            frames.append(name(n))
            n = parent.get(n)
        leaf[i] = frames[0]
        stage_of[i] = None if frames[0] in IDLE else classify(frames)
    stage = Counter()
    leaves = Counter()
    total = 0
    t = profile["startTime"]
    deltas = profile["timeDeltas"]
    marks.sort()
    m = 0
    for k, sample in enumerate(profile["samples"]):
        t += deltas[k]
        span = deltas[k + 1] if k + 1 < len(deltas) else 0
        while m < len(marks) and marks[m][1] <= t:
            m += 1
        if m == len(marks) or t < marks[m][0] or stage_of[sample] is None:
            continue
        total += span
        stage[stage_of[sample]] += span
        leaves[leaf[sample]] += span
    calls = len(marks)
    print(f"requests={calls} isolate_busy_ms_per_request={total / 1000 / calls:.2f}"
          + (f" busiest_thread_ms={busiest:.2f}" if busiest else ""))
    print()
    print("| stage | share of busy samples | ms per call (share × busiest) |")
    print("|---|---:|---:|")
    for s, us in stage.most_common():
        share = us / total
        est = f"{share * busiest:.2f}" if busiest else "-"
        print(f"| {s} | {share * 100:.1f}% | {est} |")
    print()
    print("Top leaf functions (self time):")
    for s, us in leaves.most_common(25):
        print(f"- {us / total * 100:.1f}% {re.sub(r'::h[0-9a-f]{16}', '', s)[:150]}")


if __name__ == "__main__":
    main()
