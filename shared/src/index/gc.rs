//! Which old versions of a project and which of its objects garbage collection may delete: a
//! pure plan over what the store lists, applied by each store (the indexer's).
//!
//! Kept, whatever the policy: the current version, any version newer than it, the newest
//! `keep_last` versions before it, versions created less than `keep_younger_than_ms` ago, and
//! versions superseded less than `grace_ms` ago (an isolate or a server may still be answering
//! from one it opened). Every object a kept version's manifest names is kept. Any other object
//! under the project — a deleted version's pack and manifest, a segment no kept version names,
//! what a crashed publish left — is deleted only once it is older than the grace period, so an
//! upload of a publish still in flight is never taken from under it.

use std::collections::HashSet;

/// How much history to keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcPolicy {
    /// Versions kept before the current one, newest first.
    pub keep_last: usize,
    /// Versions created less than this long ago are kept (milliseconds).
    pub keep_younger_than_ms: u64,
    /// Readers may hold a superseded version, and publishers may be uploading objects, for
    /// this long (milliseconds).
    pub grace_ms: u64,
}

impl Default for GcPolicy {
    /// The current version plus 2, nothing kept for age alone, 15 minutes of grace.
    fn default() -> Self {
        Self {
            keep_last: 2,
            keep_younger_than_ms: 0,
            grace_ms: 15 * 60 * 1000,
        }
    }
}

impl GcPolicy {
    /// The policy of a scheduled collection from a host's variables (the Lambda's environment,
    /// the Worker's vars): the current version plus `CTXGATE_GC_KEEP` (default 2), and anything
    /// superseded or written less than `CTXGATE_GC_GRACE_SECONDS` ago (default 900); `None` when
    /// `CTXGATE_GC=off`. A value that is not a whole number is an error naming the variable.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, String> {
        if var("CTXGATE_GC").is_some_and(|v| v.trim() == "off") {
            return Ok(None);
        }
        let number = |name: &str, default: u64| -> Result<u64, String> {
            match var(name) {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse()
                    .map_err(|_| format!("{name} must be a whole number, not `{v}`")),
            }
        };
        let defaults = Self::default();
        Ok(Some(Self {
            keep_last: number("CTXGATE_GC_KEEP", defaults.keep_last as u64)? as usize,
            keep_younger_than_ms: 0,
            grace_ms: number("CTXGATE_GC_GRACE_SECONDS", defaults.grace_ms / 1000)?
                .saturating_mul(1000),
        }))
    }
}

/// A published version as the store lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionFacts {
    /// Its number.
    pub version: u64,
    /// When it was published, milliseconds since the epoch.
    pub created_ms: u64,
    /// Every object it needs: manifest, pack, segments (empty when its manifest is gone).
    pub objects: Vec<String>,
}

/// An object under the project's prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredObject {
    /// Its key.
    pub key: String,
    /// Its size.
    pub bytes: u64,
    /// When it was last written, milliseconds since the epoch.
    pub modified_ms: u64,
}

/// What to delete, in a safe order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcPlan {
    /// Version records to delete first, so no reader resolves them any more.
    pub versions: Vec<u64>,
    /// Then these objects: manifests, then packs, then the rest (a crash part-way leaves no
    /// manifest naming a missing object).
    pub objects: Vec<String>,
    /// Their total size.
    pub bytes: u64,
    /// Versions kept.
    pub kept_versions: Vec<u64>,
}

/// What garbage collection did (or, in a dry run, would do) to one project: what `ctxgate gc`
/// prints for every store and what a Worker's `POST /v1/admin/orgs/{org}/gc` answers.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GcReport {
    /// The organisation.
    pub org: String,
    /// The project id.
    pub project: String,
    /// The project's name.
    pub name: String,
    /// Its current version.
    pub current_version: Option<u64>,
    /// Versions kept.
    pub kept_versions: Vec<u64>,
    /// Versions deleted.
    pub deleted_versions: Vec<u64>,
    /// Objects deleted.
    pub deleted_objects: usize,
    /// Bytes those objects held.
    pub bytes_freed: u64,
    /// Whether anything was actually deleted (false in a dry run).
    pub applied: bool,
}

