//! The version an index run starts from: opened to reuse its files, chunks and texts, or set
//! aside (with a warning) when it is of another format or damaged, so a bad version never
//! blocks every later run.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use ctxgate_core::index::open;
use ctxgate_core::index::{IndexPack, PackError};
use ctxgate_core::summary::Summaries;

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
    // A delta's own pack first: its base is decoded with room for the merged tables.
    let own = read_pack(store, &manifest, None)?;
    let base = match manifest.base.as_deref() {
        Some(b) => Some(read_pack(store, b, Some(&own))?),
        None => None,
    };
    let pack = open::layered(&manifest, base, own)?;
    Ok(Some(OpenVersion {
        version,
        manifest,
        pack,
    }))
}

/// The one pack `manifest` names (a delta's own, without its base; a base with room for
/// `delta`'s merged tables), decoded part by part: the whole pack is never held beside its
/// decoded form.
pub fn read_pack(
    store: &dyn IndexStore,
    manifest: &Manifest,
    delta: Option<&IndexPack>,
) -> Result<IndexPack, IndexerError> {
    let mut opening = match delta {
        Some(d) => open::PackOpening::for_base_of(manifest, d),
        None => open::PackOpening::new(manifest),
    };
    for key in manifest.pack_objects() {
        opening.push(&store.get_object(key)?)?;
    }
    Ok(opening.finish()?)
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

/// The summaries of `pack` with every text, reading those it keeps in segments (each segment
/// once): a new version reuses unchanged files' summaries and rebuilds directories from their
/// lines.
pub fn summaries(
    store: &dyn IndexStore,
    org: &str,
    project: &str,
    pack: &IndexPack,
) -> Result<Summaries, IndexerError> {
    let mut read: HashMap<u32, Vec<u8>> = HashMap::new();
    pack.summaries.load(
        |r| {
            let bytes = match read.entry(r.segment) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(slot) => {
                    let sha = pack.segments.get(r.segment as usize).ok_or_else(|| {
                        IndexerError::Corrupt(format!(
                            "summary segment #{} is not listed",
                            r.segment
                        ))
                    })?;
                    slot.insert(store.get_object(&keys::segment(org, project, sha))?)
                }
            };
            bytes
                .get(r.start as usize..(r.start + r.len) as usize)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| {
                    IndexerError::Corrupt(format!(
                        "summary segment #{} is shorter than the pack says",
                        r.segment
                    ))
                })
        },
        IndexerError::Corrupt,
    )
}
