//! Fast token tables kept in the data directory.
//!
//! The first process that needs an encoding builds tiktoken-rs's tables, exports the vocabulary
//! as a [`RankTable`] (checked against tiktoken-rs before it is written) and stores it under
//! `cache/tokenizers/`; every later process loads it in milliseconds instead of rebuilding
//! tiktoken-rs's tables (about 250 ms for `o200k_base`). Counts are the same either way.
//! `CTXGATE_TIKTOKEN_ONLY=1` turns the tables off, for comparison.

use std::path::{Path, PathBuf};

use ctxgate_core::tokens::{Encoding, RankTable};

/// Where an encoding's counter came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableSource {
    /// Loaded from the data directory.
    Loaded,
    /// Exported from tiktoken-rs now and stored for next time.
    Exported,
    /// Already installed in this process.
    AlreadyInstalled,
    /// Using tiktoken-rs directly (tables disabled, or the cache could not be used).
    Reference,
}

fn table_path(data_dir: &Path, encoding: Encoding) -> PathBuf {
    data_dir.join("cache").join("tokenizers").join(format!(
        "{}-ctxgate-{}-layout{}.tbl",
        encoding.name(),
        env!("CARGO_PKG_VERSION"),
        ctxgate_core::tokens::table::LAYOUT
    ))
}

/// Installs the fast counter for `encoding`, exporting and storing it on first use. Never fails:
/// any problem falls back to tiktoken-rs with a log line.
pub fn install(data_dir: &Path, encoding: Encoding) -> TableSource {
    if encoding.installed().is_some() {
        return TableSource::AlreadyInstalled;
    }
    // One loader per encoding: concurrent callers wait for it instead of loading twice.
    static LOADING: [std::sync::Mutex<()>; 5] = [const { std::sync::Mutex::new(()) }; 5];
    let _guard = LOADING[encoding as usize]
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if encoding.installed().is_some() {
        return TableSource::AlreadyInstalled;
    }
    if std::env::var_os("CTXGATE_TIKTOKEN_ONLY").is_some_and(|v| v != "0") {
        encoding.preload();
        return TableSource::Reference;
    }
    let path = table_path(data_dir, encoding);
    if let Ok(bytes) = std::fs::read(&path) {
        match RankTable::load(encoding, bytes) {
            Ok(t) => {
                Encoding::install(t);
                return TableSource::Loaded;
            }
            Err(e) => tracing::warn!("ignoring token table {}: {e}", path.display()),
        }
    }
    let bytes = match RankTable::export(encoding) {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!("using tiktoken-rs directly for {encoding}: {e}");
            return TableSource::Reference;
        }
    };
    if let Err(e) = write_atomic(&path, &bytes) {
        tracing::info!("cannot store token table {}: {e}", path.display());
    }
    match RankTable::load(encoding, bytes) {
        Ok(t) => {
            Encoding::install(t);
            TableSource::Exported
        }
        Err(_) => TableSource::Reference,
    }
}

/// Writes `bytes` to `path` through a temporary file beside it, so that a reader never
/// sees a half-written file and two writers never share a temporary one.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    // A uniquely named temporary file beside the target, removed if anything fails before the
    // rename: two writers (processes or threads) never share one.
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.persist(path).map(|_| ()).map_err(|e| e.error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exports_then_loads() {
        let dir = tempfile::tempdir().unwrap();
        // r50k is used by no other test in this process, so the first call really exports.
        assert_eq!(
            install(dir.path(), Encoding::R50kBase),
            TableSource::Exported
        );
        assert!(table_path(dir.path(), Encoding::R50kBase).is_file());
        assert_eq!(
            install(dir.path(), Encoding::R50kBase),
            TableSource::AlreadyInstalled
        );
        let bytes = std::fs::read(table_path(dir.path(), Encoding::R50kBase)).unwrap();
        assert!(RankTable::load(Encoding::R50kBase, bytes).is_ok());
        assert_eq!(Encoding::R50kBase.count("hello world"), 2);
    }
}
