//! A private git repository on `ctxgate serve`, end to end: a git HTTP server that requires
//! HTTP Basic credentials (`git http-backend` behind `tests/private_git/git_http_auth.py`), a
//! credential stored with `ctxgate credential set`, and a project whose source names it.
//!
//! Without the credential the project is refused with `source_auth_required`, with a wrong one
//! `source_credential_rejected`, with another org's `credential_not_found`; with its own it
//! indexes and answers `/v1/context`, and re-indexes. Then the token is searched for, in every
//! form a leak could take (itself, percent-encoded, the Basic header's base64), in every answer
//! of the test, in the server's log at `-vv`, and in every byte of the data directory: the one
//! place it may be is its own credential file, mode 0600.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

const ADMIN: &str = "test-admin-secret-0123456789";

/// A child process killed when the test ends, however it ends.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `git` in `dir` with a fixed identity.
fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A bare repository `private.git` under the returned folder, with a few source files.
fn private_repo() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir_all(work.join("src")).unwrap();
    std::fs::write(
        work.join("src/ledger.rs"),
        "/// Reserves tokens from the daily budget before a request runs.\n\
         pub fn reserve_tokens(budget: u64, asked: u64) -> Option<u64> {\n    \
         budget.checked_sub(asked)\n}\n",
    )
    .unwrap();
    std::fs::write(
        work.join("src/refund.rs"),
        "/// Gives unused tokens back to the budget once the request settles.\n\
         pub fn refund_tokens(budget: u64, unused: u64) -> u64 {\n    budget + unused\n}\n",
    )
    .unwrap();
    std::fs::write(work.join("README.md"), "# Ledger\n\nToken budgets.\n").unwrap();
    git(&work, &["init", "-q"]);
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "ledger"]);
    git(
        root.path(),
        &["clone", "-q", "--bare", "work", "private.git"],
    );
    root
}

/// Starts the authenticating git server over `root`; returns it and the repository's URL.
fn git_server(root: &Path, token: &str) -> (Killed, String) {
    let token_file = root.join("token");
    std::fs::write(&token_file, token).unwrap();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/private_git/git_http_auth.py"
    );
    let mut child = Command::new("python3")
        .arg(script)
        .arg(root)
        .arg("x-access-token")
        .arg(&token_file)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port = line.trim().strip_prefix("listening ").expect("port line");
    let url = format!("http://127.0.0.1:{port}/private.git");
    std::thread::spawn(move || for _ in out.lines() {});
    (Killed(child), url)
}

/// `ctxgate serve` at `-vv` over `home`, its stdout and stderr written to files under `logs`.
fn serve(home: &Path, logs: &Path) -> (Killed, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["serve", "--addr", "127.0.0.1:0", "--format", "json", "-vv"])
        // The git server is on loopback over plain http: the operator's switch for that.
        .arg("--allow-private-sources")
        .env("CTXGATE_HOME", home)
        .env("CTXGATE_ADMIN_SECRET", ADMIN)
        .env_remove("CTXGATE_LOG")
        .env_remove("CTXGATE_TOKEN_SECRET")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(logs.join("serve.stderr")).unwrap())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let mut log = std::fs::File::create(logs.join("serve.stdout")).unwrap();
    log.write_all(line.as_bytes()).unwrap();
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("startup: {line}"));
    let url = v["listening"].as_str().unwrap().to_owned();
    std::thread::spawn(move || {
        let mut rest = Vec::new();
        let _ = out.read_to_end(&mut rest);
        let _ = log.write_all(&rest);
    });
    (Killed(child), url)
}

/// Every answer of the test, kept to be searched for the token at the end.
struct Client {
    base: String,
    agent: ureq::Agent,
    seen: Vec<String>,
}

