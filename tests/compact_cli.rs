//! `ctxgate compact` end to end through the real binary.

mod common;

use std::io::Write;
use std::process::{Output, Stdio};

use common::{Env, fake_model_server, json, stderr, stdout};
use ctxgate_core::catalog::TokenizerSpec;
use ctxgate_core::history::{conversation_tokens, parse};
use ctxgate_core::tokens::Encoding;
use serde_json::{Value, json};

/// A long chat with a fact in its first turn and a secret in an old one.
fn long_chat() -> Value {
    let mut msgs = vec![json!({"role": "system", "content": "You are a helpful assistant."})];
    msgs.push(json!({"role": "user", "id": "m1",
        "content": "Our production cluster is called bluefin-7 and runs in eu-west-3."}));
    msgs.push(json!({"role": "assistant", "content": "Noted: bluefin-7 in eu-west-3."}));
    msgs.push(json!({"role": "user",
        "content": "The deploy key is AKIAIOSFODNN7EXAMPLE, keep it safe. Also we use Terraform 1.7 for every environment we manage."}));
    for i in 0..120 {
        msgs.push(json!({"role": "user", "content": format!(
            "Question {i}: how should service {i} handle retries when the upstream times out? {}",
            "We see intermittent 504 errors from the gateway under load. ".repeat(3))}));
        msgs.push(json!({"role": "assistant", "content": format!(
            "Answer {i}: use exponential backoff with jitter, cap at 5 attempts. {}",
            "Make the operation idempotent so retries are safe. ".repeat(4))}));
    }
    json!({ "model": "gpt-4o", "messages": msgs })
}

