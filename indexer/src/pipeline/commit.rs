//! Publishing a built pack: its objects first (pack, then manifest, both never overwritten),
//! then the project's current version flips in one conditional write, so a reader never sees a
//! version whose objects are not all there.

use ctxgate_core::hash::Sha256Digest;
use ctxgate_core::index::{FORMAT_VERSION, IndexPack};

use super::segments::store_segments;
use crate::IndexerError;
use crate::store::{IndexStore, Manifest, VersionItem, keys};
use ctxgate_core::index::layout::PACK_PART_MAX;

/// Cut points of a pack in parts are content-defined, so the parts before and after an edit
/// keep their bytes and names and a re-index does not upload them again: about 1 MiB each,
/// never more than a segment.
const PART_MIN: u32 = 256 << 10;
const PART_AVG: u32 = 1 << 20;
const PART_MAX: u32 = PACK_PART_MAX as u32;

/// The pack's parts when it is larger than one segment (content-defined cuts, see
/// [`PART_AVG`]), or `None` when it is stored whole.
fn cut_parts(bytes: &[u8]) -> Option<Vec<&[u8]>> {
    if bytes.len() as u64 <= PACK_PART_MAX {
        return None;
    }
    Some(
        fastcdc::v2020::FastCDC::new(bytes, PART_MIN, PART_AVG, PART_MAX)
            .map(|c| &bytes[c.offset..c.offset + c.length])
            .collect(),
    )
}

/// What a publish builds on.
pub(super) struct Base {
    /// The previous version's number, if one was opened.
    pub previous: Option<u64>,
    /// The current version the project's record must still show at the flip.
    pub current: Option<u64>,
    /// When the run started, nanoseconds since the epoch.
    pub indexed_at_ns: i64,
    /// The repository and commit the files came from, when known.
    pub origin: Option<ctxgate_core::source::Origin>,
    /// The manifest of the version `pack` is a delta over, when it is one.
    pub layered_on: Option<Manifest>,
}

/// Writes `pack` as the next version of `project_id` and makes it current; its number.
pub(super) fn publish(
    store: &dyn IndexStore,
    org: &str,
    project_id: &str,
    pack: &IndexPack,
    vectors: Option<&ctxgate_core::dense::VectorTable>,
    base: &Base,
) -> Result<u64, IndexerError> {
    let mut version = base
        .previous
        .unwrap_or(0)
        .max(store.latest_version(project_id)?)
        + 1;
    let bytes = pack.encode()?;
    let mut segment_keys: Vec<String> = pack
        .segments
        .iter()
        .map(|s| keys::segment(org, project_id, s))
        .collect();
    // A large pack goes to content-addressed parts first; the object at the pack's key then
    // holds only its header, which still claims the version number.
    let mut pack_parts = Vec::new();
    let claim: &[u8] = match cut_parts(&bytes) {
        Some(parts) => {
            let mut names = Vec::new();
            store_segments(store, org, project_id, &parts, &mut names)?;
            pack_parts = names
                .iter()
                .map(|s| keys::segment(org, project_id, s))
                .collect();
            for key in &pack_parts {
                if !segment_keys.contains(key) {
                    segment_keys.push(key.clone());
                }
            }
            &bytes[..12]
        }
        None => &bytes,
    };
    // The vectors are content-addressed like segments: an unchanged table is stored once.
    let vectors = match vectors {
        Some(table) => {
            let (bytes, named) = super::vectors::stored(org, project_id, table);
            store.put_new_object(&named.key, &bytes)?;
            Some(named)
        }
        None => None,
    };
    // Version objects are never overwritten: a number whose pack exists (left by a killed run,
    // or written by a racing indexer) is skipped, so version numbers may have gaps.
    let mut skipped_numbers = 0;
    while !store.put_new_object(&keys::pack(org, project_id, version), claim)? {
        skipped_numbers += 1;
        if skipped_numbers > 100 {
            return Err(IndexerError::Corrupt(format!(
                "100 version numbers after {version} already have packs"
            )));
        }
        version += 1;
    }
    crate::crash::point("after_pack");
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        org: org.into(),
        project: project_id.to_owned(),
        version,
        pack_key: keys::pack(org, project_id, version),
        pack_bytes: bytes.len() as u64,
        pack_sha256: Sha256Digest::of(&bytes).to_hex(),
        segment_keys,
        pack_parts,
        created_at_ns: base.indexed_at_ns,
        origin: base.origin.clone(),
        vectors,
        base: base.layered_on.clone().map(Box::new),
    };
    let manifest_json =
        serde_json::to_vec_pretty(&manifest).map_err(|e| IndexerError::Corrupt(e.to_string()))?;
    if !store.put_new_object(&keys::manifest(org, project_id, version), &manifest_json)? {
        return Err(IndexerError::Busy {
            project: project_id.to_owned(),
            holder: format!("another indexer writing version {version}"),
        });
    }
    let item = VersionItem {
        project: project_id.to_owned(),
        version,
        manifest_key: keys::manifest(org, project_id, version),
        files: pack
            .delta
            .as_ref()
            .map_or(pack.files.len() as u64, |d| u64::from(d.files)),
        chunks: pack
            .delta
            .as_ref()
            .map_or(pack.chunks.len() as u64, |d| u64::from(d.chunks)),
        created_at_ns: base.indexed_at_ns,
    };
    crate::crash::point("before_publish");
    if !store.publish_version(org, &item, base.current)? {
        return Err(IndexerError::Corrupt(
            "another indexer published while this one held the lock".into(),
        ));
    }
    Ok(version)
}
