#!/usr/bin/env bash
# Where a warm 32k `/v1/context` call's CPU goes, natively, by stage; and what the cold call
# reads. Run on purpose (needs perf and strace; never part of the test command). Writes
# target/profile-stages/: folded.txt (perf stacks, root first), stages.md (the stage table),
# warm.txt, cold.txt, strace.txt, and cold-perf/ (the first call's folded.txt and stages.md). docs/performance.md explains the figures.
#
# The corpus is deno exported from the bare mirror $CTXGATE_DENO_MIRROR (default
# /work/.mirror/denoland+deno/repo) into target/bench-scale/deno, as scripts/bench-scale.sh does.
# CALLS warm calls are timed, then PROFILE_CALLS are profiled (perf at 2000 Hz, DWARF stacks).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${CARGO_TARGET_DIR:-target}
deno=${CTXGATE_DENO_MIRROR:-/work/.mirror/denoland+deno/repo}
corpus=$target/bench-scale/deno
out=$target/profile-stages
calls=${CALLS:-200}
profile_calls=${PROFILE_CALLS:-200}
py="python3 scripts/profile_stages.py"
mkdir -p "$out"
[ -d "$corpus" ] || python3 scripts/export_tree.py "$deno" HEAD "$corpus"

cargo build --locked --profile profiling -p ctxgate
bin=$target/profiling/ctxgate
export CTXGATE_HOME=$out/home
rm -rf "$CTXGATE_HOME"
# ORG_FLAGS: e.g. "--tokens-per-day 1000000000" for an org with limits (a lease per call); the
# default is none, as in benches/scale.rs.
$bin org create acme ${ORG_FLAGS:-} >/dev/null
KEY=$($bin key create --org acme)
/usr/bin/time -f "indexed in %e s, peak RSS %M KiB" \
  $bin project add --org acme --name deno "$(realpath "$corpus")" >/dev/null

serve() { # starts `ctxgate serve` on a free port: sets PID and URL
  $bin serve --addr 127.0.0.1:0 --format json >"$out/serve.out" 2>"$out/serve.err" &
  PID=$!
  for _ in $(seq 100); do [ -s "$out/serve.out" ] && break; sleep 0.1; done
  URL=$(python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["listening"])' \
    <"$out/serve.out")
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; }

# The cold call: a fresh process over the same data directory (the files in the OS page
# cache), its first call and the same query again; then once more with every file read traced.
serve
{
  echo "first call: $($py one "$URL" "$KEY")"
  echo "second call: $($py one "$URL" "$KEY")"
} | tee "$out/cold.txt"
stop
serve
strace -f -y -T -p "$PID" -e trace=openat,read,pread64 -o "$out/strace.txt" &
TRACER=$!
sleep 1
echo "traced first call: $($py one "$URL" "$KEY")" | tee -a "$out/cold.txt"
kill "$TRACER"; wait "$TRACER" 2>/dev/null || true
python3 - "$out/strace.txt" <<'PY' | tee -a "$out/cold.txt"
import collections, re, sys
n, size, secs = collections.Counter(), collections.Counter(), collections.Counter()
for line in open(sys.argv[1]):
    m = re.search(r"\b(read|pread64)\(\d+<([^>]+)>.*\) = (\d+) <([0-9.]+)>$", line)
    if m:
        kind = re.sub(r"[0-9a-f]{16,}", "<hash>", m.group(2).split("/home/", 1)[-1])
        n[kind] += 1; size[kind] += int(m.group(3)); secs[kind] += float(m.group(4))
for k, c in size.most_common(12):
    print(f"reads={n[k]} bytes={c} in_syscall_ms={secs[k] * 1000:.1f} {k}")
PY
stop

# The cold call's CPU by stage: a fresh server, perf at 4000 Hz around its first call (the
# table's ms are shares of the untraced first call's app ms).
serve
perf record -F 4000 -g --call-graph dwarf,32768 -p "$PID" -o "$out/cold.perf.data" \
  2>"$out/perf.err" &
PERF=$!
sleep 1
echo "profiled first call: $($py one "$URL" "$KEY")" | tee -a "$out/cold.txt"
kill -INT "$PERF"; wait "$PERF" || true
stop
cold_ms=$(sed -n '1s/.*app_ms=\([0-9.]*\).*/\1/p' "$out/cold.txt")
perf script -i "$out/cold.perf.data" -F comm,tid,ip,sym --inline 2>/dev/null |
  $py fold "$out/cold-perf" "$cold_ms" >/dev/null

# Warm: a fresh server, warmed, timed, then profiled.
serve
$py drive "$URL" "$KEY" "$PID" 20 >/dev/null
$py drive "$URL" "$KEY" "$PID" "$calls" | tee "$out/warm.txt"
perf record -F 2000 -g --call-graph dwarf,32768 -p "$PID" -o "$out/perf.data" 2>"$out/perf.err" &
PERF=$!
sleep 1
$py drive "$URL" "$KEY" "$PID" "$profile_calls" | tee -a "$out/warm.txt"
kill -INT "$PERF"; wait "$PERF" || true
stop
cpu_ms=$(sed -n 's/.*cpu_ms=\([0-9.]*\).*/\1/p' "$out/warm.txt" | head -n1)
perf script -i "$out/perf.data" -F comm,tid,ip,sym --inline 2>/dev/null |
  $py fold "$out" "$cpu_ms"
