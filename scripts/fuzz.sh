#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo-fuzz, nightly): runs each target for SECONDS (default 600),
# nice'd, from its hand-written seeds (fuzz/seeds/TARGET) plus what earlier runs found
# (fuzz/corpus/TARGET, not committed), and prints one line per target:
#   fuzz: TARGET seconds=S execs=N corpus=C crashes=K
# Exits non-zero if any target crashed; the crashing inputs are in fuzz/artifacts/TARGET/.
#
#   scripts/fuzz.sh                  # every target, 10 minutes each
#   scripts/fuzz.sh 60 tokens chunk  # two targets, a minute each
set -uo pipefail

cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true

if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
  cargo install cargo-fuzz --locked
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cd fuzz && cargo +nightly fuzz list)
fi

# Built once (with AddressSanitizer, cargo-fuzz's default), then each binary runs as is.
nice -n 19 cargo +nightly fuzz build --fuzz-dir fuzz || exit 2
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_odr_violation=0:detect_leaks=0}"
bin="fuzz/target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release"

# Inputs libFuzzer kept because they failed (slow-unit-* files are kept too, but only noted).
failures() {
  find "$1" -type f \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l
}

failed=0
for target in "${targets[@]}"; do
  corpus="fuzz/corpus/$target"
  artifacts="fuzz/artifacts/$target"
  mkdir -p "$corpus" "$artifacts" "fuzz/seeds/$target"
  before=$(failures "$artifacts")
  log="fuzz/artifacts/$target.log"
  start=$(date +%s)
  # Leak detection is off: the targets keep process-wide tables (tokenizers, the sample index,
  # rayon's pool) on purpose; a real leak still shows as growth up to -rss_limit_mb.
  nice -n 19 "$bin/$target" "$corpus" "fuzz/seeds/$target" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=3072 -max_len=8192 \
    -print_final_stats=1 -detect_leaks=0 -artifact_prefix="$artifacts/" >"$log" 2>&1
  status=$?
  elapsed=$(($(date +%s) - start))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  corpus_size=$(find "$corpus" -type f | wc -l)
  crashes=$(($(failures "$artifacts") - before))
  if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then
    crashes=1 # libFuzzer stopped on a failure without leaving an input (see the log)
  fi
  echo "fuzz: $target seconds=$elapsed execs=${execs:-0} corpus=$corpus_size crashes=$crashes"
  [ "$crashes" -eq 0 ] || failed=1
done
exit "$failed"
