//! What the two hosts send each other, one type per body, so neither spells the other's JSON:
//! the admin API's bodies that an indexer sends the edge (`ctxgate publish`, `ctxgate gc --to`),
//! and the event the edge sends the Lambda indexer when a project is registered.

use serde::{Deserialize, Serialize};

use crate::index::gc::{GcPolicy, GcReport};
use crate::source::SourceSpec;

/// What the indexer's Lambda function is asked to do (`{"action": "index", …}` or
/// `{"action": "reindex_due"}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum IndexerEvent {
    /// Index one project now.
    Index(IndexRequest),
    /// The scheduled pass over every registered project.
    ReindexDue {},
}

/// A request to index one project.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexRequest {
    /// The owning organisation.
    pub org: String,
    /// The project's name within it.
    pub project: String,
    /// Where its files come from.
    pub source: SourceSpec,
    /// Re-read and re-chunk everything (ignore the previous version).
    #[serde(default)]
    pub full: bool,
}

impl IndexRequest {
    /// Why the request must be refused, if it must: names become parts of keys, and a hosted
    /// indexer must not index its own disk (`/proc/self/environ` holds its credentials), so the
    /// source is fetched over the network unless local sources are allowed.
    pub fn refusal(&self, allow_local: bool) -> Option<String> {
        if !allow_local && !self.source.is_remote() {
            return Some(
                "this indexer only fetches network sources (git over https/ssh/git, tarballs over \
                 http/https); local folders and file:// URLs are refused"
                    .into(),
            );
        }
        [("org", &self.org), ("project", &self.project)]
            .into_iter()
            .find(|(_, v)| !plain_name(v))
            .map(|(what, v)| format!("{what} `{v}` must be 1-64 letters, digits, `-`, `_` or `.`"))
    }
}

/// 1-64 letters, digits, `-`, `_` or `.`, and not `.` or `..`: safe as a key or path part.
fn plain_name(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 64
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && v != "."
        && v != ".."
}

/// `PUT /v1/admin/orgs/{org}/projects/{name}`: a version an indexer published to the
/// deployment's object store, made known to the API.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishedProject {
    /// The project's id (its objects live under it).
    pub id: String,
    /// How the source is shown.
    #[serde(default)]
    pub source: String,
    /// The version readers now see.
    pub current_version: Option<u64>,
}

/// `POST /v1/admin/orgs/{org}/gc`: how much history to keep (each field optional; the
/// defaults are [`GcPolicy::default`]'s).
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GcRequest {
    /// Versions kept before the current one.
    #[serde(default)]
    pub keep_last: Option<usize>,
    /// Versions younger than this are kept.
    #[serde(default)]
    pub keep_younger_than_seconds: Option<u64>,
    /// How long a superseded version or a fresh upload is protected.
    #[serde(default)]
    pub grace_seconds: Option<u64>,
    /// Report what would be deleted, delete nothing.
    #[serde(default)]
    pub dry_run: bool,
}

impl GcRequest {
    /// The request that asks for `policy`.
    pub fn of(policy: &GcPolicy, dry_run: bool) -> Self {
        Self {
            keep_last: Some(policy.keep_last),
            keep_younger_than_seconds: Some(policy.keep_younger_than_ms / 1000),
            grace_seconds: Some(policy.grace_ms / 1000),
            dry_run,
        }
    }

    /// The policy asked for, defaults filled in.
    pub fn policy(&self) -> GcPolicy {
        let defaults = GcPolicy::default();
        GcPolicy {
            keep_last: self.keep_last.unwrap_or(defaults.keep_last),
            keep_younger_than_ms: self
                .keep_younger_than_seconds
                .map_or(defaults.keep_younger_than_ms, |s| s.saturating_mul(1000)),
            grace_ms: self
                .grace_seconds
                .map_or(defaults.grace_ms, |s| s.saturating_mul(1000)),
        }
    }
}

/// The answer to [`GcRequest`]: what was (or would be) deleted, project by project.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GcAnswer {
    /// The organisation collected.
    pub org: String,
    /// Whether anything was deleted (false for a dry run).
    pub applied: bool,
    /// Objects deleted, over every project.
    pub deleted_objects: usize,
    /// Bytes freed, over every project.
    pub bytes_freed: u64,
    /// Each project's report.
    pub projects: Vec<GcReport>,
}

impl GcAnswer {
    /// The answer for `org`'s `projects`.
    pub fn new(org: &str, applied: bool, projects: Vec<GcReport>) -> Self {
        Self {
            org: org.to_owned(),
            applied,
            deleted_objects: projects.iter().map(|r| r.deleted_objects).sum(),
            bytes_freed: projects.iter().map(|r| r.bytes_freed).sum(),
            projects,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_round_trips_through_its_request() {
        let policy = GcPolicy {
            keep_last: 5,
            keep_younger_than_ms: 7_000,
            grace_ms: 60_000,
        };
        let wire = serde_json::to_string(&GcRequest::of(&policy, true)).unwrap();
        let back: GcRequest = serde_json::from_str(&wire).unwrap();
        assert_eq!(back.policy(), policy);
        assert!(back.dry_run);
        let empty: GcRequest = serde_json::from_str("{}").unwrap();
        assert_eq!(empty.policy(), GcPolicy::default());
        assert!(serde_json::from_str::<GcRequest>(r#"{"keep":1}"#).is_err());
    }
}
