//! The version an index run starts from: opened to reuse its files, chunks and texts, or set
//! aside (with a warning) when it is of another format or damaged, so a bad version never
//! blocks every later run.

use ctxgate_core::index::open;
use ctxgate_core::index::{IndexPack, PackError};

use crate::IndexerError;
use crate::store::{IndexStore, Manifest, keys};

/// A published version, opened.
pub struct OpenVersion {
    /// Its number.
    pub version: u64,
    /// Its manifest.
    pub manifest: Manifest,
    /// Its index.
    pub pack: IndexPack,
}

/// Opens the current version of a project, if it has one.
pub fn open_current(
    store: &dyn IndexStore,
    org: &str,
    project: &str,
) -> Result<Option<OpenVersion>, IndexerError> {
    let Some(item) = store.project(org, project)? else {
        return Ok(None);
    };
    let Some(version) = item.current_version else {
        return Ok(None);
    };
    let manifest_bytes = store.get_object(&keys::manifest(org, project, version))?;
    let manifest = open::read_manifest(org, project, version, &manifest_bytes)?;
    // Decoded part by part: the whole pack is never held beside its decoded form.
    let mut opening = open::PackOpening::new(&manifest);
    for key in manifest.pack_objects() {
        opening.push(&store.get_object(key)?)?;
    }
    let pack = opening.finish()?;
    Ok(Some(OpenVersion {
        version,
        manifest,
        pack,
    }))
}

/// The current version of `project` to build on, or `None` (with a warning in `warnings`) when
/// it cannot be reused: the next version is then built from scratch.
pub(super) fn read(
    store: &dyn IndexStore,
    org: &str,
    project: &str,
    warnings: &mut Vec<String>,
) -> Result<Option<OpenVersion>, IndexerError> {
    match open_current(store, org, project) {
        Ok(p) => Ok(p),
        Err(IndexerError::Pack(e @ PackError::Version { .. })) => {
            warnings.push(format!("previous index ignored: {e}"));
            Ok(None)
        }
        // A damaged or missing previous version must not block every later run: rebuild.
        Err(e @ (IndexerError::Pack(_) | IndexerError::Corrupt(_) | IndexerError::Io { .. })) => {
            warnings.push(format!("previous index unreadable, rebuilding: {e}"));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}
