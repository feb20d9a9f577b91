//! `ctxgate assemble` end to end through the real binary on the embedded store.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{Env, json, snapshot, stderr, stdout};
use ctxgate_core::catalog::Catalog;
use ctxgate_core::tokens::Encoding;

#[test]
fn json_pieces_carry_full_provenance_and_respect_the_budget() {
    let env = Env::new();
    env.sample();
    let out = env.assemble(&[
        "--query",
        "where is the config parsed? parse_config",
        "--budget",
        "200",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    for field in [
        "pieces",
        "tokens_total",
        "budget",
        "model",
        "tokenizer",
        "prompt",
        "warnings",
    ] {
        assert!(v.get(field).is_some(), "missing {field}: {v}");
    }
    assert_eq!(v["budget"], 200);
    assert_eq!(v["tokenizer"], "o200k_base");
    let prompt = v["prompt"].as_str().unwrap();
    let recount = Encoding::O200kBase.count(prompt);
    assert_eq!(u64::from(recount), v["tokens_total"].as_u64().unwrap());
    assert!(recount <= 200);
    let pieces = v["pieces"].as_array().unwrap();
    assert!(!pieces.is_empty());
    assert!(pieces.iter().any(|p| p["path"] == "src/config.rs"), "{v}");
    for p in pieces {
        let path = p["path"].as_str().unwrap();
        assert!(
            !path.starts_with('/'),
            "paths are relative to the repo root"
        );
        let file = std::fs::read_to_string(env.repo().join(path)).unwrap();
        let (bs, be) = (
            p["byte_start"].as_u64().unwrap() as usize,
            p["byte_end"].as_u64().unwrap() as usize,
        );
        let (sl, el) = (
            p["start_line"].as_u64().unwrap() as usize,
            p["end_line"].as_u64().unwrap() as usize,
        );
        let text = &file[bs..be];
        let lines: Vec<&str> = file.lines().collect();
        assert_eq!(
            text.trim_end_matches('\n'),
            lines[sl - 1..el].join("\n"),
            "lines are 1-based inclusive"
        );
        assert!(
            prompt.contains(text.trim_end()),
            "the piece is in the prompt verbatim"
        );
        assert_eq!(
            p["sha256"].as_str().unwrap(),
            ctxgate_core::hash::Sha256Digest::of(text.as_bytes()).to_hex()
        );
        assert_eq!(
            p["tokens"].as_u64().unwrap(),
            u64::from(Encoding::O200kBase.count(text))
        );
        assert_eq!(p["chunk_id"].as_str().unwrap().len(), 24);
        assert!(p["score"].as_f64().unwrap() >= 0.0);
        assert!(
            prompt.contains(&format!("{path}:{sl}-{el}")),
            "provenance header"
        );
    }
}

#[test]
fn model_sets_tokenizer_and_budget_and_text_mode_prints_analysis() {
    let env = Env::new();
    env.sample();
    let out = env.assemble(&["--query", "render page", "--model", "gpt-4o"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let analysis = stderr(&out);
    assert!(analysis.contains("ctxgate budget analysis"), "{analysis}");
    assert!(analysis.contains("gpt-4o"));
    assert!(analysis.contains("usable 96,000"), "{analysis}");
    assert!(stdout(&out).contains("render_page"));

    let catalog = Catalog::builtin();
    let estimated = catalog
        .models()
        .iter()
        .find(|m| !m.tokenizer.is_exact())
        .unwrap();
    let out = env.assemble(&[
        "--query",
        "render page",
        "--model",
        &estimated.id,
        "--budget",
        "90",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["exact"], false);
    assert!(v["warnings"].to_string().contains("estimate"));
    let count = estimated.tokenizer.count(v["prompt"].as_str().unwrap());
    assert!(count <= 90);
    assert_eq!(u64::from(count), v["tokens_total"].as_u64().unwrap());
}

#[test]
fn whole_repo_goes_in_when_it_fits_and_no_match_passes_the_query_through() {
    let env = Env::new();
    env.sample();
    let out = env.assemble(&["--query", "config", "--budget", "50000", "--format", "json"]);
    let v = json(&out);
    assert!(v["pieces"].as_array().unwrap().len() >= 5, "{v}");
    let out = env.assemble(&["--query", "zzqx", "--budget", "500", "--format", "json"]);
    assert!(out.status.success());
    let v = json(&out);
    assert!(v["pieces"].as_array().unwrap().is_empty());
    assert!(v["warnings"].to_string().contains("no relevant code"));
    assert!(v["prompt"].as_str().unwrap().contains("zzqx"));
}

#[test]
fn bad_input_gets_a_clear_error_and_exit_code_2() {
    let env = Env::new();
    env.sample();
    let repo = env.repo_arg();
    let empty = tempfile::tempdir().unwrap();
    let empty_arg = empty.path().to_string_lossy().into_owned();
    let missing_file = env.home.path().join("nope.txt");
    let long_query = "word ".repeat(300);
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec![
                "--repo",
                "/definitely/not/here",
                "--query",
                "x",
                "--budget",
                "10",
            ],
            "repo_not_found",
            "does not exist",
        ),
        (
            vec!["--repo", &empty_arg, "--query", "x", "--budget", "10"],
            "repo_empty",
            "no text files",
        ),
        (
            vec!["--repo", &repo, "--query", "x", "--budget", "0"],
            "budget_zero",
            "at least 1",
        ),
        (
            vec![
                "--repo", &repo, "--query", "x", "--model", "gpt-4o", "--budget", "999999",
            ],
            "budget_exceeds_window",
            "128000",
        ),
        (
            vec!["--repo", &repo, "--query", "x", "--model", "gpt-4oo"],
            "unknown_model",
            "did you mean",
        ),
        (
            vec![
                "--repo",
                &repo,
                "--query-file",
                missing_file.to_str().unwrap(),
                "--budget",
                "10",
            ],
            "query_file_unreadable",
            "nope.txt",
        ),
        (
            vec!["--repo", &repo, "--query", "   ", "--budget", "10"],
            "query_empty",
            "empty",
        ),
        (
            vec!["--repo", &repo, "--query", &long_query, "--budget", "100"],
            "query_too_large",
            "raise the budget",
        ),
    ];
    for (args, code, needle) in cases {
        let mut full = vec!["assemble"];
        full.extend(&args);
        let out = env.run(&full);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
        full.extend(["--format", "json"]);
        let out = env.run(&full);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(json(&out)["error"]["code"], code, "{args:?}");
    }
    // A file given as the repository.
    let out = env.run(&[
        "assemble",
        "--repo",
        &format!("{repo}/README.md"),
        "--query",
        "x",
        "--budget",
        "10",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("not a directory"));
}

#[test]
fn no_budget_gets_the_default_and_a_tiny_budget_is_refused() {
    let env = Env::new();
    env.sample();
    let repo = env.repo_arg();
    // Neither budget nor model: the default every host gives, with its warning.
    let out = env.run(&["assemble", "--repo", &repo, "--query", "config"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no budget given: 16000 tokens, the default"),
        "{}",
        stderr(&out)
    );
    let out = env.assemble(&["--query", "config", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["budget"], 16_000, "{v}");
    assert!(v["tokens_total"].as_u64().unwrap() <= 16_000);
    assert!(!v["pieces"].as_array().unwrap().is_empty(), "{v}");
    assert!(
        v["warnings"]
            .to_string()
            .contains("no budget given: 16000 tokens, the default"),
        "{v}"
    );
    // Too small for any code: refused, naming the smallest useful budget.
    let out = env.run(&["assemble", "--repo", &repo, "--query", "x", "--budget", "8"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the smallest useful budget is 64 tokens"),
        "{}",
        stderr(&out)
    );
    let out = env.assemble(&["--query", "x", "--budget", "8", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json(&out)["error"]["code"], "budget_too_small");
    // The smallest useful budget answers.
    let out = env.assemble(&["--query", "config", "--budget", "64", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(json(&out)["tokens_total"].as_u64().unwrap() <= 64);
}

#[test]
fn never_writes_inside_the_repository() {
    let env = Env::new();
    env.sample();
    let before = snapshot(env.repo());
    for _ in 0..2 {
        let out = env.assemble(&["--query", "config", "--budget", "300"]);
        assert!(out.status.success());
    }
    assert_eq!(before, snapshot(env.repo()));
    // A data directory inside the repository is refused.
    let out = env
        .cmd()
        .env("CTXGATE_HOME", env.repo().join(".ctxgate"))
        .args(["index", &env.repo_arg()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("never writes inside"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn concurrent_assembles_both_succeed() {
    let env = Env::new();
    env.sample();
    for i in 0..40 {
        env.write(
            &format!("gen/mod{i}.rs"),
            format!("pub fn handler_{i}(x: u32) -> u32 {{ x + {i} }}\n"),
        );
    }
    let spawn = || {
        env.cmd()
            .args([
                "assemble",
                "--repo",
                &env.repo_arg(),
                "--query",
                "handler",
                "--budget",
                "400",
                "--format",
                "json",
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children: Vec<_> = (0..4).map(|_| spawn()).collect();
    let outs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let mut versions = Vec::new();
    for o in &outs {
        assert!(
            o.status.success(),
            "{:?}: {} {}",
            o.status,
            stderr(o),
            stdout(o)
        );
        let v = json(o);
        assert!(v["tokens_total"].as_u64().unwrap() <= 400);

        versions.push(v["pieces"].as_array().unwrap().len());
    }
    let out = env.run(&["index", &env.repo_arg(), "--format", "json"]);
    let v = json(&out);
    assert_eq!(
        v["version"], 1,
        "one version: the losers reused the winner's"
    );
    assert_eq!(v["status"], "up_to_date");
}

#[test]
fn response_explains_intent_and_each_piece() {
    let env = Env::new();
    env.sample();
    let out = env.assemble(&[
        "--query",
        "fix: the title is not escaped in render.rs, see `render_page` and Server.start",
        "--budget",
        "2000",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["intent"]["intent"], "bug_fix");
    assert_eq!(v["intent"]["entities"]["paths"][0], "render.rs");
    assert!(
        v["intent"]["entities"]["symbols"]
            .to_string()
            .contains("render_page")
    );
    let pieces = v["pieces"].as_array().unwrap();
    let render = pieces
        .iter()
        .find(|p| p["path"] == "src/render.rs")
        .expect("the mentioned file");
    assert_eq!(render["reasoning"]["mention"], 1.0);
    assert_eq!(render["reasoning"]["symbol"], 1.0);
    for p in pieces {
        let r = &p["reasoning"];
        for signal in ["lexical", "file", "symbol", "mention"] {
            assert!(r[signal].as_f64().is_some(), "{signal} missing in {p}");
        }
    }
}

#[test]
fn a_named_symbol_reaches_its_users_not_only_its_definition() {
    let env = Env::new();
    env.sample();
    // A caller in another file that shares no word with the request but the symbol's name; a
    // comment that only mentions it is not a use.
    env.write(
        "src/startup.rs",
        "pub fn boot(dir: &std::path::Path) -> usize {\n    let cfg = crate::config::parse_config(dir);\n    cfg.text.len()\n}\n",
    );
    env.write(
        "src/notes.rs",
        "// parse_config used to live here\npub fn unrelated() -> u8 {\n    7\n}\n",
    );
    let out = env.assemble(&[
        "--query",
        "fix `parse_config` returning an empty Config",
        "--budget",
        "2000",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let pieces = v["pieces"].as_array().unwrap();
    let caller = pieces
        .iter()
        .find(|p| p["path"] == "src/startup.rs")
        .unwrap_or_else(|| panic!("the caller is selected: {v}"));
    assert_eq!(caller["reasoning"]["reference"], 1.0, "{caller}");
    let definition = pieces
        .iter()
        .find(|p| p["path"] == "src/config.rs" && p["reasoning"]["symbol"] == 1.0)
        .unwrap_or_else(|| panic!("the definition: {v}"));
    assert_eq!(definition["reasoning"]["symbol"], 1.0);
    assert_eq!(
        definition["reasoning"]["reference"], 0.0,
        "a definition is not its own user"
    );
    if let Some(note) = pieces.iter().find(|p| p["path"] == "src/notes.rs") {
        assert_eq!(
            note["reasoning"]["reference"], 0.0,
            "a comment is not a use: {note}"
        );
    }
}

#[test]
fn a_definition_too_large_for_the_room_left_goes_in_as_its_signature() {
    let env = Env::new();
    // One relevant function far larger than the budget, one small one that fits.
    let mut big = String::from(
        "/// Rebuilds the whole ledger from the journal.\npub fn rebuild_ledger(journal: &[Entry]) -> Ledger {\n    let mut ledger = Ledger::default();\n",
    );
    for i in 0..400 {
        big.push_str(&format!(
            "    ledger.apply(&journal[{i} % journal.len()], {i});\n"
        ));
    }
    big.push_str("    ledger\n}\n");
    env.write("src/ledger.rs", &big);
    env.write(
        "src/journal.rs",
        "/// Appends an entry to the ledger journal.\npub fn append_journal(ledger: &mut Vec<u8>) {\n    ledger.push(1);\n}\n",
    );
    // Off by default (they would take the summaries' room); on for this request.
    let out = env
        .cmd()
        .env("CTXGATE_RANK_WEIGHTS", "alternatives=16")
        .args(["assemble", "--repo", &env.repo_arg()])
        .args([
            "--query",
            "rebuild the ledger from the journal",
            "--budget",
            "1500",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert!(v["tokens_total"].as_u64().unwrap() <= 1500);
    let pieces = v["pieces"].as_array().unwrap();
    let sig = pieces
        .iter()
        .find(|p| p["path"] == "src/ledger.rs" && p["form"] == "signature")
        .unwrap_or_else(|| panic!("the large definition's signature: {v}"));
    // The doc comment and the declaration: lines 1-2 of the split function's first part.
    assert_eq!(
        (sig["start_line"].as_u64(), sig["end_line"].as_u64()),
        (Some(1), Some(2))
    );
    assert!(
        v["prompt"]
            .as_str()
            .unwrap()
            .contains("pub fn rebuild_ledger")
    );
    // Later parts of a split definition are bodies, never offered as "signatures".
    assert_eq!(
        pieces.iter().filter(|p| p["form"] == "signature").count(),
        1,
        "{v}"
    );
    assert!(pieces.iter().any(|p| p["path"] == "src/journal.rs"));
}

#[test]
fn encodings_not_counted_at_index_time_are_counted_on_the_fly() {
    let env = Env::new();
    env.sample();
    // davinci uses r50k_base, which the index does not carry counts for.
    let out = env.assemble(&[
        "--query",
        "parse config render",
        "--model",
        "davinci",
        "--budget",
        "150",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["tokenizer"], "r50k_base");
    let recount = Encoding::R50kBase.count(v["prompt"].as_str().unwrap());
    assert!(recount <= 150);
    assert_eq!(u64::from(recount), v["tokens_total"].as_u64().unwrap());
    for p in v["pieces"].as_array().unwrap() {
        let path = p["path"].as_str().unwrap();
        let file = std::fs::read_to_string(env.repo().join(path)).unwrap();
        let text = &file
            [p["byte_start"].as_u64().unwrap() as usize..p["byte_end"].as_u64().unwrap() as usize];
        assert_eq!(
            p["tokens"].as_u64().unwrap(),
            u64::from(Encoding::R50kBase.count(text))
        );
    }
}

#[test]
fn small_budgets_get_signatures_with_exact_provenance() {
    let env = Env::new();
    env.sample();
    let mut body =
        String::from("/// Loads everything.\npub fn load_everything(path: &str) -> usize {\n");
    for i in 0..60 {
        body.push_str(&format!("    let step_{i} = path.len() + {i};\n"));
    }
    body.push_str("    0\n}\n");
    env.write("src/load.rs", &body);
    let out = env.assemble(&[
        "--query",
        "load everything from a path",
        "--budget",
        "300",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert!(
        v["analysis"]["strategy"]
            .as_str()
            .unwrap()
            .starts_with("signatures only"),
        "{v}"
    );
    let pieces = v["pieces"].as_array().unwrap();
    let load = pieces
        .iter()
        .find(|p| p["path"] == "src/load.rs")
        .expect("the loader's signature");
    assert_eq!(load["form"], "signature");
    assert_eq!(
        (load["start_line"].as_u64(), load["end_line"].as_u64()),
        (Some(1), Some(2))
    );
    let file = std::fs::read_to_string(env.repo().join("src/load.rs")).unwrap();
    let text = &file[load["byte_start"].as_u64().unwrap() as usize
        ..load["byte_end"].as_u64().unwrap() as usize];
    assert_eq!(
        text,
        "/// Loads everything.\npub fn load_everything(path: &str) -> usize {\n"
    );
    assert_eq!(
        load["sha256"].as_str().unwrap(),
        ctxgate_core::hash::Sha256Digest::of(text.as_bytes()).to_hex()
    );
    assert!(v["tokens_total"].as_u64().unwrap() <= 300);
    assert!(!v["prompt"].as_str().unwrap().contains("step_30"));
}

/// A Python repository with functions whose bodies are worth eliding; returns the line of
/// `value = data.get(key)` in `load_record_6` of `app/store.py`.
fn python_repo(env: &Env) -> u64 {
    let mut store = String::from(
        "\"\"\"Storage.\"\"\"\n\nimport json\nimport logging\n\nlogger = logging.getLogger(__name__)\n\n",
    );
    let mut framed = 0;
    for i in 0..12 {
        if i == 6 {
            framed = store.lines().count() as u64 + 6;
        }
        store.push_str(&format!(
            "def load_record_{i}(path, key):\n    \"\"\"Loads record {i} of the database file.\"\"\"\n    logger.debug(\"loading record %s from %s\", key, path)\n    with open(path) as f:\n        data = json.load(f)\n    value = data.get(key)\n    if value is None:\n        raise KeyError(f\"missing record {{key}}\")\n    cleaned = str(value).strip()\n    if not cleaned:\n        raise ValueError(f\"record {{key}} is empty in {{path}}\")\n    checked = cleaned.lower().replace(\"\\t\", \" \")\n    logger.debug(\"record %s has %d characters\", key, len(checked))\n    return checked\n\n"
        ));
    }
    env.write("app/store.py", store);
    env.write(
        "app/views.py",
        "from app.store import load_record_3\n\n\ndef show(request):\n    key = request.args['key']\n    record = load_record_3('db.json', key)\n    page = '<p>' + record + '</p>'\n    return page\n",
    );
    env.write("README.md", "# App\n\nStores records.\n");
    framed
}

#[test]
fn medium_elides_lower_value_bodies_and_reports_savings() {
    let env = Env::new();
    python_repo(&env);
    let out = env.assemble(&[
        "--query",
        "how is load_record_3 used to show a record",
        "--model",
        "gpt-4o",
        "--budget",
        "3000",
        "--compression",
        "medium",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let prompt = v["prompt"].as_str().unwrap();
    assert_eq!(
        u64::from(Encoding::O200kBase.count(prompt)),
        v["tokens_total"].as_u64().unwrap()
    );
    assert!(v["tokens_total"].as_u64().unwrap() <= 3000);
    let pieces = v["pieces"].as_array().unwrap();
    let medium: Vec<_> = pieces.iter().filter(|p| p["form"] == "medium").collect();
    assert!(!medium.is_empty(), "{v}");
    for p in &medium {
        assert!(p["original_tokens"].as_u64() > p["tokens"].as_u64());
        assert!(p["elided_lines"].as_u64().unwrap() >= 2);
    }
    assert!(prompt.contains("    # … "), "a Python elision marker");
    assert!(prompt.contains("medium: function bodies elided"));
    // The named function keeps its body.
    let named = pieces
        .iter()
        .find(|p| p["symbol"] == "load_record_3")
        .expect("the named function is in");
    assert_ne!(named["form"], "medium");
    assert!(prompt.contains("raise KeyError(f\"missing record {key}\")"));
    let saved: u64 = pieces
        .iter()
        .filter_map(|p| Some(p["original_tokens"].as_u64()? - p["tokens"].as_u64()?))
        .sum();
    assert_eq!(
        v["savings"]["compression_tokens_saved"].as_u64(),
        Some(saved)
    );
    let price = Catalog::builtin()
        .get("gpt-4o")
        .unwrap()
        .input_price_per_mtok;
    let usd = v["savings"]["compression_usd_saved"].as_f64().unwrap();
    assert!((usd - saved as f64 * price / 1e6).abs() < 1e-12, "{usd}");
    assert_eq!(v["savings"]["priced_with"], "gpt-4o");
}

#[test]
fn plan_is_small_and_repair_brings_the_error_and_the_framed_code() {
    let env = Env::new();
    let framed = python_repo(&env);
    let out = env.assemble(&[
        "--query",
        "records",
        "--budget",
        "20000",
        "--profile",
        "plan",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert!(v["tokens_total"].as_u64().unwrap() <= 2000);
    assert!(v["pieces"].as_array().unwrap().len() <= 5);
    assert_eq!(v["profile"]["name"], "plan");
    assert_eq!(v["profile"]["budget"], 2000);
    let head = v["profile"]["project_summary"]
        .as_str()
        .expect("the project summary");
    assert!(v["prompt"].as_str().unwrap().contains(head.trim_end()));

    let dir = tempfile::tempdir().unwrap();
    let err = dir.path().join("err.txt");
    std::fs::write(
        &err,
        format!("Traceback (most recent call last):\n  File \"/srv/deploy/app/views.py\", line 6, in show\n  File \"/srv/deploy/app/store.py\", line {framed}, in load_record_6\nKeyError: 'missing record 42'\n"),
    )
    .unwrap();
    let err_arg = err.to_str().unwrap();
    let out = env.assemble(&[
        "--query",
        "fix this",
        "--budget",
        "1500",
        "--error-file",
        err_arg,
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["profile"]["name"], "repair");
    assert_eq!(v["profile"]["frame_pieces"], 2, "{}", v["profile"]);
    let prompt = v["prompt"].as_str().unwrap();
    assert!(prompt.contains("## Error output\n\n```\nTraceback"));
    assert!(v["tokens_total"].as_u64().unwrap() <= 1500);
    let pieces = v["pieces"].as_array().unwrap();
    for (path, line) in [("app/store.py", framed), ("app/views.py", 6)] {
        assert!(
            pieces.iter().any(|p| p["path"] == path
                && p["start_line"].as_u64().unwrap() <= line
                && line <= p["end_line"].as_u64().unwrap()),
            "{path}:{line} is not covered: {v}"
        );
    }
    assert!(pieces.len() <= 2 + 5);

    // Refusals with machine-readable codes.
    for (args, code) in [
        (vec!["--profile", "repair"], "error_output_missing"),
        (
            vec!["--profile", "plan", "--error-file", err_arg],
            "error_output_unused",
        ),
        (
            vec!["--error-file", "/nonexistent/err.txt"],
            "error_file_unreadable",
        ),
    ] {
        let mut all = vec!["--query", "q", "--budget", "500", "--format", "json"];
        all.extend(args);
        let out = env.assemble(&all);
        assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
        assert_eq!(json(&out)["error"]["code"], code);
    }
}

#[test]
fn pieces_that_continue_each_other_are_quoted_as_one_stretch() {
    let env = Env::new();
    // Three functions large enough to be chunks of their own, one empty line apart.
    let body = |name: &str| {
        let lines: String = (0..30)
            .map(|i| format!("    let {name}_{i} = ledger_total({i});\n"))
            .collect();
        format!("/// Ledger step `{name}`.\npub fn {name}() {{\n{lines}}}\n")
    };
    let file = format!(
        "{}\n{}\n{}",
        body("ledger_open"),
        body("ledger_post"),
        body("ledger_close")
    );
    env.write("src/ledger.rs", &file);
    let out = env.assemble(&[
        "--query",
        "ledger_total ledger_open ledger_post ledger_close",
        "--budget",
        "4000",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let pieces = v["pieces"].as_array().unwrap();
    assert_eq!(pieces.len(), 3, "{v}");
    assert!(pieces.iter().all(|p| p["block"] == 0), "one block: {v}");
    let prompt = v["prompt"].as_str().unwrap();
    let last = file.lines().count();
    let header = format!("### src/ledger.rs:1-{last}\n");
    assert!(prompt.contains(&header), "{header}\n{prompt}");
    // The stretch is the file itself, verbatim, in one fence.
    assert!(
        prompt.contains(&format!("```rust\n{file}```\n")),
        "{prompt}"
    );
    assert_eq!(
        u64::from(Encoding::O200kBase.count(prompt)),
        v["tokens_total"].as_u64().unwrap()
    );
}

/// Chunks keep the blank lines up to the next chunk, so the pieces cite every line of a file
/// the prompt quotes; lines the secrets redaction blanked are never cited.
#[test]
fn pieces_cite_blank_lines_between_definitions_but_never_a_redacted_key() {
    let env = Env::new();
    let key_body: String = (0..6)
        .map(|i| format!("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIB{i}\n"))
        .collect();
    // Definitions large enough to be chunks of their own (small ones are merged).
    let doc =
        "    \"\"\"Talks to the payment provider; retried by the caller. \"\"\"\n    note = 1\n"
            .repeat(8);
    let def = |name: &str| {
        format!(
            "def {name}(customer, amount):\n{doc}    return provider.{name}(customer, amount)\n"
        )
    };
    let source = format!(
        "{}\n\n{}-----BEGIN RSA PRIVATE KEY-----\n{key_body}-----END RSA PRIVATE KEY-----\n\n{}",
        def("charge"),
        def("refund"),
        def("void")
    );
    let lines_of =
        |upto: &str| source[..source.find(upto).unwrap()].matches('\n').count() as u64 + 1;
    let (refund, key, void) = (
        lines_of("def refund"),
        lines_of("-----BEGIN"),
        lines_of("def void"),
    );
    assert!(refund > 3 && key > refund, "the layout this test relies on");
    env.write("src/billing.py", &source);
    let out = env.assemble(&[
        "--query",
        "charge refund void a customer through the provider",
        "--budget",
        "4000",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let cited: Vec<(u64, u64)> = v["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["path"] == "src/billing.py")
        .map(|p| {
            (
                p["start_line"].as_u64().unwrap(),
                p["end_line"].as_u64().unwrap(),
            )
        })
        .collect();
    let cites = |line: u64| cited.iter().any(|&(a, b)| a <= line && line <= b);
    // Every line from the first to the key's is cited: the blank lines between `charge` and
    // `refund` too.
    assert!((1..=key).all(cites), "{cited:?}");
    // The key's first line is quoted as `[REDACTED:private_key]`; its other lines are blank in
    // the redacted text, between two chunks: no chunk takes them in as blank lines.
    assert!((key + 1..void).all(|l| !cites(l)), "{cited:?}");
    assert!(cites(void), "{cited:?}");
    assert!(!stdout(&out).contains("MIIEvQ"), "the key leaked");
}

/// `n` files that all match "settle the invoice batch", about 900 tokens each: one documented
/// function whose declaration is line 3, past its doc comment and an attribute.
fn write_invoice_batches(env: &Env, n: usize) {
    write_invoice_batches_with(env, n, |_| None);
}

/// [`write_invoice_batches`], with the line `line(i)` gives (if any) before the 31st
/// statement of batch `i`: line 35 of its file.
fn write_invoice_batches_with(env: &Env, n: usize, line: impl Fn(usize) -> Option<String>) {
    for i in 0..n {
        let mut body = format!(
            "/// Settles invoice batch {i}.\n#[inline]\npub fn settle_invoice_batch_{i}(batch: &[u32]) -> u32 {{\n    let mut total = 0;\n"
        );
        for k in 0..60 {
            if k == 30
                && let Some(extra) = line(i)
            {
                body.push_str(&extra);
            }
            body.push_str(&format!(
                "    total += batch[{k} % batch.len()] * {k}; // invoice\n"
            ));
        }
        body.push_str("    total\n}\n");
        env.write(&format!("src/billing/invoice_{i:02}.rs"), &body);
    }
}

/// The JSON answer to "settle the invoice batch" at `budget`, checked to succeed within it.
fn invoice_answer(env: &Env, budget: u64) -> serde_json::Value {
    invoice_answer_to(env, "settle the invoice batch", budget)
}

/// The JSON answer to `query` at `budget`, checked to succeed within it.
fn invoice_answer_to(env: &Env, query: &str, budget: u64) -> serde_json::Value {
    let out = env.assemble(&[
        "--query",
        query,
        "--budget",
        &budget.to_string(),
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert!(v["tokens_total"].as_u64().unwrap() <= budget, "{v}");
    v
}

#[test]
fn a_small_budget_lists_further_files_as_signposts_of_one_line() {
    let env = Env::new();
    // Twenty files that all match the request, each far larger than a twentieth of the budget:
    // the prompt quotes a few whole and points to further ones by their declaration line.
    write_invoice_batches(&env, 20);
    let v = invoice_answer(&env, 4000);
    let pieces = v["pieces"].as_array().unwrap();
    let (signposts, code): (Vec<_>, Vec<_>) = pieces.iter().partition(|p| p["form"] == "signpost");
    assert!(!signposts.is_empty() && !code.is_empty(), "{v}");
    let prompt = v["prompt"].as_str().unwrap();
    let listed = prompt
        .split("More relevant files, one line each (not shown above):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("a list of signposts: {prompt}"));
    for s in &signposts {
        let path = s["path"].as_str().unwrap();
        let line = s["start_line"].as_u64().unwrap();
        // One line, the declaration past the doc comment and attribute, cited exactly.
        assert_eq!(s["end_line"].as_u64(), Some(line));
        assert_eq!(line, 3, "{s}");
        assert!(
            listed.contains(&format!("- {path}:3 `pub fn settle_invoice_batch_")),
            "{listed}"
        );
        // A signpost points to a file the code does not quote.
        assert!(code.iter().all(|p| p["path"] != s["path"]), "{path}");
    }
    // At 32k every file fits whole: no signposts.
    let out = env.assemble(&[
        "--query",
        "settle the invoice batch",
        "--budget",
        "32000",
        "--format",
        "json",
    ]);
    let v = json(&out);
    let pieces = v["pieces"].as_array().unwrap();
    assert!(pieces.iter().all(|p| p["form"] != "signpost"), "{v}");
}

#[test]
fn a_questions_signposts_show_the_line_that_matches_it() {
    let env = Env::new();
    // Twenty batches as above, each with the line that answers the question in the middle of
    // its body: a question's signposts show that line, not the declaration.
    write_invoice_batches_with(&env, 20, |i| {
        Some(format!(
            "    let grace_days = {i}; // grace days an unpaid batch waits\n"
        ))
    });
    let v = invoice_answer_to(
        &env,
        "How many grace days does an unpaid invoice batch wait?",
        4000,
    );
    let signposts: Vec<_> = v["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["form"] == "signpost")
        .collect();
    assert!(!signposts.is_empty(), "{v}");
    let prompt = v["prompt"].as_str().unwrap();
    for s in &signposts {
        // Line 35 of each file, not the declaration on line 3.
        assert_eq!(s["start_line"].as_u64(), Some(35), "{s}");
        let path = s["path"].as_str().unwrap();
        assert!(
            prompt.contains(&format!("- {path}:35 `let grace_days = ")),
            "{prompt}"
        );
    }
}

#[test]
fn a_large_budget_still_points_to_the_files_it_cannot_quote() {
    let env = Env::new();
    // Eighty matching files of about 900 tokens each: 32k quotes about thirty of them whole,
    // and names further ones in the small room kept for signposts over 8k.
    write_invoice_batches(&env, 80);
    let v = invoice_answer(&env, 32_000);
    let pieces = v["pieces"].as_array().unwrap();
    let (signposts, code): (Vec<_>, Vec<_>) = pieces.iter().partition(|p| p["form"] == "signpost");
    assert!(code.len() >= 20, "{v}");
    // A few lines, not a list that takes the code's room.
    assert!(
        (3..=12).contains(&signposts.len()),
        "{} signposts",
        signposts.len()
    );
    for s in &signposts {
        assert!(code.iter().all(|p| p["path"] != s["path"]), "{s}");
        assert_eq!(s["start_line"], s["end_line"], "{s}");
    }
    assert!(
        v["prompt"]
            .as_str()
            .unwrap()
            .contains("More relevant files, one line each (not shown above):"),
        "{v}"
    );
}

#[test]
fn a_pipe_gets_the_prompt_alone_and_the_analysis_goes_to_stderr() {
    let env = Env::new();
    env.sample();
    let ask = ["--query", "render page", "--model", "gpt-4o"];
    let answer = json(&env.assemble(&[&ask[..], &["--format", "json"]].concat()));
    let prompt = answer["prompt"].as_str().unwrap();
    assert!(prompt.contains("render_page"));

    // The test's stdout is a pipe, as in `ctxgate assemble ... > ctx.md`.
    for extra in [&[][..], &["--prompt-only"][..]] {
        let out = env.assemble(&[&ask[..], extra].concat());
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(
            stdout(&out),
            prompt,
            "{extra:?}: stdout is the prompt, byte for byte"
        );
        let analysis = stderr(&out);
        assert!(
            analysis.contains("ctxgate budget analysis") && analysis.contains("usable 96,000"),
            "{extra:?}: {analysis}"
        );
        assert!(!analysis.contains("# Code context"), "{analysis}");
        assert!(!analysis.contains("---- prompt ----"), "{analysis}");
    }
    // `-q`: the prompt, and nothing on stderr.
    let out = env
        .cmd()
        .arg("-q")
        .args(["assemble", "--repo", &env.repo_arg()])
        .args(ask)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), prompt);
    assert_eq!(stderr(&out), "");
    // JSON is unchanged: one document on stdout, nothing but logs on stderr.
    let out = env.assemble(&[&ask[..], &["--format", "json"]].concat());
    assert_eq!(json(&out)["prompt"], answer["prompt"]);
    assert!(!stderr(&out).contains("budget analysis"));
}

/// `script` (util-linux) runs `command` with a terminal for its stdout and stderr, as a person
/// at a shell would; what it printed comes back with `\r\n` line ends.
fn at_a_terminal(env: &Env, command: &str) -> String {
    let out = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .env("CTXGATE_HOME", env.home.path())
        .env_remove("CTXGATE_CATALOG")
        .env_remove("CTXGATE_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("`script` (util-linux) runs");
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).replace("\r\n", "\n")
}

#[test]
fn a_terminal_gets_the_analysis_above_the_prompt() {
    let env = Env::new();
    env.sample();
    let command = format!(
        "{} -q assemble '{}' --query 'render page' --budget 600",
        env!("CARGO_BIN_EXE_ctxgate"),
        env.repo_arg()
    );
    let shown = at_a_terminal(&env, &command);
    let at = |s: &str| {
        shown
            .find(s)
            .unwrap_or_else(|| panic!("no `{s}` in {shown}"))
    };
    assert!(
        at("ctxgate budget analysis") < at("---- prompt ----"),
        "{shown}"
    );
    assert!(at("---- prompt ----") < at("render_page"), "{shown}");
    // `--prompt-only` keeps stdout to the prompt at a terminal too: no rule between the two.
    let shown = at_a_terminal(&env, &format!("{command} --prompt-only"));
    assert!(
        shown.contains("render_page") && !shown.contains("---- prompt ----"),
        "{shown}"
    );
}

#[test]
fn words_where_the_folder_goes_get_the_command_that_was_meant() {
    let env = Env::new();
    env.sample();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_ctxgate")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for words in ["how is the config parsed", "what's parse_config?"] {
        let out = env
            .cmd()
            .current_dir(env.repo())
            .args(["assemble", words, "--budget", "800"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let said = stderr(&out);
        assert!(said.contains("is not a folder"), "{said}");
        let meant = said
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("ctxgate assemble . --query "))
            .unwrap_or_else(|| panic!("no command in {said}"));
        assert!(meant.ends_with("--budget 800"), "{meant}");
        // The hint runs as printed, in the same folder, by a POSIX shell.
        let out = Command::new("sh")
            .args(["-c", meant])
            .current_dir(env.repo())
            .env("PATH", &path)
            .env("CTXGATE_HOME", env.home.path())
            .env_remove("CTXGATE_CATALOG")
            .output()
            .unwrap();
        assert!(out.status.success(), "`{meant}`: {}", stderr(&out));
        assert!(stdout(&out).contains("parse_config"), "{}", stdout(&out));
        assert!(
            stdout(&out).contains(words),
            "the query is the words as typed"
        );
    }
    // The plain cases are untouched: a missing folder with no space, and no query at all.
    let out = env
        .cmd()
        .current_dir(env.repo())
        .args(["assemble", "--budget", "800"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--query"), "{}", stderr(&out));
    let out = env.run(&[
        "assemble",
        "no-such-folder",
        "--query",
        "x",
        "--budget",
        "80",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        !stderr(&out).contains("ctxgate assemble ."),
        "{}",
        stderr(&out)
    );
}

#[test]
fn short_model_names_resolve_and_unknown_ones_get_suggestions() {
    let env = Env::new();
    env.sample();
    for (name, id) in [
        ("sonnet", "claude-sonnet-5-5"),
        ("opus", "claude-opus-5-5"),
        ("haiku", "claude-haiku-5-5"),
        ("gemini", "gemini-3.6-flash"),
        ("llama3", "llama-3.3-70b-instruct"),
        ("gpt", "gpt-6.1-sol"),
    ] {
        let out = env.assemble(&[
            "--query",
            "render page",
            "--model",
            name,
            "--format",
            "json",
        ]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert_eq!(json(&out)["model"], id, "{name}");
    }
    let out = env.assemble(&[
        "--query",
        "render page",
        "--model",
        "sonet",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let error = &json(&out)["error"];
    assert_eq!(error["code"], "unknown_model");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("did you mean sonnet"),
        "{error}"
    );

    // `ctxgate models` shows the names in an ALIASES column, and every alias in JSON.
    let table = stdout(&env.run(&["models"]));
    assert!(
        table.lines().next().unwrap().ends_with("ALIASES"),
        "{table}"
    );
    let row = table
        .lines()
        .find(|l| l.starts_with("claude-sonnet-5-5 "))
        .unwrap();
    assert!(row.contains("sonnet, claude"), "{row}");
    assert!(!row.contains("anthropic/"), "{row}");
    let models = json(&env.run(&["models", "--format", "json"]));
    let sonnet = models
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == "claude-sonnet-5-5")
        .unwrap();
    let aliases = sonnet["aliases"].to_string();
    assert!(
        aliases.contains("\"sonnet\"") && aliases.contains("anthropic/"),
        "{aliases}"
    );
}

#[test]
fn a_named_changelog_gives_its_head_not_the_whole_answer() {
    let env = Env::new();
    // A changelog of ~50k tokens, named by the request, beside the code the request changes.
    let mut log = String::from("# Changelog\n\n## Unreleased\n\n- nothing yet\n\n");
    for v in (1..=400).rev() {
        log.push_str(&format!("## 1.{v}.0\n\n"));
        for k in 0..8 {
            log.push_str(&format!(
                "- Fixed issue {} in the request pipeline when the server closes early\n",
                v * 10 + k
            ));
        }
        log.push('\n');
    }
    env.write("CHANGELOG.md", &log);
    for i in 0..30 {
        let mut body = format!(
            "def send_with_attempts_{i}(client, request):\n    \"\"\"Sends through the client, counting attempts.\"\"\"\n"
        );
        for k in 0..60 {
            body.push_str(&format!(
                "    client.attempts_{k} = client.send(request, attempt={k})\n"
            ));
        }
        env.write(&format!("src/transport_{i:02}.py"), &body);
    }
    let out = env.assemble(&[
        "--query",
        "Add a limit on send attempts in the client, and note it in CHANGELOG.md",
        "--budget",
        "32000",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert!(v["tokens_total"].as_u64().unwrap() <= 32000);
    let pieces = v["pieces"].as_array().unwrap();
    let changelog: Vec<_> = pieces
        .iter()
        .filter(|p| p["path"] == "CHANGELOG.md")
        .collect();
    // Its head, where the new entry goes, is in; the rest of the room is the code's.
    assert!(
        changelog.iter().any(|p| p["start_line"] == 1),
        "{changelog:?}"
    );
    let changelog_tokens: u64 = changelog
        .iter()
        .map(|p| p["tokens"].as_u64().unwrap())
        .sum();
    assert!(
        changelog_tokens < 8000,
        "the changelog took {changelog_tokens} tokens"
    );
    let code = pieces
        .iter()
        .filter(|p| p["path"].as_str().unwrap().starts_with("src/transport_"))
        .count();
    assert!(code >= 20, "{code} of the 30 transport files");
}

#[test]
fn a_named_document_still_gives_the_section_the_request_asks_about() {
    let env = Env::new();
    // A long README named by a request about one section deep in it, beside code that matches
    // the same words: the section is in the answer, not only the README's head.
    let mut readme = String::from("# Widgets\n\nA library of terminal widgets.\n\n");
    for s in 0..40 {
        readme.push_str(&format!("## Widget {s}\n\n"));
        for k in 0..12 {
            readme.push_str(&format!(
                "Widget {s} draws shape {k} on the screen with a border and a title.\n"
            ));
        }
        readme.push('\n');
        if s == 30 {
            readme.push_str("## Progress bars\n\nProgress bars track long tasks; each progress bar shows the tasks left.\n\n");
        }
    }
    env.write("README.md", &readme);
    let section = readme
        .lines()
        .position(|l| l == "## Progress bars")
        .unwrap() as u64
        + 1;
    for i in 0..20 {
        let mut body =
            format!("def progress_bar_{i}(tasks):\n    \"\"\"Draws a progress bar.\"\"\"\n");
        for k in 0..40 {
            body.push_str(&format!("    bar_{k} = render_progress(tasks, {k})\n"));
        }
        env.write(&format!("widgets/progress_{i:02}.py"), &body);
    }
    let out = env.assemble(&[
        "--query",
        "Fix the wording of the progress bars section in README.md",
        "--budget",
        "8000",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let covered = v["pieces"].as_array().unwrap().iter().any(|p| {
        p["path"] == "README.md"
            && p["start_line"].as_u64().is_some_and(|s| s <= section)
            && p["end_line"].as_u64().is_some_and(|e| e > section)
    });
    assert!(covered, "the section at line {section}: {v}");
}