fn compact_stdin(env: &Env, input: &[u8], args: &[&str]) -> Output {
    let mut child = env
        .cmd()
        .arg("compact")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The command may refuse its arguments before reading stdin; a closed pipe is fine then.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

#[test]
fn compacts_within_the_budget_in_the_same_format() {
    let env = Env::new();
    let input = serde_json::to_vec(&long_chat()).unwrap();
    let out = compact_stdin(
        &env,
        &input,
        &["--model", "gpt-4o", "--budget", "3000", "--format", "json"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["model"], "gpt-4o", "the envelope is kept");
    let conv = parse(&stdout(&out)).unwrap();
    let tok = TokenizerSpec::Exact(Encoding::O200kBase);
    let total = conversation_tokens(&tok, &conv.messages);
    assert!(total <= 3000, "{total}");
    let original = parse(std::str::from_utf8(&input).unwrap()).unwrap();
    let n = original.messages.len();
    assert_eq!(conv.messages[0], original.messages[0], "system prompt kept");
    assert_eq!(
        &conv.messages[conv.messages.len() - 6..],
        &original.messages[n - 6..],
        "the last 3 rounds are verbatim"
    );
    let text = stdout(&out);
    assert!(
        !text.contains("AKIAIOSFODNN7EXAMPLE"),
        "secret carried into a summary"
    );
}

#[test]
fn stats_report_tiers_and_a_file_argument_works() {
    let env = Env::new();
    let path = env.home.path().join("conv.json");
    std::fs::write(&path, serde_json::to_vec(&long_chat()).unwrap()).unwrap();
    let p = path.to_str().unwrap();
    let out = env.run(&[
        "compact", p, "--budget", "2500", "--stats", "--format", "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let stats = &v["stats"];
    assert!(stats["tokens_total"].as_u64().unwrap() <= 2500);
    let tiers: Vec<&str> = stats["tiers"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for t in ["system", "recent", "summarized"] {
        assert!(tiers.contains(&t), "{tiers:?}");
    }
    assert!(stats["cache_misses"].as_u64().unwrap() > 0);
    // A second run takes every summary from the cache; clearing empties it.
    let again = json(&env.run(&[
        "compact", p, "--budget", "2500", "--stats", "--format", "json",
    ]));
    assert_eq!(again["stats"]["cache_misses"], 0);
    assert!(again["stats"]["cache_hits"].as_u64().unwrap() > 0);
    let cleared = json(&env.run(&["compact", "--clear-summaries", "--format", "json"]));
    assert!(cleared["cleared_summaries"].as_u64().unwrap() > 0);
    let third = json(&env.run(&[
        "compact", p, "--budget", "2500", "--stats", "--format", "json",
    ]));
    assert_eq!(third["stats"]["cache_hits"], 0);
    // Text stats for people.
    let text = env.run(&["compact", p, "--budget", "2500", "--stats"]);
    assert!(text.status.success());
    let t = stdout(&text);
    assert!(t.contains("TIER") && t.contains("dropped:"), "{t}");
}

#[test]
fn a_query_recalls_the_early_fact() {
    let env = Env::new();
    let input = serde_json::to_vec(&long_chat()).unwrap();
    let out = compact_stdin(
        &env,
        &input,
        &[
            "--budget",
            "2500",
            "--query",
            "which terraform version?",
            "--format",
            "json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("Terraform 1.7"), "{text}");
}

#[test]
fn bad_input_gets_clear_errors() {
    let env = Env::new();
    let cases: [(&[u8], &[&str], &str); 7] = [
        (b"not json", &["--budget", "100"], "malformed_json"),
        (b"[]", &["--budget", "100"], "conversation_empty"),
        (
            b"{\"msgs\": []}",
            &["--budget", "100"],
            "invalid_conversation",
        ),
        (
            b"[{\"role\": \"wizard\", \"content\": \"x\"}]",
            &["--budget", "100"],
            "unknown_role",
        ),
        (
            b"[{\"role\": \"user\", \"content\": \"\xff\xfe\"}]",
            &["--budget", "100"],
            "invalid_utf8",
        ),
        (
            b"[{\"role\": \"user\", \"content\": 3}]",
            &["--budget", "100"],
            "malformed_message",
        ),
        (
            b"[{\"role\": \"user\", \"content\": \"hi\"}]",
            &["--budget", "0"],
            "budget_zero",
        ),
    ];
    for (input, args, code) in cases {
        let mut a = args.to_vec();
        a.extend(["--format", "json"]);
        let out = compact_stdin(&env, input, &a);
        assert_eq!(out.status.code(), Some(2), "{code}: {}", stdout(&out));
        assert_eq!(json(&out)["error"]["code"], code);
    }
    // The protected part does not fit: the error says how much is needed.
    let big = json!([{"role": "user", "content": "word ".repeat(500)}]);
    let out = compact_stdin(
        &env,
        &serde_json::to_vec(&big).unwrap(),
        &["--budget", "50"],
    );
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(e.contains("needs") && e.contains("at least"), "{e}");
    // No budget and no model: the default budget every command takes, with its warning.
    let out = compact_stdin(&env, b"[{\"role\":\"user\",\"content\":\"x\"}]", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no budget given: 16000 tokens, the default"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_openai_compatible_model_can_summarize() {
    let env = Env::new();
    let (url, seen) = fake_model_server();
    let input = serde_json::to_vec(&long_chat()).unwrap();
    let out = compact_stdin(
        &env,
        &input,
        &[
            "--budget",
            "3000",
            "--llm-url",
            &url,
            "--llm-model",
            "tiny",
            "--format",
            "json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("[summarized] MODEL-SUMMARY"), "{text}");
    let conv = parse(&text).unwrap();
    let tok = TokenizerSpec::Exact(Encoding::O200kBase);
    assert!(conversation_tokens(&tok, &conv.messages) <= 3000);
    let requests = seen.lock().unwrap().clone();
    assert!(!requests.is_empty());
    assert!(requests.iter().all(|r| r.contains("\"model\":\"tiny\"")));
    assert!(
        requests.iter().all(|r| !r.contains("AKIAIOSFODNN7EXAMPLE")),
        "the model must not see secrets"
    );
    // A dead endpoint falls back to extractive summaries with a warning.
    let out = compact_stdin(
        &env,
        &input,
        &[
            "--budget",
            "3000",
            "--llm-url",
            "http://127.0.0.1:9/v1",
            "--llm-model",
            "x",
            "--no-cache",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("using extractive summaries"));
    assert!(stdout(&out).contains("[summarized]"));
}
