#!/usr/bin/env bash
# Builds the benchmark corpus: the sources of crates pinned in Cargo.lock, as `cargo fetch` leaves
# them in the cargo registry. Any machine with crates.io gets the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/bench-corpus}
crates=(regex-automata regex-syntax clap_builder serde_json rayon bstr)
cargo fetch --locked >/dev/null
registry=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/ | head -n 1)
rm -rf "$out"
mkdir -p "$out"
for c in "${crates[@]}"; do
  v=$(awk -v n="$c" '$0=="name = \""n"\"" {getline; gsub(/version = |"/,""); print; exit}' Cargo.lock)
  [ -n "$v" ] || { echo "crate $c is not in Cargo.lock" >&2; exit 1; }
  cp -r "$registry/$c-$v" "$out/$c-$v"
  # The registry copies carry VCS metadata files; keep only what the crate ships.
  rm -f "$out/$c-$v/.cargo-ok" "$out/$c-$v/.cargo_vcs_info.json"
done
echo "$out"
