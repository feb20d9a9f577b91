//! The API's behaviour, host-independent: every case talks HTTP only.

use std::path::Path;

use ctxgate_core::tokens::Encoding;
use serde_json::{Value, json};

use super::host::{Host, call, call_with, get, org_with_key, post};

/// The repository the suite indexes: this workspace's core crate (real code, ~60k tokens).
pub fn sample_repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/shared/src"))
}

/// The chunk ids of the pieces listed under `field` of `v`.
fn chunk_ids(v: &Value, field: &str) -> Vec<String> {
    v[field]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["chunk_id"].as_str().unwrap().to_string())
        .collect()
}

/// Each piece's chunk id and form.
fn pieces_and_forms(v: &Value) -> Vec<(String, String)> {
    v["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let field = |k: &str| p[k].as_str().unwrap().to_string();
            (field("chunk_id"), field("form"))
        })
        .collect()
}

/// Runs every case against `host`; `tag` keeps org names unique per run.
pub fn run_suite(host: &dyn Host, tag: &str) {
    let acme = format!("acme{tag}");
    let key = org_with_key(host, &acme, json!({}));
    let project = host.publish(&acme, "core", sample_repo());
    let project_id = project["id"].as_str().unwrap().to_string();

    meta(host, &key);
    auth(host, &key);
    context(host, &key, &project_id);
    compression_and_profiles(host, &key, &project_id);
    continuation(host, &key);
    session(host, &acme, &key);
    history(host, tag);
    bad_input(host, &key);
    isolation(host, tag, &key, &project_id);
    webhook_refusals_are_one(host, None, &project_id);
    usage(host, &key);
    mcp_client(host, &key);
    quota_under_concurrency(host, tag);
    rate_and_concurrency_limits(host, tag);
    unlimited_calls_are_counted(host, tag);
    refused_sources_cost_no_index_job(host, tag);
}

fn meta(host: &dyn Host, key: &str) {
    let h = get(host, "/healthz", None);
    assert_eq!((h.status, h.body["status"].as_str()), (200, Some("ok")));
    let m = get(host, "/v1/models", None);
    assert_eq!(m.status, 200);
    let models = m.body["models"].as_array().unwrap();
    assert!(models.iter().any(|m| m["id"] == "gpt-4o"));
    assert!(
        models
            .iter()
            .all(|m| m["usable_context"].as_u64().unwrap() > 0)
    );
    let doc = get(host, "/openapi.json", None);
    assert_eq!(doc.status, 200);
    // Every route is documented (the edge's unit test `router_serves_the_documented_operations`)
    // and every documented operation is served by this host
    // (`anonymous_routes_are_the_documented_ones`).
    // Every operation is named, and every path parameter declared (the document validates as
    // OpenAPI 3.1: scripts/openapi-check.sh).
    for (path, item) in doc.body["paths"].as_object().unwrap() {
        let declared: Vec<&str> = item["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        for (method, op) in item.as_object().unwrap() {
            if method == "parameters" {
                continue;
            }
            assert!(op["operationId"].is_string(), "{method} {path}");
            let own: Vec<&str> = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| p["name"].as_str().unwrap())
                .collect();
            for seg in path.split('/').filter(|s| s.starts_with('{')) {
                let name = seg.trim_matches(|c| c == '{' || c == '}');
                assert!(
                    declared.contains(&name) || own.contains(&name),
                    "{method} {path}: `{name}` is not declared"
                );
            }
        }
    }
    // Exact counts, checked against the reference tokenizer.
    let text = "fn main() { println!(\"hello, wörld\"); }";
    let c = post(
        host,
        "/v1/tokens/count",
        Some(key),
        &json!({ "texts": [text, ""], "model": "gpt-4o" }),
    );
    assert_eq!(c.status, 200, "{}", c.body);
    assert_eq!(c.body["counts"][0], Encoding::O200kBase.count(text));
    assert_eq!(c.body["counts"][1], 0);
    assert_eq!(c.body["exact"], true);
    let e = post(
        host,
        "/v1/tokens/count",
        Some(key),
        &json!({ "text": "x", "model": "claude-opus-4-7" }),
    );
    if e.status == 200 {
        assert_eq!(e.body["exact"], false, "estimated tokenizers say so");
    }
}

fn auth(host: &dyn Host, key: &str) {
    let body = json!({ "project": "core", "query": "ledger", "budget": 2000 });
    let r = post(host, "/v1/context", None, &body);
    assert_eq!((r.status, r.code()), (401, "missing_api_key"));
    // RFC 6750: the scheme a 401 wants, and, for a wrong key, why (MCP's HTTP transport reads it).
    assert_eq!(
        r.www_authenticate.as_deref(),
        Some("Bearer realm=\"ctxgate\"")
    );
    let r = post(host, "/v1/context", Some("ctxg_not_a_real_key"), &body);
    assert_eq!((r.status, r.code()), (401, "invalid_api_key"));
    assert_eq!(
        r.www_authenticate.as_deref(),
        Some(
            "Bearer realm=\"ctxgate\", error=\"invalid_token\", error_description=\"invalid_api_key\""
        )
    );
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {} });
    let r = post(host, "/mcp", None, &init);
    assert_eq!((r.status, r.code()), (401, "missing_api_key"));
    assert!(r.www_authenticate.is_some_and(|w| w.starts_with("Bearer ")));
    let r = post(
        host,
        "/v1/admin/orgs",
        Some(key),
        &json!({ "name": "evil" }),
    );
    assert_eq!((r.status, r.code()), (401, "invalid_admin_secret"));
    let r = post(
        host,
        "/v1/admin/orgs",
        Some(host.admin_secret()),
        &json!({ "name": "bad name!" }),
    );
    assert_eq!((r.status, r.code()), (400, "invalid_name"));
    anonymous_routes_are_the_documented_ones(host);
}

