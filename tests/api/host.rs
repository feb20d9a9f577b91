//! The hosts the API suite runs against, behind one interface: `ctxgate serve` here, and the
//! Worker under workerd when that harness is present.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// An HTTP answer.
pub struct Reply {
    pub status: u16,
    pub retry_after: Option<String>,
    pub www_authenticate: Option<String>,
    /// The `ctxgate-storage-read` header (bytes the answer read from storage).
    pub storage_read: Option<u64>,
    pub body: Value,
}

impl Reply {
    /// The error code of an error answer.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
}

/// A running API and how to publish a project into it.
pub trait Host: Sync {
    fn base_url(&self) -> &str;
    fn admin_secret(&self) -> &str;
    /// Indexes `dir` as project `name` of `org` and makes it visible to the API.
    fn publish(&self, org: &str, name: &str, dir: &Path) -> Value;
    /// Whether the host answers an oversized body from its `Content-Length` before the body
    /// arrives. `wrangler dev`'s proxy cannot relay an answer to a request whose body the
    /// Worker never read (it reports a restart instead), so there only a complete oversized
    /// body is checked.
    fn refuses_before_body(&self) -> bool {
        true
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(120)))
        .build()
        .into()
}

/// Sends `method path` with an optional bearer and a raw body.
pub fn call(
    host: &dyn Host,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Option<&str>,
    content_type: &str,
) -> Reply {
    call_with(host, method, path, bearer, body, content_type, &[])
}

/// [`call`] with `headers` added.
pub fn call_with(
    host: &dyn Host,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Option<&str>,
    content_type: &str,
    headers: &[(&str, &str)],
) -> Reply {
    let url = format!("{}{}", host.base_url(), path);
    let agent = agent();
    let mut req = ureq::http::Request::builder().method(method).uri(&url);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    if let Some(b) = bearer {
        req = req.header("Authorization", format!("Bearer {b}"));
    }
    let result = match body {
        Some(b) => agent.run(
            req.header("Content-Type", content_type)
                .body(b.as_bytes().to_vec())
                .unwrap(),
        ),
        None => agent.run(req.body(()).unwrap()),
    };
    let mut res = result.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
    let status = res.status().as_u16();
    let retry_after = res
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let www_authenticate = res
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let storage_read = res
        .headers()
        .get("ctxgate-storage-read")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let text = res
        .body_mut()
        .with_config()
        .limit(64 * 1024 * 1024)
        .read_to_string()
        .unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Reply {
        status,
        retry_after,
        www_authenticate,
        storage_read,
        body,
    }
}

/// `POST path` with a JSON body.
pub fn post(host: &dyn Host, path: &str, key: Option<&str>, body: &Value) -> Reply {
    call(
        host,
        "POST",
        path,
        key,
        Some(&body.to_string()),
        "application/json",
    )
}

/// `POST path` with a JSON body and `Cache-Control: no-cache`: a caller that must see a version
/// published a moment ago, past the cached version pointer.
pub fn post_fresh(host: &dyn Host, path: &str, key: Option<&str>, body: &Value) -> Reply {
    call_with(
        host,
        "POST",
        path,
        key,
        Some(&body.to_string()),
        "application/json",
        &[("Cache-Control", "no-cache")],
    )
}

/// `GET path`.
pub fn get(host: &dyn Host, path: &str, key: Option<&str>) -> Reply {
    call(host, "GET", path, key, None, "")
}

/// Creates an org with `limits` and returns a key for it.
pub fn org_with_key(host: &dyn Host, org: &str, limits: Value) -> String {
    let admin = host.admin_secret().to_string();
    let r = post(
        host,
        "/v1/admin/orgs",
        Some(&admin),
        &serde_json::json!({ "name": org, "limits": limits }),
    );
    assert_eq!(r.status, 201, "create org: {}", r.body);
    let r = post(
        host,
        &format!("/v1/admin/orgs/{org}/keys"),
        Some(&admin),
        &serde_json::json!({}),
    );
    assert_eq!(r.status, 201, "create key: {}", r.body);
    r.body["key"].as_str().unwrap().to_string()
}

