//! For the Worker (wasm32), exports the token tables it counts with into `OUT_DIR`, so the
//! module carries them ready to load: building tiktoken-rs's tables inside a fresh isolate costs
//! about half a second of CPU, loading an exported table a few milliseconds. Counts are identical
//! ([`RankTable::export`] self-checks against tiktoken-rs). Native builds write empty files: the
//! native host keeps its tables in the data directory instead. The built-in model catalog goes
//! in the same way, parsed here.

use std::path::PathBuf;

use ctxgate_core::tokens::{Encoding, RankTable};

/// Every table the Worker can count with (o200k_harmony counts with o200k_base's): the Worker
/// is built without tiktoken-rs, so an encoding missing here could only be over-counted.
const EXPORTED: [Encoding; 4] = [
    Encoding::O200kBase,
    Encoding::Cl100kBase,
    Encoding::P50kBase,
    Encoding::R50kBase,
];

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
    // The built-in model catalog, parsed and validated here and handed over as JSON: the toml
    // parser took a fresh isolate's first request about 20 ms of CPU.
    println!("cargo::rerun-if-changed=../shared/data/models.toml");
    let catalog = if wasm {
        serde_json::to_vec(ctxgate_core::catalog::Catalog::builtin().models())
            .expect("the catalog serializes")
    } else {
        Vec::new()
    };
    let path = out.join("catalog.json");
    std::fs::write(&path, catalog).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}
