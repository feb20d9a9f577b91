//! A small change published as a delta over the previous version's base
//! ([`ctxgate_core::index::delta`]): the base's objects stay as they are and only the changed
//! files' own index is uploaded; a larger change, or a change over a version of other settings,
//! is published whole (which makes it the next deltas' base).

use ctxgate_core::index::IndexPack;
use ctxgate_core::index::delta::derive;
use ctxgate_core::summary::Summaries;

use super::previous::{self, OpenVersion};
use crate::IndexerError;
use crate::store::{IndexStore, Manifest};

/// The largest share of the version's chunks a delta may hold (`CTXGATE_DELTA_MAX_SHARE`,
/// 0 to publish every version whole): past it, a whole version costs readers less than
/// merging, and uploads little more.
pub const DEFAULT_MAX_SHARE: f64 = 0.05;

fn max_share() -> f64 {
    std::env::var("CTXGATE_DELTA_MAX_SHARE")
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
        .unwrap_or(DEFAULT_MAX_SHARE)
}

/// The delta that makes `whole` (with its summaries) of the base of `previous` (the previous
/// version itself, or the base it is a delta over: a delta is never over a delta), with the
/// base's manifest; `None` when the version should be published whole.
pub(super) fn over(
    store: &dyn IndexStore,
    org: &str,
    project_id: &str,
    previous: &OpenVersion,
    previous_summaries: Option<Summaries>,
    whole: &IndexPack,
    whole_summaries: &Summaries,
) -> Result<Option<(IndexPack, Manifest)>, IndexerError> {
    let share = max_share();
    if share <= 0.0 {
        return Ok(None);
    }
    let (base_manifest, own_base, base_summaries) = match previous.manifest.base.as_deref() {
        None => (previous.manifest.clone(), None, previous_summaries),
        Some(b) => {
            drop(previous_summaries);
            // An unreadable base or base summaries: publish whole rather than fail the run.
            let Ok(pack) = previous::read_pack(store, b, None) else {
                return Ok(None);
            };
            let summaries = previous::summaries(store, org, project_id, &pack).ok();
            (b.clone(), Some(pack), summaries)
        }
    };
    let Some(base_summaries) = base_summaries else {
        return Ok(None);
    };
    let base = own_base.as_ref().unwrap_or(&previous.pack);
    let delta = derive(
        base,
        base_manifest.version,
        &base_summaries,
        whole,
        whole_summaries,
    );
    Ok(delta
        .filter(|d| d.chunks.len() as f64 <= share * whole.chunks.len() as f64)
        .map(|d| (d, base_manifest)))
}
