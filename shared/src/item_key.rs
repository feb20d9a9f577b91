//! The key layout of the metadata items, in one place.
//!
//! Every metadata store (the embedded SQLite database, DynamoDB written by the Lambda, DynamoDB
//! read by the Worker) holds items under a partition key `pk` and a sort key `sk`. The layout is a
//! contract between hosts that never share code at run time, so it is spelled here once and both
//! sides build their keys from it:
//!
//! | item                       | `pk`             | `sk`                           |
//! |----------------------------|------------------|--------------------------------|
//! | project                    | `ORG#{org}`      | `PROJECT#{id}`                 |
//! | published version          | `PROJECT#{id}`   | `VERSION#{version:010}`        |
//! | indexing lease (DynamoDB)  | `PROJECT#{id}`   | `LOCK`                         |
//! | organisation               | `ORG#{org}`      | `META`                         |
//! | quota ledger               | `ORG#{org}`      | `LEDGER`                       |
//! | audit record               | `ORG#{org}`      | `AUDIT#{at_ms:015}#{id}`       |
//! | API key (by hash)          | `KEY#{hash}`     | `META`                         |
//! | API key (listed by org)    | `ORG#{org}`      | `KEY#{prefix}#{hash[..12]}`    |
//! | indexing job               | `JOBS`           | `JOB#{id}`                     |
//! | re-index schedule          | `SCHEDULE`       | `PROJECT#{id}`                 |
//! | a served folder's source   | `SOURCES`        | `PROJECT#{id}`                 |
//! | a project's push webhook   | `PROJECT#{id}`   | `WEBHOOK`                      |
//! | a webhook delivery seen    | `PROJECT#{id}`   | `DELIVERY#{mark}`              |
//!
//! Numbers are zero-padded so that the sort key orders them: the newest version or audit
//! record is the last item of its range. In DynamoDB an item's attributes besides its key have
//! the names in [`attr`].

/// The partition and sort key of one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemKey {
    /// Partition key.
    pub pk: String,
    /// Sort key.
    pub sk: String,
}

/// The items of one partition whose sort key starts with a prefix: what a store lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemRange {
    /// Partition key.
    pub pk: String,
    /// Sort-key prefix.
    pub sk_prefix: &'static str,
}

/// The attribute names of a metadata item in DynamoDB: written by the indexer (the AWS SDK) and
/// read and written by the edge (signed HTTP), so spelled here once.
pub mod attr {
    /// The partition key.
    pub const PK: &str = "pk";
    /// The sort key.
    pub const SK: &str = "sk";
    /// The item's record, as JSON.
    pub const DATA: &str = "data";
    /// How many times the item was written: the condition of a write that must not lose
    /// another's.
    pub const REV: &str = "rev";
    /// A project's published version, flipped last when a version is published.
    pub const CURRENT_VERSION: &str = "current_version";
    /// When an indexing lease lapses (milliseconds since the epoch).
    pub const EXPIRES_MS: &str = "expires_ms";
    /// Who holds an indexing lease.
    pub const HOLDER: &str = "holder";
    /// The token of the optimistic update that wrote the item's `rev`: a retry whose answer
    /// was lost tells its own write from another's by it.
    pub const WRITER: &str = "writer";
}

/// The sort-key prefix of project items (under `ORG#…`, `SCHEDULE` and `SOURCES`).
pub const PROJECT_PREFIX: &str = "PROJECT#";
/// The partition-key prefix of an organisation's items.
pub const ORG_PREFIX: &str = "ORG#";
const VERSION_PREFIX: &str = "VERSION#";
const AUDIT_PREFIX: &str = "AUDIT#";
const JOB_PREFIX: &str = "JOB#";
const KEY_PREFIX: &str = "KEY#";
const META: &str = "META";
const LEDGER: &str = "LEDGER";
const LOCK: &str = "LOCK";
const WEBHOOK: &str = "WEBHOOK";
const DELIVERY_PREFIX: &str = "DELIVERY#";
const JOBS_PK: &str = "JOBS";
const SCHEDULE_PK: &str = "SCHEDULE";
const SOURCES_PK: &str = "SOURCES";

/// How many characters of a key's hash its org listing keeps: enough to tell keys apart in a
/// listing, too few to look the key up.
const LISTED_HASH_CHARS: usize = 12;

fn org_pk(org: &str) -> String {
    format!("{ORG_PREFIX}{org}")
}

fn project_sk(id: &str) -> String {
    format!("{PROJECT_PREFIX}{id}")
}

impl ItemKey {
    fn new(pk: String, sk: String) -> Self {
        Self { pk, sk }
    }

    /// A project of an organisation.
    pub fn project(org: &str, id: &str) -> Self {
        Self::new(org_pk(org), project_sk(id))
    }

    /// A published version of a project.
    pub fn version(project: &str, version: u64) -> Self {
        Self::new(
            project_sk(project),
            format!("{VERSION_PREFIX}{version:010}"),
        )
    }

    /// A project's indexing lease (DynamoDB; the data directory locks a file instead).
    pub fn lock(project: &str) -> Self {
        Self::new(project_sk(project), LOCK.to_owned())
    }

    /// A project's push webhook (its secret).
    pub fn webhook(project: &str) -> Self {
        Self::new(project_sk(project), WEBHOOK.to_owned())
    }

    /// A webhook delivery of a project seen before, by one of its marks
    /// ([`crate::webhook::delivery::marks`]).
    pub fn delivery(project: &str, mark: &str) -> Self {
        Self::new(project_sk(project), format!("{DELIVERY_PREFIX}{mark}"))
    }

