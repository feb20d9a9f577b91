//! A planted corpus with one secret of every rule (`ctxgate_core::secrets::planted_samples`),
//! run through the real binary: none of them is stored in the data directory (segments, pack,
//! summaries, SQLite), printed by `assemble` in any form or compression level, logged at the
//! most verbose level, or carried by a compacted conversation.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use common::{Env, stderr, stdout};
use ctxgate_core::secrets::planted_samples;
use serde_json::json;

/// A distinctive part of each planted secret: the last 10 characters of its longest
/// alphanumeric run (what a leak, even a partial one, would show).
fn fragments() -> Vec<(String, String)> {
    planted_samples()
        .into_iter()
        .map(|(label, _, secret)| {
            let run = secret
                .split(|c: char| !c.is_ascii_alphanumeric())
                .max_by_key(|r| r.len())
                .unwrap_or(&secret)
                .to_string();
            (
                label.to_string(),
                run[run.len().saturating_sub(10)..].to_string(),
            )
        })
        .collect()
}

fn assert_clean(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    for (label, fragment) in fragments() {
        assert!(
            !text.contains(&fragment),
            "{what} leaks the planted {label} ({fragment})"
        );
    }
}

/// The planted lines spread over files of the kinds secrets are committed in.
fn plant(env: &Env) {
    let samples = planted_samples();
    let files = [
        "config/app.env",
        "config/deploy.yaml",
        "src/clients.py",
        "src/keys.ts",
        "docs/SETUP.md",
    ];
    let mut contents = vec![String::new(); files.len()];
    for (i, (label, line, _)) in samples.iter().enumerate() {
        let body = &mut contents[i % files.len()];
        body.push_str(&format!(
            "# {label} credentials for the billing service\n{line}\n\n"
        ));
    }
    for (file, body) in files.iter().zip(contents) {
        env.write(file, body);
    }
    // A service-account file, as cloud consoles hand them out: the key inside JSON with
    // escaped line breaks.
    let pem = &samples
        .iter()
        .find(|s| s.0 == "private_key")
        .expect("a private key sample")
        .2;
    env.write(
        "config/service-account.json",
        format!(
            "{{\n  \"type\": \"service_account\",\n  \"project_id\": \"billing-prod\",\n  \"private_key\": \"{pem}\",\n  \"client_email\": \"billing@billing-prod.iam.gserviceaccount.com\"\n}}\n"
        ),
    );
    env.write(
        "src/billing.py",
        "def charge(customer, amount):\n    \"\"\"Charges a customer through the payment provider.\"\"\"\n    return provider.charge(customer, amount)\n",
    );
}

fn every_file(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            every_file(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn planted_secrets_leak_nowhere() {
    let env = Env::new();
    plant(&env);
    let repo = env.repo_arg();

    // Indexing, with every log line.
    let out = env.run(&["-vvv", "index", &repo, "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_clean("the index report", &out.stdout);
    assert_clean("the indexer's logs", &out.stderr);

    // Every byte the data directory holds.
    let mut files = Vec::new();
    every_file(env.home.path(), &mut files);
    assert!(
        files
            .iter()
            .any(|f| f.extension().is_some_and(|e| e == "seg"))
    );
    for f in &files {
        assert_clean(&f.display().to_string(), &std::fs::read(f).unwrap());
    }

    // Every form `assemble` can print: the whole repository fits this budget, so every planted
    // line is in the answer, redacted.
    let query = "which credentials and api keys does the billing service use";
    for compression in ["none", "light", "medium", "aggressive"] {
        for format in ["json", "text"] {
            let out = env.assemble(&[
                "-vv",
                "--query",
                query,
                "--budget",
                "60000",
                "--compression",
                compression,
                "--format",
                format,
            ]);
            assert!(out.status.success(), "{}", stderr(&out));
            let what = format!("assemble --compression {compression} --format {format}");
            assert_clean(&what, &out.stdout);
            assert_clean(&format!("{what} logs"), &out.stderr);
            if compression == "none" {
                // Every planted line was indexed (none skipped) and shows redacted.
                for (label, _, _) in planted_samples() {
                    assert!(
                        stdout(&out).contains(&format!("[REDACTED:{label}]")),
                        "{what} lacks the redacted {label}: {}",
                        stdout(&out)
                    );
                }
            }
        }
    }
    // The summaries alone (a budget that holds little more than them).
    let out = env.assemble(&["--query", query, "--budget", "1200", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_clean("a small-budget answer", &out.stdout);

    // A conversation that pasted them long ago, compacted.
    let mut messages = vec![json!({"role": "system", "content": "You help with billing."})];
    for (label, line, _) in planted_samples() {
        messages.push(json!({"role": "user", "content": format!("Here is our {label}: {line}")}));
        messages.push(json!({"role": "assistant", "content": "Thanks, I will use it for the billing integration."}));
    }
    for i in 0..40 {
        messages.push(json!({"role": "user", "content": format!("Question {i}: how do retries work for invoice {i}? {}", "The gateway times out under load. ".repeat(3))}));
        messages.push(json!({"role": "assistant", "content": format!("Answer {i}: back off exponentially. {}", "Keep the operation idempotent. ".repeat(3))}));
    }
    let chat = json!({ "messages": messages }).to_string();
    let mut child = env
        .cmd()
        .args(["-vv", "compact", "--budget", "3000", "--format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(chat.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_clean("the compacted conversation", &out.stdout);
    assert_clean("compaction's logs", &out.stderr);
}
