//! Dense retrieval through the real binary and the OpenAI-compatible embeddings client, against
//! a local server that speaks that API: vectors are asked for once per chunk content, the
//! request's nearest chunks are ranked with their `dense` signal, secrets never leave, and a
//! refused key is a clear error.

mod common;

use common::{Env, dense_api_flags, embeddings_server, json, stderr};

const SECRET: &str = "AKIAIOSFODNN7EXAMPLE";

#[test]
fn dense_api_ranks_by_embeddings_and_embeds_each_chunk_once() {
    let env = Env::new();
    env.sample();
    env.write(
        "deploy/settings.py",
        format!("AWS_ACCESS_KEY_ID = \"{SECRET}\"\nREGION = \"eu-west-1\"\n"),
    );
    let (url, seen) = embeddings_server(64);
    let dense = dense_api_flags(&url);
    let run = |query: &str| {
        let mut args = vec!["--query", query, "--budget", "3000", "--format", "json"];
        args.extend(dense.iter().map(String::as_str));
        env.cmd()
            .env("CTXGATE_EMBED_API_KEY", "test-key")
            .args(["assemble", "--repo"])
            .arg(env.repo())
            .args(&args)
            .output()
            .unwrap()
    };
    let out = run("where is the page rendered as html");
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let pieces = v["pieces"].as_array().unwrap();
    let render = pieces
        .iter()
        .find(|p| p["path"] == "src/render.rs")
        .unwrap_or_else(|| panic!("the render chunk was not chosen: {v}"));
    assert!(
        render["reasoning"]["dense"].as_f64().unwrap() > 0.0,
        "{render}"
    );

    let requests = seen.lock().unwrap().clone();
    assert!(requests.iter().all(|(key, _)| key == "test-key"));
    let inputs: Vec<String> = requests
        .iter()
        .flat_map(|(_, body)| {
            assert_eq!(body["model"], "test-embedder");
            assert_eq!(body["encoding_format"], "float");
            body["input"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        inputs.iter().any(|t| t.starts_with("src/render.rs")),
        "chunks are embedded with their path: {inputs:?}"
    );
    assert!(
        inputs.iter().all(|t| !t.contains(SECRET)),
        "a secret was sent to the embeddings API"
    );
    assert!(inputs.iter().any(|t| t.contains("[REDACTED:")));
    // Nor is it stored: no file of the data directory holds it.
    for (path, bytes, _) in common::snapshot(env.home.path()) {
        assert!(
            !bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
            "the secret is stored in {}",
            path.display()
        );
    }
    let first = inputs.len();

    // A second request embeds only itself: every chunk's vector is cached by content.
    seen.lock().unwrap().clear();
    let out = run("how is the configuration file parsed");
    assert!(out.status.success(), "{}", stderr(&out));
    let again = seen.lock().unwrap().clone();
    let inputs: usize = again
        .iter()
        .map(|(_, b)| b["input"].as_array().unwrap().len())
        .sum();
    assert_eq!(inputs, 1, "only the query; the first run sent {first}");
}

#[test]
fn a_refused_key_or_missing_url_is_a_clear_error() {
    let env = Env::new();
    env.sample();
    let (url, _) = embeddings_server(16);
    let out = env
        .cmd()
        .env("CTXGATE_EMBED_API_KEY", "wrong")
        .args(["assemble", "--repo"])
        .arg(env.repo())
        .args(["--query", "render", "--budget", "2000", "--format", "json"])
        .args(["--dense", "api", "--embed-url", &url, "--embed-dims", "16"])
        .output()
        .unwrap();
    // Not the caller's input: the machine's setup (exit 1), with the server's own message.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = json(&out)["error"].clone();
    assert_eq!(err["code"], "embed_unauthorized", "{err}");
    let message = err["message"].as_str().unwrap();
    assert!(message.contains("Incorrect API key provided"), "{message}");
    assert!(message.contains("401"), "{message}");

    let out = env.assemble(&[
        "--query", "render", "--budget", "2000", "--dense", "api", "--format", "json",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(json(&out)["error"]["code"], "embed_url_missing");
}

#[test]
fn index_embeds_ahead_so_assemble_embeds_only_the_query() {
    let env = Env::new();
    env.sample();
    let (url, seen) = embeddings_server(64);
    let flags = dense_api_flags(&url);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let repo = env.repo_arg();
    let out = env
        .cmd()
        .env("CTXGATE_EMBED_API_KEY", "test-key")
        .args(["index", &repo, "--format", "json"])
        .args(&flags)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let chunks = v["chunks"].as_u64().unwrap();
    assert_eq!(v["vectors"]["chunks"].as_u64(), Some(chunks), "{v}");
    assert!(v["vectors"]["embedded"].as_u64().unwrap() > 0, "{v}");

    seen.lock().unwrap().clear();
    let out = env
        .cmd()
        .env("CTXGATE_EMBED_API_KEY", "test-key")
        .args(["assemble", "--repo", &repo])
        .args([
            "--query",
            "render a page",
            "--budget",
            "2000",
            "--format",
            "json",
        ])
        .args(&flags)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let sent: usize = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(_, b)| b["input"].as_array().unwrap().len())
        .sum();
    assert_eq!(sent, 1, "the chunks were embedded by `index`");

    // Vectors live in the local data directory: not with a remote store.
    let out = env
        .cmd()
        .args([
            "index", &repo, "--format", "json", "--store", "s3://b/p", "--table", "t",
        ])
        .args(&flags)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(json(&out)["error"]["code"], "dense_needs_local_store");
}