    /// An organisation's record.
    pub fn org(org: &str) -> Self {
        Self::new(org_pk(org), META.to_owned())
    }

    /// An organisation's quota ledger.
    pub fn ledger(org: &str) -> Self {
        Self::new(org_pk(org), LEDGER.to_owned())
    }

    /// One audit record; `at_ms` first so the range reads in time order.
    pub fn audit(org: &str, at_ms: u64, id: &str) -> Self {
        Self::new(org_pk(org), format!("{AUDIT_PREFIX}{at_ms:015}#{id}"))
    }

    /// An API key, found by its hash.
    pub fn api_key(key_hash: &str) -> Self {
        Self::new(format!("{KEY_PREFIX}{key_hash}"), META.to_owned())
    }

    /// An API key as listed under its organisation (its public prefix and a hash fragment).
    pub fn listed_key(org: &str, prefix: &str, key_hash: &str) -> Self {
        let fragment: String = key_hash.chars().take(LISTED_HASH_CHARS).collect();
        Self::new(org_pk(org), format!("{KEY_PREFIX}{prefix}#{fragment}"))
    }

    /// An indexing job.
    pub fn job(id: &str) -> Self {
        Self::new(JOBS_PK.to_owned(), format!("{JOB_PREFIX}{id}"))
    }

    /// A project's re-index schedule.
    pub fn schedule(project: &str) -> Self {
        Self::new(SCHEDULE_PK.to_owned(), project_sk(project))
    }

    /// Where a project served from a local folder takes its files.
    pub fn source(project: &str) -> Self {
        Self::new(SOURCES_PK.to_owned(), project_sk(project))
    }
}

impl ItemRange {
    /// An organisation's projects.
    pub fn projects_of(org: &str) -> Self {
        Self {
            pk: org_pk(org),
            sk_prefix: PROJECT_PREFIX,
        }
    }

    /// A project's published versions, oldest first.
    pub fn versions_of(project: &str) -> Self {
        Self {
            pk: project_sk(project),
            sk_prefix: VERSION_PREFIX,
        }
    }

    /// An organisation's audit trail, oldest first.
    pub fn audit_of(org: &str) -> Self {
        Self {
            pk: org_pk(org),
            sk_prefix: AUDIT_PREFIX,
        }
    }

    /// Every indexing job.
    pub fn jobs() -> Self {
        Self {
            pk: JOBS_PK.to_owned(),
            sk_prefix: JOB_PREFIX,
        }
    }

    /// Every re-index schedule.
    pub fn schedules() -> Self {
        Self {
            pk: SCHEDULE_PK.to_owned(),
            sk_prefix: PROJECT_PREFIX,
        }
    }

    /// Every served folder's source.
    pub fn sources() -> Self {
        Self {
            pk: SOURCES_PK.to_owned(),
            sk_prefix: PROJECT_PREFIX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_fall_in_their_ranges() {
        let cases = [
            (
                ItemKey::project("acme", "p1"),
                ItemRange::projects_of("acme"),
            ),
            (ItemKey::version("p1", 7), ItemRange::versions_of("p1")),
            (ItemKey::audit("acme", 5, "r"), ItemRange::audit_of("acme")),
            (ItemKey::job("j"), ItemRange::jobs()),
            (ItemKey::schedule("p1"), ItemRange::schedules()),
            (ItemKey::source("p1"), ItemRange::sources()),
        ];
        for (key, range) in cases {
            assert_eq!(key.pk, range.pk);
            assert!(key.sk.starts_with(range.sk_prefix), "{key:?} {range:?}");
        }
    }

    #[test]
    fn numbers_sort_as_text() {
        assert!(ItemKey::version("p", 9).sk < ItemKey::version("p", 10).sk);
        assert!(ItemKey::audit("o", 999, "z").sk < ItemKey::audit("o", 1000, "a").sk);
        assert_eq!(ItemKey::version("p", 3).sk, "VERSION#0000000003");
    }

    #[test]
    fn the_layout_is_stable() {
        // Stores written by earlier releases hold these exact strings.
        assert_eq!(ItemKey::project("acme", "p1").pk, "ORG#acme");
        assert_eq!(ItemKey::org("acme").sk, "META");
        assert_eq!(ItemKey::ledger("acme").sk, "LEDGER");
        assert_eq!(ItemKey::api_key("abc").pk, "KEY#abc");
        assert_eq!(
            ItemKey::listed_key("o", "cg_1", "0123456789abcdef").sk,
            "KEY#cg_1#0123456789ab"
        );
        assert_eq!(ItemKey::job("j").pk, "JOBS");
        assert_eq!(ItemKey::source("p").pk, "SOURCES");
        assert_eq!(ItemKey::schedule("p").sk, "PROJECT#p");
        assert_eq!(ItemKey::webhook("p").pk, "PROJECT#p");
        assert_eq!(ItemKey::webhook("p").sk, "WEBHOOK");
        assert_eq!(ItemKey::delivery("p", "id:x").sk, "DELIVERY#id:x");
        // Neither is in the range of a project's versions.
        assert!(
            !ItemKey::webhook("p")
                .sk
                .starts_with(ItemRange::versions_of("p").sk_prefix)
        );
        assert_eq!(ItemKey::audit("o", 12, "r").sk, "AUDIT#000000000000012#r");
    }
}