/// `ctxgate serve` on a free port over a fresh data directory.
pub struct NativeHost {
    pub home: tempfile::TempDir,
    child: Child,
    url: String,
    flags: Vec<String>,
    vars: Vec<(String, String)>,
    /// Where the server's stderr goes (`None`: the test's own).
    stderr: Option<std::path::PathBuf>,
}

pub const ADMIN_SECRET: &str = "test-admin-secret-0123456789";

impl NativeHost {
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// With `flags` added to `ctxgate serve`'s defaults.
    pub fn start_with(flags: &[&str]) -> Self {
        Self::start_with_env(flags, &[])
    }

    /// With `flags` added to `ctxgate serve`'s defaults and `vars` in its environment.
    pub fn start_with_env(flags: &[&str], vars: &[(&str, &str)]) -> Self {
        Self::start_logging(flags, vars, None)
    }

    /// [`Self::start_with_env`], its stderr (logs) into the file `stderr` when given.
    pub fn start_logging(
        flags: &[&str],
        vars: &[(&str, &str)],
        stderr: Option<std::path::PathBuf>,
    ) -> Self {
        let home = tempfile::tempdir().unwrap();
        let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let child = Self::spawn(home.path(), &flags, &vars, &[], stderr.as_deref());
        // Built before anything can panic, so the server is always stopped.
        let mut host = Self {
            home,
            child,
            url: String::new(),
            flags,
            vars,
            stderr,
        };
        host.url = host.listening();
        host
    }

    fn spawn(
        home: &Path,
        flags: &[String],
        vars: &[(String, String)],
        extra: &[(&str, &str)],
        stderr: Option<&Path>,
    ) -> Child {
        let stderr = match stderr {
            Some(path) => Stdio::from(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .unwrap(),
            ),
            None => Stdio::inherit(),
        };
        Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args([
                "serve",
                "--addr",
                "127.0.0.1:0",
                "--format",
                "json",
                "--max-body-bytes",
                "1048576",
            ])
            .args(flags)
            .env("CTXGATE_HOME", home)
            .env("CTXGATE_ADMIN_SECRET", ADMIN_SECRET)
            .env_remove("CTXGATE_TOKEN_SECRET")
            .env_remove("CTXGATE_CATALOG")
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .envs(extra.iter().copied())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap()
    }

    /// The address the server's startup line names.
    fn listening(&mut self) -> String {
        let stdout = self.child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let v: Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("startup line: {line}"));
        v["listening"].as_str().unwrap().to_string()
    }

    /// Kills the server with SIGKILL (whatever it was doing) and starts it again over the same
    /// data directory, with `extra` variables this time; it may listen on another port.
    #[allow(dead_code)]
    pub fn kill_and_restart(&mut self, extra: &[(&str, &str)]) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = Self::spawn(
            self.home.path(),
            &self.flags,
            &self.vars,
            extra,
            self.stderr.as_deref(),
        );
        self.url = self.listening();
    }

    /// The server's process id.
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for NativeHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Host for NativeHost {
    fn base_url(&self) -> &str {
        &self.url
    }
    fn admin_secret(&self) -> &str {
        ADMIN_SECRET
    }
    fn publish(&self, org: &str, name: &str, dir: &Path) -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_ctxgate"))
            .args([
                "project", "add", "--org", org, "--name", name, "--format", "json",
            ])
            .arg(dir)
            .env("CTXGATE_HOME", self.home.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "project add: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// Announces a body of `len` bytes and sends only its start, then reads the answer: servers
/// refuse an oversized body from its `Content-Length` without reading it, and a client that
/// insists on writing it all sees a broken pipe instead of the answer.
pub fn oversized_post(host: &dyn Host, path: &str, key: &str, len: usize) -> (u16, String) {
    use std::io::{Read, Write};
    let authority = host
        .base_url()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    let mut s = std::net::TcpStream::connect(&authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(&vec![b' '; 1024.min(len)]);
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

/// A one-file repository (`src/ledger.rs`: `reserve` and `settle`) for tests that read its
/// stored objects.
pub fn ledger_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/ledger.rs"),
        "/// Reserves tokens before work.\npub fn reserve(left: u64, asked: u64) -> Option<u64> {\n    left.checked_sub(asked)\n}\n\n/// Gives back what a call did not use.\npub fn settle(left: u64, unused: u64) -> u64 {\n    left + unused\n}\n",
    )
    .unwrap();
    dir
}
