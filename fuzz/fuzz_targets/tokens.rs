//! The exported token tables against tiktoken-rs: any text counts exactly as the reference
//! counts it, for every encoding (the first byte picks it).
#![no_main]

use std::sync::OnceLock;

use ctxgate_core::tokens::{Encoding, RankTable};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [pick, rest @ ..] = data else {
        return;
    };
    let encoding = Encoding::ALL[usize::from(*pick) % Encoding::ALL.len()];
    let text = String::from_utf8_lossy(rest);
    let ours = table(encoding).count(&text);
    let reference = encoding.reference().count_ordinary(&text);
    assert_eq!(ours, reference, "{encoding} on {text:?}");
});

/// Each encoding's table, exported and loaded as the Worker loads it.
fn table(encoding: Encoding) -> &'static RankTable {
    static TABLES: [OnceLock<RankTable>; 5] = [const { OnceLock::new() }; 5];
    let slot = Encoding::ALL
        .iter()
        .position(|e| *e == encoding)
        .expect("a known encoding");
    TABLES[slot].get_or_init(|| {
        let bytes = RankTable::export(encoding).expect("export");
        RankTable::load(encoding, bytes).expect("load")
    })
}