impl Client {
    fn call(
        &mut self,
        method: &str,
        path: &str,
        bearer: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("Authorization", format!("Bearer {bearer}"));
        let result = match body {
            Some(b) => self.agent.run(
                req.header("Content-Type", "application/json")
                    .body(b.to_string().into_bytes())
                    .unwrap(),
            ),
            None => {
                req = req.header("Accept", "application/json");
                self.agent.run(req.body(()).unwrap())
            }
        };
        let mut res = result.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        let status = res.status().as_u16();
        let mut text = String::new();
        for (name, value) in res.headers() {
            text.push_str(&format!("{name}: {}\n", value.to_str().unwrap_or("")));
        }
        let body = res.body_mut().read_to_string().unwrap();
        text.push_str(&body);
        self.seen.push(text);
        (
            status,
            serde_json::from_str(&body).unwrap_or(Value::String(body)),
        )
    }

    fn create(&mut self, key: &str, name: &str, source: Value) -> (u16, Value) {
        self.call(
            "POST",
            "/v1/projects",
            key,
            Some(json!({ "name": name, "source": source })),
        )
    }

    fn org_with_key(&mut self, org: &str) -> String {
        let (s, b) = self.call(
            "POST",
            "/v1/admin/orgs",
            ADMIN,
            Some(json!({ "name": org })),
        );
        assert_eq!(s, 201, "{b}");
        let (s, b) = self.call(
            "POST",
            &format!("/v1/admin/orgs/{org}/keys"),
            ADMIN,
            Some(json!({})),
        );
        assert_eq!(s, 201, "{b}");
        b["key"].as_str().unwrap().to_owned()
    }
}

