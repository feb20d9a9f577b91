//! Registering a project for the batch indexer, on the AWS deployment: the Worker cannot fetch
//! or parse a repository (no git, no tree-sitter in wasm), so it writes what the indexer's
//! scheduled pass reads — the org's project item and the schedule item — and the pass fetches
//! and indexes it.
//!
//! The items are the core's records ([`ProjectItem`], [`ScheduleItem`]), stored as the indexer
//! stores them: `pk`, `sk`, `data` (JSON) and `rev` (the counter the indexer's optimistic writes
//! compare). The AWS end-to-end test has the real Lambda binary index what the Worker
//! registered, which is what keeps the two in step.

use ctxgate_core::index::layout::project_id;
use ctxgate_core::item_key::ItemKey;
use ctxgate_core::item_key::attr::{CURRENT_VERSION, DATA, PK, REV, SK};
use ctxgate_core::records::{ProjectItem, ScheduleItem};
use serde_json::{Value, json};

use crate::backend::{BackendError, ProjectInfo, SourceSpec};

/// What the registration writes, and what the caller is told.
#[derive(Debug)]
pub struct Registration {
    /// The `TransactWriteItems` body.
    pub transaction: Value,
    /// The project as the API shows it (no version yet).
    pub project: ProjectInfo,
}

/// Whether `url` names a host on the network rather than this machine's disk: the indexer
/// refuses the rest anyway, but the caller should hear it now, not never. The indexer applies
/// its network policy (public https hosts by default) when it fetches.
fn refused(what: &str) -> BackendError {
    BackendError::Refused(format!(
        "{what}: this deployment indexes network sources only (git over https, ssh or git://; \
         tarballs over http or https)"
    ))
}

/// The transaction that registers `name` for `org` from `source`. A project that already has
/// a published version is not touched (the condition fails: `conflict`); a registration that
/// was never indexed is replaced, so a wrong URL can be corrected.
pub fn registration(
    table: &str,
    org: &str,
    name: &str,
    source: &SourceSpec,
    now_ms: u64,
) -> Result<Registration, BackendError> {
    if !source.is_remote() {
        return Err(refused(&match source {
            SourceSpec::Local { .. } => "a folder on the server".to_owned(),
            SourceSpec::Git { url, .. } => format!("git URL `{url}`"),
            SourceSpec::Tarball { url } => format!("tarball URL `{url}`"),
        }));
    }
    let shown = source.describe();
    let id = project_id(org, name);
    let project = ProjectItem {
        id: id.clone(),
        org: org.to_owned(),
        name: name.to_owned(),
        source: shown.clone(),
        current_version: None,
        updated_at_ns: i64::try_from(now_ms)
            .unwrap_or(i64::MAX)
            .saturating_mul(1_000_000),
    };
    let schedule = ScheduleItem::new(org, &id, name, source.clone());
    let (project, schedule) = (json!(project), json!(schedule));
    let update = |key: ItemKey, data: &Value, condition: Option<&str>| {
        let mut u = json!({
            "TableName": table,
            "Key": {PK: {"S": key.pk}, SK: {"S": key.sk}},
            "UpdateExpression": "SET #d = :d, #r = if_not_exists(#r, :zero) + :one",
            "ExpressionAttributeNames": {"#d": DATA, "#r": REV},
            "ExpressionAttributeValues": {
                ":d": {"S": data.to_string()}, ":zero": {"N": "0"}, ":one": {"N": "1"}
            },
        });
        if let Some(c) = condition {
            u["ConditionExpression"] = json!(c);
            u["ExpressionAttributeNames"]["#cv"] = json!(CURRENT_VERSION);
        }
        json!({ "Update": u })
    };
    let transaction = json!({
        "TransactItems": [
            update(ItemKey::project(org, &id), &project, Some("attribute_not_exists(#cv)")),
            update(ItemKey::schedule(&id), &schedule, None),
        ]
    });
    Ok(Registration {
        transaction,
        project: ProjectInfo {
            id,
            name: name.into(),
            org: org.into(),
            source: shown,
            current_version: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(url: &str) -> SourceSpec {
        SourceSpec::Git {
            url: url.into(),
            rev: None,
            credential: None,
        }
    }

    #[test]
    fn only_network_sources_are_registered() {
        for ok in [
            git("https://github.com/a/b.git"),
            git("ssh://git@host/a/b.git"),
            git("git@github.com:a/b.git"),
            git("git://host/a"),
            SourceSpec::Tarball {
                url: "https://host/a.tar.gz".into(),
            },
        ] {
            assert!(registration("t", "acme", "x", &ok, 1).is_ok(), "{ok:?}");
        }
        for bad in [
            SourceSpec::Local {
                path: "/etc".into(),
            },
            git("file:///etc"),
            git("/srv/repo"),
            git("C:/repo"),
            git("https:///nohost"),
            SourceSpec::Tarball {
                url: "file:///etc/passwd".into(),
            },
            SourceSpec::Tarball {
                url: "ftp://host/a.tar".into(),
            },
        ] {
            assert!(
                matches!(
                    registration("t", "acme", "x", &bad, 1),
                    Err(BackendError::Refused(_))
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_transaction_writes_both_items_and_guards_published_projects() {
        let source = SourceSpec::Git {
            url: "https://host/r.git".into(),
            rev: Some("v1".into()),
            credential: None,
        };
        let r = registration("tbl", "acme", "core", &source, 5).unwrap();
        let id = project_id("acme", "core");
        assert_eq!(r.project.id, id);
        assert_eq!(r.project.source, "https://host/r.git#v1");
        assert_eq!(r.project.current_version, None);
        let items = r.transaction["TransactItems"].as_array().unwrap();
        let project = &items[0]["Update"];
        assert_eq!(project["Key"]["pk"]["S"], "ORG#acme");
        assert_eq!(project["Key"]["sk"]["S"], format!("PROJECT#{id}"));
        assert_eq!(project["ConditionExpression"], "attribute_not_exists(#cv)");
        let data: Value = serde_json::from_str(
            project["ExpressionAttributeValues"][":d"]["S"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(data["updated_at_ns"], 5_000_000);
        let schedule = &items[1]["Update"];
        assert_eq!(schedule["Key"]["pk"]["S"], "SCHEDULE");
        assert!(schedule.get("ConditionExpression").is_none());
        let data: Value = serde_json::from_str(
            schedule["ExpressionAttributeValues"][":d"]["S"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        // The indexer's source spec: the same tagged shape the API takes.
        assert_eq!(
            data["source"],
            json!({"kind": "git", "url": "https://host/r.git", "rev": "v1"})
        );
        assert_eq!(data["runs"], 0);
    }
}
