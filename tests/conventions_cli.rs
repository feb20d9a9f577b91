//! The conventions of the tools people already use: a positional folder defaulting to `.`,
//! include/exclude globs, `-o FILE`, a project config file, completions, JSON argument errors,
//! no colour off a terminal, an access log.

mod common;

use common::{Env, json, stderr, stdout};

#[test]
fn the_folder_is_positional_defaults_to_the_current_one_and_repo_still_works() {
    let env = Env::new();
    env.sample();
    let repo = env.repo_arg();
    let asked = |args: &[&str], cwd: &std::path::Path| {
        let out = env.cmd().args(args).current_dir(cwd).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        json(&out)
    };
    let q = [
        "--query",
        "parse the config",
        "--budget",
        "1500",
        "--format",
        "json",
    ];
    let mut positional = vec!["assemble", repo.as_str()];
    positional.extend(q);
    let mut flag = vec!["assemble", "--repo", repo.as_str()];
    flag.extend(q);
    let mut here = vec!["assemble"];
    here.extend(q);
    let tmp = std::env::temp_dir();
    let a = asked(&positional, &tmp);
    let b = asked(&flag, &tmp);
    let c = asked(&here, env.repo());
    assert_eq!(a["prompt"], b["prompt"]);
    assert_eq!(a["prompt"], c["prompt"]);
    assert!(a["prompt"].as_str().unwrap().contains("parse_config"));
    // `index` takes the folder the same way.
    let out = env
        .cmd()
        .args(["index", "--format", "json"])
        .current_dir(env.repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn include_and_exclude_globs_choose_the_files() {
    let env = Env::new();
    env.sample();
    let files = |extra: &[&str]| -> Vec<String> {
        let mut args = vec![
            "assemble",
            "--query",
            "config page server",
            "--budget",
            "20000",
        ];
        args.extend(extra);
        args.extend(["--format", "json", "--force"]);
        let out = env.cmd().args(&args).arg(env.repo()).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        let v = json(&out);
        let mut paths: Vec<String> = v["pieces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["path"].as_str().unwrap().to_string())
            .collect();
        paths.sort();
        paths.dedup();
        paths
    };
    let rust = files(&["--include", "*.rs"]);
    assert!(!rust.is_empty());
    assert!(rust.iter().all(|p| p.ends_with(".rs")), "{rust:?}");
    let no_src = files(&["--exclude", "src/"]);
    assert!(no_src.iter().all(|p| !p.starts_with("src/")), "{no_src:?}");
    assert!(no_src.iter().any(|p| p == "app/server.py"), "{no_src:?}");
    // An exclude wins over an include.
    let both = files(&["--include", "src/**", "--exclude", "render.rs"]);
    assert_eq!(both, ["src/config.rs"]);

    let out = env
        .cmd()
        .args([
            "assemble",
            "--query",
            "x",
            "--budget",
            "100",
            "--include",
            "src/[",
            "--format",
            "json",
        ])
        .arg(env.repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json(&out)["error"]["code"], "invalid_glob");
}

#[test]
fn output_file_holds_the_prompt_or_the_json() {
    let env = Env::new();
    env.sample();
    let out_dir = tempfile::tempdir().unwrap();
    let prompt = out_dir.path().join("context.md");
    let out = env
        .cmd()
        .args([
            "assemble",
            "--query",
            "parse the config",
            "--budget",
            "1500",
            "-o",
        ])
        .arg(&prompt)
        .arg(env.repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(&prompt).unwrap();
    assert!(text.contains("parse_config"));
    // Nothing on stdout (not even a separator); one line on stderr says what went where.
    assert_eq!(stdout(&out), "");
    let said = stderr(&out);
    assert_eq!(said.lines().count(), 1, "{said}");
    assert!(
        said.contains("tokens in") && said.ends_with(&format!("written to {}\n", prompt.display())),
        "{said}"
    );
    let quiet = env
        .cmd()
        .args([
            "-q",
            "assemble",
            "--query",
            "parse the config",
            "--budget",
            "1500",
            "-o",
        ])
        .arg(&prompt)
        .arg(env.repo())
        .output()
        .unwrap();
    assert!(quiet.status.success(), "{}", stderr(&quiet));
    assert!(
        quiet.stdout.is_empty() && quiet.stderr.is_empty(),
        "{}",
        stderr(&quiet)
    );

    let report = out_dir.path().join("context.json");
    let out = env
        .cmd()
        .args([
            "assemble",
            "--query",
            "parse the config",
            "--budget",
            "1500",
            "--format",
            "json",
            "--output",
        ])
        .arg(&report)
        .arg(env.repo())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert!(v["tokens_total"].as_u64().unwrap() <= 1500);
}

#[test]
fn a_config_file_sets_defaults_that_flags_override() {
    let env = Env::new();
    env.sample();
    env.write(
        "ctxgate.toml",
        "model = \"gpt-4o\"\nbudget = 900\nprofile = \"expand\"\ncompression = \"light\"\nexclude = [\"app/\"]\n",
    );
    let run = |extra: &[&str]| {
        let mut args = vec![
            "assemble",
            "--query",
            "server start config",
            "--format",
            "json",
        ];
        args.extend(extra);
        let out = env.cmd().args(&args).arg(env.repo()).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        json(&out)
    };
    let v = run(&[]);
    assert_eq!(v["budget"], 900);
    assert_eq!(v["model"], "gpt-4o");
    let paths: Vec<&str> = v["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert!(!paths.contains(&"app/server.py"), "{paths:?}");
    assert!(
        v["pieces"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["form"] != "full"),
        "compression light from the file"
    );
    // Flags win.
    let v = run(&["--budget", "1200", "--compression", "none"]);
    assert_eq!(v["budget"], 1200);
    assert!(
        v["model"].is_null(),
        "--budget alone drops the file's model"
    );

    // Unknown keys and bad values are precise errors.
    env.write("ctxgate.toml", "budgett = 100\n");
    let out = env
        .cmd()
        .args(["assemble", "--query", "x", "--format", "json"])
        .arg(env.repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = json(&out);
    assert_eq!(e["error"]["code"], "invalid_config");
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("ctxgate.toml") && msg.contains("unknown field `budgett`"),
        "{msg}"
    );
    env.write(".ctxgate.toml", "budget = 100\n");
    let out = env
        .cmd()
        .args(["assemble", "--query", "x", "--format", "json"])
        .arg(env.repo())
        .output()
        .unwrap();
    assert_eq!(json(&out)["error"]["code"], "ambiguous_config");
}

#[test]
fn argument_errors_are_json_under_format_json() {
    let env = Env::new();
    let out = env.run(&["assemble", "--format", "json", "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    let e = json(&out);
    assert_eq!(e["error"]["code"], "unknown_argument");
    assert!(e["error"]["message"].as_str().unwrap().contains("--bogus"));
    let out = env.run(&["count", "--format=json", "--model"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json(&out)["error"]["code"], "invalid_value");
    // Without it, clap's own text on stderr.
    let out = env.run(&["assemble", "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(stderr(&out).contains("--bogus"));
    // Help is still help.
    let out = env.run(&["assemble", "--help", "--format", "json"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("Usage"));
}

#[test]
fn models_of_an_unknown_provider_is_an_error() {
    let env = Env::new();
    let out = env.run(&["models", "--provider", "nope", "--format", "json"]);
    assert_eq!(out.status.code(), Some(2));
    let e = json(&out);
    assert_eq!(e["error"]["code"], "unknown_provider");
    assert!(e["error"]["message"].as_str().unwrap().contains("openai"));
}

#[test]
fn completions_for_each_shell() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = env.run(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(
            script.contains("assemble") && script.contains("mcp"),
            "{shell}"
        );
    }
    let out = env.run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn no_colour_in_logs_off_a_terminal() {
    let env = Env::new();
    env.sample();
    let out = env
        .cmd()
        .args(["-v", "mcp"])
        .arg(env.repo())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let logs = stderr(&out);
    assert!(
        logs.contains("INFO") && logs.contains("version=1"),
        "{logs}"
    );
    assert!(
        !logs.contains('\u{1b}'),
        "ANSI escapes in a log that is not a terminal: {logs:?}"
    );
}

#[test]
fn serve_logs_one_access_line_per_request_at_v() {
    use std::io::{BufRead, BufReader, Read};
    let env = Env::new();
    let mut child = env
        .cmd()
        .args(["-v", "serve", "--addr", "127.0.0.1:0", "--format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url: serde_json::Value = serde_json::from_str(&line).unwrap();
    let base = url["listening"].as_str().unwrap().to_string();
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    agent.get(format!("{base}/healthz")).call().unwrap();
    let secret_query = "the-query-text-must-not-be-logged";
    agent
        .post(format!("{base}/v1/context"))
        .header("Authorization", "Bearer ctxg_secret_key_text")
        .header("Content-Type", "application/json")
        .send(
            serde_json::json!({ "project": "p", "query": secret_query, "budget": 10 }).to_string(),
        )
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let _ = child.kill();
    let mut logs = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut logs)
        .unwrap();
    let _ = child.wait();
    // One JSON line per request (docs/observability.md), named by its route template.
    let access: Vec<serde_json::Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "request")
        .collect();
    assert!(
        access
            .iter()
            .any(|l| l["route"] == "/healthz" && l["status"] == 200),
        "{logs}"
    );
    assert!(
        access.iter().any(|l| l["route"] == "/v1/context"
            && l["status"] == 401
            && l["error_code"] == "invalid_api_key"
            && l["request_id"].is_string()
            && l["latency_ms"].is_number()),
        "{logs}"
    );
    assert!(
        !logs.contains(secret_query) && !logs.contains("ctxg_secret_key_text"),
        "{logs}"
    );
}

#[test]
fn serve_says_what_it_serves_and_watch_needs_a_root() {
    use std::io::{BufRead, BufReader};
    let env = Env::new();
    // Without a root, `--watch` could never refresh anything: refused before it starts.
    let out = env.cmd().args(["serve", "--watch"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("--watch") && err.contains("--local-root DIR"),
        "{err}"
    );
    let out = env
        .cmd()
        .args(["serve", "--watch", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(json(&out)["error"]["code"], "watch_without_roots");
    // The start line names the address, the console and whether the admin routes are on.
    let start = |admin: Option<&str>| {
        let mut cmd = env.cmd();
        cmd.args(["serve", "--addr", "127.0.0.1:0"])
            .env_remove("CTXGATE_ADMIN_SECRET")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        if let Some(secret) = admin {
            cmd.args(["--admin-secret", secret]);
        }
        let mut child = cmd.spawn().unwrap();
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut lines = Vec::new();
        for _ in 0..3 {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            lines.push(line.trim_end().to_string());
        }
        let _ = child.kill();
        let _ = child.wait();
        lines
    };
    let off = start(None);
    let base = off[0].strip_prefix("listening on ").unwrap().to_string();
    assert_eq!(off[1], format!("console: {base}/console"));
    assert!(
        off[2].contains("/metrics") && off[2].contains("off") && off[2].contains("--admin-secret"),
        "{off:?}"
    );
    let on = start(Some("an-admin-secret-of-enough-length"));
    assert!(on[2].ends_with(": on"), "{on:?}");
}
