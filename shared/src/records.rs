//! The metadata records that cross hosts, in one place.
//!
//! The indexer writes these records (SQLite natively, DynamoDB from the Lambda) and the edge
//! reads them, or writes them itself when it registers a project for the indexer's scheduled
//! pass; both sides serialize these types instead of spelling each other's JSON. Where each
//! record lives is [`crate::item_key`]'s business.

use serde::{Deserialize, Serialize};

use crate::source::SourceSpec;

/// A project: a repository known to an organisation. Key: [`crate::item_key::ItemKey::project`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProjectItem {
    /// Stable id.
    pub id: String,
    /// Owning organisation.
    pub org: String,
    /// Human name (the folder's name).
    pub name: String,
    /// Where the source lives (a local path).
    pub source: String,
    /// The published version readers see, if any.
    pub current_version: Option<u64>,
    /// Last change, nanoseconds since the epoch.
    pub updated_at_ns: i64,
}

/// A published version. Key: [`crate::item_key::ItemKey::version`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VersionItem {
    /// Project id.
    pub project: String,
    /// Version number, from 1.
    pub version: u64,
    /// Object key of the manifest.
    pub manifest_key: String,
    /// Files in the version.
    pub files: u64,
    /// Chunks in the version.
    pub chunks: u64,
    /// Created, nanoseconds since the epoch.
    pub created_at_ns: i64,
}

/// A registered project, as the schedule keeps it. Key: [`crate::item_key::ItemKey::schedule`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScheduleItem {
    /// The owning organisation.
    pub org: String,
    /// Project id.
    pub id: String,
    /// Project name.
    pub name: String,
    /// Where its files come from.
    pub source: SourceSpec,
    /// What a probe of the source answered when it was last indexed.
    #[serde(default)]
    pub last_probe: Option<String>,
    /// The revision last indexed (a commit id, a tarball's sha256).
    #[serde(default)]
    pub last_revision: Option<String>,
    /// The newest jobs applied to this item, newest last (so a retried job, even one retried
    /// after later jobs ran, does not count twice).
    #[serde(default)]
    pub recent_jobs: Vec<String>,
    /// Jobs that indexed this project successfully.
    #[serde(default)]
    pub runs: u64,
    /// When it was last indexed, milliseconds since the epoch.
    #[serde(default)]
    pub last_indexed_ms: u64,
}

impl ScheduleItem {
    /// A project just registered: never probed, never indexed.
    pub fn new(org: &str, id: &str, name: &str, source: SourceSpec) -> Self {
        Self {
            org: org.to_owned(),
            id: id.to_owned(),
            name: name.to_owned(),
            source,
            last_probe: None,
            last_revision: None,
            recent_jobs: Vec::new(),
            runs: 0,
            last_indexed_ms: 0,
        }
    }
}
