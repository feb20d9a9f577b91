//! Summaries through the real binary: they fill the room the pieces leave, inside the budget,
//! in their own JSON array (never among `pieces`); a model can write file summaries, and only
//! changed files are summarized again.

mod common;

use common::{Env, fake_model_server, json, stderr};
use ctxgate_core::tokens::Encoding;

/// The sample, with one file large enough that a small budget cannot take it whole.
fn sample_with_large_file(env: &Env) {
    env.sample();
    let mut big =
        String::from("//! The storage engine: pages, a buffer pool and a write-ahead log.\n\n");
    for i in 0..120 {
        big.push_str(&format!(
            "/// Step {i} of the engine.\npub fn engine_step_{i}(page: usize) -> usize {{\n    let slot = page * {i} + 7;\n    slot.rotate_left(3) ^ 0x5a5a\n}}\n\n"
        ));
    }
    env.write("src/engine.rs", big);
}

#[test]
fn summaries_fill_the_room_and_never_become_pieces() {
    let env = Env::new();
    sample_with_large_file(&env);
    let out = env.run(&["index", &env.repo_arg(), "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["summaries"]["files"], 6, "{report}");
    assert_eq!(report["summaries"]["project"], true);

    let args = [
        "--query",
        "explain how the config is parsed and how the storage engine steps pages",
        "--budget",
        "1500",
        "--format",
        "json",
    ];
    let out = env.assemble(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    let prompt = v["prompt"].as_str().unwrap();
    let total = v["tokens_total"].as_u64().unwrap();
    assert!(total <= 1500);
    assert_eq!(u64::from(Encoding::O200kBase.count(prompt)), total);
    let strategy = v["analysis"]["strategy"].as_str().unwrap();
    assert!(strategy.contains("size medium"), "{strategy}");
    assert_eq!(v["analysis"]["size_class"], "medium");

    let summaries = v["summaries"].as_array().unwrap();
    assert!(!summaries.is_empty(), "{v}");
    // An `explain` request gets the project summary first.
    assert_eq!(summaries[0]["kind"], "project");
    assert_eq!(summaries[0]["path"], ".");
    // The largest file did not fit whole: its summary stands in for it.
    let engine = summaries
        .iter()
        .find(|s| s["path"] == "src/engine.rs")
        .unwrap_or_else(|| panic!("no summary of the large file: {v}"));
    assert_eq!(engine["kind"], "file");
    assert!(prompt.contains("### src/engine.rs (file summary; the whole file is"));
    assert!(prompt.contains("The storage engine: pages, a buffer pool and a write-ahead log."));
    assert!(prompt.find("# Summaries").unwrap() < prompt.find("# Code context").unwrap());

    // Every piece is a range of a file as it is on disk, as a benchmark driver re-reads it.
    let pieces = v["pieces"].as_array().unwrap();
    assert!(!pieces.is_empty());
    for p in pieces {
        let path = p["path"].as_str().unwrap();
        let file = std::fs::read_to_string(env.repo().join(path)).unwrap();
        let lines: Vec<&str> = file.lines().collect();
        let (sl, el) = (
            p["start_line"].as_u64().unwrap() as usize,
            p["end_line"].as_u64().unwrap() as usize,
        );
        assert!(sl >= 1 && el <= lines.len(), "{p}");
        let text = &file
            [p["byte_start"].as_u64().unwrap() as usize..p["byte_end"].as_u64().unwrap() as usize];
        assert!(prompt.contains(text.trim_end()));
        assert!(p.get("origin").is_none(), "a summary among the pieces: {p}");
    }

    // Deterministic: the same request gives the same prompt.
    let again = json(&env.assemble(&args));
    assert_eq!(again["prompt"], v["prompt"]);
    assert_eq!(again["summaries"], v["summaries"]);

    // `plan` keeps room for the project summary at the head of its prompt, whatever the intent.
    let out = env.assemble(&[
        "--query",
        "fix the engine step overflow",
        "--budget",
        "1200",
        "--profile",
        "plan",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert_eq!(v["intent"]["intent"], "bug_fix", "{v}");
    assert_eq!(v["summaries"][0]["kind"], "project", "{v}");
    let head = v["profile"]["project_summary"].as_str().expect("reported");
    assert!(v["prompt"].as_str().unwrap().contains(head.trim_end()));
    assert!(v["tokens_total"].as_u64().unwrap() <= 1200);
}

#[test]
fn a_model_writes_file_summaries_and_only_changed_files_are_summarized_again() {
    let env = Env::new();
    env.sample();
    let (url, seen) = fake_model_server();
    let index = |env: &Env| {
        let out = env.run(&[
            "index",
            &env.repo_arg(),
            "--summarize-llm-url",
            &url,
            "--summarize-llm-model",
            "tiny",
            "--format",
            "json",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        json(&out)
    };
    let r = index(&env);
    assert_eq!(r["summaries"]["llm_summarized"], 5, "{r}");
    assert_eq!(r["summaries"]["summarizer"], "llm-1:tiny");
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 5);
    assert!(requests.iter().all(|b| b.contains("\"model\":\"tiny\"")));

    // Unchanged: nothing is asked again.
    let r = index(&env);
    assert_eq!(r["status"], "up_to_date", "{r}");
    assert_eq!(seen.lock().unwrap().len(), 5);

    // One file changes: one call.
    env.write(
        "src/render.rs",
        "/// Renders a page to HTML.\npub fn render_page(title: &str) -> String {\n    format!(\"<h2>{title}</h2>\")\n}\n",
    );
    let r = index(&env);
    assert_eq!(
        (
            r["summaries"]["llm_summarized"].as_u64(),
            r["summaries"]["reused"].as_u64()
        ),
        (Some(1), Some(4)),
        "{r}"
    );
    assert_eq!(seen.lock().unwrap().len(), 6);

    // The model's summaries reach the prompt (assemble re-indexes without the flags: they stay).
    let out = env.assemble(&[
        "--query",
        "render page",
        "--budget",
        "400",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v = json(&out);
    assert!(
        v["summaries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["origin"] == "llm-1:tiny"),
        "{v}"
    );
    assert!(v["prompt"].as_str().unwrap().contains("MODEL-SUMMARY"));
    assert!(v["tokens_total"].as_u64().unwrap() <= 400);

    // A dead endpoint leaves extractive summaries, with a warning.
    let other = Env::new();
    other.sample();
    let out = other.run(&[
        "index",
        &other.repo_arg(),
        "--summarize-llm-url",
        "http://127.0.0.1:9/v1",
        "--summarize-llm-model",
        "x",
        "--format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["summaries"]["llm_summarized"], 0);
    assert!(
        r["warnings"]
            .to_string()
            .contains("summarizing model failed"),
        "{r}"
    );
}
