//! The API as a table: every operation with the types it takes and answers, and the error codes
//! its handler adds. [`super::document`] turns it into the document.
//!
//! Codes common to a kind of operation (a caller's key, the admin secret, a JSON body, a
//! metered call, an index read) are added by [`Operation::errors`] (`errors.rs`), and every
//! code is listed under the statuses the registry gives it ([`ctxgate_core::error_code`]). One
//! file per part of the API, in the order the document lists them: `public.rs`, `assemble.rs`,
//! `projects.rs`, `webhooks.rs`, `account.rs`, `admin.rs`. What an operation is:
//! `operation.rs`; long descriptions: `prose.rs`. The router's table (`crate::router::table`)
//! serves exactly these paths and methods, and the console's pages
//! (`router_serves_the_documented_operations`).

use schemars::{JsonSchema, Schema, SchemaGenerator};

use super::operation::{Access, Answer, Body, Operation, SchemaOf};

mod account;
mod admin;
mod assemble;
mod projects;
mod public;
mod webhooks;

/// Every operation of the API, in the order the document lists them.
pub(super) fn operations() -> Vec<Operation> {
    [
        public::operations(),
        assemble::operations(),
        projects::operations(),
        projects::webhook_operations(),
        webhooks::operations(),
        account::operations(),
        admin::org_operations(),
        admin::object_operations(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// An operation with nothing but its method, path, id, summary and access: each entry adds
/// what it has (`..op(...)`).
fn op(
    method: &'static str,
    path: &'static str,
    id: &'static str,
    summary: &'static str,
    access: Access,
) -> Operation {
    Operation {
        method,
        path,
        id,
        summary,
        description: None,
        access,
        body: Body::None,
        metered: false,
        reads_index: false,
        answers: Vec::new(),
        own_errors: Vec::new(),
        headers: Vec::new(),
    }
}

/// The schema of `T` ([`SchemaOf`]).
fn of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// One 200 answer of `body`.
fn ok(body: SchemaOf) -> Vec<Answer> {
    vec![Answer {
        status: 200,
        description: "OK",
        body: Some(body),
    }]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// The routes the router serves, as (method, path), from the table it is built from.
    fn routed() -> BTreeSet<(String, String)> {
        crate::router::table()
            .iter()
            .flat_map(|r| {
                let path = r.path.replace("{*", "{");
                r.handlers
                    .iter()
                    .map(move |(m, _)| (m.as_str().to_ascii_lowercase(), path.clone()))
            })
            .collect()
    }

    #[test]
    fn router_serves_the_documented_operations() {
        let documented: BTreeSet<(String, String)> = operations()
            .iter()
            .map(|o| (o.method.to_string(), o.path.to_string()))
            .collect();
        // The console's pages are HTML for people, not the API.
        let pages: BTreeSet<(String, String)> = [
            "/",
            "/console",
            "/console/console.js",
            "/console/console.css",
        ]
        .into_iter()
        .map(|p| ("get".to_string(), p.to_string()))
        .collect();
        let routed = routed();
        let undocumented: Vec<_> = routed
            .difference(&documented)
            .filter(|r| !pages.contains(r))
            .collect();
        assert!(
            undocumented.is_empty(),
            "routed but not in the document: {undocumented:?}"
        );
        let unrouted: Vec<_> = documented.difference(&routed).collect();
        assert!(
            unrouted.is_empty(),
            "documented but not routed: {unrouted:?}"
        );
    }
}
