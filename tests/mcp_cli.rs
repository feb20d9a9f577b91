//! `ctxgate mcp`: the stdio MCP server, driven by the official MCP Python SDK exactly as each
//! client snippet of docs/mcp.md launches it.

mod common;

use std::path::Path;

use common::{Env, stderr};
use ctxgate_core::tokens::Encoding;
use serde_json::Value;

/// The official MCP client (installed by `scripts/mcp-client-setup.sh`, which the test command
/// runs).
fn python() -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    let python = std::env::var("CTXGATE_MCP_PYTHON")
        .unwrap_or_else(|_| format!("{root}/target/mcp-venv/bin/python"));
    assert!(
        Path::new(&python).exists(),
        "no MCP client at {python}: run scripts/mcp-client-setup.sh (scripts/test.sh does)"
    );
    python
}

/// One snippet of docs/mcp.md: the client it is for, and its text.
struct Snippet {
    client: String,
    text: String,
}

/// The snippets marked `<!-- snippet: CLIENT FILE -->`, each the fenced block that follows.
fn snippets() -> Vec<Snippet> {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/mcp.md")).unwrap();
    let mut out = Vec::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(marker) = line.strip_prefix("<!-- snippet: ") else {
            continue;
        };
        let client = marker.split_whitespace().next().unwrap().to_string();
        let fence = lines.next().unwrap();
        assert!(
            fence.starts_with("```"),
            "{client}: no code block after the marker"
        );
        let text: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        out.push(Snippet {
            client,
            text: text.join("\n"),
        });
    }
    out
}

/// The server entry a snippet declares, in its client's format: (command, args).
fn server_of(s: &Snippet) -> (String, Vec<String>) {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    };
    match s.client.as_str() {
        "codex" => {
            let doc: toml::Table = toml::from_str(&s.text).unwrap();
            let entry = &doc["mcp_servers"]["ctxgate"];
            let command = entry["command"].as_str().unwrap().to_string();
            let args = entry["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_string())
                .collect();
            (command, args)
        }
        client => {
            let doc: Value =
                serde_json::from_str(&s.text).unwrap_or_else(|e| panic!("{client}: not JSON: {e}"));
            // VS Code names the map `servers`; Claude Code and Cursor `mcpServers`.
            let key = if client == "vscode" {
                "servers"
            } else {
                "mcpServers"
            };
            let entry = &doc[key]["ctxgate"];
            assert!(entry.is_object(), "{client}: no `{key}.ctxgate` in {doc}");
            if let Some(t) = entry.get("type") {
                assert_eq!(t, "stdio", "{client}");
            }
            (
                entry["command"].as_str().unwrap().to_string(),
                strings(&entry["args"]),
            )
        }
    }
}

#[test]
fn docs_snippets_parse_as_their_clients_formats() {
    let found: Vec<String> = snippets().into_iter().map(|s| s.client).collect();
    assert_eq!(found, ["claude-code", "cursor", "vscode", "codex"]);
    for s in snippets() {
        let (command, args) = server_of(&s);
        assert_eq!(command, "ctxgate", "{}", s.client);
        assert_eq!(args[0], "mcp", "{}", s.client);
    }
    // Every other JSON block of the page is JSON too.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/mcp.md")).unwrap();
    for block in doc.split("```json\n").skip(1) {
        let text = block.split("\n```").next().unwrap();
        serde_json::from_str::<Value>(text).unwrap_or_else(|e| panic!("{e}: {text}"));
    }
}

