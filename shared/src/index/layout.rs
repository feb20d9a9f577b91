//! Where a published index lives: the object keys (the same in a data directory, S3 or R2) and
//! the manifest that makes a version visible.

use serde::{Deserialize, Serialize};

/// The last object of a version: once it exists, every object it names exists too.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Index pack format version.
    pub format_version: u32,
    /// Organisation.
    pub org: String,
    /// Project id.
    pub project: String,
    /// Version number.
    pub version: u64,
    /// Key of the pack.
    pub pack_key: String,
    /// Size of the pack in bytes (checked on open).
    pub pack_bytes: u64,
    /// sha256 of the pack.
    pub pack_sha256: String,
    /// Keys of the segments the pack refers to.
    pub segment_keys: Vec<String>,
    /// Created, nanoseconds since the epoch.
    pub created_at_ns: i64,
}

/// The id of an organisation's project named `name`: derived, so the indexer and the edge (which
/// registers projects for the indexer to fetch) name the same project the same way without
/// asking each other.
pub fn project_id(org: &str, name: &str) -> String {
    let digest = crate::hash::Sha256Digest::of(format!("{org}\0{name}").as_bytes()).to_hex();
    format!("p{}", &digest[..16])
}

/// Object keys, shared with the S3 layout.
pub mod keys {
    /// Prefix of everything a project owns.
    pub fn project(org: &str, project: &str) -> String {
        format!("org/{org}/project/{project}")
    }
    /// A content-addressed segment of chunk texts.
    pub fn segment(org: &str, project: &str, sha_hex: &str) -> String {
        format!("{}/segments/{sha_hex}.seg", self::project(org, project))
    }
    /// A version's index pack.
    pub fn pack(org: &str, project: &str, version: u64) -> String {
        format!(
            "{}/version/{version:010}/index.pack",
            self::project(org, project)
        )
    }
    /// A version's manifest.
    pub fn manifest(org: &str, project: &str, version: u64) -> String {
        format!(
            "{}/version/{version:010}/manifest.json",
            self::project(org, project)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::project_id;

    #[test]
    fn project_ids_are_stable_and_differ_per_org() {
        // Published indexes are keyed by this id: changing its derivation orphans them.
        assert_eq!(project_id("acme", "core"), project_id("acme", "core"));
        assert_ne!(project_id("acme", "core"), project_id("other", "core"));
        assert_ne!(project_id("acme", "core"), project_id("acm", "ecore"));
        let id = project_id("acme", "core");
        assert_eq!(id.len(), 17);
        assert!(id.starts_with('p') && id[1..].bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