/// Walks every operation of `/openapi.json` without a key: each is routed on this host (no
/// `route_not_found`, no 405), those the document marks as open (`security: []`) are the ones
/// docs/security.md lists for an anonymous caller, and every other operation answers 401.
fn anonymous_routes_are_the_documented_ones(host: &dyn Host) {
    let doc = get(host, "/openapi.json", None);
    let mut open = Vec::new();
    for (path, ops) in doc.body["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            if !op.is_object() {
                continue;
            }
            let route = format!("{} {path}", method.to_uppercase());
            let concrete = path
                .replace("{id}", "p1")
                .replace("{org}", "o1")
                .replace("{key}", "k1")
                .replace("{name}", "n1")
                .replace("{project}", "p1");
            let body = matches!(method.as_str(), "post" | "put").then_some("{}");
            let r = call(
                host,
                &method.to_uppercase(),
                &concrete,
                None,
                body,
                "application/json",
            );
            assert!(
                r.status != 405 && r.body["error"]["code"] != "route_not_found",
                "{route} is documented but not routed: {} {:?}",
                r.status,
                r.body
            );
            if op["security"].as_array().is_some_and(|s| s.is_empty()) {
                open.push(route);
                continue;
            }
            assert_eq!(r.status, 401, "{route} without a key: {:?}", r.body);
        }
    }
    open.sort();
    assert_eq!(
        open,
        [
            "GET /healthz",
            "GET /openapi.json",
            "GET /v1/models",
            "POST /v1/webhooks/github/{project}",
            "POST /v1/webhooks/gitlab/{project}",
        ],
        "the open operations of /openapi.json, as docs/security.md lists them"
    );
}

