//! Named crash points for the crash-injection tests (`tests/crash_index.rs`,
//! `tests/crash_serve.rs`, `indexer/tests/faults_aws.rs`; docs/security.md lists the points).
//!
//! `CTXGATE_CRASH_AT=<point>` aborts the process the first time it reaches `<point>`, and
//! `CTXGATE_CRASH_AT=<point>:<n>` the `n`-th time, as a `kill -9` there would: no destructor
//! runs, nothing is flushed, locks die with the process. Unset (every normal run), a point
//! costs one environment lookup and does nothing. Compiled into every build so that the
//! binaries the tests kill are the ones that ship.

use std::sync::atomic::{AtomicU64, Ordering};

/// Times the point named by `CTXGATE_CRASH_AT` was reached in this process.
static REACHED: AtomicU64 = AtomicU64::new(0);

/// Aborts here when `CTXGATE_CRASH_AT` names `point` (and this is its `n`-th visit).
pub fn point(point: &str) {
    let Ok(wanted) = std::env::var("CTXGATE_CRASH_AT") else {
        return;
    };
    let (name, nth) = match wanted.split_once(':') {
        Some((name, n)) => (name, n.parse::<u64>().unwrap_or(1)),
        None => (wanted.as_str(), 1),
    };
    if name == point && REACHED.fetch_add(1, Ordering::SeqCst) + 1 == nth {
        tracing::error!("CTXGATE_CRASH_AT={wanted}: aborting");
        std::process::abort();
    }
}
