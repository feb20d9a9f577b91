//! The planted corpus (`ctxgate_core::secrets::planted_corpus`: every rule family in at least
//! two file types, among ordinary lines that only name a secret) served by a host: no planted
//! value in any answer, in the host's logs or in the bytes it stores, and every ordinary line
//! intact in the prompt wherever its file is shown whole.

use std::path::Path;

use ctxgate_core::secrets::{PlantedFile, planted_corpus, planted_fragment};
use serde_json::{Value, json};

use super::host::{Host, org_with_key, post};

/// Questions that name the secrets' words, so the planted lines rank first.
const QUERIES: &[&str] = &[
    "where is the database password set",
    "which api keys and secret tokens does the billing service use",
    "oauth client secret and passwd for the database connection",
    "aws secret access key credentials setup",
    "private key of the tls server and the bearer token for charges",
];

/// Writes the corpus into `dir`.
pub fn write_corpus(dir: &Path) {
    for f in planted_corpus() {
        let path = dir.join(f.path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, &f.text).unwrap();
    }
}

/// Panics when `text` holds a fragment of any planted secret.
pub fn assert_clean(what: &str, text: &str) {
    for f in planted_corpus() {
        for (family, label, secret) in &f.secrets {
            let fragment = planted_fragment(secret);
            assert!(
                !text.contains(fragment),
                "{what} leaks the planted {family} ({label}, {fragment}) of {}",
                f.path
            );
        }
    }
}

/// Every file under `dir`, read whole, checked by [`assert_clean`].
pub fn assert_dir_clean(what: &str, dir: &Path) -> usize {
    let mut seen = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                assert_clean(
                    &format!("{what}: {}", p.display()),
                    &String::from_utf8_lossy(&bytes),
                );
                seen += 1;
            }
        }
    }
    seen
}

/// The 1-based line numbers of `f`'s ordinary lines.
fn ordinary_line_numbers(f: &PlantedFile) -> Vec<(u64, &'static str)> {
    f.ordinary
        .iter()
        .map(|line| {
            let n = f
                .text
                .lines()
                .position(|l| l == *line)
                .unwrap_or_else(|| panic!("{line} not in {}", f.path));
            (n as u64 + 1, *line)
        })
        .collect()
}

/// Publishes the corpus as project `planted` of a new org and asks it every question; returns
/// after checking every answer. `logs` reads what the host logged so far.
pub fn run(host: &dyn Host, tag: &str, logs: &dyn Fn() -> String) {
    let org = format!("planted{tag}");
    let key = org_with_key(host, &org, json!({}));
    let repo = tempfile::Builder::new()
        .prefix("ctxgate-planted-")
        .tempdir()
        .unwrap();
    write_corpus(repo.path());
    let project = host.publish(&org, "planted", repo.path());
    let id = project["id"].as_str().unwrap().to_string();
    assert_clean("the published project", &project.to_string());

    let corpus = planted_corpus();
    let mut checked = std::collections::BTreeSet::new();
    let mut shown = std::collections::BTreeSet::new();
    for query in QUERIES {
        for (budget, compression) in [(60_000, "none"), (60_000, "light"), (1_500, "none")] {
            let body = json!({
                "project": id, "query": query, "budget": budget, "compression": compression,
            });
            let r = post(host, "/v1/context", Some(&key), &body);
            assert_eq!(r.status, 200, "{}", r.body);
            let what = format!("/v1/context {query:?} at {budget} ({compression})");
            assert_clean(&what, &r.body.to_string());
            if compression == "none" {
                check_ordinary_lines(&what, &r.body, &corpus, &mut checked, &mut shown);
            }
        }
        let r = post(
            host,
            "/v1/search",
            Some(&key),
            &json!({ "project": id, "query": query, "page_tokens": 4000 }),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        assert_clean(&format!("/v1/search {query:?}"), &r.body.to_string());
    }
    // At a budget that holds the corpus, every file is shown whole, so every ordinary line was
    // checked.
    for f in &corpus {
        assert!(shown.contains(f.path), "{} never shown in full", f.path);
        for (_, line) in ordinary_line_numbers(f) {
            assert!(checked.contains(line), "{line} of {} never checked", f.path);
        }
    }
    let logged = logs();
    assert!(!logged.is_empty(), "the host logged nothing to check");
    assert_clean("the host's logs", &logged);
}

/// Every ordinary line inside a piece shown whole (`form: full`) is in the prompt, unchanged;
/// a piece that is a whole file shows each of its planted values as its label.
fn check_ordinary_lines(
    what: &str,
    body: &Value,
    corpus: &[PlantedFile],
    checked: &mut std::collections::BTreeSet<&'static str>,
    shown: &mut std::collections::BTreeSet<&'static str>,
) {
    let prompt = body["prompt"].as_str().unwrap();
    for p in body["pieces"].as_array().unwrap() {
        if p["form"] != "full" {
            continue;
        }
        let Some(f) = corpus.iter().find(|f| p["path"] == f.path) else {
            continue;
        };
        let (start, end) = (
            p["start_line"].as_u64().unwrap(),
            p["end_line"].as_u64().unwrap(),
        );
        shown.insert(f.path);
        if start == 1 && end as usize >= f.text.lines().count() {
            for (_, label, _) in &f.secrets {
                let redacted = format!("[REDACTED:{label}]");
                assert!(
                    prompt.contains(&redacted),
                    "{what}: {} lacks {redacted}",
                    f.path
                );
            }
        }
        for (n, line) in ordinary_line_numbers(f) {
            if (start..=end).contains(&n) {
                assert!(
                    prompt.lines().any(|l| l.ends_with(line)),
                    "{what}: the ordinary line {line:?} of {} is not intact in the prompt:\n{prompt}",
                    f.path
                );
                checked.insert(line);
            }
        }
    }
}