fn context(host: &dyn Host, key: &str, project_id: &str) {
    for (budget, model) in [(3000, None), (1500, Some("gpt-4o")), (800, None)] {
        let mut body = json!({
            "project": project_id,
            "query": "how does the quota ledger reserve and settle tokens",
            "budget": budget,
        });
        if let Some(m) = model {
            body["model"] = json!(m);
        }
        let r = post(host, "/v1/context", Some(key), &body);
        assert_eq!(r.status, 200, "{}", r.body);
        let b = &r.body;
        let total = b["tokens_total"].as_u64().unwrap();
        assert!(total <= budget, "{total} > {budget}");
        // The promise: the prompt re-counted by the target tokenizer is the reported total.
        assert_eq!(
            u64::from(Encoding::O200kBase.count(b["prompt"].as_str().unwrap())),
            total
        );
        let pieces = b["pieces"].as_array().unwrap();
        assert!(!pieces.is_empty());
        for p in pieces {
            for field in [
                "path",
                "start_line",
                "end_line",
                "chunk_id",
                "sha256",
                "tokens",
            ] {
                assert!(p.get(field).is_some(), "piece lacks {field}");
            }
        }
        assert!(
            pieces.iter().any(|p| p["path"] == "quota.rs"),
            "the quota module is retrieved"
        );
        // Summaries have their own array: each names what it covers and its tokens.
        for s in b["summaries"].as_array().unwrap() {
            assert!(s["path"].is_string() && s["kind"].is_string() && s["tokens"].is_u64());
        }
        assert!(b["analysis"]["size_class"].is_string());
        assert!(b["routing"]["model"].is_string());
        if let Some(m) = model {
            assert_eq!(b["routing"]["model"], m);
        }
        assert!(b["savings"]["tokens_saved"].as_u64().unwrap() > 0);
        assert!(b["intent"]["intent"].is_string());
    }
    // Light compression: fewer tokens for the same pieces, the room refilled, the promise kept.
    let body = |c: &str| {
        json!({
            "project": project_id,
            "query": "how does the quota ledger reserve and settle tokens",
            "budget": 3000,
            "compression": c,
        })
    };
    let plain = post(host, "/v1/context", Some(key), &body("none"));
    let light = post(host, "/v1/context", Some(key), &body("light"));
    assert_eq!(light.status, 200, "{}", light.body);
    let total = light.body["tokens_total"].as_u64().unwrap();
    assert!(total <= 3000);
    assert_eq!(
        u64::from(Encoding::O200kBase.count(light.body["prompt"].as_str().unwrap())),
        total
    );
    let squeezed: Vec<&Value> = light.body["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["form"] == "light")
        .collect();
    assert!(!squeezed.is_empty(), "no piece was compressed");
    assert!(
        squeezed
            .iter()
            .all(|p| p["original_tokens"].as_u64() > p["tokens"].as_u64())
    );
    // The room refilled: at least as many chunks quoted (an excerpt's windows are pieces of one
    // chunk). Signposts do not count: they take what the quoted pieces leave, so a refill that
    // quotes one more chunk may list fewer of them.
    let chunks = |v: &Value| {
        let mut ids: Vec<&str> = v["pieces"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["form"] != "signpost")
            .filter_map(|p| p["chunk_id"].as_str())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    };
    assert!(chunks(&light.body) >= chunks(&plain.body));
    let r = post(host, "/v1/context", Some(key), &body("extreme"));
    assert_eq!((r.status, r.code()), (400, "unsupported_option"));
    // By name as well as by id.
    let r = post(
        host,
        "/v1/context",
        Some(key),
        &json!({ "project": "core", "query": "continuation token", "budget": 2000 }),
    );
    assert_eq!(r.status, 200);
    // Routing without a model: a priced model whose window fits, with alternatives.
    assert!(
        !r.body["routing"]["alternatives"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // History and code under one budget: the history takes at most half, the code the rest.
    let mut messages = vec![json!({"role": "system", "content": "You review Rust code."})];
    for i in 0..60 {
        messages.push(json!({"role": "user", "content": format!("Round {i}: is the ledger safe under concurrency? {}", "We saw double spending in load tests. ".repeat(5))}));
        messages.push(json!({"role": "assistant", "content": format!("Answer {i}: reservations are atomic. {}", "Settlement releases the unused part. ".repeat(5))}));
    }
    let budget = 4000u64;
    let r = post(
        host,
        "/v1/context",
        Some(key),
        &json!({ "project": project_id, "query": "how does the quota ledger reserve and settle tokens",
                 "budget": budget, "messages": messages }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let code = r.body["tokens_total"].as_u64().unwrap();
    let history = r.body["history"]["tokens_total"].as_u64().unwrap();
    assert!(history <= budget / 2, "{history}");
    assert!(code + history <= budget, "{code} + {history} > {budget}");
    assert_eq!(
        u64::from(Encoding::O200kBase.count(r.body["prompt"].as_str().unwrap())),
        code
    );
    let out: Vec<ctxgate_core::history::Message> =
        serde_json::from_value(r.body["history"]["messages"].clone()).unwrap();
    let tok = ctxgate_core::catalog::TokenizerSpec::Exact(Encoding::O200kBase);
    assert_eq!(
        u64::from(ctxgate_core::history::conversation_tokens(&tok, &out)),
        history
    );
    let r = post(
        host,
        "/v1/context",
        Some(key),
        &json!({ "project": project_id, "query": "ledger", "budget": 100, "messages": messages }),
    );
    assert_eq!(
        (r.status, r.code()),
        (400, "budget_too_small"),
        "{}",
        r.body
    );
}

/// `medium` and `aggressive` cut bodies and report their savings; `plan` is small; `repair`
/// brings the error and the code its frames name; unknown names and missing or unused error
/// output are refused with codes.
fn compression_and_profiles(host: &dyn Host, key: &str, project_id: &str) {
    // A change request, not a question: for a question the best pieces of this corpus are a
    // block of constants and short methods that `aggressive` cannot cut further (they fall back
    // to `light`), and its excerpts are never compressed, so there would be no piece to check.
    let query = "the quota ledger reserves and settles tokens";
    let check = |r: &super::host::Reply, budget: u64| {
        assert_eq!(r.status, 200, "{}", r.body);
        let total = r.body["tokens_total"].as_u64().unwrap();
        assert!(total <= budget);
        assert_eq!(
            u64::from(Encoding::O200kBase.count(r.body["prompt"].as_str().unwrap())),
            total
        );
    };
    for (level, marker) in [
        ("medium", "medium: function bodies elided"),
        ("aggressive", "aggressive: signatures and key lines only"),
    ] {
        let r = post(
            host,
            "/v1/context",
            Some(key),
            &json!({ "project": project_id, "query": query, "budget": 6000, "compression": level }),
        );
        check(&r, 6000);
        let pieces = r.body["pieces"].as_array().unwrap();
        let cut: Vec<&Value> = pieces.iter().filter(|p| p["form"] == level).collect();
        assert!(!cut.is_empty(), "no piece at {level}: {}", r.body);
        assert!(
            cut.iter()
                .all(|p| p["original_tokens"].as_u64() > p["tokens"].as_u64())
        );
        let prompt = r.body["prompt"].as_str().unwrap();
        assert!(prompt.contains(marker) && prompt.contains("lines elided …"));
        let saved: u64 = pieces
            .iter()
            .filter_map(|p| Some(p["original_tokens"].as_u64()? - p["tokens"].as_u64()?))
            .sum();
        let s = &r.body["savings"];
        assert_eq!(s["compression_tokens_saved"].as_u64(), Some(saved));
        assert!(s["compression_usd_saved"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["priced_with"].is_string());
    }
    let r = post(
        host,
        "/v1/context",
        Some(key),
        &json!({ "project": project_id, "query": query, "budget": 8000, "profile": "plan" }),
    );
    check(&r, 2000);
    assert!(r.body["pieces"].as_array().unwrap().len() <= 5);
    assert_eq!(r.body["profile"]["name"], "plan");
    // `plan` keeps room for the project summary and echoes it.
    let head = r.body["profile"]["project_summary"]
        .as_str()
        .unwrap_or_else(|| panic!("no project summary: {}", r.body));
    assert!(r.body["prompt"].as_str().unwrap().contains(head.trim_end()));
    assert_eq!(r.body["summaries"][0]["kind"], "project");
    let error = "thread 'main' panicked at /build/ctxgate/shared/src/quota.rs:120:9:\nattempt to subtract with overflow\n";
    let r = post(
        host,
        "/v1/context",
        Some(key),
        &json!({ "project": project_id, "query": "fix the panic", "budget": 4000, "error_output": error }),
    );
    check(&r, 4000);
    assert_eq!(r.body["profile"]["name"], "repair");
    assert_eq!(
        r.body["profile"]["frame_pieces"], 1,
        "{}",
        r.body["profile"]
    );
    assert!(
        r.body["prompt"]
            .as_str()
            .unwrap()
            .contains("## Error output")
    );
    assert!(
        r.body["pieces"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["path"] == "quota.rs"
                && p["start_line"].as_u64().unwrap() <= 120
                && 120 <= p["end_line"].as_u64().unwrap()),
        "{}",
        r.body
    );
    for (extra, code) in [
        (json!({ "profile": "fix" }), "unsupported_option"),
        (json!({ "profile": "repair" }), "error_output_missing"),
        (
            json!({ "profile": "plan", "error_output": error }),
            "error_output_unused",
        ),
    ] {
        let mut body = json!({ "project": project_id, "query": query, "budget": 2000 });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let r = post(host, "/v1/context", Some(key), &body);
        assert_eq!((r.status, r.code()), (400, code), "{}", r.body);
    }
}

fn continuation(host: &dyn Host, key: &str) {
    let query = "budget selection and prompt composition";
    let body = json!({ "project": "core", "query": query, "budget": 1500 });
    let first = post(host, "/v1/context", Some(key), &body);
    assert_eq!(first.status, 200);
    let token = first.body["continuation"]
        .as_str()
        .expect("a partial answer carries a continuation")
        .to_string();
    let mut next = body.clone();
    next["continuation"] = json!(token);
    let second = post(host, "/v1/context", Some(key), &next);
    assert_eq!(second.status, 200, "{}", second.body);
    let (a, b) = (
        pieces_and_forms(&first.body),
        pieces_and_forms(&second.body),
    );
    assert!(!b.is_empty());
    // Page 2 repeats nothing page 1 sent whole; a chunk page 1 only outlined (a signpost or a
    // signature) may come whole, never as an outline again.
    let outline = |form: &str| matches!(form, "signpost" | "signature");
    for (id, form) in &b {
        if let Some((_, before)) = a.iter().find(|(i, _)| i == id) {
            assert!(
                outline(before) && !outline(form),
                "page 2 repeats {id} ({before} on page 1, {form} now)"
            );
        }
    }
    // At this budget page 1 names further files as signposts, and page 2 moves on: it brings
    // chunks page 1 did not send whole. (Whether those include a chunk page 1 signposted depends
    // on the ranking of this repository's own source and history, which every commit moves, so
    // it is not asserted here; that an outline never comes as an outline again is, above.)
    assert!(a.iter().any(|(_, f)| outline(f)), "{}", first.body);
    assert!(
        b.iter()
            .any(|(id, form)| !outline(form) && !a.iter().any(|(i, f)| i == id && !outline(f))),
        "page 2 brings nothing new whole: {}",
        second.body
    );
    // Under 1,000 tokens every piece is a signature: page 2 moves on (it once sent page 1
    // again, for ever), for context and for search pages alike.
    for (route, body) in [
        (
            "/v1/context",
            json!({ "project": "core", "query": query, "budget": 600 }),
        ),
        (
            "/v1/search",
            json!({ "project": "core", "query": query, "page_tokens": 600 }),
        ),
    ] {
        let mut page = post(host, route, Some(key), &body);
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(
            pieces_and_forms(&page.body)
                .iter()
                .any(|(_, f)| f == "signature"),
            "{route}: {}",
            page.body
        );
        let mut seen = chunk_ids(&page.body, "pieces");
        for n in 2..=3 {
            let mut follow = body.clone();
            follow["continuation"] = page.body["continuation"].clone();
            assert!(follow["continuation"].is_string(), "{}", page.body);
            page = post(host, route, Some(key), &follow);
            assert_eq!(page.status, 200, "{}", page.body);
            let ids = chunk_ids(&page.body, "pieces");
            assert!(!ids.is_empty(), "{route}: {}", page.body);
            assert!(
                ids.iter().all(|id| !seen.contains(id)),
                "{route}: page {n} repeats an earlier page ({seen:?} then {ids:?})"
            );
            seen.extend(ids);
        }
    }
    // Tampered, foreign query, garbage.
    let mut bytes = token.into_bytes();
    let last = bytes.len() - 3;
    bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
    let mut bad = body.clone();
    bad["continuation"] = json!(String::from_utf8(bytes).unwrap());
    let r = post(host, "/v1/context", Some(key), &bad);
    assert_eq!((r.status, r.code()), (400, "continuation_invalid"));
    let mut other = next.clone();
    other["query"] = json!("a different question");
    let r = post(host, "/v1/context", Some(key), &other);
    assert_eq!((r.status, r.code()), (400, "continuation_mismatch"));
    bad["continuation"] = json!("garbage");
    let r = post(host, "/v1/context", Some(key), &bad);
    assert_eq!((r.status, r.code()), (400, "continuation_malformed"));
    // Search pages too.
    let s = post(
        host,
        "/v1/search",
        Some(key),
        &json!({ "project": "core", "query": query, "page_tokens": 1000 }),
    );
    assert_eq!(s.status, 200, "{}", s.body);
    assert!(s.body["tokens_total"].as_u64().unwrap() <= 1000);
    assert!(s.body["continuation"].is_string());
}

/// A multi-turn client: pieces sent earlier in a session are named, not sent again.
fn session(host: &dyn Host, org: &str, key: &str) {
    let ask_as = |key: &str, session: Option<&str>| {
        let mut body = json!({
            "project": "core",
            "query": "how does the quota ledger reserve and settle tokens",
            "budget": 2500,
        });
        if let Some(s) = session {
            body["session"] = json!(s);
        }
        let r = post(host, "/v1/context", Some(key), &body);
        assert_eq!(r.status, 200, "{}", r.body);
        r.body
    };
    let ask = |session: Option<&str>| ask_as(key, session);
    let first = ask(Some("turn-test"));
    let sent = chunk_ids(&first, "pieces");
    assert!(!sent.is_empty());
    assert_eq!(first["session"]["id"], "turn-test");
    assert!(
        first["session"]["already_delivered"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // The same question again in the session: nothing is paid for twice, and what the client
    // already holds is named, best first, with where it is.
    let second = ask(Some("turn-test"));
    let again = chunk_ids(&second, "pieces");
    // A chunk sent as one line (a signpost), a signature or an excerpt may come whole later.
    let whole: Vec<String> = first["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| {
            !["signpost", "signature", "excerpt"].contains(&p["form"].as_str().unwrap_or(""))
        })
        .map(|p| p["chunk_id"].as_str().unwrap().to_string())
        .collect();
    assert!(!whole.is_empty());
    assert!(
        whole.iter().all(|id| !again.contains(id)),
        "a session was sent a piece twice"
    );
    // A compressed piece is what the caller asked for, not an outline: the session does not
    // send it again either.
    let compressed = |session: &str| {
        let body = json!({
            "project": "core",
            "query": "how does the quota ledger reserve and settle tokens",
            "budget": 2500,
            "compression": "medium",
            "session": session,
        });
        let r = post(host, "/v1/context", Some(key), &body);
        assert_eq!(r.status, 200, "{}", r.body);
        pieces_and_forms(&r.body)
    };
    let (before, after) = (compressed("turn-medium"), compressed("turn-medium"));
    assert!(before.iter().any(|(_, f)| f == "medium"), "{before:?}");
    for (id, form) in &after {
        if let Some((_, was)) = before.iter().find(|(i, _)| i == id) {
            assert!(
                matches!(was.as_str(), "signpost" | "signature" | "excerpt")
                    && !matches!(form.as_str(), "signpost" | "signature" | "excerpt"),
                "a session was sent {id} twice ({was}, then {form})"
            );
        }
    }
    let named = chunk_ids(&second["session"], "already_delivered");
    assert!(!named.is_empty());
    assert!(named.iter().all(|id| sent.contains(id)));
    let r = &second["session"]["already_delivered"][0];
    assert!(r["path"].is_string() && r["start_line"].as_u64().unwrap() >= 1);
    // Another session, and no session, start afresh.
    assert_eq!(chunk_ids(&ask(Some("turn-other")), "pieces"), sent);
    let plain = ask(None);
    assert_eq!(chunk_ids(&plain, "pieces"), sent);
    assert!(plain["session"].is_null());
    // A session is its key's: another client of the same org that picks the same id starts
    // afresh.
    let r = post(
        host,
        &format!("/v1/admin/orgs/{org}/keys"),
        Some(host.admin_secret()),
        &json!({}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let other_key = r.body["key"].as_str().unwrap();
    let theirs = ask_as(other_key, Some("turn-test"));
    assert_eq!(chunk_ids(&theirs, "pieces"), sent);
    assert!(
        theirs["session"]["already_delivered"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // Session ids are bounded.
    let r = post(
        host,
        "/v1/context",
        Some(key),
        &json!({ "project": "core", "query": "x", "budget": 2000, "session": "" }),
    );
    assert_eq!((r.status, r.code()), (400, "invalid_session"));
}

fn bad_input(host: &dyn Host, key: &str) {
    let raw = |body: &str, ct: &str| call(host, "POST", "/v1/context", Some(key), Some(body), ct);
    let r = raw("{\"project\": ", "application/json");
    assert_eq!((r.status, r.code()), (400, "malformed_json"));
    let r = raw("{\"query\": \"x\", \"budget\": 10}", "application/json");
    assert_eq!((r.status, r.code()), (400, "invalid_request"));
    let r = raw(
        "{\"project\": \"core\", \"query\": \"x\", \"budget\": 100, \"bogus\": 1}",
        "application/json",
    );
    assert_eq!((r.status, r.code()), (400, "invalid_request"));
    let r = raw("{}", "text/plain");
    assert_eq!((r.status, r.code()), (415, "unsupported_media_type"));
    // Both hosts run with a 1 MiB limit. A host that refuses from `Content-Length` closes the
    // connection while a client still writes, so there the raw-socket check reads the answer.
    if host.refuses_before_body() {
        let (status, text) =
            super::host::oversized_post(host, "/v1/context", key, 64 * 1024 * 1024);
        assert_eq!(status, 413, "{text}");
        assert!(text.contains("body_too_large"), "{text}");
    } else {
        let big = format!("{{\"query\": \"{}\"}}", "x".repeat(1024 * 1024 + 1));
        let r = raw(&big, "application/json");
        assert_eq!((r.status, r.code()), (413, "body_too_large"));
    }
    let ctx = |body: Value| post(host, "/v1/context", Some(key), &body);
    let r = ctx(json!({ "project": "core", "query": "x", "model": "no-such-model" }));
    assert_eq!((r.status, r.code()), (400, "unknown_model"));
    // The names people type are models on every host: the core catalog resolves them.
    let r = ctx(
        json!({ "project": "core", "query": "quota ledger", "model": "sonnet", "budget": 500 }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["routing"]["model"], "claude-sonnet-5-5");
    let r = ctx(json!({ "project": "core", "query": "x", "model": "sonet" }));
    assert_eq!((r.status, r.code()), (400, "unknown_model"));
    assert!(
        r.body["error"]["message"]
            .to_string()
            .contains("did you mean sonnet"),
        "{}",
        r.body
    );
    let r =
        ctx(json!({ "project": "core", "query": "x", "model": "gpt-4o", "budget": 10_000_000 }));
    assert_eq!((r.status, r.code()), (400, "budget_exceeds_window"));
    assert!(r.body["error"]["details"]["usable"].as_u64().is_some());
    // Neither budget nor model: the default every host gives, with its warning.
    let r = ctx(json!({ "project": "core", "query": "x" }));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["warnings"]
            .to_string()
            .contains("no budget given: 16000 tokens, the default"),
        "{}",
        r.body
    );
    assert!(r.body["tokens_total"].as_u64().unwrap() <= 16_000);
    // Too small for any code: refused with the smallest useful budget.
    let r = ctx(json!({ "project": "core", "query": "x", "budget": 8 }));
    assert_eq!(
        (r.status, r.code()),
        (400, "budget_too_small"),
        "{}",
        r.body
    );
    assert_eq!(r.body["error"]["details"]["needed"], 64);
    assert!(r.body["error"]["message"].to_string().contains("64"));
    let r = ctx(json!({ "project": "core", "query": "   ", "budget": 100 }));
    assert_eq!((r.status, r.code()), (400, "query_empty"));
    let r = ctx(json!({ "project": "nope", "query": "x", "budget": 100 }));
    assert_eq!((r.status, r.code()), (404, "project_not_found"));
    let r = get(host, "/v1/nothing-here", Some(key));
    assert_eq!((r.status, r.code()), (404, "route_not_found"));
    let r = post(
        host,
        "/v1/projects",
        Some(key),
        &json!({ "name": "x", "source": { "kind": "local", "path": "/etc" } }),
    );
    assert_eq!((r.status, r.code()), (403, "source_refused"));
}

/// `POST /v1/history/compact`: within the budget, protected turns verbatim, metered at the real
/// count, errors in the one shape. Its own org, so usage is exactly this case's.
fn history(host: &dyn Host, tag: &str) {
    let key = org_with_key(host, &format!("hist{tag}"), json!({}));
    let mut messages = vec![json!({"role": "system", "content": "Be brief."})];
    messages.push(json!({"role": "user", "content": "Our staging host is kestrel-42."}));
    messages.push(
        json!({"role": "user", "content": "The db password=swordfish99 is rotated monthly."}),
    );
    for i in 0..80 {
        messages.push(json!({"role": "user", "content": format!("Step {i}: why does the build cache miss on CI? {}", "The logs show cold restores. ".repeat(6))}));
        messages.push(json!({"role": "assistant", "content": format!("Answer {i}: the cache key includes the timestamp; drop it. {}", "Keys must be stable across runs. ".repeat(6))}));
    }
    let budget = 2000u64;
    let r = post(
        host,
        "/v1/history/compact",
        Some(&key),
        &json!({ "messages": messages, "model": "gpt-4o", "budget": budget, "query": "staging host name" }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let total = r.body["tokens_total"].as_u64().unwrap();
    assert!(total <= budget);
    let out: Vec<ctxgate_core::history::Message> =
        serde_json::from_value(r.body["messages"].clone()).unwrap();
    let tok = ctxgate_core::catalog::TokenizerSpec::Exact(Encoding::O200kBase);
    assert_eq!(
        u64::from(ctxgate_core::history::conversation_tokens(&tok, &out)),
        total,
        "the reported count is the exact count of what was returned"
    );
    let sent: Vec<ctxgate_core::history::Message> =
        serde_json::from_value(Value::Array(messages.clone())).unwrap();
    assert_eq!(out[0], sent[0]);
    assert_eq!(&out[out.len() - 6..], &sent[sent.len() - 6..]);
    assert!(r.body["stats"]["tiers"].as_object().unwrap().len() >= 3);
    let text = r.body["messages"].to_string();
    assert!(
        !text.contains("swordfish99"),
        "a secret survived into a summary"
    );
    let u = get(host, "/v1/usage", Some(&key));
    assert_eq!(
        u.body["usage"]["tokens_total"].as_u64(),
        Some(total),
        "{}",
        u.body
    );
    assert!(
        u.body["recent"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["endpoint"] == "/v1/history/compact")
    );

    let call = |body: Value| post(host, "/v1/history/compact", Some(&key), &body);
    let r = call(json!({ "messages": messages, "budget": 20 }));
    assert_eq!((r.status, r.code()), (400, "budget_too_small"));
    assert!(r.body["error"]["details"]["needed"].as_u64().unwrap() > 20);
    let r = call(json!({ "messages": [{"role": "robot", "content": "x"}], "budget": 100 }));
    assert_eq!((r.status, r.code()), (400, "unknown_role"));
    assert_eq!(r.body["error"]["details"]["message_index"], 0);
    let r = call(json!({ "messages": [], "budget": 100 }));
    assert_eq!((r.status, r.code()), (400, "conversation_empty"));
    let r = call(json!({ "messages": "hi", "budget": 100 }));
    assert_eq!((r.status, r.code()), (400, "invalid_conversation"));
    let r = call(json!({ "messages": [{"role": "user", "content": "x"}] }));
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.body["warnings"]
            .to_string()
            .contains("no budget given: 16000 tokens"),
        "{}",
        r.body
    );
    let r = post(
        host,
        "/v1/history/compact",
        None,
        &json!({ "messages": [], "budget": 1 }),
    );
    assert_eq!((r.status, r.code()), (401, "missing_api_key"));
}

fn isolation(host: &dyn Host, tag: &str, key_a: &str, project_a: &str) {
    let key_b = org_with_key(host, &format!("beta{tag}"), json!({}));
    let r = get(host, "/v1/projects", Some(&key_b));
    assert_eq!(r.status, 200);
    assert_eq!(r.body["projects"].as_array().unwrap().len(), 0);
    for target in [project_a, "core"] {
        let r = get(host, &format!("/v1/projects/{target}"), Some(&key_b));
        assert_eq!((r.status, r.code()), (404, "project_not_found"));
        let r = get(host, &format!("/v1/projects/{target}/status"), Some(&key_b));
        assert_eq!((r.status, r.code()), (404, "project_not_found"));
        let r = post(
            host,
            "/v1/context",
            Some(&key_b),
            &json!({ "project": target, "query": "quota ledger", "budget": 2000 }),
        );
        assert_eq!((r.status, r.code()), (404, "project_not_found"));
        let r = post(
            host,
            "/v1/search",
            Some(&key_b),
            &json!({ "project": target, "query": "quota ledger" }),
        );
        assert_eq!((r.status, r.code()), (404, "project_not_found"));
    }
    // A's continuation token is useless to B.
    let a = post(
        host,
        "/v1/context",
        Some(key_a),
        &json!({ "project": "core", "query": "quota ledger", "budget": 1000 }),
    );
    if let Some(t) = a.body["continuation"].as_str() {
        let r = post(
            host,
            "/v1/context",
            Some(&key_b),
            &json!({ "project": project_a, "query": "quota ledger", "budget": 1000, "continuation": t }),
        );
        assert_eq!(r.status, 404);
    }
    // B's usage shows none of A's calls.
    let u = get(host, "/v1/usage", Some(&key_b));
    assert_eq!(u.status, 200);
    assert_eq!(u.body["recent"].as_array().unwrap().len(), 0);
    assert_eq!(u.body["usage"]["tokens_total"], 0);
    let a_ok = get(host, &format!("/v1/projects/{project_a}"), Some(key_a));
    assert_eq!(a_ok.status, 200);
}

fn usage(host: &dyn Host, key: &str) {
    let u = get(host, "/v1/usage", Some(key));
    assert_eq!(u.status, 200);
    let recent = u.body["recent"].as_array().unwrap();
    assert!(!recent.is_empty());
    let text = u.body.to_string();
    // Audit holds ids and counts, never content.
    assert!(!text.contains("fn reserve"), "audit must not hold code");
    assert!(recent.iter().any(|r| r["endpoint"] == "/v1/context"
        && r["tokens_used"].as_u64().unwrap() > 0
        && !r["chunks"].as_array().unwrap().is_empty()));
}

/// 64 concurrent requests against a token budget that admits exactly `n` of them.
fn quota_under_concurrency(host: &dyn Host, tag: &str) {
    let budget = 4000u64;
    let query = "how are index packs encoded, versioned and decoded";
    // What one request really uses (settlement charges this, not the reservation).
    let probe = org_with_key(host, &format!("probe{tag}"), json!({}));
    host.publish(&format!("probe{tag}"), "core", sample_repo());
    let body = json!({ "project": "core", "query": query, "budget": budget });
    let r = post(host, "/v1/context", Some(&probe), &body);
    assert_eq!(r.status, 200);
    let used = r.body["tokens_total"].as_u64().unwrap();
    let n = 5u64;
    // Reservations hold `budget` each; settlements free `budget - used` each. With
    // n * (budget - used) < budget, no settlement order lets an (n+1)th request in.
    assert!(n * (budget - used) < budget, "the probe used only {used}");
    let org = format!("quota{tag}");
    let key = org_with_key(host, &org, json!({ "tokens_per_day": n * budget }));
    host.publish(&org, "core", sample_repo());
    let replies: Vec<(u16, String, Option<String>, Value)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..64)
            .map(|_| {
                s.spawn(|| {
                    let r = post(host, "/v1/context", Some(&key), &body);
                    (
                        r.status,
                        r.code().to_string(),
                        r.retry_after.clone(),
                        r.body,
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ok = replies.iter().filter(|r| r.0 == 200).count() as u64;
    assert_eq!(ok, n, "exactly {n} of 64 fit the day's budget");
    for (status, code, retry, body) in replies.iter().filter(|r| r.0 != 200) {
        assert_eq!((*status, code.as_str()), (429, "quota_exceeded"), "{body}");
        assert!(retry.as_deref().unwrap_or("").parse::<u64>().unwrap() >= 1);
        assert_eq!(body["error"]["details"]["limit"], "tokens_per_day");
    }
    let u = get(host, "/v1/usage", Some(&key));
    let spent = u.body["usage"]["tokens_today"].as_u64().unwrap();
    assert!(spent <= n * budget);
    assert_eq!(u.body["usage"]["in_flight"], 0);
}

/// An org without limits reserves nothing before a warm call (no round trip to its ledger)
/// and is booked when the call settles: its usage and audit trail count every call and token
/// as a limited org's do, concurrent calls included, and nothing stays in flight.
fn unlimited_calls_are_counted(host: &dyn Host, tag: &str) {
    let org = format!("free{tag}");
    let key = org_with_key(host, &org, json!({}));
    host.publish(&org, "core", sample_repo());
    let body = |q: &str| json!({ "project": "core", "query": q, "budget": 3000 });
    // The first call finds the project (and reserves with it); the rest are warm.
    let first = post(
        host,
        "/v1/context",
        Some(&key),
        &body("where are packs decoded"),
    );
    assert_eq!(first.status, 200, "{}", first.body);
    let mut used = first.body["tokens_total"].as_u64().unwrap();
    let queries = [
        "how is a budget kept",
        "where are chunks fingerprinted",
        "what signs tokens",
    ];
    let replies: Vec<Value> = std::thread::scope(|s| {
        let handles: Vec<_> = queries
            .iter()
            .map(|q| s.spawn(|| post(host, "/v1/context", Some(&key), &body(q))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .map(|r| {
                assert_eq!(r.status, 200, "{}", r.body);
                r.body
            })
            .collect()
    });
    used += replies
        .iter()
        .map(|b| b["tokens_total"].as_u64().unwrap())
        .sum::<u64>();
    let count = post(
        host,
        "/v1/tokens/count",
        Some(&key),
        &json!({ "text": "hi" }),
    );
    assert_eq!(count.status, 200);
    let u = get(host, "/v1/usage", Some(&key));
    assert_eq!(u.status, 200);
    let usage = &u.body["usage"];
    assert_eq!(usage["requests_total"], 5, "{usage}");
    assert_eq!(usage["tokens_total"].as_u64(), Some(used), "{usage}");
    assert_eq!(usage["tokens_today"].as_u64(), Some(used), "{usage}");
    assert_eq!(usage["in_flight"], 0, "{usage}");
    assert_eq!(usage["tokens_reserved"], 0, "{usage}");
    let recent = u.body["recent"].as_array().unwrap();
    assert_eq!(recent.len(), 5, "{recent:?}");
    let audited: u64 = recent
        .iter()
        .map(|r| r["tokens_used"].as_u64().unwrap())
        .sum();
    assert_eq!(audited, used);
}

fn rate_and_concurrency_limits(host: &dyn Host, tag: &str) {
    let key = org_with_key(
        host,
        &format!("rpm{tag}"),
        json!({ "requests_per_minute": 3 }),
    );
    let count = |k: &str| post(host, "/v1/tokens/count", Some(k), &json!({ "text": "hi" }));
    let mut statuses: Vec<u16> = (0..5).map(|_| count(&key).status).collect();
    // A minute boundary between calls could reset the window; allow for it once.
    if statuses.iter().filter(|s| **s == 429).count() == 0 {
        statuses = (0..5).map(|_| count(&key).status).collect();
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    let r = count(&key);
    if r.status == 429 {
        assert_eq!(r.body["error"]["details"]["limit"], "requests_per_minute");
        assert!(r.retry_after.is_some());
    }
}

/// `GET /v1/usage` for `key`: the `usage` object.
fn usage_of(host: &dyn Host, key: &str) -> Value {
    let u = get(host, "/v1/usage", Some(key));
    assert_eq!(u.status, 200, "{}", u.body);
    u.body["usage"].clone()
}

/// Sleeps past the hour's end when it is less than a minute away, so that a case's jobs fall in
/// one fixed window.
fn clear_of_the_hour_boundary() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let into_hour = now % 3600;
    if into_hour > 3540 {
        std::thread::sleep(std::time::Duration::from_secs(3600 - into_hour + 1));
    }
}

/// The index-job limit is set and shown like the other limits, and a project the host refuses
/// before any work (a folder on a host that reads none) is no job: it costs nothing.
fn refused_sources_cost_no_index_job(host: &dyn Host, tag: &str) {
    let org = format!("jobs{tag}");
    let key = org_with_key(host, &org, json!({ "index_jobs_per_hour": 1 }));
    let s = usage_of(host, &key);
    assert_eq!(s["limits"]["index_jobs_per_hour"], 1, "{s}");
    assert_eq!(
        (&s["index_jobs_this_hour"], &s["index_jobs_left_this_hour"]),
        (&json!(0), &json!(1)),
        "{s}"
    );
    for _ in 0..3 {
        let r = post(
            host,
            "/v1/projects",
            Some(&key),
            &json!({ "name": "x", "source": { "kind": "local", "path": "/etc" } }),
        );
        assert_eq!((r.status, r.code()), (403, "source_refused"), "{}", r.body);
    }
    let s = usage_of(host, &key);
    assert_eq!(s["index_jobs_this_hour"], 0, "refusals are no jobs: {s}");
    // The admin API sets it as it sets the others (and leaves it out when unset).
    let admin = host.admin_secret();
    let r = call(
        host,
        "PUT",
        &format!("/v1/admin/orgs/{org}/limits"),
        Some(admin),
        Some(&json!({ "index_jobs_per_hour": 5, "requests_per_minute": 100 }).to_string()),
        "application/json",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["limits"]["index_jobs_per_hour"], 5, "{}", r.body);
    let r = call(
        host,
        "PUT",
        &format!("/v1/admin/orgs/{org}/limits"),
        Some(admin),
        Some("{}"),
        "application/json",
    );
    assert_eq!(r.body["limits"], json!({}), "{}", r.body);
}

/// Index jobs past the org's `index_jobs_per_hour` are refused like every other quota: 429
/// `quota_exceeded`, `Retry-After` until the hour ends, and the limit named in the message and
/// `details.limit`; a refused creation registers nothing. `source` must be one `host` indexes
/// (a folder under `serve --local-root`, a URL the AWS deployment registers); the first creation
/// is the one job the limit allows.
pub fn index_jobs_are_metered(host: &dyn Host, org: &str, source: Value) {
    let key = org_with_key(host, org, json!({ "index_jobs_per_hour": 1 }));
    clear_of_the_hour_boundary();
    let create = |name: &str| {
        post(
            host,
            "/v1/projects",
            Some(&key),
            &json!({ "name": name, "source": source }),
        )
    };
    let r = create("first");
    assert!(matches!(r.status, 201 | 202), "{}", r.body);
    let first = r.body["id"].as_str().unwrap().to_string();
    let s = usage_of(host, &key);
    assert_eq!(
        (&s["index_jobs_this_hour"], &s["index_jobs_left_this_hour"]),
        (&json!(1), &json!(0)),
        "{s}"
    );
    let refused = |r: &super::host::Reply, what: &str| {
        assert_eq!(
            (r.status, r.code()),
            (429, "quota_exceeded"),
            "{what}: {}",
            r.body
        );
        let d = &r.body["error"]["details"];
        assert_eq!(d["limit"], "index_jobs_per_hour", "{what}: {}", r.body);
        assert_eq!((&d["allowed"], &d["remaining"]), (&json!(1), &json!(0)));
        assert!(
            r.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("index_jobs_per_hour"),
            "{what}: {}",
            r.body
        );
        let retry: u64 = r
            .retry_after
            .as_deref()
            .unwrap_or_else(|| panic!("{what}: no Retry-After"))
            .parse()
            .unwrap();
        assert!((1..=3600).contains(&retry), "{what}: Retry-After {retry}");
        assert_eq!(d["retry_after_s"], retry, "{what}");
    };
    refused(&create("second"), "a second project");
    let r = get(host, "/v1/projects/second", Some(&key));
    assert_eq!(
        (r.status, r.code()),
        (404, "project_not_found"),
        "a refused creation registers nothing: {}",
        r.body
    );
    let reindex = post(
        host,
        &format!("/v1/projects/{first}/reindex"),
        Some(&key),
        &json!({}),
    );
    // Hosts that re-index count it (here: refuse it); the AWS deployment re-indexes on its
    // schedule and refuses the request before any job.
    if reindex.status != 403 {
        refused(&reindex, "a re-index");
    }
    let s = usage_of(host, &key);
    assert_eq!(s["index_jobs_this_hour"], 1, "refusals count nothing: {s}");
    // Other calls are not held by the index-job limit.
    let r = post(
        host,
        "/v1/tokens/count",
        Some(&key),
        &json!({ "text": "hi" }),
    );
    assert_eq!(r.status, 200, "{}", r.body);
}

/// The official MCP Python SDK lists and calls the tools (installed by
/// `scripts/mcp-client-setup.sh`, which the test command runs).
fn mcp_client(host: &dyn Host, key: &str) {
    let root = env!("CARGO_MANIFEST_DIR");
    let python = std::env::var("CTXGATE_MCP_PYTHON")
        .unwrap_or_else(|_| format!("{root}/target/mcp-venv/bin/python"));
    assert!(
        Path::new(&python).exists(),
        "no MCP client at {python}: run scripts/mcp-client-setup.sh (scripts/test.sh does)"
    );
    let out = std::process::Command::new(&python)
        .arg(format!("{root}/tests/mcp/client.py"))
        .arg(format!("{}/mcp", host.base_url()))
        .arg(key)
        .arg("core")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "MCP client failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["server"], "ctxgate");
    assert_eq!(
        seen["tools"],
        json!([
            "count_tokens",
            "get_context",
            "list_projects",
            "search_code"
        ])
    );
    assert_eq!(seen["context_error"], false);
    let total = seen["context"]["tokens_total"].as_u64().unwrap();
    assert!(total <= 1500);
    let text = seen["context_text"].as_str().unwrap();
    assert_eq!(u64::from(Encoding::O200kBase.count(text)), total);
    assert_eq!(
        seen["count"]["total"],
        Encoding::O200kBase.count("hello world")
    );
    assert_eq!(seen["missing_error"], true);
    assert_eq!(seen["missing"]["error"]["code"], "project_not_found");
    assert_eq!(seen["projects"]["projects"][0]["name"], "core");
    // A session over MCP: the second turn does not repeat the first's pieces, and its text
    // names them.
    // (A chunk sent as a signature or a signpost may come whole later; nothing comes twice in
    // one form.)
    let sent = |turn: &Value| -> Vec<(String, String)> {
        turn["pieces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let form = if p["form"] == "signature" || p["form"] == "signpost" {
                    "partial"
                } else {
                    "whole"
                };
                (
                    p["chunk_id"].as_str().unwrap().to_string(),
                    form.to_string(),
                )
            })
            .collect()
    };
    let (first, second) = (sent(&seen["first_turn"]), sent(&seen["second_turn"]));
    assert!(!first.is_empty());
    for (id, form) in &first {
        let again = second.iter().find(|(i, _)| i == id);
        assert!(
            again.is_none() || (form == "partial" && again.is_some_and(|(_, f)| f == "whole")),
            "{id} ({form}) sent again: {second:?}"
        );
    }
    let text = seen["second_turn_text"].as_str().unwrap();
    assert!(
        text.contains("Already sent earlier in this session"),
        "{text}"
    );
    // Every tool is read-only and declares its answer's schema, which the SDK checked each
    // successful result against.
    let tools = [
        "count_tokens",
        "get_context",
        "list_projects",
        "search_code",
    ];
    assert_eq!(seen["output_schemas"], json!(tools));
    for t in tools {
        assert_eq!(seen["annotations"][t], true, "{t}");
    }
    // No budget: a quarter of the model's window, at most 16,000 tokens; the prompt is the text
    // part only, and the answer says which budget it chose.
    assert_eq!(seen["large"]["budget"], 16_000);
    assert_eq!(seen["small"]["budget"], 8192 / 4);
    let large = seen["large"]["tokens_total"].as_u64().unwrap();
    assert!(large <= 16_000);
    assert_eq!(
        u64::from(Encoding::O200kBase.count(seen["large_text"].as_str().unwrap())),
        large
    );
    assert!(seen["large"].get("prompt").is_none());
    let warned = seen["large"]["warnings"].as_array().unwrap();
    assert!(
        warned
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("no budget given")),
        "{warned:?}"
    );
    assert_eq!(seen["search_error"], false);
    assert!(!seen["search"]["pieces"].as_array().unwrap().is_empty());
}

/// A webhook delivery that fails authentication gets one answer (status, code, message and
/// `WWW-Authenticate`) whether its project does not exist, exists without a webhook
/// (`hookless`) or has one (`hooked`, where the host can give a project a webhook), so that
/// deliveries cannot probe which projects exist or take pushes. A host that does not index on
/// push refuses them all alike (403 `webhooks_unsupported`).
pub fn webhook_refusals_are_one(host: &dyn Host, hooked: Option<&str>, hookless: &str) {
    let body = json!({
        "ref": "refs/heads/main", "before": "1".repeat(40), "after": "2".repeat(40),
        "repository": {"clone_url": "https://github.com/acme/repo.git", "default_branch": "main"}
    })
    .to_string();
    let mut targets = vec!["p0000000000000000", "not.a-project", hookless];
    targets.extend(hooked);
    // `no webhook` is the throwaway key a hookless project is checked against: a delivery
    // signed with it must fail as any other wrong signature does.
    let throwaway =
        ctxgate_core::webhook::signature::github_signature(b"no webhook", body.as_bytes());
    let wrong = format!("sha256={}", "0".repeat(64));
    let kinds: [(&str, &str, Option<&str>); 6] = [
        ("github", "X-Hub-Signature-256", Some(&wrong)),
        ("github", "X-Hub-Signature-256", Some(&throwaway)),
        ("github", "X-Hub-Signature-256", Some("sha256=not-hex")),
        ("github", "X-Hub-Signature-256", None),
        ("gitlab", "X-Gitlab-Token", Some("a wrong token")),
        ("gitlab", "X-Gitlab-Token", Some("no webhook")),
    ];
    for (forge, header, signed) in kinds {
        let answers: Vec<_> = targets
            .iter()
            .map(|target| {
                let mut headers = vec![
                    ("X-GitHub-Event", "push"),
                    ("X-GitHub-Delivery", "probe"),
                    ("X-Gitlab-Event", "Push Hook"),
                ];
                headers.extend(signed.map(|s| (header, s)));
                let r = call_with(
                    host,
                    "POST",
                    &format!("/v1/webhooks/{forge}/{target}"),
                    None,
                    Some(&body),
                    "application/json",
                    &headers,
                );
                (r.status, r.body, r.www_authenticate)
            })
            .collect();
        let (status, first, _) = &answers[0];
        assert!(
            matches!(
                (status, first["error"]["code"].as_str()),
                (401, Some(_)) | (403, Some("webhooks_unsupported"))
            ),
            "{forge} {signed:?}: {status} {first}"
        );
        for (target, answer) in targets.iter().zip(&answers) {
            assert_eq!(
                answer, &answers[0],
                "{forge} {signed:?} to {target} is answered differently from a project that does not exist"
            );
        }
    }
}