/// `ctxgate credential set NAME --org ORG` with the token on stdin; returns its output.
fn set_credential(home: &Path, org: &str, name: &str, token: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
        .args(["credential", "set", name, "--org", org, "--format", "json"])
        .env("CTXGATE_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{token}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "credential set: {text}");
    text
}

/// Every file below `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn private_git_repository_indexes_with_its_credential_and_never_shows_it() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    // Unique to this run, so a hit can only be a leak of this run's token.
    let token = format!("ghp_Pr1v4te{nanos:x}Tok3n");
    let wrong = format!("ghp_Wr0ng{nanos:x}");
    let basic = {
        // base64("x-access-token:" + token), as an `Authorization: Basic` header carries it.
        let raw = format!("x-access-token:{token}");
        let table = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in raw.as_bytes().chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(table[((n >> (18 - 6 * i)) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    };
    let forms = [token.clone(), basic.clone()];

    let repo = private_repo();
    let (_git, url) = git_server(repo.path(), &token);
    let home = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let (server, base) = serve(home.path(), logs.path());
    let mut api = Client {
        base,
        agent: ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into(),
        seen: Vec::new(),
    };
    let key = api.org_with_key("acme");
    let other = api.org_with_key("other");
    let mut cli_output = set_credential(home.path(), "acme", "ci-token", &token);
    cli_output += &set_credential(home.path(), "acme", "stale", &wrong);
    let git_source = |credential: Option<&str>| match credential {
        Some(c) => json!({"kind": "git", "url": url, "rev": "main", "credential": c}),
        None => json!({"kind": "git", "url": url, "rev": "main"}),
    };

    // Refused, each with its own code, and nothing registered.
    for (org_key, credential, status, code) in [
        (&key, None, 400, "source_auth_required"),
        (&key, Some("stale"), 400, "source_credential_rejected"),
        (&key, Some("nope"), 400, "credential_not_found"),
        // Another org cannot use acme's credential, even knowing its name.
        (&other, Some("ci-token"), 400, "credential_not_found"),
    ] {
        let (s, b) = api.create(org_key, "ledger", git_source(credential));
        assert_eq!(
            (s, b["error"]["code"].as_str()),
            (status, Some(code)),
            "{credential:?}: {b}"
        );
    }
    let (s, b) = api.call("GET", "/v1/projects", &key, None);
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["projects"].as_array().unwrap().len(), 0, "{b}");
    // A token written into the URL is refused, and not echoed in the refusal.
    let in_url = url.replace("http://", &format!("http://x-access-token:{token}@"));
    let (s, b) = api.create(&key, "ledger", json!({"kind": "git", "url": in_url}));
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (400, Some("source_bad_url")),
        "{b}"
    );

    // With its credential: indexed, answered, shown by name and URL only.
    let (s, b) = api.create(&key, "ledger", git_source(Some("ci-token")));
    assert_eq!(s, 201, "{b}");
    assert_eq!(b["source"], format!("{url}#main"), "{b}");
    assert!(b["current_version"].as_u64().is_some(), "{b}");
    let id = b["id"].as_str().unwrap().to_owned();
    let (s, b) = api.call(
        "POST",
        "/v1/context",
        &key,
        Some(
            json!({"project": "ledger", "query": "reserve tokens from the budget", "budget": 2000}),
        ),
    );
    assert_eq!(s, 200, "{b}");
    let paths: Vec<&str> = b["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["path"].as_str())
        .collect();
    assert!(paths.contains(&"src/ledger.rs"), "{paths:?}");
    let (s, b) = api.call(
        "POST",
        &format!("/v1/projects/{id}/reindex"),
        &key,
        Some(json!({})),
    );
    assert_eq!(s, 200, "re-indexed with the registered credential: {b}");
    assert_eq!(b["changed"], false, "{b}");
    for path in ["/v1/projects", &format!("/v1/projects/{id}"), "/v1/usage"] {
        let (s, b) = api.call("GET", path, &key, None);
        assert_eq!(s, 200, "{path}: {b}");
    }
    // The other org sees nothing of it.
    let (s, b) = api.call("GET", &format!("/v1/projects/{id}"), &other, None);
    assert_eq!(s, 404, "{b}");
    drop(server);

    // Nowhere but its own file.
    for (i, answer) in api.seen.iter().enumerate() {
        for form in &forms {
            assert!(
                !answer.contains(form.as_str()),
                "answer #{i} shows the token: {answer}"
            );
        }
    }
    assert!(
        !cli_output.contains(&token),
        "the CLI echoed the token: {cli_output}"
    );
    for log in ["serve.stderr", "serve.stdout"] {
        let text = std::fs::read(logs.path().join(log)).unwrap();
        assert!(
            !text.is_empty() || log == "serve.stdout",
            "{log} is empty: is -vv logging?"
        );
        for form in &forms {
            assert!(!contains(&text, form), "{log} shows the token");
        }
    }
    let own_file = home.path().join("secrets/credentials/acme/ci-token");
    let mut holders = Vec::new();
    let all = files(home.path());
    assert!(all.len() > 5, "the data directory holds the index: {all:?}");
    for file in all {
        let bytes = std::fs::read(&file).unwrap();
        if forms.iter().any(|f| contains(&bytes, f)) {
            holders.push(file);
        }
    }
    assert_eq!(
        holders,
        std::slice::from_ref(&own_file),
        "where the token is stored"
    );

    // The CLI lists names only, deletes, and refuses an org the data directory does not have.
    let cli = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args(args)
            .args(["--format", "json"])
            .env("CTXGATE_HOME", home.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(!text.contains(&token), "{args:?} shows the token");
        (
            out.status.code(),
            serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
        )
    };
    let (code, listed) = cli(&["credential", "list", "--org", "acme"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        listed["credentials"],
        json!(["ci-token", "stale"]),
        "{listed}"
    );
    assert_eq!(
        cli(&["credential", "delete", "stale", "--org", "acme"]).0,
        Some(0)
    );
    let (code, gone) = cli(&["credential", "delete", "stale", "--org", "acme"]);
    assert_eq!(code, Some(2), "{gone}");
    assert_eq!(gone["error"]["code"], "credential_not_found", "{gone}");
    let (code, unknown) = cli(&["credential", "set", "ci", "--org", "nobody"]);
    assert_eq!(code, Some(2), "{unknown}");
    assert_eq!(unknown["error"]["code"], "org_not_found", "{unknown}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&own_file).unwrap().permissions().mode();
        assert_eq!(
            mode & 0o777,
            0o600,
            "the credential file is the owner's only"
        );
    }
}