/// The plan for one project.
pub fn plan(
    current: Option<u64>,
    versions: &[VersionFacts],
    objects: &[StoredObject],
    now_ms: u64,
    policy: &GcPolicy,
) -> GcPlan {
    let mut sorted: Vec<&VersionFacts> = versions.iter().collect();
    sorted.sort_by_key(|v| v.version);
    let mut kept = HashSet::new();
    let mut older_kept = 0;
    for (i, v) in sorted.iter().enumerate().rev() {
        let superseded_ms = sorted.get(i + 1).map(|n| n.created_ms);
        let keep = match current {
            None => true,
            Some(c) if v.version >= c => true,
            Some(_) => {
                let recent = now_ms.saturating_sub(v.created_ms) < policy.keep_younger_than_ms;
                let held = superseded_ms.is_none_or(|s| now_ms.saturating_sub(s) < policy.grace_ms);
                let counted = older_kept < policy.keep_last;
                if counted {
                    older_kept += 1;
                }
                counted || recent || held
            }
        };
        if keep {
            kept.insert(v.version);
        }
    }
    let needed: HashSet<&str> = sorted
        .iter()
        .filter(|v| kept.contains(&v.version))
        .flat_map(|v| v.objects.iter().map(String::as_str))
        .collect();
    let mut doomed: Vec<&StoredObject> = objects
        .iter()
        .filter(|o| !needed.contains(o.key.as_str()))
        .filter(|o| now_ms.saturating_sub(o.modified_ms) >= policy.grace_ms)
        .collect();
    let rank = |k: &str| {
        if k.ends_with("manifest.json") {
            0
        } else if k.ends_with(".pack") {
            1
        } else {
            2
        }
    };
    doomed.sort_by(|a, b| rank(&a.key).cmp(&rank(&b.key)).then(a.key.cmp(&b.key)));
    let mut kept_versions: Vec<u64> = kept.into_iter().collect();
    kept_versions.sort_unstable();
    GcPlan {
        versions: sorted
            .iter()
            .map(|v| v.version)
            .filter(|v| !kept_versions.contains(v))
            .collect(),
        bytes: doomed.iter().map(|o| o.bytes).sum(),
        objects: doomed.into_iter().map(|o| o.key.clone()).collect(),
        kept_versions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MIN: u64 = 60_000;

    fn version(v: u64, created_ms: u64, segments: &[&str]) -> VersionFacts {
        let mut objects = vec![format!("v{v}/manifest.json"), format!("v{v}/index.pack")];
        objects.extend(segments.iter().map(|s| format!("seg/{s}")));
        VersionFacts {
            version: v,
            created_ms,
            objects,
        }
    }

    fn stored(versions: &[VersionFacts], modified_ms: u64) -> Vec<StoredObject> {
        let mut keys: Vec<String> = versions.iter().flat_map(|v| v.objects.clone()).collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .map(|key| StoredObject {
                key,
                bytes: 10,
                modified_ms,
            })
            .collect()
    }

    #[test]
    fn old_versions_go_with_the_segments_only_they_named() {
        let vs = vec![
            version(1, 0, &["a", "b"]),
            version(2, 10 * MIN, &["b", "c"]),
            version(3, 20 * MIN, &["c", "d"]),
            version(4, 30 * MIN, &["d", "e"]),
        ];
        let now = 60 * MIN;
        let policy = GcPolicy {
            keep_last: 1,
            keep_younger_than_ms: 0,
            grace_ms: 15 * MIN,
        };
        let p = plan(Some(4), &vs, &stored(&vs, 0), now, &policy);
        assert_eq!(p.kept_versions, vec![3, 4]);
        assert_eq!(p.versions, vec![1, 2]);
        assert_eq!(
            p.objects,
            vec![
                "v1/manifest.json",
                "v2/manifest.json",
                "v1/index.pack",
                "v2/index.pack",
                "seg/a",
                "seg/b"
            ]
        );
        assert_eq!(p.bytes, 60);
    }

    #[test]
    fn readers_and_publishers_get_their_grace() {
        let vs = vec![version(1, 0, &["a"]), version(2, 50 * MIN, &["b"])];
        let policy = GcPolicy {
            keep_last: 0,
            keep_younger_than_ms: 0,
            grace_ms: 15 * MIN,
        };
        // Version 1 was superseded 10 minutes ago: a reader may still hold it.
        let p = plan(Some(2), &vs, &stored(&vs, 0), 60 * MIN, &policy);
        assert_eq!(p.kept_versions, vec![1, 2]);
        assert!(p.objects.is_empty());
        // A fresh object no version names yet (an upload in flight) stays; an old one goes.
        let mut objects = stored(&vs, 0);
        objects.push(StoredObject {
            key: "seg/fresh".into(),
            bytes: 5,
            modified_ms: 58 * MIN,
        });
        objects.push(StoredObject {
            key: "seg/orphan".into(),
            bytes: 7,
            modified_ms: 0,
        });
        let p = plan(Some(2), &vs, &objects, 60 * MIN, &policy);
        assert_eq!(p.objects, vec!["seg/orphan"]);
        assert_eq!(p.bytes, 7);
    }

    #[test]
    fn age_keeps_young_versions_and_nothing_goes_without_a_current_version() {
        let vs = vec![
            version(1, 0, &["a"]),
            version(2, 55 * MIN, &["b"]),
            version(3, 56 * MIN, &["c"]),
        ];
        let policy = GcPolicy {
            keep_last: 0,
            keep_younger_than_ms: 10 * MIN,
            grace_ms: 0,
        };
        let p = plan(Some(3), &vs, &stored(&vs, 0), 60 * MIN, &policy);
        assert_eq!(p.kept_versions, vec![2, 3]);
        let p = plan(None, &vs, &stored(&vs, 0), 60 * MIN, &policy);
        assert!(p.versions.is_empty() && p.objects.is_empty());
    }

    proptest! {
        /// No kept version ever loses an object it names, and the current one is always kept.
        #[test]
        fn kept_versions_keep_every_object(
            n in 1usize..8,
            segs in proptest::collection::vec(proptest::collection::vec(0u8..6, 0..4), 8),
            keep_last in 0usize..3,
            grace in 0u64..40,
            current_back in 0usize..3,
        ) {
            let vs: Vec<VersionFacts> = (0..n)
                .map(|i| {
                    let names: Vec<String> = segs[i].iter().map(|s| format!("s{s}")).collect();
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    version(i as u64 + 1, i as u64 * 10 * MIN, &refs)
                })
                .collect();
            let current = (n as u64).saturating_sub(current_back as u64).max(1);
            let policy = GcPolicy { keep_last, keep_younger_than_ms: 0, grace_ms: grace * MIN };
            let p = plan(Some(current), &vs, &stored(&vs, 0), 100 * MIN, &policy);
            prop_assert!(p.kept_versions.contains(&current));
            for v in vs.iter().filter(|v| p.kept_versions.contains(&v.version)) {
                for o in &v.objects {
                    prop_assert!(!p.objects.contains(o), "{o} of kept version {}", v.version);
                }
            }
        }
    }
}
