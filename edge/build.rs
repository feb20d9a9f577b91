//! For the Worker (wasm32), exports the token tables it counts with into `OUT_DIR`, so the
//! module carries them ready to load: building tiktoken-rs's tables inside a fresh isolate costs
//! about half a second of CPU, loading an exported table a few milliseconds. Counts are identical
//! ([`RankTable::export`] self-checks against tiktoken-rs). Native builds write empty files: the
//! native host keeps its tables in the data directory instead.

use std::path::PathBuf;

use ctxgate_core::tokens::{Encoding, RankTable};

/// Encodings the Worker's catalog counts with (the o200k family and cl100k cover every exact and
/// estimated model; p50k/r50k fall back to tiktoken-rs).
const EXPORTED: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let wasm = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "wasm32");
    for encoding in EXPORTED {
        let bytes = if wasm {
            RankTable::export(encoding)
                .unwrap_or_else(|e| panic!("exporting the {} table: {e}", encoding.name()))
        } else {
            Vec::new()
        };
        let path = out.join(format!("{}.table", encoding.name()));
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}