/// Runs the SDK's stdio client against the snippet's command, launched in a sample folder with
/// `ctxgate` on the PATH; what the client saw.
fn drive(s: &Snippet) -> Value {
    let env = Env::new();
    env.sample();
    let (command, args) = server_of(s);
    let repo = env.repo_arg();
    let args: Vec<String> = args
        .into_iter()
        .map(|a| a.replace("${workspaceFolder}", &repo))
        .collect();
    let bin = Path::new(env!("CARGO_BIN_EXE_ctxgate")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new(python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/mcp/stdio_client.py"
        ))
        .arg(&repo)
        .arg(&command)
        .args(&args)
        .env("PATH", path)
        .env("CTXGATE_HOME", env.home.path())
        .env_remove("CTXGATE_CATALOG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: MCP client failed: {}",
        s.client,
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_snippet_serves_the_folder_and_follows_its_edits() {
    for s in snippets() {
        let seen = drive(&s);
        let who = &s.client;
        assert_eq!(seen["server"], "ctxgate", "{who}");
        assert_eq!(
            seen["tools"],
            serde_json::json!([
                "count_tokens",
                "get_context",
                "list_projects",
                "search_code"
            ])
        );
        // The folder is the default project.
        let required = &seen["required"]["get_context"];
        assert_eq!(required, &serde_json::json!(["query"]), "{who}");

        // No project, no budget: the folder, within the tool's default budget, counted again.
        let first = &seen["first"];
        assert_eq!(first["budget"], 16_000, "{who}");
        let text = seen["first_text"].as_str().unwrap();
        let total = first["tokens_total"].as_u64().unwrap();
        assert!(total <= 16_000);
        assert_eq!(u64::from(Encoding::O200kBase.count(text)), total, "{who}");
        assert!(text.contains("pub fn parse_config"), "{who}: {text}");

        // A file written between two calls is in the second answer.
        let edited = seen["edited_text"].as_str().unwrap();
        assert!(
            edited.contains("pub fn refund_unused_tokens"),
            "{who}: {edited}"
        );
        assert!(
            seen["edited"]["project"]["version"].as_u64() > first["project"]["version"].as_u64()
        );

        let pieces = seen["search"]["pieces"].as_array().unwrap();
        assert!(pieces.iter().any(|p| p["path"] == "src/render.rs"), "{who}");
        assert_eq!(
            seen["count"]["total"],
            Encoding::O200kBase.count("hello world")
        );
        assert_eq!(seen["unknown_error"], true);
        assert_eq!(seen["unknown"]["error"]["code"], "unknown_model");
        assert_eq!(
            seen["projects"]["projects"][0]["id"], first["project"]["id"],
            "{who}"
        );
    }
}

/// Runs `ctxgate mcp` on the env's folder with `lines` on stdin (then EOF); its answers, one
/// JSON document per stdout line.
fn raw_session(env: &Env, lines: &[String]) -> Vec<Value> {
    use std::io::Write;
    let mut child = env
        .cmd()
        .arg("mcp")
        .arg(env.repo())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_folders_config_file_sets_the_default_model_and_budget() {
    let env = Env::new();
    env.sample();
    env.write(
        "ctxgate.toml",
        "model = \"gpt-4\"\nbudget = 700\nexclude = [\"app/\"]\n",
    );
    let call = |id: u32, args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_context","arguments":{args}}}}}"#
        )
    };
    let answers = raw_session(
        &env,
        &[
            call(1, r#"{"query":"server start config"}"#),
            call(2, r#"{"query":"server start config","budget":1500}"#),
        ],
    );
    let first = &answers[0]["result"]["structuredContent"];
    assert_eq!(first["budget"], 700, "{first}");
    assert_eq!(first["model"], "gpt-4");
    assert!(
        first["pieces"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["path"] != "app/server.py"),
        "the file's exclude applies"
    );
    // A call that names its budget drops both of the file's (as a flag does).
    let second = &answers[1]["result"]["structuredContent"];
    assert_eq!(second["budget"], 1500);
    assert!(second["model"].is_null());
}

#[test]
fn a_budget_over_the_tools_cap_is_capped_with_a_warning_and_a_tiny_one_refused() {
    let env = Env::new();
    env.sample();
    let call = |id: u32, args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_context","arguments":{args}}}}}"#
        )
    };
    let answers = raw_session(
        &env,
        &[
            call(1, r#"{"query":"server start config","budget":5000000}"#),
            call(2, r#"{"query":"server start config"}"#),
            call(3, r#"{"query":"server start config","budget":8}"#),
        ],
    );
    let capped = &answers[0]["result"];
    assert_eq!(capped["isError"], false, "{capped}");
    let capped = &capped["structuredContent"];
    assert_eq!(capped["budget"], 16_000, "{capped}");
    assert!(capped["tokens_total"].as_u64().unwrap() <= 16_000);
    assert!(
        capped["warnings"]
            .to_string()
            .contains("budget 5000000 capped at 16000 tokens"),
        "{capped}"
    );
    // Neither budget nor model: the default every host gives, with the same warning.
    let default = &answers[1]["result"]["structuredContent"];
    assert_eq!(default["budget"], 16_000, "{default}");
    let warnings = default["warnings"].to_string();
    assert!(
        warnings.contains("no budget given: 16000 tokens, the default"),
        "{warnings}"
    );
    assert_eq!(warnings.matches("no budget given").count(), 1, "{warnings}");
    let tiny = &answers[2]["result"];
    assert_eq!(tiny["isError"], true, "{tiny}");
    assert_eq!(
        tiny["structuredContent"]["error"]["code"],
        "budget_too_small"
    );
    assert_eq!(tiny["structuredContent"]["error"]["details"]["needed"], 64);
}

#[test]
fn a_missing_folder_is_refused_before_serving() {
    let env = Env::new();
    let out = env
        .cmd()
        .args(["mcp", "/no/such/folder"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("/no/such/folder"), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "stdout is the protocol's alone");
}

#[test]
fn malformed_lines_get_json_rpc_errors_and_notifications_none() {
    let env = Env::new();
    env.sample();
    let answers = raw_session(
        &env,
        &[
            "{not json".to_string(),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":7,"method":"nope"}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_context","arguments":{"query":"parse the config","budget":0}}}"#.to_string(),
        ],
    );
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert_eq!(answers[0]["error"]["code"], -32700);
    assert_eq!(answers[1]["id"], 7);
    assert_eq!(answers[1]["error"]["code"], -32601);
    assert_eq!(answers[2]["id"], 8);
    assert_eq!(answers[2]["result"]["isError"], true);
    assert_eq!(
        answers[2]["result"]["structuredContent"]["error"]["code"],
        "budget_zero"
    );
}

#[test]
fn only_the_folders_project_is_listed_and_answered() {
    let env = Env::new();
    env.sample();
    // Another project in the same data directory.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(
        other.path().join("ledger.rs"),
        "/// Settles the tokens a call used.\npub fn settle_ledger(used: u64) -> u64 {\n    used\n}\n",
    )
    .unwrap();
    let out = env
        .cmd()
        .arg("index")
        .arg(other.path())
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let indexed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (other_id, other_name) = (
        indexed["project"]["id"].as_str().unwrap().to_string(),
        indexed["project"]["name"].as_str().unwrap().to_string(),
    );

    let call = |id: usize, tool: &str, args: Value| {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": tool, "arguments": args}})
        .to_string()
    };
    let query = "settle the ledger";
    // Each asked of the other project (by name, by id) and of one that does not exist.
    let keys = [other_name.as_str(), other_id.as_str(), "no-such-project"];
    let mut lines = vec![call(0, "list_projects", serde_json::json!({}))];
    for (i, key) in keys.iter().enumerate() {
        let i = 1 + 4 * i;
        lines.push(call(
            i,
            "search_code",
            serde_json::json!({"project": key, "query": query}),
        ));
        lines.push(call(
            i + 1,
            "get_context",
            serde_json::json!({"project": key, "query": query, "budget": 2000}),
        ));
        // Whatever else is wrong with the call, the project is what is refused.
        lines.push(call(
            i + 2,
            "get_context",
            serde_json::json!({"project": key, "query": query, "model": "no-such-model"}),
        ));
        lines.push(call(
            i + 3,
            "search_code",
            serde_json::json!({"project": key, "query": query, "page_tokens": 0}),
        ));
    }
    let served = raw_session(&env, &lines);
    let served = |id: usize| {
        served
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("no answer {id}"))
            .clone()
    };

    let listed = served(0)["result"]["structuredContent"]["projects"].clone();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_ne!(listed[0]["id"], other_id.as_str());
    let own = listed[0]["name"].as_str().unwrap().to_string();

    // The answer for a project that does not exist, with its name written as KEY.
    let as_missing = |id: usize, key: &str| served(id)["result"].to_string().replace(key, "KEY");
    for call in 0..4 {
        let missing = as_missing(9 + call, "no-such-project");
        assert!(missing.contains("project_not_found"), "{missing}");
        for (k, key) in keys[..2].iter().enumerate() {
            assert_eq!(
                as_missing(1 + 4 * k + call, key),
                missing,
                "{key}, call {call}"
            );
        }
    }
    // No answer names the other project or shows its code.
    for a in 0..13 {
        let text = served(a).to_string();
        assert!(!text.contains("settle_ledger"), "{text}");
    }

    // The folder's own project, by name or left out, is answered.
    let answers = raw_session(
        &env,
        &[
            call(
                1,
                "search_code",
                serde_json::json!({"project": own, "query": "parse the config"}),
            ),
            call(
                2,
                "get_context",
                serde_json::json!({"query": "parse the config", "budget": 2000}),
            ),
        ],
    );
    for a in &answers {
        assert_eq!(a["result"]["isError"], false, "{a}");
        assert!(a["result"].to_string().contains("parse_config"), "{a}");
    }
}
