//! The current-version pointer of each project, remembered per isolate (or process) for a short
//! time, so a warm request resolves its project without a metadata round trip (a DynamoDB query
//! or a Durable Object call on the Worker, a SQLite read natively).
//!
//! Versions are immutable, so a stale pointer only means a just-published version is seen up
//! to one TTL late; a caller that must see it at once sends `Cache-Control: no-cache`, and this
//! process forgets a project's pointer whenever it re-indexes or records that project itself.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::backend::ProjectInfo;

/// Pointers kept at most; past this the cache starts over (a bound, not an eviction policy:
/// one isolate serves far fewer projects).
const MAX_ENTRIES: usize = 4096;

/// Projects by (organisation, the id or name a caller asked for), with when each was read.
pub struct PointerCache {
    ttl_ms: u64,
    entries: Mutex<HashMap<(String, String), (ProjectInfo, u64)>>,
}

impl PointerCache {
    /// A cache whose pointers are trusted for `ttl_ms` (0 turns it off).
    pub fn new(ttl_ms: u64) -> Self {
        Self {
            ttl_ms,
            entries: Mutex::default(),
        }
    }

    /// `org`'s project `key` and its current version, as read less than the TTL ago.
    pub fn get(&self, org: &str, key: &str, now_ms: u64) -> Option<(ProjectInfo, u64)> {
        if self.ttl_ms == 0 {
            return None;
        }
        let entries = self.entries.lock().ok()?;
        let (project, read_ms) = entries.get(&(org.to_string(), key.to_string()))?;
        let version = project.current_version?;
        (now_ms.saturating_sub(*read_ms) < self.ttl_ms).then(|| (project.clone(), version))
    }

    /// Remembers what `key` resolved to for `org`.
    pub fn put(&self, org: &str, key: &str, project: &ProjectInfo, now_ms: u64) {
        if self.ttl_ms == 0 || project.current_version.is_none() {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
            entries.insert(
                (org.to_string(), key.to_string()),
                (project.clone(), now_ms),
            );
        }
    }

    /// Drops every pointer to `org`'s project `id`, whichever key it was asked by.
    pub fn forget(&self, org: &str, id: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|(o, _), (p, _)| !(o == org && p.id == id));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(version: Option<u64>) -> ProjectInfo {
        ProjectInfo {
            id: "p1".into(),
            name: "core".into(),
            org: "acme".into(),
            source: "/src".into(),
            current_version: version,
        }
    }

    #[test]
    fn pointers_expire_and_are_per_org() {
        let c = PointerCache::new(1000);
        c.put("acme", "core", &project(Some(3)), 10_000);
        assert_eq!(c.get("acme", "core", 10_500).unwrap().1, 3);
        assert!(c.get("acme", "core", 11_000).is_none(), "expired");
        assert!(c.get("other", "core", 10_500).is_none(), "another org");
        assert!(
            c.get("acme", "p1", 10_500).is_none(),
            "asked by another key"
        );
    }

    #[test]
    fn unpublished_projects_are_not_kept_and_forget_drops_every_key() {
        let c = PointerCache::new(1000);
        c.put("acme", "core", &project(None), 0);
        assert!(c.get("acme", "core", 1).is_none());
        c.put("acme", "core", &project(Some(1)), 0);
        c.put("acme", "p1", &project(Some(1)), 0);
        c.forget("acme", "p1");
        assert!(c.get("acme", "core", 1).is_none());
        assert!(c.get("acme", "p1", 1).is_none());
    }

    #[test]
    fn a_zero_ttl_keeps_nothing() {
        let c = PointerCache::new(0);
        c.put("acme", "core", &project(Some(1)), 0);
        assert!(c.get("acme", "core", 0).is_none());
    }
}
