//! Checks that the document and docs/api.md's error table say what the registry of error codes
//! ([`ctxgate_core::error_code`]) says. Tests only: the document is derived in a test too.

use std::collections::{BTreeMap, BTreeSet};

use ctxgate_core::error_code::ErrorCode;
use serde_json::Value;

use super::DOCUMENT;

/// Where docs/api.md's table starts and ends.
const BEGIN: &str = "<!-- error codes: written from shared/src/error_code.rs -->\n";
const END: &str = "<!-- end of error codes -->\n";

/// docs/api.md's table of every code, as the registry writes it.
fn table() -> String {
    let mut out =
        String::from("| code | HTTP status | caller can fix | meaning |\n|---|---|---|---|\n");
    for &c in ErrorCode::ALL {
        let statuses = match c.statuses() {
            [] => "— (command line, indexer)".to_string(),
            s => s.iter().map(u16::to_string).collect::<Vec<_>>().join(", "),
        };
        let fix = if c.caller_can_fix() { "yes" } else { "no" };
        out += &format!("| `{c}` | {statuses} | {fix} | {} |\n", c.meaning());
    }
    out
}

/// Every (code, status) the document's operations answer with.
fn documented() -> BTreeMap<String, BTreeSet<u16>> {
    let doc: Value = serde_json::from_str(DOCUMENT).unwrap();
    let mut out = BTreeMap::<String, BTreeSet<u16>>::new();
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            let Some(responses) = op.get("responses").and_then(Value::as_object) else {
                continue;
            };
            for (status, r) in responses {
                // An answer without a body (to `HEAD`) names its codes in its description.
                let Some(listed) = r["description"]
                    .as_str()
                    .and_then(|d| d.strip_prefix("An error: "))
                else {
                    continue;
                };
                for code in listed.split(", ") {
                    let status = status.parse().unwrap();
                    out.entry(code.trim_matches('`').to_string())
                        .or_default()
                        .insert(status);
                }
            }
        }
    }
    out
}

#[test]
fn the_document_answers_codes_with_the_registrys_statuses() {
    for (code, statuses) in documented() {
        let c =
            ErrorCode::parse(&code).unwrap_or_else(|| panic!("`{code}` is not in the registry"));
        for s in statuses {
            assert!(
                c.statuses().contains(&s),
                "`{code}` answered with {s}, the registry says {:?}",
                c.statuses()
            );
        }
    }
}

#[test]
fn every_api_code_is_in_the_document() {
    let doc: Value = serde_json::from_str(DOCUMENT).unwrap();
    let listed = &doc["components"]["schemas"]["ErrorBody"]["properties"]["error"];
    let detail = match listed.get("$ref").and_then(Value::as_str) {
        Some(r) => &doc["components"]["schemas"][r.rsplit('/').next().unwrap()],
        None => listed,
    };
    let schema_codes: BTreeSet<&str> = detail["properties"]["code"]["enum"]
        .as_array()
        .expect("the error body's code lists the codes")
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let by_operation = documented();
    // Answered outside every operation: an unknown route, a Worker that cannot start; or
    // never in practice by this API (the catalog is compiled in, bodies are JSON text).
    let outside = [
        "route_not_found",
        "server_misconfigured",
        "invalid_catalog",
        "invalid_utf8",
    ];
    for &c in ErrorCode::ALL.iter().filter(|c| c.status().is_some()) {
        assert!(
            schema_codes.contains(c.as_str()),
            "`{c}` is not in the error body's schema"
        );
        assert!(
            by_operation.contains_key(c.as_str()) || outside.contains(&c.as_str()),
            "no operation of the document answers `{c}`"
        );
    }
    assert_eq!(
        schema_codes.len(),
        ErrorCode::ALL
            .iter()
            .filter(|c| c.status().is_some())
            .count()
    );
}

#[test]
fn docs_error_table_is_the_registrys() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/api.md");
    let text = std::fs::read_to_string(path).unwrap();
    let start = text
        .find(BEGIN)
        .expect("docs/api.md has the error table's start marker")
        + BEGIN.len();
    let end = text
        .find(END)
        .expect("docs/api.md has the error table's end marker");
    let wanted = table();
    if std::env::var("CTXGATE_BLESS").is_ok_and(|v| v == "1") {
        std::fs::write(path, format!("{}{wanted}{}", &text[..start], &text[end..])).unwrap();
        return;
    }
    assert!(
        text[start..end] == wanted,
        "docs/api.md's error table is not the registry's; rewrite it with \
         `CTXGATE_BLESS=1 cargo test -p ctxgate-edge --lib openapi`"
    );
}
