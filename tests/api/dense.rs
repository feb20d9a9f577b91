//! Dense retrieval on `ctxgate serve --dense api`: the server embeds a version's chunks through
//! an OpenAI-compatible embeddings API (a local server that speaks it) on its first request,
//! ranks with the `dense` signal, embeds only the query afterwards, and turns a provider's
//! refusal into a 502 with the provider's code.

use serde_json::json;

use super::cases::sample_repo;
use super::common::{dense_api_flags, embeddings_server};
use super::host::{Host, NativeHost, org_with_key, post};

pub fn run() {
    let (url, seen) = embeddings_server(64);
    let owned = dense_api_flags(&url);
    let flags: Vec<&str> = owned.iter().map(String::as_str).collect();
    let host = NativeHost::start_with_env(&flags, &[("CTXGATE_EMBED_API_KEY", "test-key")]);
    let key = org_with_key(&host, "dn", json!({}));
    host.publish("dn", "core", sample_repo());
    let ask = |query: &str| {
        post(
            &host,
            "/v1/context",
            Some(&key),
            &json!({"project": "core", "query": query, "budget": 6000}),
        )
    };
    let r = ask("quantize embedding vectors and find the nearest chunks");
    assert_eq!(r.status, 200, "{}", r.body);
    let pieces = r.body["pieces"].as_array().unwrap();
    assert!(
        pieces
            .iter()
            .any(|p| p["reasoning"]["dense"].as_f64().unwrap_or(0.0) > 0.0),
        "no piece carries a dense score: {}",
        r.body
    );
    let first: usize = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, b)| b["input"].as_array().map_or(0, Vec::len))
        .sum();
    assert!(
        first > 10,
        "the version's chunks were embedded ({first} inputs)"
    );

    seen.lock().unwrap().clear();
    let r = ask("how are continuation tokens signed");
    assert_eq!(r.status, 200, "{}", r.body);
    let inputs: Vec<usize> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, b)| b["input"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(inputs, vec![1], "warm: only the query is embedded");

    // The provider refuses the key: the caller learns which upstream failed, not a 500.
    let refused = NativeHost::start_with_env(&flags, &[("CTXGATE_EMBED_API_KEY", "wrong")]);
    let key = org_with_key(&refused, "dr", json!({}));
    refused.publish("dr", "core", sample_repo());
    let r = post(
        &refused,
        "/v1/context",
        Some(&key),
        &json!({"project": "core", "query": "continuation tokens", "budget": 6000}),
    );
    assert_eq!(
        (r.status, r.code()),
        (502, "embed_unauthorized"),
        "{}",
        r.body
    );
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Incorrect API key provided"),
        "{}",
        r.body
    );
}
